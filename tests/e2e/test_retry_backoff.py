"""Retry backoff against the emulator's SQS: a failing message comes back on the schedule and
reaches the dead-letter queue after exactly maxReceiveCount receives.

What the emulator cannot do: invoke a Lambda function. The test plays Lambda's poller
(``lambda_poller.py``): it receives as the poller does, builds the event Lambda builds, runs the
handler code here and reads its partial batch response; the handler's ChangeMessageVisibility
calls go to the emulator through a client the helper builds itself (``AWS_ENDPOINT_URL`` points
boto3 there), as in a function. Times are the emulator's: it keeps visibility in milliseconds
on this machine's clock.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)

from constructs_lib.backoff import Backoff
from constructs_lib.backoff_batch import apply_backoff, process_batch
from example.handlers import orders
from tests.support.sqs_events import event_of, made_up, queue_arn

from .emulator import REPO_ROOT, Emulator
from .lambda_poller import LATE_SLACK, POLL_INTERVAL, gaps, receive_when_visible, retry_until_gone
from .messages import Received, depth, drain, release, send

pytestmark = pytest.mark.e2e
MAX_RECEIVE_COUNT = 3
# The queue's own visibility timeout: far longer than any wait below, so a gap this short can
# only be the backoff's.
QUEUE_VISIBILITY = 30
SCHEDULE = Backoff(base_seconds=1, factor=2, cap_seconds=60, jitter=0, max_receive_count=3)
# A gap is the wait set, measured from just before the handler ran: never shorter, bar the
# emulator's millisecond rounding; and longer by at most one poll interval and what a loaded
# machine adds, still far below QUEUE_VISIBILITY (so the wait is the backoff's, not the queue's).
EARLY = 0.01
LATE = POLL_INTERVAL + LATE_SLACK


@dataclass
class InvocationClock:
    """A Lambda context's remaining time, on this machine's clock."""

    deadline: float

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class DownstreamDown(RuntimeError):
    """What the handler raises: the service it calls is down."""


def failing_handler(record: Any) -> None:
    raise DownstreamDown(f"downstream is down (message {record['messageId']})")


@dataclass(frozen=True)
class QueuePair:
    url: str
    arn: str
    dead_letter_url: str


@pytest.fixture
def sqs(client_factory: Callable[..., Any]) -> Any:
    return client_factory("sqs")


@pytest.fixture
def function_environment(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment a function has, pointed at the emulator: the helper builds its own client."""
    for name, value in emulator.aws_env().items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def make_queues(sqs: Any) -> Iterator[Callable[..., QueuePair]]:
    made: list[str] = []

    def make(fifo: bool = False) -> QueuePair:
        suffix = ".fifo" if fifo else ""
        name = f"backoff-{uuid.uuid4().hex[:8]}"
        extra = {"FifoQueue": "true"} if fifo else {}
        dead_letter_url = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=extra)[
            "QueueUrl"
        ]
        dead_letter_arn = sqs.get_queue_attributes(
            QueueUrl=dead_letter_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        redrive = {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": MAX_RECEIVE_COUNT}
        url = sqs.create_queue(
            QueueName=f"{name}{suffix}",
            Attributes={
                **extra,
                "VisibilityTimeout": str(QUEUE_VISIBILITY),
                "RedrivePolicy": json.dumps(redrive),
            },
        )["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        made.extend([url, dead_letter_url])
        return QueuePair(url, arn, dead_letter_url)

    yield make
    for url in made:
        sqs.delete_queue(QueueUrl=url)


def assert_backs_off_then_dead_letters(
    sqs: Any, queues: QueuePair, invoke: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    sent_id = send(sqs, queues.url, '{"order_id": 1}')

    attempts = retry_until_gone(
        sqs, queues.url, queues.arn, invoke, SCHEDULE.ceiling, MAX_RECEIVE_COUNT + 2
    )

    # Every receive failed and was reported.
    assert [a.receive_count for a in attempts] == [1, 2, 3]
    for attempt in attempts:
        assert attempt.response == {"batchItemFailures": [{"itemIdentifier": sent_id}]}
    # Visible again after the schedule's wait (1 s, then 2 s), not the queue's 30 s.
    waits = [SCHEDULE.delay(a.receive_count) for a in attempts[:-1]]
    assert waits == [1, 2]
    for gap, wait in zip(gaps(attempts), waits, strict=True):
        assert wait - EARLY <= gap <= wait + LATE, (gaps(attempts), waits)
    # The last receive waited nothing: the next receive moved it to the DLQ.
    assert SCHEDULE.delay(3) == 0
    assert depth(sqs, queues.url) == 0
    (dead,) = drain(sqs, queues.dead_letter_url, expected=1, seconds=10)
    assert dead.message_id == sent_id


@pytest.mark.usefixtures("function_environment")
def test_failing_message_backs_off_on_schedule_and_dead_letters(
    sqs: Any, make_queues: Callable[..., QueuePair]
) -> None:
    queues = make_queues()

    def handler(event: dict[str, Any]) -> dict[str, Any]:
        return process_batch(event, failing_handler, backoff=SCHEDULE)

    assert_backs_off_then_dead_letters(sqs, queues, handler)


@pytest.mark.usefixtures("function_environment")
def test_powertools_batch_processor_with_apply_backoff(
    sqs: Any, make_queues: Callable[..., QueuePair], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Powertools' real BatchProcessor; its response goes through ``apply_backoff``. The settings
    come from the function's environment, as the construct writes them."""
    queues = make_queues()
    for name, value in SCHEDULE.to_environment().items():
        monkeypatch.setenv(name, value)
    # A batch whose every record failed must still return a response (not raise) to be backed off.
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def handler(event: dict[str, Any]) -> dict[str, Any]:
        response = process_partial_response(
            event=event, record_handler=failing_handler, processor=processor
        )
        result = apply_backoff(event, response)
        assert result is response
        return dict(result)

    assert_backs_off_then_dead_letters(sqs, queues, handler)


@pytest.mark.usefixtures("function_environment")
def test_fifo_failure_holds_its_group_and_releases_the_others(
    sqs: Any, make_queues: Callable[..., QueuePair]
) -> None:
    queues = make_queues(fifo=True)
    for body, group in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        send(sqs, queues.url, body, group=group)
    messages, _ = receive_when_visible(sqs, queues.url, timeout=5)
    assert [m["Body"] for m in messages] == ["a1", "a2", "b1"]
    handled: list[str] = []

    def handle(record: Any) -> None:
        handled.append(record["body"])
        raise DownstreamDown("downstream is down")

    backoff = Backoff(base_seconds=3, jitter=0, max_receive_count=MAX_RECEIVE_COUNT)
    event = event_of(messages, queues.arn)
    invoked_at = time.time()
    response = process_batch(event, handle, backoff=backoff)

    # Lambda's rule: after the first failure the rest of the batch is reported, not processed.
    assert handled == ["a1"]
    assert response == {"batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in messages]}
    # Group b did not fail: it is back at once.
    again, _ = receive_when_visible(sqs, queues.url, timeout=2)
    assert [m["Body"] for m in again] == ["b1"]
    sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=again[0]["ReceiptHandle"])
    # Group a waits a1's 3 s, both messages: the group comes back together.
    back: dict[str, float] = {}
    while len(back) < 2 and time.time() - invoked_at < 3 + 2 * LATE:
        batch, received_at = receive_when_visible(sqs, queues.url, timeout=3 + LATE)
        for message in batch:
            assert int(message["Attributes"]["ApproximateReceiveCount"]) >= 2
            back.setdefault(message["Body"], received_at - invoked_at)
            release(sqs, queues.url, Received.of(message))
    assert sorted(back) == ["a1", "a2"]
    assert all(3 - EARLY <= gap <= 3 + LATE for gap in back.values()), back
    # Their order is SQS's to keep. The emulator may hand out a2 first when a2's wait ends a
    # millisecond after a1's (it releases a group whose last in-flight message turns visible);
    # SQS keeps a group blocked while any of its messages is in flight, then hands out a1 first.


@pytest.mark.usefixtures("function_environment")
def test_a_visibility_change_that_fails_still_reports_the_record(
    sqs: Any, make_queues: Callable[..., QueuePair], caplog: pytest.LogCaptureFixture
) -> None:
    """The emulator's own errors: a receipt handle SQS does not know (one entry of the batch
    call fails) and a queue that is gone (the whole call fails)."""
    queues = make_queues()
    send(sqs, queues.url, "real")
    messages, _ = receive_when_visible(sqs, queues.url, timeout=5)
    event = event_of(messages, queues.arn)
    stale = made_up("stale-handle", arn=queues.arn)
    event["Records"].append(stale)
    gone = {"Records": [made_up(f"gone-{i}", arn=queue_arn("no-such-queue")) for i in range(2)]}

    with caplog.at_level(logging.WARNING, logger="constructs_lib.backoff_batch"):
        response = process_batch(event, failing_handler, backoff=SCHEDULE)
        gone_response = process_batch(gone, failing_handler, backoff=SCHEDULE)

    assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == [
        messages[0]["MessageId"],
        "stale-handle",
    ]
    assert [f["itemIdentifier"] for f in gone_response["batchItemFailures"]] == [
        "gone-0",
        "gone-1",
    ]
    not_set = [r.getMessage() for r in caplog.records if "backoff not set" in r.getMessage()]
    assert not_set == [
        "backoff not set for message stale-handle: ChangeMessageVisibility failed with "
        "ReceiptHandleIsInvalid; it is reported failed and returns after the queue's visibility "
        "timeout",
        *[
            f"backoff not set for message gone-{i}: ChangeMessageVisibility failed with "
            "AWS.SimpleQueueService.NonExistentQueue; it is reported failed and returns after "
            "the queue's visibility timeout"
            for i in range(2)
        ],
    ]
    assert not any("receipt-handle" in r.getMessage() for r in caplog.records)
    # The real message's change went through: it is back after 1 s, not the queue's 30 s.
    again, _ = receive_when_visible(sqs, queues.url, timeout=1 + LATE)
    assert [m["MessageId"] for m in again] == [messages[0]["MessageId"]]


@pytest.mark.usefixtures("function_environment")
def test_example_orders_handler_backs_off_the_bad_orders_only(
    sqs: Any, make_queues: Callable[..., QueuePair], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``example/handlers/orders.py`` as the function runs it, its settings in the environment."""
    queues = make_queues()
    for name, value in SCHEDULE.to_environment().items():
        monkeypatch.setenv(name, value)
    bodies = ['{"order_id": 1}', "not json", '{"quantity": 2}', '{"order_id": 4, "quantity": 0}']
    sent = [send(sqs, queues.url, body) for body in bodies]
    received: list[dict[str, Any]] = []
    while len(received) < len(bodies):
        batch, _ = receive_when_visible(sqs, queues.url, timeout=5)
        assert batch, "the orders did not arrive"
        received += batch
    event = event_of(received, queues.arn)
    invoked_at = time.time()

    response = orders.handler(event, None)

    bad = set(sent[1:])
    assert {item["itemIdentifier"] for item in response["batchItemFailures"]} == bad
    # The bad orders wait their first backoff (1 s), not the queue's 30 s; the good one, which
    # Lambda would delete, keeps the visibility timeout of its receive.
    back: dict[str, float] = {}
    while len(back) < len(bad) and time.time() - invoked_at < 1 + 2 * LATE:
        batch, received_at = receive_when_visible(sqs, queues.url, timeout=1 + LATE)
        back |= {m["MessageId"]: received_at - invoked_at for m in batch}
    assert set(back) == bad
    assert all(1 - EARLY <= gap <= 1 + LATE for gap in back.values()), back


DOCS_HANDLERS = sorted((REPO_ROOT / "docs" / "examples" / "handlers").glob("retry_backoff_*.py"))


@pytest.mark.parametrize("path", DOCS_HANDLERS, ids=lambda path: path.stem)
@pytest.mark.usefixtures("function_environment")
def test_docs_handler_examples_back_off_what_fails(
    path: Path, sqs: Any, make_queues: Callable[..., QueuePair], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/retries.md's handlers, run on an event built from a real receive."""
    spec = importlib.util.spec_from_file_location(f"docs_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    queues = make_queues()
    for name, value in SCHEDULE.to_environment().items():
        monkeypatch.setenv(name, value)
    good = send(sqs, queues.url, json.dumps({"payment_id": "p1", "amount_cents": 250}))
    bad = send(sqs, queues.url, json.dumps({"payment_id": "p2", "amount_cents": 0}))
    received: list[dict[str, Any]] = []
    while len(received) < 2:
        batch, _ = receive_when_visible(sqs, queues.url, timeout=5)
        assert batch, "the payments did not arrive"
        received += batch
    invoked_at = time.time()

    context = InvocationClock(time.monotonic() + 60)
    response = example.handler(event_of(received, queues.arn), context)

    assert [item["itemIdentifier"] for item in response["batchItemFailures"]] == [bad]
    again, received_at = receive_when_visible(sqs, queues.url, timeout=1 + LATE)
    assert [m["MessageId"] for m in again] == [bad]
    assert 1 - EARLY <= received_at - invoked_at <= 1 + LATE
    assert good not in {m["MessageId"] for m in again}


@pytest.mark.usefixtures("function_environment")
def test_a_batch_that_runs_short_of_time_returns_only_the_records_it_did_not_start(
    sqs: Any, make_queues: Callable[..., QueuePair]
) -> None:
    queues = make_queues()
    sent = [send(sqs, queues.url, json.dumps({"order_id": i})) for i in range(3)]
    received: list[dict[str, Any]] = []
    while len(received) < 3:
        batch, _ = receive_when_visible(sqs, queues.url, timeout=5)
        assert batch, "the orders did not arrive"
        received += batch
    handled: list[str] = []

    def slow(record: Any) -> None:
        handled.append(record["messageId"])
        time.sleep(1.0)

    # 3 s to run, 1 s a record, 1.5 s of margin: two records start (3 s and about 2 s left), the
    # third would start with about 1 s left, under the margin.
    context = InvocationClock(time.monotonic() + 3.0)
    response = process_batch(event_of(received, queues.arn), slow, context=context, margin=1.5)
    finished_at = time.time()

    order = [m["MessageId"] for m in received]
    assert handled == order[:2]
    assert response == {"batchItemFailures": [{"itemIdentifier": order[2]}]}
    # Lambda deletes the records the response does not name.
    for message in received[:2]:
        sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=message["ReceiptHandle"])
    # The record not started is visible again at once, not after the queue's 30 s, one receive on.
    again, received_at = receive_when_visible(sqs, queues.url, timeout=LATE)
    assert [m["MessageId"] for m in again] == [order[2]]
    assert received_at - finished_at <= LATE
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    assert sorted(sent) == sorted(order)
