"""The one exception users of the constructs catch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a prop: what was given, what is allowed, and how to fix it."""

    prop: str
    value: object
    rule: str
    fix: str
    severity: Severity = "error"

    def describe(self) -> str:
        return f"{self.prop}={self.value!r}: {self.rule}. Fix: {self.fix}"


class ConfigurationError(ValueError):
    """Props that AWS would reject, or that would lose or duplicate messages.

    Raised by the call that received the bad value, before synthesis, with every problem
    found in that call listed at once. ``problems`` holds them for programs that react.
    """

    def __init__(self, construct_path: str, problems: Sequence[Problem]) -> None:
        self.construct_path = construct_path
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = [f"{construct_path}: {count} configuration problem{'s' if count > 1 else ''}:"]
        lines += [f"  - {problem.describe()}" for problem in self.problems]
        super().__init__("\n".join(lines))
