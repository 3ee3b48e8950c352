"""``aws-sam-translator`` run offline: it needs no AWS credentials or configuration.

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
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from constructs_lib.audit import optional
from constructs_lib.audit.parse.parameters import PSEUDO_PARAMETERS

FUNCTION = "AWS::Serverless::Function"
REGION = PSEUDO_PARAMETERS["AWS::Region"]
PLACEHOLDER_S3_URI = "s3://placeholder-bucket/placeholder-key"
PLACEHOLDER_IMAGE_URI = "123456789012.dkr.ecr.us-east-1.amazonaws.com/placeholder:latest"
PLACEHOLDER_TEMPLATE_URL = "https://placeholder-bucket.s3.amazonaws.com/placeholder.template"
PLACEHOLDER_ALIAS = "live"
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


class _Region:
    """What the translator reads from a boto3 session: the region, and nothing else."""

    region_name = REGION


def translate(sam_template: dict[str, Any], parameter_values: dict[str, Any]) -> dict[str, Any]:
    """SAM -> CloudFormation, offline: placeholders first for what the translator would fetch
    (both arguments are changed), then the translation. Raises the translator's verdict."""
    _offline(sam_template, parameter_values)
    return _translate(sam_template, parameter_values)


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
