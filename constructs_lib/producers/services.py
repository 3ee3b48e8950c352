"""What sends into a ResilientQueue's source queue: the AWS services that produce to it (an SNS
topic, an EventBridge rule, an S3 bucket) and the operators who redrive its dead letters back.

``ResilientQueue.add_producer`` and ``ResilientQueue.grant_redrive`` only check their arguments'
kinds; the rules and the wiring are here.

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

from collections.abc import Callable, Sequence
from typing import Any, cast

import jsii
from aws_cdk import FeatureFlags, Names, Stack, Token
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
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
from constructs_lib.alarms.factory import AlarmFactory
from constructs_lib.errors import Problem
from constructs_lib.params.kinds import implements
from constructs_lib.producers.sns_delivery_failures import (
    SNS_DELIVERY_FAILURES_ALARM_ID,
    SnsDeliveryFailures,
    create_delivery_failures_queue,
)
from constructs_lib.queue import grants
from constructs_lib.queue.keys import (
    is_aws_managed_sqs_key,
    key_policy_editable,
    key_text,
    same_key,
)
from constructs_lib.queue.pair import QueuePair

DEFAULT_S3_EVENTS: tuple[s3.EventType, ...] = (s3.EventType.OBJECT_CREATED,)
EVENTS_PRINCIPAL = "events.amazonaws.com"
# CDK's own spelling. On, SqsSubscription scopes its key policy statement to the topic.
SNS_KEY_POLICY_FLAG = "@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption"
_SERVICE = {"topic": "SNS", "rule": "EventBridge", "bucket": "S3"}
_PRINCIPAL = {"topic": "sns.amazonaws.com", "rule": EVENTS_PRINCIPAL, "bucket": "s3.amazonaws.com"}


def source_kind(source: object) -> str:
    """``topic``, ``rule`` or ``bucket`` (the caller checked that it is one of them)."""
    if implements(source, sns.ITopic):
        return "topic"
    if implements(source, events.IRule):
        return "rule"
    return "bucket"


# --- producers: the rules ------------------------------------------------------------------


def producer_problems(
    scope: Construct,
    pair: QueuePair,
    source: sns.ITopic | events.IRule | s3.IBucket,
    s3_events: Sequence[s3.EventType],
    s3_filters: Sequence[s3.NotificationKeyFilter],
    raw_message_delivery: bool,
    message_group_id: str | None,
) -> list[Problem]:
    """Every problem of one ``add_producer`` call (errors and warnings), before anything is
    wired."""
    kind = source_kind(source)
    service = _SERVICE[kind]
    problems = _misplaced_argument_problems(
        kind, s3_events, s3_filters, raw_message_delivery, message_group_id
    )
    key = pair.queue.encryption_master_key
    stack = Stack.of(scope)
    if is_aws_managed_sqs_key(key, stack):
        problems.append(
            Problem(
                "encryption_key",
                key_text(key, stack),
                f"{pair.queue_name} is encrypted with the AWS managed key "
                f"{limits.AWS_MANAGED_SQS_KEY}, whose key policy admits only principals of the "
                f"account and cannot be changed (SQS developer guide, key management): {service} "
                "cannot encrypt its messages for the queue, so they would never arrive",
                "use a customer managed kms.Key as the ResilientQueue's encryption_key, or "
                "SSE-SQS (leave encryption_key unset)",
            )
        )
        key = None  # nothing more to say about this key
    if kind == "topic":
        problems += _topic_problems(scope, pair, cast(sns.ITopic, source), key)
    elif kind == "rule":
        problems += _rule_problems(scope, pair, cast(events.IRule, source), message_group_id)
        if pair.fair and message_group_id is None:
            problems.append(_fair_rule_without_group(pair))
    else:
        problems += _bucket_problems(scope, pair, cast(s3.IBucket, source))
    if key is not None and not key_policy_editable(key):
        # CDK leaves an imported key's policy alone without a word; the service's messages are
        # refused until the key's owner allows it.
        problems.append(
            Problem(
                "encryption_key",
                grants.render(key.key_arn, scope),
                f"is not defined in this app, so its key policy cannot get the statement {service} "
                "needs to encrypt messages for the queue",
                "add this statement to the key's policy where the key is managed:\n"
                + grants.statement_json(_producer_key_statement(kind, source, scope, pair), scope),
                severity="warning",
            )
        )
    return problems


def _misplaced_argument_problems(
    kind: str,
    s3_events: Sequence[s3.EventType],
    s3_filters: Sequence[s3.NotificationKeyFilter],
    raw_message_delivery: bool,
    message_group_id: str | None,
) -> list[Problem]:
    """Arguments that belong to another kind of source: an error rather than silently ignored."""
    given = {
        "raw_message_delivery": ("topic", raw_message_delivery, raw_message_delivery),
        "message_group_id": ("rule", message_group_id, message_group_id is not None),
        "s3_events": ("bucket", list(s3_events), tuple(s3_events) != DEFAULT_S3_EVENTS),
        "s3_filters": ("bucket", list(s3_filters), bool(s3_filters)),
    }
    nouns = {"topic": "an SNS topic", "rule": "an EventBridge rule", "bucket": "an S3 bucket"}
    problems = [
        Problem(
            prop,
            value,
            f"applies only when the source is {nouns[owner]}, but it is {nouns[kind]}",
            f"remove {prop}",
        )
        for prop, (owner, value, is_set) in given.items()
        if is_set and owner != kind
    ]
    if kind == "bucket" and not s3_events:
        problems.append(
            Problem(
                "s3_events",
                list(s3_events),
                "is empty, so the bucket would notify nothing",
                "leave s3_events unset for s3.EventType.OBJECT_CREATED, or name the events",
            )
        )
    return problems


def _topic_problems(
    scope: Construct, pair: QueuePair, topic: sns.ITopic, key: kms.IKey | None
) -> list[Problem]:
    problems: list[Problem] = []
    if pair.fifo and not topic.fifo:
        # A standard topic forwards no message group id (botocore SNS Publish MessageGroupId),
        # and SendMessage to a FIFO queue without one fails (botocore SQS SendMessage). CDK does
        # not check this. A FIFO topic may feed a standard queue (SNS developer guide,
        # fifo-message-delivery).
        problems.append(
            Problem(
                "source",
                topic,
                f"is a standard topic, but {pair.queue_name} is a FIFO queue: a standard topic "
                "sends no message group id, which every message to a FIFO queue needs",
                "subscribe a FIFO topic (fifo=True), or use a standard ResilientQueue",
            )
        )
    # SqsSubscription writes a key statement only into the policy of a key of this app.
    if key is not None and key_policy_editable(key):
        if not FeatureFlags.of(topic).is_enabled(SNS_KEY_POLICY_FLAG):
            problems.append(
                Problem(
                    "source",
                    topic,
                    "gets a key policy statement from CDK that lets sns.amazonaws.com use the "
                    f"queue's key for any topic, because the feature flag {SNS_KEY_POLICY_FLAG} "
                    "is off in this app",
                    f'set "{SNS_KEY_POLICY_FLAG}": true in cdk.json (CDK then scopes the '
                    "statement to this topic with aws:SourceArn)",
                    severity="warning",
                )
            )
        elif topic.master_key is not None and same_key(topic.master_key, key, Stack.of(scope)):
            # With the flag, CDK's key statement names the topic, and the topic names the key.
            problems.append(
                Problem(
                    "source",
                    topic,
                    f"is encrypted with the queue's own key; with {SNS_KEY_POLICY_FLAG} on, the "
                    "key policy refers to the topic while the topic refers to the key, a circular "
                    "dependency CloudFormation rejects",
                    "encrypt the topic with another key than the queue's",
                )
            )
    existing = pair.queue.node.try_find_child(Names.node_unique_id(topic.node))
    if existing is not None:
        problems.append(_twice(scope, pair, topic, "subscription"))
    return problems


def _fair_rule_without_group(pair: QueuePair) -> Problem:
    # Each message without a MessageGroupId is a tenant of its own (SQS guide, fair queues), so
    # a flood from this rule could never be flagged as one noisy tenant.
    return Problem(
        "message_group_id",
        None,
        f"is not set, but {pair.queue_name} is a fair queue: without a message group every "
        "event of this rule is a tenant of its own, so a flood of them is never flagged as "
        "noisy and holds up the other tenants",
        'pass message_group_id="<tenant>" (EventBridge sets it on every event of the rule)',
        severity="warning",
    )


def _rule_problems(
    scope: Construct, pair: QueuePair, rule: events.IRule, message_group_id: str | None
) -> list[Problem]:
    problems: list[Problem] = []
    if not isinstance(rule, events.Rule):
        problems.append(
            Problem(
                "source",
                rule,
                "is an imported rule: its targets belong to the template that defines it",
                "pass the events.Rule defined in this app, or add the target where the rule is "
                "defined",
            )
        )
        return problems
    if Stack.of(rule) is not Stack.of(scope):
        problems.append(_other_stack(scope, pair, rule, "the rule's target refers to the queue"))
    if pair.fifo:
        # EventBridge requires both for an SQS FIFO target (botocore EventBridge
        # Target.SqsParameters); CDK checks neither.
        if message_group_id is None:
            problems.append(
                Problem(
                    "message_group_id",
                    message_group_id,
                    f"is required: {pair.queue_name} is a FIFO queue, and EventBridge sends to "
                    "one only with a message group id",
                    'pass message_group_id="<group>" (events of one group are delivered in order)',
                )
            )
        if not cast(sqs.CfnQueue, pair.queue.node.default_child).content_based_deduplication:
            problems.append(
                Problem(
                    "source",
                    rule,
                    f"cannot target {pair.queue_name}: EventBridge sends to a FIFO queue only "
                    "when it has content-based deduplication",
                    "create the ResilientQueue with content_based_deduplication=True",
                )
            )
    stack = Stack.of(rule)
    queue_arn = stack.resolve(pair.queue.queue_arn)
    rendered = stack.resolve(cast(events.CfnRule, rule.node.default_child).targets) or []
    if any(stack.resolve(target.get("arn")) == queue_arn for target in rendered):
        problems.append(_twice(scope, pair, rule, "target"))
    return problems


def _bucket_problems(scope: Construct, pair: QueuePair, bucket: s3.IBucket) -> list[Problem]:
    problems: list[Problem] = []
    if pair.fifo:
        # "FIFO queues are not allowed when enabling an SQS queue as the event notification
        # destination." CloudFormation, AWS::S3::Bucket QueueConfiguration, Queue. CDK does not
        # check this.
        problems.append(
            Problem(
                "source",
                bucket,
                f"cannot notify {pair.queue_name}: S3 event notifications cannot target a FIFO "
                "queue",
                "use a standard ResilientQueue, or send the bucket's events through EventBridge "
                "(s3.Bucket(event_bridge_enabled=True) and an events.Rule with a message group id)",
            )
        )
    if Stack.of(bucket) is not Stack.of(scope) and Token.is_unresolved(bucket.bucket_arn):
        problems.append(
            _other_stack(
                scope, pair, bucket, "the bucket's notification configuration refers to the queue"
            )
        )
    return problems


def _other_stack(scope: Construct, pair: QueuePair, source: Any, why: str) -> Problem:
    return Problem(
        "source",
        source,
        f"is in stack {Stack.of(source).stack_name}, not {Stack.of(scope).stack_name}: {why} and "
        "the queue policy refers to the source, which makes the two stacks depend on each other",
        "define the source in the queue's stack (or the ResilientQueue in the source's)",
    )


def _twice(scope: Construct, pair: QueuePair, source: Any, what: str) -> Problem:
    return Problem(
        "source",
        source,
        f"already has a {what} to {pair.queue_name}; a second would deliver every message twice",
        "add each topic or rule once per queue",
    )


def _producer_key_statement(
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
        principals=[iam.ServicePrincipal(_PRINCIPAL[kind])],
        actions=list(limits.KMS_SERVICE_PRODUCER_ACTIONS),
        resources=["*"],
        conditions=conditions,
    )


# --- producers: the wiring ------------------------------------------------------------------


def add_producer(
    scope: Construct,
    pair: QueuePair,
    delivery_failures: Callable[[], SnsDeliveryFailures],
    source: sns.ITopic | events.IRule | s3.IBucket,
    s3_events: Sequence[s3.EventType],
    s3_filters: Sequence[s3.NotificationKeyFilter],
    raw_message_delivery: bool,
    message_group_id: str | None,
) -> sns.Subscription | events.IRuleTarget | None:
    """Wire ``source`` to the source queue (call after ``producer_problems`` found no error)."""
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
                raw_message_delivery=raw_message_delivery,
                dead_letter_queue=failures.queue,
            )
        )
    if kind == "rule":
        assert isinstance(source, events.Rule)
        return _add_rule_target(scope, pair, source, message_group_id)
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
    for event in s3_events:
        bucket.add_event_notification(event, destination, *s3_filters)
    return None


def _bucket_conditions(bucket: s3.IBucket) -> dict[str, dict[str, Any]]:
    return {
        "ArnLike": {limits.SOURCE_ARN_KEY: bucket.bucket_arn},
        "StringEquals": {limits.SOURCE_ACCOUNT_KEY: bucket.env.account},
    }


def bucket_statements(
    scope: Construct, pair: QueuePair, bucket: s3.IBucket
) -> tuple[iam.PolicyStatement, iam.PolicyStatement]:
    """The queue policy and key policy statements S3 needs to notify the queue of ``bucket``."""
    principal = iam.ServicePrincipal(_PRINCIPAL["bucket"])
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


class Producers:
    """The producers of one ResilientQueue's source queue (``pair.queue``, in ``scope``): the
    rules of each ``add_producer`` call, its wiring, and the SNS delivery-failures queue the
    first topic creates."""

    def __init__(
        self,
        scope: Construct,
        pair: QueuePair,
        alarms: AlarmFactory,
        dead_letter_retention: int | None,
        max_message_size: int | None,
    ) -> None:
        self.scope = scope
        self.pair = pair
        self._alarms = alarms
        self._dead_letter_retention = dead_letter_retention
        self._max_message_size = max_message_size
        self.sns_delivery_failures: SnsDeliveryFailures | None = None

    def problems(self, **arguments: Any) -> list[Problem]:
        """Every problem of one ``add_producer`` call (``producer_problems``)."""
        return producer_problems(self.scope, self.pair, **arguments)

    def add(self, **arguments: Any) -> sns.Subscription | events.IRuleTarget | None:
        """Wire one producer (``add_producer``), once ``problems`` found no error."""
        return add_producer(self.scope, self.pair, self.delivery_failures, **arguments)

    def delivery_failures(self) -> SnsDeliveryFailures:
        """The SNS delivery-failures queue, created with the first topic: the source's type,
        key, message size and removal policy, the dead-letter queue's retention, TLS enforced,
        and an alarm at one visible message."""
        if self.sns_delivery_failures is None:
            failures = create_delivery_failures_queue(
                self.scope, self.pair, self._dead_letter_retention, self._max_message_size
            )
            alarm = self._alarms.sns_delivery_failures(SNS_DELIVERY_FAILURES_ALARM_ID, failures)
            self.sns_delivery_failures = SnsDeliveryFailures(failures, alarm)
        return self.sns_delivery_failures
