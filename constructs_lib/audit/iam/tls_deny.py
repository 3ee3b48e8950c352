"""QR013: whether a queue's policies deny every request made without TLS
(``Deny ... aws:SecureTransport false``), and what their statements leave open."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.audit.iam.conditions import Test, tests
from constructs_lib.audit.iam.statements import (
    SQS_QUEUE_ACTIONS,
    Queue,
    Statement,
    UnknownValue,
    covers_queue,
    principals,
    queue_actions,
    statements,
)
from constructs_lib.audit.parse.intrinsics import describe

SECURE_TRANSPORT_KEY = "aws:securetransport"

_TLS_OPERATORS = frozenset({"bool", "boolifexists"})


@dataclass
class TlsVerdict:
    """What the TLS denies of a queue's policies cover, and what they leave open."""

    complete: bool = False
    found: bool = False  # any Deny statement mentions aws:SecureTransport
    open_actions: tuple[str, ...] = SQS_QUEUE_ACTIONS
    gaps: list[str] = field(default_factory=list)  # one line per statement that falls short
    unknown: list[str] = field(default_factory=list)


def _tls_test(test: Test) -> bool:
    """``Bool``/``BoolIfExists`` ``aws:SecureTransport`` false (text or boolean, any case)."""
    if test.key.lower() != SECURE_TRANSPORT_KEY or test.operator.lower() not in _TLS_OPERATORS:
        return False
    return any(str(v).lower() == "false" for v in test.values if not isinstance(v, dict))


def _short(actions: Iterable[str]) -> str:
    names = list(actions)
    if len(names) > 6:
        return f"{', '.join(names[:6])} and {len(names) - 6} more"
    return ", ".join(names)


def tls_verdict(documents: list[Any], queue: Queue) -> TlsVerdict:
    """Whether the documents deny every request without TLS, and what they leave open."""
    verdict = TlsVerdict()
    covered: set[str] = set()
    for document in documents:
        for statement in statements(document):
            if statement.effect != "deny":
                continue
            try:
                conditions = tests(statement)
            except UnknownValue as unknown:
                if SECURE_TRANSPORT_KEY in json.dumps(statement.body).lower():
                    verdict.found = True
                    verdict.unknown.append(unknown.what)
                continue
            if not any(t.key.lower() == SECURE_TRANSPORT_KEY for t in conditions):
                continue
            verdict.found = True
            try:
                gap = _tls_gap(statement, conditions, queue)
            except UnknownValue as unknown:
                verdict.unknown.append(unknown.what)
                continue
            if gap is None:
                covered.update(queue_actions(statement))
                mine = queue_actions(statement)
                if len(mine) < len(SQS_QUEUE_ACTIONS):
                    verdict.gaps.append(
                        f"{statement.label} covers only {_short(mine) or 'no queue action'}"
                    )
            else:
                verdict.gaps.append(f"{statement.label} {gap}")
    verdict.open_actions = tuple(a for a in SQS_QUEUE_ACTIONS if a not in covered)
    verdict.complete = not verdict.open_actions
    return verdict


def _tls_gap(statement: Statement, conditions: list[Test], queue: Queue) -> str | None:
    """Why a Deny mentioning aws:SecureTransport falls short, apart from its actions."""
    tls = [t for t in conditions if _tls_test(t)]
    if not tls:
        written = "; ".join(str(t) for t in conditions if t.key.lower() == SECURE_TRANSPORT_KEY)
        return (
            f"tests {written}, not Bool/BoolIfExists aws:SecureTransport false: it does not "
            "deny requests without TLS"
        )
    others = [t for t in conditions if t not in tls]
    if others:
        return (
            f"is narrowed by {'; '.join(str(t) for t in others)}: requests without TLS that do "
            "not match it are not denied"
        )
    if "NotPrincipal" in statement.body:
        return (
            f"exempts NotPrincipal {describe(statement.body['NotPrincipal'])}: they may use "
            "the queue without TLS"
        )
    who = principals(statement)
    if not who.everyone:
        return f"names only {who.text}: every other principal may use the queue without TLS"
    resource = covers_queue(statement, queue)
    if resource is None:
        raise UnknownValue(
            f"{statement.label}: Resource {describe(statement.body.get('Resource'))} may or "
            "may not name the queue"
        )
    if resource is False:
        key = "Resource" if "Resource" in statement.body else "NotResource"
        return f"has {key} {describe(statement.body.get(key))}, which does not cover the queue"
    queue_actions(statement)  # an unknown action list is reported, not guessed
    return None
