"""add_lambda_consumer: the event source, the derived visibility timeout, the consumer's IAM."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ResilientQueue
from tests.constructs.conftest import FunctionFactory, queue_properties, resources_of_type


def only_mapping(stack: cdk.Stack) -> dict[str, object]:
    [mapping] = resources_of_type(stack, "AWS::Lambda::EventSourceMapping").values()
    properties = mapping["Properties"]
    assert isinstance(properties, dict)
    return properties


def test_visibility_timeout_is_six_times_the_function_timeout(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(timeout_seconds=30))

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 6 * 30
    assert queue.visibility_timeout == 180


def test_visibility_timeout_adds_the_batching_window(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        make_function(timeout_seconds=30),
        batch_size=50,
        max_batching_window=cdk.Duration.seconds(20),
    )

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 6 * 30 + 20


def test_a_function_without_timeout_counts_as_lambdas_three_second_default(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(timeout_seconds=None))

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 6 * 3


def test_the_largest_consumer_sets_the_visibility_timeout(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(timeout_seconds=10))
    queue.add_lambda_consumer(make_function(timeout_seconds=60))
    queue.add_lambda_consumer(make_function(timeout_seconds=20))

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 6 * 60


def test_custom_factor_is_applied(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(timeout_seconds=100), visibility_timeout_factor=2.5)

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 250


def test_an_explicit_visibility_timeout_above_the_derived_one_is_kept(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", visibility_timeout=cdk.Duration.minutes(10)
    )
    queue.add_lambda_consumer(make_function(timeout_seconds=30))

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 600


def test_an_imported_function_uses_the_timeout_it_is_given(stack: cdk.Stack) -> None:
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:us-east-1:123456789012:function:worker"
    )
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(imported, function_timeout=cdk.Duration.seconds(45))

    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 6 * 45
    assert only_mapping(stack)["FunctionName"] == "worker"


def test_event_source_reports_batch_item_failures_by_default(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    mapping = only_mapping(stack)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BatchSize"] == 10
    assert mapping["EventSourceArn"] == {
        "Fn::GetAtt": [stack.get_logical_id(queue.queue.node.default_child), "Arn"]  # type: ignore[arg-type]
    }


def test_batch_item_failure_reporting_can_be_turned_off(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(), report_batch_item_failures=False)

    assert "FunctionResponseTypes" not in only_mapping(stack)


def test_batching_and_scaling_settings_are_passed_through(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        make_function(),
        batch_size=500,
        max_batching_window=cdk.Duration.seconds(30),
        max_concurrency=50,
        filters=[
            lambda_.FilterCriteria.filter({"body": {"kind": lambda_.FilterRule.is_equal("order")}})
        ],
    )

    mapping = only_mapping(stack)
    assert mapping["BatchSize"] == 500
    assert mapping["MaximumBatchingWindowInSeconds"] == 30
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": 50}
    assert mapping["FilterCriteria"] == {"Filters": [{"Pattern": '{"body":{"kind":["order"]}}'}]}


def consumer_statements(stack: cdk.Stack) -> list[dict[str, object]]:
    """Every statement of the stack's IAM policies, actions sorted (their order means nothing)."""
    statements: list[dict[str, object]] = []
    for policy in resources_of_type(stack, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:  # type: ignore[index]
            actions = statement["Action"]
            statement["Action"] = sorted(actions) if isinstance(actions, list) else actions
            statements.append(statement)
    return statements


def test_consumer_may_only_consume_from_its_queue(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    queue_arn = {"Fn::GetAtt": [stack.get_logical_id(queue.queue.node.default_child), "Arn"]}  # type: ignore[arg-type]
    assert consumer_statements(stack) == [
        {
            "Action": [
                "sqs:ChangeMessageVisibility",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
                "sqs:GetQueueUrl",
                "sqs:ReceiveMessage",
            ],
            "Effect": "Allow",
            "Resource": queue_arn,
        }
    ]


def test_consumer_may_decrypt_with_the_queues_key_and_nothing_more(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    key = kms.Key(stack, "Key")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)
    queue.add_lambda_consumer(make_function())

    key_statements = [s for s in consumer_statements(stack) if "kms" in str(s["Action"])]
    # Only through SQS (kms:ViaService): the key may protect more than the queue.
    assert key_statements == [
        {
            "Action": "kms:Decrypt",
            "Condition": {
                "StringEquals": {
                    "kms:ViaService": {
                        "Fn::Join": ["", ["sqs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]
                    }
                }
            },
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [stack.get_logical_id(key.node.default_child), "Arn"]},  # type: ignore[arg-type]
        }
    ]


def test_consumer_gets_no_permission_on_the_dlq(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    dlq_id = stack.get_logical_id(queue.dead_letter_queue.node.default_child)  # type: ignore[arg-type]
    assert dlq_id not in str(consumer_statements(stack))
