#!/usr/bin/env python3
"""Wall time of the test suite (the pytest part of ``make test``), by test group.

Each group runs as its own ``pytest`` process with ``--durations``, so its time includes
collection, session fixtures (the example app's synth, the Spark session, the emulator) and
teardown: what a developer waits for when running that group alone. Groups run one after the
other; rounds repeat the whole sequence, and the table shows the median per group.

    python bench/suite_bench.py               # 2 rounds, every group
    python bench/suite_bench.py --runs 3 --groups tests/constructs tests/example
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS = REPO_ROOT / "tests"
NAMED_GROUPS = ("tests/constructs", "tests/example", "tests/audit", "tests/e2e")
OTHERS = "others"
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
DURATION = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S+)")


@dataclass
class GroupRun:
    wall_s: float
    cpu_s: float
    counts: dict[str, int]
    slowest: list[tuple[float, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def group_paths(group: str) -> list[str]:
    """The paths pytest gets for a group; ``others`` is every test outside the named groups."""
    if group != OTHERS:
        return [group] if (REPO_ROOT / group).exists() else []
    named = {REPO_ROOT / g for g in NAMED_GROUPS}
    return sorted(
        str(path.relative_to(REPO_ROOT))
        for path in TESTS.iterdir()
        if path not in named
        and (
            (path.is_file() and path.name.startswith("test_") and path.suffix == ".py")
            or (path.is_dir() and any(path.rglob("test_*.py")))
        )
    )


def run_group(paths: Sequence[str]) -> GroupRun:
    env = {**os.environ}
    env["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), str(REPO_ROOT / "node_modules" / ".bin"), env["PATH"]]
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=5"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [*command, *paths],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    lines = completed.stdout.splitlines()
    counts: dict[str, int] = {}
    if lines:
        for number, kind in SUMMARY.findall(lines[-1]):
            counts[kind.rstrip("s") if kind.startswith("error") else kind] = int(number)
    slowest = [
        (float(m.group(1)), f"{m.group(3)} ({m.group(2)})")
        for m in map(DURATION.match, lines)
        if m is not None
    ]
    failed = [line.split(" ", 2)[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return GroupRun(wall, cpu, counts, slowest, failed)


def _machine() -> str:
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"Machine: {os.cpu_count()} cores, {memory_gib:.0f} GiB, Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}"
    )


def _outcome(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no summary"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--groups", nargs="+", default=[*NAMED_GROUPS, OTHERS])
    options = parser.parse_args(argv)
    print(_machine())
    print(f"{options.runs} rounds; each group is one `pytest` process (median wall time).")
    print()
    results: dict[str, list[GroupRun]] = {g: [] for g in options.groups}
    for _ in range(options.runs):
        for group in options.groups:
            paths = group_paths(group)
            if paths:
                results[group].append(run_group(paths))
    print(
        "| group | tests (last round) | wall s (median) | min-max s | CPU s (median) | "
        "slowest tests (last round) |"
    )
    print("|---|---|---:|---:|---:|---|")
    total = 0.0
    for group, runs in results.items():
        if not runs:
            print(f"| {group} | absent | | | | |")
            continue
        walls = [r.wall_s for r in runs]
        total += statistics.median(walls)
        slowest = "; ".join(f"{name} {s:.1f}s" for s, name in runs[-1].slowest[:3])
        print(
            f"| {group} | {_outcome(runs[-1].counts)} | {statistics.median(walls):.1f} | "
            f"{min(walls):.1f}-{max(walls):.1f} | "
            f"{statistics.median([r.cpu_s for r in runs]):.1f} | {slowest} |",
            flush=True,
        )
    print(f"| all groups | | {total:.1f} | | | sum of the medians |")
    for group, runs in results.items():
        for index, run in enumerate(runs, start=1):
            for test in run.failed:
                print(f"Failed in round {index} of {group}: {test}")
    print()
    print(
        "CPU is user + system time of the pytest process and every child it waited for "
        "(jsii's node, the CDK CLI, the emulator, Spark's JVM when it is reaped)."
    )


if __name__ == "__main__":
    main()
