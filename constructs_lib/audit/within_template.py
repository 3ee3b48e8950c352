"""One template judged on its own, where it is parsed: the queues whose whole context it holds.

Most references never leave their template (a ``Ref`` or ``Fn::GetAtt`` is a ``local:`` key that
only its own template's resources carry). A queue's context is the queue, what its edges reach,
and, through its consumer functions, every mapping of those functions (``engine.members``); if
none of those resources has a reference that may leave the template, the template alone gives the
context the whole fleet would, unless another template names one of them. That last part only the
fleet knows: each queue judged here also lists the keys by which another template could name
what its context depends on (``exposure``). The Spark job (``spark/evaluate.py``) keeps the
findings of a queue none of whose exposure keys the fleet's crossing references name, and judges
the others, and the queues whose context reaches beyond their template (``pending``), in its
join stage, with the same ``judging.evaluate_group``.

A reference that can never resolve (a value only known at deployment, ``unresolved:``) is
reported here: no template carries such a key.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from constructs_lib.audit import model, observations
from constructs_lib.audit.engine import members
from constructs_lib.audit.judging import evaluate_group, unresolved_edge_finding
from constructs_lib.audit.model import EdgeRow, Finding, KeyRow, ResolvedEdge, ResourceRow
from constructs_lib.audit.observations import Metrics

NEVER_RESOLVES = "unresolved:"
# Members whose own references decide a queue's context beyond its edges: the mappings that
# read it, their functions, and every mapping of those functions.
_CONSUMER_MEMBERS = frozenset(
    {model.MEMBER_ESM, model.MEMBER_FUNCTION, model.MEMBER_FUNCTION_MAPPING}
)


@dataclass
class WithinTemplate:
    """What one template yields for the Spark job beyond its parsed rows."""

    # edges resolved within the template, and the edges that may resolve elsewhere
    resolved: list[ResolvedEdge] = field(default_factory=list)
    crossing: list[EdgeRow] = field(default_factory=list)
    # findings of the queues judged here, with the queue each belongs to
    judged: list[tuple[str, Finding]] = field(default_factory=list)
    # (queue uid, key): a key of a resource a judged queue's context depends on
    exposure: list[KeyRow] = field(default_factory=list)
    # queues whose context reaches beyond the template
    pending: list[str] = field(default_factory=list)
    # QR900 of references that can never resolve
    unresolved: list[Finding] = field(default_factory=list)


def judge(parsed: model.ParsedTemplate, metrics: Metrics | None = None) -> WithinTemplate:
    """Resolve ``parsed``'s references that stay within it and judge every queue whose context
    it holds whole (with ``metrics``, as the join stage would)."""
    out = WithinTemplate()
    owners: dict[str, set[str]] = defaultdict(set)
    for key in parsed.keys:
        if key.key.startswith("local:"):
            owners[key.key].add(key.uid)
    resources = {r.uid: r for r in parsed.resources}
    for edge in parsed.edges:
        if edge.key in owners:
            out.resolved += [
                ResolvedEdge(edge.from_uid, edge.role, edge.detail, to)
                for to in sorted(owners[edge.key])
            ]
        elif edge.key.startswith(NEVER_RESOLVES):
            if edge.from_uid in resources:
                out.unresolved.append(unresolved_edge_finding(resources[edge.from_uid], edge))
        else:
            out.crossing.append(edge)
    queues = sorted(uid for uid, r in resources.items() if r.type == model.QUEUE)
    groups: dict[str, list[tuple[str, str, ResourceRow]]] = defaultdict(list)
    depends: dict[str, set[str]] = {q: {q} for q in queues}
    for row in members(queues, out.resolved):
        if row.uid in resources:
            groups[row.queue_uid].append((row.member, row.detail, resources[row.uid]))
        if row.member in _CONSUMER_MEMBERS and row.queue_uid in depends:
            depends[row.queue_uid].add(row.uid)
    # A function's mappings whose own event source leaves the template are its mappings too.
    mappings_of: dict[str, set[str]] = defaultdict(set)
    for resolved in out.resolved:
        if resolved.role == model.ROLE_FUNCTION:
            mappings_of[resolved.to_uid].add(resolved.from_uid)
    leaving = {edge.from_uid for edge in out.crossing}
    keys_of: dict[str, list[str]] = defaultdict(list)
    for key in parsed.keys:
        keys_of[key.uid].append(key.key)
    for queue in queues:
        needed = depends[queue] | {m for f in depends[queue] for m in mappings_of.get(f, ())}
        if needed & leaving:
            out.pending.append(queue)
            continue
        group = groups[queue]
        if metrics is not None:
            group = group + observations.for_group(metrics, group)
        out.judged += [(queue, finding) for finding in evaluate_group(queue, group)]
        out.exposure += [KeyRow(queue, k) for uid in sorted(needed) for k in keys_of[uid]]
    return out
