"""Time each step of the local engine's metrics read, on one corpus, in one process.

    python bench/local_metrics_steps.py CORPUS/parquet [--runs 3] [--workers 2]

The steps of ``aggregate.read_and_aggregate`` for local objects: listing, ``scan.kinds`` (which
objects DuckDB may read, and as what), the DuckDB scan (``scan.scan``, that choice included),
``scan.figures`` (the window applied) and the Python rows the rules read. Each is the median of
``--runs`` runs, in CPU seconds of this process (DuckDB's threads included) and wall seconds.
Run it at two commits (the code under test is the one importable as ``constructs_lib``) to
compare them on the same corpus and machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from constructs_lib.audit.metrics import aggregate, scan, stream
from constructs_lib.audit.metrics.decode import DEFAULT_STREAM_LIMITS
from constructs_lib.audit.metrics.request import window


def _timed(step: Callable[..., Any], *args: Any) -> tuple[Any, tuple[float, float]]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = step(*args)
    return result, (time.process_time() - cpu, time.perf_counter() - wall)


def _one_run(location: str, workers: int, days: int) -> dict[str, tuple[float, float]]:
    limits = DEFAULT_STREAM_LIMITS
    took: dict[str, tuple[float, float]] = {}
    listed, took["list"] = _timed(lambda: stream.within_window(stream.list_objects(location), days))
    ordered = sorted(listed[0], key=lambda o: -1 if o.hour is None else -o.hour)
    _, took["kinds"] = _timed(scan.kinds, ordered, limits)
    (found, _left), took["scan (kinds included)"] = _timed(scan.scan, ordered, limits, workers)
    start = window(found.newest, days)[0]
    figures, took["figures"] = _timed(scan.figures, found, start, workers)
    _, took["rows"] = _timed(aggregate.figure_rows, figures)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("location")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window", type=int, default=14)
    args = parser.parse_args()
    runs = [_one_run(args.location, args.workers, args.window) for _ in range(args.runs)]
    print("| step | CPU s | wall s |\n|---|---:|---:|")
    for step in runs[0]:
        cpu = statistics.median(run[step][0] for run in runs)
        wall = statistics.median(run[step][1] for run in runs)
        print(f"| {step} | {cpu:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    main()
