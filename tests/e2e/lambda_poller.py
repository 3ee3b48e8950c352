"""Lambda's SQS poller, played by a test: receive, build the event, invoke, note the times.

The emulator cannot invoke Lambda functions (that needs Docker), so a test receives as the
poller does (``AttributeNames=All``, ``MessageAttributeNames=All``), turns the batch into the
event Lambda builds (``tests/support/sqs_events.py``), calls the handler code in this process and reads
its partial batch response. What the handler does to SQS (ChangeMessageVisibility) goes to the
emulator. Polls are short and repeated, so a message is seen within ``POLL_INTERVAL`` (and one
request) of becoming visible; every loop is bounded in time.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.sqs_events import event_of

ALL = ["All"]
POLL_INTERVAL = 0.1  # seconds between two empty receives
# Seconds a loaded machine may add between a message becoming visible and a poll seeing it (a
# request or two waiting for a core); the tests compare against waits much longer than this.
LATE_SLACK = 10.0


@dataclass(frozen=True)
class Attempt:
    """One receive of the message and what the handler answered."""

    receive_count: int
    received_at: float  # time.time() when the receive answered
    invoked_at: float  # time.time() just before the handler ran (its visibility change follows)
    response: dict[str, Any]


def receive_when_visible(sqs: Any, url: str, timeout: float) -> tuple[list[dict[str, Any]], float]:
    """The next batch the queue hands out within ``timeout`` seconds (empty if none), and when."""
    deadline = time.monotonic() + timeout
    while True:
        answer = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            AttributeNames=ALL,
            MessageSystemAttributeNames=ALL,
            MessageAttributeNames=ALL,
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        if messages or time.monotonic() > deadline:
            return messages, time.time()
        time.sleep(POLL_INTERVAL)


def retry_until_gone(
    sqs: Any,
    url: str,
    arn: str,
    invoke: Callable[[dict[str, Any]], dict[str, Any]],
    wait_after: Callable[[int], float],
    receives_max: int,
    quiet_after: Callable[[int], float] | None = None,
) -> list[Attempt]:
    """Receive one message and invoke the handler on it until the queue hands it out no more.

    After a receive numbered n the next poll waits up to ``wait_after(n)`` seconds, plus
    ``LATE_SLACK`` for a slow machine. ``quiet_after(n)``: seconds not to poll at all after the invocation (shorter
    than the least wait expected, so a message back too early is still seen too early), which
    spares the emulator minutes of polls on a long schedule. Stops after ``receives_max`` + 1
    receives at most.
    """
    attempts: list[Attempt] = []
    timeout = 5.0
    for _ in range(receives_max + 1):
        if attempts and quiet_after is not None:
            time.sleep(max(0.0, quiet_after(attempts[-1].receive_count)))
        messages, received_at = receive_when_visible(sqs, url, timeout)
        if not messages:
            break
        assert len(messages) == 1, messages
        count = int(messages[0]["Attributes"]["ApproximateReceiveCount"])
        event = event_of(messages, arn)
        invoked_at = time.time()
        attempts.append(Attempt(count, received_at, invoked_at, invoke(event)))
        timeout = wait_after(count) + LATE_SLACK
    return attempts


def gaps(attempts: list[Attempt]) -> list[float]:
    """Seconds from each invocation to the next receive: the message's time invisible, plus at
    most one poll interval and one request."""
    return [
        later.received_at - earlier.invoked_at for earlier, later in itertools.pairwise(attempts)
    ]
