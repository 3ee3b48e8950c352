"""How the AWS services that produce to a ResilientQueue's source queue (an SNS topic, an
EventBridge rule, an S3 bucket) are wired to it.

``ResilientQueue.add_producer`` checks its arguments' kinds, then the rules of the call
(``constructs_lib.producers.problems``); the wiring is here.

Each producer goes through CDK's own integration (``aws_sns_subscriptions.SqsSubscription``,
``aws_events_targets.SqsQueue``, ``aws_s3_notifications.SqsDestination``), which writes the
subscription, target or notification and, mostly, the permissions. What aws-cdk-lib 2.275 writes
was read from its synthesized templates and source; this module adds only what is missing, and
binds the cases where CDK's permissions are too wide itself (docs/kms.md has the table):

- SNS: queue policy ``sqs:SendMessage`` with ``aws:SourceArn`` = the topic. With a customer key,
  a key policy statement for ``kms:Decrypt`` and ``kms:GenerateDataKey``, scoped to the topic
  only with the feature flag ``@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption``.
  Nothing added to the key; a warning when the flag is off. What SNS cannot deliver goes to a
  queue of its own (``sns_delivery_failures``), not the source's DLQ: StartMessageMoveTask
  cannot move it back (its source is not a queue) and the consumer did not fail it.
- EventBridge, SSE-SQS: queue policy with ``aws:SourceArn`` = the rule. Nothing added.
- EventBridge, SSE-KMS: CDK drops ``aws:SourceArn`` from both policies (the key policy would refer
  to the rule, which refers to the queue, which refers to the key: a cycle, aws-cdk #11158), so
  any account's rules may send (aws-cdk #22740), or, with the flag
  ``@aws-cdk/aws-events:eventsTargetQueueSameAccount``, any rule of the account. Bound here: the
  queue policy to the rule, the key policy to the rule's account (``aws:SourceAccount``). The
  queue's ARN is known without a reference (a deterministic name), so the key statement could
  also require the encryption context ``kms:EncryptionContext:aws:sqs:arn``; it does not, because
  no AWS document found states that SQS sends that context (only third-party code shows it),
  and a wrong condition would drop every event silently (docs/kms.md).
- S3, SSE-SQS: SqsDestination's queue policy with ``aws:SourceArn`` = the bucket. Nothing added.
- S3, SSE-KMS: SqsDestination would write a key statement without any condition (any bucket of
  any account) and grant ``kms:Encrypt`` and ``kms:ReEncrypt*`` beside the scoped one. Written
  here instead: ``sqs:SendMessage`` on the queue and ``kms:GenerateDataKey``, ``kms:Decrypt`` on
  the key, both with ``aws:SourceArn`` = the bucket and ``aws:SourceAccount`` = its account (a
  bucket ARN names no account).

Statements that cannot be attached (an imported key's or queue's policy) are warnings that hold
the statement as JSON (``constructs_lib.queue.grants``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3_notifications
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk.interfaces import aws_events as events_refs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.producers.problems import source_kind
from constructs_lib.producers.sns_delivery_failures import SnsDeliveryFailures
from constructs_lib.producers.statements import EVENTS_PRINCIPAL, bucket_statements
from constructs_lib.queue.pair import QueuePair

if TYPE_CHECKING:
    from constructs_lib.params.settings import ProducerCall


def wire_producer(
    scope: Construct,
    pair: QueuePair,
    delivery_failures: Callable[[], SnsDeliveryFailures],
    call: ProducerCall,
) -> sns.Subscription | events.IRuleTarget | None:
    """Wire ``call.source`` to the source queue (call after ``producer_problems`` found no
    error)."""
    source = call.source
    kind = source_kind(source)
    if kind == "topic":
        topic = cast(sns.ITopic, source)
        # Everything SNS needs comes from SqsSubscription (see the module docstring). A message
        # SNS cannot deliver (a broken queue or key policy) goes, once SNS's retries end, to a
        # queue of its own rather than being dropped, and its alarm fires. Not the source's DLQ:
        # StartMessageMoveTask cannot move such a message back (its source is not a queue; SQS
        # API StartMessageMoveTask), and it is not a message the consumer failed. Subscription
        # writes the failures queue's statement (sqs:SendMessage for the topic, aws:SourceArn).
        failures = delivery_failures()
        return topic.add_subscription(
            subscriptions.SqsSubscription(
                pair.queue,
                raw_message_delivery=call.raw_message_delivery,
                dead_letter_queue=failures.queue,
            )
        )
    if kind == "rule":
        assert isinstance(source, events.Rule)
        return _add_rule_target(scope, pair, source, call.message_group_id)
    bucket = cast(s3.IBucket, source)
    key = pair.queue.encryption_master_key
    destination: s3.IBucketNotificationDestination
    if key is None:
        # SSE-SQS: SqsDestination's queue policy is scoped to the bucket; no key statement.
        destination = s3_notifications.SqsDestination(pair.queue)
    else:
        # SSE-KMS: SqsDestination would also write an unconditioned key statement for
        # s3.amazonaws.com (any bucket of any account) and grant kms:Encrypt and kms:ReEncrypt*
        # beside it. Written here instead: SendMessage, GenerateDataKey and Decrypt only, each
        # bound to this bucket and its account (a bucket ARN names no account).
        _allow_bucket(scope, pair, bucket, key)
        destination = _EncryptedQueueDestination(pair.queue)
    for event in call.s3_events:
        bucket.add_event_notification(event, destination, *call.s3_filters)
    return None


def _allow_bucket(scope: Construct, pair: QueuePair, bucket: s3.IBucket, key: kms.IKey) -> None:
    queue_statement, key_statement = bucket_statements(scope, pair, bucket)
    pair.queue.add_to_resource_policy(queue_statement)
    # An imported key: nothing written; producer_problems warned with the statement.
    key.add_to_resource_policy(key_statement, True)


@jsii.implements(s3.IBucketNotificationDestination)
class _EncryptedQueueDestination:
    """An SSE-KMS queue as a bucket notification destination, without the grants of
    ``aws_s3_notifications.SqsDestination`` (``_allow_bucket`` writes narrower ones)."""

    def __init__(self, queue: sqs.IQueue) -> None:
        self.queue = queue

    def bind(self, scope: Any, bucket: Any) -> s3.BucketNotificationDestinationConfig:
        return s3.BucketNotificationDestinationConfig(
            arn=self.queue.queue_arn,
            type=s3.BucketNotificationDestinationType.QUEUE,
            # The notification waits for the queue policy, as SqsDestination's does.
            dependencies=[self.queue],
        )


def _add_rule_target(
    scope: Construct, pair: QueuePair, rule: events.Rule, message_group_id: str | None
) -> events.IRuleTarget:
    key = pair.queue.encryption_master_key
    if key is None:
        # SSE-SQS: SqsQueue's queue policy is scoped to the rule (aws:SourceArn); nothing missing.
        # Imported here: the module takes about 40 ms to import, in every app that imports
        # constructs_lib, for the apps that wire a rule.
        from aws_cdk import aws_events_targets as targets

        target: events.IRuleTarget = targets.SqsQueue(pair.queue, message_group_id=message_group_id)
        rule.add_target(target)
        return target
    # SSE-KMS: SqsQueue would leave the queue open to every rule (see the module docstring), so
    # the target and its two statements are written here. The queue policy may name the rule:
    # the rule refers to the queue, not to the policy. The key policy may not (the queue refers
    # to the key), so the key is scoped to the rule's account.
    target = _EncryptedQueueTarget(pair.queue, message_group_id)
    rule.add_target(target)
    pair.queue.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal(EVENTS_PRINCIPAL)],
            actions=["sqs:SendMessage"],
            resources=[pair.queue.queue_arn],
            conditions={"ArnEquals": {"aws:SourceArn": rule.rule_arn}},
        )
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal(EVENTS_PRINCIPAL)],
            actions=list(limits.KMS_SEND_ACTIONS),
            # In a key policy "*" is the key itself.
            resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": rule.env.account}},
        ),
        True,  # an imported key: nothing written, producer_problems warned
    )
    return target


@jsii.implements(events.IRuleTarget)
class _EncryptedQueueTarget:
    """An SSE-KMS queue as a rule target, without the grants of ``aws_events_targets.SqsQueue``
    (``_add_rule_target`` writes narrower ones)."""

    def __init__(self, queue: sqs.IQueue, message_group_id: str | None) -> None:
        self.queue = queue
        self.message_group_id = message_group_id

    def bind(self, rule: events_refs.IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(
            arn=self.queue.queue_arn,
            target_resource=self.queue,
            sqs_parameters=None
            if self.message_group_id is None
            else events.CfnRule.SqsParametersProperty(message_group_id=self.message_group_id),
        )
