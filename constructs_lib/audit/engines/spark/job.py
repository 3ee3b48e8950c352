"""The whole audit on Spark (``run``): parse -> resolve -> evaluate -> accept -> load, timed.

The load step is here: the findings to the driver for the report (gathered, or streamed:
``streaming.py``), and from the executors to ``--output-dir`` (``outputs.py``).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Collection, Sequence

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from constructs_lib.audit import model
from constructs_lib.audit.accept import apply as acceptance
from constructs_lib.audit.engines.spark.accept import accept, fixed_of
from constructs_lib.audit.engines.spark.deployed import parse_targets
from constructs_lib.audit.engines.spark.evaluate import evaluate, queues_with_metrics
from constructs_lib.audit.engines.spark.parse import parse
from constructs_lib.audit.engines.spark.schemas import WIDE_TEXT, narrow
from constructs_lib.audit.engines.spark.streaming import report_view, summarize
from constructs_lib.audit.inputs.deployed import Target
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.model import AuditResult, FileRow, Finding, ResourceRow
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.report import datasets as outputs
from constructs_lib.audit.report.words import plural
from constructs_lib.audit.resolve import nesting
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

# Templates per partition of the parsed rows: each later stage's task over them is then big
# enough to be worth its scheduling, on a cluster as on one machine.
FILES_PER_PARTITION = 25_000


def _counts(wide: DataFrame) -> tuple[int, int]:
    """(files, queues) in one job, which also fills the cache of parsed rows."""
    tag = F.col("tag")
    resource_type = F.col(WIDE_TEXT[ResourceRow._fields.index("type")])
    is_queue = (tag == "resource") & (resource_type == model.QUEUE)
    row = wide.select(
        F.sum(F.when(tag == "file", 1).otherwise(0)).alias("files"),
        F.sum(F.when(is_queue, 1).otherwise(0)).alias("queues"),
    ).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    return int(row["files"] or 0), int(row["queues"] or 0)


def run(
    spark: SparkSession,
    files: list[tuple[str, str]],
    output_dir: str | None = None,
    quiet: bool = True,
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    gather: bool = True,
    acceptance: acceptance.Acceptance = acceptance.NONE,
    deployed: Sequence[Target] = (),
    metrics: Metrics | None = None,
) -> AuditResult:
    """Audit ``(path or s3:// URL, stack)`` pairs on ``spark``. With ``output_dir``, the
    executors also write the findings there as Parquet and JSON Lines (``outputs.py``).

    ``gather=False`` keeps the driver's memory independent of the fleet's size: the result's
    ``findings`` streams from the executors in report order (``streaming.FindingsView``), its
    counts are computed by Spark, and the session keeps the findings cached until
    ``streaming.release(result)``.
    ``acceptance`` (a suppressions file, a baseline) is applied as the local engine does.
    The stacks ``deployed`` in each target (account and region) are read on the executors, one
    task per target, and judged with the files; ``metrics``, the aggregated series
    (``spark/metrics.py``), join each queue's context."""
    progress: Callable[[str], None] = (lambda _m: None) if quiet else _progress
    timings: dict[str, float] = {}
    started = time.perf_counter()
    progress(f"reading and parsing {plural(len(files), 'file')}")
    wide = parse(spark, files, limits, overrides, metrics)
    if deployed:
        wide = wide.unionByName(parse_targets(spark, deployed, limits, overrides, metrics))
    # Few partitions for the cached rows: every later stage scans them, and each partition is a
    # task there; the parse itself keeps its own, finer tasks.
    partitions = _partitions(spark, len(files))
    wide = wide.coalesce(partitions).persist()
    again, child_overrides = nesting.children(
        (model.NestedRow(*row) for row in narrow(wide, "nested").collect()), files, overrides
    )
    if again:  # nested stacks whose parent passes plain values: parse those children again
        reparsed = parse(spark, again, limits, child_overrides, metrics)
        kept = wide.filter(~F.col("src").isin([file for file, _stack in again]))
        first, wide = wide, kept.unionByName(reparsed).coalesce(partitions).persist()
    file_count, queue_count = _counts(wide)
    if again:
        first.unpersist()
    timings["parse"] = time.perf_counter() - started
    progress(f"parsed {file_count:,} of {plural(len(files), 'file')} in {timings['parse']:.1f} s")

    mark = time.perf_counter()
    # On disk, not in memory: on a local master the executor is the driver's JVM, whose heap
    # must not hold the fleet's findings.
    judged, share = evaluate(wide, partitions, metrics)
    findings_df = accept(spark, judged, acceptance, partitions).persist(StorageLevel.DISK_ONLY)
    fixed = fixed_of(findings_df, acceptance)
    if gather:
        findings: Collection[Finding] = sorted(
            (Finding(**row) for row in findings_df.toArrow().to_pylist()), key=Finding.sort_key
        )
        file_rows = sorted(
            (FileRow(*row) for row in narrow(wide, "file").collect()), key=lambda f: f.file
        )
        result = AuditResult(findings, file_rows, queue_count, timings, fixed=fixed)
        listing = findings_df
    else:
        summary, listed, size = summarize(findings_df, narrow(wide, "file"), queue_count, fixed)
        view = report_view(findings_df, listed, size)
        findings, listing = view, view.frame
        result = AuditResult(findings, [], queue_count, timings, summary, fixed)
    result.cross_template = share
    if metrics is not None:
        with_metrics = queues_with_metrics(wide, metrics)
        result.metrics = observations.summary(metrics, with_metrics, queue_count)
    timings["evaluate"] = time.perf_counter() - mark
    crossing = result.cross_template
    progress(
        f"judged {plural(queue_count, 'queue')}: {plural(len(findings), 'finding')} in "
        f"{timings['evaluate']:.1f} s (the join across templates judged "
        f"{plural(crossing['queues'], 'queue')} from {plural(crossing['templates'], 'template')})"
    )

    mark = time.perf_counter()
    if output_dir:
        written = write_findings(listing, output_dir, result)
        progress(f"wrote {plural(len(findings), 'finding')} to {written}")
    timings["write"] = time.perf_counter() - mark
    wide.unpersist()
    if gather:
        findings_df.unpersist()
    return result


def write_findings(findings: DataFrame, base: str, result: AuditResult) -> str:
    """The executors write the findings as Parquet and JSON Lines under ``base`` (a path every
    executor can reach, or ``s3://``), as a new run; the driver adds the summary."""
    root, run = outputs.output_root(base), outputs.run_id()
    write_part = functools.partial(outputs.write_part, root=root, run=run)
    # The written parts come back as (path, rows) only: no finding travels to the driver here.
    findings.mapInArrow(write_part, outputs.PART_SCHEMA_DDL).collect()
    outputs.write_summary(root, run, result)
    return root


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
