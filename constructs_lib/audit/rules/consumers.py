"""The consumer function: how long it holds a message against the queue's visibility timeout
(QR006, QR007), and whether it lets a recursive loop run (QR028).
"""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib import limits
from constructs_lib.audit.model import PIPE, QueueContext, Resource
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule, Unknowable, Unknown
from constructs_lib.audit.parse.intrinsics import describe
from constructs_lib.audit.rules._reading import (
    int_prop,
    lambda_consumers,
    name_of,
    once_per_function,
)
from constructs_lib.policy.visibility import derived_visibility_timeout


def _consumer_numbers(ctx: QueueContext) -> Iterator[tuple[Resource, int, int, int]]:
    """(mapping, visibility, function timeout, batching window) for each consumer with a function."""
    if not ctx.consumers:
        return  # no consumer, nothing to compare: an unknown visibility timeout is no finding
    visibility = int_prop(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    assert visibility is not None
    for consumer in lambda_consumers(ctx):
        if consumer.function is None:
            continue  # the unresolved FunctionName is reported once, as QR900, by resolution
        timeout = int_prop(consumer.function, "Timeout", limits.FUNCTION_TIMEOUT_DEFAULT)
        window = int_prop(consumer.mapping, "MaximumBatchingWindowInSeconds", 0)
        assert timeout is not None and window is not None
        yield consumer.mapping, visibility, timeout, window


def _qr006(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in ctx.consumers:
        if consumer not in lambda_consumers(ctx):
            yield Unknown(
                consumer.mapping,
                f"pipe {name_of(consumer.mapping)} reads queue {name_of(ctx.queue)} and delivers "
                f"to {describe(consumer.mapping.prop('Target'))}, not a Lambda function: how long "
                "that target takes, against the visibility timeout, cannot be judged",
            )
    for mapping, visibility, timeout, _window in _consumer_numbers(ctx):
        if visibility < timeout:
            consequence = (
                "messages become visible again while the function still works on them"
                if mapping.type == PIPE
                else "CreateEventSourceMapping fails"
            )
            yield Hit(
                mapping,
                f"queue {name_of(ctx.queue)} has visibility timeout {visibility} s, below the "
                f"{timeout} s timeout of the function this event source invokes; {consequence}",
            )


QR006 = Rule(
    "QR006",
    "error",
    "Visibility timeout below the consumer function timeout",
    "raise the queue's VisibilityTimeout to at least the function timeout "
    f"(recommended: {limits.VISIBILITY_TIMEOUT_FACTOR} x timeout + batching window)",
    _qr006,
)


def _qr007(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping, visibility, timeout, window in _consumer_numbers(ctx):
        needed = derived_visibility_timeout(timeout, window)
        # Below the function timeout is QR006 (an error); QR007 is the recommendation above it.
        if timeout <= visibility < needed:
            yield Hit(
                mapping,
                f"queue {name_of(ctx.queue)} has visibility timeout {visibility} s, below the "
                f"{needed} s recommended for this consumer ({limits.VISIBILITY_TIMEOUT_FACTOR} x "
                f"{timeout} s function timeout + {window} s batching window)",
            )


QR007 = Rule(
    "QR007",
    "warning",
    "Visibility timeout below 6 x function timeout + batching window",
    f"raise VisibilityTimeout to {limits.VISIBILITY_TIMEOUT_FACTOR} x function timeout + "
    "batching window",
    _qr007,
)


def _qr028(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in once_per_function(ctx):
        function = consumer.function
        assert function is not None
        loop = function.prop("RecursiveLoop")
        if loop is not None and not isinstance(loop, str):
            raise Unknowable(function, f"RecursiveLoop is {describe(loop)}")
        if loop == limits.RECURSIVE_LOOP_ALLOW:
            yield Hit(
                function,
                f"function {name_of(function)}, a consumer of queue {name_of(ctx.queue)}, has "
                f"RecursiveLoop {loop}: if it sends to a queue it reads, Lambda lets the loop "
                "run forever instead of stopping it",
            )


QR028 = Rule(
    "QR028",
    "warning",
    "Consumer function allows recursive loops",
    "remove RecursiveLoop: Allow (the default, Terminate, stops a loop)",
    _qr028,
)


RULES: tuple[Rule, ...] = (QR006, QR007, QR028)
