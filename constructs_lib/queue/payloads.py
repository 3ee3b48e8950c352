"""Large messages through S3, the construct side: ``LargePayloads`` (what
``ResilientQueue(large_payloads=...)`` takes) and ``PayloadStore``, the bucket a queue's payloads
live in and the grants and environment of the functions that write and read them.

A payload of the queue ``<name>`` lives under the key prefix ``<name>/`` (the source queue's
physical name, deterministic in this construct): one bucket may hold the payloads of many
queues, and each principal is granted exactly its queue's prefix. The run-time side, which
resolves pointers in a handler, is ``constructs_lib.large_payloads``; the environment variables
named there tell it where the payloads are.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Acknowledgment, Annotations, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from constructs_lib import policy
from constructs_lib.policy import payloads as payload_policy
from constructs_lib.queue.keys import customer_key

BUCKET_ID = "PayloadBucket"
"""The construct id of the bucket a ResilientQueue creates, a child of the construct."""
INCOMPLETE_UPLOAD_DAYS = 1
"""An upload a producer abandoned is removed after a day (it was never a payload anyone
points to)."""


@dataclass(frozen=True)
class LargePayloads:
    """Message bodies stored in S3, with a pointer in the message, as AWS's extended clients
    (``amazon-sqs-extended-client`` for Python, ``amazon-sqs-java-extended-client-lib``) send
    them.

    The payloads of the queue live under the prefix ``<queue name>/`` of the bucket. A bucket
    the construct creates is encrypted with the queue's KMS key (SSE-KMS, bucket key on) when it
    has a customer key, else with S3-managed keys; it refuses requests without TLS, blocks all
    public access, is retained when its stack is deleted (unless ``removal_policy`` says
    otherwise) and expires payloads once no message can point to them any more
    (``policy.payloads``). Producers given ``queue.grant_send_messages`` may write under the
    prefix; consumers, dead-letter consumers and ``grant_redrive`` may read there (consumers
    delete too, with ``consumers_delete``).

    :param bucket: the bucket to keep payloads in (``s3.IBucket``); the construct cannot change
        its lifecycle, so it warns with the number of days the bucket must keep them. Default:
        one created for the queue.
    :param consumers_delete: consumers delete a payload once its message is processed (S3
        DeleteObject, granted to consumers only). Default: on.
    :param margin_days: days a payload is kept beyond the longest life of its message, 0-365.
        Default: 1.
    :param layer: add the Lambda layer holding ``constructs_lib.large_payloads`` (and
        ``constructs_lib.backoff``) to each Python consumer defined in the app; off for
        functions that bundle the package themselves. Default: on.
    """

    bucket: s3.IBucket | None = None
    consumers_delete: bool = True
    margin_days: int = payload_policy.PAYLOAD_MARGIN_DAYS
    layer: bool = True


@dataclass
class PayloadStore:
    """Where one ResilientQueue's payloads live: the bucket, the prefix, the key that encrypts
    them (None: S3-managed, or a bucket you gave without one), and what the call asked for."""

    bucket: s3.IBucket
    prefix: str
    key: kms.IKey | None
    settings: LargePayloads
    expiration_days: int
    created: bool


def create_store(
    scope: Construct,
    settings: LargePayloads,
    queue_name: str,
    fifo: bool,
    retentions: tuple[int | None, int | None],
    queue_key: kms.IKey | None,
    removal_policy: RemovalPolicy | None,
) -> PayloadStore:
    """The store of the queue ``queue_name``: the bucket given (with a warning about its
    lifecycle) or one created as a child ``PayloadBucket`` of ``scope``. ``retentions`` are the
    source's and the DLQ's in seconds (None: unknown, counted as SQS's maximum)."""
    source_retention, dead_letter_retention = retentions
    days = payload_policy.payload_expiration_days(
        fifo, source_retention, dead_letter_retention, settings.margin_days
    )
    prefix = f"{queue_name}/"
    if settings.bucket is not None:
        _warn_lifecycle(scope, settings.bucket, prefix, days)
        return PayloadStore(
            settings.bucket, prefix, settings.bucket.encryption_key, settings, days, created=False
        )
    key = customer_key(queue_key, Stack.of(scope))
    bucket = s3.Bucket(
        scope,
        BUCKET_ID,
        encryption=s3.BucketEncryption.KMS if key is not None else s3.BucketEncryption.S3_MANAGED,
        encryption_key=key,
        # One data key per bucket for a while instead of one KMS request per object: the
        # bucket key cuts the KMS requests (and their cost) of every PutObject and GetObject.
        # S3 user guide, bucket-key.
        bucket_key_enabled=True if key is not None else None,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        lifecycle_rules=[
            s3.LifecycleRule(
                id=f"expire-{policy.strip_fifo_suffix(queue_name)}-payloads",
                prefix=prefix,
                expiration=Duration.days(days),
                abort_incomplete_multipart_upload_after=Duration.days(INCOMPLETE_UPLOAD_DAYS),
            )
        ],
        # A platform team keeps data by default: the payloads of messages still in the DLQ
        # are the data. No auto-delete: emptying a bucket on stack deletion would need a
        # custom resource function, and with RETAIN nothing is deleted anyway.
        removal_policy=removal_policy or RemovalPolicy.RETAIN,
    )
    _acknowledge(bucket)
    return PayloadStore(bucket, prefix, key, settings, days, created=True)


# cdk-nag's rules this bucket does not follow, each for a reason of its job; a team whose
# standard requires them gives its own bucket (LargePayloads(bucket=...)).
_ACKNOWLEDGED = {
    "AwsSolutions::AwsSolutions-S1": "Server access logs need a second bucket per queue; the "
    "payloads are message bodies read only by the queue's own grantees. Give a bucket of your "
    "own with logging where access logs are required.",
    "NIST.800.53.R5::NIST.800.53.R5-S3BucketLoggingEnabled": "Server access logs need a second "
    "bucket per queue; give a bucket of your own with logging where they are required.",
    "HIPAA.Security::HIPAA.Security-S3BucketLoggingEnabled": "Server access logs need a second "
    "bucket per queue; give a bucket of your own with logging where they are required.",
    "NIST.800.53.R5::NIST.800.53.R5-S3BucketVersioningEnabled": "Each payload is written once "
    "under a new key and expires with its message; versions would keep expired payloads past "
    "the lifecycle that bounds them.",
    "HIPAA.Security::HIPAA.Security-S3BucketVersioningEnabled": "Each payload is written once "
    "under a new key and expires with its message; versions would keep expired payloads past "
    "the lifecycle that bounds them.",
    "NIST.800.53.R5::NIST.800.53.R5-S3BucketReplicationEnabled": "A payload lives only as long "
    "as its message, in the queue's region like the queue itself; replicate a bucket of your "
    "own where required.",
    "HIPAA.Security::HIPAA.Security-S3BucketReplicationEnabled": "A payload lives only as long "
    "as its message, in the queue's region like the queue itself; replicate a bucket of your "
    "own where required.",
}


def _acknowledge(bucket: s3.Bucket) -> None:
    Validations.of(bucket).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule, reason in _ACKNOWLEDGED.items())
    )


def _warn_lifecycle(scope: Construct, bucket: s3.IBucket, prefix: str, days: int) -> None:
    Annotations.of(scope).add_warning_v2(
        "constructs_lib:payloadLifecycle",
        f"large_payloads: the bucket you gave ({bucket.node.path}) keeps this queue's payloads "
        f"under {prefix!r}, and this construct cannot change its lifecycle. Keep every object "
        f"under that prefix at least {days} days (the longest a message of this queue can "
        "live, plus the margin): a payload that expires before its message leaves a pointer "
        "to nothing, and the message is lost. Without a lifecycle rule the payloads stay "
        "until the consumers delete them.",
    )
