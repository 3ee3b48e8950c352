"""Intrinsic functions within one template, normalized to what the audit can know.

``Ref``/``Fn::GetAtt`` to a resource become ``{"$ref": "local:<file>#<id>"}``,
``Fn::ImportValue`` becomes ``{"$ref": "export:<name>"}``, ``Fn::Sub``/``Fn::Join``/
``Fn::Select``/``Fn::FindInMap`` become strings where their pieces are known, and anything else
becomes ``{"$unresolved": ...}``. References between templates are resolved later, by joins on
the keys the dialects emit (see ``model``).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from constructs_lib import limits
from constructs_lib.audit import model
from constructs_lib.audit.parse.parameters import PSEUDO_PARAMETERS, ParameterValue

UNKNOWN_PIECE = "${?}"  # stands for an unknown part of a string (a region, a parameter, ...)
NO_VALUE = object()  # AWS::NoValue: the property is removed
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def unresolved(original: Any) -> dict[str, Any]:
    return {"$unresolved": json.dumps(original, sort_keys=True, default=str)}


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and "$ref" in value


def is_unresolved(value: Any) -> bool:
    if isinstance(value, dict):
        return "$unresolved" in value or "$ref" in value
    return isinstance(value, str) and UNKNOWN_PIECE in value


def describe(value: Any) -> str:
    """A reference or unknown value as the template wrote it, for messages."""
    if isinstance(value, dict):
        if "$text" in value:
            return str(value["$text"])
        if "$unresolved" in value:
            return str(value["$unresolved"])
    return json.dumps(value, sort_keys=True, default=str)


@dataclass
class Scope:
    """One template's names and values, for normalizing the intrinsic functions inside it."""

    file: str
    stack: str
    types: dict[str, str]  # logical id -> resource type, for every resource
    parameters: dict[str, ParameterValue] = field(default_factory=dict)
    unknown_parameters: set[str] = field(default_factory=set)
    mappings: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)
    nested: dict[str, str] = field(default_factory=dict)  # stack logical id -> child template
    # parameters read since the last ``take_uses``: name -> where the value came from
    uses: dict[str, str] = field(default_factory=dict)
    # undecidable conditions an ``Fn::If`` took as true since the last ``take_assumed``
    assumed: set[str] = field(default_factory=set)
    _decided: dict[str, bool | None] = field(default_factory=dict)

    def normalize(self, value: Any) -> Any:
        if isinstance(value, dict):
            if len(value) == 1:
                ((name, argument),) = value.items()
                handler = _INTRINSICS.get(name)
                if handler is not None:
                    return handler(self, argument, value)
                if name.startswith("Fn::"):
                    return unresolved(value)
            result = {}
            for key, item in value.items():
                normalized = self.normalize(item)
                if normalized is not NO_VALUE:
                    result[key] = normalized
            return result
        if isinstance(value, list):
            return [n for n in (self.normalize(item) for item in value) if n is not NO_VALUE]
        if isinstance(value, datetime.date):
            return value.isoformat()
        return value

    def take_assumed(self) -> set[str]:
        assumed, self.assumed = self.assumed, set()
        return assumed

    def take_uses(self) -> dict[str, str]:
        uses, self.uses = self.uses, {}
        return uses

    def resource_ref(self, logical_id: str, attribute: str, original: Any) -> dict[str, Any]:
        return {
            "$ref": model.local_key(model.uid(self.file, logical_id)),
            "$attr": attribute,
            "$text": json.dumps(original, sort_keys=True),
        }

    def _named_value(self, name: str) -> Any:
        """A parameter's or pseudo parameter's value, or None when it is unknown."""
        if name in self.parameters:
            value = self.parameters[name]
            self.uses[name] = value.describe(name)
            return value.value
        if name == "AWS::StackName":
            return self.stack
        if name == "AWS::StackId":
            return (
                f"arn:{self._pseudo('AWS::Partition')}:cloudformation:{self._pseudo('AWS::Region')}"
                f":{self._pseudo('AWS::AccountId')}:stack/{self.stack}/{UNKNOWN_PIECE}"
            )
        return PSEUDO_PARAMETERS.get(name)

    def _pseudo(self, name: str) -> Any:
        value = self.parameters.get(name)
        return value.value if value is not None else PSEUDO_PARAMETERS[name]

    def ref(self, argument: Any, original: Any) -> Any:
        if not isinstance(argument, str):
            return unresolved(original)
        if argument in self.types:
            return self.resource_ref(argument, "Ref", original)
        if argument == "AWS::NoValue":
            return NO_VALUE
        value = self._named_value(argument)
        if value is None and argument in self.unknown_parameters:
            # No default and no override: a parent stack may pass it (see ``model.NESTED_*``).
            return {
                "$ref": model.export_key(model.nested_parameter(self.file, argument)),
                "$text": json.dumps(original, sort_keys=True),
            }
        return unresolved(original) if value is None else value

    def get_att(self, argument: Any, original: Any) -> Any:
        if isinstance(argument, str):
            argument = argument.split(".", 1)
        if not (
            isinstance(argument, list)
            and len(argument) == 2
            and isinstance(argument[0], str)
            and argument[0] in self.types
        ):
            return unresolved(original)
        logical_id, attribute = argument[0], str(argument[1])
        if logical_id in self.nested and attribute.startswith("Outputs."):
            output = model.nested_output(self.nested[logical_id], attribute[len("Outputs.") :])
            return {"$ref": model.export_key(output), "$text": json.dumps(original, sort_keys=True)}
        return self.resource_ref(logical_id, attribute, original)

    def import_value(self, argument: Any, original: Any) -> Any:
        name = self.normalize(argument)
        if isinstance(name, str) and UNKNOWN_PIECE not in name:
            return {"$ref": model.export_key(name), "$text": json.dumps(original, sort_keys=True)}
        return unresolved(original)

    def sub(self, argument: Any, original: Any) -> Any:
        variables: dict[str, Any] = {}
        if isinstance(argument, list) and len(argument) == 2 and isinstance(argument[1], dict):
            text, raw_variables = argument
            variables = {k: self.normalize(v) for k, v in raw_variables.items()}
        else:
            text = argument
        if not isinstance(text, str):
            return unresolved(original)
        whole = _SUB_VARIABLE.fullmatch(text)
        if whole:  # "${Queue.Arn}" alone is a plain reference
            single = self._sub_variable(whole.group(1), variables, original)
            if single is not None and not isinstance(single, str):
                return single

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            value = self._sub_variable(name, variables, original)
            return value if isinstance(value, str) else UNKNOWN_PIECE

        return _SUB_VARIABLE.sub(replace, text)

    def _sub_variable(self, name: str, variables: dict[str, Any], original: Any) -> Any:
        if name in variables:
            value = variables[name]
            return str(value) if isinstance(value, int | float) else value
        logical_id, _, attribute = name.partition(".")
        if logical_id in self.types:
            return self.resource_ref(logical_id, attribute or "Ref", original)
        value = self._named_value(name)
        return str(value) if isinstance(value, int | float) else value

    # --- Conditions --------------------------------------------------------------------------

    def condition(self, name: Any) -> bool | None:
        """A named condition's value; None when it depends on something unknown."""
        if not isinstance(name, str) or name not in self.conditions:
            return None
        if name not in self._decided:
            self._decided[name] = None  # a condition that refers to itself stays unknown
            self._decided[name] = self._decide(self.conditions[name])
        return self._decided[name]

    def _decide(self, expression: Any) -> bool | None:
        if not (isinstance(expression, dict) and len(expression) == 1):
            return None
        ((function, argument),) = expression.items()
        if function == "Condition":
            return self.condition(argument)
        if function == "Fn::Equals":
            if not (isinstance(argument, list) and len(argument) == 2):
                return None
            left, right = (self.normalize(a) for a in argument)
            if is_unresolved(left) or is_unresolved(right):
                return None
            return _as_text(left) == _as_text(right)
        if function == "Fn::Not":
            inner = self._decide(argument[0]) if isinstance(argument, list) and argument else None
            return None if inner is None else not inner
        if function in ("Fn::And", "Fn::Or") and isinstance(argument, list):
            decided = [self._decide(item) for item in argument]
            deciding = bool(function == "Fn::Or")  # the value that settles the whole expression
            if deciding in decided:
                return deciding
            return None if None in decided else not deciding
        return None

    def if_(self, argument: Any, original: Any) -> Any:
        if not (isinstance(argument, list) and len(argument) == 3):
            return unresolved(original)
        decided = self.condition(argument[0])
        if decided is None:
            # Judged as if the condition held, like a resource it guards; the caller says so.
            self.assumed.add(str(argument[0]))
            decided = True
        return self.normalize(argument[1] if decided else argument[2])

    def join(self, argument: Any, original: Any) -> Any:
        if not (isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str)):
            return unresolved(original)
        items = self.normalize(argument[1])
        if not isinstance(items, list):
            return unresolved(original)
        if len(items) == 1 and is_ref(items[0]):
            return items[0]
        return argument[0].join(
            str(item) if isinstance(item, str | int | float) else UNKNOWN_PIECE for item in items
        )

    def select(self, argument: Any, original: Any) -> Any:
        if isinstance(argument, list) and len(argument) == 2:
            index, items = self.normalize(argument[0]), self.normalize(argument[1])
            if isinstance(items, list) and str(index).isdigit() and int(index) < len(items):
                return items[int(index)]
        return unresolved(original)

    def find_in_map(self, argument: Any, original: Any) -> Any:
        if isinstance(argument, list) and len(argument) >= 3:
            keys = [self.normalize(k) for k in argument[:3]]
            if all(isinstance(k, str) for k in keys):
                node: Any = self.mappings
                for key in keys:
                    node = node.get(key) if isinstance(node, dict) else None
                if node is not None:
                    return self.normalize(node)
        return unresolved(original)


_INTRINSICS: dict[str, Callable[[Scope, Any, Any], Any]] = {
    "Ref": Scope.ref,
    "Fn::GetAtt": Scope.get_att,
    "Fn::ImportValue": Scope.import_value,
    "Fn::Sub": Scope.sub,
    "Fn::Join": Scope.join,
    "Fn::Select": Scope.select,
    "Fn::FindInMap": Scope.find_in_map,
    "Fn::If": Scope.if_,
    "Condition": lambda _t, _a, original: unresolved(original),
}


def _as_text(value: Any) -> str:
    """CloudFormation compares condition operands as strings."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(_as_text(v) for v in value)
    return str(value)


# --- Names inside ARNs and URLs ----------------------------------------------------------------


def queue_name_from(text: str) -> str | None:
    """The queue name in an SQS ARN, a queue URL, or a bare name; None if not one of those."""
    if text.startswith("arn:"):
        parts = text.split(":")
        name = parts[5] if len(parts) == 6 and parts[2] == "sqs" else None
    elif text.startswith(("https://", "http://")):
        name = text.rstrip("/").rsplit("/", 1)[-1]
    else:
        name = text
    if not name or UNKNOWN_PIECE in name:
        return None
    return name if limits.QUEUE_NAME_PATTERN.match(name.removesuffix(limits.FIFO_SUFFIX)) else None


def function_name_from(text: str) -> str | None:
    """The function name in a Lambda ARN, a partial ARN, or a bare name."""
    parts = text.split(":")
    if text.startswith("arn:"):
        name = parts[6] if len(parts) >= 7 and parts[2] == "lambda" else None
    elif len(parts) >= 3 and parts[1] == "function":
        name = parts[2]  # "123456789012:function:name"
    else:
        name = parts[0]
    if not name or UNKNOWN_PIECE in name:
        return None
    return name
