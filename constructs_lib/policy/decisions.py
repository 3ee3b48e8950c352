"""Pure decisions about SQS -> Lambda settings, shared by the constructs, the in-app checks and
the fleet audit. No CDK, no Spark: plain numbers in, numbers or problems out.

A value of ``None`` means "not known here" (an unresolved token or reference): checks that need
it are skipped, and the caller says so (a warning annotation, or an audit QR900 finding).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from constructs_lib import limits
from constructs_lib.backoff import Backoff
from constructs_lib.errors import Problem
from constructs_lib.policy.backoff import backoff_expiry_problems


def derived_visibility_timeout(
    function_timeout: int,
    batching_window: int = 0,
    factor: float = limits.VISIBILITY_TIMEOUT_FACTOR,
) -> int:
    """The visibility timeout a queue needs for one Lambda consumer, in whole seconds.

    ``factor x function timeout + batching window`` (Lambda guide, services-sqs-configure), and
    never below the function timeout, which AWS requires when it creates the event source.
    """
    return max(math.ceil(factor * function_timeout + batching_window), function_timeout)


def dead_letter_queue_name(source_name: str, fifo: bool) -> str:
    """``orders`` -> ``orders-dlq``; ``orders.fifo`` -> ``orders-dlq.fifo``."""
    return (
        f"{strip_fifo_suffix(source_name)}{DEAD_LETTER_SUFFIX}{limits.FIFO_SUFFIX if fifo else ''}"
    )


DEAD_LETTER_SUFFIX = "-dlq"


def strip_fifo_suffix(name: str) -> str:
    return name.removesuffix(limits.FIFO_SUFFIX)


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


# --- Validation: each function returns every problem it finds -------------------------------


def _out_of_range(
    prop: str, value: int | float | None, low: int, high: int, unit: str, fix: str
) -> list[Problem]:
    if value is None or low <= value <= high:
        return []
    return [Problem(prop, value, f"must be between {low} and {high}{unit}", fix)]


def queue_name_problems(
    prop: str, name: str | None, fifo: bool, dead_letter: bool
) -> list[Problem]:
    """A name for the source queue, checked with the suffixes the library will add to it."""
    if name is None:
        return []
    base = strip_fifo_suffix(name)
    problems: list[Problem] = []
    if not limits.QUEUE_NAME_PATTERN.match(base):
        problems.append(
            Problem(
                prop,
                name,
                "may contain only letters, digits, hyphens and underscores (plus '.fifo' at the end of a FIFO queue)",
                "remove the other characters",
            )
        )
    full_length = (
        len(base)
        + (len(DEAD_LETTER_SUFFIX) if dead_letter else 0)
        + (len(limits.FIFO_SUFFIX) if fifo else 0)
    )
    if full_length > limits.QUEUE_NAME_MAX_LENGTH:
        counted = "with the '-dlq' suffix of its dead-letter queue" if dead_letter else "as given"
        if fifo:
            counted += " and '.fifo'"
        allowed = limits.QUEUE_NAME_MAX_LENGTH - (full_length - len(base))
        problems.append(
            Problem(
                prop,
                name,
                f"is {full_length} characters {counted}, above SQS's limit of {limits.QUEUE_NAME_MAX_LENGTH}",
                f"shorten the name to at most {allowed} characters before the suffixes",
            )
        )
    return problems


def retention_problems(
    fifo: bool, source_retention: int | None, dead_letter_retention: int | None
) -> list[Problem]:
    unit = " seconds (1 minute to 14 days)"
    problems = _out_of_range(
        "retention_period",
        source_retention,
        limits.RETENTION_MIN,
        limits.RETENTION_MAX,
        unit,
        "choose a retention period within SQS's range",
    ) + _out_of_range(
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
    problems = _out_of_range(
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


def event_source_problems(
    fifo: bool, batch_size: int | None, batching_window: int | None, max_concurrency: int | None
) -> list[Problem]:
    """Event source settings that CreateEventSourceMapping rejects (audit rule QR014)."""
    queue_type = "FIFO" if fifo else "standard"
    problems = _out_of_range(
        "batch_size",
        batch_size,
        limits.BATCH_SIZE_MIN,
        limits.max_batch_size(fifo),
        f" for a {queue_type} queue",
        f"choose a batch size from {limits.BATCH_SIZE_MIN} to {limits.max_batch_size(fifo)}",
    )
    if not fifo or not batching_window:
        problems += _out_of_range(
            "max_batching_window",
            batching_window,
            0,
            limits.BATCHING_WINDOW_MAX,
            " seconds",
            f"choose a window of at most {limits.BATCHING_WINDOW_MAX} seconds",
        )
    problems += batching_problems(fifo, batch_size, batching_window)
    problems += _out_of_range(
        "max_concurrency",
        max_concurrency,
        limits.MAX_CONCURRENCY_MIN,
        limits.MAX_CONCURRENCY_MAX,
        "",
        f"choose a maximum concurrency from {limits.MAX_CONCURRENCY_MIN} to {limits.MAX_CONCURRENCY_MAX}, "
        "or leave it unset",
    )
    return problems


def batching_problems(
    fifo: bool, batch_size: int | None, batching_window: int | None
) -> list[Problem]:
    """Batch size and window together: no window on FIFO, a window for batches above 10."""
    if fifo and batching_window:
        return [
            Problem(
                "max_batching_window",
                batching_window,
                "is not supported for FIFO queues (Lambda rejects any batching window on them)",
                "remove max_batching_window",
            )
        ]
    if (
        not fifo
        and batch_size is not None
        and batch_size > limits.BATCH_SIZE_MAX_WITHOUT_WINDOW
        and (batching_window or 0) < limits.BATCHING_WINDOW_MIN_FOR_LARGE_BATCH
    ):
        return [
            Problem(
                "max_batching_window",
                batching_window,
                f"must be at least {limits.BATCHING_WINDOW_MIN_FOR_LARGE_BATCH} second when batch_size "
                f"({batch_size}) is above {limits.BATCH_SIZE_MAX_WITHOUT_WINDOW}",
                f"set max_batching_window=Duration.seconds(1) or more, or a batch_size of at most "
                f"{limits.BATCH_SIZE_MAX_WITHOUT_WINDOW}",
            )
        ]
    return []


def function_timeout_problems(prop: str, function_timeout: int | None) -> list[Problem]:
    return _out_of_range(
        prop,
        function_timeout,
        limits.FUNCTION_TIMEOUT_MIN,
        limits.FUNCTION_TIMEOUT_MAX,
        " seconds",
        "give the function's real timeout (Lambda allows 1 to 900 seconds)",
    )


def visibility_factor_problems(
    factor: float, function_timeout: int | None = None, batching_window: int | None = None
) -> list[Problem]:
    """The factor against SQS's longest visibility timeout (with the function's timeout and
    the window, when known), and the warning for a factor below AWS's 6 (the least factor, 1,
    is a declared range)."""
    window = batching_window or 0
    if (
        function_timeout is not None
        and function_timeout <= limits.FUNCTION_TIMEOUT_MAX
        and factor >= 1
        and window <= limits.BATCHING_WINDOW_MAX
    ):
        derived = derived_visibility_timeout(function_timeout, window, factor)
        if derived > limits.VISIBILITY_TIMEOUT_MAX:
            # The largest whole factor that fits; at least 1, as 900 s + 300 s fit in 12 hours.
            fitting = max(1, (limits.VISIBILITY_TIMEOUT_MAX - window) // function_timeout)
            return [
                Problem(
                    "visibility_timeout_factor",
                    factor,
                    f"gives a visibility timeout of {derived} s ({factor:g} x function timeout "
                    f"{function_timeout} s + batching window {window} s), above SQS's maximum "
                    f"of {limits.VISIBILITY_TIMEOUT_MAX} s",
                    f"lower the factor to at most {fitting}, the most that fits, e.g. "
                    f"visibility_timeout_factor={fitting}, or shorten the function timeout or "
                    "the batching window",
                )
            ]
    if 1 <= factor < limits.VISIBILITY_TIMEOUT_FACTOR:
        return [
            Problem(
                "visibility_timeout_factor",
                factor,
                f"is below the {limits.VISIBILITY_TIMEOUT_FACTOR} AWS recommends; retries of throttled batches "
                "can then run while the first attempt is still in flight, processing messages twice",
                f"use {limits.VISIBILITY_TIMEOUT_FACTOR} or more",
                severity="warning",
            )
        ]
    return []


def visibility_problems(derived: int, explicit: int | None) -> list[Problem]:
    """The derived visibility timeout against SQS's maximum and against an explicit setting."""
    if derived > limits.VISIBILITY_TIMEOUT_MAX:
        return [
            Problem(
                "visibility_timeout_factor",
                derived,
                f"gives a visibility timeout of {derived} s (factor x function timeout + batching window), "
                f"above SQS's maximum of {limits.VISIBILITY_TIMEOUT_MAX} s",
                "lower the function timeout, the batching window or visibility_timeout_factor",
            )
        ]
    if explicit is not None and explicit < derived:
        return [
            Problem(
                "visibility_timeout",
                explicit,
                f"is below the {derived} s this queue's consumers need (factor x function timeout + "
                "batching window); messages would be delivered again while still being processed",
                f"remove visibility_timeout to let the library derive it, or set it to at least {derived} s",
            )
        ]
    return []


# --- Event source features (provisioned mode, concurrency, expiry, message size) ------------


def provisioned_poller_problems(
    minimum: int | None, maximum: int | None, max_concurrency: int | None
) -> list[Problem]:
    """Provisioned mode's poller range, its order, and its exclusion of maximum concurrency."""
    problems = _out_of_range(
        "provisioned_pollers.minimum",
        minimum,
        limits.MIN_POLLERS_MIN,
        limits.MIN_POLLERS_MAX,
        " pollers",
        f"choose a minimum from {limits.MIN_POLLERS_MIN} to {limits.MIN_POLLERS_MAX}",
    ) + _out_of_range(
        "provisioned_pollers.maximum",
        maximum,
        limits.MAX_POLLERS_MIN,
        limits.MAX_POLLERS_MAX,
        " pollers",
        f"choose a maximum from {limits.MAX_POLLERS_MIN} to {limits.MAX_POLLERS_MAX}",
    )
    if minimum is not None and maximum is not None and minimum > maximum:
        problems.append(
            Problem(
                "provisioned_pollers",
                (minimum, maximum),
                f"has a minimum ({minimum}) above its maximum ({maximum})",
                "give (minimum, maximum) with minimum <= maximum",
            )
        )
    if max_concurrency is not None and (minimum is not None or maximum is not None):
        problems.append(
            Problem(
                "max_concurrency",
                max_concurrency,
                "cannot be combined with provisioned pollers: Lambda treats maximum concurrency "
                "and provisioned mode as mutually exclusive",
                "cap concurrency with the maximum poller count instead (each poller makes up to "
                f"{limits.INVOCATIONS_PER_POLLER} concurrent invocations), or drop provisioned_pollers",
            )
        )
    return problems


def concurrency_ceiling(max_concurrency: int | None, maximum_pollers: int | None) -> int | None:
    """The most concurrent invocations one SQS event source can make, or None when unbounded
    (an on-demand source without maximum concurrency scales up to Lambda's own limits)."""
    if max_concurrency is not None:
        return max_concurrency
    if maximum_pollers is not None:
        return maximum_pollers * limits.INVOCATIONS_PER_POLLER
    return None


def reserved_concurrency_problems(
    reserved: int | None, ceilings: Mapping[str, int | None]
) -> list[Problem]:
    """Reserved concurrency below what the function's SQS sources may invoke at once.

    ``ceilings`` maps each source (a name for the message) to its cap, or to None when nothing
    caps it: an on-demand source without maximum concurrency scales up to
    ``limits.SQS_ON_DEMAND_MAX_CONCURRENCY``, which is the case maximum concurrency was made
    for. Lambda guide, services-sqs-scaling: reserved concurrency must be at least the total
    maximum concurrency of the function's SQS sources, or Lambda throttles, and throttled
    receives count toward maxReceiveCount, sending healthy messages to the DLQ.
    """
    if reserved is None or not ceilings:
        return []
    counted = {
        name: limits.SQS_ON_DEMAND_MAX_CONCURRENCY if cap is None else cap
        for name, cap in ceilings.items()
    }
    total = sum(counted.values())
    if reserved >= total:
        return []
    parts = " + ".join(
        f"{name} {counted[name]}"
        if ceilings[name] is not None
        else f"{name} up to {counted[name]} (no maximum concurrency)"
        for name in sorted(counted)
    )
    uncapped = sorted(name for name, cap in ceilings.items() if cap is None)
    if uncapped:
        fix = (
            f"set the maximum concurrency of {', '.join(uncapped)} (at least "
            f"{limits.MAX_CONCURRENCY_MIN}) so that the sources' caps add up to at most the "
            "reserved concurrency, or remove the reservation"
        )
    else:
        fix = (
            f"raise the function's reserved concurrency to at least {total}, or lower the "
            "sources' maximum concurrency (or maximum pollers)"
        )
    return [
        Problem(
            "reserved_concurrent_executions",
            reserved,
            f"is below the {total} concurrent invocations the function's SQS sources may make "
            f"({parts}); Lambda throttles the excess and throttled receives can move healthy "
            "messages to the dead-letter queue",
            fix,
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
    problems = _out_of_range(
        "max_message_size",
        source,
        limits.MESSAGE_SIZE_MIN,
        limits.MESSAGE_SIZE_MAX,
        " bytes",
        f"choose a size from {limits.MESSAGE_SIZE_MIN} to {limits.MESSAGE_SIZE_MAX} bytes (1 MiB)",
    ) + _out_of_range(
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


def batch_payload_problems(batch_size: int | None, message_size: int | None) -> list[Problem]:
    """Batches whose declared largest messages exceed Lambda's 6 MB payload are cut short."""
    if batch_size is None or message_size is None:
        return []
    largest = batch_size * message_size
    if largest <= limits.LAMBDA_SYNC_PAYLOAD_MAX:
        return []
    fits = max(limits.LAMBDA_SYNC_PAYLOAD_MAX // message_size, 1)
    return [
        Problem(
            "batch_size",
            batch_size,
            f"x the queue's maximum message size ({message_size} bytes) is {largest} bytes, above "
            f"Lambda's {limits.LAMBDA_SYNC_PAYLOAD_MAX}-byte invocation payload: batches of large "
            f"messages are cut short of batch_size (about {fits} messages of the maximum size)",
            f"expect batches of about {fits} large messages, or lower max_message_size",
            severity="warning",
        )
    ]


def in_flight_threshold(fifo: bool, busiest: int | None) -> int:
    """The in-flight alarm threshold: a tenth of the quota, but never below what the consumers
    hold in flight when they all run at full speed (``busiest``: concurrency ceiling x batch
    size over the consumers), so a healthy burst does not raise the alarm; at most the quota."""
    threshold = default_in_flight_threshold(fifo)
    if busiest is not None:
        threshold = max(threshold, busiest + 1)
    return min(threshold, limits.in_flight_quota(fifo))


def is_aws_managed_sqs_key(key_id: str) -> bool:
    """True for the AWS managed key for SQS, by alias or by alias ARN. Its key policy cannot be
    changed, so SNS, EventBridge and S3 cannot encrypt messages with it: they cannot send to a
    queue it encrypts (SQS developer guide, key management)."""
    managed = limits.AWS_MANAGED_SQS_KEY
    return key_id == managed or key_id.endswith(f":{managed}")
