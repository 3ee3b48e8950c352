"""Where the Spark driver's CPU goes in one audit, with the driver's JVM compiling as the JVM
does by default (tiered: the client compiler C1, then C2 for the hottest code) and with C1
only (``-XX:TieredStopAtLevel=1`` in the driver's ``JAVA_TOOL_OPTIONS``), alternating on the
same generated fleet and Spark daemons.

    python bench/spark_driver_cpu.py --count 20000 --engine cluster-1 --pin-workers --runs 1
    python bench/spark_driver_cpu.py --count 20000 --engine spark --runs 1

``--engine``: ``spark`` (a ``local[2]`` session, whose driver runs the tasks too) or
``cluster-1``/``cluster-2`` (a standalone cluster of one-core workers, started as
``audit_bench.py`` starts it; ``--pin-workers`` puts each on a core of its own). Each run is a
child process that audits the fleet as ``audit_bench.py``'s child does (findings streamed into
the JSON report) and reports, per phase (the parse; the rest of the audit: joins, judging,
counts; the report), the wall seconds, the Python driver's CPU seconds and the driver JVM's,
and at the end the driver JVM's CPU seconds by thread group, read from ``/proc``: the
compiler threads (``C1``/``C2 CompilerThread``), garbage collection, and every other thread
(planning and scheduling, the threads that serve Python's calls among them). Medians of
``--runs``; the findings of every run must be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import audit_bench  # noqa: E402
import generate_templates as generator  # noqa: E402

# The driver JVM's compilers, by the options that choose them. Only the child's own JVM, the
# driver, gets them: a cluster's daemons and executors were started before, with theirs.
COMPILERS = {"tiered": "", "c1": "-XX:TieredStopAtLevel=1"}
PHASES = ("parse", "join and judge", "report")


def _ticks_to_seconds(ticks: int) -> float:
    return ticks / os.sysconf("SC_CLK_TCK")


def _cpu(stat_path: str) -> float:
    with open(stat_path, encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return _ticks_to_seconds(int(fields[11]) + int(fields[12]))


def _threads(pid: int) -> dict[str, float]:
    """CPU seconds of each of a process's live threads, by group."""
    groups: dict[str, float] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat", encoding="ascii") as handle:
                raw = handle.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        if re.match(r"C[12] CompilerThre", name):
            group = "compiler"
        elif name.startswith(("GC Thread", "G1 ")) or "Conc#" in name:
            group = "garbage collection"
        else:
            group = "other"
        fields = raw.rsplit(")", 1)[1].split()
        groups[group] = groups.get(group, 0.0) + _ticks_to_seconds(
            int(fields[11]) + int(fields[12])
        )
    return groups


def child(corpus: Path, master: str) -> None:
    from constructs_lib.audit import report
    from constructs_lib.audit.engines import AuditInputs, AuditOptions
    from constructs_lib.audit.engines.spark import job, session
    from constructs_lib.audit.inputs import discovery

    files = discovery.discover([str(corpus / generator.TEMPLATES_DIR)])
    spark = session.create_session(master=master)
    jvm: Any = spark._jvm
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    marks = [(time.perf_counter(), time.process_time(), _cpu(f"/proc/{jvm_pid}/stat"))]

    def mark() -> None:
        marks.append((time.perf_counter(), time.process_time(), _cpu(f"/proc/{jvm_pid}/stat")))

    parse_fleet = job._parse_fleet

    def timed_parse(*args: Any, **kwargs: Any) -> Any:
        parsed = parse_fleet(*args, **kwargs)
        mark()
        return parsed

    job._parse_fleet = timed_parse
    result = job.SparkEngine(spark).audit(AuditInputs(files), AuditOptions(gather=False))
    mark()
    with tempfile.TemporaryFile("w", encoding="utf-8") as handle:
        for piece in report.STREAMS["json"](result):
            handle.write(piece)
    summary = report.summarize(result)
    mark()
    threads = _threads(jvm_pid)
    spark.stop()
    phases = {
        name: {"wall_s": w1 - w0, "python_cpu_s": p1 - p0, "jvm_cpu_s": j1 - j0}
        for name, (w0, p0, j0), (w1, p1, j1) in zip(PHASES, marks[:-1], marks[1:], strict=True)
    }
    print(json.dumps({"findings": summary["findings"], "phases": phases, "threads": threads}))


def _run(corpus: Path, where: audit_bench.Target, compiler: str) -> dict[str, Any]:
    master = where.args[where.args.index("--master") + 1]
    command = [sys.executable, __file__, "--child", "--corpus", str(corpus), "--master", master]
    env = {**where.env, "JAVA_TOOL_OPTIONS": COMPILERS[compiler]}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{compiler} run failed:\n{done.stderr[-4000:]}\n{where.log_tail()}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _median(runs: list[dict[str, Any]], *path: str) -> float:
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value.get(key, 0.0)
        values.append(float(value))
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="templates (default 20000)")
    engines = ("spark", *audit_bench.CLUSTER_WORKERS)
    parser.add_argument("--engine", default="cluster-1", choices=engines)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--pin-workers", action="store_true", help=audit_bench.PIN_HELP)
    parser.add_argument("--out", default=str(audit_bench.REPO / "bench" / "results" / "driver"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--master", default="local[2]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.corpus), args.master)
        return
    out = Path(args.out).resolve()
    corpus = audit_bench.corpus_at(out, args.count, None)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in COMPILERS}
    with audit_bench.target(args.engine, "local[2]", out / "daemons", args.pin_workers) as where:
        for _ in range(args.runs):
            for compiler in COMPILERS:
                runs[compiler].append(_run(corpus, where, compiler))
    findings = {run["findings"] for done in runs.values() for run in done}
    if len(findings) != 1:
        raise SystemExit(f"the runs found different numbers of findings: {sorted(findings)}")
    print(f"{args.count:,} templates, {args.engine}, {findings.pop():,} findings, "
          f"median of {args.runs}\n")  # fmt: skip
    print("| driver's compiler | phase | wall s | Python CPU s | driver JVM CPU s |")
    print("|---|---|---:|---:|---:|")
    for compiler, done in runs.items():
        for phase in PHASES:
            kinds = ("wall_s", "python_cpu_s", "jvm_cpu_s")
            cells = [_median(done, "phases", phase, kind) for kind in kinds]
            print(f"| {compiler} | {phase} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    print("\n| driver's compiler | JVM compiler threads CPU s | GC CPU s | other threads CPU s |")
    print("|---|---:|---:|---:|")
    for compiler, done in runs.items():
        groups = ("compiler", "garbage collection", "other")
        cells = [_median(done, "threads", g) for g in groups]
        print(f"| {compiler} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
