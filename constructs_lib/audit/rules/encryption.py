"""Encryption at rest: an unencrypted queue (QR012), and the AWS managed key on a queue that
AWS services (its producers, SNS and EventBridge dead-letter settings) send to (QR029).
"""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib import limits
from constructs_lib.audit.model import (
    EVENT_RULE,
    PRODUCER_EVENTBRIDGE,
    PRODUCER_SNS,
    SNS_SUBSCRIPTION,
    QueueContext,
)
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule, Unknowable
from constructs_lib.audit.parse.intrinsics import describe, is_ref, is_unresolved
from constructs_lib.audit.rules._reading import bool_prop, name_of
from constructs_lib.policy.encryption import is_aws_managed_sqs_key


def _qr012(ctx: QueueContext) -> Iterator[Outcome]:
    sse = bool_prop(ctx.queue, "SqsManagedSseEnabled", True)
    if not sse and ctx.queue.prop("KmsMasterKeyId") is None:
        yield Hit(
            ctx.queue,
            f"queue {name_of(ctx.queue)} is unencrypted (SqsManagedSseEnabled false, no KmsMasterKeyId)",
        )


QR012 = Rule(
    "QR012",
    "error",
    "Queue unencrypted",
    "remove SqsManagedSseEnabled: false, or set KmsMasterKeyId",
    _qr012,
)


def _service_senders(ctx: QueueContext) -> list[str]:
    """What services (not an account's roles) send to this queue: producers, and dead-letter
    settings that SNS and EventBridge rules deliver with their own service principals."""
    senders = [f"{service} ({name_of(r)})" for r, service in ctx.producers]
    for resource, _service in ctx.feeders:
        if resource.type == SNS_SUBSCRIPTION:
            senders.append(f"{PRODUCER_SNS} dead-letter ({name_of(resource)})")
        elif resource.type == EVENT_RULE:
            senders.append(f"{PRODUCER_EVENTBRIDGE} dead-letter ({name_of(resource)})")
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
        raise Unknowable(ctx.queue, f"KmsMasterKeyId is {describe(key)}")
    if is_aws_managed_sqs_key(key):
        yield Hit(
            ctx.queue,
            f"queue {name_of(ctx.queue)} is encrypted with the AWS managed key ({key}) and "
            f"receives from {', '.join(senders)}: those services cannot use that key, so their "
            "messages never arrive",
        )


QR029 = Rule(
    "QR029",
    "error",
    "AWS managed key on a queue that AWS services send to",
    "encrypt the queue with a customer managed KMS key whose policy lets the sending "
    "service principal use it, or with SSE-SQS",
    _qr029,
)


RULES: tuple[Rule, ...] = (QR012, QR029)
