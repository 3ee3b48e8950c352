"""The join stage on Spark: the contexts that cross templates, judged in one Python pass.

Each template was judged where it was parsed as far as it alone could be
(``within_template.py``). Here the crossing references are resolved (``resolve.py``) over the
templates they involve only; the member rows of the queues left, partitioned and sorted by
queue, go through ``mapInArrow``, which builds each ``QueueContext`` and judges it with
``judging.evaluate_group``, as the local engine does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from constructs_lib.audit import model
from constructs_lib.audit.engines.judging import evaluate_group, unresolved_edge_finding
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
    ROW_SCHEMAS,
    UNRESOLVED,
    findings_batch,
    narrow,
)
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.model import EdgeRow, Finding, ResourceRow


def _judge(queue_uid: str, group: list[Any], metrics: Metrics | None) -> list[Finding]:
    if metrics is not None:
        group = group + observations.for_group(metrics, group)
    return evaluate_group(queue_uid, group)


def _evaluate_batches(batches: Iterable[Any], metrics: Metrics | None = None) -> Iterator[Any]:
    """Sorted evaluation rows -> findings. A queue's members are consecutive (they may span two
    batches), so each context is judged once its last member has been seen. ``metrics``, the
    aggregated series (one row per series, shipped with the task), adds what was observed."""
    found: list[Finding] = []
    queue_uid: str | None = None
    group: list[tuple[str, str, ResourceRow]] = []
    for batch in batches:
        columns = batch.to_pydict()
        for i in range(batch.num_rows):
            resource = ResourceRow(*(columns[c][i] for c in ResourceRow._fields))
            if columns["member"][i] == UNRESOLVED:
                edge = EdgeRow(*(columns[c][i] for c in EDGE_COLUMNS))
                found.append(unresolved_edge_finding(resource, edge))
                continue
            if columns["queue_uid"][i] != queue_uid:
                if group:
                    found += _judge(queue_uid or "", group, metrics)
                queue_uid, group = columns["queue_uid"][i], []
            group.append((columns["member"][i], columns["detail"][i], resource))
        if len(found) >= BATCH_ROWS:
            yield findings_batch(found)
            found = []
    if group:
        found += _judge(queue_uid or "", group, metrics)
    if found:
        yield findings_batch(found)


def evaluate(
    wide: DataFrame, partitions: int, metrics: Metrics | None = None
) -> tuple[DataFrame, dict[str, int]]:
    """The parsed rows -> (every finding, the join stage's share of the fleet: how many queues
    were judged here and how many templates' rows were read here).

    The findings: those of the queues judged where their template was parsed, unless another
    template shares a key their context depends on; the contexts judged here, of those queues
    and of the queues whose references leave their template, over the templates involved (those
    with such references, and those that share a key with another); the references that match
    nothing; and the notes and unreadable files found while parsing."""
    rows = {tag: narrow(wide, tag, with_src=True) for tag in ROW_SCHEMAS}
    exports = rows["export"].drop("src")
    shared = _kept(shared_keys(rows["touch"], rows["edge"], exports))
    involved = _kept(
        rows["edge"]
        .select("src")
        .unionByName(rows["touch"].join(shared.select("key"), "key", "left_semi").select("src"))
        .distinct()
    )
    # A queue judged where it was parsed is judged again here if another template names a key
    # its context owns, or owns a key its context names.
    elsewhere = shared.withColumnRenamed("how", "other")
    crossed = _kept(
        rows["exposure"]
        .join(elsewhere, "key")
        .filter(
            (F.col("other") != F.col("how"))
            & ((F.col("first") != F.col("src")) | (F.col("last") != F.col("src")))
        )
        .select("queue_uid")
        .distinct()
    )
    remainder = _kept(rows["pending"].select("queue_uid").unionByName(crossed).distinct())
    counted = (
        remainder.agg(F.count(F.lit(1)).alias("queues"))
        .crossJoin(involved.agg(F.count(F.lit(1)).alias("templates")))
        .first()
    )
    assert counted is not None  # an aggregate without grouping has exactly one row
    share = {"queues": int(counted["queues"]), "templates": int(counted["templates"])}

    joined = _kept(wide.join(involved, "src", "left_semi"))
    of_joined = {tag: narrow(joined, tag) for tag in ("resource", "key", "edge", "inner")}
    resources = of_joined["resource"]
    resolved, unresolved = resolve(
        of_joined["edge"].unionByName(of_joined["inner"]), of_joined["key"], exports
    )
    resolved = _kept(resolved)
    queues = resources.join(remainder.withColumnRenamed("queue_uid", "uid"), "uid", "left_semi")
    contexts = members(queues, resolved).join(remainder, "queue_uid", "left_semi")
    judged_there = evaluation_rows(contexts, unresolved, resources, partitions).mapInArrow(
        functools.partial(_evaluate_batches, metrics=metrics), FINDING_SCHEMA
    )
    judged_here = rows["judged"].join(crossed, "queue_uid", "left_anti").select(*FINDING_FIELDS)
    findings = judged_here.unionByName(judged_there).unionByName(rows["finding"].drop("src"))
    return findings, share


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
    queues = narrow(wide, "resource").filter(
        (F.col("type") == model.QUEUE) & F.col("properties").contains(model.PHYSICAL)
    )
    rows = queues.select(*ResourceRow._fields).toLocalIterator()
    return sum(observations.observed(metrics, ResourceRow(*row)) for row in rows)
