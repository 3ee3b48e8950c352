"""CloudFormation resources -> the audit's flat rows (resources, keys, edges, exports).

Every dialect ends here: SAM is expanded to plain CloudFormation first (``sam.py``), and cloud
assemblies are plain CloudFormation with stack names from their manifest (``cdk_assembly.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from constructs_lib import limits
from constructs_lib.audit import model
from constructs_lib.audit.intrinsics import (
    UNKNOWN_PIECE,
    Scope,
    describe,
    function_name_from,
    is_ref,
    queue_name_from,
    unresolved,
)
from constructs_lib.audit.model import (
    EdgeRow,
    ExportRow,
    FileRow,
    KeyRow,
    ParsedTemplate,
    ResourceRow,
)
from constructs_lib.audit.parsing import TemplateError

# An alias or a version names a function: whatever invokes one invokes that function (SAM's
# AutoPublishAlias points event source mappings at an alias).
_FUNCTION_POINTERS = ("AWS::Lambda::Alias", "AWS::Lambda::Version")
_KIND_TYPES = {"queue": (model.QUEUE,), "function": (model.FUNCTION, *_FUNCTION_POINTERS)}


def extract(
    file: str, stack: str, document: dict[str, Any], origins: Mapping[str, str] | None = None
) -> ParsedTemplate:
    """One template's rows. ``origins`` maps generated logical ids to the ids a person wrote
    (SAM's ``Function.Event``), so findings name what the author can find in the file."""
    origins = origins or {}
    resources = document["Resources"]
    parameters = document.get("Parameters")
    mappings = document.get("Mappings")
    template = Scope(
        file=file,
        stack=stack,
        types={
            str(lid): str(body.get("Type", "")) if isinstance(body, dict) else ""
            for lid, body in resources.items()
        },
        parameters=set(parameters) if isinstance(parameters, dict) else set(),
        mappings=mappings if isinstance(mappings, dict) else {},
    )
    parsed = ParsedTemplate(FileRow(file, stack, "ok", "", 0))
    count = 0
    for logical_id, body in resources.items():
        if not isinstance(body, dict) or body.get("Type") not in model.AUDITED_TYPES:
            continue
        raw_properties = body.get("Properties") or {}
        if not isinstance(raw_properties, dict):
            raise TemplateError(f"resource {logical_id}: Properties is not a mapping")
        properties = template.normalize(raw_properties)
        resource_uid = model.uid(file, str(logical_id))
        kind = body["Type"]
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
        elif kind == model.ALARM:
            for metric, queue in _alarm_metrics(properties):
                _edge(template, parsed, resource_uid, model.ROLE_ALARM, metric, "queue", queue)
        elif kind == model.QUEUE_POLICY:
            queues = properties.get("Queues")
            for queue in queues if isinstance(queues, list) else [queues]:
                _edge(template, parsed, resource_uid, model.ROLE_POLICY, "", "queue", queue)
        parsed.resources.append(
            ResourceRow(
                resource_uid,
                file,
                stack,
                origins.get(str(logical_id), str(logical_id)),
                kind,
                json.dumps(properties, sort_keys=True, default=str),
            )
        )
        count += 1
    parsed.file = FileRow(file, stack, "ok", "", count)
    _function_pointer_keys(template, resources, parsed)
    outputs = document.get("Outputs")
    if isinstance(outputs, dict):
        for output in outputs.values():
            _export_row(template, parsed, output)
    return parsed


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


def _alarm_metrics(properties: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(metric name, QueueName dimension value) for each SQS metric the alarm watches."""
    metrics = [properties]
    for query in properties.get("Metrics") or []:
        if isinstance(query, dict) and isinstance(query.get("MetricStat"), dict):
            metric = query["MetricStat"].get("Metric")
            if isinstance(metric, dict):
                metrics.append(metric)
    for metric in metrics:
        if metric.get("Namespace") != limits.SQS_METRIC_NAMESPACE:
            continue
        name = metric.get("MetricName")
        dimensions = metric.get("Dimensions")
        if not isinstance(name, str) or not isinstance(dimensions, list):
            continue
        for dimension in dimensions:
            if isinstance(dimension, dict) and dimension.get("Name") == limits.SQS_METRIC_DIMENSION:
                yield name, dimension.get("Value")


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


def _export_row(template: Scope, parsed: ParsedTemplate, output: Any) -> None:
    if not isinstance(output, dict) or not isinstance(output.get("Export"), dict):
        return
    name = template.normalize(output["Export"].get("Name"))
    if not isinstance(name, str) or UNKNOWN_PIECE in name:
        return
    value = template.normalize(output.get("Value"))
    queue = target_key(template, "queue", value) or ""
    function = target_key(template, "function", value) or ""
    parsed.exports.append(ExportRow(template.file, name, queue, function))
