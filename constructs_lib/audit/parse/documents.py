"""Bytes -> a template document (a dict): JSON, or YAML with CloudFormation's short-form tags.

YAML is imported only when a YAML file is read: the in-app plugin runs where only aws-cdk-lib is.

Parsing has limits (``safety``): nesting depth for JSON and YAML (PyYAML's C composer recurses
on the C stack and crashes the process on some thousands of levels; it is checked before the
composer runs), and for YAML the number of nodes once aliases and merge keys are expanded (an
alias bomb of under 1 KB expands to billions of nodes). Both are counted on libyaml's event
stream, which never recurses, before the document is built.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from typing import Any

from constructs_lib.audit import optional
from constructs_lib.audit.parse.positions import (
    RESOURCES,
    TOP_VALUES,
    Spots,
    spots_of,
    walk_json,
    yaml_spots,
)
from constructs_lib.audit.safety import DEFAULT_LIMITS, LimitExceeded, ReadLimits

_YAML_PURPOSE = "reading YAML"


class TemplateError(ValueError):
    """A file that is not a CloudFormation template we can read."""


class NotATemplate(TemplateError):
    """A JSON or YAML document that does not claim to be a template (no
    ``AWSTemplateFormatVersion``, ``Resources`` nor ``Transform``): a workflow, a site's
    configuration, a package manifest. Skipped and counted, never a QR901."""


class InvalidSyntax(TemplateError):
    """Text that is not valid JSON or YAML (whether it meant to be a template is the caller's
    judgement: ``pipeline.claims_template``)."""


# The top-level keys by which a document claims to be a CloudFormation (or SAM) template.
TEMPLATE_KEYS = ("AWSTemplateFormatVersion", "Resources", "Transform")


def load_document(file: str, data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Bytes -> template dict. JSON by default; YAML (with short-form tags) when it is not JSON."""
    return load_located(file, data, limits, located=False)[0]


def load_located(
    file: str, data: bytes, limits: ReadLimits = DEFAULT_LIMITS, located: bool = True
) -> tuple[dict[str, Any], Spots]:
    """``load_document``, and where each resource and property is written (``positions.py``;
    empty when ``located`` is False)."""
    document, spots = _load(file, data, limits, located)
    _check_template(document)
    return document, spots


def _check_template(document: Any) -> None:
    if not isinstance(document, dict):
        raise NotATemplate("not a CloudFormation template: the document is not a mapping")
    if not any(key in document for key in TEMPLATE_KEYS):
        raise NotATemplate(
            "not a CloudFormation template: no AWSTemplateFormatVersion, Resources or Transform"
        )
    resources = document.get("Resources")
    if not isinstance(resources, dict):
        raise TemplateError("not a CloudFormation template: no Resources mapping")


def load_data(file: str, data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> Any:
    """Bytes -> the JSON or YAML document they hold, within ``limits``, whatever its shape."""
    return _load(file, data, limits, located=False)[0]


def _load(file: str, data: bytes, limits: ReadLimits, located: bool) -> tuple[Any, Spots]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TemplateError(f"not UTF-8 text ({error.reason} at byte {error.start})") from error
    is_yaml = file.endswith((".yaml", ".yml"))
    document: Any
    if not is_yaml:
        try:
            located_json = _load_json_located(text, limits.max_depth) if located else None
            if located_json is not None:
                return located_json
            document = _load_json(text, limits.max_depth)
        except LimitExceeded as error:
            raise TemplateError(str(error)) from error
        except ValueError as error:
            if text.lstrip().startswith(("{", "[")) or file.endswith(".json"):
                raise InvalidSyntax(f"invalid JSON: {error}") from error
            is_yaml = True
    if is_yaml:
        document, root = _load_yaml(text, limits, located, file)
        return document, yaml_spots(root) if located and isinstance(document, dict) else {}
    return document, {}


def _too_deep(max_depth: int) -> LimitExceeded:
    return LimitExceeded("nested too deeply", f"{max_depth} levels", "--max-depth")


def _recursion_depth() -> int:
    """The interpreter's own count of nested calls here (Python frames and C recursion alike),
    which is what its recursion limit is checked against. CPython states it when asked for a
    limit below it; counting frames instead misses C-level calls (pytest's hooks, for one)."""
    try:
        sys.setrecursionlimit(1)
    except RecursionError as error:
        found = re.search(r"recursion depth (\d+)", str(error))
        if found:
            return int(found.group(1))
    frame: Any = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


# Nested calls between the count above and the C scanner's first level (json.loads, decode,
# raw_decode; measured: the boundary tests in test_hostile.py hold it to the exact depth).
_JSON_FRAMES = 2
# The same for the located walk (walk_json calling the scanner itself; measured the same way).
_WALK_FRAMES = 1


def _load_json(text: str, max_depth: int) -> Any:
    """json.loads with nesting limited to ``max_depth`` levels at no cost per node.

    The C scanner enters one recursion level per nested array or object, counted against the
    interpreter's recursion limit (Python 3.11), so lowering that limit for the call bounds the
    depth exactly; past it, RecursionError. Python 3.12+ counts C recursion apart, so there a
    document with more brackets than ``max_depth`` is measured afterwards, without recursion.
    """
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(_recursion_depth() + _JSON_FRAMES + max_depth)
    try:
        document = json.loads(text)
    except RecursionError:
        raise _too_deep(max_depth) from None
    finally:
        sys.setrecursionlimit(previous)
    _measure_depth(text, document, max_depth)
    return document


def _load_json_located(text: str, max_depth: int) -> tuple[Any, Spots] | None:
    """``_load_json`` and the positions in the same decode (``positions.walk_json``), with the
    same depth limit: a value at nesting level k may nest ``max_depth - k`` levels below it, the
    scanner's recursion bounded as in ``_load_json``. None for text the walk does not take (not
    an object, malformed, or nested past the limit), which ``_load_json`` then judges: its
    verdict and message are json's own, and a document it accepts has no positions."""
    if max_depth < RESOURCES:  # resources could hold no collection: json.loads judges
        return None
    base = _recursion_depth() + _WALK_FRAMES + max_depth
    walk = walk_json(text, {level: base - level for level in (TOP_VALUES, RESOURCES)})
    if walk is None:
        return None
    _measure_depth(text, walk.document, max_depth)
    try:
        return walk.document, spots_of(text, walk)
    except (ValueError, IndexError, RecursionError):  # a shape the position search did not expect
        return walk.document, {}


def _measure_depth(text: str, document: Any, max_depth: int) -> None:
    """Python 3.12+: the depth of a decoded document, when its brackets could exceed the limit
    (there the recursion limit does not bound the C scanner)."""
    if sys.version_info >= (3, 12) and text.count("[") + text.count("{") > max_depth:
        _check_depth(document, max_depth)


def _check_depth(document: Any, max_depth: int) -> None:
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        if isinstance(value, dict | list):
            if depth > max_depth:
                raise _too_deep(max_depth)
            stack.extend((child, depth + 1) for child in children)


def check_yaml_events(text: str, limits: ReadLimits, yaml: Any, loader: Any) -> None:
    """Depth and expanded node count of a YAML stream, from libyaml's events (no recursion).

    Every scalar and collection is one node; an alias counts every node of what it names (a
    merge key's alias too), so the count is the size of the document with aliases expanded.
    """
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    max_depth, max_nodes = limits.max_depth, limits.max_yaml_nodes
    anchors: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []
    nodes = 0
    for event in yaml.parse(text, Loader=loader):
        kind = type(event)
        if kind is scalar:
            nodes += 1
            if event.anchor is not None:
                anchors[event.anchor] = 1
        elif kind is alias:
            nodes += anchors.get(event.anchor, 1)
        elif kind in starts:
            nodes += 1
            open_nodes.append((event.anchor, nodes))
            if len(open_nodes) > max_depth:
                raise _too_deep(max_depth)
        elif kind in ends:
            anchor, first = open_nodes.pop()
            if anchor is not None:
                anchors[anchor] = nodes - first + 1
        else:
            continue
        if nodes > max_nodes:
            raise LimitExceeded(
                "too many YAML nodes once aliases and merge keys (<<) are expanded",
                f"{max_nodes:,} nodes",
                "--max-yaml-nodes",
            )


def _yaml_error(error: Exception, file: str) -> TemplateError:
    """PyYAML names a string it was given ``"<unicode string>"``: the message names the file."""
    text = str(error).replace('"<unicode string>"', file) if file else str(error)
    return InvalidSyntax(f"invalid YAML: {text}".replace("\n", " "))


def _load_yaml(text: str, limits: ReadLimits, located: bool, file: str) -> tuple[Any, Any]:
    """The document, and the node tree it was built from when ``located`` (for positions)."""
    yaml = optional.require("yaml", _YAML_PURPOSE)  # only YAML inputs need it

    loader_base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        check_yaml_events(text, limits, yaml, loader_base)
    except LimitExceeded as error:
        raise TemplateError(str(error)) from error
    except yaml.YAMLError as error:
        raise _yaml_error(error, file) from error

    # What yaml.load does, keeping the composed nodes: their marks are the positions.
    loader = _loader(loader_base)(text)  # SafeLoader: no arbitrary objects
    try:
        root = loader.get_single_node()
        document = loader.construct_document(root) if root is not None else None
        return document, root if located else None
    except yaml.YAMLError as error:
        raise _yaml_error(error, file) from error
    finally:
        loader.dispose()


@functools.cache
def _loader(loader_base: Any) -> Any:
    """The loader class, built once per process (not once per file)."""
    yaml = optional.require("yaml", _YAML_PURPOSE)

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
    return Loader
