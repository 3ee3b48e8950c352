"""What SNS could not deliver to a ResilientQueue's source queue: a queue of its own, created
with the first topic (``ResilientQueue.add_producer``), and kept apart from the dead-letter
queue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from aws_cdk import Acknowledgment, Duration, Names, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.queue import grants
from constructs_lib.queue.pair import QueuePair

SNS_DELIVERY_FAILURES_ID = "SnsDeliveryFailures"
SNS_DELIVERY_FAILURES_ALARM_ID = "SnsDeliveryFailuresDepthAlarm"


@dataclass(frozen=True)
class SnsDeliveryFailures:
    """The queue that holds what SNS could not deliver to a ResilientQueue's source queue, and
    its depth alarm. Kept apart from the dead-letter queue: SQS cannot move these messages back
    with StartMessageMoveTask (their source is not a queue), and they are not messages the
    consumer failed."""

    queue: sqs.Queue
    depth_alarm: cloudwatch.Alarm


def create_delivery_failures_queue(
    scope: Construct, pair: QueuePair, retention: int | None, max_message_size: int | None
) -> sqs.Queue:
    """The queue, in ``scope``: the source's type, key, message size and removal policy, the
    dead-letter queue's retention (``retention``), TLS enforced, a deterministic name."""
    failures = grants.KeyViaSqsQueue(
        scope,
        SNS_DELIVERY_FAILURES_ID,
        fifo=pair.fifo or None,
        retention_period=Duration.seconds(
            retention if isinstance(retention, int) else limits.RETENTION_MAX
        ),
        max_message_size_bytes=max_message_size,
        encryption=pair.queue.encryption_type,
        encryption_master_key=pair.queue.encryption_master_key,
        enforce_ssl=True,
    )
    cfn = cast(sqs.CfnQueue, failures.node.default_child)
    source_cfn = pair.cfn_queue
    cfn.cfn_options.deletion_policy = source_cfn.cfn_options.deletion_policy
    cfn.cfn_options.update_replace_policy = source_cfn.cfn_options.update_replace_policy
    # A deterministic name, unique by construct path, with room for ".fifo" (SQS CreateQueue
    # QueueName: at most 80 characters including the suffix).
    cfn.queue_name = Names.unique_resource_name(
        failures,
        max_length=limits.QUEUE_NAME_MAX_LENGTH - len(limits.FIFO_SUFFIX),
        allowed_special_characters="-_",
    ) + (limits.FIFO_SUFFIX if pair.fifo else "")
    for rule, reason in SNS_DELIVERY_FAILURES_ACKNOWLEDGMENTS.items():
        Validations.of(failures).acknowledge(Acknowledgment(id=rule, reason=reason))
    return failures


# Why the delivery-failures queue answers two cdk-nag rules as it does.
SNS_DELIVERY_FAILURES_ACKNOWLEDGMENTS = {
    "Serverless::Serverless-SQSRedrivePolicy": "This queue is the dead-letter queue of an SNS "
    "subscription; a dead-letter queue of its own would hide failed deliveries from its depth "
    "alarm.",
    "AwsSolutions::AwsSolutions-SQS3": "This queue is the dead-letter queue of an SNS "
    "subscription (its RedrivePolicy), which the rule does not recognise as a dead-letter use.",
}
