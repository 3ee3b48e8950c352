"""The messages a user follows: every problem of a call in one error, each naming the value as
given, and fixes that agree with one another."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ConfigurationError, ParameterTypeError, ResilientQueue, RetryBackoff
from tests.constructs.conftest import FunctionFactory

S = cdk.Duration.seconds
IMPORTED_ARN = "arn:aws:lambda:us-east-1:123456789012:function:worker"


def test_wrong_kinds_and_a_value_out_of_range_are_listed_together(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(
            stack,
            "Orders",
            fifo="yes",  # type: ignore[arg-type]
            max_receive_count="5",  # type: ignore[arg-type]
            retention_period=4,  # type: ignore[arg-type]
            max_message_size=10,
        )

    error = raised.value
    assert isinstance(error, ParameterTypeError)  # and so a TypeError too
    assert isinstance(error, TypeError)
    assert [(p.prop, p.wrong_kind) for p in error.problems] == [
        ("fifo", True),
        ("max_receive_count", True),
        ("retention_period", True),
        ("max_message_size", False),
    ]
    message = str(error)
    assert message.startswith(
        "TestStack/Orders: 4 configuration problems, 3 of them arguments of the wrong type:"
    )
    assert (
        "  - max_message_size=10: must be between 1024 and 1048576 bytes. Fix: choose a size "
        "from 1024 to 1048576 bytes (or leave it unset for SQS's default of 1 MiB), e.g. "
        "max_message_size=262144"
    ) in message


def test_wrong_kinds_and_rules_between_props_are_listed_together(stack: cdk.Stack) -> None:
    # A wrong kind does not hide the rules the other props break.
    with pytest.raises(ParameterTypeError) as raised:
        ResilientQueue(
            stack,
            "Orders",
            fifo="no",  # type: ignore[arg-type]
            retention_period=cdk.Duration.days(14),
        )
    props = [p.prop for p in raised.value.problems]
    assert props == ["fifo", "retention_period"]
    assert "must be shorter than dead_letter_retention_period" in str(raised.value)


def test_a_taken_construct_id_comes_with_the_other_problems(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", max_receive_count=0)
    assert not isinstance(raised.value, TypeError)
    assert [p.prop for p in raised.value.problems] == ["construct_id", "max_receive_count"]


def test_a_consumer_call_lists_wrong_kinds_ranges_and_batching_together(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ParameterTypeError) as raised:
        queue.add_lambda_consumer(
            make_function(),
            batch_size=100,
            max_batching_window=5,  # type: ignore[arg-type]
            enabled="no",  # type: ignore[arg-type]
            max_concurrency=1,
        )
    problems = {p.prop: p for p in raised.value.problems}
    assert list(problems) == ["max_batching_window", "max_concurrency", "enabled"]
    assert problems["max_batching_window"].wrong_kind
    assert not problems["max_concurrency"].wrong_kind
    assert "must be between 2 and 1000" in problems["max_concurrency"].rule
    # The window is of the wrong kind, so whether batch_size=100 has one is not judged.


def test_a_retry_backoff_field_of_the_wrong_kind_comes_with_the_calls_ranges(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ParameterTypeError) as raised:
        queue.add_lambda_consumer(
            make_function(),
            max_concurrency=1001,
            retry_backoff=RetryBackoff(base="10", jitter=2),  # type: ignore[arg-type]
        )
    assert [(p.prop, p.wrong_kind) for p in raised.value.problems] == [
        ("max_concurrency", False),
        ("retry_backoff.base", True),
        ("retry_backoff.jitter", False),
    ]


def test_a_factor_too_large_is_named_as_given_with_the_largest_that_fits(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(stack, "Orders")
    imported = lambda_.Function.from_function_arn(stack, "Imported", IMPORTED_ARN)
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(
            imported, function_timeout=cdk.Duration.minutes(15), visibility_timeout_factor=60
        )
    [problem] = raised.value.problems
    assert problem.prop == "visibility_timeout_factor"
    assert problem.value == 60
    assert (
        "visibility_timeout_factor=60: gives a visibility timeout of 54000 s (60 x function "
        "timeout 900 s + batching window 0 s), above SQS's maximum of 43200 s"
    ) in str(raised.value)
    assert "e.g. visibility_timeout_factor=48" in problem.fix  # 48 x 900 s = 43,200 s


def test_half_a_second_of_window_with_a_large_batch_is_one_problem(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # Lambda counts the window in whole seconds and needs at least 1 s above 10 records: the
    # one fix that satisfies both is a window of 1 s, and it is the only one offered.
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(
            make_function(), batch_size=100, max_batching_window=cdk.Duration.millis(500)
        )
    [problem] = raised.value.problems
    assert problem.prop == "max_batching_window"
    assert (
        "max_batching_window=Duration(500 millis): is 0.5 s, but AWS counts "
        "max_batching_window in whole seconds (0-300 s)"
    ) in str(raised.value)
    assert problem.fix.startswith("pass max_batching_window=Duration.seconds(1)")


def test_a_fraction_rounds_up_to_the_step_of_the_prop(stack: cdk.Stack) -> None:
    # expected_traffic is an alarm period: whole minutes, so the fix offers one.
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", expected_traffic=cdk.Duration.millis(90_500))
    fixes = [p.fix for p in raised.value.problems if p.prop == "expected_traffic"]
    assert fixes[0].startswith("pass expected_traffic=Duration.seconds(120)")


def test_a_retention_out_of_range_is_one_problem_not_two(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", retention_period=cdk.Duration.days(15))
    assert len(raised.value.problems) == 1
    assert str(raised.value).endswith(
        "retention_period=Duration(15 days): is 1296000 s, but must be between 60 and 1209600 "
        "seconds. Fix: choose a retention period within SQS's range, e.g. "
        "retention_period=Duration.days(4)"
    )


def test_a_string_for_a_duration_offers_a_valid_duration(stack: cdk.Stack) -> None:
    with pytest.raises(TypeError) as raised:
        ResilientQueue(stack, "Orders", retention_period="4 days")  # type: ignore[arg-type]
    [problem] = raised.value.problems  # type: ignore[attr-defined]
    assert "e.g. retention_period=Duration.days(4)" in problem.fix
    assert "Duration.seconds(30)" not in problem.fix


@pytest.mark.parametrize(("prop", "fifo"), [("content_based_deduplication", False), ("fair", True)])
def test_a_prop_of_the_wrong_kind_that_the_queue_type_refuses_is_to_be_removed(
    stack: cdk.Stack, prop: str, fifo: bool
) -> None:
    with pytest.raises(ParameterTypeError) as raised:
        ResilientQueue(stack, "Orders", fifo=fifo, **{prop: "yes"})
    [problem] = raised.value.problems
    assert problem.fix.startswith("remove it: it applies only to")
    assert f"{prop}=True" not in problem.fix


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"body": {"kind": ["order"]}}, "is a raw event pattern, not a filter made of one"),
        ("body", "is a str, not a filter"),
    ],
)
def test_a_filter_not_made_by_filter_criteria_is_refused_before_cloudformation_sees_it(
    stack: cdk.Stack, make_function: FunctionFactory, item: object, reason: str
) -> None:
    # A raw pattern would reach the template as a filter without a Pattern.
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ParameterTypeError) as raised:
        queue.add_lambda_consumer(make_function(), filters=[item])  # type: ignore[list-item]
    message = str(raised.value)
    assert f"holds at [0] a value that {reason}" in message
    assert "Fix: pass filters=[lambda_.FilterCriteria.filter(" in message


def test_a_list_item_of_the_wrong_kind_gets_a_fix_in_list_form(stack: cdk.Stack) -> None:
    topic = sns.Topic(stack, "Alerts")
    with pytest.raises(ParameterTypeError) as raised:
        ResilientQueue(stack, "Orders", alarm_actions=[topic])  # type: ignore[list-item]
    message = str(raised.value)
    assert "alarm_actions=[<aws_cdk.aws_sns.Topic TestStack/Alerts>]: holds at [0]" in message
    assert "Fix: pass alarm_actions=[cloudwatch_actions.SnsAction(topic), ...]" in message


def test_a_scope_outside_any_stack_is_our_error_not_cdks(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack.node.root, "Orders")  # type: ignore[arg-type]
    [problem] = raised.value.problems
    assert problem.prop == "scope"
    assert "outside any Stack" in problem.rule


def test_an_empty_construct_id_is_our_error_not_cdks(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError, match="construct_id='': is empty"):
        ResilientQueue(stack, "")


def test_a_token_factor_is_shown_as_its_token(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    factor = cdk.CfnParameter(stack, "Factor", type="Number").value_as_number
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(make_function(), visibility_timeout_factor=factor)
    assert "visibility_timeout_factor='${Token[" in str(raised.value)
    assert "e.g. visibility_timeout_factor=6" in str(raised.value)
