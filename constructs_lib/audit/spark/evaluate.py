"""The evaluate stage on Spark: each queue's context judged in one Python pass on the executors.

The member rows, partitioned and sorted by queue, go through ``mapInArrow``, which builds each
``QueueContext`` and judges it with ``judging.evaluate_group``, as the local engine does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from constructs_lib.audit import model, observations
from constructs_lib.audit.judging import evaluate_group, unresolved_edge_finding
from constructs_lib.audit.model import EdgeRow, Finding, ResourceRow
from constructs_lib.audit.observations import Metrics
from constructs_lib.audit.spark.resolve import evaluation_rows, members, resolve
from constructs_lib.audit.spark.schemas import (
    BATCH_ROWS,
    EDGE_COLUMNS,
    FINDING_SCHEMA,
    ROW_SCHEMAS,
    UNRESOLVED,
    findings_batch,
    narrow,
)


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


def evaluate(wide: DataFrame, partitions: int, metrics: Metrics | None = None) -> DataFrame:
    """The parsed rows -> every finding: judged contexts, unresolved references, and the notes
    and unreadable files found while parsing."""
    frames = {tag: narrow(wide, tag) for tag in ROW_SCHEMAS}
    resolved, unresolved = resolve(frames["edge"], frames["key"], frames["export"])
    resources = frames["resource"]
    queues = resources.filter(F.col("type") == model.QUEUE)
    judged = evaluation_rows(
        members(queues, resolved), unresolved, resources, partitions
    ).mapInArrow(functools.partial(_evaluate_batches, metrics=metrics), FINDING_SCHEMA)
    return judged.unionByName(frames["finding"])


def queues_with_metrics(wide: DataFrame, metrics: Metrics) -> int:
    """How many deployed queues have series of their own in ``metrics``: the driver reads the
    rows of the queues that carry an ARN, not the fleet's."""
    queues = narrow(wide, "resource").filter(
        (F.col("type") == model.QUEUE) & F.col("properties").contains(model.PHYSICAL)
    )
    rows = queues.select(*ResourceRow._fields).toLocalIterator()
    return sum(observations.observed(metrics, ResourceRow(*row)) for row in rows)
