"""Count the instructions of the local engine's DuckDB scan and of the bare DuckDB query, on the
same objects, under valgrind's callgrind.

    python bench/scan_instructions.py CORPUS/json [--objects 1] [--code DIR ...]

Wall and CPU seconds on a shared 2-core machine move by a quarter from run to run; an
instruction count is the same twice for the same code and input, whatever else the machine
does. Each figure is a child process run under callgrind with DuckDB on one thread that runs the
query twice, less one of the same code that runs it once: one query, without the start-up and
what a first query sets up once. "scan" is ``scan.scan`` of the first ``--objects`` objects
(sorted by path): the choice of how to read each, the one query per format, its checks and
grouping; "bare" is ``metrics_bench``'s ``duckdb-figures`` query over the same objects. Each
``--code`` directory (a worktree of another commit) is measured beside this checkout, so one
invocation compares the code before and after a change.

Instructions are not seconds: a query whose groups outgrow the caches spends time waiting on
memory that callgrind does not count. Read these beside ``metrics_bench.py``'s seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WINDOW_DAYS = 14
QUERIES = ("scan", "bare")
_COLLECTED = re.compile(rb"Collected : (\d+)")


def _child(query: str, location: str, objects: int, times: int) -> None:
    import duckdb

    from constructs_lib.audit.metrics import scan, stream
    from constructs_lib.audit.metrics.decode import DEFAULT_STREAM_LIMITS

    sys.path.insert(0, str(HERE))
    import metrics_bench

    chosen = sorted(stream.list_objects(location), key=lambda o: o.location)[:objects]
    source = metrics_bench.duckdb_source(location.rstrip("/").endswith("parquet"), "$files")
    bare = metrics_bench.DUCKDB_FIGURES_QUERY.format(source=source, days=WINDOW_DAYS)
    for _ in range(times):
        if query == "scan":
            _found, left = scan.scan(chosen, DEFAULT_STREAM_LIMITS, workers=1)
            if left:
                raise SystemExit(f"the scan left {len(left)} objects to the per-object path")
        else:
            connection = duckdb.connect(config={"threads": 1})
            connection.sql(bare, params={"files": [o.location for o in chosen]}).fetchall()


def _instructions(code: Path, query: str, location: str, objects: int, times: int) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        query,
        location,
        "--objects",
        str(objects),
        "--times",
        str(times),
    ]
    environment = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(command, env=environment, capture_output=True, check=True)
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count: {done.stderr[-500:].decode()}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("location")
    parser.add_argument("--objects", type=int, default=1)
    parser.add_argument("--times", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--code", type=Path, action="append", default=[])
    parser.add_argument("--child", choices=QUERIES)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.location, args.objects, args.times)
        return
    print(f"{args.location}, the first {args.objects} objects, DuckDB on one thread")
    print("\n| code | scan (M instructions) | bare query (M instructions) | scan / bare |")
    print("|---|---:|---:|---:|")
    for code in [ROOT, *args.code]:
        scanned, bare = (
            _instructions(code, q, args.location, args.objects, 2)
            - _instructions(code, q, args.location, args.objects, 1)
            for q in QUERIES
        )
        label = "this checkout" if code == ROOT else str(code)
        print(f"| {label} | {scanned / 1e6:,.0f} | {bare / 1e6:,.0f} | {scanned / bare:.2f} |")


if __name__ == "__main__":
    main()
