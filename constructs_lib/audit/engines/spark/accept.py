"""Acceptance on Spark: the rule levels, a suppressions file and a baseline applied to the
findings on the executors, as ``accept/apply.py``'s ``apply`` does in the local engine.

Each step is a findings -> findings function (``with_levels``, ``suppressed``, ``with_expired``,
``against_baseline``), chained with ``findings.transform(step, ...)``; ``accept`` composes them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from constructs_lib.audit import model
from constructs_lib.audit.accept import apply as acceptance
from constructs_lib.audit.accept import baseline, suppressions
from constructs_lib.audit.engines.spark.schemas import (
    FINDING_FIELDS,
    FINDING_SCHEMA,
    findings_batch,
    findings_frame,
)
from constructs_lib.audit.engines.spark.streaming import SORT_COLUMNS
from constructs_lib.audit.model import Finding


def with_levels(findings: DataFrame, levels: Mapping[str, str]) -> DataFrame:
    """Findings -> the same, each rule's severity set to its level in ``levels`` (rule id ->
    severity), as one column expression."""
    severity = F.col("severity")
    for rule_id, level in sorted(levels.items()):
        severity = F.when(F.col("rule_id") == rule_id, F.lit(level)).otherwise(severity)
    return findings.withColumn("severity", severity).select(*FINDING_FIELDS)


def suppressed(findings: DataFrame, active: list[suppressions.FileSuppression]) -> DataFrame:
    """Findings -> the same, those the suppressions file's ``active`` entries match marked as
    suppressed, finding by finding in a Python pass (``suppressions.external``)."""
    return findings.mapInArrow(functools.partial(_accept_batches, active=active), FINDING_SCHEMA)


def with_expired(findings: DataFrame, expired: list[Finding]) -> DataFrame:
    """Findings -> the same and ``expired``, the QR902s the driver made for expired entries."""
    if not expired:
        return findings
    return findings.unionByName(findings_frame(findings.sparkSession, expired))


def against_baseline(findings: DataFrame, known: DataFrame, partitions: int) -> DataFrame:
    """Findings -> the same with their ``baseline`` state: those of each fingerprint that are
    not suppressed, numbered in report order by a window, are joined with the baseline's entry
    of the same number (``known``: ``_numbered_baseline``), whose values decide "changed"."""
    key = list(baseline.FINGERPRINT_FIELDS)
    counted = F.col("suppression") == ""
    number = F.row_number().over(Window.partitionBy(*key, counted).orderBy(*SORT_COLUMNS))
    values = F.array_join(
        F.regexp_extract_all(F.col("message"), F.lit(baseline.VALUE_PATTERN), F.lit(0)), " "
    )
    was = F.col("_values")
    state = (
        F.when(~counted, F.col("baseline"))
        .when(F.col("_known").isNull(), model.BASELINE_NEW)
        .when(was.isNotNull() & (was != values), model.BASELINE_UPDATED)
        .otherwise(model.BASELINE_UNCHANGED)
    )
    return (
        findings.repartition(partitions, *key)
        .withColumn("_n", number)
        .join(F.broadcast(known), [*key, "_n"], "left")
        .withColumn("baseline", state)
        .select(*FINDING_FIELDS)
    )


def accept(
    spark: SparkSession, findings: DataFrame, accepts: acceptance.Acceptance, partitions: int
) -> DataFrame:
    """``apply`` on the executors, lazily: the rule levels, the file's suppressions
    and the expiry QR902s from the driver, and the comparison with the baseline, as the local
    engine counts them. ``fixed_of`` then lists what the baseline lost."""
    if accepts.levels:
        findings = findings.transform(with_levels, accepts.levels)
    if accepts.suppressions:
        findings = findings.transform(suppressed, accepts.active).transform(
            with_expired, accepts.expired_findings()
        )
    if accepts.baseline is None:
        return findings
    known = _numbered_baseline(spark, accepts.baseline)
    return findings.transform(against_baseline, known, partitions)


def _numbered_baseline(spark: SparkSession, entries: Sequence[baseline.Entry]) -> DataFrame:
    """The baseline's entries as (fingerprint, n, values): the n-th entry of each fingerprint
    in report order (the order they were read in), which the n-th finding is compared with."""
    seen: Counter[baseline.Fingerprint] = Counter()
    rows = []
    for entry in entries:
        key = baseline.fingerprint(entry.finding)
        seen[key] += 1
        rows.append((*key, seen[key], entry.values, True))
    schema = StructType(
        [
            *(StructField(name, StringType(), False) for name in baseline.FINGERPRINT_FIELDS),
            StructField("_n", IntegerType(), False),
            StructField("_values", StringType(), True),
            StructField("_known", BooleanType(), False),
        ]
    )
    return spark.createDataFrame(rows, schema)


def fixed_of(findings: DataFrame, accepts: acceptance.Acceptance) -> list[Finding] | None:
    """The baseline's findings this run no longer reports (suppressed ones are still reported),
    from the accepted findings (cached by then): only the counts of the baseline's own
    fingerprints come back to the driver."""
    if accepts.baseline is None:
        return None
    key = list(baseline.FINGERPRINT_FIELDS)
    spark = findings.sparkSession
    known = F.broadcast(_baseline_frame(spark, accepts).select(*key).distinct())
    found = {
        tuple(row[k] for k in key): int(row["count"])
        for row in findings.groupBy(*key).count().join(known, key, "left_semi").collect()
    }
    return baseline.fixed([e.finding for e in accepts.baseline], found)


def _baseline_frame(spark: SparkSession, accepts: acceptance.Acceptance) -> DataFrame:
    return findings_frame(spark, [e.finding for e in accepts.baseline or ()])


def _accept_batches(
    batches: Iterable[Any], active: list[suppressions.FileSuppression]
) -> Iterator[Any]:
    for batch in batches:
        rows = [Finding(**row) for row in batch.to_pylist()]
        yield findings_batch(list(suppressions.external(rows, active)))
