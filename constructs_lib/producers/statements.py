"""The policy statements AWS services need to send into a ResilientQueue's source queue (S3's
queue and key statements, the key statement of each producer's service), with the conditions
that bind them to the producer (``aws:SourceArn``, ``aws:SourceAccount``)."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from constructs_lib import limits
from constructs_lib.queue.pair import QueuePair

EVENTS_PRINCIPAL = "events.amazonaws.com"
SERVICE_PRINCIPALS = {
    "topic": "sns.amazonaws.com",
    "rule": EVENTS_PRINCIPAL,
    "bucket": "s3.amazonaws.com",
}
"""The service principal of each kind of producer."""


def producer_key_statement(
    kind: str, source: Any, scope: Construct, pair: QueuePair
) -> iam.PolicyStatement:
    """The key policy statement a producer's service needs, with the conditions this module (or
    CDK, for SNS) writes."""
    if kind == "bucket":
        return bucket_statements(scope, pair, source)[1]
    if kind == "rule":
        conditions: dict[str, dict[str, Any]] = {
            "StringEquals": {limits.SOURCE_ACCOUNT_KEY: source.env.account}
        }
    else:
        conditions = {"ArnEquals": {limits.SOURCE_ARN_KEY: source.topic_arn}}
    return iam.PolicyStatement(
        principals=[iam.ServicePrincipal(SERVICE_PRINCIPALS[kind])],
        actions=list(limits.KMS_SERVICE_PRODUCER_ACTIONS),
        resources=["*"],
        conditions=conditions,
    )


def _bucket_conditions(bucket: s3.IBucket) -> dict[str, dict[str, Any]]:
    return {
        "ArnLike": {limits.SOURCE_ARN_KEY: bucket.bucket_arn},
        "StringEquals": {limits.SOURCE_ACCOUNT_KEY: bucket.env.account},
    }


def bucket_statements(
    scope: Construct, pair: QueuePair, bucket: s3.IBucket
) -> tuple[iam.PolicyStatement, iam.PolicyStatement]:
    """The queue policy and key policy statements S3 needs to notify the queue of ``bucket``."""
    principal = iam.ServicePrincipal(SERVICE_PRINCIPALS["bucket"])
    conditions = _bucket_conditions(bucket)
    queue_statement = iam.PolicyStatement(
        principals=[principal],
        actions=["sqs:SendMessage"],
        resources=[pair.queue.queue_arn],
        conditions=conditions,
    )
    key_statement = iam.PolicyStatement(
        principals=[principal],
        actions=list(limits.KMS_SERVICE_PRODUCER_ACTIONS),
        # In a key policy "*" is the key itself.
        resources=["*"],
        conditions=conditions,
    )
    return queue_statement, key_statement
