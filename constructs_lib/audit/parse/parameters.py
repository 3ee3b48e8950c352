"""Template parameters: the values a deploy would give them, and where each value came from.

A template is judged with the values CloudFormation would use: an override given to the audit
(``--parameter-overrides``, ``--parameters-file``, per stack or for every stack), else the value
a parent stack passes to a nested stack, else the parameter's ``Default``. A parameter with none
of these stays unknown, and rules that need it report QR900. Pseudo parameters resolve to
documented placeholders (``PSEUDO_PARAMETERS``), which overrides may replace too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ALL_STACKS = "*"  # the stack key of overrides that apply to every stack

# Placeholders for the pseudo parameters that depend on where a stack is deployed. The audit's
# rules never depend on the account or the region; names inside ARNs do, and these keep them.
PSEUDO_PARAMETERS: dict[str, Any] = {
    "AWS::AccountId": "123456789012",
    "AWS::Region": "us-east-1",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NotificationARNs": [],
}
# Parameter types whose Default names where the value lives, not the value itself.
_LOOKUP_TYPE_PREFIX = "AWS::SSM::Parameter::Value<"

# stack name (or ALL_STACKS) -> parameter key -> value, as the CLI and the engines take them.
Overrides = Mapping[str, Mapping[str, str]]


class ParameterError(ValueError):
    """An override the audit cannot read; the message names the value and the expected form."""


@dataclass(frozen=True)
class ParameterValue:
    value: Any
    source: str  # "default", "override" or "from parent stack <name>"

    def describe(self, name: str) -> str:
        return f"parameter {name} ({self.source})"


def parse_override(text: str) -> tuple[str, str, str]:
    """``[STACK:]KEY=VALUE`` -> (stack or ``*``, key, value), the CLI's --parameter-overrides form."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise ParameterError(
            f"parameter override {text!r} is not KEY=VALUE or STACK:KEY=VALUE "
            "(for example VisibilityTimeout=60 or orders-prod:VisibilityTimeout=60)"
        )
    stack = ALL_STACKS
    if not key.startswith("AWS::") and ":" in key:  # stack names and keys never hold ':'
        stack, key = key.split(":", 1)
    return stack, key, value


def read_parameters_file(path: str) -> dict[str, str]:
    """A JSON parameters file: CloudFormation's ``[{"ParameterKey": .., "ParameterValue": ..}]``
    (as ``aws cloudformation create-stack --parameters file://...`` takes it), or an object of
    key -> value (``{"Parameters": {...}}``, the CodePipeline template configuration form, too)."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as error:
        raise ParameterError(f"cannot read parameters file {path}: {error}") from error
    if isinstance(document, dict):
        document = document.get("Parameters", document)
        if isinstance(document, dict):
            return {str(k): _text(v) for k, v in document.items()}
    if isinstance(document, list) and all(
        isinstance(item, dict) and "ParameterKey" in item for item in document
    ):
        return {
            str(item["ParameterKey"]): _text(item.get("ParameterValue", ""))
            for item in document
            if not item.get("UsePreviousValue")
        }
    raise ParameterError(
        f"parameters file {path} is neither a list of "
        '{"ParameterKey": ..., "ParameterValue": ...} nor an object of key -> value'
    )


def _text(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def merge(pairs: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, str]]:
    """(stack, key, value) triples -> Overrides; a later value for the same key wins."""
    result: dict[str, dict[str, str]] = {}
    for stack, key, value in pairs:
        result.setdefault(stack, {})[key] = value
    return result


def for_stack(overrides: Overrides | None, stack: str) -> dict[str, str]:
    """The overrides that apply to ``stack``: those for every stack, then its own."""
    if not overrides:
        return {}
    return {**overrides.get(ALL_STACKS, {}), **overrides.get(stack, {})}


def _typed(declared_type: Any, value: Any) -> Any:
    """A value as CloudFormation hands it to the template: lists for list types, else text."""
    if isinstance(declared_type, str) and (
        declared_type == "CommaDelimitedList" or declared_type.startswith("List<")
    ):
        if isinstance(value, list):
            return [str(v) for v in value]
        return [item.strip() for item in str(value).split(",")]
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float | str):
        return str(value)
    return value  # a reference a parent stack passes in (already normalized)


def resolve(
    declared: Any,
    overrides: Mapping[str, str],
    from_parent: Mapping[str, Any] | None = None,
    parent: str = "",
) -> tuple[dict[str, ParameterValue], set[str]]:
    """The template's ``Parameters`` -> (known values by name, names with no value).

    Overrides of pseudo parameters are kept too, so ``AWS::Region=eu-west-1`` changes what
    conditions on the region decide.
    """
    values: dict[str, ParameterValue] = {
        name: ParameterValue(value, "override")
        for name, value in overrides.items()
        if name in PSEUDO_PARAMETERS
    }
    unknown: set[str] = set()
    for name, spec in (declared if isinstance(declared, dict) else {}).items():
        spec = spec if isinstance(spec, dict) else {}
        declared_type = spec.get("Type")
        if name in overrides:
            values[name] = ParameterValue(_typed(declared_type, overrides[name]), "override")
        elif from_parent and name in from_parent:
            source = f"from parent stack {parent}" if parent else "from parent stack"
            values[name] = ParameterValue(_typed(declared_type, from_parent[name]), source)
        elif "Default" in spec and not str(declared_type).startswith(_LOOKUP_TYPE_PREFIX):
            values[name] = ParameterValue(_typed(declared_type, spec["Default"]), "default")
        else:
            unknown.add(str(name))
    return values, unknown
