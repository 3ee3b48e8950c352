"""How a failing message reaches the dead-letter queue: the retention of both queues and their
order, how many receives it gets, whether it expires first, and whether the DLQ takes every
message the source takes."""

from __future__ import annotations

from collections.abc import Sequence

from constructs_lib import limits
from constructs_lib.backoff import Backoff
from constructs_lib.errors import Problem
from constructs_lib.policy._ranges import out_of_range
from constructs_lib.policy.backoff import backoff_expiry_problems


def retention_problems(
    fifo: bool, source_retention: int | None, dead_letter_retention: int | None
) -> list[Problem]:
    unit = " seconds (1 minute to 14 days)"
    problems = out_of_range(
        "retention_period",
        source_retention,
        limits.RETENTION_MIN,
        limits.RETENTION_MAX,
        unit,
        "choose a retention period within SQS's range",
    ) + out_of_range(
        "dead_letter_retention_period",
        dead_letter_retention,
        limits.RETENTION_MIN,
        limits.RETENTION_MAX,
        unit,
        "choose a retention period within SQS's range; 14 days gives the most time to inspect failures",
    )
    return problems + retention_order_problems(fifo, source_retention, dead_letter_retention)


def retention_order_problems(
    fifo: bool, source_retention: int | None, dead_letter_retention: int | None
) -> list[Problem]:
    """A standard source must keep messages for less time than its DLQ (ranges aside)."""
    if (
        fifo
        or source_retention is None
        or dead_letter_retention is None
        or source_retention < dead_letter_retention
    ):
        return []
    return [
        Problem(
            "retention_period",
            source_retention,
            f"must be shorter than dead_letter_retention_period ({dead_letter_retention} s): a standard "
            "queue keeps a message's original enqueue time when it moves to the DLQ, so the DLQ would "
            "delete it on arrival or soon after",
            "shorten retention_period or lengthen dead_letter_retention_period (at most 14 days)",
        )
    ]


def max_receive_count_problems(
    max_receive_count: int | None, has_lambda_consumer: bool
) -> list[Problem]:
    problems = out_of_range(
        "max_receive_count",
        max_receive_count,
        limits.MAX_RECEIVE_COUNT_MIN,
        limits.MAX_RECEIVE_COUNT_MAX,
        "",
        "choose how many receives a message gets before it moves to the DLQ, within SQS's range",
    )
    if has_lambda_consumer:
        problems += lambda_receive_count_problems(max_receive_count)
    return problems


def lambda_receive_count_problems(max_receive_count: int | None) -> list[Problem]:
    """The warning for fewer receives than AWS recommends with a Lambda consumer."""
    if (
        max_receive_count is None
        or not limits.MAX_RECEIVE_COUNT_MIN <= max_receive_count < limits.LAMBDA_MIN_RECEIVE_COUNT
    ):
        return []
    return [
        Problem(
            "max_receive_count",
            max_receive_count,
            f"is below {limits.LAMBDA_MIN_RECEIVE_COUNT}, the least AWS recommends with a Lambda consumer: "
            "throttled invocations count as receives, so healthy messages can reach the DLQ",
            f"raise max_receive_count to at least {limits.LAMBDA_MIN_RECEIVE_COUNT}",
            severity="warning",
        )
    ]


_LONGER_RETENTIONS = (
    (3600, "Duration.hours(1)"),
    (24 * 3600, "Duration.days(1)"),
    (limits.RETENTION_DEFAULT, "Duration.days(4)"),
    (13 * 24 * 3600, "Duration.days(13)"),
)


def expiry_before_dead_letter_problems(
    max_receive_count: int | None,
    visibility_timeout: int | None,
    retention: int | None,
    backoffs: Sequence[tuple[Backoff, int]] = (),
) -> list[Problem]:
    """A failing message needs ``maxReceiveCount x visibility timeout`` to reach the DLQ; when
    that reaches the source's retention, SQS deletes it by expiry first and it is lost.

    ``backoffs`` are the ``(schedule, function timeout)`` of the consumers with
    ``retry_backoff``: a message then needs up to ``Backoff.worst_case_seconds``."""
    if max_receive_count is None or visibility_timeout is None or retention is None:
        return []
    if backoffs:
        return backoff_expiry_problems(max_receive_count, visibility_timeout, retention, backoffs)
    needed = max_receive_count * visibility_timeout
    if needed < retention:
        return []
    # The shortest round retention that would do, below the 14 days of a created DLQ.
    example = next((text for seconds, text in _LONGER_RETENTIONS if seconds > needed), None)
    return [
        Problem(
            "retention_period",
            retention,
            f"is not longer than the {needed} s a failing message needs to reach the dead-letter "
            f"queue ({max_receive_count} receives x {visibility_timeout} s visibility timeout): "
            "SQS deletes it by expiry first and it never reaches the DLQ",
            f"keep messages longer than {needed} s (at most {limits.RETENTION_MAX} s)"
            + (f", e.g. retention_period={example}" if example else "")
            + ", or lower max_receive_count or the visibility timeout (with consumers, it "
            "follows the function timeout)",
        )
    ]


def message_size_problems(source: int | None, dead_letter: int | None) -> list[Problem]:
    """Each size within SQS's range, and the DLQ never smaller than its source (a message that
    fits the source but not the DLQ cannot be moved there)."""
    problems = out_of_range(
        "max_message_size",
        source,
        limits.MESSAGE_SIZE_MIN,
        limits.MESSAGE_SIZE_MAX,
        " bytes",
        f"choose a size from {limits.MESSAGE_SIZE_MIN} to {limits.MESSAGE_SIZE_MAX} bytes (1 MiB)",
    ) + out_of_range(
        "dead_letter_max_message_size",
        dead_letter,
        limits.MESSAGE_SIZE_MIN,
        limits.MESSAGE_SIZE_MAX,
        " bytes",
        f"choose a size from {limits.MESSAGE_SIZE_MIN} to {limits.MESSAGE_SIZE_MAX} bytes (1 MiB)",
    )
    if problems or source is None or dead_letter is None or dead_letter >= source:
        return problems
    return [
        Problem(
            "max_message_size",
            source,
            f"is above the dead-letter queue's maximum message size ({dead_letter} bytes): a "
            "message that fits the source cannot be moved to the DLQ",
            "give the dead-letter queue a maximum message size at least the source's",
        )
    ]
