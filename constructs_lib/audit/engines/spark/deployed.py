"""Deployed stacks on Spark (``--deployed``): one task per account and region.

The driver makes a DataFrame of targets, one row per (role, region) pair; each executor reads its
target's stacks with ``inputs.deployed.audit_target`` (its own credentials and endpoint
settings, as for ``s3://`` inputs) and yields the same wide rows as parsed template files, which
``job.py`` unions with them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from constructs_lib.audit.engines.spark.parse import wide_batches
from constructs_lib.audit.engines.spark.schemas import WIDE_SCHEMA, arrow_text
from constructs_lib.audit.inputs.deployed import Target, audit_target
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

TARGET_DDL = "role_arn string, region string"


def _target_batches(
    batches: Iterable[Any], limits: ReadLimits, overrides: Overrides, metrics: Metrics | None
) -> Iterator[Any]:
    """One partition of targets -> the wide rows of their stacks."""
    chosen = [
        Target(role or None, region)
        for batch in batches
        for role, region in zip(
            batch.column("role_arn").to_pylist(), batch.column("region").to_pylist(), strict=True
        )
    ]
    parsed = (p for target in chosen for p in audit_target(target, limits, overrides))
    yield from wide_batches(parsed, metrics)


def parse_targets(
    spark: SparkSession,
    targets: Sequence[Target],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    metrics: Metrics | None = None,
) -> DataFrame:
    """Targets -> the wide rows of their deployed stacks (not yet computed), one task each."""
    import pyarrow as pa

    table = pa.table(
        {
            "role_arn": arrow_text([t.role_arn or "" for t in targets]),
            "region": arrow_text([t.region for t in targets]),
        }
    )
    read = functools.partial(
        _target_batches, limits=limits, overrides=dict(overrides or {}), metrics=metrics
    )
    frame = spark.createDataFrame(table, TARGET_DDL).repartition(max(1, len(targets)))
    return frame.mapInArrow(read, WIDE_SCHEMA)
