"""One template judged on its own, where it is parsed: the queues whose whole context it holds.

Most references never leave their template: a ``Ref`` or ``Fn::GetAtt``, and mostly a queue or
function name too, names a resource of the same template. A queue's context is the queue, what
its edges reach, and, through its consumer functions, every mapping of those functions
(``graph.members``); if none of those resources has a reference that its template cannot
resolve, the template gives the context the whole fleet would, unless another template names
one of those resources, or carries a name one of their references resolved by. Only the fleet
knows that. So each template lists the keys it carries (``OWNS``: the names of its resources,
and what its exports name) and those it references (``NAMES``), and each queue judged here the
ones its context depends on (``exposure``). The Spark job (``engines.spark.evaluate``) keeps the
findings of a queue unless another template names a key its context owns or owns a key its
context names, and judges those, and the queues whose references leave their template
(``pending``), in its join stage, over the templates involved, with the same
``engines.judging.evaluate_group``.

A reference that can never resolve (a value only known at deployment, ``unresolved:``) is
reported here: no template carries such a key.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from constructs_lib.audit import model
from constructs_lib.audit.engines.judging import judge_group, unresolved_edge_finding
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.model import EdgeRow, Finding, QueueLedger, ResolvedEdge, ResourceRow
from constructs_lib.audit.resolve.graph import members

NEVER_RESOLVES = model.NEVER_RESOLVES
# How a template touches a key another template could share with it.
OWNS = "owns"
NAMES = "names"
# Members whose own references decide a queue's context beyond its edges: the mappings that
# read it, their functions, and every mapping of those functions.
_CONSUMER_MEMBERS = frozenset(
    {model.MEMBER_ESM, model.MEMBER_FUNCTION, model.MEMBER_FUNCTION_MAPPING}
)


@dataclass
class WithinTemplate:
    """What one template yields for the Spark job beyond its parsed rows."""

    # references resolved within the template, and those it cannot resolve itself
    inner: list[EdgeRow] = field(default_factory=list)
    crossing: list[EdgeRow] = field(default_factory=list)
    # (key, OWNS or NAMES): keys another template could share with this one
    touched: list[tuple[str, str]] = field(default_factory=list)
    # findings of the queues judged here, with the queue each belongs to
    judged: list[tuple[str, Finding]] = field(default_factory=list)
    # (queue uid, key, OWNS or NAMES): a touched key a judged queue's context depends on
    exposure: list[tuple[str, str, str]] = field(default_factory=list)
    # queues whose context reaches beyond the template
    pending: list[str] = field(default_factory=list)
    # QR900 of references that can never resolve
    unresolved: list[Finding] = field(default_factory=list)
    # with metrics: the ledgers of the queues judged here that have series of their own
    ledgers: list[QueueLedger] = field(default_factory=list)


def _is_local(key: str) -> bool:
    return key.startswith("local:")


def judge(parsed: model.ParsedTemplate, metrics: Metrics | None = None) -> WithinTemplate:
    """Resolve ``parsed``'s references that it can resolve itself and judge every queue whose
    context it holds whole (with ``metrics``, as the join stage would)."""
    out = WithinTemplate()
    owners: dict[str, set[str]] = defaultdict(set)
    keys_of: dict[str, set[str]] = defaultdict(set)
    for key in parsed.keys:
        owners[key.key].add(key.uid)
        keys_of[key.uid].add(key.key)
    resources = {r.uid: r for r in parsed.resources}
    resolved: list[ResolvedEdge] = []
    edge_keys: dict[str, set[str]] = defaultdict(set)
    for edge in parsed.edges:
        if edge.key in owners:
            out.inner.append(edge)
            resolved += [
                ResolvedEdge(edge.from_uid, edge.role, edge.detail, to)
                for to in sorted(owners[edge.key])
            ]
            edge_keys[edge.from_uid].add(edge.key)
        elif edge.key.startswith(NEVER_RESOLVES):
            if edge.from_uid in resources:
                out.unresolved.append(unresolved_edge_finding(resources[edge.from_uid], edge))
        else:
            out.crossing.append(edge)
    exported = {k for x in parsed.exports for k in (x.queue_key, x.function_key) if k}
    owned = {k for k in owners if not _is_local(k)} | {k for k in exported if _is_local(k)}
    # an import names what the exports of its name name: the Spark job adds those keys
    named = {
        e.key
        for e in parsed.edges
        if not (_is_local(e.key) or e.key.startswith(("export:", NEVER_RESOLVES)))
    }
    out.touched = sorted({(k, OWNS) for k in owned} | {(k, NAMES) for k in named})
    _judge_queues(out, resources, resolved, keys_of, edge_keys, metrics)
    return out


def _judge_queues(
    out: WithinTemplate,
    resources: dict[str, ResourceRow],
    resolved: list[ResolvedEdge],
    keys_of: dict[str, set[str]],
    edge_keys: dict[str, set[str]],
    metrics: Metrics | None,
) -> None:
    queues = sorted(uid for uid, r in resources.items() if r.type == model.QUEUE)
    groups: dict[str, list[tuple[str, str, ResourceRow]]] = defaultdict(list)
    depends: dict[str, set[str]] = {q: {q} for q in queues}
    for row in members(queues, resolved):
        if row.uid in resources:
            groups[row.queue_uid].append((row.member, row.detail, resources[row.uid]))
        if row.member in _CONSUMER_MEMBERS and row.queue_uid in depends:
            depends[row.queue_uid].add(row.uid)
    # A function's mappings whose own event source leaves the template are its mappings too.
    mappings_of: dict[str, set[str]] = defaultdict(set)
    for edge in resolved:
        if edge.role == model.ROLE_FUNCTION:
            mappings_of[edge.to_uid].add(edge.from_uid)
    leaving = {edge.from_uid for edge in out.crossing}
    owned = {key for key, how in out.touched if how == OWNS}
    named = {key for key, how in out.touched if how == NAMES}
    for queue in queues:
        needed = depends[queue] | {m for f in depends[queue] for m in mappings_of.get(f, ())}
        if needed & leaving:
            out.pending.append(queue)
            continue
        group = groups[queue]
        if metrics is not None:
            group = group + observations.for_group(metrics, group)
        findings, ledger = judge_group(queue, group)
        out.judged += [(queue, finding) for finding in findings]
        out.ledgers += [] if ledger is None else [ledger]
        owns = {k for uid in needed for k in keys_of[uid]} & owned
        names = {k for uid in needed for k in edge_keys[uid]} & named
        out.exposure += sorted(
            {(queue, k, OWNS) for k in owns} | {(queue, k, NAMES) for k in names}
        )
