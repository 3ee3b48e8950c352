"""A run's findings for a report on Spark: sorted once, kept on disk, streamed to the driver a
partition at a time, and counted where they are, so the driver's memory does not grow with the
fleet.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from constructs_lib.audit import model, report, rules
from constructs_lib.audit.engines.spark.schemas import FINDING_FIELDS, FINDING_TEXT
from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.parse import pipeline as templates

# How rows reach the driver. On a classic session each stored partition is its own job
# (``SparkContext.runJob`` on one partition): nothing is held between partitions. A single
# ``toLocalIterator`` over a million findings of fourteen fields lost a task result
# (TaskResultLost) on the default 1 GiB heap after about 800,000 of them, with or without
# prefetching; Spark Connect has no RDDs and keeps ``toLocalIterator``, which it streams as
# Arrow batches.


def _partition_rows(frame: DataFrame) -> Iterator[Sequence[Any]]:
    if type(frame).__module__.startswith("pyspark.sql.connect"):
        yield from frame.toLocalIterator()
        return
    rdd = frame.rdd
    context = frame.sparkSession.sparkContext
    for partition in range(rdd.getNumPartitions()):
        yield from context.runJob(rdd, _as_tuples, [partition])


def _as_tuples(rows: Iterable[Any]) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in rows]


# The report's order: Finding.sort_key's fields, in its order. Spark orders strings by their
# UTF-8 bytes, which is code point order: Python's.
SORT_COLUMNS = ("template", "stack", "resource", "rule_id", "queue", "message")
# The most bytes of findings (``_finding_bytes``) in one partition of the report's order. The
# report streams partition by partition (``_partition_rows``): the driver's JVM holds a
# partition several times over while it hands it to Python (the task's pickled rows, the task
# result, as stored and as fetched), so
# 16 MiB keeps that near 128 MiB of a 1 GiB default heap whatever the fleet; the same bound
# holds for the executor that sorts a partition and for the Python worker that writes one as a
# dataset part. A million findings (470-600 bytes each) make 28-36 partitions, each one job.
REPORT_PARTITION_BYTES = 16 * 2**20
# What a finding costs beyond its text once pickled for Python: at most five bytes of opcode
# and length per field (eleven) and about twenty for the row's constructor call, rounded up.
FINDING_OVERHEAD_BYTES = 128


def _finding_bytes() -> Any:
    """A finding's size: its text's UTF-8 bytes and ``FINDING_OVERHEAD_BYTES``."""
    return sum(
        (F.coalesce(F.octet_length(F.col(name)), F.lit(0)) for name in FINDING_TEXT),
        F.lit(FINDING_OVERHEAD_BYTES),
    )


def report_partitions(size: int) -> int:
    """Partitions of the report's order for ``size`` bytes of findings (``_finding_bytes``):
    one per ``REPORT_PARTITION_BYTES``, at least one."""
    return max(1, math.ceil(size / REPORT_PARTITION_BYTES))


def measure(findings: DataFrame) -> tuple[int, int]:
    """(how many findings, their size in ``_finding_bytes``) in one aggregation."""
    row = findings.select(
        F.count(F.lit(1)).alias("count"), F.sum(_finding_bytes()).alias("bytes")
    ).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    return int(row["count"]), int(row["bytes"] or 0)


def report_view(findings: DataFrame, count: int, size: int) -> FindingsView:
    """``findings`` (``count`` of them, ``size`` bytes: ``measure``) in report order, sorted once
    into partitions of at most about ``REPORT_PARTITION_BYTES`` and kept on disk, read a
    partition at a time by each pass over the view: the memory of the driver, of the executors
    and of their Python workers is bounded by a partition, not by the fleet.

    A global ``orderBy`` would give the session's shuffle partitions (on a local master, one per
    core, which adaptive execution may merge further): a fleet's million findings made two
    partitions of some 300 MB, and the driver's JVM ran out of its 1 GiB heap handing them
    over. A range partitioning by the sort columns with a count of its own keeps its count
    (adaptive execution merges no partitions whose number was asked for); each partition then
    holds a range of keys, sorted within, so reading partitions in order reads the report in
    order."""
    ordered = (
        findings.repartitionByRange(report_partitions(size), *SORT_COLUMNS)
        .sortWithinPartitions(*SORT_COLUMNS)
        .select(*FINDING_FIELDS)
        .persist(StorageLevel.DISK_ONLY)
    )
    ordered.count()  # sorts and stores every partition now: the report only reads them
    return FindingsView(ordered, count, (findings,))


class FindingsView:
    """The findings of a run, in report order (``report_view``), streamed from the executors a
    partition at a time (``_partition_rows``): the driver holds one partition, whatever the
    fleet's size. Each pass reads the stored partitions again.
    ``sources``: the stored frames it was sorted from, kept until ``release``, so that a lost
    partition is sorted again from them rather than audited again."""

    def __init__(self, ordered: DataFrame, count: int, sources: Sequence[DataFrame] = ()) -> None:
        self.frame = ordered
        self.count = count
        self.sources = tuple(sources)

    def __len__(self) -> int:
        return self.count

    def __contains__(self, item: object) -> bool:
        return any(item == finding for finding in self)

    def __iter__(self) -> Iterator[Finding]:
        for row in _partition_rows(self.frame):
            # The frame's columns are FINDING_FIELDS, in Finding's order.
            yield Finding(*row)


def release(result: AuditResult) -> None:
    """Drop the stored findings behind a streamed result."""
    if isinstance(result.findings, FindingsView):
        for frame in (result.findings.frame, *result.findings.sources):
            frame.unpersist()


def summarize(
    findings: DataFrame, files: DataFrame, queues: int, fixed: list[Finding] | None
) -> tuple[dict[str, Any], int, int]:
    """``report.summarize``'s counts, computed by Spark (a few small aggregations), how many
    findings there are in all and their size (``measure``)."""
    by_status = {
        row["status"]: int(row["count"]) for row in files.groupBy("status").count().collect()
    }
    by_rule: Counter[tuple[str, str, str]] = Counter()
    size = 0
    per_rule = findings.groupBy("rule_id", "severity", "suppression", "baseline").agg(
        F.count(F.lit(1)).alias("count"), F.sum(_finding_bytes()).alias("bytes")
    )
    for row in per_rule.collect():
        state = model.finding_state(row["suppression"], row["baseline"])
        by_rule[(row["rule_id"], row["severity"], state)] += int(row["count"])
        size += int(row["bytes"] or 0)
    read_ok = files.filter(F.col("status") == "ok").select(F.col("file").alias("template"))
    with_findings = (
        findings.filter(F.col("rule_id") != rules.UNPARSEABLE_RULE)
        .select("template")
        .distinct()
        .join(read_ok, "template", "left_semi")
        .count()
    )
    not_templates = (
        [
            row["file"]
            for row in files.filter(F.col("status") == templates.NOT_TEMPLATE)
            .select("file")
            .orderBy("file")
            .limit(report.NOT_TEMPLATES_LISTED)
            .collect()
        ]
        if by_status.get(templates.NOT_TEMPLATE)
        else []
    )
    summary = report.summary_of(
        by_status,
        with_findings,
        queues,
        by_rule,
        None if fixed is None else len(fixed),
        not_templates,
    )
    return summary, sum(by_rule.values()), size
