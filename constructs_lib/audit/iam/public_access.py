"""QR023: the ``Allow`` statements of a queue's policies that admit anyone, unless a
condition or a ``Deny`` of the same policy ties them to known parties."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit.iam.conditions import denies_outsiders, restricts, tests
from constructs_lib.audit.iam.statements import (
    Queue,
    Statement,
    UnknownValue,
    covers_queue,
    principals,
    queue_actions,
    statements,
)

# Keys a service principal's statement needs one of (Access Analyzer, "Security Warning -
# Restrict access to service principal"); the principal keys are absent for a service, so a
# statement that tests them admits no service at all, which restricts it as well.
SOURCE_KEYS = ("aws:SourceArn", "aws:SourceAccount", "aws:SourceOrgID", "aws:SourceOrgPaths")


@dataclass(frozen=True)
class Public:
    """An Allow statement that admits parties nobody named."""

    statement: Statement
    who: str  # the principals, as the policy wrote them
    actions: tuple[str, ...]  # the queue actions it grants
    why: str  # why the condition does not restrict


@dataclass(frozen=True)
class Undecided:
    statement: Statement
    what: str


def _everyone_deny(statement: Statement) -> bool:
    try:
        who = principals(statement)
    except UnknownValue:
        return False
    return who.everyone and "NotPrincipal" not in statement.body


def _neutralisers(
    documents: Iterable[Any], queue: Queue
) -> list[tuple[Statement, tuple[str, ...]]]:
    """Deny statements that refuse everyone outside named parties: (statement, actions)."""
    found = []
    for document in documents:
        for statement in statements(document):
            if statement.effect != "deny" or not _everyone_deny(statement):
                continue
            try:
                conditions = tests(statement)
                actions = queue_actions(statement)
            except UnknownValue:
                continue
            if len(conditions) != 1 or covers_queue(statement, queue) is not True:
                continue
            if denies_outsiders(conditions[0]) is True:
                found.append((statement, actions))
    return found


def public_statements(documents: list[Any], queue: Queue) -> Iterator[Public | Undecided]:
    """The Allow statements of the queue's policy documents that admit anyone."""
    neutralisers = _neutralisers(documents, queue)
    for document in documents:
        for statement in statements(document):
            if statement.effect != "allow":
                continue
            try:
                verdict = _public(statement, queue, neutralisers)
            except UnknownValue as unknown:
                yield Undecided(statement, unknown.what)
                continue
            if verdict is not None:
                yield verdict


def _public(
    statement: Statement, queue: Queue, neutralisers: list[tuple[Statement, tuple[str, ...]]]
) -> Public | None:
    who = principals(statement)
    if not who.everyone and not who.services:
        return None
    actions = queue_actions(statement)
    if not actions or covers_queue(statement, queue) is False:
        return None
    conditions = tests(statement)
    reasons: list[str] = []
    unknown: list[str] = []
    for test in conditions:
        verdict = restricts(test)
        if verdict is True:
            return None
        if verdict is None:
            unknown.append(str(test))
        else:
            reasons.append(f"{test}: {verdict}")
    if unknown:
        raise UnknownValue(f"{statement.label}: condition {'; '.join(unknown)}")
    for _deny, denied in neutralisers:
        if set(actions) <= set(denied):
            return None
    if who.everyone:
        whom = f"any principal ({who.text})"
        why = "; ".join(reasons) if reasons else "no Condition"
        if "NotPrincipal" in statement.body:
            why = f"Allow with NotPrincipal admits everyone not listed; {why}"
    else:
        services = ", ".join(who.services)
        whom = f"service principal {services}"
        why = (
            f"no {', '.join(SOURCE_KEYS)} condition names the sending resource, so the "
            f"service acts for any account's resources (confused deputy)"
        )
        if reasons:
            why = f"{'; '.join(reasons)}; {why}"
    return Public(statement, whom, actions, why)
