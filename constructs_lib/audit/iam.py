"""Queue policies read the way IAM reads them: who a statement admits, and whether a policy
denies every request made without TLS.

Two questions, answered for one queue and the policy documents attached to it:

- ``public_statements``: the ``Allow`` statements that admit anyone (QR023). A statement is
  public when its principal is everyone (``"*"``, ``{"AWS": "*"}``, a list holding ``"*"``, or
  any ``NotPrincipal``) or a service principal, unless a condition ties it to known parties
  (``RESTRICTING_KEYS``) with a positive operator and fixed values, or a ``Deny`` of the same
  policy refuses everyone outside such parties.
- ``tls_gaps``: what the policy's ``Deny ... aws:SecureTransport false`` statements leave open
  (QR013): principals, actions, the queue itself, or requests a narrowing condition lets by.

Values are the audit's normalized ones (``intrinsics.py``): ``{"$ref": "local:..."}`` names a
resource of the same template (a fixed value of this account), any other reference,
``{"$unresolved": ...}`` and text holding ``${?}`` are unknown. A verdict that depends on an
unknown value is ``Unknown`` (QR900), never a guess. Nothing here imports CDK or Spark.

Sources (checked 2026-11-24):
- IAM guide, condition operators: an absent key fails a positive operator and passes a negated
  one; ``...IfExists`` passes when the key is absent; ``ForAllValues`` passes when the key is
  absent; ``Null`` tests only presence. Condition keys are case-insensitive; operators of one
  block are ANDed, values of one key ORed (NOR for negated operators).
- IAM guide, global condition keys: service-only keys (``aws:SourceArn``, ``aws:SourceAccount``,
  ...) are absent from requests that IAM principals make.
- IAM guide, NotPrincipal: only supported with ``Deny``; with ``Allow`` it admits everyone but the
  listed principals.
- IAM Access Analyzer: policy checks "Security Warning - Allow with NotPrincipal" and "Security
  Warning - Restrict access to service principal" (use ``aws:SourceArn``, ``aws:SourceAccount``,
  ``aws:SourceOrgID`` or ``aws:SourceOrgPaths``); external access findings treat the keys of
  ``RESTRICTING_KEYS`` as restricting.
- AWS Config rule sqs-queue-no-public-access (Security Hub SQS.3): "To be considered non-public,
  an SQS policy must grant access only to fixed values ... that don't contain a wildcard".
- S3 user guide, "The meaning of public": fixed ``aws:SourceArn``, ``aws:SourceVpc``,
  ``aws:SourceVpce``, ``aws:SourceOwner``, ``aws:SourceAccount``, ``aws:userid``, and a set of
  CIDRs in ``aws:SourceIp``.
- SQS developer guide, security best practices: deny ``sqs:*`` when ``aws:SecureTransport`` is
  false; AWS's resource control policy examples write it ``BoolIfExists``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.audit.intrinsics import UNKNOWN_PIECE, describe

# --- Named data -----------------------------------------------------------------------------

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


@dataclass(frozen=True)
class KeyRule:
    """How a condition key's value names a known party, and where that is documented."""

    kind: str  # "arn", "account", "org", "org_path", "id", "cidr"
    source: str


# Condition keys that tie a statement to known parties when tested with a positive operator
# (not ...IfExists, not ForAllValues) against fixed values. Lower case: keys are
# case-insensitive (IAM guide, condition element).
RESTRICTING_KEYS: dict[str, KeyRule] = {
    "aws:sourcearn": KeyRule("arn", "S3 'meaning of public'; Access Analyzer service principal"),
    "aws:sourceaccount": KeyRule("account", "S3 'meaning of public'; Access Analyzer"),
    "aws:sourceowner": KeyRule("account", "S3 'meaning of public'"),
    "aws:sourceorgid": KeyRule("org", "Access Analyzer 'restrict access to service principal'"),
    "aws:sourceorgpaths": KeyRule("org_path", "Access Analyzer 'restrict access to service ...'"),
    "aws:principalorgid": KeyRule("org", "Access Analyzer external access (zone of trust)"),
    "aws:principalorgpaths": KeyRule("org_path", "Access Analyzer external access"),
    "aws:principalaccount": KeyRule("account", "Access Analyzer external access"),
    "aws:principalarn": KeyRule("arn", "Access Analyzer external access; IAM NotPrincipal page"),
    "aws:sourcevpc": KeyRule("id", "S3 'meaning of public'"),
    "aws:sourcevpce": KeyRule("id", "S3 'meaning of public'"),
    "aws:userid": KeyRule("id", "S3 'meaning of public'"),
    "aws:sourceip": KeyRule("cidr", "S3 'meaning of public' (a set of CIDRs)"),
}
# Keys a service principal's statement needs one of (Access Analyzer, "Security Warning -
# Restrict access to service principal"); the principal keys are absent for a service, so a
# statement that tests them admits no service at all, which restricts it as well.
SOURCE_KEYS = ("aws:SourceArn", "aws:SourceAccount", "aws:SourceOrgID", "aws:SourceOrgPaths")

# Positive operators by the kind of value they compare (IAM guide, condition operators).
_POSITIVE_OPERATORS: dict[str, frozenset[str]] = {
    "arn": frozenset({"arnequals", "arnlike", "stringequals", "stringlike"}),
    "account": frozenset({"stringequals", "stringlike", "stringequalsignorecase"}),
    "org": frozenset({"stringequals", "stringlike", "stringequalsignorecase"}),
    "org_path": frozenset({"stringequals", "stringlike", "stringequalsignorecase"}),
    "id": frozenset({"stringequals", "stringlike", "stringequalsignorecase"}),
    "cidr": frozenset({"ipaddress"}),
}
# Negated operators: a Deny that tests a restricting key with one of them refuses everyone
# outside the named parties (an absent key makes a negated operator true: IAM guide).
_NEGATED_OPERATORS: dict[str, frozenset[str]] = {
    "arn": frozenset({"arnnotequals", "arnnotlike", "stringnotequals", "stringnotlike"}),
    "account": frozenset({"stringnotequals", "stringnotlike", "stringnotequalsignorecase"}),
    "org": frozenset({"stringnotequals", "stringnotlike", "stringnotequalsignorecase"}),
    "org_path": frozenset({"stringnotequals", "stringnotlike", "stringnotequalsignorecase"}),
    "id": frozenset({"stringnotequals", "stringnotlike", "stringnotequalsignorecase"}),
    "cidr": frozenset({"notipaddress"}),
}
# The widest aws:SourceIp ranges that still name a known network (our decision: a range wider
# than an IPv4 /8 or an IPv6 /32 spans many owners; 0.0.0.0/0 is everyone).
MIN_IPV4_PREFIX = 8
MIN_IPV6_PREFIX = 32

SECURE_TRANSPORT_KEY = "aws:securetransport"
_TLS_OPERATORS = frozenset({"bool", "boolifexists"})
_ACCOUNT = re.compile(r"^\d{12}$")
_WILDCARDS = ("*", "?")


# --- Verdicts -------------------------------------------------------------------------------


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


@dataclass
class TlsVerdict:
    """What the TLS denies of a queue's policies cover, and what they leave open."""

    complete: bool = False
    found: bool = False  # any Deny statement mentions aws:SecureTransport
    open_actions: tuple[str, ...] = SQS_QUEUE_ACTIONS
    gaps: list[str] = field(default_factory=list)  # one line per statement that falls short
    unknown: list[str] = field(default_factory=list)


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


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _unknown(value: Any) -> bool:
    if isinstance(value, dict):
        return "$unresolved" in value or "$ref" in value
    return isinstance(value, str) and UNKNOWN_PIECE in value


def _local_ref(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("$ref", "")).startswith("local:")


# --- Principals -----------------------------------------------------------------------------


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
    if _unknown(principal):
        raise UnknownValue(f"{statement.label}: Principal is {text}")
    if not isinstance(principal, dict):
        return Principals(False, (), (), text)
    everyone = False
    services: list[str] = []
    named: list[str] = []
    unknown: list[str] = []
    for kind, value in principal.items():
        for item in _as_list(value):
            if _unknown(item) and not _local_ref(item):
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


# --- Actions and resources ------------------------------------------------------------------


def _glob(pattern: str) -> re.Pattern[str]:
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def queue_actions(statement: Statement) -> tuple[str, ...]:
    """The queue actions a statement's ``Action`` or ``NotAction`` covers."""
    body = statement.body
    key = "NotAction" if "NotAction" in body and "Action" not in body else "Action"
    values = _as_list(body.get(key))
    for value in values:
        if not isinstance(value, str) or UNKNOWN_PIECE in value:
            raise UnknownValue(f"{statement.label}: {key} is {describe(value)}")
    patterns = [_glob(v) for v in values]
    matched = tuple(a for a in SQS_QUEUE_ACTIONS if any(p.fullmatch(a) for p in patterns))
    if key == "NotAction":
        return tuple(a for a in SQS_QUEUE_ACTIONS if a not in matched)
    return matched


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
        return None if any(w in name for w in _WILDCARDS) else False
    return bool(_glob(name).fullmatch(queue.name))


def covers_queue(statement: Statement, queue: Queue) -> bool | None:
    """Whether a statement's ``Resource``/``NotResource`` covers the queue; None: unknown."""
    body = statement.body
    negate = "NotResource" in body and "Resource" not in body
    key = "NotResource" if negate else "Resource"
    if key not in body:
        return None if not negate else True
    verdicts: list[bool | None] = []
    for value in _as_list(body[key]):
        if isinstance(value, dict) and "$ref" in value:
            if value["$ref"] == f"local:{queue.uid}":
                verdicts.append(True)
            elif _local_ref(value):
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


# --- Conditions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Test:
    """One operator applied to one key in a ``Condition`` block."""

    operator: str  # as written
    key: str  # as written
    values: tuple[Any, ...]

    @property
    def base(self) -> str:
        """The operator in lower case without its set prefix and ``IfExists`` suffix."""
        op = self.operator.lower().split(":", 1)[-1]
        return op.removesuffix("ifexists")

    @property
    def if_exists(self) -> bool:
        return self.operator.lower().endswith("ifexists")

    @property
    def for_all(self) -> bool:
        return self.operator.lower().startswith("forallvalues:")

    def __str__(self) -> str:
        values = self.values[0] if len(self.values) == 1 else list(self.values)
        return f"{self.operator} {self.key} {describe(values)}"


def tests(statement: Statement) -> list[Test]:
    condition = statement.body.get("Condition")
    if condition is None:
        return []
    if not isinstance(condition, dict) or _unknown(condition):
        raise UnknownValue(f"{statement.label}: Condition is {describe(condition)}")
    found = []
    for operator, block in condition.items():
        if not isinstance(block, dict) or _unknown(block):
            raise UnknownValue(f"{statement.label}: Condition {operator} is {describe(block)}")
        for key, value in block.items():
            found.append(Test(operator, key, tuple(_as_list(value))))
    return found


def _fixed(kind: str, value: Any) -> bool | None:
    """Whether one condition value names known parties; None when it cannot be known."""
    if _local_ref(value):
        return True  # a resource of the same template: one ARN of this account
    if _unknown(value) and not (kind == "arn" and isinstance(value, str)):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return False
    text = str(value)
    if kind == "account":
        return bool(_ACCOUNT.fullmatch(text))
    if kind == "org":
        return text.startswith("o-") and not any(w in text for w in _WILDCARDS)
    if kind == "org_path":
        org = text.split("/", 1)[0]
        return org.startswith("o-") and not any(w in org for w in _WILDCARDS)
    if kind == "id":
        return bool(text) and not any(w in text for w in _WILDCARDS)
    if kind == "cidr":
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            return False
        floor = MIN_IPV4_PREFIX if network.version == 4 else MIN_IPV6_PREFIX
        return network.prefixlen >= floor
    # An ARN names known parties when its account is a literal account id, or, for an S3
    # bucket (no account field), when the bucket name is literal.
    parts = text.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        return False
    account = parts[4]
    if UNKNOWN_PIECE in account:
        return None
    if _ACCOUNT.fullmatch(account):
        return True
    if account == "" and parts[2] == "s3" and parts[3] == "":
        name = parts[5]
        if UNKNOWN_PIECE in name:
            return None
        return bool(name) and not any(w in name for w in _WILDCARDS)
    return False


def _why_not(test: Test, kind: str | None) -> str:
    """Why a test does not tie the statement to known parties."""
    if kind is None:
        return f"{test.key} does not identify the caller or its source"
    if test.if_exists:
        return (
            f"{test.operator} is true when {test.key} is absent, and requests from IAM "
            "principals or anonymous callers carry no source keys"
        )
    if test.for_all:
        return f"{test.operator} is true when {test.key} is absent"
    if test.base == "null":
        return f"Null only tests that {test.key} is present, whatever its value"
    return f"{test.operator} is not a positive match on {test.key}"


def restricts(test: Test) -> bool | str | None:
    """True when the test ties the statement to known parties; otherwise the reason it does
    not (a string), or None when a value it depends on is unknown."""
    rule = RESTRICTING_KEYS.get(test.key.lower())
    if rule is None:
        return _why_not(test, None)
    if test.if_exists or test.for_all or test.base not in _POSITIVE_OPERATORS[rule.kind]:
        return _why_not(test, rule.kind)
    if not test.values:
        return f"{test.key} has no values"
    verdicts = [_fixed(rule.kind, v) for v in test.values]
    if False in verdicts:
        wide = [describe(v) for v, ok in zip(test.values, verdicts, strict=True) if ok is False]
        return (
            f"{test.key} {', '.join(wide)} matches parties nobody named (wildcard or any account)"
        )
    if None in verdicts:
        return None
    return True


def _denies_outsiders(test: Test) -> bool | None:
    """Whether a Deny with this one test refuses everyone outside named parties."""
    rule = RESTRICTING_KEYS.get(test.key.lower())
    if rule is None or test.for_all or test.base not in _NEGATED_OPERATORS[rule.kind]:
        return False
    verdicts = [_fixed(rule.kind, v) for v in test.values]
    if not verdicts or False in verdicts:
        return False
    return None if None in verdicts else True


# --- QR023: public statements ---------------------------------------------------------------


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
            if _denies_outsiders(conditions[0]) is True:
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


# --- QR013: the TLS deny --------------------------------------------------------------------


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


def describe_actions(actions: Iterable[str]) -> str:
    """Queue actions for messages: all of them read "every queue action (sqs:*)"."""
    names = tuple(actions)
    return "every queue action (sqs:*)" if names == SQS_QUEUE_ACTIONS else ", ".join(names)


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
