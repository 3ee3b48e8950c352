"""A queue's ledger over the metrics window: what it was sent, what it finished, what it lost
and what its empty receives cost (``model.QueueLedger``), from the series of its context.

Two steps, both pure. ``of_context`` reads one queue's context (its own series and its
dead-letter queue's, which ``observations.for_group`` adds) where either engine judges it,
with the rule ids judged there (QR030 explains extra deliveries). ``ranked`` then takes every
queue's ledger on the driver: a dead-letter queue that more than one queue or service feeds
has its arrivals shared among its source queues, and the fleet is ordered by messages lost,
then by money. docs/audit/ledger.md gives each formula, its assumptions and its sources.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from typing import Any

from constructs_lib import limits
from constructs_lib.audit import model
from constructs_lib.audit.metrics.observations import SQS_NAMESPACE, arn_key
from constructs_lib.audit.model import QueueContext, QueueLedger, Resource, SeriesRow

# The gauges whose change over the window is what it left queued: visible, in flight, delayed.
BACKLOG_METRICS = (limits.METRIC_VISIBLE, limits.METRIC_IN_FLIGHT, limits.METRIC_DELAYED)
# The rule whose finding explains extra deliveries: a consumer observed to run longer than the
# visibility timeout lets its messages be received again (``rules/behaviour.py``).
EXPLAINS_EXTRA_DELIVERIES = "QR030"
MS_PER_S = 1000


def of_context(context: QueueContext, rule_ids: Collection[str] = ()) -> QueueLedger | None:
    """The queue's ledger before the fleet is known (``ranked`` finishes it); None for a queue
    without an ARN or without a series of its own in the window. ``rule_ids``: the rules its
    judged findings come from."""
    queue = context.queue
    key = _key(queue)
    if key is None or not any(uid == queue.uid for uid, _ in context.observed):
        return None
    account, region, _namespace, name = key
    fifo = name.endswith(".fifo") or _truthy(queue.prop("FifoQueue"))
    sent, deleted, received, empty = (
        _total(context, queue.uid, metric)
        for metric in (
            limits.METRIC_SENT,
            limits.METRIC_DELETED,
            limits.METRIC_RECEIVED,
            limits.METRIC_EMPTY_RECEIVES,
        )
    )
    backlog = backlog_change(context, queue.uid)
    # A redrive target's arrivals from its sources are in no metric it publishes (its
    # NumberOfMessagesSent leaves them out: SQS developer guide, dead-letter queues), so what it
    # lost cannot be counted from its own.
    redrive_target = bool(context.sources)
    unprocessed = (
        None
        if redrive_target or sent is None or deleted is None or backlog is None
        else sent - deleted - backlog
    )
    dead_lettered, estimated, dead_letter_queue = _dead_lettered(context)
    price = limits.SQS_FIFO_REQUEST_USD if fifo else limits.SQS_STANDARD_REQUEST_USD
    explained = (EXPLAINS_EXTRA_DELIVERIES,) if EXPLAINS_EXTRA_DELIVERIES in rule_ids else ()
    return QueueLedger(
        uid=queue.uid,
        file=queue.file,
        stack=queue.stack,
        logical_id=queue.logical_id,
        account=account,
        region=region,
        name=name,
        fifo=fifo,
        sent=sent,
        deleted=deleted,
        received=received,
        empty_receives=empty,
        backlog_change=backlog,
        unprocessed=unprocessed,
        dead_lettered=dead_lettered,
        expired=_less(unprocessed, dead_lettered),
        split_estimated=estimated,
        extra_deliveries=_less(_less(received, deleted), dead_lettered),
        empty_receive_cost=None if empty is None else empty * price,
        explained_by=explained,
        dead_letter_queue=dead_letter_queue,
        dead_letter_sources=len(context.sources) + len(context.feeders),
    )


def backlog_change(context: QueueContext, uid: str) -> float | None:
    """Closing less opening, summed over the visible, in-flight and delayed gauges of member
    ``uid``: None without a visible or an in-flight series; no delayed series counts as none
    delayed at either end."""
    visible, in_flight, delayed = (context.series(uid, m) for m in BACKLOG_METRICS)
    if visible is None or in_flight is None:
        return None
    change = 0.0
    for series in (visible, in_flight, delayed):
        if series is not None:
            if series.opening is None or series.closing is None:
                return None
            change += series.closing - series.opening
    return change


def _dead_lettered(context: QueueContext) -> tuple[float | None, bool, str]:
    """(moved to the dead-letter queue, whether that is an estimate, the queue's uid): 0 exactly
    without a redrive policy; None for one whose queue the audit cannot see or has no ARN. With
    one: what the dead-letter queue's backlog grew by, plus what it deleted, less what was sent
    to it (moved messages are not in its NumberOfMessagesSent)."""
    queue = context.queue
    if not context.dead_letter_queues:
        return (None if queue.prop("RedrivePolicy") is not None else 0.0), False, ""
    dlq = context.dead_letter_queues[0]
    if _key(dlq) is None:
        return None, False, dlq.uid
    backlog = backlog_change(context, dlq.uid)
    sent = _total(context, dlq.uid, limits.METRIC_SENT)
    deleted = _total(context, dlq.uid, limits.METRIC_DELETED)
    # An inactive queue publishes nothing (SQS stops after six hours): a missing series is
    # taken as none, and the figure is an estimate.
    moved = (backlog or 0.0) + (deleted or 0.0) - (sent or 0.0)
    missing = backlog is None or sent is None or deleted is None
    several = len(context.dead_letter_queues) > 1
    estimated = missing or several or _may_expire(context, queue, dlq)
    return moved, estimated, dlq.uid


def _may_expire(context: QueueContext, queue: Resource, dlq: Resource) -> bool:
    """Whether a message in the dead-letter queue may have expired between its first and last
    backlog reading: it held messages at the first, or its retention is shorter than that span
    plus, for a standard queue (which keeps a message's first enqueue time when it moves it),
    the source's retention."""
    visible = context.series(dlq.uid, limits.METRIC_VISIBLE)
    if visible is None:
        return True
    opening = [context.series(dlq.uid, m) for m in BACKLOG_METRICS]
    if any(s is not None and (s.opening or 0.0) > 0 for s in opening):
        return True
    kept = _seconds(dlq.prop("MessageRetentionPeriod"))
    source = _seconds(queue.prop("MessageRetentionPeriod"))
    if kept is None or source is None:
        return True
    fifo = _truthy(queue.prop("FifoQueue"))
    needed = (visible.last - visible.first) / MS_PER_S + (0 if fifo else source)
    return kept < needed


def ranked(ledgers: Iterable[QueueLedger]) -> tuple[QueueLedger, ...]:
    """Every queue's ledger (``of_context``), finished and in the fleet's order: messages lost
    (``unprocessed``, unknown last) descending, then ``empty_receive_cost`` descending, then
    uid. A dead-letter queue fed by more than its one source queue has its arrivals shared
    among the source queues in proportion to what each left unprocessed (evenly when none
    did), an estimate."""
    rows = sorted(ledgers, key=lambda row: row.uid)
    sources: dict[str, list[QueueLedger]] = defaultdict(list)
    for row in rows:
        if row.dead_letter_queue and row.dead_lettered is not None:
            sources[row.dead_letter_queue].append(row)
    # shared: fed by more than one queue or service as its own context knows (its ledger's
    # ``dead_letter_sources``), or named by more than one ledger
    shared = {row.uid for row in rows if row.dead_letter_sources > 1}
    shared |= {uid for uid, group in sources.items() if len(group) > 1}
    finished = {row.uid: row for row in rows}
    for uid in sorted(shared & set(sources)):
        group = sources[uid]
        for row, share in zip(group, _shares(group), strict=True):
            finished[row.uid] = _with_dead_lettered(row, share)
    return tuple(sorted(finished.values(), key=_rank))


def _shares(group: list[QueueLedger]) -> list[float]:
    """Each source's part of the arrivals its dead-letter queue shows (the same in each)."""
    arrived = group[0].dead_lettered or 0.0
    weights = [max(row.unprocessed or 0.0, 0.0) for row in group]
    total = sum(weights)
    if total == 0:
        return [arrived / len(group)] * len(group)
    return [arrived * weight / total for weight in weights]


def _with_dead_lettered(row: QueueLedger, dead_lettered: float) -> QueueLedger:
    return row._replace(
        dead_lettered=dead_lettered,
        expired=_less(row.unprocessed, dead_lettered),
        extra_deliveries=_less(_less(row.received, row.deleted), dead_lettered),
        split_estimated=True,
    )


def _rank(row: QueueLedger) -> tuple[Any, ...]:
    lost, cost = row.unprocessed, row.empty_receive_cost
    return (lost is None, -(lost or 0.0), cost is None, -(cost or 0.0), row.uid)


def _key(resource: Resource) -> tuple[str, str, str, str] | None:
    """A queue's (account, region, namespace, name), from its ARN; None without one."""
    physical = resource.prop(model.PHYSICAL)
    key = arn_key(physical) if isinstance(physical, str) else None
    return key if key is not None and key[2] == SQS_NAMESPACE else None


def _total(context: QueueContext, uid: str, metric: str) -> float | None:
    series: SeriesRow | None = context.series(uid, metric)
    return None if series is None else series.total


def _less(value: float | None, less: float | None) -> float | None:
    return None if value is None or less is None else value - less


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _seconds(value: Any) -> int | None:
    """A retention property as written (absent: CloudFormation's default), None when the audit
    cannot read it as a number (a reference it could not resolve)."""
    if value is None:
        return limits.RETENTION_DEFAULT
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None
