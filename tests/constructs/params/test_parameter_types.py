"""Every parameter of the public API, given a value of every wrong kind, fails with our own
TypeError naming it, raised by this package before jsii sees the value.

What each parameter accepts is written here from the documented signatures, independently of the
library's table; the first test keeps the two lists of names equal, so a new parameter cannot
escape this property."""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable
from functools import cache
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from hypothesis import given, settings
from hypothesis import strategies as st

from constructs_lib import (
    ConfigurationError,
    LargePayloads,
    ParameterTypeError,
    ResilientQueue,
    RetryBackoff,
)
from constructs_lib.checks import QueueResilienceChecks
from constructs_lib.params import prop_tables

# Kinds of value a caller may pass by mistake. "construct" is a construct of a type no
# parameter asks for (an SNS topic); "list" holds numbers, which no list parameter takes.
WRONG_KINDS = ("bool", "int", "float", "str", "none", "list", "duration", "construct")

# What each parameter accepts among those kinds, as documented (README, docstrings).
ACCEPTS: dict[str, dict[str, set[str]]] = {
    "ResilientQueue": {
        "scope": {"construct"},
        "construct_id": {"str"},
        "fifo": {"bool", "none"},
        "queue_name": {"str", "none"},
        "max_receive_count": {"int"},
        "retention_period": {"duration", "none"},
        "dead_letter_retention_period": {"duration", "none"},
        "visibility_timeout": {"duration", "none"},
        "max_message_size": {"int", "none"},
        "encryption_key": {"none"},
        "content_based_deduplication": {"bool", "none"},
        "deduplication_scope": {"none"},
        "fifo_throughput_limit": {"none"},
        "dead_letter_queue": {"none"},
        "alarm_actions": set(),
        "ok_actions": set(),
        "critical_actions": {"none"},
        "warning_actions": {"none"},
        "composite_alarm": {"bool"},
        "in_flight_alarm_threshold": {"int", "none"},
        "removal_policy": {"none"},
        "expected_traffic": {"duration", "none"},
        "fair": {"bool"},
        "existing": {"none"},
        "large_payloads": {"none"},
    },
    "add_lambda_consumer": {
        "function": set(),
        "batch_size": {"int"},
        "max_batching_window": {"duration", "none"},
        "max_concurrency": {"int", "none"},
        "report_batch_item_failures": {"bool"},
        # Any float is a number here: NaN and infinities are wrong values, tested below.
        "visibility_timeout_factor": {"int", "float"},
        "function_timeout": {"duration", "none"},
        "enabled": {"bool"},
        "filters": {"none"},
        "event_source_metrics": {"bool"},
        # A tuple (minimum, maximum): a list, even of two ints, is refused (tested below).
        "provisioned_pollers": {"none"},
        "retry_backoff": {"none"},
    },
    # The fields of add_lambda_consumer's retry_backoff, named retry_backoff.<field>.
    "RetryBackoff": {
        "base": {"duration"},
        "factor": {"int", "float"},
        "cap": {"duration"},
        "jitter": {"int", "float"},
        "layer": {"bool"},
    },
    # The fields of ResilientQueue's large_payloads, named large_payloads.<field>.
    "LargePayloads": {
        "bucket": {"none"},
        "consumers_delete": {"bool"},
        "margin_days": {"int"},
        "layer": {"bool"},
    },
    "add_dead_letter_consumer": {
        "function": set(),
        "batch_size": {"int"},
        "max_batching_window": {"duration", "none"},
        "max_concurrency": {"int", "none"},
        "report_batch_item_failures": {"bool"},
        "visibility_timeout_factor": {"int", "float"},
        "function_timeout": {"duration", "none"},
        "event_source_metrics": {"bool"},
        "provisioned_pollers": {"none"},
    },
    "add_dashboard": {"dashboard_name": {"str", "none"}},
    "grant_redrive": {"grantee": set()},
    # "construct" is an SNS topic: a source.
    "add_producer": {
        "source": {"construct"},
        "s3_events": set(),
        "s3_filters": set(),
        "raw_message_delivery": {"bool"},
        "message_group_id": {"str", "none"},
    },
    # Another string is a wrong value (ConfigurationError), tested below.
    "QueueResilienceChecks": {"fail_on": {"str"}, "profile": {"str"}},
}
TABLES = {table.call: table for table in prop_tables.TABLES}

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True)


def test_every_parameter_of_the_api_is_described_here() -> None:
    assert {call: list(accepts) for call, accepts in ACCEPTS.items()} == {
        call: list(table.names) for call, table in TABLES.items()
    }


@cache
def world() -> tuple[cdk.Stack, ResilientQueue, lambda_.Function, sns.Topic]:
    """One app for every example: a wrong kind fails before anything joins the tree."""
    stack = cdk.Stack(cdk.App(), "TypeStack")
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
    )
    return stack, ResilientQueue(stack, "Orders"), function, sns.Topic(stack, "Topic")


def wrong_values(kind: str) -> st.SearchStrategy[Callable[[], object]]:
    """Values of one kind, as factories (constructs and durations are made when used)."""
    plain: st.SearchStrategy[object]
    if kind == "bool":
        plain = st.booleans()
    elif kind == "int":
        plain = st.integers(-(10**6), 10**6)
    elif kind == "float":
        plain = st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-1000, 1000).map(float),  # integral floats are floats too
            st.sampled_from([math.nan, math.inf, -math.inf]),
        )
    elif kind == "str":
        plain = st.one_of(st.text(max_size=8), st.integers(0, 1000).map(str))
    elif kind == "none":
        plain = st.none()
    elif kind == "list":
        plain = st.lists(st.integers(0, 10), min_size=1, max_size=3)
    elif kind == "duration":
        return st.integers(0, 3600).map(lambda n: lambda: cdk.Duration.seconds(n))
    else:
        return st.just(lambda: world()[3])
    return plain.map(lambda value: lambda: value)


def call(table: str, name: str, value: object) -> None:
    """The call of ``table`` with valid arguments but ``name=value``."""
    stack, queue, function, _ = world()
    arguments: dict[str, Any]
    if table == "ResilientQueue":
        arguments = {"scope": stack, "construct_id": "Wrong", name: value}
        ResilientQueue(**arguments)
    elif table == "add_lambda_consumer":
        arguments = {"function": function, name: value}
        queue.add_lambda_consumer(**arguments)
    elif table == "RetryBackoff":
        queue.add_lambda_consumer(function, retry_backoff=RetryBackoff(**{name: value}))
    elif table == "LargePayloads":
        ResilientQueue(stack, "Wrong", large_payloads=LargePayloads(**{name: value}))
    elif table == "add_dead_letter_consumer":
        arguments = {"function": function, name: value}
        queue.add_dead_letter_consumer(**arguments)
    elif table == "add_dashboard":
        queue.add_dashboard(**{name: value})
    elif table == "grant_redrive":
        queue.grant_redrive(**{name: value})
    elif table == "add_producer":
        queue.add_producer(**{"source": world()[3], name: value})
    else:
        QueueResilienceChecks(**{name: value})


def raised_in(error: BaseException) -> str:
    """The module of the frame that raised ``error``."""
    *_, last = traceback.walk_tb(error.__traceback__)
    return str(last[0].f_globals["__name__"])


CASES = [
    pytest.param(table, name, kind, id=f"{table}.{name}-{kind}")
    for table, accepts in ACCEPTS.items()
    for name, kinds in accepts.items()
    for kind in WRONG_KINDS
    if kind not in kinds
]


@pytest.mark.parametrize(("table", "name", "kind"), CASES)
@SETTINGS
@given(data=st.data())
def test_a_value_of_the_wrong_kind_is_our_type_error(
    table: str, name: str, kind: str, data: st.DataObject
) -> None:
    value = data.draw(wrong_values(kind))()

    with pytest.raises(TypeError) as raised:
        call(table, name, value)

    assert isinstance(raised.value, ParameterTypeError)
    # One error for every problem of the call: a ConfigurationError as well as a TypeError.
    assert isinstance(raised.value, ConfigurationError)
    assert any(p.wrong_kind for p in raised.value.problems)
    prefixes = {"RetryBackoff": "retry_backoff.", "LargePayloads": "large_payloads."}
    shown = f"{prefixes.get(table, '')}{name}"
    assert f"  - {shown}=" in str(raised.value)
    assert "Fix: " in str(raised.value)
    assert raised_in(raised.value).startswith("constructs_lib.")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_factor_that_is_not_finite_is_a_configuration_error(value: float) -> None:
    with pytest.raises(ConfigurationError, match="NaN and infinities are refused") as raised:
        call("add_lambda_consumer", "visibility_timeout_factor", value)
    assert [p.prop for p in raised.value.problems] == ["visibility_timeout_factor"]


@SETTINGS
@given(profile=st.text(max_size=12).filter(lambda s: s not in {"recommended", "all"}))
def test_an_unknown_profile_is_a_configuration_error(profile: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        QueueResilienceChecks(profile=profile)
    assert [p.prop for p in raised.value.problems] == ["profile"]


@SETTINGS
@given(fail_on=st.text(max_size=8).filter(lambda s: s not in {"error", "warning", "info", "never"}))
def test_an_unknown_fail_on_is_a_configuration_error(fail_on: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        QueueResilienceChecks(fail_on=fail_on)
    assert [p.prop for p in raised.value.problems] == ["fail_on"]
    assert raised_in(raised.value).startswith("constructs_lib.")


def test_every_wrong_argument_of_one_call_is_listed_at_once() -> None:
    stack, *_ = world()
    with pytest.raises(TypeError) as raised:
        ResilientQueue(stack, "Many", fifo="yes", max_receive_count=5.0, retention_period=300)  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith("TypeStack/Many: 3 arguments of the wrong type:")
    assert isinstance(raised.value, ConfigurationError)
    for name in ("fifo", "max_receive_count", "retention_period"):
        assert f"  - {name}=" in message


@pytest.mark.parametrize("table", ["add_lambda_consumer", "add_dead_letter_consumer"])
@pytest.mark.parametrize(
    "value",
    [
        pytest.param([2, 20], id="list"),
        pytest.param((2,), id="one-item"),
        pytest.param((2, 20, 30), id="three-items"),
        pytest.param((2.0, 20), id="float-minimum"),
        pytest.param((2, True), id="bool-maximum"),
        pytest.param(("2", "20"), id="strings"),
        pytest.param(20, id="int"),
    ],
)
def test_provisioned_pollers_must_be_a_tuple_of_two_ints(table: str, value: object) -> None:
    with pytest.raises(ParameterTypeError) as raised:
        call(table, "provisioned_pollers", value)

    [problem] = raised.value.problems
    assert problem.prop == "provisioned_pollers"
    assert "Fix: pass provisioned_pollers=(2, 20)" in str(raised.value)
    assert raised_in(raised.value).startswith("constructs_lib.")
