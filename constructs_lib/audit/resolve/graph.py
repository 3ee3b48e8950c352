"""References resolved to resources, and who stands around each queue, with dictionaries.

The local engine (``engines.local``) builds the fleet's graph with these; each template judged
where the Spark job parses it (``within_template``) builds its own; the Spark job's join stage
does the same with joins (``engines.spark.resolve``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from constructs_lib.audit import model
from constructs_lib.audit.model import (
    EdgeRow,
    ExportRow,
    KeyRow,
    MemberRow,
    ResolvedEdge,
    ResourceRow,
)

# One member of a queue's context, as the rules take it: (member kind, detail, its resource).
Member = tuple[str, str, ResourceRow]


def export_target(edge_kind: str, export: ExportRow) -> str:
    return export.queue_key if edge_kind == "queue" else export.function_key


def resolve(
    edges: Iterable[EdgeRow], keys: Iterable[KeyRow], exports: Iterable[ExportRow]
) -> tuple[list[ResolvedEdge], list[EdgeRow]]:
    """Edges -> resolved edges (import -> export -> key -> resource) and the unresolved rest."""
    exports_by_name: dict[str, list[ExportRow]] = defaultdict(list)
    for export in exports:
        exports_by_name[export.name].append(export)
    uids_by_key: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        uids_by_key[key.key].append(key.uid)
    resolved: list[ResolvedEdge] = []
    missing: list[EdgeRow] = []
    for edge in edges:
        if edge.key.startswith("export:"):
            targets = [export_target(edge.kind, e) for e in exports_by_name.get(edge.key[7:], [])]
        else:
            targets = [edge.key]
        to_uids = sorted({uid for target in targets for uid in uids_by_key.get(target, [])})
        if not to_uids:
            missing.append(edge)
        resolved += [ResolvedEdge(edge.from_uid, edge.role, edge.detail, to) for to in to_uids]
    return resolved, missing


def members(queue_uids: Iterable[str], resolved: Iterable[ResolvedEdge]) -> list[MemberRow]:
    """Who stands around each queue, from the resolved edges (the job does this with joins)."""
    rows = [MemberRow(q, model.MEMBER_QUEUE, "", q) for q in queue_uids]
    functions_of: dict[str, list[str]] = defaultdict(list)
    event_sources: list[ResolvedEdge] = []
    for edge in resolved:
        if edge.role == model.ROLE_DLQ:
            rows.append(MemberRow(edge.from_uid, model.MEMBER_DLQ, "", edge.to_uid))
            rows.append(MemberRow(edge.to_uid, model.MEMBER_SOURCE, "", edge.from_uid))
        elif edge.role == model.ROLE_EVENT_SOURCE:
            rows.append(MemberRow(edge.to_uid, model.MEMBER_ESM, "", edge.from_uid))
            event_sources.append(edge)
        elif edge.role == model.ROLE_FUNCTION:
            functions_of[edge.from_uid].append(edge.to_uid)
        elif edge.role == model.ROLE_ALARM:
            rows.append(MemberRow(edge.to_uid, model.MEMBER_ALARM, edge.detail, edge.from_uid))
        elif edge.role == model.ROLE_POLICY:
            rows.append(MemberRow(edge.to_uid, model.MEMBER_POLICY, "", edge.from_uid))
        elif edge.role == model.ROLE_FEEDS_DLQ:
            rows.append(MemberRow(edge.to_uid, model.MEMBER_FEEDER, edge.detail, edge.from_uid))
        elif edge.role == model.ROLE_PRODUCER:
            rows.append(MemberRow(edge.to_uid, model.MEMBER_PRODUCER, edge.detail, edge.from_uid))
        elif edge.role == model.ROLE_ALLOW_SOURCE:
            rows.append(MemberRow(edge.from_uid, model.MEMBER_ALLOW_SOURCE, "", edge.to_uid))
    # (queue, mapping, function) for every mapping that reads a queue into a function
    consumers = sorted(
        {
            (edge.to_uid, edge.from_uid, function)
            for edge in event_sources
            for function in functions_of.get(edge.from_uid, [])
        }
    )
    mappings_of: dict[str, set[str]] = defaultdict(set)
    for _queue, mapping, function in consumers:
        mappings_of[function].add(mapping)
    consumed_by: set[tuple[str, str]] = set()
    for queue, mapping, function in consumers:
        rows.append(MemberRow(queue, model.MEMBER_FUNCTION, mapping, function))
        consumed_by.add((queue, function))
    # Each consumer function's mappings across the fleet, into every queue it consumes.
    for queue, function in sorted(consumed_by):
        for mapping in sorted(mappings_of[function]):
            rows.append(MemberRow(queue, model.MEMBER_FUNCTION_MAPPING, function, mapping))
    return rows


def contexts(
    queue_uids: Iterable[str],
    resolved: Iterable[ResolvedEdge],
    resources: Mapping[str, ResourceRow],
) -> defaultdict[str, list[Member]]:
    """Each queue's members (``members``) with their resources, by queue: what
    ``engines.judging.evaluate_group`` judges. A member whose resource is not in ``resources``
    is left out; a queue with no member has an empty list."""
    groups: defaultdict[str, list[Member]] = defaultdict(list)
    for row in members(queue_uids, resolved):
        if row.uid in resources:
            groups[row.queue_uid].append((row.member, row.detail, resources[row.uid]))
    return groups
