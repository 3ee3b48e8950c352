"""How a queue behaves, judged from its observed CloudWatch metrics (``--metrics``): a consumer
that runs past the visibility timeout (QR030), messages near expiry (QR031), dead letters
nobody is told about (QR032), a throttled consumer (QR033), an idle queue (QR034); and
``settle``, which revisits static verdicts the observations answer (QR007, QR010).

A rule here judges only what was observed: a context without series for what it reads (no
``--metrics``, or no data point for that resource) gets no finding from it. QR034 alone reads the
absence of data points, and only when the metrics cover long enough for that absence to mean
something.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from constructs_lib import limits
from constructs_lib.audit.model import Consumer, Finding, QueueContext, SeriesRow
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule
from constructs_lib.audit.rules._reading import (
    int_prop,
    lambda_consumers,
    name_of,
    once_per_function,
)
from constructs_lib.audit.rules.alarms import dead_letters_unwatched, fed_by

# QR034 reads a queue without data points as idle only over at least this many days of metrics:
# SQS stops publishing a queue's metrics after six hours without activity
# (limits.SQS_METRICS_ACTIVE_HOURS), so a shorter window cannot tell an idle queue from a quiet
# night; a week also covers the weekly jobs whose queues are quiet for days.
IDLE_MIN_COVERAGE_DAYS = 7
_MS_PER_DAY = 24 * 3600 * limits.MILLISECONDS_PER_SECOND
_IDLE_MIN_COVERAGE_MS = IDLE_MIN_COVERAGE_DAYS * _MS_PER_DAY


def figure(value: float) -> str:
    """A metric's value for a message: whole numbers without decimals, others to 3 places."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _days(span_ms: int) -> str:
    return f"{figure(round(span_ms / _MS_PER_DAY, 1))} days"


def _visibility(ctx: QueueContext) -> int:
    visibility = int_prop(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    assert visibility is not None
    return visibility


def _window(consumer: Consumer) -> int:
    window = int_prop(consumer.mapping, "MaximumBatchingWindowInSeconds", 0)
    assert window is not None
    return window


def _durations(ctx: QueueContext) -> Iterator[tuple[Consumer, SeriesRow]]:
    """Each Lambda consumer whose function's Duration was observed, with that series."""
    for consumer in lambda_consumers(ctx):
        if consumer.function is not None:
            duration = ctx.series(consumer.function.uid, limits.METRIC_DURATION)
            if duration is not None:
                yield consumer, duration


def _qr030(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer, duration in _durations(ctx):
        assert consumer.function is not None
        visibility, window = _visibility(ctx), _window(consumer)
        held_ms = duration.maximum + window * limits.MILLISECONDS_PER_SECOND
        if held_ms > visibility * limits.MILLISECONDS_PER_SECOND:
            yield Hit(
                consumer.mapping,
                f"function {name_of(consumer.function)}, invoked by {name_of(consumer.mapping)} "
                f"for queue {name_of(ctx.queue)}, ran for up to {figure(duration.maximum)} ms "
                f"(maximum {limits.METRIC_DURATION}); with the {window} s batching window that is "
                f"{figure(held_ms / limits.MILLISECONDS_PER_SECOND)} s, above the queue's "
                f"{visibility} s visibility timeout: messages become visible again while the "
                "function still works on them, and are delivered twice",
            )


QR030 = Rule(
    "QR030",
    "error",
    "Observed consumer duration above the visibility timeout",
    "raise the queue's VisibilityTimeout above the function's longest run plus the batching "
    f"window (recommended: {limits.VISIBILITY_TIMEOUT_FACTOR} x function timeout + batching "
    "window), or make the function finish sooner",
    _qr030,
)


def _qr031(ctx: QueueContext) -> Iterator[Outcome]:
    age = ctx.series(ctx.queue.uid, limits.METRIC_OLDEST_AGE)
    if age is None:
        return
    retention = int_prop(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    assert retention is not None
    threshold = retention * limits.EXPIRY_ALARM_RETENTION_FRACTION
    if age.maximum < threshold:
        return
    figures = (
        f"{figure(age.maximum)} s old (maximum {limits.METRIC_OLDEST_AGE}), "
        f"{figure(age.maximum / retention * 100)}% of its {retention} s MessageRetentionPeriod "
        f"(the limit is {figure(limits.EXPIRY_ALARM_RETENTION_FRACTION * 100)}%, "
        f"{figure(threshold)} s)"
    )
    if ctx.is_dead_letter_queue:
        yield Hit(
            ctx.queue,
            f"dead-letter queue {name_of(ctx.queue)} (fed by {fed_by(ctx)}) held a message "
            f"{figures}: dead letters are about to be lost unread",
        )
    else:
        yield Hit(
            ctx.queue,
            f"queue {name_of(ctx.queue)} held a message {figures}: messages are about to "
            "expire unprocessed",
        )


QR031 = Rule(
    "QR031",
    "error",
    "Observed messages near expiry",
    "drain the backlog before the retention period ends (a faster or larger consumer; redrive "
    "or read the dead letters), and give the queue a longer MessageRetentionPeriod (at most "
    f"{limits.RETENTION_MAX} s)",
    _qr031,
)


def _qr032(ctx: QueueContext) -> Iterator[Outcome]:
    depth = ctx.series(ctx.queue.uid, limits.METRIC_VISIBLE)
    if depth is None or depth.maximum <= 0 or not dead_letters_unwatched(ctx):
        return
    yield Hit(
        ctx.queue,
        f"dead-letter queue {name_of(ctx.queue)} (fed by {fed_by(ctx)}) held up to "
        f"{figure(depth.maximum)} messages (maximum {limits.METRIC_VISIBLE}) and no alarm "
        f"watches its {limits.METRIC_VISIBLE}: failed messages are there now and nobody is told",
    )


QR032 = Rule(
    "QR032",
    "warning",
    "Observed dead letters without an alarm",
    f"alarm on the DLQ's {limits.METRIC_VISIBLE} >= 1 (statistic Maximum) with AlarmActions, "
    "then read or redrive the messages it holds",
    _qr032,
)


def _qr033(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in once_per_function(ctx):
        if consumer not in lambda_consumers(ctx):
            continue
        function = consumer.function
        assert function is not None
        throttles = ctx.series(function.uid, limits.METRIC_THROTTLES)
        if throttles is None or throttles.total <= 0:
            continue
        reserved = function.prop("ReservedConcurrentExecutions")
        configured = (
            f"ReservedConcurrentExecutions {reserved}"
            if reserved is not None
            else "no ReservedConcurrentExecutions (the account's unreserved concurrency)"
        )
        yield Hit(
            function,
            f"function {name_of(function)}, a consumer of queue {name_of(ctx.queue)}, was "
            f"throttled {figure(throttles.total)} times (sum of {limits.METRIC_THROTTLES}) with "
            f"{configured}: throttled receives count towards maxReceiveCount, so messages that "
            "never ran can reach the dead-letter queue",
        )


QR033 = Rule(
    "QR033",
    "warning",
    "Observed throttling of an SQS-triggered function",
    "give the function reserved concurrency that covers its SQS event sources, or cap each "
    "source's ScalingConfig.MaximumConcurrency below what the function may run",
    _qr033,
)


def _qr034(ctx: QueueContext) -> Iterator[Outcome]:
    if ctx.is_dead_letter_queue:
        return
    series = [
        s
        for s in (
            ctx.series(ctx.queue.uid, limits.METRIC_SENT),
            ctx.series(ctx.queue.uid, limits.METRIC_RECEIVED),
        )
        if s is not None
    ]
    if any(s.total > 0 for s in series):
        return
    if ctx.coverage is not None:
        span = ctx.coverage.last - ctx.coverage.first
    elif series:
        span = max(s.last for s in series) - min(s.first for s in series)
    else:
        return  # no metrics for this account and region: nothing was observed
    if span < _IDLE_MIN_COVERAGE_MS:
        return
    seen = (
        f"{limits.METRIC_SENT} and {limits.METRIC_RECEIVED} total 0"
        if series
        else f"no data points at all (SQS publishes none for a queue inactive for "
        f"{limits.SQS_METRICS_ACTIVE_HOURS} hours)"
    )
    yield Hit(
        ctx.queue,
        f"queue {name_of(ctx.queue)} had no message sent or received over the {_days(span)} "
        f"the metrics cover: {seen}",
    )


QR034 = Rule(
    "QR034",
    "info",
    "Observed idle queue",
    "delete the queue (and its alarms and dead-letter queue) if nothing uses it any more, or "
    "check why its producers stopped sending",
    _qr034,
)


RULES: tuple[Rule, ...] = (QR030, QR031, QR032, QR033, QR034)


def _qr007_settled(ctx: QueueContext, finding: Finding) -> Finding:
    """QR007 at info, with the figures, when the longest observed run still fits the visibility
    timeout with the recommended margin."""
    for consumer, duration in _durations(ctx):
        mapping = consumer.mapping
        if (mapping.file, mapping.logical_id) != (finding.template, finding.resource):
            continue
        visibility, window = _visibility(ctx), _window(consumer)
        seconds = duration.maximum / limits.MILLISECONDS_PER_SECOND
        needed = limits.VISIBILITY_TIMEOUT_FACTOR * seconds + window
        if needed > visibility:
            return finding
        return dataclasses.replace(
            finding,
            severity="info",
            message=f"{finding.message}; observed: the function ran for up to "
            f"{figure(duration.maximum)} ms (maximum {limits.METRIC_DURATION}), and "
            f"{limits.VISIBILITY_TIMEOUT_FACTOR} x {figure(seconds)} s + {window} s batching "
            f"window = {figure(needed)} s is within the {visibility} s visibility timeout",
        )
    return finding


def settle(ctx: QueueContext, findings: Sequence[Finding]) -> list[Finding]:
    """The static verdicts that observations answer, revisited: QR007 drops to info where the
    longest observed run x 6 + batching window fits the visibility timeout; QR010 gives way to
    QR032 on a dead-letter queue that held messages. Unchanged without observations."""
    if not ctx.observed:
        return list(findings)
    if any(f.rule_id == QR032.id for f in findings):
        findings = [f for f in findings if f.rule_id != "QR010"]
    return [_qr007_settled(ctx, f) if f.rule_id == "QR007" else f for f in findings]
