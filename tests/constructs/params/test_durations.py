"""One conversion from a CDK Duration to the seconds AWS counts, for the parameter tables and for
a function's own timeout: whole seconds in any unit, a fraction for the caller to refuse, None
for a token."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from constructs_lib.consumer.event_source import seconds_or_none
from constructs_lib.params.durations import duration_seconds


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [
        (cdk.Duration.seconds(30), 30),
        (cdk.Duration.minutes(0.5), 30),
        (cdk.Duration.millis(2000), 2),
        (cdk.Duration.days(14), 1_209_600),
        (cdk.Duration.millis(1500), 1.5),
        (cdk.Duration.seconds(0.25), 0.25),
    ],
)
def test_whole_seconds_are_an_int_and_a_fraction_stays_a_fraction(
    duration: cdk.Duration, seconds: float
) -> None:
    converted = duration_seconds(duration)
    assert converted == seconds
    assert isinstance(converted, int) == float(seconds).is_integer()


def test_a_token_in_seconds_is_not_known_here() -> None:
    token = cdk.Token.as_number(cdk.Fn.ref("Timeout"))
    assert duration_seconds(cdk.Duration.seconds(token)) is None
    assert seconds_or_none(cdk.Duration.seconds(token)) is None


def test_a_token_in_another_unit_cannot_be_converted() -> None:
    token = cdk.Token.as_number(cdk.Fn.ref("Timeout"))
    with pytest.raises(RuntimeError, match="cannot be converted"):
        duration_seconds(cdk.Duration.minutes(token))


def test_a_function_timeout_is_read_in_whole_seconds() -> None:
    assert seconds_or_none(cdk.Duration.minutes(1)) == 60
    assert seconds_or_none(None) is None
    with pytest.raises(ValueError, match=r"timeout is 1\.5 s, but AWS counts it in whole seconds"):
        seconds_or_none(cdk.Duration.millis(1500), "timeout")


def test_cdk_refuses_a_fractional_function_timeout_before_it_is_read() -> None:
    stack = cdk.Stack(cdk.App(), "Durations")
    with pytest.raises(RuntimeError, match="cannot be converted into a whole number of seconds"):
        lambda_.Function(
            stack,
            "Worker",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context): pass"),
            timeout=cdk.Duration.millis(1500),
        )
