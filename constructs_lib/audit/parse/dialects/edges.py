"""The keys each resource answers to and the edges from it to the queues and functions it names:
what resolution (``resolve``) joins on.

A queue answers to its local key and its name; a function, or an alias or version of it, likewise.
An edge names its target by the key a reference resolves by (``target_key``): the role of the
edge says what the source does to the target (consumes it, feeds its dead letters, watches it...).
"""

from __future__ import annotations

import json
from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.model import EdgeRow, KeyRow, ParsedTemplate
from constructs_lib.audit.parse.dialects import queue_targets
from constructs_lib.audit.parse.dialects.queue_targets import lookup
from constructs_lib.audit.parse.intrinsics import (
    UNKNOWN_PIECE,
    Scope,
    describe,
    function_name_from,
    is_ref,
    queue_name_from,
    unresolved,
)

# An alias or a version names a function: whatever invokes one invokes that function (SAM's
# AutoPublishAlias points event source mappings at an alias).
_FUNCTION_POINTERS = ("AWS::Lambda::Alias", "AWS::Lambda::Version")
_KIND_TYPES = {"queue": (model.QUEUE,), "function": (model.FUNCTION, *_FUNCTION_POINTERS)}


def kind_rows(
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


def edges_to_queues(
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


def function_pointer_keys(
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
