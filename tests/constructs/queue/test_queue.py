"""What a ResilientQueue puts in the template, one behaviour per test."""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue
from tests.constructs.conftest import queue_properties, resources_of_type

FOURTEEN_DAYS = 14 * 24 * 3600
FOUR_DAYS = 4 * 24 * 3600


def test_standard_source_gets_standard_dlq_named_after_it(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    source = queue_properties(stack, "orders")
    dlq = queue_properties(stack, "orders-dlq")
    assert "FifoQueue" not in source
    assert "FifoQueue" not in dlq


def test_fifo_source_gets_fifo_dlq_named_with_suffix(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Payments", queue_name="payments", fifo=True)

    assert queue_properties(stack, "payments.fifo")["FifoQueue"] is True
    assert queue_properties(stack, "payments-dlq.fifo")["FifoQueue"] is True


def test_fifo_is_inferred_from_a_name_ending_in_fifo(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Payments", queue_name="payments.fifo")

    assert queue.fifo
    assert queue_properties(stack, "payments-dlq.fifo")["FifoQueue"] is True


def test_dlq_keeps_messages_fourteen_days_by_default(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    assert queue_properties(stack, "orders-dlq")["MessageRetentionPeriod"] == FOURTEEN_DAYS


def test_source_retention_is_passed_through(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders", retention_period=cdk.Duration.days(2))

    assert queue_properties(stack, "orders")["MessageRetentionPeriod"] == 2 * 24 * 3600


def test_redrive_policy_targets_the_dlq_with_five_receives_by_default(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")

    dlq_logical_id = stack.get_logical_id(queue.dead_letter_queue.node.default_child)  # type: ignore[arg-type]
    assert queue_properties(stack, "orders")["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_logical_id, "Arn"]},
        "maxReceiveCount": 5,
    }


def test_max_receive_count_is_passed_through(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders", max_receive_count=12)

    redrive = queue_properties(stack, "orders")["RedrivePolicy"]
    assert isinstance(redrive, dict)
    assert redrive["maxReceiveCount"] == 12


def test_redrive_allow_policy_names_only_the_source_without_referencing_it(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")

    allow = queue_properties(stack, "orders-dlq")["RedriveAllowPolicy"]
    assert isinstance(allow, dict)
    assert allow["redrivePermission"] == "byQueue"
    [source_arn] = allow["sourceQueueArns"]
    assert stack.resolve(source_arn) == stack.resolve(
        stack.format_arn(
            service="sqs", resource="orders", arn_format=cdk.ArnFormat.NO_RESOURCE_NAME
        )
    )
    # A reference to the source resource would close a cycle with its redrive policy.
    source_logical_id = stack.get_logical_id(queue.queue.node.default_child)  # type: ignore[arg-type]
    assert source_logical_id not in json.dumps(allow)


def test_both_queues_use_sse_sqs_by_default(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    for name in ("orders", "orders-dlq"):
        assert queue_properties(stack, name)["SqsManagedSseEnabled"] is True


def test_both_queues_use_the_one_kms_key_given(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key")
    ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)

    key_arn = {"Fn::GetAtt": [stack.get_logical_id(key.node.default_child), "Arn"]}  # type: ignore[arg-type]
    for name in ("orders", "orders-dlq"):
        properties = queue_properties(stack, name)
        assert properties["KmsMasterKeyId"] == key_arn
        assert "SqsManagedSseEnabled" not in properties


def test_both_queues_deny_requests_without_tls(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    policies = resources_of_type(stack, "AWS::SQS::QueuePolicy")
    denying = [
        p
        for p in policies.values()
        if any(
            statement["Effect"] == "Deny"
            and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for statement in p["Properties"]["PolicyDocument"]["Statement"]  # type: ignore[index]
        )
    ]
    assert len(denying) == 2


def test_fifo_options_are_passed_through(stack: cdk.Stack) -> None:
    ResilientQueue(
        stack,
        "Payments",
        queue_name="payments",
        fifo=True,
        content_based_deduplication=True,
        deduplication_scope=cdk.aws_sqs.DeduplicationScope.MESSAGE_GROUP,
        fifo_throughput_limit=cdk.aws_sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
    )

    source = queue_properties(stack, "payments.fifo")
    assert source["ContentBasedDeduplication"] is True
    assert source["DeduplicationScope"] == "messageGroup"
    assert source["FifoThroughputLimit"] == "perMessageGroupId"


def test_generated_names_are_deterministic_and_leave_room_for_suffixes() -> None:
    def generated_name() -> str:
        stack = cdk.Stack(cdk.App(), "AVeryLongStackNameThatKeepsGoingOnAndOnForTheSakeOfThisTest")
        return ResilientQueue(
            stack, "AnEquallyLongConstructIdForTheQueueUnderTest", fifo=True
        ).queue_name

    first, second = generated_name(), generated_name()
    assert first == second
    assert first.endswith(".fifo")
    assert len(first.removesuffix(".fifo")) + len("-dlq") + len(".fifo") <= 80


def test_alarm_actions_and_ok_actions_reach_every_alarm(stack: cdk.Stack) -> None:
    topic = sns.Topic(stack, "Topic")
    action = cloudwatch_actions.SnsAction(topic)
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", alarm_actions=[action], ok_actions=[action]
    )

    topic_ref = {"Ref": stack.get_logical_id(topic.node.default_child)}  # type: ignore[arg-type]
    alarms = resources_of_type(stack, "AWS::CloudWatch::Alarm")
    assert len(alarms) == len(list(queue.alarms)) == 4
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [topic_ref]  # type: ignore[index]
        assert alarm["Properties"]["OKActions"] == [topic_ref]  # type: ignore[index]
