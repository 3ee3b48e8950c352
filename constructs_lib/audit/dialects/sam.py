"""SAM templates (``Transform: AWS::Serverless-2016-10-31``), expanded to plain CloudFormation.

SAM is not re-implemented here: ``aws-sam-translator``, the library the SAM CLI and cfn-lint use,
expands the template, and the result is read like any other CloudFormation template. An
``AWS::Serverless::Function`` with an ``SQS`` event becomes an ``AWS::Lambda::Function`` and an
``AWS::Lambda::EventSourceMapping``, so the consumer rules (QR006-QR008, QR014-QR019, QR022,
QR026) judge it with the function's timeout (its own, else ``Globals.Function.Timeout``, else
Lambda's 3 s).

The translator runs offline and needs no AWS credentials or configuration:

- it is given a fixed region (``PSEUDO_PARAMETERS``) through a stand-in for a boto3 session, so
  it never builds a real session (which would read the environment and configuration files);
- it is given no managed-policy lookup: policy names resolve from the map it bundles, or stay
  names (an IAM detail the audit does not judge);
- local artifact paths (``CodeUri``, ``ContentUri``, ``DefinitionUri``, ...) become placeholder
  S3 URIs, and Serverless Application Repository locations a placeholder template URL, so it
  never asks S3 or the Serverless Application Repository for anything; the client it would use
  for the latter refuses to be built.

Findings keep the ids the author wrote: the translator keeps the ids of queues and functions, and
``origins`` maps what it generates (``<Function><Event>``) back to ``Function.Event``. A template
the translator rejects is still judged on its other resources, with a QR900 note saying why.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.dialects import cloudformation
from constructs_lib.audit.model import NoteRow, ParsedTemplate
from constructs_lib.audit.parameters import PSEUDO_PARAMETERS

TRANSFORM = "AWS::Serverless-2016-10-31"
SERVERLESS_PREFIX = "AWS::Serverless::"
FUNCTION = "AWS::Serverless::Function"
REGION = PSEUDO_PARAMETERS["AWS::Region"]
PLACEHOLDER_S3_URI = "s3://placeholder-bucket/placeholder-key"
PLACEHOLDER_IMAGE_URI = "123456789012.dkr.ecr.us-east-1.amazonaws.com/placeholder:latest"
PLACEHOLDER_TEMPLATE_URL = "https://placeholder-bucket.s3.amazonaws.com/placeholder.template"
PLACEHOLDER_ALIAS = "live"
PROBLEM_MAX_CHARS = 300

# Properties that name a local artifact before `sam package`, by SAM resource type.
_ARTIFACT_PROPERTIES: dict[str, tuple[str, ...]] = {
    FUNCTION: ("CodeUri",),
    "AWS::Serverless::LayerVersion": ("ContentUri",),
    "AWS::Serverless::Api": ("DefinitionUri",),
    "AWS::Serverless::HttpApi": ("DefinitionUri",),
    "AWS::Serverless::StateMachine": ("DefinitionUri",),
    "AWS::Serverless::GraphQLApi": ("SchemaUri",),
}


@dataclass(frozen=True)
class Expansion:
    """The CloudFormation a SAM template stands for, or its non-SAM part and why."""

    document: dict[str, Any]
    origins: dict[str, str]  # generated logical id -> the id the author wrote ("Function.Event")
    problem: str | None = None  # why the translator rejected the template (None: it did not)


class _Region:
    """What the translator reads from a boto3 session: the region, and nothing else."""

    region_name = REGION


def is_sam(document: Mapping[str, Any]) -> bool:
    transform = document.get("Transform")
    transforms = transform if isinstance(transform, list) else [transform]
    return TRANSFORM in transforms


def default_parameter_values(
    document: Mapping[str, Any], overrides: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The template's parameter values (defaults, then overrides) and the pseudo parameters'
    placeholders."""
    values: dict[str, Any] = {}
    parameters = document.get("Parameters")
    if isinstance(parameters, dict):
        for name, parameter in parameters.items():
            if isinstance(parameter, dict) and "Default" in parameter:
                values[str(name)] = parameter["Default"]
    values.update(PSEUDO_PARAMETERS)
    values.update(overrides or {})
    return values


def extract(
    file: str,
    stack: str,
    document: dict[str, Any],
    overrides: Mapping[str, str] | None = None,
) -> ParsedTemplate:
    """A SAM template's rows: its expansion's, plus a QR900 note if it could not be expanded."""
    expansion = expand(document, default_parameter_values(document, overrides))
    parsed = cloudformation.extract(
        file, stack, expansion.document, origins=expansion.origins, overrides=overrides
    )
    if expansion.problem is not None:
        parsed.notes.append(NoteRow(file, stack, "", "", rules.UNRESOLVED_RULE, expansion.problem))
    return parsed


def expand(document: Mapping[str, Any], parameter_values: Mapping[str, Any]) -> Expansion:
    """SAM -> CloudFormation with ``aws-sam-translator``; never raises for a bad template."""
    origins = _event_origins(document)
    values = dict(parameter_values)
    sam_template = copy.deepcopy(dict(document))
    try:
        _offline(sam_template, values)
        expanded = _translate(sam_template, values)
    except Exception as error:  # the translator's verdict, or a shape it did not foresee
        return Expansion(_without_sam(document), origins, _problem(error, origins))
    resources = expanded.get("Resources")
    if not isinstance(resources, dict):
        return Expansion(_without_sam(document), origins, "SAM expansion left no Resources")
    origins.update(_generated_origins(document, resources))
    return Expansion(expanded, origins)


def _translate(sam_template: dict[str, Any], parameter_values: dict[str, Any]) -> dict[str, Any]:
    # Imported here: only SAM templates pay for it, and the in-app plugin does not need it.
    from samtranslator.metrics.metrics import DummyMetricsPublisher, Metrics  # type: ignore[import-untyped]
    from samtranslator.parser.parser import Parser  # type: ignore[import-untyped]
    from samtranslator.plugins.application.serverless_app_plugin import ServerlessAppPlugin  # type: ignore[import-untyped]
    from samtranslator.translator import translator as translator_module  # type: ignore[import-untyped]
    from samtranslator.translator.translator import Translator  # type: ignore[import-untyped]

    _reuse_policy_templates(translator_module)

    metrics = Metrics("ServerlessTransform", DummyMetricsPublisher())
    translator = Translator(
        managed_policy_map={},
        sam_parser=Parser(),
        plugins=[ServerlessAppPlugin(sar_client_creator=_no_network)],
        boto_session=_Region(),
        metrics=metrics,
    )
    try:
        result: dict[str, Any] = translator.translate(
            sam_template=sam_template,
            parameter_values=parameter_values,
            get_managed_policy_map=None,
        )
    finally:
        metrics.publish()  # to the dummy publisher: nothing leaves the process
    return result


def _reuse_policy_templates(translator_module: Any) -> None:
    """Build SAM's policy-template plugin once per process, not once per template.

    The translator makes it anew for every template and validates its bundled policy templates
    against a JSON schema each time: about 90% of a small template's translation. The plugin
    holds nothing but those templates, so one instance serves every translation.
    """
    factory = translator_module.make_policy_template_for_function_plugin
    if not hasattr(factory, "cache_info"):
        translator_module.make_policy_template_for_function_plugin = functools.cache(factory)


def _no_network() -> Any:
    raise RuntimeError("the audit does not call the Serverless Application Repository")


def _offline(sam_template: dict[str, Any], parameter_values: dict[str, Any]) -> None:
    """Placeholders for what the translator would otherwise fetch, or reject as a local path."""
    resources = sam_template.get("Resources")
    globals_ = sam_template.get("Globals")
    function_globals = globals_.get("Function") if isinstance(globals_, dict) else None
    bodies = [b for b in (resources or {}).values() if isinstance(b, dict)]
    if isinstance(function_globals, dict):
        _placeholder_uri(function_globals, "CodeUri")
        _alias_parameter(function_globals, parameter_values)
    for body in bodies:
        kind = body.get("Type")
        properties = body.get("Properties")
        if not isinstance(kind, str) or not isinstance(properties, dict):
            continue
        for name in _ARTIFACT_PROPERTIES.get(kind, ()):
            _placeholder_uri(properties, name)
        if kind == FUNCTION:
            _alias_parameter(properties, parameter_values)
            if properties.get("PackageType") == "Image":
                properties.pop("CodeUri", None)
                if not isinstance(properties.get("ImageUri"), str):
                    properties["ImageUri"] = PLACEHOLDER_IMAGE_URI
            if isinstance(properties.get("AutoPublishCodeSha256"), dict):
                properties["AutoPublishCodeSha256"] = "placeholder"
        elif kind == "AWS::Serverless::Application" and isinstance(
            properties.get("Location"), dict
        ):
            properties["Location"] = PLACEHOLDER_TEMPLATE_URL


def _placeholder_uri(properties: dict[str, Any], name: str) -> None:
    value = properties.get(name)
    if value is None:
        return
    if isinstance(value, str) and value.startswith("s3://"):
        return
    if isinstance(value, dict) and "Bucket" in value and "Key" in value:
        return  # already a location in S3
    properties[name] = PLACEHOLDER_S3_URI  # a local path, or a Ref/Sub to one


def _alias_parameter(properties: dict[str, Any], parameter_values: dict[str, Any]) -> None:
    """``AutoPublishAlias: !Ref Stage`` with no value for ``Stage``: the name does not matter."""
    alias = properties.get("AutoPublishAlias")
    if isinstance(alias, dict) and isinstance(alias.get("Ref"), str):
        parameter_values.setdefault(alias["Ref"], PLACEHOLDER_ALIAS)


def _problem(error: Exception, origins: Mapping[str, str]) -> str:
    if isinstance(error, ImportError):
        return (
            "SAM template not expanded, so its AWS::Serverless resources are not judged: "
            'aws-sam-translator is not installed (pip install "constructs-lib[audit]")'
        )
    causes = getattr(error, "causes", None)
    if causes:
        messages = [str(getattr(cause, "message", cause)) for cause in causes]
    else:
        messages = [f"{type(error).__name__}: {error}"]
    text = "; ".join(" ".join(m.split()) for m in messages)
    for generated, written in origins.items():  # "[WorkerOrders]" -> "[Worker.Orders]"
        text = text.replace(f"[{generated}]", f"[{written}]")
    if len(text) > PROBLEM_MAX_CHARS:
        text = text[: PROBLEM_MAX_CHARS - 3] + "..."
    return (
        "SAM transform rejected by aws-sam-translator, so the template's AWS::Serverless "
        f"resources are not judged: {text}"
    )


def _without_sam(document: Mapping[str, Any]) -> dict[str, Any]:
    """The template without its SAM parts: its other resources are still judged."""
    result = {k: v for k, v in document.items() if k not in ("Transform", "Globals")}
    resources = document.get("Resources")
    if isinstance(resources, dict):
        result["Resources"] = {
            logical_id: body
            for logical_id, body in resources.items()
            if not (
                isinstance(body, dict)
                and isinstance(body.get("Type"), str)
                and body["Type"].startswith(SERVERLESS_PREFIX)
            )
        }
    return result


def _serverless(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The SAM resources the author wrote: logical id -> properties."""
    resources = document.get("Resources")
    result: dict[str, dict[str, Any]] = {}
    for logical_id, body in (resources if isinstance(resources, dict) else {}).items():
        if isinstance(body, dict) and str(body.get("Type", "")).startswith(SERVERLESS_PREFIX):
            properties = body.get("Properties")
            result[str(logical_id)] = properties if isinstance(properties, dict) else {}
    return result


def _event_origins(document: Mapping[str, Any]) -> dict[str, str]:
    """``<Function><Event>`` (the id SAM gives an event's resource) -> ``Function.Event``."""
    origins: dict[str, str] = {}
    for logical_id, properties in _serverless(document).items():
        events = properties.get("Events")
        if isinstance(events, dict):
            for event in events:
                origins[f"{logical_id}{event}"] = f"{logical_id}.{event}"
    return origins


def _generated_origins(document: Mapping[str, Any], expanded: Mapping[str, Any]) -> dict[str, str]:
    """Every other generated resource -> the SAM resource (and property or event) behind it:
    ``FnEvQueue`` (an SNS event's queue) -> ``Fn.Ev``, ``FnEventInvokeConfigOnFailureQueue`` ->
    ``Fn.EventInvokeConfig``."""
    original = document.get("Resources")
    written = set(original) if isinstance(original, dict) else set()
    serverless = _serverless(document)
    events = _event_origins(document)
    origins: dict[str, str] = {}
    for generated in expanded:
        if generated in written or generated in events:
            continue
        event = _longest_prefix(generated, events)
        if event is not None:
            origins[generated] = events[event]
            continue
        owner = _longest_prefix(generated, serverless)
        if owner is None:
            continue
        prop = _longest_prefix(generated.removeprefix(owner), serverless[owner])
        origins[generated] = f"{owner}.{prop}" if prop else owner
    return origins


def _longest_prefix(text: str, candidates: Mapping[str, Any]) -> str | None:
    matches = [c for c in candidates if c and text.startswith(c)]
    return max(matches, key=len) if matches else None
