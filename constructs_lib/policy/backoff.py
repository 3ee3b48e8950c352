"""Decisions about retries with exponential backoff that the constructs make (no CDK): how long
a message failing every receive needs to reach the dead-letter queue when its consumers wait
between receives (``dead_letters.expiry_before_dead_letter_problems`` asks here)."""

from __future__ import annotations

from collections.abc import Sequence

from constructs_lib import limits
from constructs_lib.backoff import Backoff
from constructs_lib.errors import Problem


def backoff_expiry_problems(
    max_receive_count: int,
    visibility_timeout: int,
    retention: int,
    backoffs: Sequence[tuple[Backoff, int]],
) -> list[Problem]:
    """With backoff each receive holds a failing message for the function timeout and then its
    wait, or the visibility timeout after a crash, whichever is longer (for one consumer, the
    sum is ``Backoff.worst_case_seconds``). Several consumers with backoff share the queue, and
    any of them may take any receive: each receive counts its longest hold."""
    waits = [
        max(schedule.ceiling(n) for schedule, _ in backoffs)
        for n in range(1, max_receive_count + 1)
    ]
    holds = [
        max(visibility_timeout, *(timeout + schedule.ceiling(n) for schedule, timeout in backoffs))
        for n in range(1, max_receive_count + 1)
    ]
    needed = sum(holds)
    if needed < retention:
        return []
    return [
        Problem(
            "retention_period",
            retention,
            f"is not longer than the {needed:,} s a message failing every receive needs to reach "
            f"the dead-letter queue with retry_backoff: it waits {_runs(waits)} s after receives "
            f"1-{max_receive_count}, each receive holding it for up to the function timeout plus "
            f"that wait and at least the {visibility_timeout} s visibility timeout "
            f"({_runs(holds)} s, {needed:,} s in all); SQS deletes it by expiry first and it "
            "never reaches the DLQ",
            f"lower retry_backoff's cap or base, or max_receive_count, or keep messages longer "
            f"than {needed:,} s (retention_period, at most {limits.RETENTION_MAX:,} s)",
        )
    ]


def _runs(values: Sequence[int]) -> str:
    """``10, 20, 40, 900 x 12, 0``: a schedule with its repeats counted."""
    parts: list[str] = []
    index = 0
    while index < len(values):
        end = index
        while end + 1 < len(values) and values[end + 1] == values[index]:
            end += 1
        count = end - index + 1
        parts.append(f"{values[index]:,}" + (f" x {count}" if count > 2 else ""))
        if count == 2:
            parts.append(f"{values[index]:,}")
        index = end + 1
    return ", ".join(parts)
