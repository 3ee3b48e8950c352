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
        return f"{self.prop}={show(self.value)}: {self.rule}. Fix: {self.fix}"


def show(value: object) -> str:
    """A value as a message shows it: ``repr`` for plain data, a construct by its path."""
    if value is None or isinstance(value, (bool, int, float, str, list, tuple, dict)):
        text = repr(value)
        return text if len(text) <= 80 else f"{text[:77]}..."
    human = getattr(value, "to_human_string", None)  # aws_cdk.Duration
    if callable(human):
        return f"Duration({human()})"
    kind = type(value)
    path = getattr(getattr(value, "node", None), "path", None)
    return f"<{kind.__module__}.{kind.__qualname__}{f' {path}' if path else ''}>"


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


class ParameterTypeError(TypeError):
    """Arguments of the wrong kind (a string where a number belongs, a single action where a
    list belongs...), raised by the call that received them before any reaches jsii, every one
    listed at once. ``problems`` holds them as for ``ConfigurationError``.
    """

    def __init__(self, construct_path: str, problems: Sequence[Problem]) -> None:
        self.construct_path = construct_path
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = [f"{construct_path}: {count} argument{'s' if count > 1 else ''} of the wrong type:"]
        lines += [f"  - {problem.describe()}" for problem in self.problems]
        super().__init__("\n".join(lines))
