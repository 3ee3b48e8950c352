"""Properties over generated props: valid ones synthesize templates that keep every rule;
invalid ones raise ConfigurationError. Expected values are computed here from the AWS rules,
not by the library's own functions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constructs_lib import ConfigurationError, ResilientQueue

DAY = 24 * 3600
MAX_RETENTION = 14 * DAY
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@dataclass(frozen=True)
class Props:
    fifo: bool
    function_timeout: int
    window: int
    batch_size: int
    factor: float
    max_receive_count: int
    source_retention: int
    dlq_retention: int


@st.composite
def valid_props(draw: st.DrawFn) -> Props:
    fifo = draw(st.booleans())
    timeout = draw(st.integers(1, 900))
    window = 0 if fifo else draw(st.integers(0, 300))
    batch_limit = 10 if fifo or window == 0 else 10_000
    factor = draw(st.sampled_from([6, 6.5, 7, 10]))
    # A failing message must reach the DLQ before it expires: receives x visibility timeout
    # below the source's retention (at most 10 x 900 + 300 = 9,300 s of visibility here).
    visibility = max(math.ceil(factor * timeout + window), timeout)
    dlq_retention = draw(st.integers(max(120, 5 * visibility + 2), MAX_RETENTION))
    source_upper = MAX_RETENTION if fifo else dlq_retention - 1
    receives = draw(st.integers(5, min(1000, (source_upper - 1) // visibility)))
    return Props(
        fifo=fifo,
        function_timeout=timeout,
        window=window,
        batch_size=draw(st.integers(1, batch_limit)),
        factor=factor,
        max_receive_count=receives,
        source_retention=draw(st.integers(max(60, receives * visibility + 1), source_upper)),
        dlq_retention=dlq_retention,
    )


def build(props: Props) -> tuple[cdk.Stack, ResilientQueue]:
    stack = cdk.Stack(cdk.App(), "PropertyStack")
    queue = ResilientQueue(
        stack,
        "Queue",
        queue_name="work",
        fifo=props.fifo,
        max_receive_count=props.max_receive_count,
        retention_period=cdk.Duration.seconds(props.source_retention),
        dead_letter_retention_period=cdk.Duration.seconds(props.dlq_retention),
    )
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(props.function_timeout),
    )
    queue.add_lambda_consumer(
        function,
        batch_size=props.batch_size,
        max_batching_window=cdk.Duration.seconds(props.window) if props.window else None,
        visibility_timeout_factor=props.factor,
    )
    return stack, queue


def resources(stack: cdk.Stack, resource_type: str) -> list[dict[str, Any]]:
    template = cdk.assertions.Template.from_stack(stack)
    return [r["Properties"] for r in template.find_resources(resource_type).values()]


@SETTINGS
@given(props=valid_props())
def test_valid_props_synthesize_a_template_that_keeps_every_rule(props: Props) -> None:
    stack, _ = build(props)
    queues = {q["QueueName"]: q for q in resources(stack, "AWS::SQS::Queue")}
    suffix = ".fifo" if props.fifo else ""
    source, dlq = queues[f"work{suffix}"], queues[f"work-dlq{suffix}"]

    recommended = math.ceil(props.factor * props.function_timeout + props.window)
    assert source["VisibilityTimeout"] >= recommended
    assert source["VisibilityTimeout"] >= props.function_timeout
    assert source["VisibilityTimeout"] <= 43_200
    assert source.get("FifoQueue", False) == dlq.get("FifoQueue", False) == props.fifo
    if not props.fifo:
        assert dlq["MessageRetentionPeriod"] > source["MessageRetentionPeriod"]
    assert source["RedrivePolicy"]["maxReceiveCount"] == props.max_receive_count
    # A failing message reaches the DLQ before the source's retention deletes it.
    assert (
        source["RedrivePolicy"]["maxReceiveCount"] * source["VisibilityTimeout"]
        < source["MessageRetentionPeriod"]
    )
    allow = dlq["RedriveAllowPolicy"]
    assert allow["redrivePermission"] == "byQueue"
    assert stack.resolve(allow["sourceQueueArns"])[0]["Fn::Join"][1][-1] == f":work{suffix}"

    watched = {
        (a["MetricName"], a["Dimensions"][0]["Value"]["Fn::GetAtt"][0])
        for a in resources(stack, "AWS::CloudWatch::Alarm")
        if a.get("Namespace") == "AWS/SQS"  # not the consumers' metric math (no Namespace)
    }
    metrics = {metric for metric, _ in watched}
    assert {
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesVisible",
    } <= metrics


INVALID_CHANGES: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "batch too large": st.integers(10_001, 50_000).map(lambda n: {"batch_size": n, "window": 1}),
    "window too long": st.integers(301, 3_600).map(lambda n: {"window": n}),
    "receives out of range": st.one_of(st.integers(-5, 0), st.integers(1001, 5000)).map(
        lambda n: {"max_receive_count": n}
    ),
    "retention too short": st.integers(1, 59).map(lambda n: {"source_retention": n}),
    "dlq retention not longer": st.integers(0, 3 * DAY).map(
        lambda extra: {"source_retention": DAY + extra, "dlq_retention": DAY}
    ),
    "factor below one": st.floats(0.01, 0.99).map(lambda f: {"factor": f}),
    # 1,000 receives x at least 6 s of visibility timeout is at least 6,000 s.
    "expiry before dead-lettering": st.integers(60, 5_999).map(
        lambda n: {"max_receive_count": 1000, "source_retention": n}
    ),
}


@SETTINGS
@given(
    base=valid_props().filter(lambda p: not p.fifo),
    change=st.sampled_from(sorted(INVALID_CHANGES)).flatmap(lambda k: INVALID_CHANGES[k]),
)
def test_invalid_props_raise_configuration_error(base: Props, change: dict[str, Any]) -> None:
    props = Props(**{**base.__dict__, **change})
    with pytest.raises(ConfigurationError):
        build(props)
