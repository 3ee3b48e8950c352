"""The rule catalog (QR001-QR029) as pure functions over one queue's context.

The Spark job, the single-process engine and the in-app validation plugin all call
``evaluate``; the numbers and decisions come from ``constructs_lib.limits`` and
``constructs_lib.policy``, the same ones the constructs use at synth time.

A rule that needs a value the audit could not resolve (a parameter, an unknown import) does not
guess: it reports the value as QR900 (info), naming the rule it could not judge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from constructs_lib import limits, policy, suppression_terms
from constructs_lib.audit import iam, suppressions
from constructs_lib.audit.intrinsics import describe, is_ref, is_unresolved
from constructs_lib.audit.model import (
    EVENT_RULE,
    EVENT_SOURCE_MAPPING,
    PARAMETER_SOURCES,
    PIPE,
    PIPE_TARGET,
    PIPE_TARGET_LAMBDA,
    PRODUCER_EVENTBRIDGE,
    PRODUCER_SNS,
    SNS_SUBSCRIPTION,
    Consumer,
    Finding,
    NoteRow,
    QueueContext,
    Resource,
    Severity,
)
from constructs_lib.errors import Problem

UNRESOLVED_RULE = "QR900"
UNPARSEABLE_RULE = "QR901"
# AWS::Serverless resources in a template that does not declare the SAM transform (dialects/sam.py).
MISSING_TRANSFORM_RULE = "QR903"


@dataclass(frozen=True)
class Hit:
    """A rule's verdict on one resource."""

    resource: Resource
    message: str


@dataclass(frozen=True)
class Unknown:
    """A value a rule needed but the audit could not resolve."""

    resource: Resource
    what: str


Outcome = Hit | Unknown


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    title: str
    fix: str
    check: Callable[[QueueContext], Iterable[Outcome]]


class _Unknowable(Exception):
    def __init__(self, resource: Resource, what: str) -> None:
        super().__init__(what)
        self.resource = resource
        self.what = what


# --- Reading normalized property values -----------------------------------------------------


def _int_value(resource: Resource, name: str, value: Any, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool):
        raise _Unknowable(resource, f"{name} is {value!r}, not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise _Unknowable(resource, f"{name} is {describe(value)}")


def _int(resource: Resource, prop: str, default: int | None) -> int | None:
    return _int_value(resource, prop, resource.prop(prop), default)


def _bool(resource: Resource, prop: str, default: bool) -> bool:
    value = resource.prop(prop)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _Unknowable(resource, f"{prop} is {describe(value)}")


def _mapping(resource: Resource, prop: str) -> dict[str, Any] | None:
    value = resource.prop(prop)
    if value is None:
        return None
    if isinstance(value, dict) and not is_unresolved(value):
        return value
    raise _Unknowable(resource, f"{prop} is {describe(value)}")


def is_fifo(queue: Resource) -> bool:
    return _bool(queue, "FifoQueue", False)


def _name(resource: Resource) -> str:
    return resource.logical_id if not resource.stack else f"{resource.stack}/{resource.logical_id}"


def _comparison_only(
    both: list[Problem], first_only: list[Problem], second_only: list[Problem]
) -> list[Problem]:
    """Problems that need both values: the comparison, without each value's own range checks."""
    singles = set(first_only) | set(second_only)
    return [problem for problem in both if problem not in singles]


# --- The rules ------------------------------------------------------------------------------


def _qr001(ctx: QueueContext) -> Iterator[Outcome]:
    if ctx.is_dead_letter_queue:
        return
    redrive = ctx.queue.prop("RedrivePolicy")
    if redrive is not None and is_unresolved(redrive):
        raise _Unknowable(ctx.queue, f"RedrivePolicy is {describe(redrive)}")
    if redrive is None:
        yield Hit(
            ctx.queue, f"queue {_name(ctx.queue)} has no dead-letter queue (no RedrivePolicy)"
        )


def _qr002(ctx: QueueContext) -> Iterator[Outcome]:
    source_fifo = is_fifo(ctx.queue)
    for dlq in ctx.dead_letter_queues:
        if is_fifo(dlq) != source_fifo:
            kinds = ("FIFO", "standard") if source_fifo else ("standard", "FIFO")
            yield Hit(
                ctx.queue,
                f"{kinds[0]} queue {_name(ctx.queue)} has a {kinds[1]} dead-letter queue "
                f"{_name(dlq)}; SQS rejects the redrive policy at deploy time",
            )


def _qr003(ctx: QueueContext) -> Iterator[Outcome]:
    if is_fifo(ctx.queue):
        return  # FIFO queues reset the enqueue time when a message moves to the DLQ
    source = _int(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    for dlq in ctx.dead_letter_queues:
        dead = _int(dlq, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
        problems = _comparison_only(
            policy.retention_problems(False, source, dead),
            policy.retention_problems(False, source, None),
            policy.retention_problems(False, None, dead),
        )
        if problems:
            yield Hit(
                ctx.queue,
                f"standard queue {_name(ctx.queue)} keeps messages {source} s and its dead-letter "
                f"queue {_name(dlq)} {dead} s: a moved message keeps its original enqueue time, so "
                "the DLQ deletes it on arrival or soon after",
            )


def _redrive_permission(dlq: Resource) -> str | None:
    allow = _mapping(dlq, "RedriveAllowPolicy")
    if allow is None:
        return None
    permission = allow.get("redrivePermission")
    if permission is not None and not isinstance(permission, str):
        raise _Unknowable(dlq, f"RedriveAllowPolicy.redrivePermission is {describe(permission)}")
    return permission


def _qr004(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.sources:  # the redrive-allow policy governs queues' redrive, not services
        return
    permission = _redrive_permission(ctx.queue)
    if permission is None or permission == "allowAll":
        state = "has no RedriveAllowPolicy" if permission is None else "allows allowAll"
        yield Hit(
            ctx.queue,
            f"dead-letter queue {_name(ctx.queue)} {state}: any queue in the account may use it",
        )


def _qr005(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.sources:
        return
    permission = _redrive_permission(ctx.queue)
    if permission == "denyAll":
        yield Hit(
            ctx.queue,
            f"dead-letter queue {_name(ctx.queue)} has redrivePermission denyAll, which excludes "
            f"its source{'s' if len(ctx.sources) > 1 else ''} "
            + ", ".join(_name(s) for s in ctx.sources),
        )
    elif permission == "byQueue":
        for source in ctx.sources:
            if source.uid not in ctx.allowed_sources:
                yield Hit(
                    ctx.queue,
                    f"dead-letter queue {_name(ctx.queue)} allows byQueue but its sourceQueueArns "
                    f"do not name its source {_name(source)}",
                )


def _lambda_consumers(ctx: QueueContext) -> list[Consumer]:
    """Event source mappings, and pipes that deliver to a Lambda function."""
    return [
        c
        for c in ctx.consumers
        if c.mapping.type != PIPE or c.mapping.prop(PIPE_TARGET) == PIPE_TARGET_LAMBDA
    ]


def _consumer_numbers(ctx: QueueContext) -> Iterator[tuple[Resource, int, int, int]]:
    """(mapping, visibility, function timeout, batching window) for each consumer with a function."""
    if not ctx.consumers:
        return  # no consumer, nothing to compare: an unknown visibility timeout is no finding
    visibility = _int(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    assert visibility is not None
    for consumer in _lambda_consumers(ctx):
        if consumer.function is None:
            continue  # the unresolved FunctionName is reported once, as QR900, by resolution
        timeout = _int(consumer.function, "Timeout", limits.FUNCTION_TIMEOUT_DEFAULT)
        window = _int(consumer.mapping, "MaximumBatchingWindowInSeconds", 0)
        assert timeout is not None and window is not None
        yield consumer.mapping, visibility, timeout, window


def _qr006(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in ctx.consumers:
        if consumer not in _lambda_consumers(ctx):
            yield Unknown(
                consumer.mapping,
                f"pipe {_name(consumer.mapping)} reads queue {_name(ctx.queue)} and delivers to "
                f"{describe(consumer.mapping.prop('Target'))}, not a Lambda function: how long "
                "that target takes, against the visibility timeout, cannot be judged",
            )
    for mapping, visibility, timeout, _window in _consumer_numbers(ctx):
        if visibility < timeout:
            consequence = (
                "messages become visible again while the function still works on them"
                if mapping.type == PIPE
                else "CreateEventSourceMapping fails"
            )
            yield Hit(
                mapping,
                f"queue {_name(ctx.queue)} has visibility timeout {visibility} s, below the "
                f"{timeout} s timeout of the function this event source invokes; {consequence}",
            )


def _qr007(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping, visibility, timeout, window in _consumer_numbers(ctx):
        needed = policy.derived_visibility_timeout(timeout, window)
        # Below the function timeout is QR006 (an error); QR007 is the recommendation above it.
        if timeout <= visibility < needed:
            yield Hit(
                mapping,
                f"queue {_name(ctx.queue)} has visibility timeout {visibility} s, below the "
                f"{needed} s recommended for this consumer ({limits.VISIBILITY_TIMEOUT_FACTOR} x "
                f"{timeout} s function timeout + {window} s batching window)",
            )


def _qr008(ctx: QueueContext) -> Iterator[Outcome]:
    if not _lambda_consumers(ctx):
        return
    redrive = _mapping(ctx.queue, "RedrivePolicy")
    if redrive is None:
        return  # no DLQ at all is QR001
    count = _int_value(
        ctx.queue, "RedrivePolicy.maxReceiveCount", redrive.get("maxReceiveCount"), None
    )
    with_consumer = policy.max_receive_count_problems(count, True)
    without = set(policy.max_receive_count_problems(count, False))
    if [p for p in with_consumer if p not in without]:
        yield Hit(
            ctx.queue,
            f"Lambda-consumed queue {_name(ctx.queue)} has maxReceiveCount {count}, below "
            f"{limits.LAMBDA_MIN_RECEIVE_COUNT}: throttled receives count, so healthy messages can "
            "reach the DLQ",
        )


def _has_alarm(ctx: QueueContext, metric: str) -> bool:
    return any(alarm.metric == metric for alarm in ctx.alarms)


def _qr009(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.is_dead_letter_queue and not _has_alarm(ctx, limits.METRIC_IN_FLIGHT):
        yield Hit(
            ctx.queue,
            f"queue {_name(ctx.queue)} has no alarm on {limits.METRIC_IN_FLIGHT} (stuck or slow "
            "consumers go unnoticed)",
        )


def _fed_by(ctx: QueueContext) -> str:
    services = [_name(s) + "'s RedrivePolicy" for s in ctx.sources]
    services += sorted({service for _resource, service in ctx.feeders})
    return ", ".join(services)


def _qr010(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.is_dead_letter_queue or _has_alarm(ctx, limits.METRIC_VISIBLE):
        return
    # Services send their failures with SendMessage, which NumberOfMessagesSent counts; only
    # messages moved by a queue's redrive policy escape it (QR011).
    if not ctx.sources and _has_alarm(ctx, limits.METRIC_SENT):
        return
    yield Hit(
        ctx.queue,
        f"dead-letter queue {_name(ctx.queue)} (fed by {_fed_by(ctx)}) has no alarm on "
        f"{limits.METRIC_VISIBLE} (failed messages pile up unnoticed)",
    )


def _qr011(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.sources:  # services' failures arrive by SendMessage, which the metric counts
        return
    for alarm in ctx.alarms:
        if alarm.metric == limits.METRIC_SENT:
            yield Hit(
                alarm.alarm,
                f"alarm {_name(alarm.alarm)} watches {limits.METRIC_SENT} on dead-letter queue "
                f"{_name(ctx.queue)}; messages moved there by the redrive policy are not counted",
            )


def _qr012(ctx: QueueContext) -> Iterator[Outcome]:
    sse = _bool(ctx.queue, "SqsManagedSseEnabled", True)
    if not sse and ctx.queue.prop("KmsMasterKeyId") is None:
        yield Hit(
            ctx.queue,
            f"queue {_name(ctx.queue)} is unencrypted (SqsManagedSseEnabled false, no KmsMasterKeyId)",
        )


def _judged_queue(ctx: QueueContext) -> iam.Queue:
    name = ctx.queue.prop("QueueName")
    if name is None:
        return iam.Queue(ctx.queue.uid, None)
    if isinstance(name, str) and not is_unresolved(name):
        return iam.Queue(ctx.queue.uid, name)
    return iam.Queue(ctx.queue.uid, None, name_unknown=True)


def _policy_documents(ctx: QueueContext) -> Iterator[tuple[Resource, Any]]:
    """Each queue policy naming the queue with its document; unknown documents raise."""
    for queue_policy in ctx.policies:
        document = queue_policy.prop("PolicyDocument")
        if is_unresolved(document):
            raise _Unknowable(queue_policy, f"PolicyDocument is {describe(document)}")
        yield queue_policy, document


def _qr013(ctx: QueueContext) -> Iterator[Outcome]:
    queue = _judged_queue(ctx)
    policies = list(_policy_documents(ctx))
    verdict = iam.tls_verdict([document for _, document in policies], queue)
    if verdict.complete:
        return
    if verdict.unknown:
        where = policies[0][0] if policies else ctx.queue
        yield Unknown(where, "; ".join(verdict.unknown))
        return
    if not verdict.found:
        yield Hit(
            ctx.queue,
            f"queue {_name(ctx.queue)} has no queue policy denying requests without TLS "
            "(aws:SecureTransport false)",
        )
        return
    names = ", ".join(_name(p) for p, _ in policies)
    open_actions = iam.describe_actions(verdict.open_actions)
    yield Hit(
        ctx.queue,
        f"queue {_name(ctx.queue)}: queue policy {names} does not deny every request without "
        f"TLS: {'; '.join(verdict.gaps)}; left open without TLS: {open_actions}",
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
        batch = _int(mapping, "BatchSize", limits.BATCH_SIZE_DEFAULT)
        window = _int(mapping, "MaximumBatchingWindowInSeconds", None)
        scaling = mapping.prop("ScalingConfig")
        concurrency = (
            _int_value(
                mapping, "ScalingConfig.MaximumConcurrency", scaling.get("MaximumConcurrency"), None
            )
            if isinstance(scaling, dict)
            else None
        )
        for problem in policy.event_source_problems(fifo, batch, window, concurrency):
            prop = _ESM_PROPERTY.get(problem.prop, problem.prop)
            yield Hit(
                mapping,
                f"event source on {'FIFO' if fifo else 'standard'} queue {_name(ctx.queue)}: "
                f"{prop}={problem.value} {problem.rule}",
            )


# --- Event source mappings: metrics, provisioned mode, concurrency, filters ------------------

_REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"


def _mappings(ctx: QueueContext) -> list[Resource]:
    """The queue's Lambda event source mappings (pipes have none of their settings)."""
    return [c.mapping for c in ctx.consumers if c.mapping.type == EVENT_SOURCE_MAPPING]


def _strings(resource: Resource, prop: str, value: Any) -> list[str]:
    """A list of plain strings (a lone string counts as a list of one)."""
    if value is None:
        return []
    values = value if isinstance(value, list) else [value]
    if any(not isinstance(v, str) or is_unresolved(v) for v in values):
        raise _Unknowable(resource, f"{prop} is {describe(value)}")
    return list(values)


def _known_int(resource: Resource, prop: str, default: int | None) -> int | None:
    """A number for a message only: None when the audit cannot know it."""
    try:
        return _int(resource, prop, default)
    except _Unknowable:
        return None


def _time_to_dead_letter(queue: Resource) -> str:
    """``maxReceiveCount x visibility = N s``, as far as the audit knows the numbers."""
    redrive = queue.prop("RedrivePolicy")
    count = redrive.get("maxReceiveCount") if isinstance(redrive, dict) else None
    visibility = _known_int(queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    try:
        receives = _int_value(queue, "RedrivePolicy.maxReceiveCount", count, None)
    except _Unknowable:
        receives = None
    if receives is None or visibility is None:
        return "maxReceiveCount x visibility timeout later"
    return f"{receives} receives x {visibility} s visibility = {receives * visibility} s later"


def _qr015(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in _mappings(ctx):
        types = _strings(mapping, "FunctionResponseTypes", mapping.prop("FunctionResponseTypes"))
        if _REPORT_BATCH_ITEM_FAILURES not in types:
            continue
        metrics_config = _mapping(mapping, "MetricsConfig") or {}
        metrics = _strings(mapping, "MetricsConfig.Metrics", metrics_config.get("Metrics"))
        if limits.ESM_METRICS_EVENT_COUNT in metrics:
            continue
        yield Hit(
            mapping,
            f"event source {_name(mapping)} on queue {_name(ctx.queue)} reports batch item "
            f"failures and has no MetricsConfig with {limits.ESM_METRICS_EVENT_COUNT}: its "
            "invocations succeed whatever happens to the messages, so failing messages show "
            f"first at the dead-letter queue, {_time_to_dead_letter(ctx.queue)} "
            f"({limits.METRIC_ESM_FAILED} would show them at once)",
        )


_POLLER_PROPERTY = {
    "provisioned_pollers.minimum": "ProvisionedPollerConfig.MinimumPollers",
    "provisioned_pollers.maximum": "ProvisionedPollerConfig.MaximumPollers",
    "provisioned_pollers": "ProvisionedPollerConfig",
    "max_concurrency": "ScalingConfig.MaximumConcurrency",
}


def _max_concurrency(mapping: Resource) -> int | None:
    scaling = _mapping(mapping, "ScalingConfig") or {}
    return _int_value(
        mapping, "ScalingConfig.MaximumConcurrency", scaling.get("MaximumConcurrency"), None
    )


def _qr016(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in _mappings(ctx):
        pollers = _mapping(mapping, "ProvisionedPollerConfig")
        if pollers is None:
            continue
        minimum = _int_value(
            mapping, "ProvisionedPollerConfig.MinimumPollers", pollers.get("MinimumPollers"), None
        )
        maximum = _int_value(
            mapping, "ProvisionedPollerConfig.MaximumPollers", pollers.get("MaximumPollers"), None
        )
        concurrency = _max_concurrency(mapping)
        for problem in policy.provisioned_poller_problems(minimum, maximum, concurrency):
            prop = _POLLER_PROPERTY.get(problem.prop, problem.prop)
            value = (
                f"({minimum}, {maximum})"
                if problem.prop == "provisioned_pollers"
                else problem.value
            )
            yield Hit(
                mapping,
                f"event source {_name(mapping)} on queue {_name(ctx.queue)}: "
                f"{prop}={value} {problem.rule}",
            )


def _concurrency_ceiling(mapping: Resource) -> int | None:
    """The most concurrent invocations this mapping makes; None when nothing caps it."""
    pollers = _mapping(mapping, "ProvisionedPollerConfig")
    maximum_pollers = None
    if pollers is not None:
        # Provisioned mode without MaximumPollers runs up to the default maximum.
        maximum_pollers = _int_value(
            mapping,
            "ProvisionedPollerConfig.MaximumPollers",
            pollers.get("MaximumPollers"),
            limits.MAX_POLLERS_DEFAULT,
        )
    return policy.concurrency_ceiling(_max_concurrency(mapping), maximum_pollers)


def _once_per_function(ctx: QueueContext) -> Iterator[Consumer]:
    """Consumers whose function this context speaks for: a function may read many queues, in
    many templates, and each of their contexts sees it. The context holding the function's
    mapping with the smallest uid reports it, so the fleet reports each function once."""
    for consumer in ctx.consumers:
        if consumer.function is None:
            continue
        mappings = ctx.mappings_of(consumer.function.uid)
        if mappings and mappings[0].uid == consumer.mapping.uid:
            yield consumer


def _qr017(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in _once_per_function(ctx):
        function = consumer.function
        assert function is not None
        reserved = _int(function, "ReservedConcurrentExecutions", None)
        if reserved is None:
            continue  # no reservation: the function shares the account's unreserved pool
        # Each SQS source's cap; None for an uncapped one, which scales up to Lambda's
        # on-demand limit: the classic case MaximumConcurrency was made for.
        ceilings: dict[str, int | None] = {}
        for mapping in ctx.mappings_of(function.uid):
            if mapping.type != EVENT_SOURCE_MAPPING:
                continue  # a pipe has no concurrency cap to count
            name = _name(mapping) if _name(mapping) not in ceilings else mapping.uid
            ceilings[name] = _concurrency_ceiling(mapping)
        for problem in policy.reserved_concurrency_problems(reserved, ceilings):
            yield Hit(
                function,
                f"function {_name(function)} has ReservedConcurrentExecutions {reserved}, which "
                f"{problem.rule}",
            )


def _qr018(ctx: QueueContext) -> Iterator[Outcome]:
    redrive = _mapping(ctx.queue, "RedrivePolicy")
    if redrive is None:
        return  # no DLQ at all is QR001
    count = _int_value(
        ctx.queue, "RedrivePolicy.maxReceiveCount", redrive.get("maxReceiveCount"), None
    )
    if ctx.consumers:
        visibility = _int(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    else:
        # Consumers outside the fleet may pass their own visibility timeout to ReceiveMessage,
        # so the queue's is only their default: an unknown one is no reason for a QR900 here.
        visibility = _known_int(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    retention = _int(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    for problem in policy.expiry_before_dead_letter_problems(count, visibility, retention):
        yield Hit(
            ctx.queue,
            f"queue {_name(ctx.queue)} keeps messages {retention} s, which {problem.rule}",
        )


def _qr019(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in _mappings(ctx):
        criteria = _mapping(mapping, "FilterCriteria") or {}
        filters = criteria.get("Filters")
        if filters is not None and not isinstance(filters, list):
            raise _Unknowable(mapping, f"FilterCriteria.Filters is {describe(filters)}")
        if filters:
            yield Hit(
                mapping,
                f"event source {_name(mapping)} on queue {_name(ctx.queue)} has "
                f"{len(filters)} filter{'s' if len(filters) > 1 else ''} in FilterCriteria: "
                "Lambda deletes the messages that match none, so they never reach the "
                f"dead-letter queue (only {limits.METRIC_ESM_FILTERED_OUT} counts them)",
            )


def _qr020(ctx: QueueContext) -> Iterator[Outcome]:
    consumers = _lambda_consumers(ctx)
    if not ctx.is_dead_letter_queue or not consumers:
        return
    if _has_alarm(ctx, limits.METRIC_RECEIVED):
        return
    names = ", ".join(_name(c.mapping) for c in consumers)
    yield Hit(
        ctx.queue,
        f"dead-letter queue {_name(ctx.queue)} (fed by {_fed_by(ctx)}) is consumed by {names} "
        f"and has no alarm on {limits.METRIC_RECEIVED}: the consumer drains it, so its "
        f"{limits.METRIC_VISIBLE} stays near zero while failures keep arriving",
    )


# --- Queues: sizes, policies, alarms, properties ---------------------------------------------


def _message_size(queue: Resource) -> int:
    size = _int(queue, "MaximumMessageSize", limits.MESSAGE_SIZE_DEFAULT)
    assert size is not None
    return size


def _qr021(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.dead_letter_queues:
        return
    source = _message_size(ctx.queue)
    for dlq in ctx.dead_letter_queues:
        dead = _message_size(dlq)
        problems = _comparison_only(
            policy.message_size_problems(source, dead),
            policy.message_size_problems(source, None),
            policy.message_size_problems(None, dead),
        )
        if problems:
            yield Hit(
                ctx.queue,
                f"queue {_name(ctx.queue)} accepts messages of up to {source} bytes and its "
                f"dead-letter queue {_name(dlq)} only up to {dead} bytes: a failing message "
                f"larger than {dead} bytes cannot be moved to the DLQ",
            )


def _qr022(ctx: QueueContext) -> Iterator[Outcome]:
    mappings = _mappings(ctx)
    if not mappings:
        return
    # Only an explicit size says how large messages may be; the default cap says nothing.
    size = _int(ctx.queue, "MaximumMessageSize", None)
    for mapping in mappings:
        batch = _int(mapping, "BatchSize", limits.BATCH_SIZE_DEFAULT)
        if batch is None or size is None:
            continue
        if policy.batch_payload_problems(batch, size):
            fits = max(limits.LAMBDA_SYNC_PAYLOAD_MAX // size, 1)
            yield Hit(
                mapping,
                f"event source {_name(mapping)} on queue {_name(ctx.queue)}: BatchSize {batch} "
                f"x MaximumMessageSize {size} bytes = {batch * size} bytes, above Lambda's "
                f"{limits.LAMBDA_SYNC_PAYLOAD_MAX}-byte invocation payload: batches of large "
                f"messages are cut short (about {fits} messages of the maximum size)",
            )


def _qr023(ctx: QueueContext) -> Iterator[Outcome]:
    queue = _judged_queue(ctx)
    for queue_policy in ctx.policies:
        document = queue_policy.prop("PolicyDocument")
        if is_unresolved(document):
            yield Unknown(queue_policy, f"PolicyDocument is {describe(document)}")
            continue
        for verdict in iam.public_statements([document], queue):
            if isinstance(verdict, iam.Undecided):
                yield Unknown(queue_policy, verdict.what)
                continue
            yield Hit(
                ctx.queue,
                f"queue policy {_name(queue_policy)} on queue {_name(ctx.queue)}: "
                f"{verdict.statement.label} allows {iam.describe_actions(verdict.actions)} to "
                f"{verdict.who}: {verdict.why}",
            )


def _qr024(ctx: QueueContext) -> Iterator[Outcome]:
    seen: set[str] = set()
    for ref in ctx.alarms:
        alarm = ref.alarm
        if alarm.uid in seen:
            continue
        seen.add(alarm.uid)
        try:
            enabled = _bool(alarm, "ActionsEnabled", True)
            actions = alarm.prop("AlarmActions")
            if actions is not None and not isinstance(actions, list):
                raise _Unknowable(alarm, f"AlarmActions is {describe(actions)}")
        except _Unknowable as unknown:
            yield Unknown(unknown.resource, unknown.what)
            continue
        metric = f"{ref.metric} of queue {_name(ctx.queue)}"
        if not enabled:
            yield Hit(
                alarm,
                f"alarm {_name(alarm)} on {metric} has ActionsEnabled false: it changes state "
                "and tells no one",
            )
        elif not actions:
            yield Hit(
                alarm,
                f"alarm {_name(alarm)} on {metric} has no AlarmActions: it changes state and "
                "tells no one",
            )


def _qr025(ctx: QueueContext) -> Iterator[Outcome]:
    if _has_alarm(ctx, limits.METRIC_OLDEST_AGE):
        return
    redrive = ctx.queue.prop("RedrivePolicy")
    retention = _known_int(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    keeps = f"after {retention} s" if retention is not None else "at the end of the retention"
    if redrive is not None:
        if is_unresolved(redrive):
            raise _Unknowable(ctx.queue, f"RedrivePolicy is {describe(redrive)}")
        yield Hit(
            ctx.queue,
            f"queue {_name(ctx.queue)} has a dead-letter queue and no alarm on "
            f"{limits.METRIC_OLDEST_AGE}: a backlog of unprocessed messages expires {keeps} "
            "unnoticed",
        )
    elif ctx.sources:
        yield Hit(
            ctx.queue,
            f"dead-letter queue {_name(ctx.queue)} (fed by {_fed_by(ctx)}) has no alarm on "
            f"{limits.METRIC_OLDEST_AGE}: dead letters nobody redrives expire {keeps} unnoticed",
        )


def _qr026(ctx: QueueContext) -> Iterator[Outcome]:
    for mapping in _mappings(ctx):
        for prop in ("StartingPosition", "StartingPositionTimestamp"):
            value = mapping.prop(prop)
            if value is not None:
                yield Hit(
                    mapping,
                    f"event source {_name(mapping)} on queue {_name(ctx.queue)} sets {prop} "
                    f"({describe(value)}), which only stream sources take: "
                    "CreateEventSourceMapping fails for an SQS source",
                )


def _qr027(ctx: QueueContext) -> Iterator[Outcome]:
    present = [p for p in limits.FIFO_ONLY_QUEUE_PROPERTIES if ctx.queue.prop(p) is not None]
    if present and not is_fifo(ctx.queue):
        yield Hit(
            ctx.queue,
            f"standard queue {_name(ctx.queue)} sets {', '.join(present)}, which SQS accepts "
            "only on FIFO queues: CreateQueue fails",
        )


def _qr028(ctx: QueueContext) -> Iterator[Outcome]:
    for consumer in _once_per_function(ctx):
        function = consumer.function
        assert function is not None
        loop = function.prop("RecursiveLoop")
        if loop is not None and not isinstance(loop, str):
            raise _Unknowable(function, f"RecursiveLoop is {describe(loop)}")
        if loop == limits.RECURSIVE_LOOP_ALLOW:
            yield Hit(
                function,
                f"function {_name(function)}, a consumer of queue {_name(ctx.queue)}, has "
                f"RecursiveLoop {loop}: if it sends to a queue it reads, Lambda lets the loop "
                "run forever instead of stopping it",
            )


def _service_senders(ctx: QueueContext) -> list[str]:
    """What services (not an account's roles) send to this queue: producers, and dead-letter
    settings that SNS and EventBridge rules deliver with their own service principals."""
    senders = [f"{service} ({_name(r)})" for r, service in ctx.producers]
    for resource, _service in ctx.feeders:
        if resource.type == SNS_SUBSCRIPTION:
            senders.append(f"{PRODUCER_SNS} dead-letter ({_name(resource)})")
        elif resource.type == EVENT_RULE:
            senders.append(f"{PRODUCER_EVENTBRIDGE} dead-letter ({_name(resource)})")
    return sorted(set(senders))


def _qr029(ctx: QueueContext) -> Iterator[Outcome]:
    key = ctx.queue.prop("KmsMasterKeyId")
    if key is None:
        return
    senders = _service_senders(ctx)
    if not senders:
        return
    if is_ref(key):
        return  # a key of the template: customer managed (no alias/aws/ alias can be created)
    known_key = ":key/" in key if isinstance(key, str) else False  # a key id, not an alias
    if not isinstance(key, str) or (
        is_unresolved(key) and not known_key and not key.endswith(f":{limits.AWS_MANAGED_SQS_KEY}")
    ):
        raise _Unknowable(ctx.queue, f"KmsMasterKeyId is {describe(key)}")
    if policy.is_aws_managed_sqs_key(key):
        yield Hit(
            ctx.queue,
            f"queue {_name(ctx.queue)} is encrypted with the AWS managed key ({key}) and "
            f"receives from {', '.join(senders)}: those services cannot use that key, so their "
            "messages never arrive",
        )


CATALOG: tuple[Rule, ...] = (
    Rule(
        "QR001",
        "error",
        "Queue without a dead-letter queue",
        "add a RedrivePolicy naming a dead-letter queue of the same type",
        _qr001,
    ),
    Rule(
        "QR002",
        "error",
        "Dead-letter queue type differs from its source",
        "use a FIFO dead-letter queue for a FIFO source and a standard one for a standard source",
        _qr002,
    ),
    Rule(
        "QR003",
        "error",
        "Dead-letter queue retention not longer than the source's",
        f"set the DLQ's MessageRetentionPeriod above the source's (at most {limits.RETENTION_MAX} s)",
        _qr003,
    ),
    Rule(
        "QR004",
        "warning",
        "Dead-letter queue open to any source",
        "set RedriveAllowPolicy to byQueue with the source queue ARNs",
        _qr004,
    ),
    Rule(
        "QR005",
        "error",
        "Dead-letter queue redrive-allow policy excludes its source",
        "list the source queue ARN in RedriveAllowPolicy.sourceQueueArns with byQueue",
        _qr005,
    ),
    Rule(
        "QR006",
        "error",
        "Visibility timeout below the consumer function timeout",
        "raise the queue's VisibilityTimeout to at least the function timeout "
        f"(recommended: {limits.VISIBILITY_TIMEOUT_FACTOR} x timeout + batching window)",
        _qr006,
    ),
    Rule(
        "QR007",
        "warning",
        "Visibility timeout below 6 x function timeout + batching window",
        f"raise VisibilityTimeout to {limits.VISIBILITY_TIMEOUT_FACTOR} x function timeout + "
        "batching window",
        _qr007,
    ),
    Rule(
        "QR008",
        "warning",
        "Lambda-consumed queue with maxReceiveCount below 5",
        f"set RedrivePolicy.maxReceiveCount to at least {limits.LAMBDA_MIN_RECEIVE_COUNT}",
        _qr008,
    ),
    Rule(
        "QR009",
        "warning",
        "No in-flight alarm on the source queue",
        f"alarm on {limits.METRIC_IN_FLIGHT} (statistic Maximum, missing data not breaching)",
        _qr009,
    ),
    Rule(
        "QR010",
        "warning",
        "No depth alarm on the dead-letter queue",
        f"alarm on the DLQ's {limits.METRIC_VISIBLE} >= 1 (statistic Maximum)",
        _qr010,
    ),
    Rule(
        "QR011",
        "warning",
        "Dead-letter queue alarm on NumberOfMessagesSent",
        f"alarm on {limits.METRIC_VISIBLE} instead; {limits.METRIC_SENT} misses redriven messages",
        _qr011,
    ),
    Rule(
        "QR012",
        "error",
        "Queue unencrypted",
        "remove SqsManagedSseEnabled: false, or set KmsMasterKeyId",
        _qr012,
    ),
    Rule(
        "QR013",
        "warning",
        "Queue accepts requests without TLS",
        'add an AWS::SQS::QueuePolicy statement: Deny, Principal "*", Action sqs:*, Resource '
        "the queue, whose only Condition is Bool aws:SecureTransport false",
        _qr013,
    ),
    Rule(
        "QR014",
        "error",
        "Invalid event source batching settings",
        "fix BatchSize, MaximumBatchingWindowInSeconds and ScalingConfig to Lambda's limits",
        _qr014,
    ),
    Rule(
        "QR015",
        "warning",
        "Batch item failures reported without event source metrics",
        f"add MetricsConfig {{Metrics: [{limits.ESM_METRICS_EVENT_COUNT}]}} to the event source "
        f"mapping and alarm on its {limits.METRIC_ESM_FAILED}",
        _qr015,
    ),
    Rule(
        "QR016",
        "error",
        "Invalid provisioned poller configuration",
        f"set MinimumPollers {limits.MIN_POLLERS_MIN}-{limits.MIN_POLLERS_MAX} and MaximumPollers "
        f"{limits.MAX_POLLERS_MIN}-{limits.MAX_POLLERS_MAX} with minimum <= maximum, and drop "
        "ScalingConfig.MaximumConcurrency (cap concurrency with MaximumPollers instead)",
        _qr016,
    ),
    Rule(
        "QR017",
        "warning",
        "Reserved concurrency below the function's SQS sources' maximum concurrency",
        "raise the function's ReservedConcurrentExecutions to at least the sum of its SQS event "
        "sources' MaximumConcurrency (or MaximumPollers x "
        f"{limits.INVOCATIONS_PER_POLLER}), or lower those caps",
        _qr017,
    ),
    Rule(
        "QR018",
        "error",
        "Messages expire before they reach the dead-letter queue",
        "keep messages longer than maxReceiveCount x VisibilityTimeout (MessageRetentionPeriod "
        f"at most {limits.RETENTION_MAX} s), or lower maxReceiveCount or the visibility timeout",
        _qr018,
    ),
    Rule(
        "QR019",
        "info",
        "Event source filter deletes unmatched messages",
        "make sure unmatched messages may be lost, or filter in the function; watch "
        f"{limits.METRIC_ESM_FILTERED_OUT}",
        _qr019,
    ),
    Rule(
        "QR020",
        "warning",
        "Consumed dead-letter queue without an arrivals alarm",
        f"alarm on the DLQ's {limits.METRIC_RECEIVED} >= 1 (statistic Sum, period "
        f"{limits.SQS_METRIC_PERIOD} s)",
        _qr020,
    ),
    Rule(
        "QR021",
        "error",
        "Dead-letter queue maximum message size below its source's",
        "give the dead-letter queue a MaximumMessageSize at least its source's (absent means "
        f"{limits.MESSAGE_SIZE_DEFAULT})",
        _qr021,
    ),
    Rule(
        "QR022",
        "warning",
        "Batch of maximum-size messages above Lambda's payload limit",
        f"lower BatchSize to at most {limits.LAMBDA_SYNC_PAYLOAD_MAX} / MaximumMessageSize, or "
        "lower MaximumMessageSize",
        _qr022,
    ),
    Rule(
        "QR023",
        "error",
        "Queue policy allows public access",
        "name the principals (accounts or roles), or add a Condition with a positive operator "
        "(not ...IfExists) and fixed values, such as aws:SourceArn, aws:SourceAccount or "
        "aws:PrincipalOrgID; give a service principal aws:SourceArn or aws:SourceAccount",
        _qr023,
    ),
    Rule(
        "QR024",
        "warning",
        "Silent alarm",
        "give the alarm AlarmActions (an SNS topic, for example) and leave ActionsEnabled true",
        _qr024,
    ),
    Rule(
        "QR025",
        "warning",
        "No alarm on the age of the oldest message",
        f"alarm on {limits.METRIC_OLDEST_AGE} (statistic Maximum) below the retention period, "
        "on the source and on its dead-letter queue",
        _qr025,
    ),
    Rule(
        "QR026",
        "error",
        "Starting position on an SQS event source",
        "remove StartingPosition and StartingPositionTimestamp from the SQS event source mapping",
        _qr026,
    ),
    Rule(
        "QR027",
        "error",
        "FIFO-only properties on a standard queue",
        f"remove {', '.join(limits.FIFO_ONLY_QUEUE_PROPERTIES)}, or make the queue FIFO "
        "(FifoQueue true, a name ending in .fifo)",
        _qr027,
    ),
    Rule(
        "QR028",
        "warning",
        "Consumer function allows recursive loops",
        "remove RecursiveLoop: Allow (the default, Terminate, stops a loop)",
        _qr028,
    ),
    Rule(
        "QR029",
        "error",
        "AWS managed key on a queue that AWS services send to",
        "encrypt the queue with a customer managed KMS key whose policy lets the sending "
        "service principal use it, or with SSE-SQS",
        _qr029,
    ),
)

META_RULES: tuple[tuple[str, Severity, str, str], ...] = (
    (
        UNRESOLVED_RULE,
        "info",
        "Reference the audit could not resolve",
        "include the template that defines it in the audit, or replace the parameter by a value",
    ),
    (
        UNPARSEABLE_RULE,
        "error",
        "Template that could not be read or parsed",
        "fix the file, or leave it out of the audit paths",
    ),
    (
        suppressions.SUPPRESSION_RULE,
        "warning",
        "Suppression that is not honoured",
        f"write it as Metadata {suppression_terms.CDK_NAG_KEY}.{suppression_terms.CDK_NAG_LIST} entries "
        "{id, reason} naming a rule queue-audit reports, with a reason of at least "
        f"{suppression_terms.MIN_REASON_LENGTH} characters; renew an expired entry of a suppressions "
        "file, or fix the findings it accepted",
    ),
    (
        MISSING_TRANSFORM_RULE,
        "info",
        "SAM resources without the SAM transform",
        "add `Transform: AWS::Serverless-2016-10-31` to the template (CloudFormation rejects "
        "AWS::Serverless resources without it), or audit the template that declares it",
    ),
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in CATALOG}
# Every id a finding can carry: what a suppression may name.
RULE_IDS = frozenset([*RULES_BY_ID, *(m[0] for m in META_RULES)])


def describe_rules() -> list[tuple[str, Severity, str, str]]:
    """(id, severity, title, fix) for every rule the audit can report, in id order."""
    return sorted([(r.id, r.severity, r.title, r.fix) for r in CATALOG] + list(META_RULES))


def meta_fix(rule_id: str) -> str:
    return next(m[3] for m in META_RULES if m[0] == rule_id)


def unresolved_finding(resource: Resource, message: str, queue: str = "") -> Finding:
    _, severity, _, fix = next(m for m in META_RULES if m[0] == UNRESOLVED_RULE)
    finding = Finding(
        UNRESOLVED_RULE,
        severity,
        resource.file,
        resource.stack,
        resource.logical_id,
        queue,
        message,
        fix,
    )
    return suppressions.of_resource(finding, resource)


def note_finding(note: NoteRow) -> Finding:
    _, severity, _, fix = next(m for m in META_RULES if m[0] == note.rule_id)
    return Finding(
        note.rule_id, severity, note.file, note.stack, note.resource, note.queue, note.message, fix
    )


def unparseable_finding(file: str, stack: str, error: str) -> Finding:
    _, severity, _, fix = next(m for m in META_RULES if m[0] == UNPARSEABLE_RULE)
    return Finding(
        UNPARSEABLE_RULE, severity, file, stack, "", "", f"could not read {file}: {error}", fix
    )


def _parameter_sources(ctx: QueueContext, resource: Resource) -> str:
    """Where values of the judged resources came from, when a parameter gave them."""
    seen: dict[str, Resource] = {r.uid: r for r in (resource, ctx.queue)}
    for consumer in ctx.consumers:
        if consumer.mapping.uid == resource.uid and consumer.function is not None:
            seen[consumer.function.uid] = consumer.function
    notes = [
        f"{_name(r)} {prop} from {source}"
        for r in seen.values()
        for prop, source in sorted((r.prop(PARAMETER_SOURCES) or {}).items())
    ]
    return f" [values: {'; '.join(notes)}]" if notes else ""


def evaluate(ctx: QueueContext, catalog: Iterable[Rule] = CATALOG) -> list[Finding]:
    """Every finding of every rule on this queue's context, QR900 for what it could not judge."""
    findings: dict[tuple[str, str, str, str], Finding] = {}
    queue = ctx.queue.logical_id
    for rule in catalog:
        try:
            outcomes = list(rule.check(ctx))
        except _Unknowable as unknown:
            outcomes = [Unknown(unknown.resource, unknown.what)]
        except Exception as error:  # a template shape no rule foresaw is reported, not fatal
            outcomes = [Unknown(ctx.queue, f"unexpected property shape ({type(error).__name__})")]
        for outcome in outcomes:
            if isinstance(outcome, Hit):
                finding = suppressions.of_resource(
                    Finding(
                        rule.id,
                        rule.severity,
                        outcome.resource.file,
                        outcome.resource.stack,
                        outcome.resource.logical_id,
                        queue,
                        outcome.message + _parameter_sources(ctx, outcome.resource),
                        rule.fix,
                    ),
                    outcome.resource,
                )
            else:
                finding = unresolved_finding(
                    outcome.resource,
                    f"{rule.id} not judged for queue {_name(ctx.queue)}: {outcome.what}",
                    queue,
                )
            findings[(finding.rule_id, finding.template, finding.resource, finding.message)] = (
                finding
            )
    return sorted(findings.values(), key=Finding.sort_key)
