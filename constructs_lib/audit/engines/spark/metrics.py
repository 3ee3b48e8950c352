"""The metrics input (``--metrics``) on Spark: metric stream objects -> series and coverage.

The driver lists the objects (paths or keys and sizes: ``metrics.stream``) and skips those the
window does not need; it packs the rest into tasks by size as Spark's file sources do
(``plan_tasks``: thousands of small Firehose objects are a few tasks), and each task reads and
decodes its objects in Python (``mapInArrow`` with ``stream.read_points``, as the local engine
does), so no data point reaches the driver and no Hadoop S3 connector is needed: an ``s3://``
object is read with boto3 on the executor, on a classic session or Spark Connect alike.
The aggregation is the DataFrame API's ``groupBy``; the driver collects only the aggregates,
which are as many as the fleet has series.

The decoded rows are persisted once: the window's end (the newest data point) must be known
before a data point can be kept or dropped, and reading the objects twice would cost twice.
On disk only: on a local master the executor is the driver's JVM, and 10^8 data points held
in memory there ran its default 1 GiB heap out; on disk, 10^7 read no slower (28.5 s, 31.7 s).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from constructs_lib.audit.metrics import stream
from constructs_lib.audit.metrics.aggregate import COVERAGE_KEYS, SERIES_KEYS, MetricsInput
from constructs_lib.audit.metrics.decode import (
    DEFAULT_STREAM_LIMITS,
    POINT_SCHEMA,
    SQS,
    StreamLimits,
)
from constructs_lib.audit.metrics.request import DEFAULT_WINDOW_DAYS, window
from constructs_lib.audit.model import CoverageRow, SeriesRow

# Spark's file sources pack files by ``spark.sql.files.maxPartitionBytes`` (default 128 MiB)
# and ``spark.sql.files.openCostInBytes`` (4 MiB, for HDFS; ours 64 KiB unless set): 5,716 objects
# of 4.5 KB took 17.6 s, and 26.4 s at 4 MiB (bench/spark_metrics_read.py, local[2]).
MAX_PARTITION_BYTES: Final = 128 * 2**20
OPEN_COST_BYTES: Final = 64 * 2**10
# Spark's size suffixes (JavaUtils.byteStringAsBytes): binary multiples.
_BYTE_UNITS: Final = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
# The rows of the range that counts a Spark Connect server's default parallelism: each of up
# to this many partitions holds a row.
PARALLELISM_PROBE_ROWS: Final = 1024
_BYTE_STRING = re.compile(r"^\s*(\d+)\s*([a-z]?)b?\s*$")
# Rows per Arrow batch a read task hands back to the JVM.
BATCH_ROWS: Final = 65_536

OBJECT_SCHEMA: Final = StructType(
    [
        StructField("task", LongType(), False),
        StructField("location", StringType(), False),
        StructField("size", LongType(), False),
    ]
)
_SPARK_TYPES: Final = {"string": StringType(), "double": DoubleType(), "int64": LongType()}
# One schema for both kinds of row a read task yields: a data point (``object`` null) and,
# once per object, what it held (``object`` set, with its data point count and problem).
DECODED_SCHEMA: Final = StructType(
    [
        StructField("object", StringType(), True),
        StructField("reason", StringType(), True),
        StructField("data_points", LongType(), True),
        *(StructField(f.name, _SPARK_TYPES[str(f.type)], True) for f in POINT_SCHEMA),
    ]
)
SERIES_SCHEMA: Final = StructType(
    [
        *(StructField(name, StringType(), False) for name in SERIES_KEYS),
        *(StructField(n, DoubleType(), True) for n in ("maximum", "total", "samples")),
        StructField("first", LongType(), True),
        StructField("last", LongType(), True),
    ]
)
COVERAGE_SCHEMA: Final = StructType(
    [
        *(StructField(name, StringType(), False) for name in COVERAGE_KEYS),
        StructField("first", LongType(), True),
        StructField("last", LongType(), True),
    ]
)


def _read_batches(batches: Iterable[Any], limits: StreamLimits) -> Iterator[Any]:
    """One task's objects -> their data points, several objects' in a batch of up to
    ``BATCH_ROWS``, then one row per object (on the executor)."""
    import pyarrow as pa

    pending: list[Any] = []
    held = 0
    objects, reasons, counts = list[str](), list[str | None](), list[int]()
    for batch in batches:
        for location, size in zip(
            batch.column("location").to_pylist(), batch.column("size").to_pylist(), strict=True
        ):
            decoded = stream.read_points(location, size, limits)
            if decoded.points.num_rows:
                pending.append(decoded.points)
                held += decoded.points.num_rows
            objects.append(location)
            reasons.append(decoded.problem)
            counts.append(decoded.data_points)
            if held >= BATCH_ROWS:
                yield from _point_batches(pending)
                pending, held = [], 0
    yield from _point_batches(pending)
    if objects:
        summary: dict[str, list[Any]] = {f.name: [None] * len(objects) for f in DECODED_SCHEMA}
        summary.update(object=objects, reason=reasons, data_points=counts)
        yield pa.RecordBatch.from_pydict(summary, schema=_arrow(DECODED_SCHEMA))


def _point_batches(tables: list[Any]) -> Iterator[Any]:
    """Objects' data points (``POINT_SCHEMA`` tables) as ``DECODED_SCHEMA`` batches."""
    import pyarrow as pa

    if not tables:
        return
    points = pa.concat_tables(tables).combine_chunks()
    rows = points.num_rows
    table = pa.table(
        [
            pa.nulls(rows, pa.string()),
            pa.nulls(rows, pa.string()),
            pa.nulls(rows, pa.int64()),
            *points.columns,
        ],
        names=[f.name for f in DECODED_SCHEMA.fields],
    )
    yield from table.to_batches(max_chunksize=BATCH_ROWS)


def _arrow(schema: StructType) -> Any:
    import pyarrow as pa

    kinds = {"string": pa.string(), "double": pa.float64(), "bigint": pa.int64()}
    return pa.schema([(f.name, kinds[f.dataType.simpleString()]) for f in schema.fields])


@dataclass(frozen=True)
class TaskPacking:
    """How objects are packed into read tasks, as Spark's ``FilePartition`` packs files: at
    most ``max_bytes`` a task (an object over it alone in its task: a gzip stream cannot be
    split), each object costing its size plus ``open_cost``, and at least ``min_tasks`` tasks
    when there are as many objects (every core reads)."""

    max_bytes: int = MAX_PARTITION_BYTES
    open_cost: int = OPEN_COST_BYTES
    min_tasks: int = 2


def plan_tasks(sizes: Sequence[int], packing: TaskPacking) -> list[list[int]]:
    """The objects' indices in each task, as ``FilePartition`` packs files: a task reads
    ``max_bytes``, lowered to the total (sizes plus open costs) over ``min_tasks`` but never
    under ``open_cost``; objects go, largest first, into the current task until the next would
    overflow it. Fewer than ``min_tasks`` tasks: each object goes to the least loaded instead."""
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
    wanted = min(packing.min_tasks, len(sizes))
    if len(tasks) >= wanted:
        return tasks
    tasks, loads = [[] for _ in range(wanted)], [0] * wanted
    for index in order:
        least = loads.index(min(loads))
        tasks[least].append(index)
        loads[least] += cost[index]
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


def decoded_frame(
    spark: SparkSession,
    listed: list[stream.StreamObject],
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
    packing: TaskPacking | None = None,
) -> DataFrame:
    """The objects' data points and per-object rows (``DECODED_SCHEMA``), not yet computed."""
    objects = planned_objects(spark, listed, packing or session_packing(spark))
    return objects.mapInArrow(functools.partial(_read_batches, limits=limits), DECODED_SCHEMA)


def points_in_window(decoded: DataFrame, start: int | None) -> DataFrame:
    """Decoded rows -> the data points among them (not the per-object rows) newer than the
    window's ``start`` (all of them when there is none)."""
    points = decoded.filter(F.col("object").isNull())
    if start is not None:
        points = points.filter(F.col("timestamp") > F.lit(start))
    return points


def series_frame(points: DataFrame) -> DataFrame:
    """Data points (already in the window) -> one row per series (``SERIES_SCHEMA``)."""
    return (
        points.filter(F.col("dimension_name") != "")
        .groupBy(*SERIES_KEYS)
        .agg(
            F.max("maximum").alias("maximum"),
            F.sum("total").alias("total"),
            F.sum("samples").alias("samples"),
            F.min("timestamp").alias("first"),
            F.max("timestamp").alias("last"),
        )
        .select(*SeriesRow._fields)
    )


def coverage_frame(points: DataFrame) -> DataFrame:
    """Data points (already in the window) -> each account and region's AWS/SQS coverage."""
    return (
        points.filter(F.col("namespace") == SQS)
        .groupBy(*COVERAGE_KEYS)
        .agg(F.min("timestamp").alias("first"), F.max("timestamp").alias("last"))
        .select(*CoverageRow._fields)
    )


@dataclass
class MetricFrames:
    """The metrics input on Spark: the aggregates as DataFrames (``series``, ``coverage``), and
    what the driver already knows (the window, the counts, the problems). ``release`` drops
    the persisted data points once the aggregates have been used."""

    location: str
    window_days: int
    window_start: int | None
    window_end: int | None
    series: DataFrame
    coverage: DataFrame
    objects_read: int
    objects_skipped: int
    data_points: int
    problems: tuple[tuple[str, str], ...]
    decoded: DataFrame

    def release(self) -> None:
        self.decoded.unpersist()


def aggregate_frames(
    spark: SparkSession,
    location: str,
    window_days: int = DEFAULT_WINDOW_DAYS,
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
) -> MetricFrames:
    """List on the driver, read on the executors, aggregate with the DataFrame API. Two small
    actions run here (the window's end and the counts; the problems); the aggregates are left
    for the caller to join or collect. MetricsInputError when the location cannot be listed."""
    listed = stream.list_objects(location)
    to_read, skipped = stream.within_window(listed, window_days)
    decoded = decoded_frame(spark, to_read, limits).persist(StorageLevel.DISK_ONLY)
    counted = decoded.agg(
        F.count("object").alias("objects"),
        F.sum("data_points").alias("data_points"),
        F.max("timestamp").alias("newest"),
    ).collect()[0]
    problems = tuple(
        (row["object"], row["reason"])
        for row in decoded.filter(F.col("reason").isNotNull())
        .select("object", "reason")
        .orderBy("object")
        .collect()
    )
    start, end = window(counted["newest"], window_days)
    points = decoded.transform(points_in_window, start)
    return MetricFrames(
        location=location,
        window_days=window_days,
        window_start=start,
        window_end=end,
        series=series_frame(points),
        coverage=coverage_frame(points),
        objects_read=len(to_read),
        objects_skipped=len(skipped),
        data_points=int(counted["data_points"] or 0),
        problems=problems,
        decoded=decoded,
    )


def collect(frames: MetricFrames) -> MetricsInput:
    """The aggregates on the driver, as the local engine returns them (then ``release``).
    They travel as Arrow batches: a series per queue metric is hundreds of thousands of rows
    for a large fleet, which pickled rows bring over several times slower."""
    series = sorted(SeriesRow(**row) for row in frames.series.toArrow().to_pylist())
    coverage = sorted(CoverageRow(**row) for row in frames.coverage.toArrow().to_pylist())
    frames.release()
    return MetricsInput(
        location=frames.location,
        window_days=frames.window_days,
        window_start=frames.window_start,
        window_end=frames.window_end,
        series=tuple(series),
        coverage=tuple(coverage),
        objects_read=frames.objects_read,
        objects_skipped=frames.objects_skipped,
        data_points=frames.data_points,
        problems=frames.problems,
    )


def read_and_aggregate(
    spark: SparkSession,
    location: str,
    window_days: int = DEFAULT_WINDOW_DAYS,
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
) -> MetricsInput:
    """``aggregate_frames`` then ``collect``: the metrics input as ``MetricsInput``."""
    return collect(aggregate_frames(spark, location, window_days, limits))
