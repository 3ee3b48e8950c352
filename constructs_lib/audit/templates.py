"""CloudFormation templates (JSON or YAML, files or cloud assemblies) -> flat audit rows.

Within one template, intrinsic functions are normalized: ``Ref``/``Fn::GetAtt`` to a resource
become ``{"$ref": "local:<file>#<id>"}``, ``Fn::ImportValue`` becomes ``{"$ref": "export:<name>"}``,
``Fn::Sub``/``Fn::Join``/``Fn::Select``/``Fn::FindInMap`` become strings where their pieces are
known, and anything else becomes ``{"$unresolved": ...}``. References between templates are
resolved later, by joins on the keys this module emits (see ``model.py``).

YAML is imported only when a YAML file is read: the in-app plugin runs where only aws-cdk-lib is.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from constructs_lib import limits
from constructs_lib.audit import model
from constructs_lib.audit.model import EdgeRow, ExportRow, FileRow, KeyRow, ResourceRow

UNKNOWN_PIECE = "${?}"  # stands for an unknown part of a string (a region, a parameter, ...)
_NO_VALUE = object()  # AWS::NoValue: the property is removed
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_KNOWN_PSEUDO = {"AWS::StackName"}

_TEMPLATE_SUFFIXES = (".template.json", ".template.yaml", ".template.yml", ".template")
_DATA_SUFFIXES = (".json", ".yaml", ".yml")
# Files in a project or a cloud assembly that are never CloudFormation templates.
_NOT_TEMPLATES = {
    "manifest.json",
    "tree.json",
    "cdk.json",
    "cdk.context.json",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
}
_SKIPPED_DIRS = {"node_modules", ".git", ".venv", "__pycache__"}


# --- Finding the input files --------------------------------------------------------------------


def stack_name_for(path: str) -> str:
    """The stack name of a template outside a cloud assembly: its file name without suffixes."""
    name = os.path.basename(path)
    for suffix in (*_TEMPLATE_SUFFIXES, *_DATA_SUFFIXES):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def discover(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Every template under ``paths`` as ``(file, stack name)``, in a stable order.

    A folder with a ``manifest.json`` is read as a cloud assembly (stack names from the
    manifest, nested stage assemblies followed); other folders are walked for JSON and YAML.
    A path that does not exist is kept, so that it is reported (QR901) rather than dropped.
    """
    found: dict[str, str] = {}
    for path in paths:
        if os.path.isdir(path):
            for file, stack in _discover_dir(path):
                found.setdefault(file, stack)
        else:
            found.setdefault(path, stack_name_for(path))
    return sorted(found.items())


def _discover_dir(folder: str) -> list[tuple[str, str]]:
    manifest = os.path.join(folder, "manifest.json")
    if os.path.isfile(manifest):
        assembly = _read_assembly(folder, manifest)
        if assembly is not None:
            return assembly
    result: list[tuple[str, str]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("asset."))
        for name in sorted(files):
            if name in _NOT_TEMPLATES or name.endswith(".assets.json"):
                continue
            if name.endswith(_TEMPLATE_SUFFIXES) or name.endswith(_DATA_SUFFIXES):
                path = os.path.join(root, name)
                result.append((path, stack_name_for(path)))
    return result


def _read_assembly(folder: str, manifest_path: str) -> list[tuple[str, str]] | None:
    try:
        with open(manifest_path, encoding="utf-8") as handle:
            manifest = json.load(handle)
        artifacts = manifest.get("artifacts", {})
    except (OSError, ValueError, AttributeError):
        return None  # not a readable manifest: walk the folder instead
    result: list[tuple[str, str]] = []
    for artifact_id, artifact in sorted(artifacts.items()):
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "aws:cloudformation:stack":
            template = properties.get("templateFile")
            if template:
                stack = properties.get("stackName") or artifact.get("displayName") or artifact_id
                result.append((os.path.join(folder, template), str(stack)))
        elif artifact.get("type") == "cdk:cloud-assembly":
            directory = properties.get("directoryName")
            if directory:
                result.extend(_discover_dir(os.path.join(folder, directory)))
    return result


# --- Reading a file -------------------------------------------------------------------------------


class TemplateError(ValueError):
    """A file that is not a CloudFormation template we can read."""


def load_document(file: str, data: bytes) -> dict[str, Any]:
    """Bytes -> template dict. JSON by default; YAML (with short-form tags) when it is not JSON."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TemplateError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error
    is_yaml = file.endswith((".yaml", ".yml"))
    document: Any
    if not is_yaml:
        try:
            document = json.loads(text)
        except ValueError as error:
            if text.lstrip().startswith(("{", "[")) or file.endswith(".json"):
                raise TemplateError(f"invalid JSON: {error}") from error
            is_yaml = True
    if is_yaml:
        document = _load_yaml(text)
    if not isinstance(document, dict):
        raise TemplateError("not a CloudFormation template: the document is not a mapping")
    resources = document.get("Resources")
    if not isinstance(resources, dict):
        raise TemplateError("not a CloudFormation template: no Resources mapping")
    return document


def _load_yaml(text: str) -> Any:
    import yaml  # only YAML inputs need it

    loader_base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(loader_base):  # type: ignore[misc]
        """Safe YAML with CloudFormation's short-form tags (!Ref, !GetAtt, !Sub, ...)."""

    def short_form(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if suffix == "Ref":
            return {"Ref": value}
        if suffix == "Condition":
            return {"Condition": value}
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {f"Fn::{suffix}": value}

    def timestamp_as_text(loader: Any, node: Any) -> str:
        # AWSTemplateFormatVersion "2010-09-09" is a date to YAML; CloudFormation means text.
        return str(loader.construct_scalar(node))

    Loader.add_multi_constructor("!", short_form)
    Loader.add_constructor("tag:yaml.org,2002:timestamp", timestamp_as_text)
    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        raise TemplateError(f"invalid YAML: {error}".replace("\n", " ")) from error


# --- Normalizing intrinsic functions ------------------------------------------------------------


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
class _Template:
    file: str
    stack: str
    types: dict[str, str]  # logical id -> resource type, for every resource
    parameters: set[str]
    mappings: dict[str, Any]
    refs_to_wrong_type: list[str] = field(default_factory=list)

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
                if normalized is not _NO_VALUE:
                    result[key] = normalized
            return result
        if isinstance(value, list):
            return [n for n in (self.normalize(item) for item in value) if n is not _NO_VALUE]
        if isinstance(value, datetime.date):
            return value.isoformat()
        return value

    def resource_ref(self, logical_id: str, attribute: str, original: Any) -> dict[str, Any]:
        return {
            "$ref": model.local_key(model.uid(self.file, logical_id)),
            "$attr": attribute,
            "$text": json.dumps(original, sort_keys=True),
        }

    def ref(self, argument: Any, original: Any) -> Any:
        if not isinstance(argument, str):
            return unresolved(original)
        if argument in self.types:
            return self.resource_ref(argument, "Ref", original)
        if argument == "AWS::NoValue":
            return _NO_VALUE
        if argument == "AWS::StackName":
            return self.stack
        return unresolved(original)  # parameters and account-specific pseudo parameters

    def get_att(self, argument: Any, original: Any) -> Any:
        if isinstance(argument, str):
            argument = argument.split(".", 1)
        if (
            isinstance(argument, list)
            and len(argument) == 2
            and isinstance(argument[0], str)
            and argument[0] in self.types
        ):
            return self.resource_ref(argument[0], str(argument[1]), original)
        return unresolved(original)

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
        if name == "AWS::StackName":
            return self.stack
        logical_id, _, attribute = name.partition(".")
        if logical_id in self.types:
            return self.resource_ref(logical_id, attribute or "Ref", original)
        return None

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


_INTRINSICS: dict[str, Callable[[_Template, Any, Any], Any]] = {
    "Ref": _Template.ref,
    "Fn::GetAtt": _Template.get_att,
    "Fn::ImportValue": _Template.import_value,
    "Fn::Sub": _Template.sub,
    "Fn::Join": _Template.join,
    "Fn::Select": _Template.select,
    "Fn::FindInMap": _Template.find_in_map,
    "Condition": lambda _t, _a, original: unresolved(original),
}


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


# --- One template -> rows ------------------------------------------------------------------------


@dataclass
class ParsedTemplate:
    file: FileRow
    resources: list[ResourceRow] = field(default_factory=list)
    keys: list[KeyRow] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)
    exports: list[ExportRow] = field(default_factory=list)


_KIND_TYPES = {"queue": model.QUEUE, "function": model.FUNCTION}


def parse_template(
    file: str, stack: str, data: bytes | None, read_error: str = ""
) -> ParsedTemplate:
    """Parse one file into rows. Never raises: a bad file becomes an "unparseable" file row."""
    if data is None:
        return ParsedTemplate(FileRow(file, stack, "unparseable", read_error or "unreadable", 0))
    try:
        return _parse(file, stack, load_document(file, data))
    except TemplateError as error:
        return ParsedTemplate(FileRow(file, stack, "unparseable", str(error), 0))
    except Exception as error:  # a template shape no one foresaw must not stop the fleet
        message = f"could not interpret the template: {type(error).__name__}: {error}"
        return ParsedTemplate(FileRow(file, stack, "unparseable", message, 0))


def read_and_parse(file: str, stack: str) -> ParsedTemplate:
    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return parse_template(file, stack, None, f"cannot read the file: {error.strerror}")
    return parse_template(file, stack, data)


def _parse(file: str, stack: str, document: dict[str, Any]) -> ParsedTemplate:
    resources = document["Resources"]
    parameters = document.get("Parameters")
    mappings = document.get("Mappings")
    template = _Template(
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
                str(logical_id),
                kind,
                json.dumps(properties, sort_keys=True, default=str),
            )
        )
        count += 1
    parsed.file = FileRow(file, stack, "ok", "", count)
    outputs = document.get("Outputs")
    if isinstance(outputs, dict):
        for output in outputs.values():
            _export_row(template, parsed, output)
    return parsed


def _json_property(value: Any, template: _Template) -> Any:
    """RedrivePolicy and RedriveAllowPolicy are CloudFormation Json: an object or a JSON string."""
    if isinstance(value, str):
        try:
            return template.normalize(json.loads(value))
        except ValueError:
            return unresolved(value)
    return value


def _queue_rows(
    template: _Template, resource_uid: str, properties: dict[str, Any], parsed: ParsedTemplate
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


def target_key(template: _Template, kind: str, value: Any, only_sqs: bool = False) -> str | None:
    """The key a reference resolves by, "unresolved:..." if unknowable, None if not a target."""
    if is_ref(value):
        key = str(value["$ref"])
        if key.startswith("local:"):
            logical_id = key.rsplit("#", 1)[-1]
            if template.types.get(logical_id) != _KIND_TYPES[kind]:
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


def _edge(
    template: _Template,
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


def _export_row(template: _Template, parsed: ParsedTemplate, output: Any) -> None:
    if not isinstance(output, dict) or not isinstance(output.get("Export"), dict):
        return
    name = template.normalize(output["Export"].get("Name"))
    if not isinstance(name, str) or UNKNOWN_PIECE in name:
        return
    value = template.normalize(output.get("Value"))
    queue = target_key(template, "queue", value) or ""
    function = target_key(template, "function", value) or ""
    parsed.exports.append(ExportRow(template.file, name, queue, function))
