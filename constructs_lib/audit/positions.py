"""Where each resource (and each of its properties) is written in its template file, so that a
finding lands on the line that asked for it: SARIF's ``region``, Code Quality's ``lines``, the
table's ``file:line``.

Positions are found during the parse the audit already does, within its limits:

- YAML: the node tree PyYAML composes anyway (``parsing.py`` builds the document from it) carries
  each key's mark; only the keys of ``Resources``, of each resource and of its ``Properties`` are
  read.
- JSON: ``json.loads`` keeps no positions, so a second, shallow pass reads the same text: it walks
  the keys of the top-level object, of ``Resources``, of each resource and of its ``Properties``,
  and skips every other value with the C decoder, never recursing in Python.

Lines and columns start at 1, as SARIF, GitLab and editors count them; 0 means "not known", and
reports then give the file without a line rather than a wrong one.

A finding about one property (a visibility timeout below its consumer's timeout) points at that
property's key when the template writes it, else at the resource: ``RULE_PROPERTIES`` is that
table, in one place for every rule.
"""

from __future__ import annotations

import json
import re
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
                        mark = prop_node.start_mark
                        found[prop] = (mark.line + 1, mark.column + 1)
            mark = id_node.start_mark
            spots[logical_id] = Spot(mark.line + 1, mark.column + 1, found)
    return spots


# --- JSON -------------------------------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The key of each property a finding can point at, and the colon and blanks after it.
_PROPERTY_KEYS = {
    name: re.compile(re.escape(json.dumps(name)) + r"[ \t\n\r]*:[ \t\n\r]*")
    for name in POSITIONED_PROPERTIES
}
_DECODER = json.JSONDecoder()
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
Visit = Callable[[str, int, int], int]  # (key, key offset, value offset) -> the value's end


def _members(text: str, start: int, visit: Visit) -> int:
    """Each member of the JSON object at ``text[start]`` handed to ``visit``; the object's end.
    Only called on text ``json.loads`` accepted, so its shape is known to be valid."""
    at = _WHITESPACE.match(text, start + 1).end()  # type: ignore[union-attr]
    while text[at] != "}":
        key, after = _scanstring(text, at + 1)
        colon = _WHITESPACE.match(text, after).end()  # type: ignore[union-attr]
        value = _WHITESPACE.match(text, colon + 1).end()  # type: ignore[union-attr]
        end = visit(key, at, value)
        at = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[at] == ",":
            at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    return at + 1


class _Lines:
    """Offsets -> (line, column), counted on from the last offset asked (one pass over the text
    when they are asked in increasing order)."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.line = text, 0, 1

    def at(self, offset: int) -> tuple[int, int]:
        if offset < self.offset:  # out of order: count again from the start
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line, offset - self.text.rfind("\n", 0, offset)


def json_spots(text: str, document: Mapping[str, Any]) -> Spots:
    """The resources' positions in a JSON template's text, which ``json.loads`` read as
    ``document``. The walk visits the top-level keys and the logical ids, and skips their values
    with the C decoder (so the text is decoded once more, in C); in the resources the audit
    reads, it finds each property a finding can point at by its key, where the value that
    follows is that property's."""
    bodies = document.get("Resources")
    bodies = bodies if isinstance(bodies, dict) else {}
    spots: Spots = {}
    lines = _Lines(text)

    def resource(logical_id: str, at: int, value: int) -> int:
        end = int(_DECODER.raw_decode(text, value)[1])
        spot = spots[logical_id] = Spot(*lines.at(at), {})
        body = bodies.get(logical_id)
        properties = body.get("Properties") if isinstance(body, dict) else None
        if (
            isinstance(properties, dict)
            and not POSITIONED_PROPERTIES.isdisjoint(properties)
            and body.get("Type") in model.AUDITED_TYPES  # type: ignore[union-attr]
        ):
            spot.properties.update(_property_keys(text, value, end, properties, lines))
        return end

    def top(key: str, _at: int, value: int) -> int:
        if key == "Resources" and text[value] == "{":
            spots.clear()  # a repeated key: the last one is the one json.loads kept
            return _members(text, value, resource)
        return int(_DECODER.raw_decode(text, value)[1])

    start = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    if text[start : start + 1] == "{":
        _members(text, start, top)
    return spots


def _property_keys(
    text: str, start: int, end: int, properties: Mapping[str, Any], lines: _Lines
) -> dict[str, tuple[int, int]]:
    """(line, column) of each positioned property's key between ``start`` and ``end`` (one
    resource's text): the first key of that name whose value is the property's."""
    found: dict[str, tuple[int, int]] = {}
    for name in sorted(POSITIONED_PROPERTIES & properties.keys()):
        for match in _PROPERTY_KEYS[name].finditer(text, start, end):
            if _DECODER.raw_decode(text, match.end())[0] == properties[name]:
                found[name] = lines.at(match.start())
                break
    return found


# --- findings -----------------------------------------------------------------------------------


def source_marker(spot: Spot | None, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a resource row carries of where its resource is written (``model.SOURCE``): its line
    and column, those of the properties findings point at, its CDK construct path."""
    metadata = body.get("Metadata")
    path = metadata.get(CDK_PATH) if isinstance(metadata, dict) else None
    marker: dict[str, Any] = {}
    if spot is not None:
        marker["at"] = [spot.line, spot.column]
        positioned = {k: list(v) for k, v in spot.properties.items() if k in POSITIONED_PROPERTIES}
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
