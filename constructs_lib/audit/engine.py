"""The local engine: parse -> resolve -> evaluate in one process, without Spark.

The same steps as the Spark engine (``spark/``), with dictionaries in place of joins; both judge
with ``judging.py``. The in-app validation plugin uses it on an app's own templates, the
benchmark compares it with the Spark engine, and the tests hold the two to identical findings.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from constructs_lib.audit import isolation, model, nesting, observations
from constructs_lib.audit.acceptance import NONE as NO_ACCEPTANCE
from constructs_lib.audit.acceptance import Acceptance
from constructs_lib.audit.acceptance import apply as accept
from constructs_lib.audit.inputs import deployed as deployed_stacks
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.judging import evaluate_group, template_findings, unresolved_edge_finding
from constructs_lib.audit.model import (
    AuditResult,
    EdgeRow,
    ExportRow,
    Finding,
    KeyRow,
    MemberRow,
    ResolvedEdge,
    ResourceRow,
)
from constructs_lib.audit.parameters import Overrides
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits


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


def audit_parsed(
    parsed: list[model.ParsedTemplate], metrics: observations.Metrics | None = None
) -> AuditResult:
    """Resolve and evaluate templates already parsed; with ``metrics``, each queue's context
    also holds what was observed of it (``observations.py``)."""
    started = time.perf_counter()
    resources = {r.uid: r for p in parsed for r in p.resources}
    resolved, missing = resolve(
        [e for p in parsed for e in p.edges],
        [k for p in parsed for k in p.keys],
        [x for p in parsed for x in p.exports],
    )
    queue_uids = sorted(uid for uid, r in resources.items() if r.type == model.QUEUE)
    groups: dict[str, list[tuple[str, str, ResourceRow]]] = defaultdict(list)
    for row in members(queue_uids, resolved):
        if row.uid in resources:
            groups[row.queue_uid].append((row.member, row.detail, resources[row.uid]))
    with_metrics = 0
    if metrics is not None:
        for queue_uid in queue_uids:
            groups[queue_uid] += observations.for_group(metrics, groups[queue_uid])
            with_metrics += observations.observed(metrics, resources[queue_uid])
    resolved_at = time.perf_counter()
    findings = [f for q in queue_uids for f in evaluate_group(q, groups[q])]
    findings += [unresolved_edge_finding(resources[e.from_uid], e) for e in missing]
    findings += [f for p in parsed for f in template_findings(p)]
    files = [p.file for p in parsed]
    findings.sort(key=Finding.sort_key)
    evaluated_at = time.perf_counter()
    return AuditResult(
        findings,
        files,
        len(queue_uids),
        {"resolve": resolved_at - started, "evaluate": evaluated_at - resolved_at},
        metrics=None
        if metrics is None
        else observations.summary(metrics, with_metrics, len(queue_uids)),
    )


def audit_files(
    files: Iterable[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    workers: int | None = None,
    overrides: Overrides | None = None,
    progress: Callable[[int, int], None] | None = None,
    acceptance: Acceptance = NO_ACCEPTANCE,
    deployed: Sequence[deployed_stacks.Target] = (),
    metrics: observations.Metrics | None = None,
) -> AuditResult:
    """Audit ``(path, stack name)`` pairs (see ``discovery.discover``) without Spark: files are
    parsed by ``workers`` worker processes (default: one per core) within ``limits``, then
    resolved and evaluated here, and ``acceptance`` applied (a suppressions file, a baseline).
    The stacks ``deployed`` in each target (account and region) are read and judged with them,
    and with the observed ``metrics`` when given. ``progress(done, total)`` follows the parsing."""
    started = time.perf_counter()
    files = list(files)
    parsed = isolation.parse_files(
        files,
        limits,
        workers,
        overrides,
        progress=None if progress is None else lambda done: progress(done, len(files)),
    )
    again, child_overrides = nesting.children(
        (n for p in parsed for n in p.nested), files, overrides
    )
    if again:
        reparsed = isolation.parse_files(again, limits, workers, child_overrides)
        by_file = {p.file.file: p for p in reparsed}
        parsed = [by_file.get(p.file.file, p) for p in parsed]
    parsed += deployed_stacks.audit_targets(deployed, limits, overrides)
    parsed_at = time.perf_counter()
    result = audit_parsed(parsed, metrics)
    result.timings = {"parse": parsed_at - started, **result.timings}
    findings, result.fixed = accept(list(result.findings), acceptance)
    result.findings = findings
    return result


def audit_paths(
    paths: Iterable[str],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    acceptance: Acceptance = NO_ACCEPTANCE,
) -> AuditResult:
    """Audit every template under ``paths``, with parameter ``overrides`` (stack or ``*`` ->
    key -> value, see ``parameters.py``)."""
    return audit_files(
        discovery.discover(paths), limits, overrides=overrides, acceptance=acceptance
    )
