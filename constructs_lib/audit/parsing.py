"""Bytes -> a template document (a dict): JSON, or YAML with CloudFormation's short-form tags.

YAML is imported only when a YAML file is read: the in-app plugin runs where only aws-cdk-lib is.
"""

from __future__ import annotations

import json
from typing import Any


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
