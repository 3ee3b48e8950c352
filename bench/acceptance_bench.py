"""What accepting findings costs: a suppressions file and a baseline, beside a plain audit.

    python bench/acceptance_bench.py --templates 2000 --runs 5
    python bench/acceptance_bench.py --templates 2000 --runs 5 --spark

A corpus from bench/generate_templates.py is audited in this process by the local engine
(``engine.audit``, parsing in worker processes, as ``queue-audit --engine local``) four
ways:
- plain: no acceptance;
- suppressions: a suppressions file of ``--entries`` entries (default 50), each a rule with
  globs on template, stack and resource, some matching the corpus's findings and most not;
- baseline: a baseline holding the plain run's findings (written once beforehand with
  ``baseline.write``), so every finding is compared and found unchanged;
- both: the file and the baseline.
Each timed run includes loading the file and the baseline (``acceptance.load``), as the command
does before it audits. Every round runs the four back to back, in an order rotated from round to
round; a variant's ratio is the median of its per-round ratios to the plain run of the same
round, so that load from other work on the machine touches them alike. The acceptance step alone
(``acceptance.apply`` on the plain run's findings, then ``acceptance.load``) is timed apart, in
milliseconds: the difference it makes is small beside the audit's parsing. Also reported:
``baseline.write`` of the plain run's findings, and the file's bytes per finding.

With ``--spark``, the Spark job on a classic ``local[2]`` session (``job.SparkEngine.audit``, findings gathered
to the driver) runs plain and with both, in rotating order likewise, and its findings with both
are checked against the local engine's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import generate_templates as generator  # noqa: E402

from constructs_lib.audit import rules  # noqa: E402
from constructs_lib.audit.accept import apply as acceptance  # noqa: E402
from constructs_lib.audit.accept import baseline  # noqa: E402
from constructs_lib.audit.engines import AuditInputs, AuditOptions  # noqa: E402
from constructs_lib.audit.engines import local as engine  # noqa: E402
from constructs_lib.audit.inputs import discovery  # noqa: E402
from constructs_lib.audit.model import Finding  # noqa: E402

VARIANTS = ("plain", "suppressions", "baseline", "both")
REASON = "Accepted by the platform team until the migration of this fleet."


def suppressions_document(findings: list[Finding], entries: int) -> dict[str, Any]:
    """``entries`` file entries: rules that the corpus reports, each with globs on a slice of the
    corpus's templates (``*/000/t0001*``), stacks and resources; about one in five names a
    resource of the corpus, the others one it does not have, so most findings are checked
    against every entry."""
    present = sorted({f.rule_id for f in findings} - {rules.UNPARSEABLE_RULE, "QR902"})
    listed = []
    for index in range(entries):
        hundred = index % 20
        listed.append(
            {
                "rule": present[index % len(present)],
                "template": f"*/{hundred // 10:03d}/t00{hundred:02d}*",
                "stack": f"t00{hundred:02d}*",
                "resource": "Sour*" if index % 5 == 0 else f"Legacy{index}*",
                "reason": REASON,
            }
        )
    return {"suppressions": listed}


def timed(action: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action(*args, **kwargs)
    return time.perf_counter() - started, value


def audit_local(files: list[tuple[str, str]], listed: list[str], baseline_file: str | None) -> Any:
    """As the command runs it: load what is accepted, then audit."""
    accepts = acceptance.load(listed, baseline_file)
    return engine.audit(AuditInputs(files), AuditOptions(acceptance=accepts))


def audit_spark(
    spark: Any, files: list[tuple[str, str]], listed: list[str], baseline_file: str | None
) -> Any:
    from constructs_lib.audit.engines.spark import job

    accepts = acceptance.load(listed, baseline_file)
    return job.SparkEngine(spark).audit(AuditInputs(files), AuditOptions(acceptance=accepts))


def _machine() -> str:
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"Machine: {os.cpu_count()} cores, {memory_gib:.0f} GiB, Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}; "
        f"load average at the end: {load}"
    )


def _rotated(names: tuple[str, ...], round_index: int) -> list[str]:
    shift = round_index % len(names)
    return [*names[shift:], *names[:shift]]


def _row(name: str, seconds: list[float], ratios: list[float], extra: str) -> str:
    ratio = statistics.median(ratios) if ratios else 1.0
    return (
        f"| {name} | {statistics.median(seconds):.2f} | {min(seconds):.2f}-{max(seconds):.2f} "
        f"| {ratio:.3f} | {extra} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--entries", type=int, default=50, help="suppressions file entries")
    parser.add_argument("--spark", action="store_true", help="also the Spark job on local[2]")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        generator.write(folder, options.templates)
        files = discovery.discover([str(root / generator.TEMPLATES_DIR)])
        plain = engine.audit(AuditInputs(files), AuditOptions())  # warms imports and the page cache
        findings = list(plain.findings)

        entries_file = root / "suppressions.json"
        entries_file.write_text(json.dumps(suppressions_document(findings, options.entries)))
        base = root / "baseline.json"
        writes = []
        recorded = 0
        for _ in range(options.runs):
            write_s, recorded = timed(baseline.write, str(base), findings)
            writes.append(write_s)
        size = base.stat().st_size

        inputs = {
            "plain": ([], None),
            "suppressions": ([str(entries_file)], None),
            "baseline": ([], str(base)),
            "both": ([str(entries_file)], str(base)),
        }

        def run(name: str) -> tuple[float, Any]:
            listed, baseline_file = inputs[name]
            return timed(audit_local, files, listed, baseline_file)

        seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
        ratios: dict[str, list[float]] = {name: [] for name in VARIANTS}
        results: dict[str, Any] = {}
        for round_index in range(options.runs):
            this_round: dict[str, float] = {}
            for name in _rotated(VARIANTS, round_index):
                this_round[name], results[name] = run(name)
                seconds[name].append(this_round[name])
            for name in VARIANTS:
                ratios[name].append(this_round[name] / this_round["plain"])

        # The acceptance step alone, on the plain run's findings.
        step: dict[str, tuple[float, float]] = {}
        for name in VARIANTS:
            listed, baseline_file = inputs[name]
            loads, applies = [], []
            for _ in range(options.runs):
                load_s, accepts = timed(acceptance.load, listed, baseline_file)
                apply_s, _ = timed(acceptance.apply, list(findings), accepts)
                loads.append(load_s)
                applies.append(apply_s)
            step[name] = (statistics.median(loads), statistics.median(applies))

        both = results["both"]
        suppressed = sum(1 for f in both.findings if f.suppression)
        unchanged = sum(1 for f in both.findings if f.baseline == "unchanged")
        print(
            f"{options.templates:,} templates, {len(findings):,} findings; with both: "
            f"{suppressed:,} suppressed by the file, {unchanged:,} unchanged, "
            f"{len(both.fixed or []):,} fixed; medians of {options.runs} runs"
        )
        print()
        print("| local engine | median s | min-max s | vs plain | load + accept ms |")
        print("|---|---:|---:|---:|---:|")
        for name in VARIANTS:
            load_s, apply_s = step[name]
            extra = "-" if name == "plain" else f"{load_s * 1000:.1f} + {apply_s * 1000:.1f}"
            print(_row(name, seconds[name], ratios[name], extra))
        print()
        print(
            f"`baseline.write` of {recorded:,} findings: median "
            f"{statistics.median(writes) * 1000:.1f} ms; {size:,} bytes, "
            f"{size / max(recorded, 1):.0f} bytes per finding"
        )

        if options.spark:
            print()
            spark_bench(files, inputs, results["both"], options.runs)
    print()
    print(_machine())


def spark_bench(
    files: list[tuple[str, str]],
    inputs: dict[str, tuple[list[str], str | None]],
    local_both: Any,
    runs: int,
) -> None:
    from constructs_lib.audit.engines.spark.session import create_session

    spark = create_session("local[2]")
    try:

        def run(name: str) -> tuple[float, Any]:
            listed, baseline_file = inputs[name]
            return timed(audit_spark, spark, files, listed, baseline_file)

        run("plain")  # the session's first job pays for starting Python workers
        names = ("plain", "both")
        seconds: dict[str, list[float]] = {name: [] for name in names}
        ratios: list[float] = []
        for round_index in range(runs):
            this_round: dict[str, float] = {}
            for name in _rotated(names, round_index):
                this_round[name], result = run(name)
                seconds[name].append(this_round[name])
                if name == "both":
                    assert list(result.findings) == list(local_both.findings)
                    assert result.fixed == local_both.fixed
            ratios.append(this_round["both"] / this_round["plain"])
    finally:
        spark.stop()
    print("| Spark, local[2] | median s | min-max s | vs plain | findings as local |")
    print("|---|---:|---:|---:|---:|")
    print(_row("plain", seconds["plain"], [1.0], "-"))
    print(_row("both", seconds["both"], ratios, "yes"))


if __name__ == "__main__":
    main()
