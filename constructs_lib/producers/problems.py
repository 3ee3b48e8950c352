"""The rules of ``ResilientQueue.add_producer``: every error and warning of one call (a source
the queue cannot take, an argument for another kind of source, a key policy this app cannot
change), found before anything is wired (``constructs_lib.producers.wiring``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import FeatureFlags, Names, Stack, Token
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.errors import Problem
from constructs_lib.params.kinds import implements
from constructs_lib.producers.statements import producer_key_statement
from constructs_lib.queue import grants
from constructs_lib.queue.keys import (
    is_aws_managed_sqs_key,
    key_policy_editable,
    key_text,
    same_key,
)
from constructs_lib.queue.pair import QueuePair

if TYPE_CHECKING:
    from constructs_lib.params.settings import ProducerCall

DEFAULT_S3_EVENTS: tuple[s3.EventType, ...] = (s3.EventType.OBJECT_CREATED,)
# CDK's own spelling. On, SqsSubscription scopes its key policy statement to the topic.
SNS_KEY_POLICY_FLAG = "@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption"
_SERVICE = {"topic": "SNS", "rule": "EventBridge", "bucket": "S3"}


def source_kind(source: object) -> str:
    """``topic``, ``rule`` or ``bucket`` (the caller checked that it is one of them)."""
    if implements(source, sns.ITopic):
        return "topic"
    if implements(source, events.IRule):
        return "rule"
    return "bucket"


def producer_problems(scope: Construct, pair: QueuePair, call: ProducerCall) -> list[Problem]:
    """Every problem of one ``add_producer`` call (errors and warnings), before anything is
    wired."""
    source, message_group_id = call.source, call.message_group_id
    kind = source_kind(source)
    service = _SERVICE[kind]
    problems = _misplaced_argument_problems(
        kind, call.s3_events, call.s3_filters, call.raw_message_delivery, message_group_id
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
                + grants.statement_json(producer_key_statement(kind, source, scope, pair), scope),
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
