"""The statements of a queue policy and what each names: its principals, the queue actions
its ``Action``/``NotAction`` covers, and whether its ``Resource``/``NotResource`` covers the
queue; how the audit's unknown values show in a policy (``UnknownValue``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit.parse.intrinsics import UNKNOWN_PIECE, describe

# Actions a queue policy can grant on a queue (Service Authorization Reference, Amazon SQS,
# resource type "queue"). The batch APIs (SendMessageBatch, ...) are authorized as these.
SQS_QUEUE_ACTIONS: tuple[str, ...] = (
    "sqs:AddPermission",
    "sqs:CancelMessageMoveTask",
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:DeleteQueue",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ListDeadLetterSourceQueues",
    "sqs:ListMessageMoveTasks",
    "sqs:ListQueueTags",
    "sqs:PurgeQueue",
    "sqs:ReceiveMessage",
    "sqs:RemovePermission",
    "sqs:SendMessage",
    "sqs:SetQueueAttributes",
    "sqs:StartMessageMoveTask",
    "sqs:TagQueue",
    "sqs:UntagQueue",
)

WILDCARDS = ("*", "?")


class UnknownValue(Exception):
    """A value the verdict depends on that the audit cannot know."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


@dataclass(frozen=True)
class Statement:
    """One statement of one policy document, with how messages name it."""

    body: dict[str, Any]
    label: str  # "statement 'Sid'" or "statement 2"

    @property
    def effect(self) -> str:
        effect = self.body.get("Effect")
        return effect.lower() if isinstance(effect, str) else ""


def statements(document: Any) -> Iterator[Statement]:
    """The statements of a policy document: ``Statement`` may be one object or a list."""
    if not isinstance(document, dict):
        return
    body = document.get("Statement")
    items = body if isinstance(body, list) else [body] if isinstance(body, dict) else []
    for index, item in enumerate(items):
        if isinstance(item, dict):
            sid = item.get("Sid")
            label = (
                f"statement {sid!r}" if isinstance(sid, str) and sid else f"statement {index + 1}"
            )
            yield Statement(item, label)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def is_unknown(value: Any) -> bool:
    if isinstance(value, dict):
        return "$unresolved" in value or "$ref" in value
    return isinstance(value, str) and UNKNOWN_PIECE in value


def is_local_ref(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("$ref", "")).startswith("local:")


# --- Principals -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Principals:
    everyone: bool  # "*" in any form, or NotPrincipal
    services: tuple[str, ...]  # service principals named
    named: tuple[str, ...]  # accounts, roles, ... named
    text: str


def principals(statement: Statement) -> Principals:
    body = statement.body
    if "NotPrincipal" in body:
        text = f"everyone except NotPrincipal {describe(body['NotPrincipal'])}"
        return Principals(True, (), (), text)
    principal = body.get("Principal")
    text = describe(principal)
    if principal == "*":
        return Principals(True, (), (), '"*"')
    if is_unknown(principal):
        raise UnknownValue(f"{statement.label}: Principal is {text}")
    if not isinstance(principal, dict):
        return Principals(False, (), (), text)
    everyone = False
    services: list[str] = []
    named: list[str] = []
    unknown: list[str] = []
    for kind, value in principal.items():
        for item in as_list(value):
            if is_unknown(item) and not is_local_ref(item):
                unknown.append(f"{statement.label}: Principal {kind} is {describe(item)}")
            elif kind == "AWS" and item == "*":
                everyone = True
            elif kind == "Service" and isinstance(item, str):
                services.append(item)
            else:
                named.append(describe(item) if not isinstance(item, str) else item)
    if unknown and not everyone:  # "*" beside an unknown principal is everyone all the same
        raise UnknownValue("; ".join(unknown))
    return Principals(everyone, tuple(services), tuple(named), text)


# --- Actions and resources ------------------------------------------------------------------------


def _glob(pattern: str) -> re.Pattern[str]:
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def queue_actions(statement: Statement) -> tuple[str, ...]:
    """The queue actions a statement's ``Action`` or ``NotAction`` covers."""
    body = statement.body
    key = "NotAction" if "NotAction" in body and "Action" not in body else "Action"
    values = as_list(body.get(key))
    for value in values:
        if not isinstance(value, str) or UNKNOWN_PIECE in value:
            raise UnknownValue(f"{statement.label}: {key} is {describe(value)}")
    patterns = [_glob(v) for v in values]
    matched = tuple(a for a in SQS_QUEUE_ACTIONS if any(p.fullmatch(a) for p in patterns))
    if key == "NotAction":
        return tuple(a for a in SQS_QUEUE_ACTIONS if a not in matched)
    return matched


def describe_actions(actions: Iterable[str]) -> str:
    """Queue actions for messages: all of them read "every queue action (sqs:*)"."""
    names = tuple(actions)
    return "every queue action (sqs:*)" if names == SQS_QUEUE_ACTIONS else ", ".join(names)


@dataclass(frozen=True)
class Queue:
    """The queue a policy is judged for: its uid and, when its template sets it, its name."""

    uid: str
    name: str | None  # None: CloudFormation generates the name
    name_unknown: bool = False  # QueueName is a value the audit cannot know


def _arn_matches(pattern: str, queue: Queue) -> bool | None:
    """Whether an ARN pattern (``*``/``?`` wildcards, ``${?}`` unknown pieces) covers the queue."""
    if pattern == "*":
        return True
    parts = pattern.split(":", 5)
    if len(parts) != 6:
        return False
    service = parts[2].replace(UNKNOWN_PIECE, "*")
    if parts[0] != "arn" or not _glob(service).fullmatch("sqs"):
        return False
    # Partition, region and account: where the stack is deployed, unknown to a template audit.
    name = parts[5]
    if UNKNOWN_PIECE in name:
        return None
    if queue.name_unknown:
        return True if set(name) <= {"*"} else None
    if queue.name is None:
        # A generated name ("<stack>-<logical id>-<suffix>"): only a name part that is all
        # wildcards surely covers it; a literal name names another queue.
        if set(name) <= {"*"}:
            return True
        return None if any(w in name for w in WILDCARDS) else False
    return bool(_glob(name).fullmatch(queue.name))


def covers_queue(statement: Statement, queue: Queue) -> bool | None:
    """Whether a statement's ``Resource``/``NotResource`` covers the queue; None: unknown."""
    body = statement.body
    negate = "NotResource" in body and "Resource" not in body
    key = "NotResource" if negate else "Resource"
    if key not in body:
        return None if not negate else True
    verdicts: list[bool | None] = []
    for value in as_list(body[key]):
        if isinstance(value, dict) and "$ref" in value:
            if value["$ref"] == f"local:{queue.uid}":
                verdicts.append(True)
            elif is_local_ref(value):
                verdicts.append(False)
            else:
                verdicts.append(None)
        elif isinstance(value, str):
            verdicts.append(_arn_matches(value, queue))
        else:
            verdicts.append(None)
    hit: bool | None = True if True in verdicts else None if None in verdicts else False
    if negate:
        return None if hit is None else not hit
    return hit
