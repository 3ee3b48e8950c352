"""The thresholds of the alarms a queue gets: the age at which messages are about to expire, and
the messages in flight."""

from __future__ import annotations

import math

from constructs_lib import limits


def expiry_alarm_thresholds(
    source_retention: int, dead_letter_retention: int, fifo: bool
) -> tuple[int, int]:
    """Age thresholds (seconds) for the source's and the DLQ's ApproximateAgeOfOldestMessage.

    Each alarm fires when the oldest message has used half the time it has left before SQS
    deletes it. On the source that time is the retention period. On a DLQ the age metric counts
    from the move, but a standard queue keeps the original enqueue time, so a message that
    reached the DLQ late in its life has only ``DLQ retention - source retention`` left in the
    worst case; FIFO queues reset the time on the move (SQS developer guide, DLQ retention).
    """
    fraction = limits.EXPIRY_ALARM_RETENTION_FRACTION
    dead_letter_lifetime = (
        dead_letter_retention if fifo else max(dead_letter_retention - source_retention, 0)
    )
    source_threshold = max(math.floor(source_retention * fraction), limits.SQS_METRIC_PERIOD)
    dead_letter_threshold = max(
        math.floor(dead_letter_lifetime * fraction), limits.SQS_METRIC_PERIOD
    )
    return source_threshold, dead_letter_threshold


def default_in_flight_threshold(fifo: bool) -> int:
    """In-flight alarm threshold: a tenth of the in-flight quota (SQS quotas-queues/quotas-fifo).

    Past the quota, standard queues answer ReceiveMessage with OverLimit and FIFO queues return
    nothing, so consumers stall; a tenth leaves room to act on a stuck or slow consumer.
    """
    return int(limits.in_flight_quota(fifo) * limits.IN_FLIGHT_ALARM_QUOTA_FRACTION)


def in_flight_threshold(fifo: bool, busiest: int | None) -> int:
    """The in-flight alarm threshold: a tenth of the quota, but never below what the consumers
    hold in flight when they all run at full speed (``busiest``: concurrency ceiling x batch
    size over the consumers), so a healthy burst does not raise the alarm; at most the quota."""
    threshold = default_in_flight_threshold(fifo)
    if busiest is not None:
        threshold = max(threshold, busiest + 1)
    return min(threshold, limits.in_flight_quota(fifo))
