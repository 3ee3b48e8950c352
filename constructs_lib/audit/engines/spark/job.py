"""The whole audit on Spark (``SparkEngine.audit``): parse -> resolve -> evaluate -> accept ->
load, timed.

The load step is here: the findings to the driver for the report (gathered, or streamed:
``streaming.py``), and from the executors to ``--output-dir`` (``report/datasets.py``).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from constructs_lib.audit import model
from constructs_lib.audit.engines.request import AuditInputs, AuditOptions
from constructs_lib.audit.engines.spark.accept import accept, fixed_of
from constructs_lib.audit.engines.spark.deployed import parse_targets
from constructs_lib.audit.engines.spark.evaluate import (
    CROSSING_KINDS,
    DRIVER_JOIN_BYTES,
    JOINED_KINDS,
    evaluate,
    queues_with_metrics,
)
from constructs_lib.audit.engines.spark.parse import parse
from constructs_lib.audit.engines.spark.schemas import WIDE_TEXT, RowKind, ledger_of, narrow
from constructs_lib.audit.engines.spark.streaming import report_view, summarize
from constructs_lib.audit.metrics import ledger, observations
from constructs_lib.audit.model import AuditResult, FileRow, Finding, ResourceRow
from constructs_lib.audit.report import datasets
from constructs_lib.audit.report.words import plural
from constructs_lib.audit.resolve import nesting

# Templates per partition of the parsed rows: each later stage's task over them is then big
# enough to be worth its scheduling, on a cluster as on one machine.
FILES_PER_PARTITION = 25_000
# Spark SQL settings the run needs, set on the session while it runs and restored after. The
# findings are cached after a join whose shuffle has the session's partitions (200 by default on
# a cluster). Adaptive execution merges small shuffle partitions, but in a cached plan only with
# this setting on; without it every later pass over the findings (the counts, the sort for the
# report, the datasets) ran 204 tasks, and on one standalone worker the join stage and report of
# 100,000 templates took 154 s instead of 119 s (docs/performance.md, "The join stage on a
# cluster"). Spark 3.5.0, where it was on by default, lost rows of joins over cached plans
# (SPARK-45592, fixed by apache/spark#43435 before 4.0); this package needs pyspark 4.3.
RUN_SETTINGS = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}


def _counts(wide: DataFrame) -> tuple[int, int, int]:
    """(files, queues, bytes of text the join stage reads) in one job, which also fills the
    cache of parsed rows."""
    tag = F.col("tag")
    resource_type = F.col(WIDE_TEXT[ResourceRow._fields.index("type")])
    is_queue = (tag == RowKind.RESOURCE) & (resource_type == model.QUEUE)
    text = sum((F.coalesce(F.octet_length(c), F.lit(0)) for c in WIDE_TEXT), F.lit(0))
    joined = tag.isin(*{*CROSSING_KINDS, *JOINED_KINDS})
    row = wide.select(
        F.sum(F.when(tag == RowKind.FILE, 1).otherwise(0)).alias("files"),
        F.sum(F.when(is_queue, 1).otherwise(0)).alias("queues"),
        F.sum(F.when(joined, text).otherwise(0)).alias("join_bytes"),
    ).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    return int(row["files"] or 0), int(row["queues"] or 0), int(row["join_bytes"] or 0)


class SparkEngine:
    """The audit on one Spark session (``spark``), which its caller starts, reuses and stops
    (``session.running``): the engine only runs jobs on it. The join stage runs on the driver
    when the rows it reads hold at most ``driver_join_bytes`` of text, on the executors
    otherwise (``evaluate.DRIVER_JOIN_BYTES``; 0 always joins on the executors)."""

    def __init__(self, spark: SparkSession, driver_join_bytes: int = DRIVER_JOIN_BYTES) -> None:
        self.spark = spark
        self.driver_join_bytes = driver_join_bytes

    def audit(self, inputs: AuditInputs, options: AuditOptions) -> AuditResult:
        """The Spark engine's entry point (``request.py``), with the local engine's findings:
        ``inputs.files`` (paths or ``s3://`` URLs) read and parsed on the executors, and the
        stacks ``inputs.deployed`` in each target (account and region) read there too, one
        task per target; ``inputs.metrics``, the aggregated series (``spark/metrics.py``),
        join each queue's context; ``options.acceptance`` (a suppressions file, a baseline) is
        applied as the local engine does. With ``options.output_dir``, the executors also
        write the findings there as Parquet and JSON Lines (``datasets.write``).

        ``options.gather=False`` keeps the driver's memory independent of the fleet's size:
        the result's ``findings`` streams from the executors in report order
        (``streaming.FindingsView``), its counts are computed by Spark, and the session keeps
        the findings cached until ``streaming.release(result)``."""
        with _settings(self.spark, RUN_SETTINGS):
            return self._audit(inputs, options)

    def _audit(self, inputs: AuditInputs, options: AuditOptions) -> AuditResult:
        say: Callable[[str], None] = (lambda _m: None) if options.quiet else _progress
        files = list(inputs.files)
        timings: dict[str, float] = {}
        started = time.perf_counter()
        say(f"reading and parsing {plural(len(files), 'file')}")
        partitions = _partitions(self.spark, len(files))
        wide, file_count, queue_count, join_bytes = _parse_fleet(
            self.spark, inputs, options, partitions
        )
        timings["parse"] = time.perf_counter() - started
        say(f"parsed {file_count:,} of {plural(len(files), 'file')} in {timings['parse']:.1f} s")

        mark = time.perf_counter()
        on_driver = join_bytes <= self.driver_join_bytes
        judged, share, ledgers = evaluate(wide, partitions, inputs.metrics, on_driver)
        # On disk, not in memory: on a local master the executor is the driver's JVM, whose
        # heap must not hold the fleet's findings.
        findings_df = accept(self.spark, judged, options.acceptance, partitions).persist(
            StorageLevel.DISK_ONLY
        )
        fixed = fixed_of(findings_df, options.acceptance)
        load = _gathered if options.gather else _streamed
        result, listing = load(findings_df, wide, queue_count, timings, fixed)
        result.cross_template = share
        if inputs.metrics is not None:
            with_metrics = queues_with_metrics(wide, inputs.metrics)
            result.metrics = observations.summary(inputs.metrics, with_metrics, queue_count)
        if ledgers is not None:
            result.ledgers = _ranked(ledgers)
        timings["evaluate"] = time.perf_counter() - mark
        say(_judged(queue_count, len(result.findings), timings["evaluate"], share))

        mark = time.perf_counter()
        if options.output_dir:
            parts = functools.partial(_write_parts, listing)
            written = datasets.write(result, options.output_dir, parts)
            say(f"wrote {plural(len(result.findings), 'finding')} to {written}")
        timings["write"] = time.perf_counter() - mark
        wide.unpersist()
        if options.gather:
            findings_df.unpersist()
        return result


@contextlib.contextmanager
def _settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` on ``spark``'s SQL configuration while the block runs; each restored after
    to what it was, or unset if it was not set."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, was in before.items():
            if was is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, was)


def _parse_fleet(
    spark: SparkSession, inputs: AuditInputs, options: AuditOptions, partitions: int
) -> tuple[DataFrame, int, int, int]:
    """The parsed rows of the files and deployed stacks, cached in ``partitions``, and
    (files, queues, the join stage's bytes) counted: nested stacks whose parent passes plain
    values are parsed again with those values."""
    files, limits, overrides = list(inputs.files), options.limits, options.overrides
    wide = parse(spark, files, limits, overrides, inputs.metrics)
    if inputs.deployed:
        deployed = parse_targets(spark, inputs.deployed, limits, overrides, inputs.metrics)
        wide = wide.unionByName(deployed)
    wide = _cached(wide, partitions)
    again, child_overrides = nesting.children(
        (model.NestedRow(*row) for row in narrow(wide, RowKind.NESTED).collect()), files, overrides
    )
    if again:  # nested stacks whose parent passes plain values: parse those children again
        reparsed = parse(spark, again, limits, child_overrides, inputs.metrics)
        kept = wide.filter(~F.col("src").isin([file for file, _stack in again]))
        first, wide = wide, _cached(kept.unionByName(reparsed), partitions)
    counts = _counts(wide)
    if again:
        first.unpersist()
    return (wide, *counts)


def _cached(wide: DataFrame, partitions: int) -> DataFrame:
    """The parsed rows cached in ``partitions``, each sorted by kind.

    Few partitions: every later stage scans them, and each partition is a task there; the parse
    itself keeps its own, finer tasks. Sorted by kind: each later stage reads one or a few
    kinds (``schemas.narrow``), and the cache keeps each column's bounds per batch of rows, so
    a scan skips the batches of other kinds instead of reading them. With the crossing rows
    read once (``evaluate.py``), the join stage of 100,000 templates took 59.5 s instead of
    74.2 s on one standalone worker, 33.5 s instead of 44.5 s on ``local[2]``
    (docs/performance.md, "The parsed rows cached sorted by kind")."""
    return wide.coalesce(partitions).sortWithinPartitions("tag").persist()


def _gathered(
    findings_df: DataFrame,
    wide: DataFrame,
    queue_count: int,
    timings: dict[str, float],
    fixed: list[Finding] | None,
) -> tuple[AuditResult, DataFrame]:
    """The result with its findings and files on the driver, sorted, and the frame that lists
    the findings for the datasets."""
    findings: Collection[Finding] = sorted(
        (Finding(**row) for row in findings_df.toArrow().to_pylist()), key=Finding.sort_key
    )
    file_rows = sorted(
        (FileRow(*row) for row in narrow(wide, RowKind.FILE).collect()), key=lambda f: f.file
    )
    return AuditResult(findings, file_rows, queue_count, timings, fixed=fixed), findings_df


def _streamed(
    findings_df: DataFrame,
    wide: DataFrame,
    queue_count: int,
    timings: dict[str, float],
    fixed: list[Finding] | None,
) -> tuple[AuditResult, DataFrame]:
    """The result whose findings stream from the executors in report order, its counts
    computed by Spark, and the frame that lists the findings for the datasets."""
    summary, listed, size = summarize(findings_df, narrow(wide, RowKind.FILE), queue_count, fixed)
    view = report_view(findings_df, listed, size)
    return AuditResult(view, [], queue_count, timings, summary, fixed), view.frame


def _ranked(ledgers: DataFrame) -> tuple[model.QueueLedger, ...]:
    """The ledgers on the driver, finished and ranked as the local engine does: one small job,
    a row per observed queue (gathered or streamed, the fleet's findings stay where they are)."""
    texts = ledgers.select("ledger").toArrow().column("ledger").to_pylist()
    return ledger.ranked(ledger_of(text) for text in texts)


def _judged(queues: int, findings: int, seconds: float, crossing: dict[str, int]) -> str:
    return (
        f"judged {plural(queues, 'queue')}: {plural(findings, 'finding')} in "
        f"{seconds:.1f} s (the join across templates judged "
        f"{plural(crossing['queues'], 'queue')} from {plural(crossing['templates'], 'template')})"
    )


def _write_parts(findings: DataFrame, root: str, run: str) -> None:
    """The executors write the findings' parts of run ``run`` under ``root`` (a path every
    executor can reach, or ``s3://``)."""
    write_part = functools.partial(datasets.write_part, root=root, run=run)
    # The written parts come back as (path, rows) only: no finding travels to the driver here.
    findings.mapInArrow(write_part, datasets.PART_SCHEMA_DDL).collect()


def _partitions(spark: SparkSession, files: int) -> int:
    """Partitions for the cached rows and the judging pass: about one per
    ``FILES_PER_PARTITION`` templates and at least two, at most the session's shuffle partitions
    (one per core on a local master). More only adds tasks: on a 2-core standalone cluster, the
    default 200 shuffle partitions made a 10,000-template run take 71 s instead of 43 s, and
    20 partitions a 100,000-template run 119 s instead of 109 s with 8."""
    configured = int(spark.conf.get("spark.sql.shuffle.partitions", "200") or 200)
    return max(1, min(configured, max(2, files // FILES_PER_PARTITION)))


def _progress(message: str) -> None:
    print(f"queue-audit: {message}", file=sys.stderr, flush=True)
