"""What crosses stacks: a template's outputs and exports, and what a parent passes to the nested
stacks whose templates are local files, as export rows the other side's references resolve by.
"""

from __future__ import annotations

import json
import os
from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.model import ExportRow, NestedRow, ParsedTemplate
from constructs_lib.audit.parse.dialects.cdk_assembly import ASSET_PATH_METADATA
from constructs_lib.audit.parse.dialects.edges import target_key
from constructs_lib.audit.parse.dialects.queue_targets import lookup
from constructs_lib.audit.parse.intrinsics import UNKNOWN_PIECE, Scope

NESTED_STACK = "AWS::CloudFormation::Stack"


def nested_children(file: str, resources: dict[str, Any]) -> dict[str, str]:
    """Nested stack logical id -> the child template's path, where the child is a local file:
    a relative ``TemplateURL`` (SAM, ``aws cloudformation package`` before upload) or a cloud
    assembly's ``aws:asset:path`` metadata."""
    children: dict[str, str] = {}
    for logical_id, body in resources.items():
        if not isinstance(body, dict) or body.get("Type") != NESTED_STACK:
            continue
        metadata = body.get("Metadata")
        location = metadata.get(ASSET_PATH_METADATA) if isinstance(metadata, dict) else None
        if not isinstance(location, str):
            location = lookup(body, "Properties", "TemplateURL")
        if isinstance(location, str) and "://" not in location and not location.startswith("/"):
            children[str(logical_id)] = os.path.normpath(
                os.path.join(os.path.dirname(file), location)
            )
    return children


def nested_parameters(
    template: Scope, parsed: ParsedTemplate, logical_id: str, body: dict[str, Any]
) -> None:
    """What the parent passes into the child, as exports the child's parameters import."""
    child = template.nested.get(logical_id)
    passed = lookup(body, "Properties", "Parameters")
    if child is None or not isinstance(passed, dict):
        return
    values: dict[str, str] = {}
    for name, value in passed.items():
        _exported(template, parsed, model.nested_parameter(child, str(name)), value)
        normalized = template.normalize(value)
        if isinstance(normalized, str | int | float) and UNKNOWN_PIECE not in str(normalized):
            values[str(name)] = (
                str(normalized).lower() if isinstance(normalized, bool) else str(normalized)
            )
    if values:
        parsed.nested.append(NestedRow(child, template.stack, json.dumps(values, sort_keys=True)))


def output_rows(template: Scope, parsed: ParsedTemplate, outputs: Any) -> None:
    """Exports, and each output as what a parent stack's ``GetAtt Stack.Outputs.<name>`` reads."""
    if isinstance(outputs, dict):
        for name, output in outputs.items():
            _export_row(template, parsed, output)
            if isinstance(output, dict):  # what a parent's GetAtt Stack.Outputs.<name> reads
                _exported(
                    template,
                    parsed,
                    model.nested_output(template.file, str(name)),
                    output.get("Value"),
                )


def _export_row(template: Scope, parsed: ParsedTemplate, output: Any) -> None:
    if not isinstance(output, dict) or not isinstance(output.get("Export"), dict):
        return
    name = template.normalize(output["Export"].get("Name"))
    if isinstance(name, str) and UNKNOWN_PIECE not in name:
        _exported(template, parsed, name, output.get("Value"))


def _exported(template: Scope, parsed: ParsedTemplate, name: str, raw_value: Any) -> None:
    value = template.normalize(raw_value)
    queue = target_key(template, "queue", value) or ""
    function = target_key(template, "function", value) or ""
    if queue or function:
        parsed.exports.append(ExportRow(template.file, name, queue, function))
