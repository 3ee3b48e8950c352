"""Misuse of the API and Python's number semantics: each is our own error naming the prop, the
value and the fix, or documented behaviour that works."""

from __future__ import annotations

import math
import re

import aws_cdk as cdk
import constructs
import jsii
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ConfigurationError, ResilientQueue
from tests.constructs.conftest import FunctionFactory, resources_of_type, warnings_matching

S = cdk.Duration.seconds


def test_fails_when_the_same_function_is_added_twice(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    worker = make_function()
    queue.add_lambda_consumer(worker)

    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(worker, batch_size=5)

    [problem] = raised.value.problems
    assert problem.prop == "function"
    assert f"function=function {worker.node.id}: already consumes" in str(raised.value)
    assert "already consumes TestStack/Orders" in str(raised.value)
    assert len(resources_of_type(stack, "AWS::Lambda::EventSourceMapping")) == 1


def test_one_function_may_consume_two_queues(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    worker = make_function()
    ResilientQueue(stack, "Orders").add_lambda_consumer(worker)
    ResilientQueue(stack, "Refunds").add_lambda_consumer(worker)

    assert len(resources_of_type(stack, "AWS::Lambda::EventSourceMapping")) == 2


def test_fails_for_a_function_of_another_app(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    elsewhere = make_function(scope=cdk.Stack(cdk.App(), "Elsewhere"))

    with pytest.raises(
        ConfigurationError, match="belongs to another CDK app than TestStack/Orders"
    ):
        queue.add_lambda_consumer(elsewhere)


def test_a_function_in_another_stack_of_the_app_gets_the_mapping_in_its_stack(
    make_function: FunctionFactory,
) -> None:
    app = cdk.App()
    queue_stack, function_stack = cdk.Stack(app, "Queues"), cdk.Stack(app, "Functions")
    queue = ResilientQueue(queue_stack, "Orders", encryption_key=kms.Key(queue_stack, "Key"))
    queue.add_lambda_consumer(make_function(scope=function_stack))

    app.synth()  # no dependency cycle
    assert len(resources_of_type(function_stack, "AWS::Lambda::EventSourceMapping")) == 1
    assert not resources_of_type(queue_stack, "AWS::Lambda::EventSourceMapping")


def test_fails_for_a_function_in_another_account(make_function: FunctionFactory) -> None:
    app = cdk.App()
    here = cdk.Stack(app, "Here", env=cdk.Environment(account="111111111111", region="eu-west-1"))
    there = cdk.Stack(app, "There", env=cdk.Environment(account="222222222222", region="eu-west-1"))
    queue = ResilientQueue(here, "Orders")

    with pytest.raises(ConfigurationError, match="another environment than Here/Orders"):
        queue.add_lambda_consumer(make_function(scope=there))


def test_fails_for_a_dashboard_that_would_graph_a_function_of_another_stack(
    make_function: FunctionFactory,
) -> None:
    app = cdk.App()
    queue_stack, function_stack = cdk.Stack(app, "Queues"), cdk.Stack(app, "Functions")
    queue = ResilientQueue(queue_stack, "Orders")
    queue.add_lambda_consumer(make_function(scope=function_stack))

    with pytest.raises(
        ConfigurationError, match="would graph function Fn0 of stack Functions, another"
    ):
        queue.add_dashboard()


def test_fails_when_a_construct_id_is_taken(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")

    with pytest.raises(ConfigurationError, match="construct_id='Orders': is already the id of"):
        ResilientQueue(stack, "Orders", fifo=True)


def test_fails_when_add_dashboard_is_called_twice(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders")
    queue.add_dashboard("orders")

    with pytest.raises(ConfigurationError, match="was already called for TestStack/Orders"):
        queue.add_dashboard("orders-again")
    assert len(resources_of_type(stack, "AWS::CloudWatch::Dashboard")) == 1


@pytest.mark.parametrize("name", ["orders pipeline", "orders.pipeline", "d" * 256])
def test_fails_for_a_dashboard_name_cloudwatch_rejects(stack: cdk.Stack, name: str) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ConfigurationError, match="must be 1 to 255 characters"):
        queue.add_dashboard(name)


def test_fails_for_none_as_the_function(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(
        TypeError, match=re.escape("function=None: is None, not a lambda_.IFunction")
    ):
        queue.add_lambda_consumer(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        # A whole float in range is offered back as the int; another gets the prop's example.
        (7.0, "pass a whole number of receives as an int, e.g. max_receive_count=7"),
        (5.5, "pass a whole number of receives as an int, e.g. max_receive_count=5"),
        (0.0, "pass a whole number of receives as an int, e.g. max_receive_count=5"),
    ],
)
def test_a_float_where_aws_counts_whole_units_is_refused_not_rounded(
    stack: cdk.Stack, value: float, fix: str
) -> None:
    with pytest.raises(TypeError) as raised:
        ResilientQueue(stack, "Orders", max_receive_count=value)  # type: ignore[arg-type]
    assert "a float is refused, not rounded" in str(raised.value)
    assert f"Fix: {fix}" in str(raised.value)


def test_a_bool_is_not_a_number(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(TypeError, match=re.escape("batch_size=True: is a bool, not a number")):
        queue.add_lambda_consumer(make_function(), batch_size=True)


def test_a_string_is_never_a_number(stack: cdk.Stack) -> None:
    with pytest.raises(TypeError, match=re.escape("max_receive_count='5': is a str, not a number")):
        ResilientQueue(stack, "Orders", max_receive_count="5")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "duration", [cdk.Duration.millis(1500), cdk.Duration.millis(59_999), cdk.Duration.minutes(0.01)]
)
def test_a_duration_of_a_fraction_of_a_second_is_refused(
    stack: cdk.Stack, duration: cdk.Duration
) -> None:
    with pytest.raises(
        ConfigurationError, match="AWS counts visibility_timeout in whole seconds"
    ) as raised:
        ResilientQueue(stack, "Orders", visibility_timeout=duration)
    assert [p.prop for p in raised.value.problems] == ["visibility_timeout"]
    assert "fractions are refused, not rounded" in str(raised.value)


def test_a_duration_of_whole_seconds_in_other_units_is_accepted(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", visibility_timeout=cdk.Duration.minutes(0.5))
    assert queue.visibility_timeout == 30


def test_a_string_where_a_key_belongs_is_named(stack: cdk.Stack) -> None:
    with pytest.raises(TypeError) as raised:
        ResilientQueue(stack, "Orders", encryption_key="alias/orders")  # type: ignore[arg-type]
    assert "encryption_key='alias/orders': is a str, not a kms.IKey" in str(raised.value)


def test_a_construct_of_another_type_is_named_by_its_path(stack: cdk.Stack) -> None:
    topic = sns.Topic(stack, "Topic")
    with pytest.raises(TypeError) as raised:
        ResilientQueue(stack, "Orders", encryption_key=topic)  # type: ignore[arg-type]
    assert "is an aws_cdk.aws_sns.Topic (TestStack/Topic), not a kms.IKey" in str(raised.value)


def test_an_imported_key_is_a_key(stack: cdk.Stack) -> None:
    key = kms.Key.from_key_arn(
        stack, "Imported", "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef"
    )
    ResilientQueue(stack, "Orders", encryption_key=key)


def test_a_single_alarm_action_where_a_sequence_belongs_is_named(stack: cdk.Stack) -> None:
    action = cloudwatch_actions.SnsAction(sns.Topic(stack, "Topic"))
    with pytest.raises(TypeError, match=r"is a single cloudwatch\.IAlarmAction, where a sequence"):
        ResilientQueue(stack, "Orders", alarm_actions=action)  # type: ignore[arg-type]


@pytest.mark.parametrize("prop", ["max_receive_count", "in_flight_alarm_threshold"])
def test_number_tokens_are_accepted_and_warned_about(stack: cdk.Stack, prop: str) -> None:
    token = cdk.CfnParameter(stack, "Number", type="Number").value_as_number
    ResilientQueue(stack, "Orders", **{prop: token})
    assert warnings_matching(stack, f"{prop} is a token")


def test_a_batch_size_token_is_accepted(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    token = cdk.CfnParameter(stack, "Batch", type="Number").value_as_number
    ResilientQueue(stack, "Orders").add_lambda_consumer(make_function(), batch_size=token)  # type: ignore[arg-type]
    assert warnings_matching(stack, "batch_size is a token")


def test_fails_for_an_imported_function_whose_timeout_is_a_token(stack: cdk.Stack) -> None:
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:eu-west-1:123456789012:function:worker"
    )
    timeout = cdk.CfnParameter(stack, "Timeout", type="Number").value_as_number
    with pytest.raises(ConfigurationError, match="function_timeout=None: is an unresolved token"):
        ResilientQueue(stack, "Orders").add_lambda_consumer(
            imported, function_timeout=cdk.Duration.seconds(timeout)
        )


def test_a_factor_token_cannot_be_computed_with(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    token = cdk.CfnParameter(stack, "Factor", type="Number").value_as_number
    with pytest.raises(ConfigurationError, match="must be known at synth"):
        ResilientQueue(stack, "Orders").add_lambda_consumer(
            make_function(), visibility_timeout_factor=token
        )


def test_nan_is_refused_where_a_whole_number_belongs(stack: cdk.Stack) -> None:
    with pytest.raises(TypeError, match="a float is refused"):
        ResilientQueue(stack, "Orders", in_flight_alarm_threshold=math.nan)  # type: ignore[arg-type]


def test_an_alarm_action_written_in_python_is_an_alarm_action(stack: cdk.Stack) -> None:
    @jsii.implements(cloudwatch.IAlarmAction)
    class PageOnCall:
        def bind(
            self, scope: constructs.Construct, alarm: cloudwatch.IAlarm
        ) -> cloudwatch.AlarmActionConfig:
            return cloudwatch.AlarmActionConfig(
                alarm_action_arn="arn:aws:sns:eu-west-1:123456789012:on-call"
            )

    ResilientQueue(stack, "Orders", alarm_actions=[PageOnCall()])

    for alarm in resources_of_type(stack, "AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [  # type: ignore[index]
            "arn:aws:sns:eu-west-1:123456789012:on-call"
        ]


def test_an_object_that_only_looks_like_an_alarm_action_is_refused(stack: cdk.Stack) -> None:
    class LooksLikeAnAction:
        def bind(self, scope: object, alarm: object) -> None:
            return None

    with pytest.raises(TypeError, match=r"alarm_actions=\[.*holds at \[0\] a value that is"):
        ResilientQueue(stack, "Orders", alarm_actions=[LooksLikeAnAction()])  # type: ignore[list-item]
