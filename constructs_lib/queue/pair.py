"""The two queues of a ResilientQueue: the source queue and its dead-letter queue of the same
type, both encrypted and refusing requests without TLS, with the redrive policy from source to
DLQ and the redrive-allow policy on the DLQ that admits only this source."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, ArnFormat, Duration, Names, RemovalPolicy, Stack, Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits, policy
from constructs_lib.queue import grants

if TYPE_CHECKING:
    from constructs_lib.params.settings import QueueSettings
    from constructs_lib.queue.payloads import PayloadStore

DEFAULT_DEAD_LETTER_RETENTION = Duration.seconds(limits.RETENTION_MAX)


@dataclass
class QueuePair:
    """The source queue, its dead-letter queue (created, or the one given) and the source's
    physical name."""

    queue: sqs.Queue
    dead_letter_queue: sqs.IQueue
    queue_name: str
    fifo: bool
    dead_letter_queue_given: bool
    fair: bool = False
    """A fair queue: its producers set ``MessageGroupId`` (nothing in the queue says so)."""
    payloads: PayloadStore | None = None
    """Where the source's payloads live (``large_payloads``), or None."""

    @property
    def dead_letter_name(self) -> str:
        """The physical name of the DLQ this construct creates."""
        return policy.dead_letter_queue_name(self.queue_name, self.fifo)

    @functools.cached_property
    def cfn_queue(self) -> sqs.CfnQueue:
        cfn = self.queue.node.default_child
        assert isinstance(cfn, sqs.CfnQueue)
        return cfn


def physical_name(scope: Construct, queue_name: str | None, fifo: bool) -> str:
    """The given base name, or one generated from the path, with room for the suffixes."""
    base_name = (
        policy.strip_fifo_suffix(queue_name)
        if queue_name is not None
        else Names.unique_resource_name(
            scope,
            max_length=limits.QUEUE_NAME_MAX_LENGTH
            - len(policy.DEAD_LETTER_SUFFIX)
            - len(limits.FIFO_SUFFIX),
            allowed_special_characters="-_",
        )
    )
    return f"{base_name}{limits.FIFO_SUFFIX if fifo else ''}"


def create_queue_pair(
    scope: Construct,
    settings: QueueSettings,
    queue_name: str,
) -> QueuePair:
    """The DLQ (unless one is given), then the source, as children ``DeadLetterQueue`` and
    ``Queue`` of ``scope``.

    When the queues being adopted (``existing``) have names CloudFormation generated, neither
    queue gets a ``QueueName`` (CloudFormation generates them again); the DLQ's redrive-allow
    policy then names the source by its deployed name, or is left out without it."""
    existing = settings.existing
    names_generated = existing is not None and existing.names_generated
    deployed_source_name = existing.deployed_queue_name if existing is not None else None
    encryption = (
        sqs.QueueEncryption.KMS if settings.encryption_key else sqs.QueueEncryption.SQS_MANAGED
    )
    dead_letter = settings.dead_letter_queue or _create_dead_letter_queue(
        scope,
        None if names_generated else queue_name,
        deployed_source_name if names_generated else queue_name,
        settings.fifo,
        settings.dead_letter_retention_period or DEFAULT_DEAD_LETTER_RETENTION,
        encryption,
        settings.encryption_key,
        settings.removal_policy,
        settings.max_message_size,
    )
    # Grants on the key are bound to SQS (kms:ViaService); constructs_lib.queue.grants.
    queue = grants.KeyViaSqsQueue(
        scope,
        "Queue",
        queue_name=None if names_generated else queue_name,
        fifo=settings.fifo or None,
        retention_period=settings.retention_period,
        visibility_timeout=settings.visibility_timeout,
        max_message_size_bytes=settings.max_message_size,
        encryption=encryption,
        encryption_master_key=settings.encryption_key,
        enforce_ssl=True,
        dead_letter_queue=sqs.DeadLetterQueue(
            queue=dead_letter, max_receive_count=settings.max_receive_count
        ),
        content_based_deduplication=settings.content_based_deduplication,
        deduplication_scope=settings.deduplication_scope,
        fifo_throughput_limit=settings.fifo_throughput_limit,
        removal_policy=settings.removal_policy,
    )
    return QueuePair(
        queue,
        dead_letter,
        queue_name,
        settings.fifo,
        settings.dead_letter_queue is not None,
        settings.fair,
    )


def _create_dead_letter_queue(
    scope: Construct,
    queue_name: str | None,
    source_name: str | None,
    fifo: bool,
    retention_period: Duration,
    encryption: sqs.QueueEncryption,
    encryption_key: kms.IKey | None,
    removal_policy: RemovalPolicy | None,
    max_message_size: int | None,
) -> sqs.Queue:
    dead_letter_queue = grants.KeyViaSqsQueue(
        scope,
        "DeadLetterQueue",
        queue_name=policy.dead_letter_queue_name(queue_name, fifo) if queue_name else None,
        fifo=fifo or None,
        retention_period=retention_period,
        # The source's size: a message that fits the source must fit the DLQ.
        max_message_size_bytes=max_message_size,
        encryption=encryption,
        encryption_master_key=encryption_key,
        enforce_ssl=True,
        # Without the source's name (a generated one not given) no policy: SQS then admits any
        # source, the adopting ResilientQueue warns (constructs_lib.adoption).
        redrive_allow_policy=sqs.RedriveAllowPolicy(
            redrive_permission=sqs.RedrivePermission.BY_QUEUE,
            source_queues=[
                sqs.Queue.from_queue_arn(scope, "SourceQueueArn", _source_arn(scope, source_name))
            ],
        )
        if source_name is not None
        else None,
        removal_policy=removal_policy,
    )
    # cdk-nag's Serverless pack asks every queue for a redrive policy; a DLQ's own
    # redrive would move dead letters on, out of sight of this construct's alarms.
    Validations.of(dead_letter_queue).acknowledge(
        Acknowledgment(
            id="Serverless::Serverless-SQSRedrivePolicy",
            reason="This queue is a dead-letter queue; a DLQ of its own would hide "
            "failed messages from the DLQ alarms.",
        )
    )
    return dead_letter_queue


def _source_arn(scope: Construct, queue_name: str) -> str:
    # Formatted from the physical name, not Fn::GetAtt: the DLQ's redrive-allow policy would
    # otherwise refer to the source, whose redrive policy refers to the DLQ (a cycle).
    return Stack.of(scope).format_arn(
        service="sqs", resource=queue_name, arn_format=ArnFormat.NO_RESOURCE_NAME
    )
