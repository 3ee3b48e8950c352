"""The consumers of a queue's context, as the rules ask for them: those that invoke a Lambda
function, the Lambda event source mappings, and each function once across the fleet."""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib.audit.model import (
    EVENT_SOURCE_MAPPING,
    PIPE,
    PIPE_TARGET,
    PIPE_TARGET_LAMBDA,
    Consumer,
    QueueContext,
    Resource,
)


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
