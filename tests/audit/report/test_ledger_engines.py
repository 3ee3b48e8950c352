"""Every report of a deployed fleet with a ledger is the same, byte for byte, on the local engine
and on Spark (joining on the driver and on the executors, findings gathered and streamed). The
fleet is the planted one of ``tests/audit/metrics/ledger_fleet.py``: stacks in moto's
CloudFormation, its metric stream in moto's S3, nothing mocked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from constructs_lib.audit import report
from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.report import ledger
from tests.audit.conftest import EngineAudit
from tests.audit.metrics.test_ledger_fleet import (
    TARGETS,
    WINDOW_DAYS,
    _local,
    _metrics,
    fleet,
    observed,
)
from tests.support.moto_accounts import Fleet

__all__ = ["fleet", "observed"]  # the planted fleet's fixtures, shared with its own tests


@pytest.mark.spark
@pytest.mark.parametrize("gather", [True, False], ids=["gathered", "streamed"])
def test_every_report_of_a_fleet_with_a_ledger_is_the_same_on_both_engines(
    observed: str,
    spark: Any,
    spark_joining: EngineAudit,
    fleet: tuple[Fleet, str],
    gather: bool,
) -> None:
    from constructs_lib.audit.engines.spark import metrics as spark_metrics
    from constructs_lib.audit.engines.spark import streaming

    local = _local(observed)
    # GIVEN a fleet some of whose queues lost messages, with findings on them
    ranks = ledger.loss_ranks(local.ledgers)
    assert ranks and any(ledger.queue_uid(f) in ranks for f in local.findings)
    environment = spark.sparkContext.environment
    saved = dict(environment)
    environment.update(fleet[0].env)
    try:
        read = spark_metrics.read_and_aggregate(spark, observed, WINDOW_DAYS)
        on_spark = spark_joining(
            AuditInputs([], TARGETS, _metrics(read)), AuditOptions(gather=gather)
        )
        # WHEN each format is written from either THEN the bytes are the same
        for fmt in report.FORMATS:
            assert "".join(report.stream(fmt, on_spark)) == "".join(report.stream(fmt, local)), fmt
    finally:
        streaming.release(on_spark)
        environment.clear()
        environment.update(saved)
    # and the JSON report leads with the findings of the queue that lost most and has findings
    findings = json.loads(report.render_json(local))["findings"]
    ranked = [f for f in local.findings if ledger.queue_uid(f) in ranks]
    top = min(ranks[ledger.queue_uid(f)] for f in ranked)
    first = next(row for row in local.ledgers if ranks.get(row.uid) == top)
    assert (findings[0]["template"], findings[0]["queue"]) == (first.file, first.logical_id)
