"""The Lambda side of a ResilientQueue: the event source, and the numbers the queue needs from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs

from constructs_lib import limits, policy
from constructs_lib.backoff import Backoff
from constructs_lib.errors import Problem
from constructs_lib.params.durations import duration_seconds
from constructs_lib.queue import naming


@dataclass(frozen=True)
class ConsumerSettings:
    """What ``ResilientQueue.add_lambda_consumer`` (or ``add_dead_letter_consumer``) was asked
    for, in seconds where it is a time."""

    batch_size: int
    batching_window: int | None
    max_concurrency: int | None
    report_batch_item_failures: bool
    visibility_timeout_factor: float
    enabled: bool
    filters: Sequence[Mapping[str, Any]] | None
    event_source_metrics: bool = True
    provisioned_pollers: tuple[int, int] | None = None
    retry_backoff: Backoff | None = None
    """The schedule in the function's environment (``RetryBackoff`` with the queue's receive
    limit and retention), or None without ``retry_backoff``."""

    @property
    def concurrency_ceiling(self) -> int | None:
        """The most concurrent invocations this source can make; None when it is uncapped."""
        maximum_pollers = self.provisioned_pollers[1] if self.provisioned_pollers else None
        if not isinstance(maximum_pollers, int):
            maximum_pollers = None  # a token: not known at synth
        return policy.concurrency_ceiling(self.max_concurrency, maximum_pollers)


@dataclass(frozen=True)
class LambdaConsumer:
    """One function attached to a queue of a ResilientQueue: its source queue
    (``add_lambda_consumer``) or its dead-letter queue (``add_dead_letter_consumer``).

    ``visibility_timeout`` is what this consumer needs of the queue (seconds); the queue uses
    the largest over all of its consumers.
    """

    function: lambda_.IFunction
    event_source: event_sources.SqsEventSource
    function_timeout: int
    visibility_timeout: int
    settings: ConsumerSettings
    queue: sqs.IQueue
    """The queue this consumer reads: the source queue or the dead-letter queue."""
    failed_messages_alarm: cloudwatch.Alarm | None = None
    """``FailedInvokeEventCount`` of the event source mapping >= 1 in a minute: messages the
    function failed or returned in ``batchItemFailures``. None when ``event_source_metrics``
    is off (the metric is then not published)."""
    failing_every_message_alarm: cloudwatch.Alarm | None = None
    """Critical: 99 % or more of the events the mapping invoked the function with failed, in
    each of 5 minutes (metric math over ``FailedInvokeEventCount`` and ``InvokedEventCount``).
    None when ``event_source_metrics`` is off."""


def seconds_or_none(duration: Duration | None, prop: str = "duration") -> int | None:
    """Whole seconds of a duration, or None when it is absent or an unresolved token."""
    if duration is None:
        return None
    if not isinstance(duration, Duration):
        raise TypeError(
            f"{prop} must be an aws_cdk.Duration such as Duration.seconds(30), "
            f"not {type(duration).__name__} {duration!r}"
        )
    seconds = duration_seconds(duration)
    if isinstance(seconds, float):
        # Lambda counts a timeout in whole seconds: CDK refuses a fractional one when it creates
        # the function, so a timeout read from a function never gets here.
        raise ValueError(f"{prop} is {seconds:g} s, but AWS counts it in whole seconds")
    return seconds


def function_timeout_seconds(
    function: lambda_.IFunction, given: int | None, given_unresolved: bool = False
) -> tuple[int | None, list[Problem]]:
    """The consumer's timeout in seconds, read from the function when the app defines it.

    ``given`` is ``function_timeout`` in seconds (its range is checked with the other props).
    An imported function (``Function.from_function_arn``, an alias, a version) hides its timeout,
    so the caller must say it; a defined one without a timeout runs with Lambda's default.
    """
    if isinstance(function, lambda_.Function):
        own = function.timeout
        actual = seconds_or_none(own) if own is not None else limits.FUNCTION_TIMEOUT_DEFAULT
        if actual is None:
            # The function's own timeout is a token: only function_timeout can say it.
            actual = given
        elif given is not None and given != actual:
            return actual, [
                Problem(
                    "function_timeout",
                    given,
                    f"contradicts the function's own timeout of {actual} s",
                    "remove function_timeout: the library reads it from the function",
                )
            ]
        if actual is None:
            return None, [_timeout_needed(function, given_unresolved)]
        return actual, policy.function_timeout_problems("function timeout", actual)
    if given is None:
        return None, [_timeout_needed(function, given_unresolved)]
    return given, []


def _timeout_needed(function: lambda_.IFunction, given_unresolved: bool) -> Problem:
    if given_unresolved:
        return Problem(
            "function_timeout",
            None,
            f"is an unresolved token, but the timeout of {naming.display(function)} must be known at "
            "synth: the queue's visibility timeout is derived from it",
            "pass the function's configured timeout, e.g. function_timeout=Duration.seconds(30)",
        )
    return Problem(
        "function_timeout",
        None,
        f"is required for {naming.display(function)}, whose timeout the app cannot see "
        "(an imported function, alias or version, or a timeout that is a token); the queue's "
        "visibility timeout is derived from it",
        "pass the function's configured timeout, e.g. function_timeout=Duration.seconds(30)",
    )


def make_event_source(
    queue: sqs.IQueue, settings: ConsumerSettings
) -> event_sources.SqsEventSource:
    window = settings.batching_window
    pollers = settings.provisioned_pollers
    return event_sources.SqsEventSource(
        queue,
        batch_size=settings.batch_size,
        max_batching_window=Duration.seconds(window) if window else None,
        max_concurrency=settings.max_concurrency,
        report_batch_item_failures=settings.report_batch_item_failures,
        enabled=settings.enabled,
        filters=settings.filters,
        # EventCount publishes PolledEventCount, InvokedEventCount, FailedInvokeEventCount,
        # FilteredOutEventCount and DeletedEventCount per mapping (Lambda guide,
        # monitoring-metrics-types): with batch item failures reported, FailedInvokeEventCount
        # is the only early signal of failing messages.
        metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT])
        if settings.event_source_metrics
        else None,
        provisioned_poller_config=lambda_.ProvisionedPollerConfig(
            minimum_pollers=pollers[0], maximum_pollers=pollers[1]
        )
        if pollers is not None
        else None,
    )
