"""Consumers that back off failed messages (``constructs_lib.backoff``): how long a message that
fails every receive takes to reach the dead-letter queue, for QR018.

A consumer function whose ``Environment.Variables`` carry the ``CONSTRUCTS_LIB_BACKOFF_*``
variables sets each failed message's visibility itself, so a receive holds the message for the
longer of the queue's visibility timeout and the function timeout plus the wait
(``Backoff.worst_case_seconds``), not for the visibility timeout alone. The variables are read
with ``Backoff.from_environment``, as the handler reads them.
"""

from __future__ import annotations

import dataclasses

from constructs_lib import backoff, limits
from constructs_lib.audit.model import QueueContext, Resource
from constructs_lib.audit.model.outcomes import Hit, Outcome, Unknowable, Unknown
from constructs_lib.audit.parse.intrinsics import describe, is_unresolved
from constructs_lib.audit.rules._reading import int_prop, lambda_consumers, name_of

VARIABLES = (
    backoff.ENV_BASE,
    backoff.ENV_FACTOR,
    backoff.ENV_CAP,
    backoff.ENV_JITTER,
    backoff.ENV_MAX_RECEIVE_COUNT,
    backoff.ENV_RETENTION,
)
_LISTED = 12  # waits a message lists before it shortens the list


class BadBackoff(Exception):
    """A backoff variable whose value ``Backoff.from_environment`` refuses."""


def backoff_of(function: Resource) -> backoff.Backoff | None:
    """The backoff a function's environment carries, None when it carries no backoff variable.
    ``Unknowable`` for an environment or a variable the audit cannot resolve, ``BadBackoff``
    (naming the variable) for values the handler would refuse."""
    environment = function.prop("Environment")
    if environment is None:
        return None
    variables = environment.get("Variables") if isinstance(environment, dict) else environment
    if variables is None:
        return None
    if not isinstance(variables, dict) or is_unresolved(variables):
        raise Unknowable(function, f"Environment.Variables is {describe(variables)}")
    texts: dict[str, str] = {}
    for name in VARIABLES:
        value = variables.get(name)
        if value is None:
            continue
        if isinstance(value, dict | list) or is_unresolved(value):
            raise Unknowable(function, f"Environment.Variables.{name} is {describe(value)}")
        texts[name] = str(value).lower() if isinstance(value, bool) else str(value)
    if not texts:
        return None
    try:
        return backoff.Backoff.from_environment(texts)
    except backoff.BackoffError as error:
        shown = ", ".join(f"{name}={text!r}" for name, text in texts.items())
        raise BadBackoff(f"{error} (its backoff variables: {shown})") from None


def _listed(values: list[int], unit: str = "") -> str:
    shown = [f"{v}{unit}" for v in values]
    if len(shown) > _LISTED:
        shown = [*shown[: _LISTED - 2], "...", shown[-1]]
    return ", ".join(shown)


def _explained(
    queue: Resource,
    function: Resource,
    settings: backoff.Backoff,
    count: int,
    visibility: int,
    timeout: int,
    retention: int,
) -> str:
    waits = [settings.ceiling(n) for n in range(1, count + 1)]
    holds = [max(visibility, timeout + wait) for wait in waits]
    total = sum(holds)
    terms = " + ".join(str(h) for h in holds) if count <= _LISTED else f"{_listed(holds)} s"
    return (
        f"queue {name_of(queue)} keeps messages {retention} s, which is not longer than the "
        f"{total} s a failing message needs to reach the dead-letter queue when consumer "
        f"{name_of(function)} backs off (CONSTRUCTS_LIB_BACKOFF_* in its environment): each of "
        f"its {count} receives holds it for the longer of the {visibility} s visibility timeout "
        f"and the {timeout} s function timeout plus the wait (waits {_listed(waits)} s): "
        f"{terms} = {total} s; SQS deletes it by expiry first and it never reaches the DLQ"
    )


def backoff_outcomes(
    ctx: QueueContext, count: int, visibility: int, retention: int, plain_fails: bool
) -> list[Outcome]:
    """QR018's outcomes for the consumers that back off. An unknown backoff is reported only
    when the plain receives (count x visibility) do not already expire the message: backing off
    only lengthens the way to the DLQ."""
    outcomes: list[Outcome] = []
    seen: set[str] = set()
    for consumer in lambda_consumers(ctx):
        function = consumer.function
        if function is None or function.uid in seen:
            continue  # a function reading the queue through two mappings is judged once
        seen.add(function.uid)
        try:
            settings = backoff_of(function)
            if settings is None:
                continue
            timeout = int_prop(function, "Timeout", limits.FUNCTION_TIMEOUT_DEFAULT)
            assert timeout is not None
            settings = dataclasses.replace(settings, max_receive_count=count)
        except Unknowable as unknown:
            if not plain_fails:
                outcomes.append(Unknown(unknown.resource, unknown.what))
            continue
        except BadBackoff as bad:
            outcomes.append(
                Hit(
                    function,
                    f"consumer {name_of(function)} of queue {name_of(ctx.queue)} backs off with "
                    f"settings its handler refuses: {bad}; how long a failing message takes to "
                    "reach the dead-letter queue cannot be known",
                )
            )
            continue
        except backoff.BackoffError:
            continue  # a maxReceiveCount outside 1-1,000: the plain rule judges it
        if settings.worst_case_seconds(visibility, timeout) >= retention:
            outcomes.append(
                Hit(
                    ctx.queue,
                    _explained(
                        ctx.queue, function, settings, count, visibility, timeout, retention
                    ),
                )
            )
    return outcomes
