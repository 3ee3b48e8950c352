"""CloudFormation resources -> the audit's flat rows (resources, keys, edges, exports).

Every dialect ends here: SAM is expanded to plain CloudFormation first (``sam.py``), and cloud
assemblies are plain CloudFormation with stack names from their manifest (``cdk_assembly.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from constructs_lib.audit import model, rules
from constructs_lib.audit.accept import suppressions
from constructs_lib.audit.model import (
    EdgeRow,
    ExportRow,
    FileRow,
    KeyRow,
    NestedRow,
    NoteRow,
    ParsedTemplate,
    ResourceRow,
)
from constructs_lib.audit.parse import parameters
from constructs_lib.audit.parse.dialects import composite_alarms, queue_targets
from constructs_lib.audit.parse.dialects.cdk_assembly import ASSET_PATH_METADATA
from constructs_lib.audit.parse.dialects.queue_targets import lookup
from constructs_lib.audit.parse.intrinsics import (
    NO_VALUE,
    UNKNOWN_PIECE,
    Scope,
    describe,
    function_name_from,
    is_ref,
    queue_name_from,
    unresolved,
)
from constructs_lib.audit.parse.positions import Spots, source_marker

# An alias or a version names a function: whatever invokes one invokes that function (SAM's
# AutoPublishAlias points event source mappings at an alias).
_FUNCTION_POINTERS = ("AWS::Lambda::Alias", "AWS::Lambda::Version")
_KIND_TYPES = {"queue": (model.QUEUE,), "function": (model.FUNCTION, *_FUNCTION_POINTERS)}


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
    ``spots``, where each resource is written (``positions.py``), so they point at its line."""
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
    _function_pointer_keys(template, resources, parsed)
    _output_rows(template, parsed, document.get("Outputs"))
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
        nested=_nested_children(file, resources),
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
    if body["Type"] == NESTED_STACK and _deployed(template, parsed, shown, body):
        _nested_parameters(template, parsed, logical_id, body)
    if body["Type"] not in model.AUDITED_TYPES or not _deployed(template, parsed, shown, body):
        return False
    properties = _judged_properties(template, parsed, shown, body)
    if properties is None:
        return False
    if source is not None:
        properties[model.SOURCE] = source
    resource_uid = model.uid(file, logical_id)
    kind = body["Type"]
    _kind_rows(template, parsed, resource_uid, kind, properties)
    _edges_to_queues(template, parsed, resource_uid, kind, shown, properties)
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


def _kind_rows(
    template: Scope,
    parsed: ParsedTemplate,
    resource_uid: str,
    kind: str,
    properties: dict[str, Any],
) -> None:
    """The rows one kind of resource has: a queue's and a function's keys (and a queue's
    redrive edges), an event source mapping's and a pipe's edges."""
    if kind == model.QUEUE:
        _queue_rows(template, resource_uid, properties, parsed)
    elif kind == model.FUNCTION:
        parsed.keys.append(KeyRow(resource_uid, model.local_key(resource_uid)))
        name = properties.get("FunctionName")
        if isinstance(name, str) and UNKNOWN_PIECE not in name:
            parsed.keys.append(KeyRow(resource_uid, model.function_key(name)))
    elif kind == model.EVENT_SOURCE_MAPPING:
        _edge(
            template,
            parsed,
            resource_uid,
            model.ROLE_EVENT_SOURCE,
            "",
            "queue",
            properties.get("EventSourceArn"),
            only_sqs=True,
        )
        _edge(
            template,
            parsed,
            resource_uid,
            model.ROLE_FUNCTION,
            "",
            "function",
            properties.get("FunctionName"),
        )
    elif kind == model.PIPE:
        _pipe_rows(template, parsed, resource_uid, properties)


def _edges_to_queues(
    template: Scope,
    parsed: ParsedTemplate,
    resource_uid: str,
    kind: str,
    shown: str,
    properties: dict[str, Any],
) -> None:
    """Edges from a resource to the queues it sends failures or messages to, watches (an alarm)
    or guards (a queue policy)."""
    for service, target in queue_targets.dead_letter_targets(kind, shown, properties):
        _edge(
            template,
            parsed,
            resource_uid,
            model.ROLE_FEEDS_DLQ,
            service,
            "queue",
            target,
            only_sqs=True,
        )
    for service, target in queue_targets.producer_targets(kind, properties):
        if service == model.PRODUCER_EVENTBRIDGE and not _names_a_queue(template, target):
            continue  # a target of another kind, or one that cannot be known to be a queue
        _edge(
            template,
            parsed,
            resource_uid,
            model.ROLE_PRODUCER,
            service,
            "queue",
            target,
            only_sqs=True,
        )
    if kind == model.ALARM:
        for metric, queue in queue_targets.alarm_metrics(properties):
            _edge(template, parsed, resource_uid, model.ROLE_ALARM, metric, "queue", queue)
    elif kind == model.QUEUE_POLICY:
        queues = properties.get("Queues")
        for queue in queues if isinstance(queues, list) else [queues]:
            _edge(template, parsed, resource_uid, model.ROLE_POLICY, "", "queue", queue)


def _output_rows(template: Scope, parsed: ParsedTemplate, outputs: Any) -> None:
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


def _json_property(value: Any, template: Scope) -> Any:
    """RedrivePolicy and RedriveAllowPolicy are CloudFormation Json: an object or a JSON string."""
    if isinstance(value, str):
        try:
            return template.normalize(json.loads(value))
        except ValueError:
            return unresolved(value)
    return value


def _queue_rows(
    template: Scope, resource_uid: str, properties: dict[str, Any], parsed: ParsedTemplate
) -> None:
    parsed.keys.append(KeyRow(resource_uid, model.local_key(resource_uid)))
    name = properties.get("QueueName")
    if isinstance(name, str) and UNKNOWN_PIECE not in name:
        parsed.keys.append(KeyRow(resource_uid, model.queue_key(name)))
    for prop in ("RedrivePolicy", "RedriveAllowPolicy"):
        if prop in properties:
            properties[prop] = _json_property(properties[prop], template)
    redrive = properties.get("RedrivePolicy")
    if isinstance(redrive, dict) and "deadLetterTargetArn" in redrive:
        _edge(
            template,
            parsed,
            resource_uid,
            model.ROLE_DLQ,
            "",
            "queue",
            redrive["deadLetterTargetArn"],
        )
    allow = properties.get("RedriveAllowPolicy")
    if isinstance(allow, dict) and isinstance(allow.get("sourceQueueArns"), list):
        for source in allow["sourceQueueArns"]:
            _edge(template, parsed, resource_uid, model.ROLE_ALLOW_SOURCE, "", "queue", source)


def target_key(template: Scope, kind: str, value: Any, only_sqs: bool = False) -> str | None:
    """The key a reference resolves by, "unresolved:..." if unknowable, None if not a target."""
    if is_ref(value):
        key = str(value["$ref"])
        if key.startswith("local:"):
            logical_id = key.rsplit("#", 1)[-1]
            if template.types.get(logical_id) not in _KIND_TYPES[kind]:
                return None  # e.g. an event source mapping on a Kinesis stream
        return key
    if isinstance(value, str):
        if kind == "queue":
            if only_sqs and value.split(":")[2:3] != ["sqs"]:
                return None  # another event source type (Kinesis, DynamoDB, Kafka, ...)
            name = queue_name_from(value)
        else:
            name = function_name_from(value)
        if name is None:
            return f"unresolved:{value}"
        return model.queue_key(name) if kind == "queue" else model.function_key(name)
    if value is None:
        return None
    return f"unresolved:{describe(value)}"


def _function_pointer_keys(
    template: Scope, resources: dict[str, Any], parsed: ParsedTemplate
) -> None:
    """The function behind each local alias or version also answers to that alias's key."""
    for pointer in resources:
        target = str(pointer)
        for _hop in _FUNCTION_POINTERS:  # an alias may name a version of the function
            body = resources.get(target)
            if not isinstance(body, dict) or body.get("Type") not in _FUNCTION_POINTERS:
                break
            properties = body.get("Properties")
            name = properties.get("FunctionName") if isinstance(properties, dict) else None
            name = template.normalize(name)
            if not (is_ref(name) and str(name["$ref"]).startswith("local:")):
                break
            target = str(name["$ref"]).rsplit("#", 1)[-1]
        if target != str(pointer) and template.types.get(target) == model.FUNCTION:
            function_uid = model.uid(template.file, target)
            pointer_key = model.local_key(model.uid(template.file, str(pointer)))
            parsed.keys.append(KeyRow(function_uid, pointer_key))


def _edge(
    template: Scope,
    parsed: ParsedTemplate,
    from_uid: str,
    role: str,
    detail: str,
    kind: str,
    value: Any,
    only_sqs: bool = False,
) -> None:
    key = target_key(template, kind, value, only_sqs)
    if key is not None:
        parsed.edges.append(EdgeRow(from_uid, role, detail, kind, key, describe(value)))


def _exported(template: Scope, parsed: ParsedTemplate, name: str, raw_value: Any) -> None:
    value = template.normalize(raw_value)
    queue = target_key(template, "queue", value) or ""
    function = target_key(template, "function", value) or ""
    if queue or function:
        parsed.exports.append(ExportRow(template.file, name, queue, function))


NESTED_STACK = "AWS::CloudFormation::Stack"


def _nested_children(file: str, resources: dict[str, Any]) -> dict[str, str]:
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


def _nested_parameters(
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


def _export_row(template: Scope, parsed: ParsedTemplate, output: Any) -> None:
    if not isinstance(output, dict) or not isinstance(output.get("Export"), dict):
        return
    name = template.normalize(output["Export"].get("Name"))
    if isinstance(name, str) and UNKNOWN_PIECE not in name:
        _exported(template, parsed, name, output.get("Value"))


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


def _names_a_queue(template: Scope, target: Any) -> bool:
    """An EventBridge target is a queue when it is a local queue or a literal SQS ARN. A rule
    targets functions, topics, buses and more, so an import or a parameter says nothing."""
    key = target_key(template, "queue", target, only_sqs=True)
    return key is not None and key.startswith(("local:", "queue:"))


def _pipe_rows(
    template: Scope, parsed: ParsedTemplate, resource_uid: str, properties: dict[str, Any]
) -> None:
    """An EventBridge Pipe reading a queue consumes it like an event source mapping; with a
    Lambda target, the function's timeout is what the queue's visibility must cover."""
    target = properties.get("Target")
    properties[model.PIPE_TARGET] = _pipe_target_kind(template, target)
    # The batch settings where the rules read them on an event source mapping.
    batching = lookup(properties, "SourceParameters", "SqsQueueParameters")
    for name in ("BatchSize", "MaximumBatchingWindowInSeconds"):
        if isinstance(batching, dict) and name in batching:
            properties[name] = batching[name]
    _edge(
        template,
        parsed,
        resource_uid,
        model.ROLE_EVENT_SOURCE,
        "",
        "queue",
        properties.get("Source"),
        only_sqs=True,
    )
    reads_queue = target_key(template, "queue", properties.get("Source"), only_sqs=True)
    if reads_queue is not None and properties[model.PIPE_TARGET] != model.PIPE_TARGET_OTHER:
        _edge(template, parsed, resource_uid, model.ROLE_FUNCTION, "", "function", target)


def _pipe_target_kind(template: Scope, target: Any) -> str:
    if is_ref(target) and str(target["$ref"]).startswith("local:"):
        target_type = template.types.get(str(target["$ref"]).rsplit("#", 1)[-1])
        return (
            model.PIPE_TARGET_LAMBDA
            if target_type in _KIND_TYPES["function"]
            else model.PIPE_TARGET_OTHER
        )
    if isinstance(target, str) and target.startswith("arn:"):
        service = target.split(":")[2:3]
        return model.PIPE_TARGET_LAMBDA if service == ["lambda"] else model.PIPE_TARGET_OTHER
    return model.PIPE_TARGET_LAMBDA  # unknown: resolution says so (QR900) if it names nothing
