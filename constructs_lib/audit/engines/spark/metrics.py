"""The metrics input (``--metrics``) on Spark: metric stream objects -> series and coverage.

The driver lists the objects (paths or keys and sizes: ``metrics.stream``) and skips those the
window does not need; a DataFrame of their names is spread over tasks, and each task reads and
decodes its objects in Python (``mapInArrow`` with ``stream.read_points``, the function the local
engine calls), so no data point ever reaches the driver and no Hadoop S3 connector is needed: an
``s3://`` object is read with boto3 on the executor, on a classic session or Spark Connect alike.
The aggregation is the DataFrame API's ``groupBy``; the driver collects only the aggregates,
which are as many as the fleet has series.

The decoded rows are persisted once: the window's end (the newest data point) must be known
before a data point can be kept or dropped, and reading the objects twice would cost twice.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

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

# Objects per read task: Firehose objects are 1-128 MiB, so a few per task keeps a task's
# fixed cost (a Python worker, its imports) small beside its reading and its memory bounded.
OBJECTS_PER_TASK: Final = 4
# Rows per Arrow batch a read task hands back to the JVM.
BATCH_ROWS: Final = 65_536

OBJECT_SCHEMA: Final = StructType(
    [StructField("location", StringType(), False), StructField("size", LongType(), False)]
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
    """One task's objects -> their data points, then one row per object (on the executor)."""
    import pyarrow as pa

    names = [f.name for f in DECODED_SCHEMA.fields]
    for batch in batches:
        for location, size in zip(
            batch.column("location").to_pylist(), batch.column("size").to_pylist(), strict=True
        ):
            decoded = stream.read_points(location, size, limits)
            points = decoded.points
            if points.num_rows:
                rows = points.num_rows
                table = pa.table(
                    [
                        pa.nulls(rows, pa.string()),
                        pa.nulls(rows, pa.string()),
                        pa.nulls(rows, pa.int64()),
                        *points.columns,
                    ],
                    names=names,
                )
                yield from table.to_batches(max_chunksize=BATCH_ROWS)
            summary: dict[str, list[Any]] = {name: [None] for name in names}
            summary.update(
                object=[location], reason=[decoded.problem], data_points=[decoded.data_points]
            )
            yield pa.RecordBatch.from_pydict(summary, schema=_arrow(DECODED_SCHEMA))


def _arrow(schema: StructType) -> Any:
    import pyarrow as pa

    kinds = {"string": pa.string(), "double": pa.float64(), "bigint": pa.int64()}
    return pa.schema([(f.name, kinds[f.dataType.simpleString()]) for f in schema.fields])


def decoded_frame(
    spark: SparkSession,
    listed: list[stream.StreamObject],
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
) -> DataFrame:
    """The objects' data points and per-object rows (``DECODED_SCHEMA``), not yet computed."""
    import pyarrow as pa

    table = pa.table(
        {
            "location": pa.array([o.location for o in listed], pa.string()),
            "size": pa.array([o.size for o in listed], pa.int64()),
        }
    )
    tasks = max(1, min(len(listed), max(2, math.ceil(len(listed) / OBJECTS_PER_TASK))))
    objects = spark.createDataFrame(table, OBJECT_SCHEMA).repartition(tasks)
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
    decoded = decoded_frame(spark, to_read, limits).persist(StorageLevel.MEMORY_AND_DISK)
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
