"""Stop starting records before the invocation runs out of time, so a timeout returns only them.

A function that times out returns no partial batch response: Lambda retries the whole batch, the
records it finished included (Lambda developer guide, "Handling errors for an SQS event
source"). A ``TimeBudget`` tells a batch loop whether the next record may start: the
invocation's remaining time (``context.get_remaining_time_in_millis()``) must be at least the
margin. The records it did not start are reported as batch item failures and made visible again
at once (``backoff_batch``), so only they return, each with one more receive toward the queue's
``maxReceiveCount``.

Like ``constructs_lib.backoff`` this module imports no CDK.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Final, TypeVar

from constructs_lib import limits

logger = logging.getLogger(__name__)

# Kept for what follows the last record: the ChangeMessageVisibilityBatch calls of the records
# reported and the response. A call in the queue's region takes tens of milliseconds; a second
# leaves room for several and for a slow one.
WRAP_UP_SECONDS: Final = 1.0
# No visibility change is started with less than this left: the response must still leave
# before the timeout, or every record of the batch returns.
LAST_CALL_SECONDS: Final = 0.2
# The longest a function may run: a larger margin would stop every batch before its first record.
MARGIN_MAX: Final = float(limits.FUNCTION_TIMEOUT_MAX)

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])


class OutOfTime(Exception):
    """Raised by a handler ``TimeBudget.wrap`` made, in place of starting a record, when the time
    left is below the margin: Powertools' batch processor then reports the record as failed."""


class TimeBudget:
    """Whether the next record of a batch may start, from the invocation's remaining time.

    :param context: the Lambda context the handler receives (``get_remaining_time_in_millis``).
    :param margin: the seconds that must be left to start a record, 0-900. Default: the
        longest record so far plus ``WRAP_UP_SECONDS`` (1 s); the first record always starts
        when that much is left.

    A record's duration is read from the same clock, the invocation's remaining time.
    """

    def __init__(self, context: Any, margin: float | None = None) -> None:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            raise TypeError(
                f"context {type(context).__name__} has no get_remaining_time_in_millis(): pass "
                "the context object Lambda hands the handler"
            )
        if margin is not None and (
            isinstance(margin, bool)
            or not isinstance(margin, int | float)
            or not 0 <= margin <= MARGIN_MAX  # NaN too: it compares false
        ):
            raise ValueError(
                f"margin {margin!r} is not a number of seconds from 0 to {MARGIN_MAX:g} (the "
                "longest function timeout): pass one, or None to derive it from the records' "
                "durations"
            )
        self._remaining_ms: Callable[[], float] = remaining
        self._margin = margin
        self.slowest = 0.0
        self.stopped = False
        self.not_started: list[str] = []

    def remaining(self) -> float:
        """Seconds left in the invocation."""
        return float(self._remaining_ms()) / 1000

    def margin(self) -> float:
        """The seconds that must be left to start the next record."""
        return self._margin if self._margin is not None else self.slowest + WRAP_UP_SECONDS

    def may_start(self, message_id: str) -> bool:
        """Whether the record ``message_id`` may start. Once one may not, no later one may (a
        FIFO batch must stay in order); each refused record is in ``not_started``."""
        if not self.stopped:
            left, margin = self.remaining(), self.margin()
            if left < margin:
                self.stopped = True
                logger.warning(
                    "%.3f s left, under the margin of %.3f s: message %s and those after it "
                    "are not started and return to the queue",
                    left,
                    margin,
                    message_id,
                )
        if self.stopped:
            self.not_started.append(message_id)
        return not self.stopped

    def run(self, handle: Callable[[Any], object], record: Any) -> object:
        """``handle(record)``, timed: the default margin grows with the longest record."""
        left = self.remaining()
        try:
            return handle(record)
        finally:
            self.slowest = max(self.slowest, left - self.remaining())

    def may_call(self) -> bool:
        """Whether a visibility change may still start (``LAST_CALL_SECONDS`` left)."""
        return self.remaining() >= LAST_CALL_SECONDS

    def wrap(self, handle: HandlerT) -> HandlerT:
        """``handle``, for Powertools' batch processor: a record it may not start raises
        ``OutOfTime`` instead, which the processor reports as a failure. Pass the budget to
        ``apply_backoff`` too, so that those records come back at once, not after a backoff."""

        @functools.wraps(handle)
        def guarded(record: Any, *args: Any, **kwargs: Any) -> Any:
            message_id = _message_id(record)
            if not self.may_start(message_id):
                raise OutOfTime(f"message {message_id} not started: too little time left")
            return self.run(lambda r: handle(r, *args, **kwargs), record)

        return guarded  # type: ignore[return-value]


def _message_id(record: Any) -> str:
    """The message id of an SQS record as a dict (the event) or as Powertools' ``SQSRecord``."""
    if isinstance(record, dict):
        return str(record.get("messageId", ""))
    return str(getattr(record, "message_id", ""))
