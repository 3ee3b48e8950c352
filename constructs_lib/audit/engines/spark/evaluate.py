"""The join stage on Spark: the contexts that cross templates, judged in one Python pass.

Each template was judged where it was parsed as far as it alone could be
(``resolve/within_template.py``). Here the crossing references are resolved
(``engines/spark/resolve.py``) over the templates they involve only; the member rows of the
queues left, partitioned and sorted by queue, go through ``mapInArrow``, which builds each
``QueueContext`` and judges it with ``engines/judging.py``'s ``evaluate_group``, as the local
engine does.

Each step is a DataFrame -> DataFrame function (the frames it joins with as further arguments),
chained with ``frame.transform(step, ...)``; ``evaluate`` composes them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from constructs_lib.audit import model
from constructs_lib.audit.engines.judging import (
    evaluate_group,
    judge_group,
    unresolved_edge_finding,
)
from constructs_lib.audit.engines.spark.resolve import (
    evaluation_rows,
    members,
    resolve,
    shared_keys,
)
from constructs_lib.audit.engines.spark.schemas import (
    BATCH_ROWS,
    EDGE_COLUMNS,
    FINDING_FIELDS,
    FINDING_SCHEMA,
    LEDGER_SCHEMA,
    ROW_SCHEMAS,
    UNRESOLVED,
    RowKind,
    arrow_batch,
    collected,
    findings_batch,
    findings_frame,
    ledger_frame,
    ledger_text,
    narrow,
)
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.model import EdgeRow, ExportRow, Finding, KeyRow, QueueLedger, ResourceRow
from constructs_lib.audit.resolve import crossing

# The kinds of row the join stage reads: what each template left to it, and the rows of the
# templates it involves. ``job.py`` measures their text in the job that counts the fleet.
CROSSING_KINDS = (RowKind.EDGE, RowKind.TOUCH, RowKind.EXPOSURE, RowKind.PENDING, RowKind.EXPORT)
JOINED_KINDS = (RowKind.RESOURCE, RowKind.KEY, RowKind.EDGE, RowKind.INNER)
# Up to this much text in those rows, the join stage runs on the driver (``resolve/crossing.py``):
# two jobs collect its rows instead of the dozens of small jobs its joins take. On one
# ``local[2]`` session that made an audit of 2,000 generated templates (13 MiB) 4.7 s instead
# of 11.2 s and one of 8,000 (52 MiB) 15.5 s instead of 32.1 s, for 76 MiB more of the driver's
# memory (``python bench/spark_join.py --count 8000``). A larger fleet is joined on the
# executors, so the driver's memory stays bounded whatever the fleet.
DRIVER_JOIN_BYTES = 64 * 2**20


def _with_metrics(group: list[Any], metrics: Metrics | None) -> list[Any]:
    return group if metrics is None else group + observations.for_group(metrics, group)


def _grouped(batches: Iterable[Any]) -> Iterator[tuple[str | None, Any]]:
    """Sorted evaluation rows -> (queue uid, its members) for each context once its last member
    has been seen (a queue's members are consecutive; they may span two batches), and
    (None, (resource, edge)) for each reference that matched nothing."""
    queue_uid: str | None = None
    group: list[tuple[str, str, ResourceRow]] = []
    for batch in batches:
        columns = batch.to_pydict()
        for i in range(batch.num_rows):
            resource = ResourceRow(*(columns[c][i] for c in ResourceRow._fields))
            if columns["member"][i] == UNRESOLVED:
                yield None, (resource, EdgeRow(*(columns[c][i] for c in EDGE_COLUMNS)))
                continue
            if columns["queue_uid"][i] != queue_uid:
                if group:
                    yield queue_uid or "", group
                queue_uid, group = columns["queue_uid"][i], []
            group.append((columns["member"][i], columns["detail"][i], resource))
    if group:
        yield queue_uid or "", group


def _evaluate_batches(batches: Iterable[Any], metrics: Metrics | None = None) -> Iterator[Any]:
    """Sorted evaluation rows -> findings, each context judged once. ``metrics``, the
    aggregated series (one row per series, shipped with the task), adds what was observed."""
    found: list[Finding] = []
    for queue_uid, item in _grouped(batches):
        if queue_uid is None:
            found.append(unresolved_edge_finding(*item))
        else:
            found += evaluate_group(queue_uid, _with_metrics(item, metrics))
        if len(found) >= BATCH_ROWS:
            yield findings_batch(found)
            found = []
    if found:
        yield findings_batch(found)


def _ledger_batches(batches: Iterable[Any], metrics: Metrics) -> Iterator[Any]:
    """Sorted evaluation rows -> the ledgers of their queues (``LEDGER_SCHEMA``), each context
    judged as ``_evaluate_batches`` judges it, for the rule ids its ledger cites."""
    rows: dict[str, list[Any]] = {"queue_uid": [], "ledger": []}
    for queue_uid, item in _grouped(batches):
        if queue_uid is None:
            continue
        ledger = judge_group(queue_uid, _with_metrics(item, metrics))[1]
        if ledger is not None:
            rows["queue_uid"].append(queue_uid)
            rows["ledger"].append(ledger_text(ledger))
    if rows["queue_uid"]:
        yield arrow_batch(rows, LEDGER_SCHEMA)


def involved_templates(edges: DataFrame, touches: DataFrame, shared: DataFrame) -> DataFrame:
    """Crossing edges and touches (with ``src``), shared keys -> the templates (``src``) the join
    stage reads: those with references they could not resolve, and those that touch a key
    another template touches too."""
    return (
        edges.select("src")
        .unionByName(touches.join(shared.select("key"), "key", "left_semi").select("src"))
        .distinct()
    )


def crossed_queues(exposures: DataFrame, shared: DataFrame) -> DataFrame:
    """Exposures (with ``src``), shared keys -> the queues judged where they were parsed that
    are judged again here (``queue_uid``): another template names a key their context owns, or
    owns a key their context names."""
    elsewhere = shared.withColumnRenamed("how", "other")
    return (
        exposures.join(elsewhere, "key")
        .filter(
            (F.col("other") != F.col("how"))
            & ((F.col("first") != F.col("src")) | (F.col("last") != F.col("src")))
        )
        .select("queue_uid")
        .distinct()
    )


def queues_left(pending: DataFrame, crossed: DataFrame) -> DataFrame:
    """Pending queues, crossed queues -> every queue the join stage judges (``queue_uid``)."""
    return pending.select("queue_uid").unionByName(crossed).distinct()


def of_templates(wide: DataFrame, templates: DataFrame) -> DataFrame:
    """Wide rows -> those of ``templates`` (``src``)."""
    return wide.join(templates, "src", "left_semi")


def queues_of(resources: DataFrame, remainder: DataFrame) -> DataFrame:
    """Resources -> the queues among them that the join stage judges."""
    return resources.join(remainder.withColumnRenamed("queue_uid", "uid"), "uid", "left_semi")


def contexts(queues: DataFrame, resolved: DataFrame, remainder: DataFrame) -> DataFrame:
    """Queues and resolved edges -> the members of the contexts the join stage judges."""
    return members(queues, resolved).join(remainder, "queue_uid", "left_semi")


def judged_contexts(rows: DataFrame, metrics: Metrics | None = None) -> DataFrame:
    """Evaluation rows, sorted by queue -> their findings (``FINDING_SCHEMA``), judged in one
    Python pass (with ``metrics``, the observed series)."""
    return rows.mapInArrow(functools.partial(_evaluate_batches, metrics=metrics), FINDING_SCHEMA)


def judged_ledgers(rows: DataFrame, metrics: Metrics) -> DataFrame:
    """Evaluation rows, sorted by queue -> the ledgers of their queues (``LEDGER_SCHEMA``)."""
    return rows.mapInArrow(functools.partial(_ledger_batches, metrics=metrics), LEDGER_SCHEMA)


def ledgers_where_parsed(ledgers: DataFrame, crossed: DataFrame) -> DataFrame:
    """Ledger rows, crossed queues -> those of the queues judged where they were parsed and not
    again here."""
    return ledgers.join(crossed, "queue_uid", "left_anti").select(*LEDGER_SCHEMA.names)


def judged_where_parsed(judged: DataFrame, crossed: DataFrame) -> DataFrame:
    """Judged rows, crossed queues -> the findings of the queues judged where they were parsed
    and not again here."""
    return judged.join(crossed, "queue_uid", "left_anti").select(*FINDING_FIELDS)


def _share(remainder: DataFrame, involved: DataFrame) -> dict[str, int]:
    """How many queues the join stage judges and how many templates' rows it reads: one job."""
    counted = (
        remainder.agg(F.count(F.lit(1)).alias("queues"))
        .crossJoin(involved.agg(F.count(F.lit(1)).alias("templates")))
        .first()
    )
    assert counted is not None  # an aggregate without grouping has exactly one row
    return {"queues": int(counted["queues"]), "templates": int(counted["templates"])}


def evaluate(
    wide: DataFrame, partitions: int, metrics: Metrics | None = None, on_driver: bool = False
) -> tuple[DataFrame, dict[str, int], DataFrame | None]:
    """The parsed rows -> (every finding, the join stage's share of the fleet: how many queues
    were judged here and how many templates' rows were read here, and with ``metrics`` the
    ledger of every queue with series of its own, each from where its context was judged).

    The findings: those of the queues judged where their template was parsed, unless another
    template shares a key their context depends on; the contexts judged here, of those queues
    and of the queues whose references leave their template, over the templates involved (those
    with such references, and those that share a key with another); the references that match
    nothing; and the notes and unreadable files found while parsing. ``on_driver``: the rows
    the join stage reads are few enough to join on the driver (``DRIVER_JOIN_BYTES``)."""
    if on_driver:
        return _evaluated_on_driver(wide, metrics)
    # What the templates left to the join stage, read from the parsed rows once: the stage's
    # first sets read these kinds eleven times.
    crossing = _kept(wide.filter(F.col("tag").isin(*CROSSING_KINDS)))
    rows = {
        kind: narrow(crossing if kind in CROSSING_KINDS else wide, kind, with_src=True)
        for kind in ROW_SCHEMAS
    }
    edges, touches = rows[RowKind.EDGE], rows[RowKind.TOUCH]
    exports = rows[RowKind.EXPORT].drop("src")
    shared = _kept(shared_keys(touches, edges, exports))
    involved = _kept(involved_templates(edges, touches, shared))
    crossed = _kept(rows[RowKind.EXPOSURE].transform(crossed_queues, shared))
    remainder = _kept(rows[RowKind.PENDING].transform(queues_left, crossed))
    share = _share(remainder, involved)
    judged_there, ledgers_there = _judged_across(
        wide, involved, remainder, exports, partitions, metrics
    )
    judged_here = rows[RowKind.JUDGED].transform(judged_where_parsed, crossed)
    findings = judged_here.unionByName(judged_there).unionByName(rows[RowKind.FINDING].drop("src"))
    if ledgers_there is None:
        return findings, share, None
    ledgers_here = rows[RowKind.LEDGER].transform(ledgers_where_parsed, crossed)
    return findings, share, ledgers_here.unionByName(ledgers_there)


def _evaluated_on_driver(
    wide: DataFrame, metrics: Metrics | None
) -> tuple[DataFrame, dict[str, int], DataFrame | None]:
    """``evaluate`` with the join stage on the driver: its rows collected in two jobs and
    judged by ``resolve/crossing.py``, as the local engine judges a fleet."""
    left = collected(wide, CROSSING_KINDS)
    rows = crossing.Crossing(
        edges=[(EdgeRow(*row[:-1]), row[-1]) for row in left[RowKind.EDGE]],
        touches=[(key, how, src) for key, how, src in left[RowKind.TOUCH]],
        exposures=[(queue, key, how, src) for queue, key, how, src in left[RowKind.EXPOSURE]],
        pending=[row[0] for row in left[RowKind.PENDING]],
        exports=[ExportRow(*row[:-1]) for row in left[RowKind.EXPORT]],
    )
    planned = crossing.plan(rows)
    found: list[Finding] = []
    ledgers: list[QueueLedger] = []
    if planned.remainder or rows.edges:
        involved = wide.filter(F.col("src").isin(sorted(planned.involved)))
        joined = collected(involved, JOINED_KINDS)
        found, ledgers = crossing.judged_remainder(
            planned.remainder,
            [ResourceRow(*row[:-1]) for row in joined[RowKind.RESOURCE]],
            [KeyRow(*row[:-1]) for row in joined[RowKind.KEY]],
            [EdgeRow(*row[:-1]) for kind in (RowKind.EDGE, RowKind.INNER) for row in joined[kind]],
            rows.exports,
            metrics,
        )
    judged_here, ledgers_here = narrow(wide, RowKind.JUDGED), narrow(wide, RowKind.LEDGER)
    if planned.crossed:
        again = ~F.col("queue_uid").isin(sorted(planned.crossed))
        judged_here, ledgers_here = judged_here.filter(again), ledgers_here.filter(again)
    findings = (
        judged_here.select(*FINDING_FIELDS)
        .unionByName(findings_frame(wide.sparkSession, found))
        .unionByName(narrow(wide, RowKind.FINDING))
    )
    share = {"queues": len(planned.remainder), "templates": len(planned.involved)}
    if metrics is None:
        return findings, share, None
    return findings, share, ledgers_here.unionByName(ledger_frame(wide.sparkSession, ledgers))


def _judged_across(
    wide: DataFrame,
    involved: DataFrame,
    remainder: DataFrame,
    exports: DataFrame,
    partitions: int,
    metrics: Metrics | None,
) -> tuple[DataFrame, DataFrame | None]:
    """The findings of the ``remainder`` queues, judged over the rows of the ``involved``
    templates: their references resolved across them, each queue's context gathered; with
    ``metrics``, their ledgers too, in a pass of their own over the same rows, kept once."""
    joined = _kept(wide.transform(of_templates, involved))
    of_joined = {
        kind: narrow(joined, kind)
        for kind in (RowKind.RESOURCE, RowKind.KEY, RowKind.EDGE, RowKind.INNER)
    }
    resources = of_joined[RowKind.RESOURCE]
    resolved, unresolved = resolve(
        of_joined[RowKind.EDGE].unionByName(of_joined[RowKind.INNER]),
        of_joined[RowKind.KEY],
        exports,
    )
    resolved = _kept(resolved)
    rows = (
        resources.transform(queues_of, remainder)
        .transform(contexts, resolved, remainder)
        .transform(evaluation_rows, unresolved, resources, partitions)
    )
    if metrics is None:
        return rows.transform(judged_contexts, metrics), None
    rows = _kept(rows)
    return rows.transform(judged_contexts, metrics), rows.transform(judged_ledgers, metrics)


def _kept(frame: DataFrame) -> DataFrame:
    """``frame`` computed once and kept on the executors, as a plan of its own.

    The join stage reads each of these sets several times. Kept with ``persist``, every later
    plan still held the whole plan they came from (the parse's list of inputs among it), and
    Spark spent longer analysing and matching those plans against its cache than running them.
    A local checkpoint cuts that lineage. Its price: a block lost with its executor fails the
    run instead of being computed again; the sets are what crosses templates, made in seconds
    after the parse, whose own cached rows keep their lineage."""
    return frame.localCheckpoint(eager=True)


def queues_with_metrics(wide: DataFrame, metrics: Metrics) -> int:
    """How many deployed queues have series of their own in ``metrics``: the driver reads the
    rows of the queues that carry an ARN, not the fleet's."""
    queues = narrow(wide, RowKind.RESOURCE).filter(
        (F.col("type") == model.QUEUE) & F.col("properties").contains(model.PHYSICAL)
    )
    rows = queues.select(*ResourceRow._fields).toLocalIterator()
    return sum(observations.observed(metrics, ResourceRow(*row)) for row in rows)
