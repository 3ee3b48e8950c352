"""Benchmark ``--metrics``: data points per second per core, and the driver's memory.

    python bench/metrics_bench.py --sizes 1000000 10000000 --runs 3 \\
        --corpus-root /tmp/metric-stream --out bench/results/metrics.json

For each size, a corpus from bench/metric_stream_corpus.py (made when missing under
``--corpus-root``/SIZE: the same points as gzipped JSON lines and as Parquet) is aggregated by
each engine of ``--engines``, ``--runs`` times, each run in a fresh child process:

- ``spark-json``, ``spark-parquet``: ``spark/metrics.py`` on a classic ``local[2]`` session;
  the session's start is timed apart and not in the run's time;
- ``local-json``, ``local-parquet``: ``metrics.aggregate.read_and_aggregate``, one process;
- ``duckdb-json``, ``duckdb-parquet``: the same aggregation as one DuckDB query with 2 threads
  (DuckDB reads the files itself: a yardstick of what one process can do, not the audit).

The median run (by time) is reported. Per core: Spark and DuckDB divide by 2 (``local[2]``, 2
threads), the local path by 1. Memory: the child's peak RSS (``ru_maxrss``: the Python driver;
a classic session's JVM is a separate process), and for Spark the driver JVM's peak heap used
(the sum of its heap pools' peaks). Every engine's figures are checked against the first one's
(series, coverage and the sum of all totals); the bench stops at a mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENGINES = ("spark-json", "spark-parquet", "local-json", "local-parquet", "duckdb-json",
           "duckdb-parquet")  # fmt: skip
CORES = {"spark": 2, "local": 1, "duckdb": 2}

DUCKDB_QUERY = """
WITH points AS (
    SELECT account_id AS account, region, namespace, metric_name AS metric, timestamp,
        value.max AS maximum, value.sum AS total, value.count AS samples,
        CASE WHEN cardinality(dimensions) = 1 AND (
            (namespace = 'AWS/SQS' AND map_contains(dimensions, 'QueueName'))
            OR (namespace = 'AWS/Lambda' AND map_contains(dimensions, 'FunctionName')))
        THEN map_extract_value(dimensions, map_keys(dimensions)[1]) END AS name
    FROM {source}
    WHERE namespace IN ('AWS/SQS', 'AWS/Lambda')
),
kept AS (SELECT * FROM points WHERE name IS NOT NULL OR namespace = 'AWS/SQS'),
edge AS (SELECT max(timestamp) - {days} * 86400000 AS start FROM kept),
inside AS (SELECT kept.* FROM kept, edge WHERE timestamp > edge.start)
SELECT 'series' AS kind, count(*) AS n, sum(total) AS totals FROM (
    SELECT account, region, namespace, metric, name, max(maximum), sum(total) AS total,
        sum(samples), min(timestamp), max(timestamp)
    FROM inside WHERE name IS NOT NULL GROUP BY ALL)
UNION ALL
SELECT 'coverage', count(*), 0 FROM (
    SELECT account, region, min(timestamp), max(timestamp) FROM inside
    WHERE namespace = 'AWS/SQS' GROUP BY ALL)
"""


def _duckdb(path: Path, days: int) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(config={"threads": 2})
    if path.name == "parquet":
        source = f"read_parquet('{path}/**/*.parquet')"
    else:
        columns = (
            "{'account_id': 'VARCHAR', 'region': 'VARCHAR', 'namespace': 'VARCHAR', "
            "'metric_name': 'VARCHAR', 'dimensions': 'MAP(VARCHAR, VARCHAR)', "
            "'timestamp': 'BIGINT', 'value': 'STRUCT(max DOUBLE, sum DOUBLE, count DOUBLE)'}"
        )
        source = (
            f"read_json('{path}/**/*.gz', format='newline_delimited', compression='gzip', "
            f"columns={columns})"
        )
    started = time.monotonic()
    rows = dict(
        (kind, (n, totals))
        for kind, n, totals in con.sql(DUCKDB_QUERY.format(source=source, days=days)).fetchall()
    )
    return {
        "seconds": time.monotonic() - started,
        "series": rows["series"][0],
        "coverage": rows["coverage"][0],
        "totals": rows["series"][1],
    }


def _figures(result: Any) -> dict[str, Any]:
    return {
        "series": len(result.series),
        "coverage": len(result.coverage),
        "totals": sum(s.total for s in result.series),
        "data_points": result.data_points,
        "problems": len(result.problems),
    }


def _jvm_heap_peak(spark: Any) -> int:
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    return sum(
        pool.getPeakUsage().getUsed()
        for pool in management.getMemoryPoolMXBeans()
        if pool.getType().toString() == "Heap memory"
    )


def _spark(path: Path, days: int) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from constructs_lib.audit.engines.spark import metrics
    from constructs_lib.audit.metrics import stream

    started = time.monotonic()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    session = time.monotonic() - started
    started = time.monotonic()
    listed = stream.list_objects(str(path))
    listing = time.monotonic() - started
    started = time.monotonic()  # the run: listing again, reading, aggregating, collecting
    frames = metrics.aggregate_frames(spark, str(path), days)
    decoded = time.monotonic() - started
    result = metrics.collect(frames)
    seconds = time.monotonic() - started
    # Where the time goes: one object decoded in this process, times the objects, over 2 cores.
    one = time.monotonic()
    stream.read_points(listed[-1].location, listed[-1].size)
    python_decode = (time.monotonic() - one) * len(listed) / 2
    heap = _jvm_heap_peak(spark)
    spark.stop()
    return {
        "seconds": seconds,
        "session_seconds": session,
        "listing_seconds": listing,
        "decode_and_first_actions_seconds": decoded,
        "python_decode_estimate_seconds": python_decode,
        "jvm_heap_peak_bytes": heap,
        **_figures(result),
    }


def _local(path: Path, days: int) -> dict[str, Any]:
    from constructs_lib.audit.metrics import aggregate

    started = time.monotonic()
    result = aggregate.read_and_aggregate(str(path), days)
    return {"seconds": time.monotonic() - started, **_figures(result)}


def child(engine: str, path: Path, days: int) -> None:
    kind = engine.split("-")[0]
    figures = {"spark": _spark, "local": _local, "duckdb": _duckdb}[kind](path, days)
    figures["rss_peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(figures))


def _corpus(root: Path, size: int) -> Path:
    folder = root / str(size)
    if not (folder / "parquet").is_dir():
        subprocess.run(
            [sys.executable, str(HERE / "metric_stream_corpus.py"), "--points", str(size),
             "--out", str(folder)],
            check=True,
        )  # fmt: skip
    return folder


def _run(engine: str, path: Path, days: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", engine, "--path", str(path), "--window", str(days)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--corpus-root", type=Path, default=Path("/tmp/metric-stream"))
    parser.add_argument("--window", type=int, default=14)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path, args.window)
        return
    report: list[dict[str, Any]] = []
    for size in args.sizes:
        folder = _corpus(args.corpus_root, size)
        reference: tuple[Any, ...] | None = None
        for engine in args.engines:
            path = folder / engine.split("-")[1]
            runs = sorted(
                (_run(engine, path, args.window) for _ in range(args.runs)),
                key=lambda r: r["seconds"],
            )
            median = runs[len(runs) // 2]
            check = (median["series"], median["coverage"], round(median["totals"], 3))
            if reference is not None and check != reference:
                sys.exit(f"{engine} at {size:,}: {check} differs from {reference}")
            reference = reference or check
            cores = CORES[engine.split("-")[0]]
            row = {
                "size": size,
                "engine": engine,
                "seconds": [round(r["seconds"], 2) for r in runs],
                "points_per_second_per_core": round(size / median["seconds"] / cores),
                **{k: v for k, v in median.items() if k != "seconds"},
            }
            report.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
