"""Where each resource (and each of its properties) is written in its template file, so that a
finding lands on the line that asked for it: SARIF's ``region``, Code Quality's ``lines``, the
table's ``file:line``.

Positions are found during the parse the audit already does, within its limits:

- YAML: the node tree PyYAML composes anyway (``documents`` builds the document from it) carries
  each key's mark; only the keys of ``Resources``, of each resource and of its ``Properties`` are
  read.
- JSON: ``json.loads`` keeps no positions, so a located JSON template is decoded by a walk that
  reads the top-level object and ``Resources`` member by member, as json's scanner does, and
  hands every other value (each resource whole) to that C scanner: one decode, Python work per
  resource rather than per node, and the offsets of the logical ids on the way. Only the
  resources the audit reads are searched for their positioned properties' keys.

Lines and columns start at 1, as SARIF, GitLab and editors count them; 0 means "not known", and
reports then give the file without a line rather than a wrong one.

A finding about one property (a visibility timeout below its consumer's timeout) points at that
property's key when the template writes it, else at the resource: ``RULE_PROPERTIES`` is that
table, in one place for every rule.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from constructs_lib.audit import model
from constructs_lib.audit.model import Finding

# The properties findings point at, by rule and by the type of the resource the finding names.
# A rule not listed, or a resource whose template does not write the property (a default, a SAM
# Globals value), points at the resource's logical id. QR006 and QR007 name the event source
# mapping whose function outlasts the queue's visibility timeout: the mapping's line.
RULE_PROPERTIES: Mapping[tuple[str, str], str] = {
    ("QR003", model.QUEUE): "MessageRetentionPeriod",
    ("QR004", model.QUEUE): "RedriveAllowPolicy",
    ("QR005", model.QUEUE): "RedriveAllowPolicy",
    ("QR008", model.QUEUE): "RedrivePolicy",
    ("QR012", model.QUEUE): "SqsManagedSseEnabled",
    ("QR019", model.EVENT_SOURCE_MAPPING): "FilterCriteria",
    ("QR021", model.QUEUE): "MaximumMessageSize",
    ("QR026", model.EVENT_SOURCE_MAPPING): "StartingPosition",
    ("QR028", model.FUNCTION): "RecursiveLoop",
    ("QR029", model.QUEUE): "KmsMasterKeyId",
}
# The properties whose positions a resource row carries: only those a finding can point at.
POSITIONED_PROPERTIES = frozenset(RULE_PROPERTIES.values())
# CDK writes each resource's construct path in its Metadata (on by default, ``--path-metadata``).
CDK_PATH = "aws:cdk:path"


class Spot(NamedTuple):
    """Where one resource is written: its logical id's key, and its properties' keys."""

    line: int
    column: int
    properties: dict[str, tuple[int, int]]


Spots = dict[str, Spot]  # logical id -> where it is written
# Spot((line, column, properties)) without NamedTuple's Python-level __new__: one per resource.
_spot: Callable[[tuple[int, int, dict[str, tuple[int, int]]]], Spot] = functools.partial(
    tuple.__new__, Spot
)


# --- YAML -------------------------------------------------------------------------------------


def _mapping_keys(node: Any) -> list[tuple[str, Any, Any]]:
    """(key text, key node, value node) of a mapping node's scalar keys; [] for another node."""
    value = getattr(node, "value", None)
    if getattr(node, "id", "") != "mapping" or not isinstance(value, list):
        return []
    return [(k.value, k, v) for k, v in value if getattr(k, "id", "") == "scalar"]


def yaml_spots(root: Any) -> Spots:
    """The resources' positions from a composed YAML node tree (marks count from 0)."""
    spots: Spots = {}
    for key, _key_node, resources in _mapping_keys(root):
        if key != "Resources":
            continue
        for logical_id, id_node, body in _mapping_keys(resources):
            found: dict[str, tuple[int, int]] = {}
            for name, _name_node, properties in _mapping_keys(body):
                if name == "Properties":
                    for prop, prop_node, _ in _mapping_keys(properties):
                        if prop in POSITIONED_PROPERTIES:  # the only ones findings point at
                            mark = prop_node.start_mark
                            found[prop] = (mark.line + 1, mark.column + 1)
            mark = id_node.start_mark
            spots[logical_id] = Spot(mark.line + 1, mark.column + 1, found)
    return spots


# --- JSON -------------------------------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")  # json's own: the blanks between tokens
# The key of each property a finding can point at, as JSON writes it; the colon after a key.
_PROPERTY_KEYS = {name: json.dumps(name) for name in POSITIONED_PROPERTIES}
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_DECODER = json.JSONDecoder()  # json.loads' own settings
# json.loads' C scanner: one call decodes the value at an offset (all it nests) and gives its end.
_scan: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# Nesting level of the values the walk hands to the scanner: the top-level object is level 1,
# its values (``Resources`` among them) level 2, each resource level 3.
TOP_VALUES, RESOURCES = 2, 3


class Walk(NamedTuple):
    """A JSON template decoded by ``walk_json``: the document, and for each logical id the
    offsets of its key and of the start and end of its resource's text."""

    document: dict[str, Any]
    resources: dict[str, tuple[int, int, int]]


class _MalformedJson(ValueError):
    """Text the walk does not read as a JSON object: ``json.loads`` has the verdict."""


# The next member of an object: its key when it has no escapes nor control characters (the text
# json.loads takes as it is), the colon and the blanks before its value; or the closing brace.
# FIRST reads from after the opening brace, NEXT from after a member's value (then a comma
# comes first). Any other text goes to ``_member``, which reads it as json's scanner does.
_FIRST = re.compile(r'[ \t\n\r]*(?:"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*|\})')
_NEXT = re.compile(r'[ \t\n\r]*(?:,[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*|\})')
Member = tuple[str | None, int, int]  # key (None: the closing brace), key offset, value offset


def _blanks(text: str, at: int) -> int:
    """The offset of the first non-blank character from ``at`` on."""
    return _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]


def _member(text: str, at: int, first: bool) -> Member:
    """The member that follows ``at`` (after the opening brace when ``first``, else after a
    value): its key, the key's offset and its value's offset; or (None, -1, the offset past
    the closing brace). Raises ``_MalformedJson`` (or json's own error) where json.loads would."""
    plain = (_FIRST if first else _NEXT).match(text, at)
    if plain is not None:
        return plain.group(1), plain.start(1) - 1, plain.end()
    at = _blanks(text, at)
    if not first:
        if text[at] == "}":
            return None, -1, at + 1
        if text[at] != ",":
            raise _MalformedJson("expecting ',' or '}'")
        at = _blanks(text, at + 1)
    elif text[at] == "}":
        return None, -1, at + 1
    if text[at] != '"':
        raise _MalformedJson("expecting a key")  # a trailing comma among others
    key, after = _scanstring(text, at + 1)  # json's error on a malformed string
    after = _blanks(text, after)
    if text[after] != ":":
        raise _MalformedJson("expecting ':'")
    return key, at, _blanks(text, after + 1)


def walk_json(text: str, recursion_limits: Mapping[int, int]) -> Walk | None:
    """``text`` decoded as ``json.loads`` decodes it, when it is one JSON object, in one pass
    that also records where each resource is written; None for any other text (an array, a
    scalar, malformed JSON, a value nested past its limit), which the caller then hands to
    ``json.loads`` for its verdict.

    The top-level object and ``Resources`` are walked member by member in Python, exactly as
    json's scanner walks objects; every other value is decoded by that scanner in one call, so
    Python works per resource, not per node. Each such call runs under the interpreter
    recursion limit ``recursion_limits`` gives for its nesting level (``TOP_VALUES``,
    ``RESOURCES``), which bounds how deep the value may nest; the limit is restored around the
    walk's own calls. A repeated key keeps its last value, as in ``json.loads``.
    """
    at = _blanks(text, 0)
    if text[at : at + 1] != "{":
        return None
    document: dict[str, Any] = {}
    located: dict[str, tuple[int, int, int]] = {}
    scan, set_limit, following = _scan, sys.setrecursionlimit, _NEXT.match
    ordinary = sys.getrecursionlimit()
    top_limit, resource_limit = recursion_limits[TOP_VALUES], recursion_limits[RESOURCES]
    try:
        key, _, at = _member(text, at + 1, first=True)
        while key is not None:
            if key == "Resources":
                located = {}  # a repeated Resources: the last one is the one that counts
            if key == "Resources" and text[at] == "{":
                resources: dict[str, Any] = {}
                # the hot loop, once per resource: the common member read inline
                logical_id, entry, start = _member(text, at + 1, first=True)
                while logical_id is not None:
                    set_limit(resource_limit)
                    resources[logical_id], at = scan(text, start)
                    set_limit(ordinary)
                    located[logical_id] = (entry, start, at)
                    plain = following(text, at)
                    if plain is not None:
                        logical_id, entry, start = plain.group(1), plain.start(1) - 1, plain.end()
                    else:
                        logical_id, entry, start = _member(text, at, first=False)
                at = start  # past the closing brace
                value: Any = resources
            else:
                set_limit(top_limit)
                value, at = scan(text, at)
                set_limit(ordinary)
            document[key] = value
            key, _, at = _member(text, at, first=False)
    except (ValueError, IndexError, StopIteration, RecursionError):
        return None  # StopIteration: the scanner found no value; RecursionError: too deep
    finally:
        set_limit(ordinary)
    if _blanks(text, at) != len(text):  # more than blanks after the object: "Extra data"
        return None
    return Walk(document, located)


def _property_keys(
    text: str, start: int, end: int, properties: Mapping[str, Any]
) -> dict[str, int]:
    """The offset of each positioned property's key between ``start`` and ``end`` (one
    resource's text): the first key of that name whose value is the property's."""
    found: dict[str, int] = {}
    for name in POSITIONED_PROPERTIES.intersection(properties):
        quoted = _PROPERTY_KEYS[name]
        at = text.find(quoted, start, end)
        while at >= 0:
            value = _COLON.match(text, at + len(quoted), end)
            try:
                if value is not None and _scan(text, value.end())[0] == properties[name]:
                    found[name] = at
                    break
            except (ValueError, StopIteration, RecursionError):
                pass  # the name inside a string's text, say: not a key
            at = text.find(quoted, at + 1, end)
    return found


def spots_of(text: str, walk: Walk) -> Spots:
    """The resources' positions in a JSON template's text, from the offsets ``walk_json``
    recorded: each logical id's key, and in the resources the audit reads, each property a
    finding can point at, found by its key where the value that follows is that property's."""
    bodies = walk.document.get("Resources")
    if not isinstance(bodies, dict):
        return {}
    spots: Spots = {}
    count, rfind, audited = text.count, text.rfind, model.AUDITED_TYPES
    line, counted = 1, 0  # lines are counted on from the last offset, in one pass over the text
    for logical_id, (at, start, end) in walk.resources.items():
        if at < counted:  # a repeated id keeps its first place and its last text
            line, counted = 1, 0
        line += count("\n", counted, at)
        counted = at
        found: dict[str, tuple[int, int]] = {}
        body = bodies[logical_id]
        if type(body) is dict and body.get("Type") in audited:
            properties = body.get("Properties")
            if type(properties) is dict and not POSITIONED_PROPERTIES.isdisjoint(properties):
                for name, key in _property_keys(text, start, end, properties).items():
                    found[name] = (line + count("\n", at, key), key - rfind("\n", 0, key))
        spots[logical_id] = _spot((line, at - rfind("\n", 0, at), found))
    return spots


# --- findings -----------------------------------------------------------------------------------


def source_marker(spot: Spot | None, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a resource row carries of where its resource is written (``model.SOURCE``): its line
    and column, those of the properties findings point at, its CDK construct path."""
    metadata = body.get("Metadata")
    path = metadata.get(CDK_PATH) if isinstance(metadata, dict) else None
    marker: dict[str, Any] = {}
    if spot is not None:
        marker["at"] = [spot.line, spot.column]
        if spot.properties:  # most resources have none: no dict built for them
            positioned = {
                k: list(v) for k, v in spot.properties.items() if k in POSITIONED_PROPERTIES
            }
            if positioned:
                marker["properties"] = positioned
    if isinstance(path, str) and path:
        marker["path"] = path
    return marker or None


def locate(finding: Finding, source: Mapping[str, Any] | None) -> Finding:
    """``finding`` with the line, column and construct path of ``source`` (a row's
    ``model.SOURCE`` marker): the property's position when the rule is about one the template
    writes, else the resource's. A deployed stack's template is no file: no line."""
    if not source or finding.account:
        return finding
    line, column = source.get("at") or (0, 0)
    rule_type = (finding.rule_id, source.get("type", ""))
    prop = RULE_PROPERTIES.get(rule_type)
    if prop is not None and prop in source.get("properties", {}):
        line, column = source["properties"][prop]
    return replace(finding, line=line, column=column, construct_path=source.get("path", ""))


def row_source(row: model.ResourceRow) -> dict[str, Any] | None:
    """The ``model.SOURCE`` marker of a resource row, with the row's type beside it."""
    marker = json.loads(row.properties).get(model.SOURCE)
    return {**marker, "type": row.type} if isinstance(marker, dict) else None


def locate_all(
    findings: list[Finding], rows: Mapping[tuple[str, str], model.ResourceRow]
) -> list[Finding]:
    """Each finding placed at its resource among ``rows`` (keyed by file and logical id as
    findings name it); findings of other resources unchanged."""
    sources: dict[tuple[str, str], dict[str, Any] | None] = {}
    out = []
    for finding in findings:
        key = (finding.template, finding.resource)
        if key not in sources:
            row = rows.get(key)
            sources[key] = row_source(row) if row is not None else None
        out.append(locate(finding, sources[key]))
    return out
