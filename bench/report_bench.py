"""Whether and how fast ``queue-audit`` finishes a fleet with many findings per template.

    python bench/report_bench.py --count 100000 --runs 1 --out bench/results/report
    python bench/report_bench.py --count 20000 --engines spark --runs 3

A fleet of ``--count`` templates from ``bench/generate_templates.py --profile many-findings``
(about 11 findings per template, where the bench corpus has 1.5) is audited by the command
itself, as a user runs it, once per engine and run, each in a fresh process:

    queue-audit --engine local --format json --output REPORT TEMPLATES
    queue-audit --engine spark --master local[2] --format json --output REPORT TEMPLATES

The Spark session gets the command's own settings only (the default 1 GiB driver heap); no JVM
gets the test fixtures' ``JAVA_TOOL_OPTIONS``. Reported per engine: the exit code (1: findings
at ``--fail-on error``, the expected outcome; 3: the run could not finish), median wall time,
peak RSS of the command's process tree and of its Python process (sampled from /proc as
``audit_bench.py`` does), the findings in the report and the check against the ground truth.
Results: a JSON file and a Markdown table in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import audit_bench  # noqa: E402
import generate_templates as generator  # noqa: E402

PROFILE = "many-findings"
# The command's exit codes: 1 when findings reach --fail-on (error, by default), 3 when the
# run could not finish.
EXPECTED_EXIT = 1


def command(engine: str, master: str, templates: Path, report: Path) -> list[str]:
    spark = ["--engine", "spark", "--master", master] if engine == "spark" else []
    return [
        sys.executable,
        "-m",
        "constructs_lib.audit",
        "--engine",
        engine,
        *spark,
        "--format",
        "json",
        "--output",
        str(report),
        "--quiet",
        str(templates),
    ]


def run_engine(engine: str, corpus: Path, runs: int, master: str, out: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in audit_bench.DROPPED_ENV}
    measured = []
    for number in range(runs):
        report = out / f"report-{engine}-{number}.json"
        report.unlink(missing_ok=True)
        result = audit_bench.measure(
            command(engine, master, corpus / generator.TEMPLATES_DIR, report), env=env
        )
        result["report"] = report
        measured.append(result)
        print(
            f"{engine} run {number + 1}: exit {result['returncode']}, "
            f"{result['wall_s']:.1f} s, peak RSS {result['peak_rss_mb']:.0f} MiB",
            flush=True,
        )
    median = sorted(measured, key=lambda r: r["wall_s"])[len(measured) // 2]
    row: dict[str, Any] = {
        "engine": engine if engine == "local" else f"spark {master}",
        "templates": json.loads((corpus / "ground-truth.json").read_text())["count"],
        "exit_codes": [r["returncode"] for r in measured],
        "wall_s": [round(r["wall_s"], 1) for r in measured],
        "median_wall_s": round(statistics.median(r["wall_s"] for r in measured), 1),
        "peak_rss_mb": round(median["peak_rss_mb"]),
        "driver_peak_rss_mb": round(median["driver_peak_rss_mb"]),
        "stderr_tail": median["stderr"][-600:],
    }
    if median["returncode"] == EXPECTED_EXIT and median["report"].exists():
        with open(median["report"], encoding="utf-8") as handle:
            row["findings"] = len(json.load(handle)["findings"])
        check = audit_bench.check_report(str(median["report"]), corpus)
        row["missed"], row["extra"] = check["missed"], check["extra"]
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| templates | engine | exit codes | median wall s (runs) | findings | missed / extra "
        "| peak RSS MiB | Python peak RSS MiB |",
        "|---:|---|---|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        runs = ", ".join(f"{w}" for w in r["wall_s"])
        found = f"{r['findings']:,}" if "findings" in r else "no report"
        check = f"{r['missed']} / {r['extra']}" if "missed" in r else "-"
        lines.append(
            f"| {r['templates']:,} | {r['engine']} | {', '.join(map(str, r['exit_codes']))} "
            f"| {r['median_wall_s']} ({runs}) | {found} | {check} | {r['peak_rss_mb']:,} "
            f"| {r['driver_peak_rss_mb']:,} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="templates (default 100000)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--engines", nargs="+", choices=["local", "spark"], default=["local", "spark"]
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="bench/results/report")
    parser.add_argument(
        "--corpus", help="a fleet generate_templates.py wrote (default: OUT/corpus-COUNT-...)"
    )
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    corpus = Path(args.corpus) if args.corpus else out / f"corpus-{args.count}-{PROFILE}"
    if not (corpus / "ground-truth.json").exists():
        generator.write(str(corpus), args.count, args.seed, PROFILE)
    rows = [run_engine(engine, corpus, args.runs, args.master, out) for engine in args.engines]
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    table = markdown(rows)
    (out / "results.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
