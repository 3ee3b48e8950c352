"""Where the Spark metrics read spends its time: each stage's tasks, duration and executor time,
and the driver's CPU (its Python process and its JVM) during the read.

    python bench/spark_metrics_stages.py CORPUS/parquet [--engines spark cluster-1 cluster-2]
        [--pin-workers] [--code DIR]

Each engine runs ``spark/metrics.py``'s ``read_and_aggregate`` once, in a child process, on the
session ``bench/metrics_bench.py`` gives it (a standalone cluster is started around its run).
The stages come from the session's status store once the read is done; the driver's CPU is
read from ``/proc`` before and after it. What two workers cannot split shows here: the stages
whose duration does not fall with the workers, and the driver's share of the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import audit_bench  # noqa: E402  (--code)
import metrics_bench  # noqa: E402


def _process_tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds (user + system) of ``root`` and every process below it."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, grown = {root}, True
    while grown:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grown = bool(below)
    return {pid: cpu[pid] for pid in tree if pid in cpu}


def _stages(spark: Any) -> list[dict[str, Any]]:
    """The session's completed stages, in the order they started."""
    jvm = spark.sparkContext._jvm
    store = spark.sparkContext._jsc.sc().statusStore()
    empty = jvm.java.util.ArrayList()
    found = store.stageList(
        empty, False, False, spark.sparkContext._gateway.new_array(jvm.double, 0), empty
    )
    stages = []
    for index in range(found.size()):
        stage = found.apply(index)
        if stage.completionTime().isEmpty() or stage.submissionTime().isEmpty():
            continue
        submitted = stage.submissionTime().get().getTime()
        stages.append(
            {
                "stage": stage.stageId(),
                "tasks": stage.numTasks(),
                "submitted_ms": submitted,
                "duration_s": (stage.completionTime().get().getTime() - submitted) / 1000,
                "executor_run_s": stage.executorRunTime() / 1000,
            }
        )
    stages.sort(key=lambda s: s["submitted_ms"])
    return stages


def child(location: str, window: int, master: str | None) -> None:
    from constructs_lib.audit.engines.spark import metrics
    from constructs_lib.audit.engines.spark.session import create_session

    spark = create_session(master=master)
    spark.range(10).count()  # the session's first job, apart from the read
    before = _process_tree_cpu(os.getpid())
    started = time.monotonic()
    read = metrics.read_and_aggregate(spark, location, window)
    run = time.monotonic() - started
    after = _process_tree_cpu(os.getpid())
    python = after[os.getpid()] - before.get(os.getpid(), 0.0)
    jvm = sum(s - before.get(pid, 0.0) for pid, s in after.items() if pid != os.getpid())
    stages = _stages(spark)[1:]  # past the warm-up job's
    print(
        json.dumps(
            {
                "run_s": run,
                "driver_python_cpu_s": python,
                "driver_jvm_cpu_s": jvm,
                "series": len(read.series),
                "stages": stages,
            }
        )
    )
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("location")
    parser.add_argument("--engines", nargs="+", default=["spark", "cluster-1", "cluster-2"])
    parser.add_argument("--window", type=int, default=14)
    parser.add_argument("--pin-workers", action="store_true")
    parser.add_argument("--code", type=audit_bench.checkout, help=audit_bench.CODE_HELP)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.location, args.window, args.master)
        return
    root = Path(args.location).resolve().parent.parent
    for engine in args.engines:
        with metrics_bench.where(engine, root, args.pin_workers, args.code) as at:
            command = [sys.executable, __file__, args.location, "--child",
                       "--window", str(args.window), *at.args]  # fmt: skip
            done = subprocess.run(command, env=at.env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{engine}:\n{done.stderr[-3000:]}")
        found = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"\n{engine}: read {found['run_s']:.2f} s, {found['series']:,} series; driver CPU "
            f"meanwhile: Python {found['driver_python_cpu_s']:.1f} s, JVM "
            f"{found['driver_jvm_cpu_s']:.1f} s\n"
        )
        print("| stage | tasks | starts at s | duration s | executor time s |")
        print("|---:|---:|---:|---:|---:|")
        first = found["stages"][0]["submitted_ms"] if found["stages"] else 0
        for stage in found["stages"]:
            print(
                f"| {stage['stage']} | {stage['tasks']} | {(stage['submitted_ms'] - first) / 1000:.1f}"
                f" | {stage['duration_s']:.2f} | {stage['executor_run_s']:.1f} |"
            )


if __name__ == "__main__":
    main()
