"""A composite alarm's ``AlarmRule``, read as CloudWatch reads it: which alarms can set it off.

The grammar (CloudWatch API reference, PutCompositeAlarm, ``AlarmRule``): the functions
``ALARM("name or ARN")``, ``OK(...)`` and ``INSUFFICIENT_DATA(...)``, TRUE when the named alarm
is in that state; the constants ``TRUE`` and ``FALSE``; the operators ``AND``, ``OR`` and
``NOT``; parentheses to group. Names may stand with or without double quotes. The reference
does not say which of AND and OR binds tighter; here AND does, as in most rule languages, and
it only matters for rules that mix them with the constants without parentheses.

A composite *watches* an alarm when an ``ALARM(...)`` of it stands under an even number of
``NOT``s once the constants are folded away: ``ALARM(x) OR FALSE`` watches x, ``NOT ALARM(x)``
and ``ALARM(x) AND FALSE`` do not, and neither do ``OK(x)`` or ``INSUFFICIENT_DATA(x)``
(whichever their polarity: they speak of other states than the one the alarm raises). A rule
this module cannot read raises ``RuleError``; its caller decides what that means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

# CloudWatch API reference, PutCompositeAlarm: AlarmRule is 1-10,240 characters, names as many
# as 100 "children" alarms and has as many as 500 elements (child alarms, TRUE or FALSE
# statements, and parentheses).
RULE_LENGTH_MAX: Final = 10_240
RULE_CHILDREN_MAX: Final = 100
RULE_ELEMENTS_MAX: Final = 500

STATE_ALARM: Final = "ALARM"
STATES: Final = (STATE_ALARM, "OK", "INSUFFICIENT_DATA")
_TOKEN = re.compile(
    r"\s*(?:(\()|(\))|(ALARM|OK|INSUFFICIENT_DATA)\s*\(\s*(?:\"([^\"]*)\"|([^()\"]*?))\s*\)"
    r"|(\w+))"
)


class RuleError(ValueError):
    """An AlarmRule that is not one CloudWatch accepts, or that the audit cannot read."""


@dataclass(frozen=True)
class Operand:
    """One state function of the rule: its state and the alarm name or ARN it names."""

    state: str
    alarm: str


# The parsed rule: a constant, an operand, or an operator over its parts.
Node = bool | Operand | tuple[str, tuple["Node", ...]]


def _tokens(rule: str) -> list[str | Operand]:
    tokens: list[str | Operand] = []
    position = 0
    while position < len(rule.rstrip()):
        match = _TOKEN.match(rule, position)
        if match is None:
            raise RuleError(f"unexpected text at {rule[position : position + 40]!r}")
        opening, closing, function, quoted, bare, word = match.groups()
        if function is not None:
            name = quoted if quoted is not None else (bare or "")
            if not name.strip():
                raise RuleError(f"{function}() names no alarm")
            tokens.append(Operand(function, name.strip()))
        else:
            tokens.append(opening or closing or word)
        position = match.end()
    return tokens


class _Parser:
    """Recursive descent over the tokens: or := and (OR and)*; and := not (AND not)*;
    not := NOT not | primary; primary := ( or ) | TRUE | FALSE | operand."""

    def __init__(self, tokens: list[str | Operand]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> str | Operand | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str | Operand:
        token = self.peek()
        if token is None:
            raise RuleError("the rule ends too early")
        self.position += 1
        return token

    def either(self, operator: str, part: str) -> Node:
        parts = [self.expression(part)]
        while self.peek() == operator:
            self.take()
            parts.append(self.expression(part))
        return parts[0] if len(parts) == 1 else (operator, tuple(parts))

    def expression(self, level: str = "OR") -> Node:
        if level == "OR":
            return self.either("OR", "AND")
        if level == "AND":
            return self.either("AND", "NOT")
        token = self.take()
        if token == "NOT":
            return ("NOT", (self.expression("NOT"),))
        if isinstance(token, Operand):
            return token
        if token in ("TRUE", "FALSE"):
            return token == "TRUE"
        if token == "(":
            inner = self.expression()
            if self.take() != ")":
                raise RuleError("a parenthesis is not closed")
            return inner
        raise RuleError(f"unexpected {token!r}")


def parse(rule: str) -> Node:
    """The rule as a tree, within CloudWatch's limits; ``RuleError`` when it is not one."""
    if not 1 <= len(rule) <= RULE_LENGTH_MAX:
        raise RuleError(f"{len(rule)} characters, outside 1-{RULE_LENGTH_MAX}")
    tokens = _tokens(rule)
    children = [t for t in tokens if isinstance(t, Operand)]
    if len(children) > RULE_CHILDREN_MAX:
        raise RuleError(f"{len(children)} child alarms, above {RULE_CHILDREN_MAX}")
    elements = len(children) + sum(t in ("(", ")", "TRUE", "FALSE") for t in tokens)
    if elements > RULE_ELEMENTS_MAX:  # also bounds the parser's recursion
        raise RuleError(f"{elements} elements, above {RULE_ELEMENTS_MAX}")
    if sum(t == "NOT" for t in tokens) > RULE_ELEMENTS_MAX:
        raise RuleError(f"more than {RULE_ELEMENTS_MAX} NOTs")
    parser = _Parser(tokens)
    try:
        tree = parser.expression()
    except RecursionError:  # within the element limits, parentheses can still nest 250 deep
        raise RuleError("nested too deeply for the audit to read") from None
    if parser.peek() is not None:
        raise RuleError(f"unexpected {parser.peek()!r} after a complete rule")
    return tree


def _folded(node: Node) -> Node:
    """The tree with TRUE and FALSE folded into the operators above them."""
    if isinstance(node, bool | Operand):
        return node
    operator, parts = node
    folded = [_folded(part) for part in parts]
    if operator == "NOT":
        return (not folded[0]) if isinstance(folded[0], bool) else ("NOT", (folded[0],))
    settles = operator == "OR"  # the constant that decides the whole: TRUE for OR, FALSE for AND
    if settles in folded:
        return settles
    rest = tuple(part for part in folded if not isinstance(part, bool))
    if not rest:
        return not settles
    return rest[0] if len(rest) == 1 else (operator, rest)


def watched(rule: str) -> list[str]:
    """The names or ARNs of the alarms whose ALARM state can set the rule off, in rule order
    (``RuleError`` when the rule cannot be read)."""
    found: list[str] = []

    def walk(node: Node, positive: bool) -> None:
        if isinstance(node, Operand):
            if positive and node.state == STATE_ALARM and node.alarm not in found:
                found.append(node.alarm)
        elif not isinstance(node, bool):
            operator, parts = node
            for part in parts:
                walk(part, positive != (operator == "NOT"))

    try:
        walk(_folded(parse(rule)), True)
    except RecursionError:
        raise RuleError("nested too deeply for the audit to read") from None
    return found
