"""A queue's ledger (``metrics/ledger.py``) from hand-made series: every formula of
docs/audit/ledger.md, its boundaries, and the fleet's order. Each expected figure is added up
by hand here from the planted series, never taken from the code under test."""

from __future__ import annotations

from typing import Any

import pytest

from constructs_lib.audit import model
from constructs_lib.audit.metrics import ledger
from constructs_lib.audit.model import QueueContext, QueueLedger, Resource, SeriesRow

ACCOUNT, REGION = "111122223333", "eu-west-1"
DAY_MS = 86_400_000
T0 = 1_795_000_000_000
T1 = T0 + DAY_MS  # the last reading of every gauge below: a span of one day
SENT, DELETED = "NumberOfMessagesSent", "NumberOfMessagesDeleted"
RECEIVED, EMPTY = "NumberOfMessagesReceived", "NumberOfEmptyReceives"
VISIBLE, IN_FLIGHT = "ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible"
DELAYED = "ApproximateNumberOfMessagesDelayed"


def _queue(uid: str, name: str | None, **props: Any) -> Resource:
    properties = dict(props)
    if name is not None:
        properties[model.PHYSICAL] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
    return Resource(uid, f"{uid}.json", "stack", uid.title(), model.QUEUE, properties)


def _count(metric: str, total: float, name: str = "orders") -> SeriesRow:
    return SeriesRow(ACCOUNT, REGION, "AWS/SQS", metric, name, total, total, 1440.0, T0, T1)


def _gauge(metric: str, opening: float, closing: float, name: str = "orders") -> SeriesRow:
    top = max(opening, closing)
    return SeriesRow(
        ACCOUNT, REGION, "AWS/SQS", metric, name, top, 0.0, 1440.0, T0, T1, opening, closing
    )


def _traffic(name: str = "orders") -> list[SeriesRow]:
    """Sent 1000, deleted 900, received 1200, 2,500,000 empty receives; visible 10 -> 40,
    in flight 0 -> 5, delayed 2 -> 7: the backlog grew by 30 + 5 + 5 = 40."""
    return [
        _count(SENT, 1000.0, name),
        _count(DELETED, 900.0, name),
        _count(RECEIVED, 1200.0, name),
        _count(EMPTY, 2_500_000.0, name),
        _gauge(VISIBLE, 10.0, 40.0, name),
        _gauge(IN_FLIGHT, 0.0, 5.0, name),
        _gauge(DELAYED, 2.0, 7.0, name),
    ]


def _context(
    queue: Resource,
    series: list[SeriesRow],
    dlq: Resource | None = None,
    dlq_series: tuple[SeriesRow, ...] = (),
    **more: Any,
) -> QueueContext:
    observed = [(queue.uid, s) for s in series] + [(dlq.uid if dlq else "", s) for s in dlq_series]
    return QueueContext(
        queue=queue,
        dead_letter_queues=(dlq,) if dlq else (),
        observed=tuple(sorted(observed)),
        **more,
    )


def _dlq_series(
    visible: tuple[float, float] = (0.0, 12.0), deleted: float = 5.0, sent: float = 0.0
) -> tuple[SeriesRow, ...]:
    return (
        _gauge(VISIBLE, *visible, name="orders-dlq"),
        _gauge(IN_FLIGHT, 0.0, 0.0, name="orders-dlq"),
        _count(DELETED, deleted, name="orders-dlq"),
        _count(SENT, sent, name="orders-dlq"),
    )


REDRIVE = {"RedrivePolicy": {"deadLetterTargetArn": "arn", "maxReceiveCount": 5}}
DLQ = _queue("dlq", "orders-dlq", MessageRetentionPeriod=1_209_600)


def _of(context: QueueContext, rule_ids: tuple[str, ...] = ()) -> QueueLedger:
    found = ledger.of_context(context, rule_ids)
    assert found is not None
    return found


def test_a_queue_without_a_dead_letter_queue_lost_what_expired() -> None:
    found = _of(_context(_queue("q", "orders"), _traffic()))
    assert (found.sent, found.deleted, found.received, found.empty_receives) == (
        1000.0,
        900.0,
        1200.0,
        2_500_000.0,
    )
    assert found.backlog_change == 40.0
    assert found.unprocessed == 60.0  # 1000 - 900 - 40
    assert (found.dead_lettered, found.expired, found.split_estimated) == (0.0, 60.0, False)
    assert found.extra_deliveries == 300.0  # 1200 - 900 - 0
    assert found.empty_receive_cost == pytest.approx(1.00)  # 2.5 million x USD 0.40 / million
    assert (found.account, found.region, found.name, found.fifo) == (
        ACCOUNT,
        REGION,
        "orders",
        False,
    )
    assert (found.uid, found.file, found.logical_id, found.explained_by) == ("q", "q.json", "Q", ())


def test_fifo_requests_cost_more() -> None:
    fifo = _of(_context(_queue("q", "orders.fifo", FifoQueue=True), _traffic("orders.fifo")))
    assert fifo.fifo
    assert fifo.empty_receive_cost == pytest.approx(1.25)  # 2.5 million x USD 0.50 / million


def test_without_a_delayed_series_none_were_delayed() -> None:
    series = [s for s in _traffic() if s.metric != DELAYED]
    found = _of(_context(_queue("q", "orders"), series))
    assert found.backlog_change == 35.0  # 30 + 5
    assert found.unprocessed == 65.0  # 1000 - 900 - 35


@pytest.mark.parametrize("missing", [VISIBLE, IN_FLIGHT])
def test_without_a_visible_or_in_flight_series_the_backlog_is_unknown(missing: str) -> None:
    series = [s for s in _traffic() if s.metric != missing]
    found = _of(_context(_queue("q", "orders"), series))
    assert (found.backlog_change, found.unprocessed, found.expired) == (None, None, None)
    assert found.dead_lettered == 0.0 and found.extra_deliveries == 300.0


def test_only_some_metrics_give_only_their_figures() -> None:
    found = _of(_context(_queue("q", "orders"), [_count(EMPTY, 1_000_000.0)]))
    assert (found.sent, found.deleted, found.received) == (None, None, None)
    assert (found.unprocessed, found.expired, found.extra_deliveries) == (None, None, None)
    assert found.empty_receive_cost == pytest.approx(0.40)


def test_no_ledger_without_an_arn_or_without_a_series_of_its_own() -> None:
    assert ledger.of_context(_context(_queue("q", None), [])) is None
    assert ledger.of_context(_context(_queue("q", "orders"), [])) is None
    # its dead-letter queue's series are not its own
    only_dlq = _context(_queue("q", "orders", **REDRIVE), [], DLQ, _dlq_series())
    assert ledger.of_context(only_dlq) is None


def test_a_dead_letter_queue_of_its_own_splits_dead_letters_from_expiries() -> None:
    # 4 d source retention, 14 d in the DLQ: 14 d >= 1 d of readings + 4 d, nothing expired there
    context = _context(_queue("q", "orders", **REDRIVE), _traffic(), DLQ, _dlq_series())
    found = _of(context)
    assert found.dead_lettered == 17.0  # DLQ backlog 0 -> 12, plus 5 deleted, less 0 sent
    assert found.expired == 43.0  # 60 - 17
    assert found.extra_deliveries == 283.0  # 1200 - 900 - 17
    assert (found.split_estimated, found.dead_letter_queue) == (False, "dlq")


def test_messages_sent_to_the_dead_letter_queue_are_not_dead_letters() -> None:
    context = _context(_queue("q", "orders", **REDRIVE), _traffic(), DLQ, _dlq_series(sent=4.0))
    assert _of(context).dead_lettered == 13.0  # 12 + 5 - 4


@pytest.mark.parametrize(
    ("retention", "estimated"),
    [
        # needed: 1 day of readings + the source's 4 days = 432,000 s
        pytest.param(431_999, True, id="just-below"),
        pytest.param(432_000, False, id="at"),
        pytest.param(432_001, False, id="just-above"),
    ],
)
def test_a_retention_short_enough_to_expire_dead_letters_makes_an_estimate(
    retention: int, estimated: bool
) -> None:
    dlq = _queue("dlq", "orders-dlq", MessageRetentionPeriod=retention)
    context = _context(_queue("q", "orders", **REDRIVE), _traffic(), dlq, _dlq_series())
    assert _of(context).split_estimated is estimated


def test_a_fifo_dead_letter_queue_restarts_the_clock() -> None:
    # FIFO resets a moved message's enqueue time: only the day of readings counts
    dlq = _queue("dlq", "orders-dlq.fifo", MessageRetentionPeriod=86_400, FifoQueue=True)
    source = _queue("q", "orders.fifo", FifoQueue=True, **REDRIVE)
    context = _context(source, _traffic("orders.fifo"), dlq, _dlq_series())
    assert _of(context).split_estimated is False


def test_dead_letters_held_at_the_start_may_expire_an_estimate() -> None:
    context = _context(
        _queue("q", "orders", **REDRIVE), _traffic(), DLQ, _dlq_series(visible=(1.0, 13.0))
    )
    found = _of(context)
    assert (found.dead_lettered, found.split_estimated) == (17.0, True)  # 12 + 5 - 0


def test_a_silent_dead_letter_queue_received_none_an_estimate() -> None:
    found = _of(_context(_queue("q", "orders", **REDRIVE), _traffic(), DLQ, ()))
    assert (found.dead_lettered, found.expired, found.split_estimated) == (0.0, 60.0, True)


def test_a_dead_letter_queue_the_audit_cannot_see_leaves_the_split_unknown() -> None:
    found = _of(_context(_queue("q", "orders", **REDRIVE), _traffic()))
    assert (found.dead_lettered, found.expired, found.extra_deliveries) == (None, None, None)
    assert found.unprocessed == 60.0
    no_arn = _of(_context(_queue("q", "orders", **REDRIVE), _traffic(), _queue("dlq", None)))
    assert (no_arn.dead_lettered, no_arn.dead_letter_queue) == (None, "dlq")


def test_a_dead_letter_queues_own_row_counts_no_loss() -> None:
    sources = (_queue("a", "a"), _queue("b", "b"))
    own = [_count(RECEIVED, 8.0, "orders-dlq"), *_dlq_series()]
    found = _of(QueueContext(DLQ, sources=sources, observed=tuple(("dlq", s) for s in own)))
    assert (found.sent, found.deleted, found.backlog_change) == (0.0, 5.0, 12.0)
    assert (found.unprocessed, found.expired) == (None, None)
    assert (found.dead_lettered, found.extra_deliveries) == (0.0, 3.0)  # 8 - 5 - 0
    assert found.dead_letter_sources == 2


def test_a_service_fed_dead_letter_queue_is_a_queue_like_any_other() -> None:
    feeder = (_queue("fn", None), "Lambda async invocations")
    found = _of(_context(_queue("q", "orders"), _traffic(), feeders=(feeder,)))
    assert (found.unprocessed, found.dead_letter_sources) == (60.0, 1)


def test_negative_figures_are_kept_not_clamped() -> None:
    # more deleted than sent while the backlog drained: the approximate gauges disagree
    series = [
        _count(SENT, 100.0),
        _count(DELETED, 130.0),
        _count(RECEIVED, 120.0),
        _gauge(VISIBLE, 30.0, 0.0),
        _gauge(IN_FLIGHT, 0.0, 0.0),
    ]
    found = _of(_context(_queue("q", "orders"), series))
    assert found.backlog_change == -30.0
    assert found.unprocessed == 0.0  # 100 - 130 + 30
    assert found.extra_deliveries == -10.0  # 120 - 130
    drained = _of(_context(_queue("q", "orders"), [*series[:3], _gauge(VISIBLE, 50.0, 0.0)]))
    assert drained.backlog_change is None  # no in-flight series
    exceeded = _context(
        _queue("q", "orders", **REDRIVE), _traffic(), DLQ, _dlq_series(deleted=70.0)
    )
    assert _of(exceeded).expired == -22.0  # 60 - (12 + 70)


def test_qr030_explains_extra_deliveries() -> None:
    context = _context(_queue("q", "orders"), _traffic())
    assert _of(context, ("QR007", "QR030")).explained_by == ("QR030",)
    assert _of(context, ("QR031",)).explained_by == ()


def _shared(uid: str, sent: float) -> QueueLedger:
    series = [
        _count(SENT, sent, uid),
        _count(DELETED, 0.0, uid),
        _count(RECEIVED, sent, uid),
        _gauge(VISIBLE, 0.0, 0.0, uid),
        _gauge(IN_FLIGHT, 0.0, 0.0, uid),
    ]
    context = _context(_queue(uid, uid, **REDRIVE), series, DLQ, _dlq_series((0.0, 40.0), 0.0))
    return _of(context)


def test_a_shared_dead_letter_queue_splits_its_arrivals_by_what_each_source_lost() -> None:
    dlq_row = _of(
        QueueContext(
            DLQ,
            sources=(_queue("a", "a"), _queue("b", "b")),
            observed=tuple(("dlq", s) for s in _dlq_series((0.0, 40.0), 0.0)),
        )
    )
    a, b = _shared("a", 60.0), _shared("b", 20.0)
    assert a.dead_lettered == b.dead_lettered == 40.0  # each sees the whole DLQ before ranking
    by_uid = {row.uid: row for row in ledger.ranked([b, dlq_row, a])}
    # 40 arrivals shared 60 : 20
    assert (by_uid["a"].dead_lettered, by_uid["a"].expired) == (30.0, 30.0)
    assert (by_uid["b"].dead_lettered, by_uid["b"].expired) == (10.0, 10.0)
    assert by_uid["a"].extra_deliveries == 30.0  # 60 received - 0 deleted - 30
    assert by_uid["a"].split_estimated and by_uid["b"].split_estimated
    assert by_uid["dlq"] == dlq_row


def test_a_shared_dead_letter_queue_with_no_loss_splits_evenly() -> None:
    dlq_row = _of(
        QueueContext(
            DLQ,
            sources=(_queue("a", "a"), _queue("b", "b")),
            observed=tuple(("dlq", s) for s in _dlq_series((0.0, 40.0), 0.0)),
        )
    )
    # shared as the DLQ's own row says, or as two ledgers naming it say
    for rows in (
        [_shared("a", 0.0), _shared("b", 0.0), dlq_row],
        [_shared("a", 0.0), _shared("b", 0.0)],
    ):
        ranked = ledger.ranked(rows)
        assert [row.dead_lettered for row in ranked if row.uid != "dlq"] == [20.0, 20.0]


def test_a_dead_letter_queue_fed_by_a_service_too_gives_its_one_source_an_estimate() -> None:
    feeder = (_queue("fn", None), "Lambda async invocations")
    dlq_row = _of(
        QueueContext(
            DLQ,
            sources=(_queue("a", "a"),),
            feeders=(feeder,),
            observed=tuple(("dlq", s) for s in _dlq_series((0.0, 40.0), 0.0)),
        )
    )
    (a,) = [row for row in ledger.ranked([_shared("a", 60.0), dlq_row]) if row.uid == "a"]
    assert (a.dead_lettered, a.split_estimated) == (40.0, True)


def _ranked_row(uid: str, lost: float | None, cost: float | None) -> QueueLedger:
    row = _of(_context(_queue(uid, uid), [_count(SENT, 1.0, uid)]))
    return row._replace(unprocessed=lost, empty_receive_cost=cost)


def test_the_fleet_is_ranked_by_loss_then_money_then_uid() -> None:
    rows = [
        _ranked_row("e", None, 9.0),
        _ranked_row("d", 5.0, None),
        _ranked_row("c", 5.0, 1.0),
        _ranked_row("b", 5.0, 1.0),
        _ranked_row("a", 50.0, 0.0),
        _ranked_row("f", None, None),
        _ranked_row("g", -3.0, 2.0),
    ]
    assert [row.uid for row in ledger.ranked(rows)] == ["a", "b", "c", "d", "g", "e", "f"]
