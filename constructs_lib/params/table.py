"""The parameter table: what one public call accepts, and how its arguments are read.

A ``Table`` lists the ``Param`` of each argument of a call, in the order of its signature: its kind
(``constructs_lib.params.kinds``), whether ``None`` means "not set", its ``Range`` and the default and
rule the docs state. ``check_kinds`` raises a value of the wrong kind as a ``ParameterTypeError``
(a ``TypeError``); ``read`` gives the values in the units AWS counts (``Given``) with every value
out of range as a ``Problem``, which the call raises with its other problems as one
``ConfigurationError``. A table must name exactly the parameters of its call, so no parameter
goes unchecked; ``render_markdown`` gives the docs' table of it.

Python's own semantics are stated here rather than borrowed from ``int()`` or ``float()``:
``bool`` is not a number; a float where AWS counts whole units is refused, not rounded, even when
it is integral; NaN and infinities are refused; a string is never a number; a duration where AWS
counts whole seconds must be whole seconds. Unresolved tokens are accepted wherever CDK accepts
them and reported in ``Given.unresolved``, so the caller can warn that they were not judged.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Duration, Token

from constructs_lib.errors import ParameterTypeError, Problem
from constructs_lib.params.durations import duration_seconds
from constructs_lib.params.kinds import Choice, Kind, Whole


@dataclass(frozen=True)
class Range:
    """``low`` to ``high`` (``None``: no upper bound) in ``unit``; FIFO queues may allow less."""

    low: int
    high: int | None
    unit: str = ""
    fifo_high: int | None = None
    why: str = ""
    step: int = 1
    """Values are multiples of this (an alarm period: 60 s); a fraction rounds up to one."""

    def bounds(self, fifo: bool) -> tuple[int, int | None]:
        return self.low, self.fifo_high if fifo and self.fifo_high is not None else self.high

    def render(self) -> str:
        """For the docs: ``1-1,000``, ``60-1,209,600 s``, ``at least 1``."""
        unit = f" {self.unit}" if self.unit else ""
        text = (
            f"at least {self.low:,}{unit}"
            if self.high is None
            else f"{self.low:,}-{self.high:,}{unit}"
        )
        if self.fifo_high is not None and self.fifo_high != self.high:
            text += f" (FIFO {self.low:,}-{self.fifo_high:,})"
        return text


@dataclass(frozen=True)
class Param:
    """One parameter of a public call: its kind, whether ``None`` means "not set", its range,
    and the default and rule the docs state."""

    name: str
    kind: Kind
    default: str
    rule: str = ""
    optional: bool = False
    range: Range | None = None
    fix: str = ""
    documented: bool = True
    example: str = ""
    """A valid value as the user would write it (``Duration.days(4)``), offered by each fix
    of a wrong or out-of-range value; required with a range (tests feed each one back in)."""

    def accepts(self) -> str:
        """What the messages and the docs say this parameter accepts."""
        return self.kind.accepts + (" or `None`" if self.optional else "")

    def accepts_in_words(self) -> str:
        """``accepts()`` with the range, for messages (no markdown)."""
        text = self.accepts().replace("`", "")
        return f"{text} ({self.range.render()})" if self.range else text

    def in_range(self, value: float, fifo: bool | None = None) -> bool:
        """Whether ``value`` is within the range (``fifo=None``: for either queue type)."""
        if self.range is None:
            return True
        types = (False, True) if fifo is None else (fifo,)
        highs = [self.range.bounds(each)[1] for each in types]
        return self.range.low <= value and all(high is None or value <= high for high in highs)

    def with_example(self, fix: str) -> str:
        """``fix``, ending with this parameter's example value."""
        if not self.example:
            return fix
        return (
            f"{fix}, e.g. {self.name}={self.example}" if fix else f"pass {self.name}={self.example}"
        )

    def range_problem(self, value: int | float, fifo: bool, given: object = None) -> Problem | None:
        """The problem of a value out of range, or None. ``given``: the value as the user
        wrote it (a Duration whose ``value`` is in seconds), shown in the message."""
        if self.range is None or self.in_range(value, fifo):
            return None
        low, high = self.range.bounds(fifo)
        unit = {"s": " seconds", "": ""}.get(self.range.unit, f" {self.range.unit}")
        if high is None:
            rule = f"must be at least {low}{unit}"
        else:
            rule = f"must be between {low} and {high}{unit}"
            if self.range.fifo_high is not None:
                rule += " for a FIFO queue" if fifo else " for a standard queue"
        if self.range.why:
            rule += f": {self.range.why}"
        if given is not None:
            rule = f"is {value} s, but {rule}"
        return Problem(
            self.name, value if given is None else given, rule, self.with_example(self.fix)
        )

    def kind_problem(self, value: object) -> Problem | None:
        """The problem of a value of the wrong kind, or None."""
        if value is None and self.optional:
            return None
        reason = self.kind.wrong(self.name, value, self._example_for(value))
        if reason is None:
            return None
        return Problem(self.name, value, reason[0], reason[1], wrong_kind=True)

    def _example_for(self, value: object) -> str:
        """The value a fix offers for a wrong-kind ``value``: the same number as an int when
        it is whole and in range (``5.0`` -> ``5``), else the declared example."""
        if (
            isinstance(value, float)
            and isinstance(self.kind, Whole)
            and math.isfinite(value)
            and value.is_integer()
            and self.in_range(value)
        ):
            return str(int(value))
        return self.example


@dataclass(frozen=True)
class Given:
    """A call's arguments as the checks read them: durations in whole seconds, numbers as
    numbers, ``None`` for "not set" and for unresolved tokens (named in ``unresolved``)."""

    values: Mapping[str, Any]
    problems: list[Problem] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


@dataclass(frozen=True)
class Table:
    """The parameters of one public call, in the order of its signature."""

    call: str
    params: tuple[Param, ...]

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def kind_problems(self, arguments: Mapping[str, object]) -> list[Problem]:
        """Every argument of the wrong kind, each naming what the call accepts."""
        if tuple(arguments) != self.names:
            # A parameter added to a call without its declaration (or the reverse): a bug here.
            raise RuntimeError(f"{self.call} passes {tuple(arguments)}, its table {self.names}")
        problems = []
        for param in self.params:
            problem = param.kind_problem(arguments[param.name])
            if problem is not None:
                problems.append(
                    dataclasses.replace(
                        problem,
                        rule=f"{problem.rule}; {self.call} accepts {param.accepts_in_words()}",
                    )
                )
        return problems

    def without(
        self, arguments: Mapping[str, object], problems: Sequence[Problem]
    ) -> dict[str, object]:
        """``arguments`` with each one of the wrong kind as not given (``None``, or its kind's
        neutral value), so that the rest can still be judged: every problem of a call is
        reported at once."""
        wrong = {problem.prop for problem in problems if problem.wrong_kind}
        return {
            param.name: (
                (None if param.optional else param.kind.neutral)
                if param.name in wrong
                else arguments[param.name]
            )
            for param in self.params
        }

    def in_order(self, problems: Sequence[Problem]) -> list[Problem]:
        """``problems`` in the order of the signature (a stable sort: rules between props keep
        their place after the prop they name; other names last)."""
        rank = {name: index for index, name in enumerate(self.names)}
        return sorted(problems, key=lambda p: rank.get(p.prop.split(".")[0], len(rank)))

    def check_kinds(
        self, path: Callable[[], str], arguments: Mapping[str, object], fifo: bool = False
    ) -> None:
        """Raise one ``ParameterTypeError`` naming every argument of the wrong kind, with every
        other argument out of range, when any argument is of the wrong kind."""
        problems = self.kind_problems(arguments)
        if problems:
            problems += self.read(self.without(arguments, problems), fifo).problems
            raise ParameterTypeError(path(), self.in_order(problems))

    def read(self, arguments: Mapping[str, object], fifo: bool = False) -> Given:
        """Values in the units AWS counts, and every value outside its range (call after
        ``check_kinds``)."""
        values: dict[str, Any] = {}
        problems: list[Problem] = []
        unresolved: list[str] = []
        for param in self.params:
            value = arguments[param.name]
            shown: object = None
            if isinstance(value, Duration):
                shown = value
                value, problem = _whole_seconds(param, value)
                if problem is not None:
                    # The rules between props judge the whole seconds the fix offers, so that
                    # the problems listed together agree with one another.
                    problems.append(problem)
                    shown = None
                elif value is None:
                    unresolved.append(param.name)
            elif isinstance(value, float) and isinstance(param.kind, Whole):
                unresolved.append(param.name)  # a float that passed the kind check is a token
                value = None
            elif isinstance(value, float) and not math.isfinite(value):
                problems.append(
                    Problem(
                        param.name,
                        value,
                        "must be a finite number (NaN and infinities are refused)",
                        param.with_example(param.fix or "pass a finite number"),
                    )
                )
                value = None
            elif isinstance(value, float) and Token.is_unresolved(value):
                problems.append(
                    Problem(
                        param.name,
                        Token.as_string(value),  # its token, not the number that encodes it
                        "is an unresolved token, but it must be known at synth (the library "
                        "computes with it)",
                        param.with_example("pass a plain number"),
                    )
                )
                value = None
            elif isinstance(param.kind, Choice) and value not in param.kind.choices:
                problems.append(
                    Problem(
                        param.name,
                        value,
                        f"must be {param.kind.accepts.replace('`', '')}",
                        param.with_example(param.fix),
                    )
                )
            values[param.name] = value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                problem = param.range_problem(value, fifo, shown)
                if problem is not None:
                    problems.append(problem)
        return Given(values, problems, unresolved)

    def render_markdown(self) -> str:
        """The docs' table of this call's parameters."""
        lines = ["| prop | accepts | default | range and rule |", "|---|---|---|---|"]
        for param in self.params:
            if not param.documented:
                continue
            rule = "; ".join(
                part for part in (param.range.render() if param.range else "", param.rule) if part
            )
            lines.append(f"| `{param.name}` | {param.accepts()} | {param.default} | {rule} |")
        return "\n".join(lines)


def _whole_seconds(param: Param, duration: Duration) -> tuple[int | None, Problem | None]:
    """Whole seconds, or None for a token; a fraction is a problem, with the whole seconds
    its fix offers (rounded up, within the range) as the value."""
    seconds = duration_seconds(duration)
    if not isinstance(seconds, float):
        return seconds, None
    whole = max(math.ceil(seconds), 1)
    if param.range is not None:
        step = param.range.step
        whole = math.ceil(whole / step) * step
        low, high = param.range.bounds(False)
        whole = max(low, whole if high is None else min(whole, high - high % step))
    allowed = f" ({param.range.render()})" if param.range is not None else ""
    return whole, Problem(
        param.name,
        duration,
        f"is {seconds:g} s, but AWS counts {param.name} in whole seconds{allowed}; fractions "
        "are refused, not rounded",
        f"pass {param.name}=Duration.seconds({whole}) or another whole number of seconds",
    )
