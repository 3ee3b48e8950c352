"""A fleet with planted behaviours, for the ``--deployed --metrics`` tests: six stacks in two
regions (two of them in a second account where the server has one), and a fortnight of
CloudWatch metric stream output in the server's S3, written as Firehose writes it (gzip JSON
lines under hourly prefixes):

- ``slow``: the consumer ran 58 s with a 5 s batching window on a 60 s visibility timeout (QR030);
- ``aging``: its dead-letter queue held a message 700,000 s, past half of 14 days (QR031);
- ``unwatched``: its dead-letter queue held 3 messages and no alarm watches it (QR032 in place
  of the static QR010);
- ``throttled``: its consumer was throttled 12 times (QR033);
- ``idle``: no data point at all over the 14 days its account and region's metrics cover
  (QR034);
- ``steady``: a healthy pipeline with ordinary figures, which must get no finding at all.

The expected findings are written out here from the planted values, not produced by the code
under test.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from tests.audit.conftest import healthy
from tests.support.moto_accounts import CALLER, EAST, WEST, create_stack, session

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


def behaviour(findings: Iterable[Any]) -> set[tuple[str, str]]:
    """(rule, ARN) of the findings of QR030-QR034, a mapping's UUID as ``*``."""
    return {
        (f["rule_id"], re.sub(r"(:event-source-mapping:).*", r"\1*", f["physical"]))
        for f in findings
        if f["rule_id"] in BEHAVIOUR_RULES
    }


def expected(other: str) -> set[tuple[str, str]]:
    """(rule, the resource's ARN) the planted behaviours must give, and nothing else of
    QR030-QR034; ``other`` is the account of the "aging" and "unwatched" stacks."""
    return {
        # on the event source mapping, whose ARN ends in the UUID Lambda gives it
        ("QR030", f"arn:aws:lambda:{EAST}:{CALLER}:event-source-mapping:*"),
        ("QR031", _queue_arn(other, WEST, "aging-dlq")),
        ("QR032", _queue_arn(other, EAST, "unwatched-dlq")),
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


def plant_stacks(endpoint: str, other: dict[str, str] | None = None) -> None:
    """The six stacks; "aging" and "unwatched" with the ``other`` account's credentials (the
    caller's when None)."""
    east, west = session(EAST), session(WEST)
    create_stack(endpoint, east, "slow", _slow())
    create_stack(endpoint, east, "idle", _pipeline("idle"))
    create_stack(endpoint, east, "steady", _consumer("steady"))
    create_stack(endpoint, west, "throttled", _consumer("throttled"))
    create_stack(endpoint, session(WEST, other), "aging", _pipeline("aging"))
    create_stack(endpoint, session(EAST, other), "unwatched", _unwatched())


# (account, region, namespace, dimension, name, metric, (value.max, value.sum) in the newest
# hour, (value.max, value.sum) in every other hour)
Series = tuple[str, str, str, str, str, str, tuple[float, float], tuple[float, float]]


def _series(other: str) -> list[Series]:
    sqs, fn = ("AWS/SQS", "QueueName"), ("AWS/Lambda", "FunctionName")
    planted: list[Series] = []
    for account, region, queue in (
        (CALLER, EAST, "slow"),
        (CALLER, EAST, "steady"),
        (CALLER, WEST, "throttled"),
        (other, WEST, "aging"),
        (other, EAST, "unwatched"),
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


def write_metrics(endpoint: str, other: str) -> str:
    """Every hour of DAYS days as Firehose writes it: gzip JSON lines under YYYY/MM/DD/HH/, in
    the caller's bucket; the URL to give ``--metrics``."""
    s3 = session(EAST).client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    planted = _series(other)
    for hour in range(DAYS * 24 + 1):
        stamp = time.gmtime((END_MS - hour * HOUR_MS) / 1000)
        key = f"{PREFIX}/{time.strftime('%Y/%m/%d/%H', stamp)}/queue-audit-1-{hour:04d}.gz"
        body = "".join(json.dumps(r) + "\n" for r in _records(hour, planted))
        s3.put_object(Bucket=BUCKET, Key=key, Body=gzip.compress(body.encode()))
    return f"s3://{BUCKET}/{PREFIX}/"
