"""Queue policies, judged by the IAM-style evaluator (``audit/iam/``): the TLS deny (QR013)
and statements that admit anyone (QR023).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from constructs_lib.audit.iam import public_access, tls_deny
from constructs_lib.audit.iam.statements import Queue, describe_actions
from constructs_lib.audit.model import QueueContext, Resource
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule, Unknowable, Unknown
from constructs_lib.audit.parse.intrinsics import describe, is_unresolved
from constructs_lib.audit.rules._reading import name_of


def _judged_queue(ctx: QueueContext) -> Queue:
    name = ctx.queue.prop("QueueName")
    if name is None:
        return Queue(ctx.queue.uid, None)
    if isinstance(name, str) and not is_unresolved(name):
        return Queue(ctx.queue.uid, name)
    return Queue(ctx.queue.uid, None, name_unknown=True)


def _policy_documents(ctx: QueueContext) -> Iterator[tuple[Resource, Any]]:
    """Each queue policy naming the queue with its document; unknown documents raise."""
    for queue_policy in ctx.policies:
        document = queue_policy.prop("PolicyDocument")
        if is_unresolved(document):
            raise Unknowable(queue_policy, f"PolicyDocument is {describe(document)}")
        yield queue_policy, document


def _qr013(ctx: QueueContext) -> Iterator[Outcome]:
    queue = _judged_queue(ctx)
    policies = list(_policy_documents(ctx))
    verdict = tls_deny.tls_verdict([document for _, document in policies], queue)
    if verdict.complete:
        return
    if verdict.unknown:
        where = policies[0][0] if policies else ctx.queue
        yield Unknown(where, "; ".join(verdict.unknown))
        return
    if not verdict.found:
        yield Hit(
            ctx.queue,
            f"queue {name_of(ctx.queue)} has no queue policy denying requests without TLS "
            "(aws:SecureTransport false)",
        )
        return
    names = ", ".join(name_of(p) for p, _ in policies)
    open_actions = describe_actions(verdict.open_actions)
    yield Hit(
        ctx.queue,
        f"queue {name_of(ctx.queue)}: queue policy {names} does not deny every request without "
        f"TLS: {'; '.join(verdict.gaps)}; left open without TLS: {open_actions}",
    )


QR013 = Rule(
    "QR013",
    "warning",
    "Queue accepts requests without TLS",
    'add an AWS::SQS::QueuePolicy statement: Deny, Principal "*", Action sqs:*, Resource '
    "the queue, whose only Condition is Bool aws:SecureTransport false",
    _qr013,
)


def _qr023(ctx: QueueContext) -> Iterator[Outcome]:
    queue = _judged_queue(ctx)
    for queue_policy in ctx.policies:
        document = queue_policy.prop("PolicyDocument")
        if is_unresolved(document):
            yield Unknown(queue_policy, f"PolicyDocument is {describe(document)}")
            continue
        for verdict in public_access.public_statements([document], queue):
            if isinstance(verdict, public_access.Undecided):
                yield Unknown(queue_policy, verdict.what)
                continue
            yield Hit(
                ctx.queue,
                f"queue policy {name_of(queue_policy)} on queue {name_of(ctx.queue)}: "
                f"{verdict.statement.label} allows {describe_actions(verdict.actions)} to "
                f"{verdict.who}: {verdict.why}",
            )


QR023 = Rule(
    "QR023",
    "error",
    "Queue policy allows public access",
    "name the principals (accounts or roles), or add a Condition with a positive operator "
    "(not ...IfExists) and fixed values, such as aws:SourceArn, aws:SourceAccount or "
    "aws:PrincipalOrgID; give a service principal aws:SourceArn or aws:SourceAccount",
    _qr023,
)


RULES: tuple[Rule, ...] = (QR013, QR023)
