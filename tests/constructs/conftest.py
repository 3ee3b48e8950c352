"""Builders for construct tests: a fresh stack per test and functions with a chosen timeout."""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Template

FunctionFactory = Callable[..., lambda_.Function]


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "TestStack")


@pytest.fixture
def make_function(stack: cdk.Stack) -> FunctionFactory:
    """A real inline-code function; ``timeout_seconds=None`` leaves Lambda's default."""
    counter = iter(range(1000))

    def build(timeout_seconds: int | None = 30, scope: cdk.Stack | None = None) -> lambda_.Function:
        return lambda_.Function(
            scope or stack,
            f"Fn{next(counter)}",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
            timeout=None if timeout_seconds is None else cdk.Duration.seconds(timeout_seconds),
        )

    return build


def resources_of_type(stack: cdk.Stack, resource_type: str) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = Template.from_stack(stack).find_resources(resource_type)
    return found


def queue_properties(stack: cdk.Stack, queue_name: str) -> dict[str, object]:
    """The Properties of the AWS::SQS::Queue with this physical name."""
    for resource in resources_of_type(stack, "AWS::SQS::Queue").values():
        properties = resource["Properties"]
        assert isinstance(properties, dict)
        if properties.get("QueueName") == queue_name:
            return properties
    raise AssertionError(f"no queue named {queue_name!r} in the template")


def warnings_matching(stack: cdk.Stack, text: str) -> list[str]:
    messages = Annotations.from_stack(stack).find_warning("*", cdk.assertions.Match.any_value())
    return [str(m.entry.data) for m in messages if text in str(m.entry.data)]
