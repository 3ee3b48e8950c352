"""What the pre-commit hook costs: queue-audit on a handful of changed templates.

    python bench/precommit_bench.py --counts 5 50 --runs 5

The hook runs ``queue-audit --engine local --quiet FILES...`` once per commit. For each count,
that many generated healthy templates (half with SSE turned off, so the report is not empty) are
audited in this process through ``cli.main`` and as the command a hook runs; the medians of
``--runs`` runs are printed. The command's time includes Python's start-up and imports, which
is what a developer waits for.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate_templates import healthy
from constructs_lib.audit import cli


def write_templates(folder: Path, count: int) -> list[str]:
    paths = []
    for index in range(count):
        template = healthy(f"commit{index}")
        if index % 2:
            template["Resources"]["Source"]["Properties"]["SqsManagedSseEnabled"] = False
        path = folder / f"stack{index}.template.json"
        path.write_text(json.dumps(template))
        paths.append(str(path))
    return paths


def in_process(arguments: list[str]) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(arguments)
    return time.perf_counter() - start


def as_command(arguments: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit", *arguments],
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="*", default=[5, 50])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    print("| templates | in-process median ms | as a command median ms |")
    print("|---:|---:|---:|")
    for count in options.counts:
        with tempfile.TemporaryDirectory() as folder:
            files = write_templates(Path(folder), count)
            report = str(Path(folder) / "report.txt")
            arguments = [*files, "--engine", "local", "--quiet", "--output", report]
            in_process(arguments)  # warm imports, as the command pays them anyway
            inside = statistics.median(in_process(arguments) for _ in range(options.runs))
            command = statistics.median(as_command(arguments) for _ in range(options.runs))
        print(f"| {count} | {inside * 1000:.0f} | {command * 1000:.0f} |")


if __name__ == "__main__":
    main()
