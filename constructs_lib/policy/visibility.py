"""The visibility timeout a queue needs for its Lambda consumers, and the function timeout and
factor it is derived from, against SQS's and Lambda's limits."""

from __future__ import annotations

import math

from constructs_lib import limits
from constructs_lib.errors import Problem
from constructs_lib.policy._ranges import out_of_range


def derived_visibility_timeout(
    function_timeout: int,
    batching_window: int = 0,
    factor: float = limits.VISIBILITY_TIMEOUT_FACTOR,
) -> int:
    """The visibility timeout a queue needs for one Lambda consumer, in whole seconds.

    ``factor x function timeout + batching window`` (Lambda guide, services-sqs-configure), and
    never below the function timeout, which AWS requires when it creates the event source.
    """
    return max(math.ceil(factor * function_timeout + batching_window), function_timeout)


def function_timeout_problems(prop: str, function_timeout: int | None) -> list[Problem]:
    return out_of_range(
        prop,
        function_timeout,
        limits.FUNCTION_TIMEOUT_MIN,
        limits.FUNCTION_TIMEOUT_MAX,
        " seconds",
        "give the function's real timeout (Lambda allows 1 to 900 seconds)",
    )


def visibility_factor_problems(
    factor: float, function_timeout: int | None = None, batching_window: int | None = None
) -> list[Problem]:
    """The factor against SQS's longest visibility timeout (with the function's timeout and
    the window, when known), and the warning for a factor below AWS's 6 (the least factor, 1,
    is a declared range)."""
    window = batching_window or 0
    if (
        function_timeout is not None
        and function_timeout <= limits.FUNCTION_TIMEOUT_MAX
        and factor >= 1
        and window <= limits.BATCHING_WINDOW_MAX
    ):
        derived = derived_visibility_timeout(function_timeout, window, factor)
        if derived > limits.VISIBILITY_TIMEOUT_MAX:
            # The largest whole factor that fits; at least 1, as 900 s + 300 s fit in 12 hours.
            fitting = max(1, (limits.VISIBILITY_TIMEOUT_MAX - window) // function_timeout)
            return [
                Problem(
                    "visibility_timeout_factor",
                    factor,
                    f"gives a visibility timeout of {derived} s ({factor:g} x function timeout "
                    f"{function_timeout} s + batching window {window} s), above SQS's maximum "
                    f"of {limits.VISIBILITY_TIMEOUT_MAX} s",
                    f"lower the factor to at most {fitting}, the most that fits, e.g. "
                    f"visibility_timeout_factor={fitting}, or shorten the function timeout or "
                    "the batching window",
                )
            ]
    if 1 <= factor < limits.VISIBILITY_TIMEOUT_FACTOR:
        return [
            Problem(
                "visibility_timeout_factor",
                factor,
                f"is below the {limits.VISIBILITY_TIMEOUT_FACTOR} AWS recommends; retries of throttled batches "
                "can then run while the first attempt is still in flight, processing messages twice",
                f"use {limits.VISIBILITY_TIMEOUT_FACTOR} or more",
                severity="warning",
            )
        ]
    return []


def visibility_problems(derived: int, explicit: int | None) -> list[Problem]:
    """The derived visibility timeout against SQS's maximum and against an explicit setting."""
    if derived > limits.VISIBILITY_TIMEOUT_MAX:
        return [
            Problem(
                "visibility_timeout_factor",
                derived,
                f"gives a visibility timeout of {derived} s (factor x function timeout + batching window), "
                f"above SQS's maximum of {limits.VISIBILITY_TIMEOUT_MAX} s",
                "lower the function timeout, the batching window or visibility_timeout_factor",
            )
        ]
    if explicit is not None and explicit < derived:
        return [
            Problem(
                "visibility_timeout",
                explicit,
                f"is below the {derived} s this queue's consumers need (factor x function timeout + "
                "batching window); messages would be delivered again while still being processed",
                f"remove visibility_timeout to let the library derive it, or set it to at least {derived} s",
            )
        ]
    return []
