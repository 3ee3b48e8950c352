"""The join stage in one process: what ``engines/spark/evaluate.py`` does with joins when the
rows it reads are few enough for the driver, with dictionaries.

Each template was judged where it was parsed as far as it alone could be
(``within_template.py``). Across the fleet, a key is shared when more than one template touches
it (an import counts as naming what every export of its name names, from a template of its own).
The templates involved are those with references they could not resolve and those touching a
shared key; a queue judged where it was parsed is judged again when another template touches one
of the keys its context depends on the other way (owns what it names, or names what it owns).
Those queues and the pending ones are judged here over the involved templates' rows, with
``graph.py``'s ``resolve`` and ``contexts``, as the local engine judges the whole fleet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from constructs_lib.audit.engines.judging import judge_group, unresolved_edge_finding
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.model import EdgeRow, ExportRow, Finding, KeyRow, QueueLedger, ResourceRow
from constructs_lib.audit.resolve.graph import contexts, resolve
from constructs_lib.audit.resolve.within_template import NAMES

# Appended to an importing template's name where its imports touch keys: an import may resolve
# to a resource of its own template and of others, so it counts as another template.
IMPORTING = "\u0000import"


@dataclass
class Crossing:
    """What every template left to the join stage, each row with its template (``src``)."""

    edges: list[tuple[EdgeRow, str]] = field(default_factory=list)
    # (key, OWNS or NAMES, src)
    touches: list[tuple[str, str, str]] = field(default_factory=list)
    # (queue uid, key, OWNS or NAMES, src)
    exposures: list[tuple[str, str, str, str]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    exports: list[ExportRow] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    """The templates whose rows the join stage reads, the queues judged where they were parsed
    that it judges again (``crossed``), and every queue it judges (``remainder``)."""

    involved: frozenset[str]
    crossed: frozenset[str]
    remainder: tuple[str, ...]


def _import_touches(crossing: Crossing) -> Iterable[tuple[str, str, str]]:
    by_name: dict[str, list[ExportRow]] = defaultdict(list)
    for export in crossing.exports:
        by_name[export.name].append(export)
    for edge, src in crossing.edges:
        if edge.key.startswith("export:"):
            for export in by_name.get(edge.key[len("export:") :], ()):
                for key in (export.queue_key, export.function_key):
                    if key:
                        yield key, NAMES, src + IMPORTING


def shared_keys(crossing: Crossing) -> dict[tuple[str, str], tuple[str, str]]:
    """(key, how) -> (first, last template touching it that way), for the keys more than one
    template touches."""
    touches = [*crossing.touches, *_import_touches(crossing)]
    templates: dict[str, set[str]] = defaultdict(set)
    for key, _how, src in touches:
        templates[key].add(src)
    shared: dict[tuple[str, str], tuple[str, str]] = {}
    for key, how, src in touches:
        if len(templates[key]) > 1:
            first, last = shared.get((key, how), (src, src))
            shared[key, how] = (min(first, src), max(last, src))
    return shared


def plan(crossing: Crossing) -> Plan:
    """The join stage's share of the fleet, from the rows its templates left to it."""
    ways: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for (key, how), (first, last) in shared_keys(crossing).items():
        ways[key].append((how, first, last))
    involved = {src for _edge, src in crossing.edges}
    involved |= {src for key, _how, src in crossing.touches if key in ways}
    crossed = {
        queue
        for queue, key, how, src in crossing.exposures
        for other, first, last in ways.get(key, ())
        if other != how and (first != src or last != src)
    }
    remainder = tuple(sorted({*crossing.pending, *crossed}))
    return Plan(frozenset(involved), frozenset(crossed), remainder)


def judge_remainder(
    remainder: Iterable[str],
    resources: Iterable[ResourceRow],
    keys: Iterable[KeyRow],
    edges: Iterable[EdgeRow],
    exports: Iterable[ExportRow],
    metrics: Metrics | None = None,
) -> list[Finding]:
    """The findings of the ``remainder`` queues over the involved templates' rows (their
    resources, keys and every edge, resolved or not where they were parsed), and those of the
    references among them that match nothing."""
    return judged_remainder(remainder, resources, keys, edges, exports, metrics)[0]


def judged_remainder(
    remainder: Iterable[str],
    resources: Iterable[ResourceRow],
    keys: Iterable[KeyRow],
    edges: Iterable[EdgeRow],
    exports: Iterable[ExportRow],
    metrics: Metrics | None = None,
) -> tuple[list[Finding], list[QueueLedger]]:
    """``judge_remainder``'s findings, and with ``metrics`` the ledgers of those queues."""
    by_uid = {r.uid: r for r in resources}
    resolved, missing = resolve(edges, keys, exports)
    queues = sorted(remainder)
    groups = contexts(queues, resolved, by_uid)
    found: list[Finding] = []
    ledgers: list[QueueLedger] = []
    for queue in queues:
        group = groups[queue]
        if metrics is not None:
            group = group + observations.for_group(metrics, group)
        findings, ledger = judge_group(queue, group)
        found += findings
        ledgers += [] if ledger is None else [ledger]
    found += [
        unresolved_edge_finding(by_uid[e.from_uid], e) for e in missing if e.from_uid in by_uid
    ]
    return found, ledgers
