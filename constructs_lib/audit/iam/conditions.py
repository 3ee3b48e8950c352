"""A statement's ``Condition`` block as IAM reads it: whether a test ties the statement to
known parties (``restricts``, QR023), and whether a ``Deny`` with it refuses everyone outside
them."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit.iam.statements import (
    WILDCARDS,
    Statement,
    UnknownValue,
    as_list,
    is_local_ref,
    is_unknown,
)
from constructs_lib.audit.parse.intrinsics import UNKNOWN_PIECE, describe


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

_ACCOUNT = re.compile(r"^\d{12}$")


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
    if not isinstance(condition, dict) or is_unknown(condition):
        raise UnknownValue(f"{statement.label}: Condition is {describe(condition)}")
    found = []
    for operator, block in condition.items():
        if not isinstance(block, dict) or is_unknown(block):
            raise UnknownValue(f"{statement.label}: Condition {operator} is {describe(block)}")
        for key, value in block.items():
            found.append(Test(operator, key, tuple(as_list(value))))
    return found


def _fixed(kind: str, value: Any) -> bool | None:
    """Whether one condition value names known parties; None when it cannot be known."""
    if is_local_ref(value):
        return True  # a resource of the same template: one ARN of this account
    if is_unknown(value) and not (kind == "arn" and isinstance(value, str)):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return False
    text = str(value)
    if kind == "account":
        return bool(_ACCOUNT.fullmatch(text))
    if kind == "org":
        return text.startswith("o-") and not any(w in text for w in WILDCARDS)
    if kind == "org_path":
        org = text.split("/", 1)[0]
        return org.startswith("o-") and not any(w in org for w in WILDCARDS)
    if kind == "id":
        return bool(text) and not any(w in text for w in WILDCARDS)
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
        return bool(name) and not any(w in name for w in WILDCARDS)
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


def denies_outsiders(test: Test) -> bool | None:
    """Whether a Deny with this one test refuses everyone outside named parties."""
    rule = RESTRICTING_KEYS.get(test.key.lower())
    if rule is None or test.for_all or test.base not in _NEGATED_OPERATORS[rule.kind]:
        return False
    verdicts = [_fixed(rule.kind, v) for v in test.values]
    if not verdicts or False in verdicts:
        return False
    return None if None in verdicts else True
