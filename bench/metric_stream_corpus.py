"""Generate CloudWatch metric stream output as Firehose delivers it, for bench/metrics_bench.py.

    python bench/metric_stream_corpus.py --points 1000000 --out /tmp/metric-stream-1e6

The fleet's shape: ``--queues`` queues (default 10,000), each with its dead-letter queue and a
Lambda consumer, spread over 5 accounts in 2 regions. Every minute each queue publishes the 9
AWS/SQS queue metrics, and each consumer 5 AWS/Lambda metrics by FunctionName and again by
Resource (the function's alias) and by ExecutedVersion: 9 x 2 + 5 x 3 = 33 data points per
queue and minute, of which the audit keeps 9 x 2 + 5 = 23. Points are written minute by minute
until ``--points``, in objects of ``--object-points`` data points under the UTC hour of their
first data point (``YYYY/MM/DD/HH/``), in two copies: ``json/`` (JSON lines, gzip, ``.gz``)
and ``parquet/`` (Firehose's format conversion: ``dimensions`` a map, ``value`` a struct).
Values are drawn from a seeded generator: the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SQS_METRICS = (
    "ApproximateAgeOfOldestMessage",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesVisible",
    "NumberOfEmptyReceives",
    "NumberOfMessagesDeleted",
    "NumberOfMessagesReceived",
    "NumberOfMessagesSent",
    "SentMessageSize",
)
LAMBDA_METRICS = ("Invocations", "Errors", "Throttles", "Duration", "ConcurrentExecutions")
ACCOUNTS = tuple(f"{n:012d}" for n in range(100000000001, 100000000006))
REGIONS = ("us-east-1", "eu-west-1")
# 2026-11-01T00:00:00Z: the first minute of every corpus.
START_MS = 1_793_491_200_000
MINUTE_MS = 60_000
VALUE_TYPE = pa.struct([(f, pa.float64()) for f in ("max", "min", "sum", "count", "p99")])


def series(queues: int) -> list[tuple[str, str, str, str, dict[str, str]]]:
    """Every (account, region, namespace, metric, dimensions) the fleet publishes each minute."""
    out: list[tuple[str, str, str, str, dict[str, str]]] = []
    for q in range(queues):
        account, region = ACCOUNTS[q % len(ACCOUNTS)], REGIONS[q % len(REGIONS)]
        for queue in (f"orders-{q:05d}", f"orders-{q:05d}-dlq"):
            out += [(account, region, "AWS/SQS", m, {"QueueName": queue}) for m in SQS_METRICS]
        function = f"consumer-{q:05d}"
        for dims in (
            {"FunctionName": function},
            {"FunctionName": function, "Resource": f"{function}:live"},
            {"FunctionName": function, "ExecutedVersion": "7"},
        ):
            out += [(account, region, "AWS/Lambda", m, dims) for m in LAMBDA_METRICS]
    return out


def _points(
    fleet: list[tuple[str, str, str, str, dict[str, str]]], first: int, count: int
) -> Iterator[dict[str, Any]]:
    """``count`` data points from the ``first``-th on, minute by minute over the fleet."""
    rng = random.Random(first)
    for i in range(first, first + count):
        account, region, namespace, metric, dims = fleet[i % len(fleet)]
        samples = float(rng.randint(1, 60))
        high = float(rng.randint(0, 900))
        yield {
            "metric_stream_name": "fleet",
            "account_id": account,
            "region": region,
            "namespace": namespace,
            "metric_name": metric,
            "dimensions": dims,
            "timestamp": START_MS + (i // len(fleet)) * MINUTE_MS,
            "value": {
                "max": high,
                "min": 0.0,
                "sum": high * samples / 2,
                "count": samples,
                "p99": high,
            },
            "unit": "Count",
        }


def _hour_folder(base: Path, timestamp: int) -> Path:
    folder = base / time.strftime("%Y/%m/%d/%H", time.gmtime(timestamp / 1000))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _parquet(points: list[dict[str, Any]], path: Path) -> None:
    columns: dict[str, list[Any]] = {k: [p[k] for p in points] for k in points[0]}
    columns["dimensions"] = [list(p["dimensions"].items()) for p in points]
    table = pa.table(
        {
            **{k: v for k, v in columns.items() if k not in ("dimensions", "value", "timestamp")},
            "dimensions": pa.array(columns["dimensions"], pa.map_(pa.string(), pa.string())),
            "timestamp": pa.array(columns["timestamp"], pa.int64()),
            "value": pa.array(columns["value"], VALUE_TYPE),
        }
    )
    pq.write_table(table, path, compression="snappy")


def generate(out: Path, points: int, queues: int, object_points: int) -> dict[str, int]:
    """Write the corpus; its sizes in bytes per format."""
    fleet = series(queues)
    sizes = {"json": 0, "parquet": 0}
    for index, first in enumerate(range(0, points, object_points)):
        chunk = list(_points(fleet, first, min(object_points, points - first)))
        name = f"fleet-1-{index:06d}"
        json_path = _hour_folder(out / "json", chunk[0]["timestamp"]) / f"{name}.gz"
        data = "".join(json.dumps(p, separators=(",", ":")) + "\n" for p in chunk).encode()
        json_path.write_bytes(gzip.compress(data, compresslevel=6))
        parquet_path = _hour_folder(out / "parquet", chunk[0]["timestamp"]) / f"{name}.parquet"
        _parquet(chunk, parquet_path)
        sizes["json"] += os.path.getsize(json_path)
        sizes["parquet"] += os.path.getsize(parquet_path)
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--object-points", type=int, default=100_000)
    args = parser.parse_args()
    started = time.monotonic()
    sizes = generate(args.out, args.points, args.queues, args.object_points)
    print(
        json.dumps(
            {
                "points": args.points,
                "bytes": sizes,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
