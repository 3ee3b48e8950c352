"""The settings of a Lambda event source on SQS: batch size and window, maximum concurrency,
provisioned pollers, the concurrency the sources may reach against the function's reservation,
and the batch payload."""

from __future__ import annotations

from collections.abc import Mapping

from constructs_lib import limits
from constructs_lib.errors import Problem
from constructs_lib.policy._ranges import out_of_range


def event_source_problems(
    fifo: bool, batch_size: int | None, batching_window: int | None, max_concurrency: int | None
) -> list[Problem]:
    """Event source settings that CreateEventSourceMapping rejects (audit rule QR014)."""
    queue_type = "FIFO" if fifo else "standard"
    problems = out_of_range(
        "batch_size",
        batch_size,
        limits.BATCH_SIZE_MIN,
        limits.max_batch_size(fifo),
        f" for a {queue_type} queue",
        f"choose a batch size from {limits.BATCH_SIZE_MIN} to {limits.max_batch_size(fifo)}",
    )
    if not fifo or not batching_window:
        problems += out_of_range(
            "max_batching_window",
            batching_window,
            0,
            limits.BATCHING_WINDOW_MAX,
            " seconds",
            f"choose a window of at most {limits.BATCHING_WINDOW_MAX} seconds",
        )
    problems += batching_problems(fifo, batch_size, batching_window)
    problems += out_of_range(
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


def provisioned_poller_problems(
    minimum: int | None, maximum: int | None, max_concurrency: int | None
) -> list[Problem]:
    """Provisioned mode's poller range, its order, and its exclusion of maximum concurrency."""
    problems = out_of_range(
        "provisioned_pollers.minimum",
        minimum,
        limits.MIN_POLLERS_MIN,
        limits.MIN_POLLERS_MAX,
        " pollers",
        f"choose a minimum from {limits.MIN_POLLERS_MIN} to {limits.MIN_POLLERS_MAX}",
    ) + out_of_range(
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
