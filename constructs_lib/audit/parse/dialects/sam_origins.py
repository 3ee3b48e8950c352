"""Where each resource of a SAM template's expansion came from, in the template the author wrote:
the ids findings name (``Function.Event`` for the translator's ``<Function><Event>``) and the
positions they point at.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs_lib.audit.parse.positions import Spot, Spots

SERVERLESS_PREFIX = "AWS::Serverless::"


def serverless_resources(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The SAM resources the author wrote: logical id -> properties."""
    resources = document.get("Resources")
    result: dict[str, dict[str, Any]] = {}
    for logical_id, body in (resources if isinstance(resources, dict) else {}).items():
        if isinstance(body, dict) and str(body.get("Type", "")).startswith(SERVERLESS_PREFIX):
            properties = body.get("Properties")
            result[str(logical_id)] = properties if isinstance(properties, dict) else {}
    return result


def event_origins(document: Mapping[str, Any]) -> dict[str, str]:
    """``<Function><Event>`` (the id SAM gives an event's resource) -> ``Function.Event``."""
    origins: dict[str, str] = {}
    for logical_id, properties in serverless_resources(document).items():
        events = properties.get("Events")
        if isinstance(events, dict):
            for event in events:
                origins[f"{logical_id}{event}"] = f"{logical_id}.{event}"
    return origins


def generated_origins(document: Mapping[str, Any], expanded: Mapping[str, Any]) -> dict[str, str]:
    """Every other generated resource -> the SAM resource (and property or event) behind it:
    ``FnEvQueue`` (an SNS event's queue) -> ``Fn.Ev``, ``FnEventInvokeConfigOnFailureQueue`` ->
    ``Fn.EventInvokeConfig``."""
    original = document.get("Resources")
    written = set(original) if isinstance(original, dict) else set()
    serverless = serverless_resources(document)
    events = event_origins(document)
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


def written_spots(spots: Spots, expanded: Mapping[str, Any], origins: Mapping[str, str]) -> Spots:
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
