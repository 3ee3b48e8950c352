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
  for the latter refuses to be built;
- its log lines (``Feature '...' not available in Feature Toggle Config.``, once per template)
  stay in the process: the command's stderr carries only its own progress and errors.

Templates are prepared as the SAM CLI prepares them before the transform (``sam build`` and
``sam deploy`` accept what the translator alone rejects):

- a function with neither ``CodeUri`` nor ``InlineCode`` (nor an image) gets a placeholder code
  location: the CLI defaults ``CodeUri`` to the template's folder at build time;
- ``Fn::Transform: {Name: AWS::Include, Parameters: {Location: <relative path>}}`` is replaced by
  the file it names when that file is readable in a local template's folder or below it
  (``sam_includes``); an include that cannot be read costs the property that holds it, not the
  template: it stays as the translator accepts it or becomes a placeholder, and a QR900 note
  names it;
- a template with ``AWS::Serverless::*`` resources but no ``Transform`` (a partial, a test
  template) is expanded as if it declared ``AWS::Serverless-2016-10-31``, with a QR903 (info)
  saying that CloudFormation would reject it as written.

Findings keep the ids the author wrote: the translator keeps the ids of queues and functions, and
``origins`` maps what it generates (``<Function><Event>``) back to ``Function.Event``. A template
the translator rejects is still judged on its other resources, with a QR900 note saying why.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit import optional, rules
from constructs_lib.audit.inputs import objects
from constructs_lib.audit.model import NoteRow, ParsedTemplate
from constructs_lib.audit.parse.dialects import cloudformation, sam_includes
from constructs_lib.audit.parse.parameters import PSEUDO_PARAMETERS
from constructs_lib.audit.parse.positions import Spot, Spots
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

TRANSFORM = "AWS::Serverless-2016-10-31"
SERVERLESS_PREFIX = "AWS::Serverless::"
FUNCTION = "AWS::Serverless::Function"
REGION = PSEUDO_PARAMETERS["AWS::Region"]
PLACEHOLDER_S3_URI = "s3://placeholder-bucket/placeholder-key"
PLACEHOLDER_IMAGE_URI = "123456789012.dkr.ecr.us-east-1.amazonaws.com/placeholder:latest"
PLACEHOLDER_TEMPLATE_URL = "https://placeholder-bucket.s3.amazonaws.com/placeholder.template"
PLACEHOLDER_ALIAS = "live"
PROBLEM_MAX_CHARS = 300
INCLUDE = sam_includes.INCLUDE
MAX_INCLUDES = sam_includes.MAX_INCLUDES
# The translator's loggers: what they print is for the SAM CLI's users, not the audit's.
_TRANSLATOR_LOGGER = "samtranslator"

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


def declares_transform(document: Mapping[str, Any]) -> bool:
    """Whether the template names the SAM transform (alone or in a list of transforms)."""
    transform = document.get("Transform")
    transforms = transform if isinstance(transform, list) else [transform]
    return TRANSFORM in transforms


def is_sam(document: Mapping[str, Any]) -> bool:
    """Whether the template is expanded with the translator: it names the SAM transform, or it
    has ``AWS::Serverless::*`` resources without it (``missing_transform_note`` says so)."""
    return declares_transform(document) or bool(_serverless(document))


def missing_transform_note(file: str, stack: str) -> NoteRow:
    return NoteRow(
        file,
        stack,
        "",
        "",
        rules.MISSING_TRANSFORM_RULE,
        "the template has AWS::Serverless resources but no Transform: "
        f"{TRANSFORM}; CloudFormation rejects it as written, and the audit judged it as if "
        "it declared the transform",
    )


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
    spots: Spots | None = None,
) -> ParsedTemplate:
    """A SAM template's rows: its expansion's, plus a QR900 note if it could not be expanded and
    a QR903 note if it does not declare the transform. ``spots``: where the author wrote each
    resource; a generated resource is placed at the one it came from (``origins``)."""
    declared = declares_transform(document)
    if not declared:
        document = {**document, "Transform": TRANSFORM}
    local = None if objects.is_object_url(file) else file
    included = sam_includes.prepare_includes(document, local)
    document = included.document
    expansion = expand(document, default_parameter_values(document, overrides))
    parsed = cloudformation.extract(
        file,
        stack,
        expansion.document,
        origins=expansion.origins,
        overrides=overrides,
        spots=_written_spots(spots or {}, expansion.document, expansion.origins),
    )
    if not declared:
        parsed.notes.append(missing_transform_note(file, stack))
    if expansion.problem is not None:
        parsed.notes.append(NoteRow(file, stack, "", "", rules.UNRESOLVED_RULE, expansion.problem))
    parsed.notes.extend(
        NoteRow(file, stack, unread.resource, "", rules.UNRESOLVED_RULE, unread.message())
        for unread in included.unread
    )
    return parsed


def include_local_files(
    document: dict[str, Any], template_file: str, limits: ReadLimits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """``AWS::Include`` transforms of local files replaced by the files' content, as the SAM CLI
    does before the transform; those not read left or replaced by placeholders
    (``sam_includes``). The input is not changed."""
    return sam_includes.prepare_includes(document, template_file, limits).document


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
    optional.require("samtranslator", "expanding SAM templates")
    _quiet_translator()
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


@functools.cache
def _quiet_translator() -> None:
    """The translator logs through ``logging`` without configuring it, so Python's last-resort
    handler prints its warnings on stderr (a feature-toggle line per template). Its records go
    to a handler that drops them instead; its errors reach the audit as exceptions."""
    logger = logging.getLogger(_TRANSLATOR_LOGGER)
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


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
            _default_code_uri(properties, function_globals)
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


def _default_code_uri(properties: dict[str, Any], function_globals: Any) -> None:
    """A zip function without code: the SAM CLI builds the template's folder (``CodeUri``
    defaults to ``.``); the translator alone rejects it."""
    own = ("CodeUri", "InlineCode", "ImageUri")
    inherited = function_globals if isinstance(function_globals, dict) else {}
    if any(name in properties or name in inherited for name in own):
        return
    if properties.get("PackageType", inherited.get("PackageType")) == "Image":
        return
    properties["CodeUri"] = PLACEHOLDER_S3_URI


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
        missing = optional.MissingExtra("samtranslator", "expanding SAM templates")
        return (
            f"SAM template not expanded, so its AWS::Serverless resources are not judged: {missing}"
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


def _written_spots(spots: Spots, expanded: Mapping[str, Any], origins: Mapping[str, str]) -> Spots:
    """Positions for the translated resources, in the file the author wrote: a resource kept
    under its own id is where it was written (its properties too); a generated one
    (``<Function><Event>``, ``<Function>Role``) is at the id of the resource it came from, without
    property positions, which belong to another resource; one from nowhere has none."""
    written: Spots = {}
    for logical_id in expanded.get("Resources") or {}:
        if logical_id in spots and logical_id not in origins:
            written[logical_id] = spots[logical_id]
            continue
        owner = origins.get(logical_id, "").split(".", 1)[0]
        if owner in spots:
            written[logical_id] = Spot(spots[owner].line, spots[owner].column, {})
    return written


def _longest_prefix(text: str, candidates: Mapping[str, Any]) -> str | None:
    matches = [c for c in candidates if c and text.startswith(c)]
    return max(matches, key=len) if matches else None
