"""ResilientQueue.add_producer: an SNS topic, an EventBridge rule or an S3 bucket sends to the
source queue, and only that source may.

Expected statements are written here from the AWS guides (which principal, which actions, which
condition), not read from the library. What CDK's own integrations write was checked on their
templates; the tests pin the result, whichever side wrote it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3_notifications
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template

from constructs_lib import ConfigurationError, ParameterTypeError, ResilientQueue
from constructs_lib.checks import QueueResilienceChecks
from tests.conftest import cfn_lint

SNS_FLAG = "@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption"
SOURCE_CONDITION = {
    "topic": "aws:SourceArn",
    "rule": "aws:SourceAccount",
    "bucket": "aws:SourceArn",
}
PRINCIPAL = {
    "topic": "sns.amazonaws.com",
    "rule": "events.amazonaws.com",
    "bucket": "s3.amazonaws.com",
}
KINDS = list(PRINCIPAL)
MANAGED_KEY_ARN = "arn:aws:kms:us-east-1:123456789012:alias/aws/sqs"


def make_source(stack: cdk.Stack, kind: str, fifo: bool = False) -> Any:
    if kind == "topic":
        return sns.Topic(stack, "Topic", fifo=fifo or None)
    if kind == "rule":
        return events.Rule(stack, "Rule", event_pattern=events.EventPattern(source=["orders"]))
    return s3.Bucket(stack, "Bucket")


@dataclass
class World:
    stack: cdk.Stack
    queue: ResilientQueue
    key: kms.Key | None

    def resolve(self, value: object) -> Any:
        return self.stack.resolve(value)

    @property
    def template(self) -> Template:
        return Template.from_stack(self.stack)

    def queue_allows(self, principal: str) -> list[dict[str, Any]]:
        """The queue policies' Allow statements for one service principal."""
        return [
            statement
            for policy in self.template.find_resources("AWS::SQS::QueuePolicy").values()
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if statement["Effect"] == "Allow" and statement["Principal"] == {"Service": principal}
        ]

    def key_allows(self, principal: str) -> list[dict[str, Any]]:
        assert self.key is not None
        key = self.template.find_resources("AWS::KMS::Key")[
            self.stack.get_logical_id(self.key.node.default_child)  # type: ignore[arg-type]
        ]
        return [
            statement
            for statement in key["Properties"]["KeyPolicy"]["Statement"]
            if statement["Principal"] == {"Service": principal}
        ]

    def warnings(self) -> list[str]:
        found = Annotations.from_stack(self.stack).find_warning("*", Match.any_value())
        return [str(message.entry.data) for message in found]


def world(
    *,
    encrypted: bool = False,
    fifo: bool = False,
    context: dict[str, Any] | None = None,
    **queue_props: Any,
) -> World:
    stack = cdk.Stack(cdk.App(context=context or {}), "TestStack")
    key = kms.Key(stack, "Key") if encrypted else None
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", fifo=fifo, encryption_key=key, **queue_props
    )
    return World(stack, queue, key)


def source_arn(kind: str, source: Any) -> str:
    attribute = {"topic": "topic_arn", "rule": "rule_arn", "bucket": "bucket_arn"}[kind]
    arn: str = getattr(source, attribute)
    return arn


def actions_of(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def scoped_to(statement: dict[str, Any]) -> object:
    """The aws:SourceArn a statement requires, whatever the operator, or None."""
    for condition in statement.get("Condition", {}).values():
        if "aws:SourceArn" in condition:
            return condition["aws:SourceArn"]
    return None


# --- the wiring -------------------------------------------------------------------------------

ENCRYPTIONS = pytest.mark.parametrize("encrypted", [False, True], ids=["sse-sqs", "sse-kms"])


@ENCRYPTIONS
@pytest.mark.parametrize("kind", KINDS)
def test_the_source_is_wired_to_the_source_queue(kind: str, encrypted: bool) -> None:
    w = world(encrypted=encrypted)
    source = make_source(w.stack, kind)

    w.queue.add_producer(source)

    queue_arn = w.resolve(w.queue.queue.queue_arn)
    if kind == "topic":
        w.template.has_resource_properties(
            "AWS::SNS::Subscription",
            {"Protocol": "sqs", "Endpoint": queue_arn, "TopicArn": w.resolve(source.topic_arn)},
        )
    elif kind == "rule":
        w.template.has_resource_properties(
            "AWS::Events::Rule", {"Targets": [Match.object_like({"Arn": queue_arn})]}
        )
    else:
        w.template.has_resource_properties(
            "Custom::S3BucketNotifications",
            {
                "NotificationConfiguration": {
                    "QueueConfigurations": [
                        {"Events": ["s3:ObjectCreated:*"], "QueueArn": queue_arn}
                    ]
                }
            },
        )


@ENCRYPTIONS
@pytest.mark.parametrize("kind", KINDS)
def test_only_that_source_may_send_to_the_queue(kind: str, encrypted: bool) -> None:
    # The service principal sends for every customer of the service: each Allow for it must
    # name this source (aws:SourceArn), or any account's topic, rule or bucket could send.
    w = world(encrypted=encrypted)
    source = make_source(w.stack, kind)

    w.queue.add_producer(source)

    allows = w.queue_allows(PRINCIPAL[kind])
    assert allows
    assert any("sqs:SendMessage" in actions_of(s) for s in allows)
    # SNS may also send to its failures queue, where the subscription puts what it cannot
    # deliver; never to the DLQ.
    failures = w.queue.sns_delivery_failures
    queues = [w.queue.queue] + ([failures.queue] if failures is not None else [])
    for statement in allows:
        assert scoped_to(statement) == w.resolve(source_arn(kind, source)), statement
        assert statement["Resource"] in [w.resolve(q.queue_arn) for q in queues]


def test_what_sns_cannot_deliver_goes_to_a_queue_of_its_own() -> None:
    # Not the source's DLQ: StartMessageMoveTask cannot move SNS's failures back (their source
    # is not a queue), and the dead-letter consumer would take them for failed messages.
    w = world()
    w.queue.add_producer(make_source(w.stack, "topic"))

    failures = w.queue.sns_delivery_failures
    assert failures is not None
    w.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {
            "Protocol": "sqs",
            "RedrivePolicy": {"deadLetterTargetArn": w.resolve(failures.queue.queue_arn)},
        },
    )
    assert not [
        s
        for s in w.queue_allows("sns.amazonaws.com")
        if s["Resource"] == w.resolve(w.queue.dead_letter_queue.queue_arn)
    ]


@pytest.mark.parametrize(
    ("fifo", "encrypted"),
    [(False, False), (False, True), (True, True)],
    ids=["standard-sse-sqs", "standard-sse-kms", "fifo-sse-kms"],
)
def test_the_sns_failures_queue_matches_the_source_and_has_a_depth_alarm(
    fifo: bool, encrypted: bool
) -> None:
    extra = {"content_based_deduplication": True} if fifo else {}
    w = world(
        encrypted=encrypted, fifo=fifo, dead_letter_retention_period=cdk.Duration.days(10), **extra
    )
    w.queue.add_producer(make_source(w.stack, "topic", fifo=fifo))

    failures = w.queue.sns_delivery_failures
    assert failures is not None
    cfn = w.template.find_resources("AWS::SQS::Queue")[
        w.stack.get_logical_id(failures.queue.node.default_child)  # type: ignore[arg-type]
    ]["Properties"]
    assert cfn["MessageRetentionPeriod"] == 10 * 86_400
    assert cfn.get("FifoQueue", False) is fifo
    assert cfn["QueueName"].endswith(".fifo") is fifo
    assert len(cfn["QueueName"]) <= 80
    if encrypted:
        assert w.key is not None
        assert cfn["KmsMasterKeyId"] == w.resolve(w.key.key_arn)
    else:
        assert "KmsMasterKeyId" not in cfn
    w.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [{"Name": "QueueName", "Value": w.resolve(failures.queue.queue_name)}],
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
        },
    )
    # TLS only, like both queues.
    w.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [w.resolve(failures.queue.queue_url)],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_two_topics_share_one_sns_failures_queue() -> None:
    w = world()
    w.queue.add_producer(make_source(w.stack, "topic"))
    w.queue.add_producer(sns.Topic(w.stack, "Second"))

    # source, DLQ, SNS failures
    w.template.resource_count_is("AWS::SQS::Queue", 3)


def test_without_a_topic_there_is_no_sns_failures_queue() -> None:
    w = world()
    w.queue.add_producer(make_source(w.stack, "rule"))

    assert w.queue.sns_delivery_failures is None
    w.template.resource_count_is("AWS::SQS::Queue", 2)


@pytest.mark.parametrize("kind", KINDS)
def test_with_a_customer_key_the_service_may_generate_data_keys_and_decrypt(kind: str) -> None:
    w = world(encrypted=True, context={SNS_FLAG: True})
    source = make_source(w.stack, kind)

    w.queue.add_producer(source)

    allows = w.key_allows(PRINCIPAL[kind])
    granted = set().union(*(actions_of(s) for s in allows))
    # SQS developer guide, key management: the service needs GenerateDataKey and Decrypt.
    assert granted & {"kms:GenerateDataKey", "kms:GenerateDataKey*"}
    assert "kms:Decrypt" in granted


def test_the_sns_key_statement_is_scoped_to_the_topic_with_cdks_flag() -> None:
    w = world(encrypted=True, context={SNS_FLAG: True})
    topic = make_source(w.stack, "topic")

    w.queue.add_producer(topic)

    allows = w.key_allows("sns.amazonaws.com")
    assert len(allows) == 1
    assert actions_of(allows[0]) == {"kms:GenerateDataKey", "kms:Decrypt"}
    assert scoped_to(allows[0]) == w.resolve(topic.topic_arn)
    assert not [m for m in w.warnings() if SNS_FLAG in m]


def test_warns_when_cdks_flag_leaves_the_sns_key_statement_unscoped() -> None:
    w = world(encrypted=True)  # a bare App: the flag is off
    topic = make_source(w.stack, "topic")

    w.queue.add_producer(topic)

    [allow] = w.key_allows("sns.amazonaws.com")
    assert scoped_to(allow) is None
    [warning] = [m for m in w.warnings() if SNS_FLAG in m]
    assert "for any topic" in warning
    assert f'"{SNS_FLAG}": true in cdk.json' in warning


def test_the_eventbridge_key_statement_is_narrow_and_scoped_to_the_account() -> None:
    # The key policy cannot name the rule (the rule names the queue, which names the key), so
    # it names the rule's account; the queue policy names the rule.
    w = world(encrypted=True)
    rule = make_source(w.stack, "rule")

    w.queue.add_producer(rule)

    [allow] = w.key_allows("events.amazonaws.com")
    assert actions_of(allow) == {"kms:GenerateDataKey", "kms:Decrypt"}
    assert allow["Condition"] == {
        "StringEquals": {"aws:SourceAccount": w.resolve(rule.env.account)}
    }
    [queue_allow] = w.queue_allows("events.amazonaws.com")
    assert actions_of(queue_allow) == {"sqs:SendMessage"}


def test_s3_gets_one_key_statement_bound_to_the_bucket_and_its_account() -> None:
    # CDK's SqsDestination would add a statement without any condition and grant kms:Encrypt
    # and kms:ReEncrypt* beside the scoped one; the library writes only what S3 needs.
    w = world(encrypted=True)
    bucket = make_source(w.stack, "bucket")

    w.queue.add_producer(bucket)

    [allow] = w.key_allows("s3.amazonaws.com")
    assert actions_of(allow) == {"kms:GenerateDataKey", "kms:Decrypt"}
    assert allow["Condition"] == {
        "ArnLike": {"aws:SourceArn": w.resolve(bucket.bucket_arn)},
        "StringEquals": {"aws:SourceAccount": w.resolve(bucket.env.account)},
    }


def test_s3_may_only_send_to_an_encrypted_queue_of_its_bucket_and_account() -> None:
    w = world(encrypted=True)
    bucket = make_source(w.stack, "bucket")

    w.queue.add_producer(bucket)

    [allow] = w.queue_allows("s3.amazonaws.com")
    assert actions_of(allow) == {"sqs:SendMessage"}
    assert allow["Condition"] == {
        "ArnLike": {"aws:SourceArn": w.resolve(bucket.bucket_arn)},
        "StringEquals": {"aws:SourceAccount": w.resolve(bucket.env.account)},
    }
    w.template.has_resource_properties(
        "Custom::S3BucketNotifications",
        {
            "NotificationConfiguration": {
                "QueueConfigurations": [
                    Match.object_like(
                        {
                            "QueueArn": w.resolve(w.queue.queue.queue_arn),
                            "Events": ["s3:ObjectCreated:*"],
                        }
                    )
                ]
            }
        },
    )


def test_an_sse_sqs_queue_needs_no_key() -> None:
    w = world()

    w.queue.add_producer(make_source(w.stack, "rule"))

    assert w.template.find_resources("AWS::KMS::Key") == {}


def test_a_topic_returns_its_subscription_with_raw_message_delivery() -> None:
    w = world()

    subscription = w.queue.add_producer(make_source(w.stack, "topic"), raw_message_delivery=True)

    assert isinstance(subscription, sns.Subscription)
    w.template.has_resource_properties("AWS::SNS::Subscription", {"RawMessageDelivery": True})


def test_a_rule_returns_its_target_and_a_bucket_nothing() -> None:
    w = world()
    rule = make_source(w.stack, "rule")

    target = w.queue.add_producer(rule)
    nothing = w.queue.add_producer(make_source(w.stack, "bucket"))

    assert target is not None and not isinstance(target, sns.Subscription)
    assert w.resolve(target.bind(rule).arn) == w.resolve(w.queue.queue.queue_arn)  # type: ignore[union-attr]
    assert nothing is None


def test_a_bucket_notifies_each_event_with_the_filters() -> None:
    w = world()
    bucket = make_source(w.stack, "bucket")

    w.queue.add_producer(
        bucket,
        s3_events=[s3.EventType.OBJECT_CREATED, s3.EventType.OBJECT_REMOVED],
        s3_filters=[s3.NotificationKeyFilter(prefix="incoming/")],
    )

    prefix = {"Key": {"FilterRules": [{"Name": "prefix", "Value": "incoming/"}]}}
    w.template.has_resource_properties(
        "Custom::S3BucketNotifications",
        {
            "NotificationConfiguration": {
                "QueueConfigurations": [
                    Match.object_like({"Events": ["s3:ObjectCreated:*"], "Filter": prefix}),
                    Match.object_like({"Events": ["s3:ObjectRemoved:*"], "Filter": prefix}),
                ]
            }
        },
    )


# --- FIFO -----------------------------------------------------------------------------------


def test_a_fifo_topic_feeds_a_fifo_queue() -> None:
    w = world(fifo=True)

    w.queue.add_producer(make_source(w.stack, "topic", fifo=True))

    w.template.resource_count_is("AWS::SNS::Subscription", 1)


def test_a_fifo_topic_feeds_a_standard_queue() -> None:
    # SNS developer guide, fifo-message-delivery: FIFO topics deliver to both queue types.
    w = world()

    w.queue.add_producer(make_source(w.stack, "topic", fifo=True))

    w.template.resource_count_is("AWS::SNS::Subscription", 1)


def test_fails_for_a_standard_topic_and_a_fifo_queue() -> None:
    w = world(fifo=True)

    with pytest.raises(ConfigurationError) as raised:
        w.queue.add_producer(make_source(w.stack, "topic"))

    [problem] = raised.value.problems
    assert problem.prop == "source"
    assert "standard topic" in problem.rule and "orders.fifo" in problem.rule
    assert "fifo=True" in problem.fix
    w.template.resource_count_is("AWS::SNS::Subscription", 0)


def test_a_rule_sends_to_a_fifo_queue_with_a_message_group() -> None:
    w = world(fifo=True, content_based_deduplication=True)

    w.queue.add_producer(make_source(w.stack, "rule"), message_group_id="orders")

    w.template.has_resource_properties(
        "AWS::Events::Rule",
        {"Targets": [Match.object_like({"SqsParameters": {"MessageGroupId": "orders"}})]},
    )


def test_fails_for_a_rule_and_a_fifo_queue_without_group_or_deduplication() -> None:
    # EventBridge (Target.SqsParameters) needs both for a FIFO queue; both are listed at once.
    w = world(fifo=True)

    with pytest.raises(ConfigurationError) as raised:
        w.queue.add_producer(make_source(w.stack, "rule"))

    problems = {p.prop: p for p in raised.value.problems}
    assert set(problems) == {"message_group_id", "source"}
    assert 'message_group_id="' in problems["message_group_id"].fix
    assert "content_based_deduplication=True" in problems["source"].fix
    assert "Targets" not in json.dumps(w.template.find_resources("AWS::Events::Rule"))


def test_fails_for_a_bucket_and_a_fifo_queue() -> None:
    w = world(fifo=True)

    with pytest.raises(ConfigurationError) as raised:
        w.queue.add_producer(make_source(w.stack, "bucket"))

    [problem] = raised.value.problems
    assert "S3 event notifications cannot target a FIFO queue" in problem.rule
    w.template.resource_count_is("Custom::S3BucketNotifications", 0)


# --- the AWS managed key -------------------------------------------------------------------

MANAGED_KEY_FORMS: dict[str, Callable[[cdk.Stack], kms.IKey]] = {
    "alias/aws/sqs": lambda stack: kms.Alias.from_alias_name(stack, "Managed", "alias/aws/sqs"),
    MANAGED_KEY_ARN: lambda stack: kms.Key.from_key_arn(stack, "Managed", MANAGED_KEY_ARN),
}
MANAGED_KEYS = pytest.mark.parametrize(
    "key_name", list(MANAGED_KEY_FORMS), ids=["alias", "key-arn"]
)


@MANAGED_KEYS
@pytest.mark.parametrize("kind", KINDS)
def test_fails_for_a_queue_with_the_aws_managed_key(kind: str, key_name: str) -> None:
    stack = cdk.Stack(cdk.App(), "TestStack")
    key = MANAGED_KEY_FORMS[key_name](stack)
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)
    source = make_source(stack, kind)

    with pytest.raises(ConfigurationError) as raised:
        queue.add_producer(source)

    message = str(raised.value)
    assert message.startswith("TestStack/Orders: 1 configuration problem:")
    assert "orders is encrypted with the AWS managed key alias/aws/sqs" in message
    assert f"encryption_key='{key_name}'" in message
    assert "Fix: use a customer managed kms.Key" in message and "or SSE-SQS" in message
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Subscription", 0)
    template.resource_count_is("Custom::S3BucketNotifications", 0)
    assert "Targets" not in json.dumps(template.find_resources("AWS::Events::Rule"))
    # The queue policy holds only the queue's own TLS statement (a Deny).
    assert not any(
        s["Effect"] == "Allow"
        for p in template.find_resources("AWS::SQS::QueuePolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    )


@MANAGED_KEYS
@pytest.mark.parametrize("kind", KINDS)
def test_the_audit_flags_what_add_producer_refuses(
    tmp_path: Path, kind: str, key_name: str
) -> None:
    # The same wiring built with CDK's integrations directly: the fleet audit's QR029.
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "RawStack")
    queue = sqs.Queue(stack, "Orders", encryption_master_key=MANAGED_KEY_FORMS[key_name](stack))
    source = make_source(stack, kind)
    if kind == "topic":
        source.add_subscription(subscriptions.SqsSubscription(queue))
    elif kind == "rule":
        source.add_target(targets.SqsQueue(queue))
    else:
        source.add_event_notification(
            s3.EventType.OBJECT_CREATED, s3_notifications.SqsDestination(queue)
        )
    plugin = QueueResilienceChecks(fail_on="never")
    cdk.Validations.of(app).add_plugins(plugin)

    app.synth()

    assert [f.severity for f in plugin.findings if f.rule_id == "QR029"] == ["error"]


# --- other refusals ----------------------------------------------------------------------


def test_fails_for_an_imported_rule() -> None:
    w = world()
    imported = events.Rule.from_event_rule_arn(
        w.stack, "Imported", "arn:aws:events:us-east-1:123456789012:rule/orders"
    )

    with pytest.raises(ConfigurationError, match="is an imported rule"):
        w.queue.add_producer(imported)


@pytest.mark.parametrize("kind", ["rule", "bucket"])
def test_fails_for_a_rule_or_bucket_in_another_stack(kind: str) -> None:
    app = cdk.App()
    queue = ResilientQueue(cdk.Stack(app, "QueueStack"), "Orders", queue_name="orders")
    source = make_source(cdk.Stack(app, "SourceStack"), kind)

    with pytest.raises(ConfigurationError) as raised:
        queue.add_producer(source)

    [problem] = raised.value.problems
    assert "is in stack SourceStack, not QueueStack" in problem.rule
    assert "depend on each other" in problem.rule
    app.synth()  # nothing was wired, so nothing cycles


def test_a_topic_in_another_stack_works() -> None:
    # SqsSubscription puts the subscription in the queue's stack, which depends on the topic's.
    app = cdk.App()
    queue_stack = cdk.Stack(app, "QueueStack")
    queue = ResilientQueue(queue_stack, "Orders", queue_name="orders")

    queue.add_producer(make_source(cdk.Stack(app, "TopicStack"), "topic"))

    app.synth()
    Template.from_stack(queue_stack).resource_count_is("AWS::SNS::Subscription", 1)


@pytest.mark.parametrize("kind", ["topic", "rule"])
def test_fails_for_a_topic_or_rule_added_twice(kind: str) -> None:
    w = world()
    source = make_source(w.stack, kind)
    w.queue.add_producer(source)

    with pytest.raises(ConfigurationError, match="would deliver every message twice"):
        w.queue.add_producer(source)


def test_a_bucket_may_notify_other_events_in_another_call() -> None:
    w = world()
    bucket = make_source(w.stack, "bucket")

    w.queue.add_producer(bucket)
    w.queue.add_producer(bucket, s3_events=[s3.EventType.OBJECT_REMOVED])

    configurations = w.template.find_resources("Custom::S3BucketNotifications")
    [notifications] = configurations.values()
    events_notified = [
        c["Events"]
        for c in notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    ]
    assert events_notified == [["s3:ObjectCreated:*"], ["s3:ObjectRemoved:*"]]


@pytest.mark.parametrize(
    ("kind", "arguments", "props"),
    [
        (
            "bucket",
            {"raw_message_delivery": True, "message_group_id": "g"},
            {"raw_message_delivery", "message_group_id"},
        ),
        ("topic", {"s3_filters": [s3.NotificationKeyFilter(prefix="a/")]}, {"s3_filters"}),
        ("rule", {"s3_events": [s3.EventType.OBJECT_REMOVED]}, {"s3_events"}),
        ("bucket", {"s3_events": []}, {"s3_events"}),
    ],
    ids=[
        "sns-and-eventbridge-options-on-a-bucket",
        "s3-filters-on-a-topic",
        "s3-events-on-a-rule",
        "no-s3-event",
    ],
)
def test_fails_for_arguments_of_another_kind_of_source(
    kind: str, arguments: dict[str, Any], props: set[str]
) -> None:
    w = world()

    with pytest.raises(ConfigurationError) as raised:
        w.queue.add_producer(make_source(w.stack, kind), **arguments)

    assert {p.prop for p in raised.value.problems} == props
    assert all(p.fix for p in raised.value.problems)


def test_fails_for_a_topic_with_the_queues_key_when_cdk_would_scope_the_key_to_it() -> None:
    # With the flag, the key policy names the topic and the topic names the key: a cycle.
    w = world(encrypted=True, context={SNS_FLAG: True})
    assert w.key is not None
    topic = sns.Topic(w.stack, "Topic", master_key=w.key)

    with pytest.raises(ConfigurationError, match="circular dependency"):
        w.queue.add_producer(topic)


@pytest.mark.parametrize("kind", ["topic", "rule", "bucket"])
def test_warns_that_an_imported_key_needs_its_owner_to_allow_the_service(kind: str) -> None:
    stack = cdk.Stack(cdk.App(), "TestStack")
    key = kms.Key.from_key_arn(
        stack,
        "Imported",
        "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    )
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)

    queue.add_producer(make_source(stack, kind))

    found = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    messages = [
        str(m.entry.data) for m in found if "is not defined in this app" in str(m.entry.data)
    ]
    assert len(messages) == 1
    # The statement to paste, as JSON: the principal, the actions and a source condition.
    statement, _ = json.JSONDecoder().raw_decode(messages[0], messages[0].index("\n{") + 1)
    assert statement["Principal"] == {"Service": PRINCIPAL[kind]}
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statement["Resource"] == "*"
    condition = {k: v for ops in statement["Condition"].values() for k, v in ops.items()}
    assert SOURCE_CONDITION[kind] in condition
    assert "${" in json.dumps(condition) or "arn:" in json.dumps(condition)
    assert "Token[" not in messages[0] and "jsii" not in messages[0]


# --- wrong types ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "described"),
    [
        pytest.param(lambda stack: "arn:aws:sns:us-east-1:123456789012:orders", "a str", id="str"),
        pytest.param(lambda stack: None, "None", id="none"),
        pytest.param(lambda stack: sqs.Queue(stack, "Other"), "aws_sqs.Queue", id="queue"),
        pytest.param(
            lambda stack: ResilientQueue(stack, "Upstream", queue_name="upstream"),
            "constructs_lib.queue.ResilientQueue",
            id="resilient-queue",
        ),
    ],
)
def test_fails_for_a_source_of_the_wrong_type(
    value: Callable[[cdk.Stack], object], described: str
) -> None:
    w = world()
    wrong = value(w.stack)

    with pytest.raises(ParameterTypeError) as raised:
        w.queue.add_producer(wrong)  # type: ignore[arg-type]

    message = str(raised.value)
    assert message.startswith("TestStack/Orders: 1 argument of the wrong type:")
    assert "  - source=" in message and described in message
    assert "not sns.ITopic or events.IRule or s3.IBucket" in message
    assert "Fix: pass source=sns.Topic(" in message


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"s3_events": s3.EventType.OBJECT_CREATED}, "wrap it in a list"),
        ({"s3_filters": [{"prefix": "a/"}]}, "s3.NotificationKeyFilter"),
        ({"raw_message_delivery": "yes"}, "pass raw_message_delivery=True"),
        ({"message_group_id": 7}, "pass message_group_id as a str"),
    ],
    ids=["single-event", "filter-as-dict", "flag-as-str", "group-as-int"],
)
def test_fails_for_options_of_the_wrong_type(arguments: dict[str, Any], expected: str) -> None:
    w = world()

    with pytest.raises(ParameterTypeError, match=expected):
        w.queue.add_producer(make_source(w.stack, "bucket"), **arguments)


# --- peers as judges: the audit and cfn-lint on every producer --------------------------------


@dataclass
class Synth:
    outdir: Path
    plugin: QueueResilienceChecks


@pytest.fixture(scope="module")
def producers_app(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Every producer on its own queue, with SSE-SQS and with a customer key, and a FIFO queue
    fed by a FIFO topic and a rule; synthesized once with the audit as a validation plugin."""
    outdir = tmp_path_factory.mktemp("producers")
    app = cdk.App(outdir=str(outdir), context={SNS_FLAG: True})
    for kind in KINDS:
        for encrypted in (False, True):
            stack = cdk.Stack(app, f"{kind}-{'kms' if encrypted else 'sqs'}")
            alarms = sns.Topic(stack, "Alarms")
            queue = ResilientQueue(
                stack,
                "Orders",
                queue_name=f"orders-{kind}",
                encryption_key=kms.Key(stack, "Key", enable_key_rotation=True)
                if encrypted
                else None,
                alarm_actions=[cloudwatch_actions.SnsAction(alarms)],
            )
            queue.add_producer(make_source(stack, kind))
    stack = cdk.Stack(app, "fifo")
    queue = ResilientQueue(
        stack,
        "Orders",
        fifo=True,
        content_based_deduplication=True,
        encryption_key=kms.Key(stack, "Key", enable_key_rotation=True),
        alarm_actions=[cloudwatch_actions.SnsAction(sns.Topic(stack, "Alarms"))],
    )
    queue.add_producer(make_source(stack, "topic", fifo=True))
    queue.add_producer(make_source(stack, "rule"), message_group_id="orders")
    plugin = QueueResilienceChecks(fail_on="never")
    cdk.Validations.of(app).add_plugins(plugin)
    app.synth()
    return Synth(outdir, plugin)


def test_every_producer_app_was_synthesized(producers_app: Synth) -> None:
    templates = sorted(producers_app.outdir.glob("*.template.json"))
    assert len(templates) == 2 * len(KINDS) + 1
    for template in templates:
        assert "AWS::SQS::QueuePolicy" in json.dumps(json.loads(template.read_text()))


def test_the_audit_finds_no_error_or_warning(producers_app: Synth) -> None:
    serious = [
        (f.rule_id, f.severity, f.resource, f.message)
        for f in producers_app.plugin.findings
        if f.severity in ("error", "warning")
    ]
    assert serious == []


def test_cfn_lint_finds_nothing_such_as_a_circular_dependency(producers_app: Synth) -> None:
    completed = cfn_lint(sorted(producers_app.outdir.glob("*.template.json")))
    assert completed.returncode == 0, completed.stdout + completed.stderr
