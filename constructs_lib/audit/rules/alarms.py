"""Alarms on a queue and its dead-letter queue: the metrics they must watch (QR009, QR010,
QR020, QR025), the one that misses redriven messages (QR011), and alarms that tell no one
(QR024).
"""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib import limits
from constructs_lib.audit.model import COMPOSITES, QueueContext, Resource
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule, Unknowable, Unknown
from constructs_lib.audit.parse.intrinsics import describe, is_unresolved
from constructs_lib.audit.rules._reading import bool_prop, known_int, lambda_consumers, name_of


def _has_alarm(ctx: QueueContext, metric: str) -> bool:
    return any(alarm.metric == metric for alarm in ctx.alarms)


def _qr009(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.is_dead_letter_queue and not _has_alarm(ctx, limits.METRIC_IN_FLIGHT):
        yield Hit(
            ctx.queue,
            f"queue {name_of(ctx.queue)} has no alarm on {limits.METRIC_IN_FLIGHT} (stuck or slow "
            "consumers go unnoticed)",
        )


QR009 = Rule(
    "QR009",
    "warning",
    "No in-flight alarm on the source queue",
    f"alarm on {limits.METRIC_IN_FLIGHT} (statistic Maximum, missing data not breaching)",
    _qr009,
)


def dead_letters_unwatched(ctx: QueueContext) -> bool:
    """A dead-letter queue with no alarm on its depth, nor (fed by services only) on its
    arrivals: what QR010 reports, and QR032 when the queue held messages."""
    if not ctx.is_dead_letter_queue or _has_alarm(ctx, limits.METRIC_VISIBLE):
        return False
    # Services send their failures with SendMessage, which NumberOfMessagesSent counts; only
    # messages moved by a queue's redrive policy escape it (QR011).
    return bool(ctx.sources) or not _has_alarm(ctx, limits.METRIC_SENT)


def fed_by(ctx: QueueContext) -> str:
    """What sends its failures to this dead-letter queue, for messages."""
    services = [name_of(s) + "'s RedrivePolicy" for s in ctx.sources]
    services += sorted({service for _resource, service in ctx.feeders})
    return ", ".join(services)


def _qr010(ctx: QueueContext) -> Iterator[Outcome]:
    if not dead_letters_unwatched(ctx):
        return
    yield Hit(
        ctx.queue,
        f"dead-letter queue {name_of(ctx.queue)} (fed by {fed_by(ctx)}) has no alarm on "
        f"{limits.METRIC_VISIBLE} (failed messages pile up unnoticed)",
    )


QR010 = Rule(
    "QR010",
    "warning",
    "No depth alarm on the dead-letter queue",
    f"alarm on the DLQ's {limits.METRIC_VISIBLE} >= 1 (statistic Maximum)",
    _qr010,
)


def _qr011(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.sources:  # services' failures arrive by SendMessage, which the metric counts
        return
    for alarm in ctx.alarms:
        if alarm.metric == limits.METRIC_SENT:
            yield Hit(
                alarm.alarm,
                f"alarm {name_of(alarm.alarm)} watches {limits.METRIC_SENT} on dead-letter queue "
                f"{name_of(ctx.queue)}; messages moved there by the redrive policy are not counted",
            )


QR011 = Rule(
    "QR011",
    "warning",
    "Dead-letter queue alarm on NumberOfMessagesSent",
    f"alarm on {limits.METRIC_VISIBLE} instead; {limits.METRIC_SENT} misses redriven messages",
    _qr011,
)


def _qr020(ctx: QueueContext) -> Iterator[Outcome]:
    consumers = lambda_consumers(ctx)
    if not ctx.is_dead_letter_queue or not consumers:
        return
    if _has_alarm(ctx, limits.METRIC_RECEIVED):
        return
    names = ", ".join(name_of(c.mapping) for c in consumers)
    yield Hit(
        ctx.queue,
        f"dead-letter queue {name_of(ctx.queue)} (fed by {fed_by(ctx)}) is consumed by {names} "
        f"and has no alarm on {limits.METRIC_RECEIVED}: the consumer drains it, so its "
        f"{limits.METRIC_VISIBLE} stays near zero while failures keep arriving",
    )


QR020 = Rule(
    "QR020",
    "warning",
    "Consumed dead-letter queue without an arrivals alarm",
    f"alarm on the DLQ's {limits.METRIC_RECEIVED} >= 1 (statistic Sum, period "
    f"{limits.SQS_METRIC_PERIOD} s)",
    _qr020,
)


def _composites_say(alarm: Resource) -> str | None:
    """What the template's composite alarms add to a silent alarm's finding; None when one of
    them tells someone when it fires (``parse/dialects/composite_alarms.py``)."""
    verdict = alarm.prop(COMPOSITES)
    if not isinstance(verdict, dict):
        return ""
    if verdict.get("notified_by"):
        return None
    said = ""
    silent = verdict.get("silent") or []
    if silent:
        said += (
            f"; its composite alarm{'s' if len(silent) > 1 else ''} {', '.join(silent)} "
            f"{'are' if len(silent) > 1 else 'is'} silent too (no AlarmActions, or ActionsEnabled "
            "false)"
        )
    unread = verdict.get("unread") or []
    if unread:
        said += "; composite alarms the audit cannot read are not counted as watching it: "
        said += "; ".join(unread)
    return said


def _qr024(ctx: QueueContext) -> Iterator[Outcome]:
    seen: set[str] = set()
    for ref in ctx.alarms:
        alarm = ref.alarm
        if alarm.uid in seen:
            continue
        seen.add(alarm.uid)
        composites = _composites_say(alarm)
        if composites is None:
            continue  # a composite alarm over it tells someone
        try:
            enabled = bool_prop(alarm, "ActionsEnabled", True)
            actions = alarm.prop("AlarmActions")
            if actions is not None and not isinstance(actions, list):
                raise Unknowable(alarm, f"AlarmActions is {describe(actions)}")
        except Unknowable as unknown:
            yield Unknown(unknown.resource, unknown.what)
            continue
        metric = f"{ref.metric} of queue {name_of(ctx.queue)}"
        if not enabled:
            yield Hit(
                alarm,
                f"alarm {name_of(alarm)} on {metric} has ActionsEnabled false: it changes state "
                f"and tells no one{composites}",
            )
        elif not actions:
            yield Hit(
                alarm,
                f"alarm {name_of(alarm)} on {metric} has no AlarmActions: it changes state and "
                f"tells no one{composites}",
            )


QR024 = Rule(
    "QR024",
    "warning",
    "Silent alarm",
    "give the alarm AlarmActions (an SNS topic, for example) and leave ActionsEnabled true, or "
    "watch it with a composite alarm (ALARM(...) in its AlarmRule) that has them",
    _qr024,
)


def _qr025(ctx: QueueContext) -> Iterator[Outcome]:
    if _has_alarm(ctx, limits.METRIC_OLDEST_AGE):
        return
    redrive = ctx.queue.prop("RedrivePolicy")
    retention = known_int(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    keeps = f"after {retention} s" if retention is not None else "at the end of the retention"
    if redrive is not None:
        if is_unresolved(redrive):
            raise Unknowable(ctx.queue, f"RedrivePolicy is {describe(redrive)}")
        yield Hit(
            ctx.queue,
            f"queue {name_of(ctx.queue)} has a dead-letter queue and no alarm on "
            f"{limits.METRIC_OLDEST_AGE}: a backlog of unprocessed messages expires {keeps} "
            "unnoticed",
        )
    elif ctx.sources:
        yield Hit(
            ctx.queue,
            f"dead-letter queue {name_of(ctx.queue)} (fed by {fed_by(ctx)}) has no alarm on "
            f"{limits.METRIC_OLDEST_AGE}: dead letters nobody redrives expire {keeps} unnoticed",
        )


QR025 = Rule(
    "QR025",
    "warning",
    "No alarm on the age of the oldest message",
    f"alarm on {limits.METRIC_OLDEST_AGE} (statistic Maximum) below the retention period, "
    "on the source and on its dead-letter queue",
    _qr025,
)


RULES: tuple[Rule, ...] = (QR009, QR010, QR011, QR020, QR024, QR025)
