"""CloudFormation resources -> the audit's flat rows (resources, keys, edges, exports).

Every dialect ends here: SAM is expanded to plain CloudFormation first (``sam``), and cloud
assemblies are plain CloudFormation with stack names from their manifest (``cdk_assembly``). This
module reads each resource (its condition, suppressions and normalized properties); the keys and
edges each kind of resource yields are in ``edges``, and what crosses stacks (outputs, exports,
nested stacks' parameters) in ``cross_stack``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from constructs_lib.audit import model, rules
from constructs_lib.audit.accept import suppressions
from constructs_lib.audit.model import FileRow, NoteRow, ParsedTemplate, ResourceRow
from constructs_lib.audit.parse import parameters
from constructs_lib.audit.parse.dialects import composite_alarms, cross_stack, edges
from constructs_lib.audit.parse.intrinsics import NO_VALUE, Scope, describe
from constructs_lib.audit.parse.positions import Spots, source_marker


def extract(
    file: str,
    stack: str,
    document: dict[str, Any],
    origins: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    spots: Spots | None = None,
) -> ParsedTemplate:
    """One template's rows. ``origins`` maps generated logical ids to the ids a person wrote
    (SAM's ``Function.Event``), so findings name what the author can find in the file;
    ``spots``, where each resource is written (``positions``), so they point at its line."""
    origins, spots = origins or {}, spots or {}
    resources = document["Resources"]
    template = _scope(file, stack, document, overrides or {})
    parsed = ParsedTemplate(FileRow(file, stack, "ok", "", 0))
    _read_suppressions(parsed, document, origins)
    count = 0
    for logical_id, body in resources.items():
        shown = origins.get(str(logical_id), str(logical_id))
        source = source_marker(spots.get(str(logical_id)), body if isinstance(body, dict) else {})
        if source is not None:
            parsed.sources.setdefault(shown, source)
        if _resource_rows(template, parsed, str(logical_id), shown, body, source):
            count += 1
    parsed.file = FileRow(file, stack, "ok", "", count)
    composite_alarms.annotate(template, resources, parsed)
    edges.function_pointer_keys(template, resources, parsed)
    cross_stack.output_rows(template, parsed, document.get("Outputs"))
    return parsed


def _scope(file: str, stack: str, document: dict[str, Any], overrides: Mapping[str, str]) -> Scope:
    """The template's names and values: resource types, parameters, mappings, conditions."""
    resources = document["Resources"]
    values, unknown = parameters.resolve(document.get("Parameters"), overrides)
    mappings, conditions = document.get("Mappings"), document.get("Conditions")
    return Scope(
        file=file,
        stack=stack,
        types={
            str(lid): str(body.get("Type", "")) if isinstance(body, dict) else ""
            for lid, body in resources.items()
        },
        parameters=values,
        unknown_parameters=unknown,
        mappings=mappings if isinstance(mappings, dict) else {},
        conditions=conditions if isinstance(conditions, dict) else {},
        nested=cross_stack.nested_children(file, resources),
    )


def _read_suppressions(
    parsed: ParsedTemplate, document: dict[str, Any], origins: Mapping[str, str]
) -> None:
    """The template's suppressions (key ``""``) and each resource's, merged with the template's,
    read before any resource is judged."""
    stack_wide = _suppressions(parsed, document.get("Metadata"), "", "the template's Metadata", "")
    parsed.suppressions[""] = suppressions.encode((), stack_wide)
    for logical_id, body in document["Resources"].items():
        shown = origins.get(str(logical_id), str(logical_id))
        if isinstance(body, dict) and "Metadata" in body:
            about = shown if body.get("Type") == model.QUEUE else ""
            own = _suppressions(parsed, body["Metadata"], shown, f"resource {shown}", about)
            parsed.suppressions[shown] = suppressions.encode(own, stack_wide)


def _resource_rows(
    template: Scope,
    parsed: ParsedTemplate,
    logical_id: str,
    shown: str,
    body: Any,
    source: dict[str, Any] | None = None,
) -> bool:
    """One resource's rows and notes; True when it is an audited resource and was judged (counted
    in the file row), False when it is skipped."""
    file, stack = template.file, template.stack
    if not isinstance(body, dict) or not isinstance(body.get("Type"), str):
        parsed.notes.append(
            _note(
                file,
                stack,
                shown,
                "QR900",
                f"resource {shown}: Type is {describe(body.get('Type') if isinstance(body, dict) else body)}, "
                "not a resource type (a preprocessor directive such as a Rain module?): "
                "not judged",
            )
        )
        return False
    if body["Type"] == cross_stack.NESTED_STACK and _deployed(template, parsed, shown, body):
        cross_stack.nested_parameters(template, parsed, logical_id, body)
    if body["Type"] not in model.AUDITED_TYPES or not _deployed(template, parsed, shown, body):
        return False
    properties = _judged_properties(template, parsed, shown, body)
    if properties is None:
        return False
    if source is not None:
        properties[model.SOURCE] = source
    resource_uid = model.uid(file, logical_id)
    kind = body["Type"]
    edges.kind_rows(template, parsed, resource_uid, kind, properties)
    edges.edges_to_queues(template, parsed, resource_uid, kind, shown, properties)
    parsed.resources.append(
        ResourceRow(
            resource_uid,
            file,
            stack,
            shown,
            kind,
            json.dumps(properties, sort_keys=True, default=str),
        )
    )
    return True


def _judged_properties(
    template: Scope, parsed: ParsedTemplate, shown: str, body: dict[str, Any]
) -> dict[str, Any] | None:
    """The properties the rules read: normalized, with the suppressions that apply to the
    resource; None (and a QR901 note) when Properties is not a mapping. A condition an
    ``Fn::If`` had to assume true is noted."""
    raw_properties = body.get("Properties") or {}
    if not isinstance(raw_properties, dict):
        parsed.notes.append(
            _note(
                template.file,
                template.stack,
                shown,
                "QR901",
                f"resource {shown} ({body['Type']}): Properties is not a mapping",
            )
        )
        return None
    template.take_assumed()
    properties = _normalized_properties(template, raw_properties)
    accepted = suppressions.for_resource(parsed.suppressions, shown)
    if accepted:
        properties[model.SUPPRESSIONS] = accepted
    for condition in sorted(template.take_assumed()):
        parsed.notes.append(_undecided(template, shown, condition))
    return properties


def _suppressions(
    parsed: ParsedTemplate, metadata: Any, shown: str, where: str, queue: str
) -> tuple[tuple[str, str], ...]:
    """The suppressions a Metadata mapping honours; a QR902 for each it cannot (about
    ``queue`` when the Metadata is a queue's)."""
    read = suppressions.read_metadata(metadata, rules.RULE_IDS, where)
    for problem in read.problems:
        file = parsed.file
        note = NoteRow(file.file, file.stack, shown, queue, suppressions.SUPPRESSION_RULE, problem)
        parsed.notes.append(note)
    return read.entries


def _note(file: str, stack: str, resource: str, rule_id: str, message: str) -> NoteRow:
    return NoteRow(file, stack, resource, "", rule_id, message)


def _deployed(template: Scope, parsed: ParsedTemplate, shown: str, body: dict[str, Any]) -> bool:
    """False for a resource whose Condition is false: CloudFormation does not create it. A
    condition the audit cannot decide is reported, and the resource judged as if created."""
    name = body.get("Condition")
    if name is None:
        return True
    decided = template.condition(name)
    if decided is None:
        parsed.notes.append(_undecided(template, shown, name))
    return decided is not False


def _undecided(template: Scope, shown: str, condition: Any) -> NoteRow:
    return _note(
        template.file,
        template.stack,
        shown,
        "QR900",
        f"resource {shown}: condition {describe(condition)} cannot be evaluated (it depends on a "
        "parameter with no default and no override, or is not defined): judged as if it held",
    )


def _normalized_properties(template: Scope, raw: dict[str, Any]) -> dict[str, Any]:
    """Properties with intrinsics normalized; ``$parameters`` says which came from parameters."""
    properties: dict[str, Any] = {}
    sources: dict[str, str] = {}
    template.take_uses()
    for name, value in raw.items():
        normalized = template.normalize(value)
        uses = template.take_uses()
        if normalized is NO_VALUE:
            continue
        properties[name] = normalized
        if uses:
            sources[name] = ", ".join(uses.values())
    if sources:
        properties[model.PARAMETER_SOURCES] = sources
    return properties
