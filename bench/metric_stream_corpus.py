"""Generate CloudWatch metric stream output as Firehose delivers it, for bench/metrics_bench.py.

    python bench/metric_stream_corpus.py --points 1000000 --shape small --out corpus/small-1e6
    python bench/metric_stream_corpus.py --points 10000000 --shape large --out corpus/large-1e7

The fleet: ``--queues`` queues, each with its dead-letter queue and a Lambda consumer, spread
over 5 accounts in 2 regions (queue q in account q mod 5, region q mod 2). Every minute each
queue publishes the 9 AWS/SQS queue metrics, each consumer 5 AWS/Lambda metrics by FunctionName
and again by Resource (the function's alias) and by ExecutedVersion, and 2 series of other
namespaces (AWS/EC2, AWS/DynamoDB) are noise: 9 x 2 + 5 x 3 + 2 = 35 data points per queue and
minute, of which the audit keeps 9 x 2 + 5 = 23 series (and every AWS/SQS point for coverage).
Data point i is series i mod S (S = 35 x queues) at minute i div S: points are written minute
by minute until ``--points``. Its value comes from a counter-based hash of (seed, i), so any
point can be computed alone: ``count`` 1-60, ``max`` and ``p99`` 0-900, ``min`` 0, ``sum``
max x count / 2 (a multiple of 0.5: every sum of sums is exact, whatever the order).

Two shapes of delivery:

- ``--shape large``: objects of ``--object-points`` consecutive points (few large objects),
  under the UTC hour of their first point, ``YYYY/MM/DD/HH/``;
- ``--shape small``: as Firehose delivers a metric stream per account and region (one stream
  per (account, region): up to 10): per stream one object per ``--buffer-minutes`` buffer
  (Firehose's default 5-minute interval: BufferingHints.IntervalInSeconds 300) holding that
  stream's points of those minutes, under the buffer's hour. The default fleet for this shape is
  sized so the points span ``--days`` (14): 10^6 points are a few thousand objects.

Each object is written twice: ``json/`` (JSON lines exactly as ``json.dumps`` writes them with
compact separators, gzip, ``.gz``) and ``parquet/`` (Firehose's format conversion: ``dimensions``
a map, ``value`` a struct). ``corpus.json`` holds the parameters; ``expected`` computes the
audit's figures from them alone (not from the audit's code). Lines are built as Arrow string
arrays (one vectorized join per object), never point by point.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
STREAMS = len(ACCOUNTS) * len(REGIONS)  # queue q's stream: q mod 10 fixes both
# 2026-11-01T00:00:00Z: the first minute of every corpus.
START_MS = 1_793_491_200_000
MINUTE_MS = 60_000
DAY_MS = 86_400_000
SERIES_PER_QUEUE = 35
VALUE_TYPE = pa.struct([(f, pa.float64()) for f in ("max", "min", "sum", "count", "p99")])
MAX_COUNT = 60  # a per-minute point of 1-second samples has at most 60
MAX_HIGH = 900
# zlib level 1: the corpus compresses about as well as at 6 (repetitive lines) and 3-4x faster.
GZIP_LEVEL = 1
DEFAULT_LARGE_QUEUES = 10_000
DEFAULT_OBJECT_POINTS = 100_000
DEFAULT_BUFFER_MINUTES = 5
DEFAULT_DAYS = 14
DEFAULT_SEED = 1
MIN_SMALL_QUEUES = 2


@dataclass(frozen=True)
class Params:
    """Everything the corpus is a function of (saved as ``corpus.json``)."""

    points: int
    queues: int
    shape: str = "large"
    seed: int = DEFAULT_SEED
    object_points: int = DEFAULT_OBJECT_POINTS
    buffer_minutes: int = DEFAULT_BUFFER_MINUTES


@dataclass(frozen=True)
class Fleet:
    """One row per series (S rows), as Arrow arrays to ``take`` from, and numpy views."""

    json_prefix: pa.Array  # the line up to ``"timestamp":``
    account: pa.Array
    region: pa.Array
    namespace: pa.Array
    metric: pa.Array
    dimensions: pa.Array  # map<string, string>
    kept_name: list[str | None]  # the name the audit keeps the series by, None when it does not
    stream: np.ndarray  # the (account, region) stream of each series


def default_queues(points: int, shape: str, days: int = DEFAULT_DAYS) -> int:
    """Large: the fleet of 10,000 queues. Small: the fleet whose points span ``days`` (at least
    two queues: two streams)."""
    if shape == "large":
        return DEFAULT_LARGE_QUEUES
    return max(MIN_SMALL_QUEUES, round(points / (SERIES_PER_QUEUE * days * 1440)))


def _queue_series(q: int) -> list[tuple[str, str, dict[str, str], str | None]]:
    """(namespace, metric, dimensions, kept name) of queue q's series, in publishing order."""
    out: list[tuple[str, str, dict[str, str], str | None]] = []
    for queue in (f"orders-{q:05d}", f"orders-{q:05d}-dlq"):
        out += [("AWS/SQS", m, {"QueueName": queue}, queue) for m in SQS_METRICS]
    function = f"consumer-{q:05d}"
    for dims in (
        {"FunctionName": function},
        {"FunctionName": function, "Resource": f"{function}:live"},
        {"FunctionName": function, "ExecutedVersion": "7"},
    ):
        name = function if len(dims) == 1 else None
        out += [("AWS/Lambda", m, dims, name) for m in LAMBDA_METRICS]
    out.append(("AWS/EC2", "CPUUtilization", {"InstanceId": f"i-{q:017x}"}, None))
    out.append(
        ("AWS/DynamoDB", "ConsumedReadCapacityUnits", {"TableName": f"orders-{q:05d}"}, None)
    )
    assert len(out) == SERIES_PER_QUEUE
    return out


def _pair(item: tuple[str, str]) -> str:
    return f'"{item[0]}":"{item[1]}"'


def fleet(queues: int) -> Fleet:
    rows: list[tuple[str, str, str, str, dict[str, str], str | None, int]] = []
    for q in range(queues):
        account, region = ACCOUNTS[q % len(ACCOUNTS)], REGIONS[q % len(REGIONS)]
        rows += [(account, region, *s, q % STREAMS) for s in _queue_series(q)]
    # The names are plain ASCII: formatted as json.dumps would write them, 10x faster.
    prefixes = [
        f'{{"metric_stream_name":"fleet","account_id":"{a}","region":"{r}","namespace":"{n}",'
        f'"metric_name":"{m}","dimensions":{{{",".join(map(_pair, d.items()))}}},'
        '"timestamp":'
        for a, r, n, m, d, _, _ in rows
    ]
    column = list(zip(*rows, strict=True))
    text = [pa.array(column[k], pa.string()) for k in range(4)]
    return Fleet(
        pa.array(prefixes, pa.string()),
        text[0],
        text[1],
        text[2],
        text[3],
        pa.array([list(d.items()) for d in column[4]], pa.map_(pa.string(), pa.string())),
        list(column[5]),
        np.array(column[6], dtype=np.int64),
    )


def values(index: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(max, count) of the data points ``index``: splitmix64 of (seed, index), as integers."""
    with np.errstate(over="ignore"):
        z = index.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    count = (z % np.uint64(MAX_COUNT)).astype(np.int64) + 1
    high = ((z >> np.uint64(16)) % np.uint64(MAX_HIGH + 1)).astype(np.int64)
    return high, count


def objects(params: Params) -> Iterator[tuple[str, int, np.ndarray]]:
    """(name, first timestamp, point indices) of every object, in delivery order."""
    series = params.queues * SERIES_PER_QUEUE
    if params.shape == "large":
        for number, first in enumerate(range(0, params.points, params.object_points)):
            last = min(first + params.object_points, params.points)
            yield (
                f"fleet-1-{number:06d}",
                START_MS + first // series * MINUTE_MS,
                np.arange(first, last, dtype=np.int64),
            )
        return
    streams = (np.arange(series) // SERIES_PER_QUEUE) % STREAMS
    by_stream = [np.flatnonzero(streams == k) for k in range(min(params.queues, STREAMS))]
    minutes = -(-params.points // series)
    step = params.buffer_minutes
    for buffer in range(0, minutes, step):
        offsets = np.arange(buffer, min(buffer + step, minutes), dtype=np.int64) * series
        stamp = START_MS + buffer * MINUTE_MS
        clock = time.strftime("%Y-%m-%d-%H-%M-%S", time.gmtime(stamp / 1000))
        for k, members in enumerate(by_stream):
            index = np.add.outer(offsets, members).ravel()
            index = index[index < params.points]
            if len(index):
                yield f"metrics-{k:02d}-1-{clock}-{buffer // step:08x}", stamp, index


def json_lines(table: Fleet, index: np.ndarray, seed: int, series: int) -> pa.Buffer:
    """The object's JSON lines, as ``json.dumps(point, separators=(",", ":"))`` writes each."""
    high, count = values(index, seed)
    twice = high * count  # sum = twice / 2: its integer part, then ".5" or ".0"
    text = pc.binary_join_element_wise(
        table.json_prefix.take(pa.array(index % series)),
        pc.cast(pa.array(START_MS + index // series * MINUTE_MS), pa.string()),
        ',"value":{"max":', (high_text := pc.cast(pa.array(high), pa.string())),
        '.0,"min":0.0,"sum":', pc.cast(pa.array(twice // 2), pa.string()),
        pc.if_else(pa.array(twice % 2 == 1), ".5", ".0"),
        ',"count":', pc.cast(pa.array(count), pa.string()),
        '.0,"p99":', high_text, '.0},"unit":"Count"}\n', "",
    )  # fmt: skip
    offsets = np.frombuffer(text.buffers()[1], np.int32)[text.offset : text.offset + len(text) + 1]
    return text.buffers()[2].slice(offsets[0], offsets[-1] - offsets[0])  # no copy


def parquet_table(table: Fleet, index: np.ndarray, seed: int, series: int) -> pa.Table:
    high, count = values(index, seed)
    rows = pa.array(index % series)
    zero = pa.array(np.zeros(len(index), dtype=np.int64))
    as_float = high.astype(np.float64)
    value = pa.StructArray.from_arrays(
        [as_float, np.zeros(len(index)), as_float * count / 2, count.astype(np.float64), as_float],
        fields=list(VALUE_TYPE),
    )
    return pa.table(
        {
            "metric_stream_name": pa.array(["fleet"]).take(zero),
            "account_id": table.account.take(rows),
            "region": table.region.take(rows),
            "namespace": table.namespace.take(rows),
            "metric_name": table.metric.take(rows),
            "unit": pa.array(["Count"]).take(zero),
            "dimensions": table.dimensions.take(rows),
            "timestamp": pa.array(START_MS + index // series * MINUTE_MS),
            "value": value,
        }
    )


def _folder(base: Path, stamp: int) -> Path:
    folder = base / time.strftime("%Y/%m/%d/%H", time.gmtime(stamp / 1000))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write(out: Path, table: Fleet, params: Params, item: tuple[str, int, np.ndarray]) -> list[int]:
    name, stamp, index = item
    series = params.queues * SERIES_PER_QUEUE
    text = json_lines(table, index, params.seed, series)
    deflate = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    json_path = _folder(out / "json", stamp) / f"{name}.gz"
    json_path.write_bytes(deflate.compress(text) + deflate.flush())
    parquet_path = _folder(out / "parquet", stamp) / f"{name}.parquet"
    pq.write_table(parquet_table(table, index, params.seed, series), parquet_path)
    return [os.path.getsize(json_path), os.path.getsize(parquet_path), text.size]


def generate(out: Path, params: Params, jobs: int = 2) -> dict[str, Any]:
    """Write the corpus and ``corpus.json``; its objects and sizes in bytes per format."""
    table = fleet(params.queues)
    totals = np.zeros(3, dtype=np.int64)
    count = 0
    with ThreadPoolExecutor(jobs) as pool:  # zlib, Arrow and Parquet release the GIL
        pending: list[Any] = []
        for item in objects(params):
            pending.append(pool.submit(_write, out, table, params, item))
            if len(pending) >= 4 * jobs:  # a bounded queue: memory stays a few objects
                totals += pending.pop(0).result()
                count += 1
        for future in pending:
            totals += future.result()
            count += 1
    summary = {
        "params": asdict(params),
        "objects": count,
        "bytes": {"json": int(totals[0]), "parquet": int(totals[1]), "json_text": int(totals[2])},
    }
    (out / "corpus.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def expected(params: Params, window_days: int) -> dict[str, Any]:
    """The figures the audit makes of the corpus, from its parameters alone: every kept series
    ``(account, region, namespace, metric, name) -> (maximum, total, samples, first, last,
    opening, closing)``
    and the coverage ``(account, region) -> (first, last)`` inside the window (counted back
    from the newest point, exclusive)."""
    series = params.queues * SERIES_PER_QUEUE
    table = fleet(params.queues)
    newest_minute = (params.points - 1) // series
    start = START_MS + newest_minute * MINUTE_MS - window_days * DAY_MS
    first_minute = max(0, (start - START_MS) // MINUTE_MS + 1)
    index = np.arange(first_minute * series, params.points, dtype=np.int64)
    high, count = values(index, params.seed)
    row = index % series
    stamps = START_MS + index // series * MINUTE_MS
    maximum = np.full(series, -1, dtype=np.int64)
    np.maximum.at(maximum, row, high)
    total = np.bincount(row, high * count, minlength=series) / 2
    samples = np.bincount(row, count, minlength=series)
    first = np.full(series, np.iinfo(np.int64).max)
    np.minimum.at(first, row, stamps)
    last = np.zeros(series, dtype=np.int64)
    np.maximum.at(last, row, stamps)
    # A series has one point a minute and ``index`` ascends in time: its first and last
    # occurrence are its opening and closing points.
    opening = np.zeros(series, dtype=np.int64)
    closing = np.zeros(series, dtype=np.int64)
    kept, at = np.unique(row, return_index=True)
    opening[kept] = high[at]
    kept, at = np.unique(row[::-1], return_index=True)
    closing[kept] = high[::-1][at]
    out: dict[tuple[str, ...], tuple[float, float, float, int, int, float, float]] = {}
    coverage: dict[tuple[str, str], tuple[int, int]] = {}
    columns = [c.to_pylist() for c in (table.account, table.region, table.namespace, table.metric)]
    for s, name in enumerate(table.kept_name):
        account, region, namespace, metric = (c[s] for c in columns)
        if maximum[s] < 0:
            continue
        if name is not None:
            key = (account, region, namespace, metric, name)
            out[key] = (float(maximum[s]), float(total[s]), float(samples[s]), int(first[s]),
                        int(last[s]), float(opening[s]), float(closing[s]))  # fmt: skip
        if namespace == "AWS/SQS":
            low, high_ = coverage.get((account, region), (int(first[s]), int(last[s])))
            coverage[(account, region)] = (min(low, int(first[s])), max(high_, int(last[s])))
    return {"series": out, "coverage": coverage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shape", choices=("large", "small"), default="large")
    parser.add_argument("--queues", type=int, help="default: 10,000 (large), --days (small)")
    parser.add_argument("--days", type=int, default=DEFAULT_DAYS)
    parser.add_argument("--object-points", type=int, default=DEFAULT_OBJECT_POINTS)
    parser.add_argument("--buffer-minutes", type=int, default=DEFAULT_BUFFER_MINUTES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--jobs", type=int, default=2, help="writer threads")
    args = parser.parse_args()
    queues = args.queues or default_queues(args.points, args.shape, args.days)
    params = Params(
        args.points, queues, args.shape, args.seed, args.object_points, args.buffer_minutes
    )
    started = time.monotonic()
    summary = generate(args.out, params, args.jobs)
    summary["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
