"""Reading a queue's context for the rules: normalized property values (numbers, booleans,
objects and lists of strings as the template gives them, ``Unknowable`` when the audit could not
resolve them), how messages name a resource, and the consumers as the rules ask for them (those
that invoke a Lambda function, the Lambda event source mappings, each function once across the
fleet)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from constructs_lib.audit.model import (
    EVENT_SOURCE_MAPPING,
    PIPE,
    PIPE_TARGET,
    PIPE_TARGET_LAMBDA,
    Consumer,
    QueueContext,
    Resource,
    Unknowable,
)
from constructs_lib.audit.parse.intrinsics import describe, is_unresolved


def int_value(resource: Resource, name: str, value: Any, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool):
        raise Unknowable(resource, f"{name} is {value!r}, not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise Unknowable(resource, f"{name} is {describe(value)}")


def int_prop(resource: Resource, prop: str, default: int | None) -> int | None:
    return int_value(resource, prop, resource.prop(prop), default)


def known_int(resource: Resource, prop: str, default: int | None) -> int | None:
    """A number for a message only: None when the audit cannot know it."""
    try:
        return int_prop(resource, prop, default)
    except Unknowable:
        return None


def bool_prop(resource: Resource, prop: str, default: bool) -> bool:
    value = resource.prop(prop)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise Unknowable(resource, f"{prop} is {describe(value)}")


def object_prop(resource: Resource, prop: str) -> dict[str, Any] | None:
    value = resource.prop(prop)
    if value is None:
        return None
    if isinstance(value, dict) and not is_unresolved(value):
        return value
    raise Unknowable(resource, f"{prop} is {describe(value)}")


def strings(resource: Resource, prop: str, value: Any) -> list[str]:
    """A list of plain strings (a lone string counts as a list of one)."""
    if value is None:
        return []
    values = value if isinstance(value, list) else [value]
    if any(not isinstance(v, str) or is_unresolved(v) for v in values):
        raise Unknowable(resource, f"{prop} is {describe(value)}")
    return list(values)


def is_fifo(queue: Resource) -> bool:
    return bool_prop(queue, "FifoQueue", False)


def name_of(resource: Resource) -> str:
    return resource.logical_id if not resource.stack else f"{resource.stack}/{resource.logical_id}"


def lambda_consumers(ctx: QueueContext) -> list[Consumer]:
    """Event source mappings, and pipes that deliver to a Lambda function."""
    return [
        c
        for c in ctx.consumers
        if c.mapping.type != PIPE or c.mapping.prop(PIPE_TARGET) == PIPE_TARGET_LAMBDA
    ]


def event_source_mappings(ctx: QueueContext) -> list[Resource]:
    """The queue's Lambda event source mappings (pipes have none of their settings)."""
    return [c.mapping for c in ctx.consumers if c.mapping.type == EVENT_SOURCE_MAPPING]


def once_per_function(ctx: QueueContext) -> Iterator[Consumer]:
    """Consumers whose function this context speaks for: a function may read many queues, in
    many templates, and each of their contexts sees it. The context holding the function's
    mapping with the smallest uid reports it, so the fleet reports each function once."""
    for consumer in ctx.consumers:
        if consumer.function is None:
            continue
        mappings = ctx.mappings_of(consumer.function.uid)
        if mappings and mappings[0].uid == consumer.mapping.uid:
            yield consumer
