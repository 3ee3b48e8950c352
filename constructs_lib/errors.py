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
    wrong_kind: bool = False
    """Whether the value is of the wrong kind (a str where a number belongs...)."""

    def describe(self) -> str:
        return f"{self.prop}={show(self.value)}: {self.rule}. Fix: {self.fix}"


def show(value: object) -> str:
    """A value as a message shows it: ``repr`` for plain data, a construct by its path."""
    if isinstance(value, (list, tuple)) and not all(_plain(item) for item in value):
        # Constructs in a list by their paths, not by Python's object addresses.
        items = ", ".join(show(item) for item in value)
        text = f"[{items}]" if isinstance(value, list) else f"({items})"
        return text if len(text) <= 80 else f"{text[:77]}..."
    if value is None or isinstance(value, (bool, int, float, str, list, tuple, dict)):
        text = repr(value)
        return text if len(text) <= 80 else f"{text[:77]}..."
    human = getattr(value, "to_human_string", None)  # aws_cdk.Duration
    if callable(human):
        return f"Duration({human()})"
    kind = type(value)
    path = getattr(getattr(value, "node", None), "path", None)
    return f"<{kind.__module__}.{kind.__qualname__}{f' {path}' if path else ''}>"


def _plain(value: object) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, list, tuple, dict))


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


class ParameterTypeError(ConfigurationError, TypeError):
    """A ``ConfigurationError`` in which at least one argument is of the wrong kind (a string
    where a number belongs, a single action where a list belongs...), raised by the call that
    received it before any value reaches jsii. It lists every problem of the call at once: the
    arguments of the wrong kind, and the values out of range or against a rule among the
    others. Being a ``TypeError`` too, ``except TypeError`` catches it as before.
    """

    def __init__(self, construct_path: str, problems: Sequence[Problem]) -> None:
        super().__init__(construct_path, problems)
        wrong = sum(1 for problem in self.problems if problem.wrong_kind)
        count = len(self.problems)
        header = f"{construct_path}: {wrong} argument{'s' if wrong > 1 else ''} of the wrong type"
        if count > wrong:
            header = (
                f"{construct_path}: {count} configuration problems, {wrong} of them "
                f"argument{'s' if wrong > 1 else ''} of the wrong type"
            )
        lines = [f"{header}:"] + [f"  - {problem.describe()}" for problem in self.problems]
        self.args = ("\n".join(lines),)
