"""The tables of the consumers: ``add_lambda_consumer``, the ``RetryBackoff`` it may take, and
``add_dead_letter_consumer``, which shares the source consumer's settings."""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_

from constructs_lib import backoff, limits
from constructs_lib.params.kinds import (
    FilterPattern,
    Flag,
    Implements,
    Instance,
    Number,
    Pair,
    Seconds,
    SequenceOf,
    Whole,
)
from constructs_lib.params.table import Param, Range, Table
from constructs_lib.retry_backoff import RetryBackoff

_FUNCTION = Implements(
    lambda_.IFunction, "lambda_.IFunction", "lambda_.Function(stack, 'Worker', ...)"
)


_EVENT_SOURCE_METRICS = Param(
    "event_source_metrics",
    Flag(),
    "on",
    "the mapping's `EventCount` metrics and an alarm on `FailedInvokeEventCount`; off with "
    "`report_batch_item_failures` warns",
)


_PROVISIONED_POLLERS = Param(
    "provisioned_pollers",
    Pair("pollers", "(2, 20)"),
    "none: on-demand polling",
    f"provisioned mode (extra cost): minimum {limits.MIN_POLLERS_MIN}-{limits.MIN_POLLERS_MAX}, "
    f"maximum {limits.MAX_POLLERS_MIN}-{limits.MAX_POLLERS_MAX:,}, minimum <= maximum; not with "
    f"`max_concurrency`; each poller makes up to {limits.INVOCATIONS_PER_POLLER} concurrent "
    "invocations",
    optional=True,
)


CONSUMER = Table(
    "add_lambda_consumer",
    (
        Param(
            "function",
            _FUNCTION,
            "required",
            "a function, alias or version; each at most once per queue",
        ),
        Param(
            "batch_size",
            Whole("records"),
            f"{limits.BATCH_SIZE_DEFAULT}",
            f"above {limits.BATCH_SIZE_MAX_WITHOUT_WINDOW} only with a window of "
            f"{limits.BATCHING_WINDOW_MIN_FOR_LARGE_BATCH} s or more",
            range=Range(
                limits.BATCH_SIZE_MIN,
                limits.BATCH_SIZE_MAX_STANDARD,
                fifo_high=limits.BATCH_SIZE_MAX_FIFO,
            ),
            fix="choose a batch size within Lambda's range for this queue type",
            example="10",
        ),
        Param(
            "max_batching_window",
            Seconds(),
            "none",
            "none on FIFO",
            optional=True,
            range=Range(0, limits.BATCHING_WINDOW_MAX, "s"),
            fix=f"choose a window of at most {limits.BATCHING_WINDOW_MAX} seconds (above 0 only on a "
            "standard queue)",
            example="Duration.seconds(1)",
        ),
        Param(
            "max_concurrency",
            Whole("invocations"),
            "no limit",
            "not with `provisioned_pollers`",
            optional=True,
            range=Range(limits.MAX_CONCURRENCY_MIN, limits.MAX_CONCURRENCY_MAX),
            fix=f"choose a maximum concurrency from {limits.MAX_CONCURRENCY_MIN} to "
            f"{limits.MAX_CONCURRENCY_MAX}, or leave it unset",
            example="10",
        ),
        Param(
            "report_batch_item_failures",
            Flag(),
            "on",
            "only the failed messages of a batch are retried",
        ),
        Param(
            "visibility_timeout_factor",
            Number(),
            f"{limits.VISIBILITY_TIMEOUT_FACTOR}",
            f"below {limits.VISIBILITY_TIMEOUT_FACTOR} warns",
            range=Range(
                1,
                None,
                why="the queue's visibility timeout may not be shorter than the function timeout",
            ),
            fix="use the factor AWS recommends",
            example="6",
        ),
        Param(
            "function_timeout",
            Seconds(),
            "read from the function",
            "required for imported functions, aliases and versions",
            optional=True,
            range=Range(limits.FUNCTION_TIMEOUT_MIN, limits.FUNCTION_TIMEOUT_MAX, "s"),
            fix=f"give the function's real timeout (Lambda allows {limits.FUNCTION_TIMEOUT_MIN} "
            f"to {limits.FUNCTION_TIMEOUT_MAX} seconds)",
            example="Duration.seconds(30)",
        ),
        Param("enabled", Flag(), "on", "whether the event source polls"),
        Param(
            "filters",
            SequenceOf(FilterPattern(), "lambda_.FilterCriteria.filter(...)"),
            "every message",
            "`lambda_.FilterCriteria.filter(...)`; a message matching none is deleted, never "
            "dead-lettered (warns)",
            optional=True,
        ),
        _EVENT_SOURCE_METRICS,
        _PROVISIONED_POLLERS,
        Param(
            "retry_backoff",
            Instance(RetryBackoff, "RetryBackoff", "RetryBackoff(base=Duration.seconds(10))"),
            "none: failed messages come back after the visibility timeout",
            "the schedule goes into the function's environment, `constructs_lib.backoff` into a "
            "layer (Python); a message failing every receive must reach the DLQ within the "
            "retention; FIFO warns (a waiting message holds its group)",
            optional=True,
        ),
    ),
)


# The fields of RetryBackoff (constructs_lib.retry_backoff), checked by add_lambda_consumer.
_WAIT = Range(1, backoff.VISIBILITY_MAX, "s")


RETRY_BACKOFF = Table(
    "RetryBackoff",
    (
        Param(
            "base",
            Seconds(),
            f"{backoff.BASE_DEFAULT} s",
            "the wait after the first failed receive",
            range=_WAIT,
            fix="choose a first wait within ChangeMessageVisibility's 0-12 hours",
            example="Duration.seconds(10)",
        ),
        Param(
            "factor",
            Number(),
            f"{backoff.FACTOR_DEFAULT:g}",
            "each wait is the previous one x factor (1: a constant wait)",
            range=Range(1, 10),
            fix="choose a growth factor from 1 to 10 (2 doubles each wait)",
            example="2",
        ),
        Param(
            "cap",
            Seconds(),
            f"{backoff.CAP_DEFAULT // 60} minutes",
            "the longest wait; at least `base`",
            range=_WAIT,
            fix="choose a longest wait within ChangeMessageVisibility's 0-12 hours",
            example="Duration.minutes(15)",
        ),
        Param(
            "jitter",
            Number(),
            f"{backoff.JITTER_DEFAULT:g}",
            "the fraction of each wait drawn at random (0: none; 1: from 0 to the wait)",
            range=Range(0, 1),
            fix="choose a fraction from 0 to 1 (0.5 spreads retries without halving them)",
            example="0.5",
        ),
        Param(
            "layer",
            Flag(),
            "on",
            "the layer holding `constructs_lib.backoff` on a Python function of the app; off "
            "when the function bundles the package",
        ),
    ),
)


_CONSUMER_PARAMS = {param.name: param for param in CONSUMER.params}


# The same settings as a source consumer, on the DLQ; no filters (a message matching none would
# be deleted, and a dead letter is the last copy) and no disabled mapping (then why add it).
DEAD_LETTER_CONSUMER = Table(
    "add_dead_letter_consumer",
    (
        Param(
            "function",
            _FUNCTION,
            "required",
            "a function, alias or version; each at most once per dead-letter queue; not with a "
            "`dead_letter_queue` you gave",
        ),
        *(
            _CONSUMER_PARAMS[name]
            for name in (
                "batch_size",
                "max_batching_window",
                "max_concurrency",
                "report_batch_item_failures",
                "visibility_timeout_factor",
                "function_timeout",
                "event_source_metrics",
                "provisioned_pollers",
            )
        ),
    ),
)
