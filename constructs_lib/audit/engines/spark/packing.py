"""Metric stream objects packed into Spark read tasks by size, as Spark's file sources pack
files (``FilePartition``): thousands of small Firehose objects are a few tasks, one large
object a task of its own, and every core reads. ``planned_objects`` lays the plan out as a
DataFrame whose partition ``n`` holds task ``n``'s objects, for ``metrics.py``'s read."""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from constructs_lib.audit.metrics import stream

# Spark's file sources pack files by ``spark.sql.files.maxPartitionBytes`` (default 128 MiB)
# and ``spark.sql.files.openCostInBytes`` (4 MiB, for HDFS; ours 64 KiB unless set): 5,716 objects
# of 4.5 KB took 17.6 s, and 26.4 s at 4 MiB (bench/spark_metrics_read.py, local[2]).
MAX_PARTITION_BYTES: Final = 128 * 2**20
OPEN_COST_BYTES: Final = 64 * 2**10
# Task counts tried, each a multiple of the cores, before the even deal is given up for Spark's
# fill: dealing objects evenly may put more than ``max_bytes`` in a task, more tasks less so.
BALANCING_TRIES: Final = 3
# Spark's size suffixes (JavaUtils.byteStringAsBytes): binary multiples.
_BYTE_UNITS: Final = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
# The rows of the range that counts a Spark Connect server's default parallelism: each of up
# to this many partitions holds a row.
PARALLELISM_PROBE_ROWS: Final = 1024
_BYTE_STRING = re.compile(r"^\s*(\d+)\s*([a-z]?)b?\s*$")
OBJECT_SCHEMA: Final = StructType(
    [
        StructField("task", LongType(), False),
        StructField("location", StringType(), False),
        StructField("size", LongType(), False),
    ]
)


@dataclass(frozen=True)
class TaskPacking:
    """How objects are packed into read tasks, as Spark's ``FilePartition`` packs files: at
    most ``max_bytes`` a task (an object over it alone in its task: a gzip stream cannot be
    split), each object costing its size plus ``open_cost``, and tasks in a multiple of
    ``min_tasks`` (the cores) when there are as many objects (every core reads in every
    wave)."""

    max_bytes: int = MAX_PARTITION_BYTES
    open_cost: int = OPEN_COST_BYTES
    min_tasks: int = 2


def plan_tasks(sizes: Sequence[int], packing: TaskPacking) -> list[list[int]]:
    """The objects' indices in each task. First as ``FilePartition`` packs files: a task reads
    ``max_bytes``, lowered to the total (sizes plus open costs) over ``min_tasks`` but never
    under ``open_cost``; objects go, largest first, into the current task until the next would
    overflow it. On more than one core, the same objects are then dealt into a multiple of
    ``min_tasks`` tasks of even cost (``_balanced``), the fewest of ``BALANCING_TRIES`` counts
    that keep every task of more than one object within ``max_bytes``: the lowered target only asks that every core read,
    and a last, part-filled task would run alone in a wave of its own."""
    if not sizes:
        return []
    cost = [max(0, size) + packing.open_cost for size in sizes]
    per_core = sum(cost) // max(1, packing.min_tasks)
    split = min(packing.max_bytes, max(packing.open_cost, per_core))
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    tasks: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for index in order:
        if current and filled + sizes[index] > split:
            tasks.append(current)
            current, filled = [], 0
        current.append(index)
        filled += cost[index]
    tasks.append(current)
    cores = max(1, packing.min_tasks)
    if cores == 1:
        return tasks
    waves = max(1, len(tasks) // cores)
    for count in range(waves * cores, (waves + BALANCING_TRIES) * cores, cores):
        balanced = _balanced(order, sizes, cost, min(count, len(sizes)))
        if all(len(t) == 1 or sum(sizes[i] for i in t) <= packing.max_bytes for t in balanced):
            return balanced
    return tasks


def _balanced(
    order: list[int], sizes: Sequence[int], cost: list[int], count: int
) -> list[list[int]]:
    """The objects, largest first (``order``), each dealt to the task of least cost so far:
    ``count`` tasks whose costs differ by at most one object's (Graham's LPT rule)."""
    loads = [(0, task) for task in range(count)]
    tasks: list[list[int]] = [[] for _ in range(count)]
    for index in order:
        load, task = heapq.heappop(loads)
        tasks[task].append(index)
        heapq.heappush(loads, (load + cost[index], task))
    return tasks


def byte_size(text: str) -> int:
    """A Spark size setting (``134217728b``, ``128m``, ``4MB``) in bytes."""
    match = _BYTE_STRING.match(text.lower())
    if match is None or match.group(2) not in _BYTE_UNITS:
        raise ValueError(f"not a size: {text!r}")
    return int(match.group(1)) * _BYTE_UNITS[match.group(2)]


def session_packing(spark: SparkSession) -> TaskPacking:
    """The session's packing settings, read through ``spark.conf`` as ``FilePartition`` reads
    them; at least the session's default parallelism in tasks."""

    def setting(key: str) -> str | None:
        value = spark.conf.get(key, None)
        return None if value is None else str(value)

    max_bytes = setting("spark.sql.files.maxPartitionBytes")
    open_cost = setting("spark.sql.files.openCostInBytes")
    return TaskPacking(
        max_bytes=MAX_PARTITION_BYTES if max_bytes is None else byte_size(max_bytes),
        open_cost=OPEN_COST_BYTES if open_cost is None else byte_size(open_cost),
        min_tasks=_parallelism(spark, setting),
    )


def _parallelism(spark: SparkSession, setting: Any) -> int:
    for key in (
        "spark.sql.files.minPartitionNum",
        "spark.sql.leafNodeDefaultParallelism",
        "spark.default.parallelism",
    ):
        value = setting(key)
        if value is not None:
            return max(1, int(value))
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return max(1, spark.sparkContext.defaultParallelism)
    return probed_parallelism(spark)


def probed_parallelism(spark: SparkSession) -> int:
    """Spark Connect has no SparkContext: a range without a partition count is split into the
    server's default parallelism, and one small job finds its last partition."""
    ids = spark.range(0, PARALLELISM_PROBE_ROWS).select(F.spark_partition_id().alias("id"))
    last = ids.agg(F.max("id")).first()
    return max(1, int(last[0]) + 1) if last is not None and last[0] is not None else 1


def planned_objects(
    spark: SparkSession, listed: list[stream.StreamObject], packing: TaskPacking
) -> DataFrame:
    """The objects (``OBJECT_SCHEMA``), task ``n`` of ``plan_tasks`` in partition ``n``: a range
    of a row per task and partition joined to the broadcast objects keeps its partitioning."""
    import pyarrow as pa

    tasks = plan_tasks([o.size for o in listed], packing)
    rows = [(task, listed[i]) for task, members in enumerate(tasks) for i in members]
    table = pa.table(
        {
            "task": pa.array([task for task, _ in rows], pa.int64()),
            "location": pa.array([o.location for _, o in rows], pa.string()),
            "size": pa.array([o.size for _, o in rows], pa.int64()),
        }
    )
    objects = spark.createDataFrame(table, OBJECT_SCHEMA)
    slots = spark.range(0, len(tasks), 1, max(1, len(tasks))).withColumnRenamed("id", "task")
    return slots.join(F.broadcast(objects), "task").select(*OBJECT_SCHEMA.fieldNames())
