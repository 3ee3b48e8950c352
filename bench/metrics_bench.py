"""Benchmark ``--metrics``: every engine on both delivery shapes and both formats, side by side.

    python bench/metrics_bench.py --sizes 1000000 10000000 --shapes large small \\
        --formats json parquet --engines local-1 local-2 duckdb spark cluster-1 cluster-2 --runs 3
    python bench/metrics_bench.py --sizes 1000000 --shapes small --formats json --engines spark

For each size and shape, a corpus from bench/metric_stream_corpus.py (made when missing under
``--corpus-root``/SHAPE-SIZE: the same points as gzipped JSON lines and as Parquet; ``large``:
objects of 100,000 points, ``small``: one object per stream and 5-minute buffer) is aggregated
by each engine, ``--runs`` times, each run in a fresh child process:

- ``local-1``, ``local-2``: ``metrics.aggregate.read_and_aggregate``, with ``workers=N`` when
  its signature has that keyword (else both run the same engine: ``workers`` is false);
- ``duckdb``: the same aggregation as one bare DuckDB query, 2 threads (DuckDB reads the files
  itself: the reference for what one process can do, not the audit), which returns counts;
- ``duckdb-figures``: the same query returning what the rules read: every series' figures with
  its readings at the window's edges (``SeriesRow.opening``, ``closing``), each account and
  region's coverage, as Python rows in the series' order;
- ``spark``: ``engines.spark.metrics.read_and_aggregate`` on a ``local[2]`` session;
- ``cluster-1``, ``cluster-2``: the same on a standalone cluster of 1 or 2 workers of one core
  (``StandaloneCluster`` of tests/support/clusters.py, as bench/audit_bench.py starts it, once
  per engine and invocation; its start-up is reported apart).

For every engine the libraries it imports on first use (DuckDB; pandas, which pyarrow imports
at its first conversion of Python objects when it is installed, as the ``spark`` extra does)
are imported before the run is timed, as the DuckDB references import DuckDB; ``imports_s``
says what that took.

Per run: wall (the child, start-up included), run (the aggregation alone, session start-up
excluded), CPU of the child's tree and, for a cluster, of its daemons' trees meanwhile, peak RSS
of the child's tree and of its own process (the Python driver), of the cluster's trees, and for
Spark the driver JVM's peak heap (the sum of its heap pools' peaks). Medians over the runs.
Every engine's figures (series, coverage, the sum of all totals) must equal the others' on the
same size and shape, whatever the format; a mismatch is reported and the bench exits 1.
Per size, shape and format: each engine's run time over DuckDB's, the speedup of 2 workers over
1 (local and cluster), the serial fraction s of Amdahl's law from those two run times
(T2 = T1 (s + (1 - s) / 2), so s = 2 T2 / T1 - 1) and the run time it predicts on 32 cores,
T1 (s + (1 - s) / 32) (s clamped to [0, 1]). Results: JSON (``--out``, rewritten after every
row, so a partial run keeps what it measured) and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import audit_bench  # noqa: E402  (process-tree CPU and memory, the cluster's start and stop)

ENGINES = ("local-1", "local-2", "duckdb", "duckdb-figures", "spark", "cluster-1", "cluster-2")
SHAPES = ("large", "small")
FORMATS = ("json", "parquet")
LOCAL_WORKERS = {"local-1": 1, "local-2": 2}
CLUSTER_WORKERS = {"cluster-1": 1, "cluster-2": 2}
SPARK_MASTER = "local[2]"
DUCKDB_THREADS = 2  # the machine's cores: the reference uses what local[2] has
# Amdahl's prediction for a machine of this many cores (the question).
PREDICTED_CORES = 32
DEFAULT_CORPUS_ROOT = HERE / "results" / "metric-stream"

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
DUCKDB_FIGURES_QUERY = (
    DUCKDB_QUERY[: DUCKDB_QUERY.index("SELECT 'series'")]
    + """SELECT grouping(namespace) AS coverage_row, account, region, namespace, metric, name,
    max(maximum), sum(total) FILTER (WHERE name IS NOT NULL), sum(samples), min(timestamp),
    max(timestamp), arg_max(maximum, struct_pack(t := -timestamp, v := maximum)),
    arg_max(maximum, struct_pack(t := timestamp, v := maximum))
FROM inside WHERE name IS NOT NULL OR namespace = 'AWS/SQS'
GROUP BY GROUPING SETS ((account, region, namespace, metric, name), (account, region))
ORDER BY ALL
"""
)


# --- child: one run ------------------------------------------------------------------------------


DUCKDB_JSON_COLUMNS = (
    "{'account_id': 'VARCHAR', 'region': 'VARCHAR', 'namespace': 'VARCHAR', "
    "'metric_name': 'VARCHAR', 'dimensions': 'MAP(VARCHAR, VARCHAR)', "
    "'timestamp': 'BIGINT', 'value': 'STRUCT(max DOUBLE, sum DOUBLE, count DOUBLE)'}"
)


def duckdb_source(parquet: bool, files: str) -> str:
    """The bare query's ``FROM``: ``files`` (SQL: a glob or a list) read as typed columns."""
    if parquet:
        return f"read_parquet({files})"
    return (
        f"read_json({files}, format='newline_delimited', compression='gzip', "
        f"columns={DUCKDB_JSON_COLUMNS})"
    )


def _duckdb(path: Path, days: int, figures: bool) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(config={"threads": DUCKDB_THREADS})
    parquet = path.name == "parquet"
    source = duckdb_source(parquet, f"'{path}/**/*.{'parquet' if parquet else 'gz'}'")
    started = time.monotonic()
    if figures:
        found = con.sql(DUCKDB_FIGURES_QUERY.format(source=source, days=days)).fetchall()
        series = [row for row in found if not row[0] and row[5] is not None]
        coverage = [row for row in found if row[0]]
        rows = {
            "series": (len(series), sum(row[7] for row in series)),
            "coverage": (len(coverage), 0),
        }
    else:
        query = DUCKDB_QUERY.format(source=source, days=days)
        rows = {kind: (n, totals) for kind, n, totals in con.sql(query).fetchall()}
    return {
        "run_s": time.monotonic() - started,
        "series": rows["series"][0],
        "coverage": rows["coverage"][0],
        "totals": float(rows["series"][1] or 0),
    }


def _figures(result: Any) -> dict[str, Any]:
    return {
        "series": len(result.series),
        "coverage": len(result.coverage),
        "totals": float(sum(s.total for s in result.series)),
        "data_points": result.data_points,
        "problems": len(result.problems),
    }


def _jvm_heap_peak(spark: Any) -> int:
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    return int(
        sum(
            pool.getPeakUsage().getUsed()
            for pool in management.getMemoryPoolMXBeans()
            if pool.getType().toString() == "Heap memory"
        )
    )


def _spark(path: Path, days: int, master: str | None) -> dict[str, Any]:
    from constructs_lib.audit.engines.spark import metrics
    from constructs_lib.audit.engines.spark.session import create_session

    started = time.monotonic()
    spark = create_session(master=master)
    session = time.monotonic() - started
    started = time.monotonic()
    result = metrics.read_and_aggregate(spark, str(path), days)
    run = time.monotonic() - started
    heap = _jvm_heap_peak(spark)
    spark.stop()
    return {"run_s": run, "startup_s": session, "jvm_heap_peak_bytes": heap, **_figures(result)}


def _local(path: Path, days: int, workers: int) -> dict[str, Any]:
    from constructs_lib.audit.metrics import aggregate

    # The keyword arrives with the parallel local engine; before it, one process reads all.
    has_workers = "workers" in inspect.signature(aggregate.read_and_aggregate).parameters
    options: dict[str, Any] = {"workers": workers} if has_workers else {}
    imports = _imported()
    started = time.monotonic()
    result = aggregate.read_and_aggregate(str(path), days, **options)
    return {
        "run_s": time.monotonic() - started,
        "imports_s": imports,
        "workers": has_workers,
        **_figures(result),
    }


def _imported() -> float:
    """Seconds to import what the local engine imports on first use (see the module's text)."""
    started = time.monotonic()
    import duckdb  # noqa: F401
    import pyarrow as pa

    pa.array([0]).to_pylist()  # pyarrow's first conversion imports pandas when it is installed
    return time.monotonic() - started


def child(engine: str, path: Path, days: int, master: str | None) -> None:
    if engine in LOCAL_WORKERS:
        figures = _local(path, days, LOCAL_WORKERS[engine])
    elif engine in ("duckdb", "duckdb-figures"):
        figures = _duckdb(path, days, engine == "duckdb-figures")
    else:
        figures = _spark(path, days, master)
    print(json.dumps(figures))


# --- parent --------------------------------------------------------------------------------------


def corpus(root: Path, size: int, shape: str) -> tuple[Path, dict[str, Any]]:
    """The corpus of ``size`` points in ``shape`` under ``root``, made when missing."""
    folder = (root / f"{shape}-{size}").resolve()
    if not (folder / "corpus.json").is_file():
        subprocess.run(
            [sys.executable, str(HERE / "metric_stream_corpus.py"), "--points", str(size),
             "--shape", shape, "--out", str(folder)],
            check=True,
        )  # fmt: skip
    return folder, json.loads((folder / "corpus.json").read_text())


@contextlib.contextmanager
def where(
    engine: str, root: Path, pinned: bool = False, code: Path | None = None
) -> Iterator[audit_bench.Target]:
    """The engine's environment, session arguments and daemons (audit_bench's: a standalone
    cluster for ``cluster-N``, started and stopped around the engine's runs; ``pinned``: each
    worker on a core of its own; ``code``: another checkout's package)."""
    name = engine if engine in (*CLUSTER_WORKERS, "spark") else "local-1"
    with audit_bench.target(name, SPARK_MASTER, root / "daemons", pinned, code) as found:
        yield found


def run_engine(engine: str, path: Path, runs: int, days: int, at: Any) -> dict[str, Any]:
    samples = []
    for _ in range(runs):
        command = [sys.executable, __file__, "--child", engine, "--path", str(path),
                   "--window", str(days), *at.args]  # fmt: skip
        measured = audit_bench.measure(command, at.env, at.daemon_pids)
        if measured["returncode"] != 0:
            raise SystemExit(f"{engine} on {path}:\n{measured['stderr']}\n{at.log_tail()}")
        samples.append({**measured, **json.loads(measured["stdout"].strip().splitlines()[-1])})
    median = sorted(samples, key=lambda s: s["run_s"])[len(samples) // 2]
    daemons = bool(at.daemon_pids)

    def mid(key: str) -> float | None:
        found = [s[key] for s in samples if s.get(key) is not None]
        return statistics.median(found) if found else None

    heap = mid("jvm_heap_peak_bytes")
    return {
        "engine": engine,
        "runs": runs,
        "wall_s_median": mid("wall_s"),
        "run_s_median": mid("run_s"),
        "run_s_all": [round(s["run_s"], 2) for s in samples],
        "startup_s_median": mid("startup_s"),
        "imports_s_median": mid("imports_s"),
        "cpu_s_median": mid("cpu_s"),
        "cluster_cpu_s_median": mid("cluster_cpu_s") if daemons else None,
        "peak_rss_mb_max": max(s["peak_rss_mb"] for s in samples),
        "driver_peak_rss_mb_max": max(s["driver_peak_rss_mb"] for s in samples),
        "cluster_peak_rss_mb_max": (
            max(s["cluster_peak_rss_mb"] for s in samples) if daemons else None
        ),
        "jvm_heap_peak_mb_median": heap / 2**20 if heap is not None else None,
        "cluster_startup_s": at.startup_s,
        "local_workers_keyword": median.get("workers"),
        **{k: median[k] for k in ("series", "coverage", "totals")},
        **{k: median.get(k) for k in ("data_points", "problems")},
    }


def amdahl(one: float | None, two: float | None) -> dict[str, float | None]:
    """Speedup of 2 over 1, the serial fraction s it implies, and the predicted 32-core time."""
    if not one or not two:
        return {"speedup": None, "serial_fraction": None, "predicted_32_s": None}
    serial = 2 * two / one - 1
    clamped = min(1.0, max(0.0, serial))
    return {
        "speedup": one / two,
        "serial_fraction": serial,
        "predicted_32_s": one * (clamped + (1 - clamped) / PREDICTED_CORES),
    }


def summaries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for key in sorted({(r["size"], r["shape"], r["format"]) for r in rows}):
        times = {
            r["engine"]: r["run_s_median"]
            for r in rows
            if (r["size"], r["shape"], r["format"]) == key
        }
        duck = times.get("duckdb")
        same = times.get("duckdb-figures")
        out.append(
            {
                "size": key[0],
                "shape": key[1],
                "format": key[2],
                "vs_duckdb": {e: t / duck for e, t in times.items() if duck} if duck else {},
                "vs_duckdb_figures": {e: t / same for e, t in times.items()} if same else {},
                "local": amdahl(times.get("local-1"), times.get("local-2")),
                "cluster": amdahl(times.get("cluster-1"), times.get("cluster-2")),
            }
        )
    return out


def mismatches(rows: list[dict[str, Any]]) -> list[str]:
    """Engines (and formats) whose figures differ from the first row's on the same corpus."""
    first: dict[tuple[int, str], dict[str, Any]] = {}
    out = []
    for row in rows:
        figures = (row["series"], row["coverage"], round(row["totals"], 3))
        reference = first.setdefault((row["size"], row["shape"]), row)
        want = (reference["series"], reference["coverage"], round(reference["totals"], 3))
        if figures != want:
            out.append(
                f"{row['engine']} {row['format']} on {row['shape']}-{row['size']}: {figures} "
                f"differs from {reference['engine']} {reference['format']}: {want}"
            )
    return out


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Machine: {report['machine']}. Run: the aggregation (median of {report['runs']}); "
        "wall: the child process, start-up included. CPU: the child's tree, and the cluster's "
        "daemons meanwhile. Peak RSS: the child's tree, its own process (driver), the cluster.",
        "",
        "| points | shape | format | objects | engine | run s | wall s | vs DuckDB "
        "| vs DuckDB figures | CPU s "
        "| cluster CPU s | peak RSS MiB | driver RSS MiB | cluster RSS MiB | JVM heap MiB |",
        "|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ratios = {(s["size"], s["shape"], s["format"]): s["vs_duckdb"] for s in report["summaries"]}
    same = {
        (s["size"], s["shape"], s["format"]): s["vs_duckdb_figures"] for s in report["summaries"]
    }
    for r in report["rows"]:
        key = (r["size"], r["shape"], r["format"])
        ratio, figures = (found.get(key, {}).get(r["engine"]) for found in (ratios, same))
        lines.append(
            f"| {r['size']:,} | {r['shape']} | {r['format']} | {r['objects']:,} | {r['engine']} "
            f"| {_num(r['run_s_median'], 2)} | {_num(r['wall_s_median'])} | {_num(ratio, 2)} "
            f"| {_num(figures, 2)} "
            f"| {_num(r['cpu_s_median'])} | {_num(r['cluster_cpu_s_median'])} "
            f"| {_num(r['peak_rss_mb_max'], 0)} | {_num(r['driver_peak_rss_mb_max'], 0)} "
            f"| {_num(r['cluster_peak_rss_mb_max'], 0)} | {_num(r['jvm_heap_peak_mb_median'], 0)} |"
        )
    lines += [
        "",
        f"Amdahl from 1 vs 2 workers: s = 2 T2 / T1 - 1; predicted on {PREDICTED_CORES} cores: "
        f"T1 (s + (1 - s) / {PREDICTED_CORES}).",
        "",
        "| points | shape | format | local 2 vs 1 | local s | local 32-core s "
        "| cluster 2 vs 1 | cluster s | cluster 32-core s |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in report["summaries"]:
        local, cluster = s["local"], s["cluster"]
        lines.append(
            f"| {s['size']:,} | {s['shape']} | {s['format']} | {_num(local['speedup'], 2)} "
            f"| {_num(local['serial_fraction'], 2)} | {_num(local['predicted_32_s'], 2)} "
            f"| {_num(cluster['speedup'], 2)} | {_num(cluster['serial_fraction'], 2)} "
            f"| {_num(cluster['predicted_32_s'], 2)} |"
        )
    return "\n".join(lines)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus-root", type=Path, default=DEFAULT_CORPUS_ROOT)
    parser.add_argument("--window", type=int, default=14)
    parser.add_argument("--pin-workers", action="store_true", help=audit_bench.PIN_HELP)
    parser.add_argument("--code", type=audit_bench.checkout, help=audit_bench.CODE_HELP)
    parser.add_argument("--out", type=Path, help="the JSON results (default: not kept)")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    if args.child:
        child(args.child, args.path, args.window, args.master)
        return
    corpora = {
        (size, shape): corpus(args.corpus_root, size, shape)
        for size in args.sizes
        for shape in args.shapes
    }
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "runs": args.runs,
        "corpora": {f"{shape}-{size}": info for (size, shape), (_, info) in corpora.items()},
        "rows": [],
    }
    # Engine by engine: a cluster runs only while its own engine is measured.
    for engine in args.engines:
        with where(engine, args.corpus_root, args.pin_workers, args.code) as at:
            for (size, shape), (folder, info) in corpora.items():
                for fmt in args.formats:
                    row = run_engine(engine, folder / fmt, args.runs, args.window, at)
                    row.update(size=size, shape=shape, format=fmt, objects=info["objects"])
                    report["rows"].append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    report["summaries"] = summaries(report["rows"])
                    report["mismatches"] = mismatches(report["rows"])
                    if args.out:
                        args.out.parent.mkdir(parents=True, exist_ok=True)
                        args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(markdown(report))
    if report["mismatches"]:
        sys.exit("figures differ:\n" + "\n".join(report["mismatches"]))


if __name__ == "__main__":
    main()
