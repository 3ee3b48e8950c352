"""Batches that stop before the timeout: a record starts only while the invocation has the
margin left, and the records not started are reported so that only they return.

The Lambda context is a stand-in (``Context``): its clock is the test's, so that every boundary
is exact. The visibility changes go to a client that records them (``Recorder``); the same
batches run against the emulator's SQS in ``tests/e2e/test_retry_backoff.py``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from constructs_lib.backoff import Backoff
from constructs_lib.backoff_batch import apply_backoff, process_batch
from constructs_lib.time_budget import (
    LAST_CALL_SECONDS,
    MARGIN_MAX,
    WRAP_UP_SECONDS,
    TimeBudget,
)
from tests.support.sqs_events import made_up, queue_arn

SCHEDULE = Backoff(base_seconds=60, factor=1, cap_seconds=60, jitter=0)


@dataclass
class Clock:
    """The test's time, in seconds; records advance it by what they cost."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Context:
    """The Lambda context's one method the budget reads, on the test's clock (whole
    milliseconds, as Lambda's)."""

    clock: Clock
    deadline: float

    def get_remaining_time_in_millis(self) -> int:
        return max(0, round((self.deadline - self.clock.now) * 1000))


@dataclass
class Recorder:
    """An SQS client that records ChangeMessageVisibilityBatch calls and accepts every entry;
    each call costs ``cost`` seconds of the test's clock."""

    clock: Clock
    cost: float = 0.0
    calls: list[list[dict[str, Any]]] = field(default_factory=list)

    def change_message_visibility_batch(
        self, QueueUrl: str, Entries: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self.clock.now += self.cost
        self.calls.append(Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def waits(self) -> list[int]:
        return [entry["VisibilityTimeout"] for call in self.calls for entry in call]


def batch(count: int, arn: str = queue_arn("orders")) -> dict[str, Any]:
    return {"Records": [made_up(f"m{i}", arn=arn) for i in range(count)]}


def costing(clock: Clock, seconds: dict[str, float], fail: frozenset[str] = frozenset()) -> Any:
    """A record handler whose record ``mN`` takes ``seconds[mN]`` (default 1 s) of the clock and
    raises when it is in ``fail``; it lists the records it started."""
    started: list[str] = []

    def handle(record: dict[str, Any]) -> None:
        started.append(record["messageId"])
        clock.now += seconds.get(record["messageId"], 1.0)
        if record["messageId"] in fail:
            raise RuntimeError("downstream is down")

    handle.started = started  # type: ignore[attr-defined]
    return handle


def reported(response: dict[str, Any]) -> list[str]:
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


def run(
    count: int, remaining: float, margin: float | None, **handler: Any
) -> tuple[dict[str, Any], list[str], Recorder]:
    clock = Clock()
    client = Recorder(clock)
    handle = costing(clock, **handler)
    context = Context(clock, deadline=remaining)
    response = process_batch(
        batch(count), handle, backoff=SCHEDULE, sqs_client=client, context=context, margin=margin
    )
    return response, handle.started, client


# --- a margin given -------------------------------------------------------------------------


def test_a_record_starts_with_the_margin_exactly_left_and_not_a_millisecond_less() -> None:
    # Three records of 1 s each, 5 s to run, a 3 s margin: m0 starts with 5 s left, m1 with 4 s,
    # m2 with exactly 3 s; a 3.001 s margin stops at m2.
    response, started, client = run(3, remaining=5.0, margin=3.0, seconds={})
    assert started == ["m0", "m1", "m2"]
    assert reported(response) == [] and client.calls == []
    response, started, client = run(3, remaining=5.0, margin=3.001, seconds={})
    assert started == ["m0", "m1"]
    assert reported(response) == ["m2"]
    assert client.waits() == [0]  # back at once, not after the queue's visibility timeout


def test_one_record_left_when_time_runs_short_is_the_only_one_returned() -> None:
    response, started, client = run(4, remaining=10.0, margin=2.0, seconds={"m2": 6.5})
    assert started == ["m0", "m1", "m2"]
    assert reported(response) == ["m3"]
    assert client.waits() == [0]


def test_no_record_starts_when_the_invocation_begins_under_the_margin() -> None:
    response, started, client = run(3, remaining=1.5, margin=2.0, seconds={})
    assert started == []
    assert reported(response) == ["m0", "m1", "m2"]
    assert client.waits() == [0, 0, 0]


def test_failed_records_wait_their_backoff_and_records_not_started_come_back_at_once() -> None:
    response, started, client = run(
        4, remaining=4.0, margin=2.0, seconds={}, fail=frozenset({"m1"})
    )
    assert started == ["m0", "m1", "m2"]
    assert reported(response) == ["m1", "m3"]
    assert client.waits() == [60, 0]


# --- the margin derived from the records ----------------------------------------------------


def test_the_default_margin_is_the_slowest_record_so_far_and_the_wrap_up() -> None:
    # m0 takes 2 s and m1 3 s: before m2 the margin is 3 s + WRAP_UP_SECONDS.
    left_before_m2 = 3.0 + WRAP_UP_SECONDS
    response, started, _ = run(
        3, remaining=5.0 + left_before_m2, margin=None, seconds={"m0": 2.0, "m1": 3.0}
    )
    assert started == ["m0", "m1", "m2"]
    assert reported(response) == []
    response, started, _ = run(
        3, remaining=5.0 + left_before_m2 - 0.001, margin=None, seconds={"m0": 2.0, "m1": 3.0}
    )
    assert started == ["m0", "m1"]
    assert reported(response) == ["m2"]


def test_the_first_record_needs_only_the_wrap_up_by_default() -> None:
    assert run(1, remaining=WRAP_UP_SECONDS, margin=None, seconds={})[1] == ["m0"]
    assert run(1, remaining=WRAP_UP_SECONDS - 0.001, margin=None, seconds={})[1] == []


# --- FIFO -----------------------------------------------------------------------------------


def test_a_fifo_batch_stops_in_order_and_reports_every_later_record() -> None:
    clock = Clock()
    client = Recorder(clock)
    handle = costing(clock, seconds={})
    arn = queue_arn("payments.fifo")
    event = batch(4, arn=arn)
    for index, record in enumerate(event["Records"]):
        record["attributes"]["MessageGroupId"] = "ab"[index % 2]
    response = process_batch(
        event, handle, backoff=SCHEDULE, sqs_client=client, context=Context(clock, 2.5), margin=1
    )
    assert handle.started == ["m0", "m1"]
    assert reported(response) == ["m2", "m3"]
    assert client.waits() == [0, 0]  # nothing failed: every group comes back at once


# --- the wrap-up keeps its time -------------------------------------------------------------


def test_no_visibility_change_starts_in_the_last_moments(caplog: pytest.LogCaptureFixture) -> None:
    # 25 records not started: three calls of ten; each call costs 0.1 s and the batch starts
    # with LAST_CALL_SECONDS + 0.15 s left, so two calls are made and the third is not.
    clock = Clock()
    client = Recorder(clock, cost=0.1)
    handle = costing(clock, seconds={})
    context = Context(clock, deadline=LAST_CALL_SECONDS + 0.15)
    with caplog.at_level(logging.WARNING, logger="constructs_lib"):
        response = process_batch(
            batch(25), handle, backoff=SCHEDULE, sqs_client=client, context=context, margin=5
        )
    assert len(reported(response)) == 25  # every record still reported: none is lost
    assert [len(call) for call in client.calls] == [10, 10]
    skipped = [r for r in caplog.records if "not changed: too little time left" in r.getMessage()]
    assert len(skipped) == 5


# --- Powertools -----------------------------------------------------------------------------


def test_a_wrapped_handler_raises_for_records_it_may_not_start() -> None:
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        process_partial_response,
    )

    clock = Clock()
    client = Recorder(clock)
    handle = costing(clock, seconds={}, fail=frozenset({"m0"}))
    budget = TimeBudget(Context(clock, deadline=3.5), margin=1.0)
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    event = batch(4)
    response = process_partial_response(
        event=event,
        record_handler=budget.wrap(lambda record: handle(record.raw_event)),
        processor=processor,
    )
    apply_backoff(event, response, backoff=SCHEDULE, sqs_client=client, budget=budget)
    assert handle.started == ["m0", "m1", "m2"]
    assert budget.not_started == ["m3"]
    assert reported(dict(response)) == ["m0", "m3"]
    assert client.waits() == [60, 0]  # m0 failed and backs off; m3 comes back at once


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("margin", [-0.001, MARGIN_MAX + 1, "5", True, float("nan")])
def test_a_margin_out_of_range_names_the_value_the_range_and_the_fix(margin: Any) -> None:
    with pytest.raises(ValueError, match=r"margin .* is not a number of seconds from 0 to 900"):
        TimeBudget(Context(Clock(), 10.0), margin=margin)


def test_a_context_without_the_remaining_time_is_named() -> None:
    with pytest.raises(TypeError, match="context dict has no get_remaining_time_in_millis"):
        TimeBudget({"remaining": 10})


def test_a_margin_without_a_context_is_refused_before_any_record() -> None:
    handle = costing(Clock(), seconds={})
    with pytest.raises(TypeError, match="margin needs the invocation's time: pass context="):
        process_batch(batch(1), handle, backoff=SCHEDULE, margin=2.0)
    assert handle.started == []
