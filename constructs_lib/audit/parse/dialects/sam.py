"""SAM templates (``Transform: AWS::Serverless-2016-10-31``), expanded to plain CloudFormation.

SAM is not re-implemented here: ``aws-sam-translator``, the library the SAM CLI and cfn-lint use,
expands the template, and the result is read like any other CloudFormation template. An
``AWS::Serverless::Function`` with an ``SQS`` event becomes an ``AWS::Lambda::Function`` and an
``AWS::Lambda::EventSourceMapping``, so the consumer rules (QR006-QR008, QR014-QR019, QR022,
QR026) judge it with the function's timeout (its own, else ``Globals.Function.Timeout``, else
Lambda's 3 s).

The translator runs offline and needs no AWS credentials or configuration (``sam_offline``).

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
``origins`` maps what it generates (``<Function><Event>``) back to ``Function.Event``
(``sam_origins``). A template the translator rejects is still judged on its other resources, with
a QR900 note saying why.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit import optional, rules
from constructs_lib.audit.inputs import objects
from constructs_lib.audit.model import NoteRow, ParsedTemplate
from constructs_lib.audit.parse.dialects import cloudformation, sam_includes, sam_offline
from constructs_lib.audit.parse.dialects.sam_origins import (
    SERVERLESS_PREFIX,
    event_origins,
    generated_origins,
    serverless_resources,
    written_spots,
)
from constructs_lib.audit.parse.parameters import PSEUDO_PARAMETERS
from constructs_lib.audit.parse.positions import Spots
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

TRANSFORM = "AWS::Serverless-2016-10-31"
PROBLEM_MAX_CHARS = 300
INCLUDE = sam_includes.INCLUDE
MAX_INCLUDES = sam_includes.MAX_INCLUDES


@dataclass(frozen=True)
class Expansion:
    """The CloudFormation a SAM template stands for, or its non-SAM part and why."""

    document: dict[str, Any]
    origins: dict[str, str]  # generated logical id -> the id the author wrote ("Function.Event")
    problem: str | None = None  # why the translator rejected the template (None: it did not)


def declares_transform(document: Mapping[str, Any]) -> bool:
    """Whether the template names the SAM transform (alone or in a list of transforms)."""
    transform = document.get("Transform")
    transforms = transform if isinstance(transform, list) else [transform]
    return TRANSFORM in transforms


def is_sam(document: Mapping[str, Any]) -> bool:
    """Whether the template is expanded with the translator: it names the SAM transform, or it
    has ``AWS::Serverless::*`` resources without it (``missing_transform_note`` says so)."""
    return declares_transform(document) or bool(serverless_resources(document))


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
        spots=written_spots(spots or {}, expansion.document, expansion.origins),
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
    origins = event_origins(document)
    values = dict(parameter_values)
    sam_template = copy.deepcopy(dict(document))
    try:
        expanded = sam_offline.translate(sam_template, values)
    except Exception as error:  # the translator's verdict, or a shape it did not foresee
        return Expansion(_without_sam(document), origins, _problem(error, origins))
    resources = expanded.get("Resources")
    if not isinstance(resources, dict):
        return Expansion(_without_sam(document), origins, "SAM expansion left no Resources")
    origins.update(generated_origins(document, resources))
    return Expansion(expanded, origins)


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
