"""Every limit of the props, just below, at and just above, and the error text users read."""

from __future__ import annotations

import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from constructs_lib import ConfigurationError, ResilientQueue
from tests.constructs.conftest import FunctionFactory, warnings_matching

DAY = 24 * 3600
FOURTEEN_DAYS = 14 * DAY
S = cdk.Duration.seconds


def case(expected: str | None, *, id: str, **props: Any) -> Any:
    """One construction of a ResilientQueue; ``expected`` is text the error must contain."""
    return pytest.param(props, expected, id=id)


QUEUE_CASES = [
    # Source retention: 60 s to 14 days (FIFO, so the DLQ-longer rule stays out of the way).
    case("must be between 60 and 1209600", id="retention-59s", fifo=True, retention_period=S(59)),
    case(None, id="retention-60s", fifo=True, retention_period=S(60)),
    case(None, id="retention-14d", fifo=True, retention_period=S(FOURTEEN_DAYS)),
    case(
        "must be between 60 and 1209600",
        id="retention-14d+1s",
        fifo=True,
        retention_period=S(FOURTEEN_DAYS + 1),
    ),
    case(
        "must be between 60 and 1209600",
        id="dlq-retention-59s",
        fifo=True,
        dead_letter_retention_period=S(59),
    ),
    case(
        None,
        id="dlq-retention-60s",
        fifo=True,
        dead_letter_retention_period=S(60),
        retention_period=S(60),
    ),
    case(
        "must be between 60 and 1209600",
        id="dlq-retention-14d+1s",
        dead_letter_retention_period=S(FOURTEEN_DAYS + 1),
    ),
    # Standard source retention must stay below the DLQ's.
    case(None, id="standard-source-below-dlq", retention_period=S(FOURTEEN_DAYS - 1)),
    case(
        "must be shorter than dead_letter_retention_period",
        id="standard-source-equals-dlq",
        retention_period=S(FOURTEEN_DAYS),
    ),
    case(
        "must be shorter than dead_letter_retention_period",
        id="standard-source-above-dlq",
        retention_period=S(2 * DAY),
        dead_letter_retention_period=S(DAY),
    ),
    case(None, id="fifo-source-equals-dlq", fifo=True, retention_period=S(FOURTEEN_DAYS)),
    # maxReceiveCount: 1 to 1,000.
    case("must be between 1 and 1000", id="receives-0", max_receive_count=0),
    case(None, id="receives-1", max_receive_count=1),
    case(None, id="receives-1000", max_receive_count=1000),
    case("must be between 1 and 1000", id="receives-1001", max_receive_count=1001),
    # Explicit visibility timeout: 0 to 43,200 s.
    case(None, id="visibility-43200", visibility_timeout=S(43_200)),
    case("must be between 0 and 43200", id="visibility-43201", visibility_timeout=S(43_201)),
    # Names: 80 characters with '-dlq' and '.fifo'; letters, digits, '-' and '_'.
    case(None, id="standard-name-76", queue_name="q" * 76),
    case("is 81 characters", id="standard-name-77", queue_name="q" * 77),
    case(None, id="fifo-name-71", queue_name="q" * 71, fifo=True),
    case("is 81 characters", id="fifo-name-72", queue_name="q" * 72, fifo=True),
    case("is 81 characters", id="fifo-name-72-with-suffix", queue_name="q" * 72 + ".fifo"),
    case("may contain only letters", id="name-with-dot", queue_name="orders.v2"),
    case("may contain only letters", id="name-with-space", queue_name="new orders"),
    case("ends with '.fifo'", id="fifo-name-on-standard", queue_name="orders.fifo", fifo=False),
    # FIFO-only options on a standard queue.
    case("applies only to FIFO queues", id="dedup-on-standard", content_based_deduplication=True),
    case(
        "applies only to FIFO queues",
        id="scope-on-standard",
        deduplication_scope=sqs.DeduplicationScope.QUEUE,
    ),
    case(
        "applies only to FIFO queues",
        id="throughput-on-standard",
        fifo_throughput_limit=sqs.FifoThroughputLimit.PER_QUEUE,
    ),
    # In-flight alarm threshold: 1 to the in-flight quota.
    case(
        "must be between 1 and 120000 messages for a standard queue: the in-flight quota",
        id="in-flight-0",
        in_flight_alarm_threshold=0,
    ),
    case(None, id="in-flight-120000", in_flight_alarm_threshold=120_000),
    case(
        "must be between 1 and 120000 messages for a standard queue: the in-flight quota",
        id="in-flight-120001",
        in_flight_alarm_threshold=120_001,
    ),
]


@pytest.mark.parametrize(("props", "expected"), QUEUE_CASES)
def test_queue_props_limits(stack: cdk.Stack, props: dict[str, Any], expected: str | None) -> None:
    if expected is None:
        ResilientQueue(stack, "Orders", **props)
        return
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", **props)
    message = str(raised.value)
    assert expected in message
    assert message.startswith("TestStack/Orders: ")
    assert "Fix: " in message


CONSUMER_CASES = [
    # Batch size: FIFO 1 to 10, standard 1 to 10,000.
    case("must be between 1 and 10 for a FIFO queue", id="fifo-batch-0", fifo=True, batch_size=0),
    case(None, id="fifo-batch-1", fifo=True, batch_size=1),
    case(None, id="fifo-batch-10", fifo=True, batch_size=10),
    case("must be between 1 and 10 for a FIFO queue", id="fifo-batch-11", fifo=True, batch_size=11),
    case("must be between 1 and 10000 for a standard queue", id="standard-batch-0", batch_size=0),
    case(None, id="standard-batch-10000", batch_size=10_000, max_batching_window=S(1)),
    case(
        "must be between 1 and 10000 for a standard queue",
        id="standard-batch-10001",
        batch_size=10_001,
        max_batching_window=S(1),
    ),
    # A batch above 10 needs a window of at least 1 s.
    case(None, id="batch-10-no-window", batch_size=10),
    case("must be at least 1 second when batch_size (11)", id="batch-11-no-window", batch_size=11),
    case(
        "must be at least 1 second when batch_size (11)",
        id="batch-11-window-0",
        batch_size=11,
        max_batching_window=S(0),
    ),
    case(None, id="batch-11-window-1", batch_size=11, max_batching_window=S(1)),
    # Batching window: 0 to 300 s, none on FIFO.
    case(None, id="window-300", max_batching_window=S(300)),
    case("must be between 0 and 300 seconds", id="window-301", max_batching_window=S(301)),
    case(
        "is not supported for FIFO queues", id="fifo-window-1", fifo=True, max_batching_window=S(1)
    ),
    # Maximum concurrency: 2 to 1,000.
    case("must be between 2 and 1000", id="concurrency-1", max_concurrency=1),
    case(None, id="concurrency-2", max_concurrency=2),
    case(None, id="concurrency-1000", max_concurrency=1000),
    case("must be between 2 and 1000", id="concurrency-1001", max_concurrency=1001),
    # The factor: at least 1, and the derived timeout at most 43,200 s (900 s x 48 = 43,200).
    case("must be at least 1", id="factor-0.9", visibility_timeout_factor=0.9),
    case(None, id="factor-1", visibility_timeout_factor=1),
    case(None, id="derived-43200", timeout=900, visibility_timeout_factor=48),
    case(
        "gives a visibility timeout of 43201 s",
        id="derived-43201",
        timeout=900,
        visibility_timeout_factor=48.001,
    ),
    # With a 300 s window, 47 fits (42,600 s) and 48 does not; the factor is named as given.
    case(
        None,
        id="derived-47-window-300",
        timeout=900,
        visibility_timeout_factor=47,
        max_batching_window=S(300),
    ),
    case(
        "visibility_timeout_factor=48: gives a visibility timeout of 43500 s",
        id="derived-48-window-300",
        timeout=900,
        visibility_timeout_factor=48,
        max_batching_window=S(300),
    ),
    # An explicit visibility timeout below the derived 180 s (6 x 30 s).
    case(
        "is below the 180 s this queue's consumers need",
        id="explicit-179",
        visibility_timeout=S(179),
    ),
    case(None, id="explicit-180", visibility_timeout=S(180)),
    case(None, id="explicit-181", visibility_timeout=S(181)),
]

QUEUE_PROPS = {"fifo", "visibility_timeout"}


@pytest.mark.parametrize(("props", "expected"), CONSUMER_CASES)
def test_consumer_props_limits(
    stack: cdk.Stack, make_function: FunctionFactory, props: dict[str, Any], expected: str | None
) -> None:
    queue_props = {k: v for k, v in props.items() if k in QUEUE_PROPS}
    consumer_props = {k: v for k, v in props.items() if k not in QUEUE_PROPS | {"timeout"}}
    queue = ResilientQueue(stack, "Orders", **queue_props)
    function = make_function(timeout_seconds=props.get("timeout", 30))
    if expected is None:
        queue.add_lambda_consumer(function, **consumer_props)
        return
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(function, **consumer_props)
    assert expected in str(raised.value)
    assert "Fix: " in str(raised.value)


def test_fails_for_an_imported_function_without_its_timeout(stack: cdk.Stack) -> None:
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:us-east-1:123456789012:function:worker"
    )
    queue = ResilientQueue(stack, "Orders")

    # named by the ARN it was imported with, which the user can find; not by a construct path
    with pytest.raises(
        ConfigurationError,
        match="function_timeout=None: is required for "
        "arn:aws:lambda:us-east-1:123456789012:function:worker, whose timeout",
    ):
        queue.add_lambda_consumer(imported)


@pytest.mark.parametrize(("seconds", "ok"), [(0, False), (1, True), (900, True), (901, False)])
def test_imported_function_timeout_limits(stack: cdk.Stack, seconds: int, ok: bool) -> None:
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:us-east-1:123456789012:function:worker"
    )
    queue = ResilientQueue(stack, "Orders")
    if ok:
        queue.add_lambda_consumer(imported, function_timeout=S(seconds))
        return
    with pytest.raises(ConfigurationError, match="must be between 1 and 900 seconds"):
        queue.add_lambda_consumer(imported, function_timeout=S(seconds))


def test_fails_when_function_timeout_contradicts_the_function(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(ConfigurationError, match="contradicts the function's own timeout of 30 s"):
        queue.add_lambda_consumer(make_function(timeout_seconds=30), function_timeout=S(60))


@pytest.mark.parametrize("dlq_fifo", [True, False])
def test_fails_for_a_given_dlq_of_the_other_type(stack: cdk.Stack, dlq_fifo: bool) -> None:
    dlq = sqs.Queue(stack, "MyDlq", fifo=dlq_fifo or None)
    with pytest.raises(ConfigurationError, match="SQS requires the same type"):
        ResilientQueue(stack, "Orders", fifo=not dlq_fifo, dead_letter_queue=dlq)


def test_a_given_dlq_of_the_same_type_is_used(stack: cdk.Stack) -> None:
    dlq = sqs.Queue(stack, "MyDlq", retention_period=cdk.Duration.days(14))
    queue = ResilientQueue(stack, "Orders", dead_letter_queue=dlq)
    assert queue.dead_letter_queue is dlq


def test_fails_when_a_given_dlq_keeps_messages_shorter_than_the_source(stack: cdk.Stack) -> None:
    dlq = sqs.Queue(stack, "MyDlq", retention_period=cdk.Duration.days(2))
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(
            stack, "Orders", dead_letter_queue=dlq, retention_period=cdk.Duration.days(3)
        )
    message = str(raised.value)
    assert "dead_letter_queue=queue MyDlq: keeps messages no longer than this queue's " in message
    assert "retention_period (259200 s): queue MyDlq keeps messages 172800 s" in message
    assert "Fix: give queue MyDlq a retention_period above 259200 s" in message


def test_every_problem_of_one_call_is_listed_at_once(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(
            stack,
            "Orders",
            max_receive_count=0,
            retention_period=S(30),
            content_based_deduplication=True,
        )
    props = [problem.prop for problem in raised.value.problems]
    # In the order of the signature, then the rules between props.
    assert props == ["max_receive_count", "retention_period", "content_based_deduplication"]
    assert "3 configuration problems" in str(raised.value)


def test_configuration_error_is_a_value_error() -> None:
    assert issubclass(ConfigurationError, ValueError)


@pytest.mark.parametrize(("receives", "warned"), [(4, True), (5, False)])
def test_warns_below_five_receives_with_a_lambda_consumer(
    stack: cdk.Stack, make_function: FunctionFactory, receives: int, warned: bool
) -> None:
    queue = ResilientQueue(stack, "Orders", max_receive_count=receives)
    queue.add_lambda_consumer(make_function())
    assert bool(warnings_matching(stack, "least AWS recommends with a Lambda consumer")) is warned


@pytest.mark.parametrize(("factor", "warned"), [(5.9, True), (6, False)])
def test_warns_for_a_factor_below_six(
    stack: cdk.Stack, make_function: FunctionFactory, factor: float, warned: bool
) -> None:
    queue = ResilientQueue(stack, "Orders")
    queue.add_lambda_consumer(make_function(), visibility_timeout_factor=factor)
    assert bool(warnings_matching(stack, "below the 6 AWS recommends")) is warned


def test_unresolved_tokens_are_not_judged_but_warned_about(stack: cdk.Stack) -> None:
    retention = cdk.CfnParameter(stack, "Retention", type="Number")
    ResilientQueue(
        stack, "Orders", retention_period=cdk.Duration.seconds(retention.value_as_number)
    )
    assert warnings_matching(stack, "retention_period is a token")


@pytest.mark.parametrize(
    "prop", ["retention_period", "dead_letter_retention_period", "visibility_timeout"]
)
def test_fails_with_a_clear_type_error_for_plain_numbers(stack: cdk.Stack, prop: str) -> None:
    with pytest.raises(TypeError) as raised:
        ResilientQueue(stack, "Orders", **{prop: 300})
    message = str(raised.value)
    assert f"{prop}=300: is an int, not an aws_cdk.Duration" in message
    # The example offered is the prop's own valid one; the bare number's reading in seconds
    # is named without being offered as the value (it may be out of range, or meant as days).
    assert f"Fix: pass an aws_cdk.Duration, e.g. {prop}=Duration." in message
    assert "a bare number has no unit: 300 seconds is Duration.seconds(300)" in message


def test_fails_with_a_clear_type_error_for_a_plain_batching_window(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    with pytest.raises(
        TypeError, match=re.escape("max_batching_window=5: is an int, not an aws_cdk.Duration")
    ):
        queue.add_lambda_consumer(make_function(), max_batching_window=5)  # type: ignore[arg-type]
