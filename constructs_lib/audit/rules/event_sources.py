"""Settings of a queue's Lambda event source mappings: batching (QR014, QR022), metrics for
batch item failures (QR015), provisioned pollers (QR016), the concurrency their caps leave the
function (QR017), filters (QR019), and settings only stream sources take (QR026).
"""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib import limits
from constructs_lib.audit.model import EVENT_SOURCE_MAPPING, QueueContext, Resource
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule, Unknowable
from constructs_lib.audit.parse.intrinsics import describe
from constructs_lib.audit.rules._reading import (
    event_source_mappings,
    int_prop,
    int_value,
    is_fifo,
    known_int,
    name_of,
    object_prop,
    once_per_function,
    strings,
)
from constructs_lib.policy.event_sources import (
    batch_payload_problems,
    concurrency_ceiling,
    event_source_problems,
    provisioned_poller_problems,
    reserved_concurrency_problems,
)

_ESM_PROPERTY = {
    "batch_size": "BatchSize",
    "max_batching_window": "MaximumBatchingWindowInSeconds",
    "max_concurrency": "ScalingConfig.MaximumConcurrency",
}


def _qr014(ctx: QueueContext) -> Iterator[Outcome]:
    fifo = is_fifo(ctx.queue)
    for consumer in ctx.consumers:
        mapping = consumer.mapping
        batch = int_prop(mapping, "BatchSize", limits.BATCH_SIZE_DEFAULT)
        window = int_prop(mapping, "MaximumBatchingWindowInSeconds", None)
        scaling = mapping.prop("ScalingConfig")
        concurrency = (
            int_value(
                mapping, "ScalingConfig.MaximumConcurrency", scaling.get("MaximumConcurrency"), None
            )
            if isinstance(scaling, dict)
            else None
        )
        for problem in event_source_problems(fifo, batch, window, concurrency):
            prop = _ESM_PROPERTY.get(problem.prop, problem.prop)
            yield Hit(
                mapping,
                f"event source on {'FIFO' if fifo else 'standard'} queue {name_of(ctx.queue)}: "
                f"{prop}={problem.value} {problem.rule}",
            )


QR014 = Rule(
    "QR014",
    "error",
    "Invalid event source batching settings",
    "fix BatchSize, MaximumBatchingWindowInSeconds and ScalingConfig to Lambda's limits",
    _qr014,
)


_REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"


def _time_to_dead_letter(queue: Resource) -> str:
    """``maxReceiveCount x visibility = N s``, as far as the audit knows the numbers."""
    redrive = queue.prop("RedrivePolicy")
    count = redrive.get("maxReceiveCount") if isinstance(redrive, dict) else None
    visibility = known_int(queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    try:
        receives = int_value(queue, "RedrivePolicy.maxReceiveCount", count, None)
    except Unknowable:
        receives = None
    if receives is None or visibility is None:
        return "maxReceiveCount x visibility timeout later"
    return f"{receives} receives x {visibility} s visibility = {receives * visibility} s later"


def _qr015(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in event_source_mappings(ctx):
        types = strings(mapping, "FunctionResponseTypes", mapping.prop("FunctionResponseTypes"))
        if _REPORT_BATCH_ITEM_FAILURES not in types:
            continue
        metrics_config = object_prop(mapping, "MetricsConfig") or {}
        metrics = strings(mapping, "MetricsConfig.Metrics", metrics_config.get("Metrics"))
        if limits.ESM_METRICS_EVENT_COUNT in metrics:
            continue
        yield Hit(
            mapping,
            f"event source {name_of(mapping)} on queue {name_of(ctx.queue)} reports batch item "
            f"failures and has no MetricsConfig with {limits.ESM_METRICS_EVENT_COUNT}: its "
            "invocations succeed whatever happens to the messages, so failing messages show "
            f"first at the dead-letter queue, {_time_to_dead_letter(ctx.queue)} "
            f"({limits.METRIC_ESM_FAILED} would show them at once)",
        )


QR015 = Rule(
    "QR015",
    "warning",
    "Batch item failures reported without event source metrics",
    f"add MetricsConfig {{Metrics: [{limits.ESM_METRICS_EVENT_COUNT}]}} to the event source "
    f"mapping and alarm on its {limits.METRIC_ESM_FAILED}",
    _qr015,
)


_POLLER_PROPERTY = {
    "provisioned_pollers.minimum": "ProvisionedPollerConfig.MinimumPollers",
    "provisioned_pollers.maximum": "ProvisionedPollerConfig.MaximumPollers",
    "provisioned_pollers": "ProvisionedPollerConfig",
    "max_concurrency": "ScalingConfig.MaximumConcurrency",
}


def _max_concurrency(mapping: Resource) -> int | None:
    scaling = object_prop(mapping, "ScalingConfig") or {}
    return int_value(
        mapping, "ScalingConfig.MaximumConcurrency", scaling.get("MaximumConcurrency"), None
    )


def _qr016(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in event_source_mappings(ctx):
        pollers = object_prop(mapping, "ProvisionedPollerConfig")
        if pollers is None:
            continue
        minimum = int_value(
            mapping, "ProvisionedPollerConfig.MinimumPollers", pollers.get("MinimumPollers"), None
        )
        maximum = int_value(
            mapping, "ProvisionedPollerConfig.MaximumPollers", pollers.get("MaximumPollers"), None
        )
        concurrency = _max_concurrency(mapping)
        for problem in provisioned_poller_problems(minimum, maximum, concurrency):
            prop = _POLLER_PROPERTY.get(problem.prop, problem.prop)
            value = (
                f"({minimum}, {maximum})"
                if problem.prop == "provisioned_pollers"
                else problem.value
            )
            yield Hit(
                mapping,
                f"event source {name_of(mapping)} on queue {name_of(ctx.queue)}: "
                f"{prop}={value} {problem.rule}",
            )


QR016 = Rule(
    "QR016",
    "error",
    "Invalid provisioned poller configuration",
    f"set MinimumPollers {limits.MIN_POLLERS_MIN}-{limits.MIN_POLLERS_MAX} and MaximumPollers "
    f"{limits.MAX_POLLERS_MIN}-{limits.MAX_POLLERS_MAX} with minimum <= maximum, and drop "
    "ScalingConfig.MaximumConcurrency (cap concurrency with MaximumPollers instead)",
    _qr016,
)


def _concurrency_ceiling(mapping: Resource) -> int | None:
    """The most concurrent invocations this mapping makes; None when nothing caps it."""
    pollers = object_prop(mapping, "ProvisionedPollerConfig")
    maximum_pollers = None
    if pollers is not None:
        # Provisioned mode without MaximumPollers runs up to the default maximum.
        maximum_pollers = int_value(
            mapping,
            "ProvisionedPollerConfig.MaximumPollers",
            pollers.get("MaximumPollers"),
            limits.MAX_POLLERS_DEFAULT,
        )
    return concurrency_ceiling(_max_concurrency(mapping), maximum_pollers)


def _qr017(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in once_per_function(ctx):
        function = consumer.function
        assert function is not None
        reserved = int_prop(function, "ReservedConcurrentExecutions", None)
        if reserved is None:
            continue  # no reservation: the function shares the account's unreserved pool
        # Each SQS source's cap; None for an uncapped one, which scales up to Lambda's
        # on-demand limit: the classic case MaximumConcurrency was made for.
        ceilings: dict[str, int | None] = {}
        for mapping in ctx.mappings_of(function.uid):
            if mapping.type != EVENT_SOURCE_MAPPING:
                continue  # a pipe has no concurrency cap to count
            name = name_of(mapping) if name_of(mapping) not in ceilings else mapping.uid
            ceilings[name] = _concurrency_ceiling(mapping)
        for problem in reserved_concurrency_problems(reserved, ceilings):
            yield Hit(
                function,
                f"function {name_of(function)} has ReservedConcurrentExecutions {reserved}, which "
                f"{problem.rule}",
            )


QR017 = Rule(
    "QR017",
    "warning",
    "Reserved concurrency below the function's SQS sources' maximum concurrency",
    "raise the function's ReservedConcurrentExecutions to at least the sum of its SQS event "
    "sources' MaximumConcurrency (or MaximumPollers x "
    f"{limits.INVOCATIONS_PER_POLLER}), or lower those caps",
    _qr017,
)


def _qr019(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in event_source_mappings(ctx):
        criteria = object_prop(mapping, "FilterCriteria") or {}
        filters = criteria.get("Filters")
        if filters is not None and not isinstance(filters, list):
            raise Unknowable(mapping, f"FilterCriteria.Filters is {describe(filters)}")
        if filters:
            yield Hit(
                mapping,
                f"event source {name_of(mapping)} on queue {name_of(ctx.queue)} has "
                f"{len(filters)} filter{'s' if len(filters) > 1 else ''} in FilterCriteria: "
                "Lambda deletes the messages that match none, so they never reach the "
                f"dead-letter queue (only {limits.METRIC_ESM_FILTERED_OUT} counts them)",
            )


QR019 = Rule(
    "QR019",
    "info",
    "Event source filter deletes unmatched messages",
    "make sure unmatched messages may be lost, or filter in the function; watch "
    f"{limits.METRIC_ESM_FILTERED_OUT}",
    _qr019,
)


def _qr022(ctx: QueueContext) -> Iterator[Outcome]:
    mappings = event_source_mappings(ctx)
    if not mappings:
        return
    # Only an explicit size says how large messages may be; the default cap says nothing.
    size = int_prop(ctx.queue, "MaximumMessageSize", None)
    for mapping in mappings:
        batch = int_prop(mapping, "BatchSize", limits.BATCH_SIZE_DEFAULT)
        if batch is None or size is None:
            continue
        if batch_payload_problems(batch, size):
            fits = max(limits.LAMBDA_SYNC_PAYLOAD_MAX // size, 1)
            yield Hit(
                mapping,
                f"event source {name_of(mapping)} on queue {name_of(ctx.queue)}: BatchSize {batch} "
                f"x MaximumMessageSize {size} bytes = {batch * size} bytes, above Lambda's "
                f"{limits.LAMBDA_SYNC_PAYLOAD_MAX}-byte invocation payload: batches of large "
                f"messages are cut short (about {fits} messages of the maximum size)",
            )


QR022 = Rule(
    "QR022",
    "warning",
    "Batch of maximum-size messages above Lambda's payload limit",
    f"lower BatchSize to at most {limits.LAMBDA_SYNC_PAYLOAD_MAX} / MaximumMessageSize, or "
    "lower MaximumMessageSize",
    _qr022,
)


def _qr026(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in event_source_mappings(ctx):
        for prop in ("StartingPosition", "StartingPositionTimestamp"):
            value = mapping.prop(prop)
            if value is not None:
                yield Hit(
                    mapping,
                    f"event source {name_of(mapping)} on queue {name_of(ctx.queue)} sets {prop} "
                    f"({describe(value)}), which only stream sources take: "
                    "CreateEventSourceMapping fails for an SQS source",
                )


QR026 = Rule(
    "QR026",
    "error",
    "Starting position on an SQS event source",
    "remove StartingPosition and StartingPositionTimestamp from the SQS event source mapping",
    _qr026,
)


RULES: tuple[Rule, ...] = (QR014, QR015, QR016, QR017, QR019, QR022, QR026)
