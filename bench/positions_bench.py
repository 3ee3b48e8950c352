"""What finding the source positions of resources costs the parse: the same files parsed with
and without them, in one process, alternating, the median of several runs.

    python bench/positions_bench.py --count 3000 --runs 5
    python bench/positions_bench.py --count 3000 --runs 7 --clock cpu


The corpus comes from bench/generate_templates.py (a fifth of it YAML with short forms). The
files are read once into memory, so that only parsing is timed: ``parsing.load_located`` (bytes
-> document, with or without positions) and ``templates.parse_template`` (the whole parse of one
template: document, dialect, rows). Each run parses every file once per mode, the modes in turn
so that neither always runs on a warmer machine. ``--clock cpu`` times the process's own CPU
time rather than the wall clock: on a machine busy with other work, the time this process waited
for a core is then left out (the work itself is single-threaded).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from constructs_lib.audit.parse import documents as parsing
from constructs_lib.audit.parse import pipeline as templates

HERE = Path(__file__).parent


def _corpus(count: int, folder: Path) -> list[tuple[str, bytes]]:
    subprocess.run(
        [
            sys.executable,
            str(HERE / "generate_templates.py"),
            "--count",
            str(count),
            "--out",
            str(folder),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    files = sorted(p for p in (folder / "templates").rglob("*") if p.is_file())
    return [(str(p), p.read_bytes()) for p in files]


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def _time(
    parse: Callable[[str, bytes, bool], object],
    files: list[tuple[str, bytes]],
    located: bool,
    clock: Callable[[], float],
) -> float:
    started = clock()
    for name, data in files:
        # the corpus's truncated files cost the same in both modes
        with contextlib.suppress(parsing.TemplateError):
            parse(name, data, located)
    return clock() - started


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=3000, help="templates (default 3000)")
    options.add_argument("--runs", type=int, default=5, help="runs per mode (default 5)")
    options.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time; cpu: this process's CPU time, for a busy machine (default wall)",
    )
    args = options.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = _corpus(args.count, Path(folder))
    stages: dict[str, Callable[[str, bytes, bool], object]] = {
        "load (bytes -> document)": lambda n, d, on: parsing.load_located(n, d, located=on),
        "parse (document, dialect, rows)": lambda n, d, on: templates.parse_template(
            n, "stack", d, located=on
        ),
    }
    clock = CLOCKS[args.clock]
    print(
        f"{len(files)} files, {sum(len(d) for _, d in files) / 2**20:.1f} MiB, "
        f"{args.runs} runs, {args.clock} clock"
    )
    for stage, parse in stages.items():
        samples: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.runs):
            for located in (False, True):
                samples[located].append(_time(parse, files, located, clock))
        without, with_ = statistics.median(samples[False]), statistics.median(samples[True])
        print(
            f"{stage}: without positions {without:.3f} s, with {with_:.3f} s, "
            f"{(with_ / without - 1) * 100:+.1f} %"
        )


if __name__ == "__main__":
    main()
