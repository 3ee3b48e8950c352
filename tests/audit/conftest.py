"""Fixtures for the audit tests: one local SparkSession, each engine's entry point, and template
builders.

Templates are written by hand from the CloudFormation resource reference; expectations come from
the rule catalog and AWS's numbers, never from running the audit.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditEngine, AuditInputs, AuditOptions
from constructs_lib.audit.model import AuditResult

Template = dict[str, Any]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A small, quiet local session shared by every Spark test."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("queue-audit-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        # The session lives for the whole suite, and the driver's heap keeps about 20 MiB per
        # audit run (plans and shuffle statistics Spark retains): 1 GiB ran out after a few
        # hundred runs.
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# Both engines, by their --engine names; the Spark one's tests carry the ``spark`` mark.
ENGINES = ["local", pytest.param("spark", marks=pytest.mark.spark)]


@dataclass(frozen=True)
class EngineAudit:
    """One engine under test: its entry point, ``audit(inputs, options)``, and its --engine name
    (for the tests that run it through the command)."""

    name: str
    audit: AuditEngine

    def __call__(self, inputs: AuditInputs, options: AuditOptions | None = None) -> AuditResult:
        return self.audit(inputs, options or AuditOptions())


def engine_of(name: str, request: pytest.FixtureRequest) -> EngineAudit:
    if name == "local":
        from constructs_lib.audit.engines import local

        return EngineAudit(name, local.audit)
    from constructs_lib.audit.engines.spark.job import SparkEngine

    # The suite's session: the command reuses it too, as it does any program's own session.
    return EngineAudit(name, SparkEngine(request.getfixturevalue("spark")).audit)


@pytest.fixture(scope="session", params=ENGINES)
def engine_audit(request: pytest.FixtureRequest) -> EngineAudit:
    """Each engine in turn: every test (or module fixture) that takes it runs on both."""
    return engine_of(str(request.param), request)


@pytest.fixture(scope="session")
def engine_name(engine_audit: EngineAudit) -> str:
    """Each engine's --engine name in turn, for the tests that run it through the command; on
    Spark the suite's session is running, and the command reuses it."""
    return engine_audit.name


@pytest.fixture(scope="session")
def local_audit(request: pytest.FixtureRequest) -> EngineAudit:
    """The local engine alone: what the Spark engine's findings are held to."""
    return engine_of("local", request)


@pytest.fixture(scope="session")
def spark_audit(request: pytest.FixtureRequest) -> EngineAudit:
    """The Spark engine alone, on the suite's session (``spark``)."""
    return engine_of("spark", request)


# The Spark engine's two ways of joining across templates: the suite's fleets are small, so its
# default joins them on the driver (``evaluate.DRIVER_JOIN_BYTES``); the executors' joins are
# what a large fleet gets.
JOIN_WAYS = {"driver": 2**62, "executors": 0}


@pytest.fixture(scope="module", params=list(JOIN_WAYS))
def spark_joining(request: pytest.FixtureRequest) -> EngineAudit:
    """The Spark engine joining across templates on the driver, then on the executors."""
    from constructs_lib.audit.engines.spark.job import SparkEngine

    engine = SparkEngine(request.getfixturevalue("spark"), JOIN_WAYS[request.param])
    return EngineAudit("spark", engine.audit)


ALARM_TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:queue-alarms"


def _alarm(metric: str, queue_logical_id: str) -> Template:
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmActions": [ALARM_TOPIC_ARN],
            "Namespace": "AWS/SQS",
            "MetricName": metric,
            "Dimensions": [
                {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_logical_id, "QueueName"]}}
            ],
            "Statistic": "Maximum",
            "Period": 60,
            "EvaluationPeriods": 1,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
        },
    }


def healthy(name: str, fifo: bool = False) -> Template:
    """A source queue, its DLQ, a Lambda consumer, alarms and TLS-only policies: no findings.

    Visibility 60 s = 6 x 10 s function timeout + 0 s window; DLQ keeps 14 d, source 4 d;
    maxReceiveCount 5 (5 x 60 s to reach the DLQ, well within 4 d); the DLQ allows only its
    source, named by ARN built from the source's name (no GetAtt, so no circular dependency).
    The consumer reports batch item failures with its event count metrics on; every alarm (in
    flight, DLQ depth, the oldest message's age on both queues) notifies a topic.
    """
    suffix = ".fifo" if fifo else ""
    source = {
        "QueueName": f"{name}{suffix}",
        "VisibilityTimeout": 60,
        "MessageRetentionPeriod": 345600,
        "RedrivePolicy": {
            "deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]},
            "maxReceiveCount": 5,
        },
    }
    dlq = {
        "QueueName": f"{name}-dlq{suffix}",
        "MessageRetentionPeriod": 1209600,
        "RedriveAllowPolicy": {
            "redrivePermission": "byQueue",
            "sourceQueueArns": [
                {
                    "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:"
                    f"{name}{suffix}"
                }
            ],
        },
    }
    if fifo:
        source["FifoQueue"] = True
        dlq["FifoQueue"] = True
    deny_plain_http = {
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Action": "sqs:*",
        "Resource": "*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    return {
        "Resources": {
            "Source": {"Type": "AWS::SQS::Queue", "Properties": source},
            "Dlq": {"Type": "AWS::SQS::Queue", "Properties": dlq},
            "Policy": {
                "Type": "AWS::SQS::QueuePolicy",
                "Properties": {
                    "Queues": [{"Ref": "Source"}, {"Ref": "Dlq"}],
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": [deny_plain_http]},
                },
            },
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    "Timeout": 10,
                    "Role": "arn:aws:iam::123456789012:role/r",
                    "Code": {"ZipFile": "x"},
                },
            },
            "Esm": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "EventSourceArn": {"Fn::GetAtt": ["Source", "Arn"]},
                    "FunctionName": {"Ref": "Fn"},
                    "BatchSize": 10,
                    "FunctionResponseTypes": ["ReportBatchItemFailures"],
                    "MetricsConfig": {"Metrics": ["EventCount"]},
                },
            },
            "InFlight": _alarm("ApproximateNumberOfMessagesNotVisible", "Source"),
            "DlqDepth": _alarm("ApproximateNumberOfMessagesVisible", "Dlq"),
            "SourceAge": _alarm("ApproximateAgeOfOldestMessage", "Source"),
            "DlqAge": _alarm("ApproximateAgeOfOldestMessage", "Dlq"),
        }
    }


def props(template: Template, logical_id: str) -> dict[str, Any]:
    properties: dict[str, Any] = template["Resources"][logical_id]["Properties"]
    return properties


def variant(template: Template) -> Template:
    return copy.deepcopy(template)


def write(folder: Path, name: str, template: Template | str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(template, bytes):
        path.write_bytes(template)
    elif isinstance(template, str):
        path.write_text(template)
    else:
        path.write_text(json.dumps(template, indent=1))
    return path


from tests.support.clusters import connect_server, standalone_cluster, worker_python  # noqa: E402, F401  (fixtures)
from tests.support.s3server import s3_server  # noqa: E402, F401  (fixture)
