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
from typing import Any

HERE = Path(__file__).parent


def local_session(*settings: tuple[str, str]) -> Any:
    """A quiet ``local[2]`` session: Spark's defaults but for ``settings``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in settings:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def generated_templates(count: int, folder: str) -> str:
    """``count`` templates from ``generate_templates.py`` under ``folder``: their folder."""
    generate = [sys.executable, str(HERE / "generate_templates.py")]
    subprocess.run(
        [*generate, "--count", str(count), "--out", folder], check=True, stdout=subprocess.DEVNULL
    )
    return f"{folder}/templates"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=20, help="templates (default 20)")
    options.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    args = options.parse_args()
    from constructs_lib.audit import cli

    spark = local_session()
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    with tempfile.TemporaryDirectory() as folder:
        templates = generated_templates(args.count, folder)
        for run in range(args.runs):
            before, started = scheduler.nextJobId(), time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                cli.main([templates, "--engine", "spark", "--quiet"])
            jobs = scheduler.nextJobId() - before
            print(f"run {run + 1}: {jobs} Spark jobs, {time.perf_counter() - started:.1f} s")
    spark.stop()


if __name__ == "__main__":
    main()
