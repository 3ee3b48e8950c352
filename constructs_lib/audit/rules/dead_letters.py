"""Dead-lettering: whether a queue has a dead-letter queue, and whether that queue can take
what its source moves there: the same type, a longer retention, a size as large, a redrive-allow
policy that admits the source (QR001-QR005, QR021); and whether messages get there at all: enough
receives for a Lambda consumer, and a retention that outlasts the receives (QR008, QR018).
"""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib import limits
from constructs_lib.audit.model import QueueContext, Resource
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule, Unknowable
from constructs_lib.audit.parse.intrinsics import describe, is_unresolved
from constructs_lib.audit.rules._backoff import backoff_outcomes
from constructs_lib.audit.rules._reading import (
    int_prop,
    int_value,
    is_fifo,
    known_int,
    lambda_consumers,
    name_of,
    object_prop,
)
from constructs_lib.errors import Problem
from constructs_lib.policy.dead_letters import (
    expiry_before_dead_letter_problems,
    max_receive_count_problems,
    message_size_problems,
    retention_problems,
)


def _comparison_only(
    both: list[Problem], first_only: list[Problem], second_only: list[Problem]
) -> list[Problem]:
    """Problems that need both values: the comparison, without each value's own range checks."""
    singles = set(first_only) | set(second_only)
    return [problem for problem in both if problem not in singles]


def _qr001(ctx: QueueContext) -> Iterator[Outcome]:
    if ctx.is_dead_letter_queue:
        return
    redrive = ctx.queue.prop("RedrivePolicy")
    if redrive is not None and is_unresolved(redrive):
        raise Unknowable(ctx.queue, f"RedrivePolicy is {describe(redrive)}")
    if redrive is None:
        yield Hit(
            ctx.queue, f"queue {name_of(ctx.queue)} has no dead-letter queue (no RedrivePolicy)"
        )


QR001 = Rule(
    "QR001",
    "error",
    "Queue without a dead-letter queue",
    "add a RedrivePolicy naming a dead-letter queue of the same type",
    _qr001,
)


def _qr002(ctx: QueueContext) -> Iterator[Outcome]:
    source_fifo = is_fifo(ctx.queue)
    for dlq in ctx.dead_letter_queues:
        if is_fifo(dlq) != source_fifo:
            kinds = ("FIFO", "standard") if source_fifo else ("standard", "FIFO")
            yield Hit(
                ctx.queue,
                f"{kinds[0]} queue {name_of(ctx.queue)} has a {kinds[1]} dead-letter queue "
                f"{name_of(dlq)}; SQS rejects the redrive policy at deploy time",
            )


QR002 = Rule(
    "QR002",
    "error",
    "Dead-letter queue type differs from its source",
    "use a FIFO dead-letter queue for a FIFO source and a standard one for a standard source",
    _qr002,
)


def _qr003(ctx: QueueContext) -> Iterator[Outcome]:
    if is_fifo(ctx.queue):
        return  # FIFO queues reset the enqueue time when a message moves to the DLQ
    source = int_prop(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    for dlq in ctx.dead_letter_queues:
        dead = int_prop(dlq, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
        problems = _comparison_only(
            retention_problems(False, source, dead),
            retention_problems(False, source, None),
            retention_problems(False, None, dead),
        )
        if problems:
            yield Hit(
                ctx.queue,
                f"standard queue {name_of(ctx.queue)} keeps messages {source} s and its "
                f"dead-letter queue {name_of(dlq)} {dead} s: a moved message keeps its original "
                "enqueue time, so the DLQ deletes it on arrival or soon after",
            )


QR003 = Rule(
    "QR003",
    "error",
    "Dead-letter queue retention not longer than the source's",
    f"set the DLQ's MessageRetentionPeriod above the source's (at most {limits.RETENTION_MAX} s)",
    _qr003,
)


def _redrive_permission(dlq: Resource) -> str | None:
    allow = object_prop(dlq, "RedriveAllowPolicy")
    if allow is None:
        return None
    permission = allow.get("redrivePermission")
    if permission is not None and not isinstance(permission, str):
        raise Unknowable(dlq, f"RedriveAllowPolicy.redrivePermission is {describe(permission)}")
    return permission


def _qr004(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.sources:  # the redrive-allow policy governs queues' redrive, not services
        return
    permission = _redrive_permission(ctx.queue)
    if permission is None or permission == "allowAll":
        state = "has no RedriveAllowPolicy" if permission is None else "allows allowAll"
        yield Hit(
            ctx.queue,
            f"dead-letter queue {name_of(ctx.queue)} {state}: any queue in the account may use it",
        )


QR004 = Rule(
    "QR004",
    "warning",
    "Dead-letter queue open to any source",
    "set RedriveAllowPolicy to byQueue with the source queue ARNs",
    _qr004,
)


def _qr005(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.sources:
        return
    permission = _redrive_permission(ctx.queue)
    if permission == "denyAll":
        yield Hit(
            ctx.queue,
            f"dead-letter queue {name_of(ctx.queue)} has redrivePermission denyAll, which excludes "
            f"its source{'s' if len(ctx.sources) > 1 else ''} "
            + ", ".join(name_of(s) for s in ctx.sources),
        )
    elif permission == "byQueue":
        for source in ctx.sources:
            if source.uid not in ctx.allowed_sources:
                if source.prop("QueueName") is None and _names_unaudited_queues(ctx):
                    # A generated name is known only once deployed (an adopted queue keeps
                    # one): an entry that names no audited queue may be this source.
                    raise Unknowable(
                        ctx.queue,
                        f"RedriveAllowPolicy.sourceQueueArns may name source {name_of(source)}, "
                        "whose name CloudFormation generates",
                    )
                yield Hit(
                    ctx.queue,
                    f"dead-letter queue {name_of(ctx.queue)} allows byQueue but its "
                    f"sourceQueueArns do not name its source {name_of(source)}",
                )


def _names_unaudited_queues(ctx: QueueContext) -> bool:
    """Whether some entry of the DLQ's sourceQueueArns resolved to no queue audited here."""
    allow = object_prop(ctx.queue, "RedriveAllowPolicy") or {}
    entries = allow.get("sourceQueueArns")
    return isinstance(entries, list) and len(entries) > len(ctx.allowed_sources)


QR005 = Rule(
    "QR005",
    "error",
    "Dead-letter queue redrive-allow policy excludes its source",
    "list the source queue ARN in RedriveAllowPolicy.sourceQueueArns with byQueue",
    _qr005,
)


def _qr008(ctx: QueueContext) -> Iterator[Outcome]:
    if not lambda_consumers(ctx):
        return
    redrive = object_prop(ctx.queue, "RedrivePolicy")
    if redrive is None:
        return  # no DLQ at all is QR001
    count = int_value(
        ctx.queue, "RedrivePolicy.maxReceiveCount", redrive.get("maxReceiveCount"), None
    )
    with_consumer = max_receive_count_problems(count, True)
    without = set(max_receive_count_problems(count, False))
    if [p for p in with_consumer if p not in without]:
        yield Hit(
            ctx.queue,
            f"Lambda-consumed queue {name_of(ctx.queue)} has maxReceiveCount {count}, below "
            f"{limits.LAMBDA_MIN_RECEIVE_COUNT}: throttled receives count, so healthy messages can "
            "reach the DLQ",
        )


QR008 = Rule(
    "QR008",
    "warning",
    "Lambda-consumed queue with maxReceiveCount below 5",
    f"set RedrivePolicy.maxReceiveCount to at least {limits.LAMBDA_MIN_RECEIVE_COUNT}",
    _qr008,
)


def _qr018(ctx: QueueContext) -> Iterator[Outcome]:
    redrive = object_prop(ctx.queue, "RedrivePolicy")
    if redrive is None:
        return  # no DLQ at all is QR001
    count = int_value(
        ctx.queue, "RedrivePolicy.maxReceiveCount", redrive.get("maxReceiveCount"), None
    )
    if ctx.consumers:
        visibility = int_prop(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    else:
        # Consumers outside the fleet may pass their own visibility timeout to ReceiveMessage,
        # so the queue's is only their default: an unknown one is no reason for a QR900 here.
        visibility = known_int(ctx.queue, "VisibilityTimeout", limits.VISIBILITY_TIMEOUT_DEFAULT)
    retention = int_prop(ctx.queue, "MessageRetentionPeriod", limits.RETENTION_DEFAULT)
    plain = [
        Hit(ctx.queue, f"queue {name_of(ctx.queue)} keeps messages {retention} s, which {p.rule}")
        for p in expiry_before_dead_letter_problems(count, visibility, retention)
    ]
    backed_off: list[Outcome] = []
    if count is not None and visibility is not None and retention is not None:
        backed_off = backoff_outcomes(ctx, count, visibility, retention, bool(plain))
    yield from backed_off
    # A consumer's backoff, when known, says more than count x visibility (never less).
    if not any(isinstance(o, Hit) and o.resource.uid == ctx.queue.uid for o in backed_off):
        yield from plain


QR018 = Rule(
    "QR018",
    "error",
    "Messages expire before they reach the dead-letter queue",
    "keep messages longer than maxReceiveCount x VisibilityTimeout, or than the consumer's "
    "backoff needs (MessageRetentionPeriod "
    f"at most {limits.RETENTION_MAX} s), or lower maxReceiveCount, the visibility timeout or the "
    "backoff's waits",
    _qr018,
)


def _message_size(queue: Resource) -> int:
    size = int_prop(queue, "MaximumMessageSize", limits.MESSAGE_SIZE_DEFAULT)
    assert size is not None
    return size


def _qr021(ctx: QueueContext) -> Iterator[Outcome]:
    if not ctx.dead_letter_queues:
        return
    source = _message_size(ctx.queue)
    for dlq in ctx.dead_letter_queues:
        dead = _message_size(dlq)
        problems = _comparison_only(
            message_size_problems(source, dead),
            message_size_problems(source, None),
            message_size_problems(None, dead),
        )
        if problems:
            yield Hit(
                ctx.queue,
                f"queue {name_of(ctx.queue)} accepts messages of up to {source} bytes and its "
                f"dead-letter queue {name_of(dlq)} only up to {dead} bytes: a failing message "
                f"larger than {dead} bytes cannot be moved to the DLQ",
            )


QR021 = Rule(
    "QR021",
    "error",
    "Dead-letter queue maximum message size below its source's",
    "give the dead-letter queue a MaximumMessageSize at least its source's (absent means "
    f"{limits.MESSAGE_SIZE_DEFAULT})",
    _qr021,
)


RULES: tuple[Rule, ...] = (QR001, QR002, QR003, QR004, QR005, QR008, QR018, QR021)
