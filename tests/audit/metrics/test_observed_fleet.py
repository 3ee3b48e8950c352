"""The fleet as deployed and as it behaves (``planted_fleet.py``): stacks in two accounts and
two regions on moto's server, the second account reached through AssumeRole, and a fortnight of
metric stream output in its S3. Nothing is mocked: the stacks are created by moto's
CloudFormation and read back by the audit through its APIs, and the metrics are read from its
S3."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import model
from constructs_lib.audit.engines import AuditInputs
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import deployed
from tests.audit.conftest import EngineAudit
from tests.support.moto_accounts import (
    CALLER,
    EAST,
    WEST,
    Fleet,
    as_account,
    audit_as,
    policy,
    queue_audit,
    session,
    start_server,
    trust,
    without_aws,
)
from tests.support.planted_fleet import (
    BEHAVIOUR_RULES,
    DAYS,
    behaviour,
    expected,
    plant_stacks,
    write_metrics,
)

pytest.importorskip("boto3")

ACCOUNT_B = "111111111111"
ROLE_B = f"arn:aws:iam::{ACCOUNT_B}:role/audit"
EXPECTED = expected(ACCOUNT_B)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, str]]:
    """The server with both accounts' stacks and a fortnight of metrics; stopped at the end."""
    process, port = start_server(tmp_path_factory.mktemp("observed") / "moto.log")
    endpoint = f"http://127.0.0.1:{port}"
    try:
        in_b = session(EAST, as_account(endpoint, ROLE_B)).client("iam", endpoint_url=endpoint)
        in_b.create_role(
            RoleName="audit", AssumeRolePolicyDocument=trust(f"arn:aws:iam::{CALLER}:root")
        )
        in_b.put_role_policy(
            RoleName="audit", PolicyName="audit", PolicyDocument=policy(["cloudformation:*"])
        )
        plant_stacks(endpoint, as_account(endpoint, ROLE_B))
        metrics = write_metrics(endpoint, ACCOUNT_B)
        yield Fleet(endpoint, "observer", "observer"), metrics
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def observed(fleet: tuple[Fleet, str], monkeypatch: pytest.MonkeyPatch) -> str:
    server, metrics = fleet
    audit_as(server, monkeypatch)
    return metrics


TARGETS = deployed.targets([EAST, WEST], [ROLE_B])


def _behaviour(result: model.AuditResult) -> set[tuple[str, str]]:
    return behaviour(f.as_dict() for f in result.findings)


def _local(metrics_url: str) -> model.AuditResult:
    from constructs_lib.audit.metrics.aggregate import read_and_aggregate

    return engine.audit_files(
        [], deployed=TARGETS, metrics=observed_metrics(read_and_aggregate(metrics_url, DAYS))
    )


def observed_metrics(read: Any) -> Any:
    from constructs_lib.audit.metrics import observations

    return observations.Metrics.of(read.series, read.coverage)


def test_planted_behaviours_are_found_and_nothing_else(observed: str) -> None:
    result = _local(observed)
    assert _behaviour(result) == EXPECTED
    by_rule = {f.rule_id: f for f in result.findings if f.rule_id in BEHAVIOUR_RULES}
    # The observed figures are in the messages (the planted values, as written above).
    assert "58000 ms" in by_rule["QR030"].message and "60 s visibility" in by_rule["QR030"].message
    assert by_rule["QR030"].stack == "slow" and by_rule["QR030"].account == CALLER
    assert "700000 s" in by_rule["QR031"].message and by_rule["QR031"].region == WEST
    assert "3 messages" in by_rule["QR032"].message
    assert "12 times" in by_rule["QR033"].message
    assert "14 days" in by_rule["QR034"].message


def test_a_healthy_pipeline_gets_nothing(observed: str) -> None:
    result = _local(observed)
    assert [f for f in result.findings if f.stack == "steady"] == []


def test_observed_dead_letters_replace_the_static_alarm_finding(observed: str) -> None:
    result = _local(observed)
    unwatched = {f.rule_id for f in result.findings if f.stack == "unwatched"}
    assert "QR032" in unwatched and "QR010" not in unwatched
    without_metrics = engine.audit_files([], deployed=TARGETS)
    assert "QR010" in {f.rule_id for f in without_metrics.findings if f.stack == "unwatched"}
    assert not _behaviour(without_metrics)  # missing data is never a verdict


def test_the_summary_counts_queues_with_and_without_metrics(observed: str) -> None:
    summary = _local(observed).metrics
    assert summary is not None
    # 6 stacks, 12 queues: every queue but "idle" and its DLQ has series of its own.
    assert (summary["queues_with_metrics"], summary["queues_without_metrics"]) == (10, 2)
    assert summary["covered"] == sorted(
        f"{a}/{r}"
        for a, r in {(CALLER, EAST), (CALLER, WEST), (ACCOUNT_B, WEST), (ACCOUNT_B, EAST)}
    )


def test_spark_finds_what_the_local_engine_finds(
    observed: str, spark: Any, spark_joining: EngineAudit, fleet: tuple[Fleet, str]
) -> None:
    from constructs_lib.audit.engines.spark import metrics as spark_metrics

    environment = spark.sparkContext.environment
    saved = dict(environment)
    environment.update(fleet[0].env)
    try:
        read = spark_metrics.read_and_aggregate(spark, observed, DAYS)
        on_spark = spark_joining(AuditInputs([], TARGETS, observed_metrics(read)))
    finally:
        environment.clear()
        environment.update(saved)
    local = _local(observed)
    assert sorted(on_spark.findings, key=model.Finding.sort_key) == sorted(
        local.findings, key=model.Finding.sort_key
    )
    assert on_spark.metrics == local.metrics


def test_the_command_line_reads_stacks_and_metrics(
    fleet: tuple[Fleet, str], tmp_path: Path
) -> None:
    server, metrics = fleet
    argv = ["--deployed", "--region", EAST, "--region", WEST, "--role-arn", ROLE_B]
    argv += ["--metrics", metrics, "--engine", "local", "--format", "json", "--quiet"]
    completed = queue_audit(argv, {**without_aws(dict(os.environ)), **server.env}, tmp_path)
    assert completed.returncode == 1, completed.stderr[-3000:]
    report = json.loads(completed.stdout)
    assert behaviour(report["findings"]) == EXPECTED
    assert report["summary"]["metrics"]["queues_with_metrics"] == 10


def test_a_metrics_bucket_that_cannot_be_listed_is_a_usage_error(
    fleet: tuple[Fleet, str], tmp_path: Path
) -> None:
    argv = ["--deployed", "--metrics", "s3://no-such-metrics-bucket/stream/", "--engine", "local"]
    completed = queue_audit(argv, {**without_aws(dict(os.environ)), **fleet[0].env}, tmp_path)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "no-such-metrics-bucket" in completed.stderr and "NoSuchBucket" in completed.stderr
