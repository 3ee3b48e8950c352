"""How many Spark jobs one audit runs: a generated fleet audited with the CLI on a local
session, the DAG scheduler's next job id read before and after each run.

    python bench/spark_jobs.py --count 20 --runs 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=20, help="templates (default 20)")
    options.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    args = options.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from constructs_lib.audit import cli

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    with tempfile.TemporaryDirectory() as folder:
        generate = [sys.executable, str(HERE / "generate_templates.py")]
        subprocess.run(
            [*generate, "--count", str(args.count), "--out", folder],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for run in range(args.runs):
            before, started = scheduler.nextJobId(), time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                cli.main([f"{folder}/templates", "--engine", "spark", "--quiet"])
            jobs = scheduler.nextJobId() - before
            print(f"run {run + 1}: {jobs} Spark jobs, {time.perf_counter() - started:.1f} s")
    spark.stop()


if __name__ == "__main__":
    main()
