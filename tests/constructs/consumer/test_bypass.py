"""Event source mappings on a ResilientQueue's source added without add_lambda_consumer are
consumers too: the visibility timeout covers them, or the synth fails naming the fix."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs

from constructs_lib import ResilientQueue
from tests.constructs.conftest import FunctionFactory, queue_properties

S = cdk.Duration.seconds


def synth(stack: cdk.Stack) -> cdk.cx_api.CloudAssembly:
    return cdk.Stage.of(stack).synth()  # type: ignore[union-attr]


def test_add_event_source_with_a_60_s_function_derives_the_visibility_timeout(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    make_function(60).add_event_source(event_sources.SqsEventSource(orders.queue))
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 360  # 6 x 60 s


def test_a_bypassing_batching_window_counts(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    make_function(60).add_event_source(
        event_sources.SqsEventSource(orders.queue, batch_size=100, max_batching_window=S(20))
    )
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 380  # 6 x 60 s + 20 s


def test_the_largest_of_own_and_bypassing_consumers_wins(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    orders.add_lambda_consumer(make_function(100))
    make_function(60).add_event_source(event_sources.SqsEventSource(orders.queue))
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 600  # the consumer's 6 x 100


def test_an_event_source_mapping_written_directly_is_seen(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    lambda_.EventSourceMapping(
        stack, "Direct", target=make_function(45), event_source_arn=orders.queue.queue_arn
    )
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 270


def test_a_mapping_whose_arn_is_written_another_way_is_seen(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    arn = cdk.Fn.get_att(stack.get_logical_id(orders.queue.node.default_child), "Arn")
    lambda_.EventSourceMapping(
        stack, "Direct", target=make_function(45), event_source_arn=arn.to_string()
    )
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 270


def test_each_queue_covers_only_the_mappings_on_itself(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # The app's mappings are read once for every queue; each queue takes its own from them.
    for index, seconds in enumerate((30, 70, 110)):
        queue = ResilientQueue(stack, f"Queue{index}", queue_name=f"queue-{index}")
        make_function(seconds).add_event_source(event_sources.SqsEventSource(queue.queue))
    synth(stack)
    assert [
        queue_properties(stack, f"queue-{index}")["VisibilityTimeout"] for index in range(3)
    ] == [180, 420, 660]


def test_a_mapping_added_after_a_synth_is_seen_at_the_next(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    orders.add_lambda_consumer(make_function(10))
    synth(stack)
    make_function(60).add_event_source(event_sources.SqsEventSource(orders.queue))
    cdk.Stage.of(stack).synth(force=True)  # type: ignore[union-attr]
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 360


def test_a_mapping_without_an_event_source_arn_is_not_a_consumer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # A self-managed Kafka source names brokers, not an ARN: it reads no queue.
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    orders.add_lambda_consumer(make_function(10))
    lambda_.EventSourceMapping(
        stack,
        "Kafka",
        target=make_function(100),
        kafka_bootstrap_servers=["b-1.example.com:9092"],
        kafka_topic="orders",
        starting_position=lambda_.StartingPosition.TRIM_HORIZON,
    )
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 60  # the consumer's 6 x 10


def test_a_mapping_in_another_stack_is_seen(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    other = cdk.Stack(stack.node.scope, "Workers")  # type: ignore[arg-type]
    make_function(60, scope=other).add_event_source(event_sources.SqsEventSource(orders.queue))
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 360


def test_fails_when_the_bypassing_function_timeout_is_unknown(stack: cdk.Stack) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:eu-west-1:111111111111:function:worker"
    )
    lambda_.EventSourceMapping(
        stack, "Direct", target=imported, event_source_arn=orders.queue.queue_arn
    )
    with pytest.raises(
        RuntimeError, match=r"(?s)Orders.*timeout cannot be read.*add_lambda_consumer"
    ):
        synth(stack)


def test_fails_when_an_explicit_visibility_timeout_is_below_the_bypassing_need(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders", visibility_timeout=S(300))
    make_function(60).add_event_source(event_sources.SqsEventSource(orders.queue))
    with pytest.raises(
        RuntimeError, match=r"(?s)visibility_timeout=300: is below the 360 s.*add_lambda_consumer"
    ):
        synth(stack)


def test_an_explicit_visibility_timeout_at_the_need_is_kept(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders", visibility_timeout=S(400))
    make_function(60).add_event_source(event_sources.SqsEventSource(orders.queue))
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 400


def test_an_imported_queue_is_not_affected(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")
    other = sqs.Queue.from_queue_arn(stack, "Other", "arn:aws:sqs:eu-west-1:111111111111:other")
    make_function(60).add_event_source(event_sources.SqsEventSource(other))
    synth(stack)
    assert "VisibilityTimeout" not in queue_properties(stack, "orders")


def test_add_lambda_consumer_alone_is_unchanged(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", queue_name="orders")
    orders.add_lambda_consumer(make_function(60), max_batching_window=S(5))
    synth(stack)
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 365
    assert orders.visibility_timeout == 365
