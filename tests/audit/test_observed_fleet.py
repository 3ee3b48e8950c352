"""The fleet as deployed and as it behaves: stacks in two accounts and two regions on moto's
server (the second account reached through AssumeRole), and CloudWatch metric stream output
written by the test to the server's S3 as Firehose writes it (gzip JSON under hourly prefixes),
with planted behaviours:

- ``slow``: the consumer ran 58 s with a 5 s batching window on a 60 s visibility timeout (QR030);
- ``aging``: its dead-letter queue held a message 700,000 s, past half of 14 days (QR031);
- ``unwatched``: its dead-letter queue held 3 messages and no alarm watches it (QR032 in place
  of the static QR010);
- ``throttled``: its consumer was throttled 12 times (QR033);
- ``idle``: no data point at all over 14 days that its account and region's metrics cover
  (QR034);
- ``steady``: a healthy pipeline with ordinary figures, which must get no finding at all.

Nothing is mocked: the stacks are created by moto's CloudFormation, read back by the audit
through its APIs, and the metrics are read from its S3. The expected findings are written out
here from the planted values, not produced by the code under test.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import engine, model
from constructs_lib.audit.inputs import deployed
from tests.audit.conftest import healthy
from tests.audit.moto_accounts import (
    CALLER,
    EAST,
    WEST,
    Fleet,
    as_account,
    create_stack,
    policy,
    session,
    start_server,
    trust,
)

pytest.importorskip("boto3")

ACCOUNT_B = "111111111111"
ROLE_B = f"arn:aws:iam::{ACCOUNT_B}:role/audit"
BUCKET = "metric-stream"
PREFIX = "cloudwatch"
HOUR_MS = 3600 * 1000
DAYS = 14
# The newest data point: the window reaches DAYS back from it.
END_MS = 1_795_000_000_000 - 1_795_000_000_000 % HOUR_MS
BEHAVIOUR_RULES = ("QR030", "QR031", "QR032", "QR033", "QR034")


def _queue_arn(account: str, region: str, name: str) -> str:
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _function_arn(account: str, region: str, name: str) -> str:
    return f"arn:aws:lambda:{region}:{account}:function:{name}"


# (rule, the resource's ARN) the planted behaviours must give, and nothing else of QR030-QR034.
EXPECTED = {
    ("QR030", ""),  # on the event source mapping: it has no ARN of its own
    ("QR031", _queue_arn(ACCOUNT_B, WEST, "aging-dlq")),
    ("QR032", _queue_arn(ACCOUNT_B, EAST, "unwatched-dlq")),
    ("QR033", _function_arn(CALLER, WEST, "throttled-worker")),
    ("QR034", _queue_arn(CALLER, EAST, "idle")),
}


def _consumer(name: str) -> dict[str, Any]:
    """``healthy(name)`` with a named function and the execution role moto requires."""
    template = healthy(name)
    resources = template["Resources"]
    resources["Fn"]["Properties"]["FunctionName"] = f"{name}-worker"
    resources["Fn"]["Properties"]["Role"] = {"Fn::GetAtt": ["Role", "Arn"]}
    assume = {"Effect": "Allow", "Action": "sts:AssumeRole"}
    resources["Role"] = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [{**assume, "Principal": {"Service": "lambda.amazonaws.com"}}],
            }
        },
    }
    return template


def _pipeline(name: str) -> dict[str, Any]:
    """A queue, its DLQ, their alarms and TLS-only policy, without a consumer."""
    template = healthy(name)
    del template["Resources"]["Fn"], template["Resources"]["Esm"]
    return template


def _slow() -> dict[str, Any]:
    template = _consumer("slow")
    resources = template["Resources"]
    resources["Fn"]["Properties"]["Timeout"] = 50
    resources["Esm"]["Properties"]["MaximumBatchingWindowInSeconds"] = 5
    return template


def _unwatched() -> dict[str, Any]:
    template = _pipeline("unwatched")
    del template["Resources"]["DlqDepth"], template["Resources"]["DlqAge"]
    return template


def _stacks(endpoint: str) -> None:
    east, west = session(EAST), session(WEST)
    create_stack(endpoint, east, "slow", _slow())
    create_stack(endpoint, east, "idle", _pipeline("idle"))
    create_stack(endpoint, east, "steady", _consumer("steady"))
    create_stack(endpoint, west, "throttled", _consumer("throttled"))
    in_b = as_account(endpoint, ROLE_B)
    create_stack(endpoint, session(WEST, in_b), "aging", _pipeline("aging"))
    create_stack(endpoint, session(EAST, in_b), "unwatched", _unwatched())


# (account, region, namespace, dimension, name, metric, (value.max, value.sum) in the newest
# hour, (value.max, value.sum) in every other hour)
Series = tuple[str, str, str, str, str, str, tuple[float, float], tuple[float, float]]


def _series() -> list[Series]:
    sqs, fn = ("AWS/SQS", "QueueName"), ("AWS/Lambda", "FunctionName")
    planted: list[Series] = []
    for account, region, queue in (
        (CALLER, EAST, "slow"),
        (CALLER, EAST, "steady"),
        (CALLER, WEST, "throttled"),
        (ACCOUNT_B, WEST, "aging"),
        (ACCOUNT_B, EAST, "unwatched"),
    ):
        for metric in ("NumberOfMessagesSent", "NumberOfMessagesReceived"):
            planted.append((account, region, *sqs, queue, metric, (4, 40), (4, 40)))
        planted.append(
            (account, region, *sqs, queue, "ApproximateAgeOfOldestMessage", (30, 30), (5, 5))
        )
        dlq = f"{queue}-dlq"
        age = 700_000.0 if queue == "aging" else 0.0
        depth = 3.0 if queue in ("unwatched", "aging") else 0.0
        planted.append(
            (account, region, *sqs, dlq, "ApproximateAgeOfOldestMessage", (age, age), (0, 0))
        )
        planted.append(
            (
                account,
                region,
                *sqs,
                dlq,
                "ApproximateNumberOfMessagesVisible",
                (depth, depth),
                (0, 0),
            )
        )
    for account, region, worker, longest, throttles in (
        (CALLER, EAST, "slow-worker", 58_000.0, 0.0),
        (CALLER, EAST, "steady-worker", 2_000.0, 0.0),
        (CALLER, WEST, "throttled-worker", 3_000.0, 12.0),
    ):
        planted.append((account, region, *fn, worker, "Duration", (longest, longest), (900, 900)))
        planted.append((account, region, *fn, worker, "Throttles", (throttles, throttles), (0, 0)))
    return planted


def _records(hour: int, planted: list[Series]) -> Iterator[dict[str, Any]]:
    """One data point per series in the hour ``hour`` hours before END_MS."""
    timestamp = END_MS - hour * HOUR_MS
    for account, region, namespace, dimension, name, metric, newest, other in planted:
        largest, total = newest if hour == 0 else other
        yield {
            "metric_stream_name": "queue-audit",
            "account_id": account,
            "region": region,
            "namespace": namespace,
            "metric_name": metric,
            "dimensions": {dimension: name},
            "timestamp": timestamp,
            "value": {"max": float(largest), "min": 0.0, "sum": float(total), "count": 1.0},
            "unit": "Count",
        }


def _write_metrics(endpoint: str) -> str:
    """Every hour of DAYS days as Firehose writes it: gzip JSON lines under YYYY/MM/DD/HH/."""
    s3 = session(EAST).client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    planted = _series()
    for hour in range(DAYS * 24 + 1):
        stamp = time.gmtime((END_MS - hour * HOUR_MS) / 1000)
        key = f"{PREFIX}/{time.strftime('%Y/%m/%d/%H', stamp)}/queue-audit-1-{hour:04d}.gz"
        body = "".join(json.dumps(r) + "\n" for r in _records(hour, planted))
        s3.put_object(Bucket=BUCKET, Key=key, Body=gzip.compress(body.encode()))
    return f"s3://{BUCKET}/{PREFIX}/"


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
        _stacks(endpoint)
        metrics = _write_metrics(endpoint)
        yield Fleet(endpoint, "observer", "observer"), metrics
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def observed(fleet: tuple[Fleet, str], monkeypatch: pytest.MonkeyPatch) -> str:
    server, metrics = fleet
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in server.env.items():
        monkeypatch.setenv(name, value)
    return metrics


TARGETS = deployed.targets([EAST, WEST], [ROLE_B])


def _behaviour(result: model.AuditResult) -> set[tuple[str, str]]:
    return {(f.rule_id, f.physical) for f in result.findings if f.rule_id in BEHAVIOUR_RULES}


def _local(metrics_url: str) -> model.AuditResult:
    from constructs_lib.audit.metrics.aggregate import read_and_aggregate

    return engine.audit_files(
        [], deployed=TARGETS, metrics=observed_metrics(read_and_aggregate(metrics_url, DAYS))
    )


def observed_metrics(read: Any) -> Any:
    from constructs_lib.audit import observations

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
    observed: str, spark: Any, fleet: tuple[Fleet, str]
) -> None:
    from constructs_lib.audit.spark import job
    from constructs_lib.audit.spark import metrics as spark_metrics

    environment = spark.sparkContext.environment
    saved = dict(environment)
    environment.update(fleet[0].env)
    try:
        read = spark_metrics.read_and_aggregate(spark, observed, DAYS)
        on_spark = job.run(spark, [], deployed=TARGETS, metrics=observed_metrics(read))
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
    import os
    import subprocess
    import sys

    from tests.e2e.emulator import REPO_ROOT

    server, metrics = fleet
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        **server.env,
        "PYTHONPATH": str(REPO_ROOT),
    }
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "constructs_lib.audit",
            "--deployed",
            "--region",
            EAST,
            "--region",
            WEST,
            "--role-arn",
            ROLE_B,
            "--metrics",
            metrics,
            "--engine",
            "local",
            "--format",
            "json",
            "--quiet",
        ],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr.decode(errors="replace")[-3000:]
    report = json.loads(completed.stdout)
    found = {
        (f["rule_id"], f["physical"]) for f in report["findings"] if f["rule_id"] in BEHAVIOUR_RULES
    }
    assert found == EXPECTED
    assert report["summary"]["metrics"]["queues_with_metrics"] == 10
