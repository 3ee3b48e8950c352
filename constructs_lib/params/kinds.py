"""Kinds of value a public parameter may accept, and how a wrong one is described.

Python's own semantics are stated here rather than borrowed from ``int()`` or ``float()``:
``bool`` is not a number; a float where AWS counts whole units is refused, not rounded, even when
it is integral; a string is never a number; jsii interfaces (``kms.IKey`` ...) are checked by
the jsii types an object declares, since ``isinstance`` cannot check them. Each kind's ``wrong``
returns why a value is not of the kind and the fix, or ``None``; ``constructs_lib.params.prop_tables``
declares which kind each parameter takes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, Token
from constructs import Construct
from jsii._reference_map import InterfaceDynamicProxy

# --- the kinds ------------------------------------------------------------


class Kind:
    """One kind of value. ``wrong`` says why a value is not of this kind, and the fix."""

    accepts: str = ""
    """In the docs' and the messages' words, e.g. ``an int``."""

    neutral: object = None
    """What stands for a value of the wrong kind while the call's other arguments are judged:
    nothing to judge (``None``), no items, or a feature off."""

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        """Why ``value`` is not of this kind and the fix, or None. ``example``: a valid value
        of the parameter, as Python text, for the fix to offer."""
        raise NotImplementedError


@dataclass(frozen=True)
class Whole(Kind):
    """An ``int`` (not a ``bool``): AWS counts these in whole units. A token number is accepted."""

    units: str
    accepts: str = "an `int`"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        if isinstance(value, float):
            if math.isfinite(value) and Token.is_unresolved(value):
                return None
            return (
                f"is a float; AWS counts whole {self.units}, so a float is refused, not rounded",
                _whole_fix(prop, self.units, example),
            )
        return f"is {kind_of(value)}, not a number", _whole_fix(prop, self.units, example)


@dataclass(frozen=True)
class Number(Kind):
    """An ``int`` or a finite ``float`` (not a ``bool``), known at synth: no token."""

    accepts: str = "an `int` or a `float`"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return None
        return f"is {kind_of(value)}, not a number", f"pass a number such as {prop}={example or 6}"


@dataclass(frozen=True)
class Seconds(Kind):
    """An ``aws_cdk.Duration`` of whole seconds (checked once read); a token duration is accepted."""

    accepts: str = "an `aws_cdk.Duration` of whole seconds"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, Duration):
            return None
        fix = f"pass an aws_cdk.Duration, e.g. {prop}={example or 'Duration.minutes(5)'}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # A bare number has no unit: say what it is in seconds without offering it as the
            # value to pass (it may be out of range, or the number of days the user meant).
            fix += f"; a bare number has no unit: {value:g} seconds is Duration.seconds({value:g})"
        else:
            fix += " (Duration.seconds, Duration.minutes, Duration.hours or Duration.days)"
        return f"is {kind_of(value)}, not an aws_cdk.Duration", fix


@dataclass(frozen=True)
class Flag(Kind):
    accepts: str = "a `bool`"
    neutral: object = False

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, bool):
            return None
        return f"is {kind_of(value)}, not a bool", f"pass {prop}=True or {prop}=False"


@dataclass(frozen=True)
class Text(Kind):
    accepts: str = "a `str`"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, str):
            return None
        return f"is {kind_of(value)}, not a str", f"pass {prop} as a str"


@dataclass(frozen=True)
class Choice(Kind):
    """One of a few strings; another string is a wrong value (a ConfigurationError)."""

    choices: tuple[str, ...]

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(f'`"{c}"`' for c in self.choices)

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, str):
            return None
        return f"is {kind_of(value)}, not a str", f'pass {prop}="{self.choices[0]}"'


@dataclass(frozen=True)
class Instance(Kind):
    """An instance of a class: a jsii enum such as ``sqs.DeduplicationScope``, or ``Construct``."""

    cls: type
    label: str
    example: str

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return f"{_article(self.label)} `{self.label}`"

    def matches(self, value: object) -> bool:
        return isinstance(value, self.cls)

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if self.matches(value):
            return None
        return f"is {kind_of(value)}, not a {self.label}", f"pass {prop}={self.example}"


@dataclass(frozen=True)
class Implements(Instance):
    """An object that implements a jsii interface (``kms.IKey``, ``sqs.IQueue`` ...): a construct
    defined in the app, an imported one (``from_..._arn``), or a Python class decorated with
    ``@jsii.implements``. ``cls`` is the interface."""

    def matches(self, value: object) -> bool:
        return implements(value, self.cls)


@dataclass(frozen=True)
class SequenceOf(Kind):
    """A list or tuple of items of one kind; a single item is named as such."""

    item: Kind
    noun: str
    neutral: object = ()

    @property
    def accepts(self) -> str:  # type: ignore[override]
        return f"a list of `{self.noun}`"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                reason = self.item.wrong(prop, item)
                if reason is not None:
                    # The item's fix ("pass alarm_actions=X"), as the list it goes in.
                    fix = reason[1]
                    if fix.startswith(f"pass {prop}="):
                        fix = f"pass {prop}=[{fix.removeprefix(f'pass {prop}=')}, ...]"
                    return f"holds at [{index}] a value that {reason[0]}", fix
            return None
        if self.item.wrong(prop, value) is None:
            return (
                f"is a single {self.noun}, where a sequence belongs",
                f"wrap it in a list: {prop}=[...]",
            )
        return f"is {kind_of(value)}, not a list", f"pass {prop} as a list of {self.noun}"


@dataclass(frozen=True)
class FilterPattern(Kind):
    """One filter of a Lambda event source, as ``lambda_.FilterCriteria.filter(...)`` makes it:
    a dict whose only key, ``pattern``, holds the pattern as JSON text. A raw pattern
    (``{"body": ...}``) would reach CloudFormation as a filter without a pattern."""

    accepts: str = "a `dict` from `lambda_.FilterCriteria.filter(...)`"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if (
            isinstance(value, Mapping)
            and set(value) == {"pattern"}
            and isinstance(value["pattern"], str)
        ):
            return None
        if isinstance(value, Mapping):
            return (
                "is a raw event pattern, not a filter made of one",
                f"pass {prop}=lambda_.FilterCriteria.filter(<this pattern>)",
            )
        return (
            f"is {kind_of(value)}, not a filter",
            f"pass {prop}=lambda_.FilterCriteria.filter(...)",
        )


@dataclass(frozen=True)
class Pair(Kind):
    """A ``tuple`` of two whole numbers, (minimum, maximum); each may be a token number."""

    units: str
    example: str
    accepts: str = "a `tuple` of two `int` (minimum, maximum)"

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        fix = f"pass {prop}={self.example}"
        if not isinstance(value, tuple):
            return f"is {kind_of(value)}, not a tuple (minimum, maximum)", fix
        if len(value) != 2:
            return f"is a tuple of {len(value)} items, not two (minimum, maximum)", fix
        for index, item in enumerate(value):
            reason = Whole(self.units).wrong(f"{prop}[{index}]", item)
            if reason is not None:
                return f"holds at [{index}] a value that {reason[0]}", fix
        return None


@dataclass(frozen=True)
class AnyOf(Kind):
    """A value of any of ``kinds``: an SNS topic, an EventBridge rule or an S3 bucket."""

    kinds: tuple[Instance, ...]
    example: str

    @property
    def accepts(self) -> str:  # type: ignore[override]
        labels = [kind.accepts for kind in self.kinds]
        return ", ".join(labels[:-1]) + " or " + labels[-1]

    def wrong(self, prop: str, value: object, example: str = "") -> tuple[str, str] | None:
        if any(kind.matches(value) for kind in self.kinds):
            return None
        names = " or ".join(kind.label for kind in self.kinds)
        return f"is {kind_of(value)}, not {names}", f"pass {prop}={self.example}"


def _whole_fix(prop: str, units: str, example: str) -> str:
    if example:
        return f"pass a whole number of {units} as an int, e.g. {prop}={example}"
    return f"pass a whole number of {units} as an int"


# --- reading a value's kind, for the messages -------------------------------------------------


_JSII_TYPES: dict[type, frozenset[str]] = {}


def _jsii_types(cls: type) -> frozenset[str]:
    """The jsii type names a Python class stands for: its own and every interface it declares."""
    if cls in _JSII_TYPES:
        return _JSII_TYPES[cls]
    found: set[str] = set()
    for klass in cls.__mro__:
        own = klass.__dict__.get("__jsii_type__")
        if own:
            found.add(own)
        for interface in klass.__dict__.get("__jsii_ifaces__", ()):
            found.update(
                i.__dict__["__jsii_type__"]
                for i in interface.__mro__
                if "__jsii_type__" in i.__dict__
            )
    _JSII_TYPES[cls] = frozenset(found)
    return _JSII_TYPES[cls]


def _delegates(value: object) -> list[object]:
    # Objects that jsii returns as an interface (Key.from_key_arn ...) are dynamic proxies.
    if isinstance(value, InterfaceDynamicProxy):
        return list(value._delegates)
    return [value]


def implements(value: object, interface: type) -> bool:
    """Whether ``value`` implements the jsii interface (``isinstance`` cannot tell: jsii's
    interfaces are protocols that are not runtime-checkable)."""
    wanted = interface.__dict__.get("__jsii_type__")
    return any(wanted in _jsii_types(type(d)) for d in _delegates(value))


def kind_of(value: object) -> str:
    """``a float``, ``an aws_cdk.Duration``, ``an aws_cdk.aws_sns.Topic (Stack/Topic)``."""
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float, str, list, tuple, dict)):
        name = type(value).__name__
        return f"{_article(name)} {name}"
    if isinstance(value, Duration):
        return "an aws_cdk.Duration"
    classes = [type(d) for d in _delegates(value)]
    names = [f"{c.__module__}.{c.__qualname__}" for c in classes if c.__module__ != "aws_cdk"]
    name = " + ".join(names or [f"{c.__module__}.{c.__qualname__}" for c in classes])
    path = _path(value)
    return f"{_article(name)} {name}" + (f" ({path})" if path else "")


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _path(value: object) -> str | None:
    if isinstance(value, Construct):
        return value.node.path
    return None
