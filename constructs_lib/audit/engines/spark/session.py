"""The Spark session the audit runs on: classic (local or a cluster) or Spark Connect, quiet."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from constructs_lib.audit.engines.spark import shipping

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def create_session(
    master: str | None = None, remote: str | None = None, app_name: str = "queue-audit"
) -> SparkSession:
    """A quiet session: classic (``master``; default ``local[*]``, or what ``spark-submit``
    set) or Spark Connect (``remote``, ``sc://host:port``). Executors other than this process's
    own get the job's code shipped to them (``shipping.py``)."""
    builder: Any = SparkSession.builder
    if remote:
        spark: SparkSession = builder.remote(remote).appName(app_name).getOrCreate()
    else:
        # Python workers must run the interpreter that has constructs_lib installed, where the
        # executors are this machine's.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if master:
            builder = builder.master(master)
        if (master or "local").startswith("local"):
            # One machine: bind to loopback instead of guessing an interface (and warning).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (
            builder.appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config(
                "spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
            )
        )
        with _jvm_output_hidden():
            spark = builder.getOrCreate()
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    cores = _local_cores(str(spark.conf.get("spark.master", "") or ""))
    if cores:
        # One machine: one shuffle partition per core. Each stage of the audit's joins is
        # small, so more partitions only add tasks. A cluster keeps its own setting.
        spark.conf.set("spark.sql.shuffle.partitions", str(cores))
    if remote or not cores:
        shipping.ship(spark)
    return spark


@contextlib.contextmanager
def running(master: str | None = None, remote: str | None = None) -> Iterator[SparkSession]:
    """The session a run uses. Inside a program that already runs Spark (a notebook, a test),
    without ``master`` or ``remote``, that program's active session, left running; otherwise a
    new one (``create_session``), which this run owns and stops when it ends."""
    active = None if master or remote else SparkSession.getActiveSession()
    spark = active or create_session(master, remote)
    try:
        yield spark
    finally:
        if active is None:
            spark.stop()


def _local_cores(master: str) -> int:
    """The cores of a local master (``local``, ``local[4]``, ``local[*]``, ``local[2,3]``);
    0 for any other (the executors are then not this process's)."""
    if master == "local":
        return 1
    if not master.startswith("local["):
        return 0
    count = master[len("local[") :].split(",")[0].rstrip("]")
    return (os.cpu_count() or 1) if count == "*" else int(count) if count.isdigit() else 0


@contextlib.contextmanager
def _jvm_output_hidden() -> Iterator[None]:
    """The JVM that a classic session starts writes start-up chatter to stderr before any log
    configuration applies (``WARNING: Using incubator modules``, the default log level). It
    inherits this process's stderr, so point that at a log file while it starts; Spark's own
    errors still reach the caller as exceptions. ``QUEUE_AUDIT_SPARK_LOG`` names the file to
    keep (default: a temporary one, removed when this process exits)."""
    log_path = os.environ.get("QUEUE_AUDIT_SPARK_LOG")
    if not log_path:
        log_path = os.path.join(tempfile.gettempdir(), f"queue-audit-spark-{os.getpid()}.log")
        atexit.register(_remove, log_path)
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
