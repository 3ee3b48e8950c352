"""The metrics input (``--metrics``) on Spark: metric stream objects -> series and coverage.

The driver lists the objects (paths or keys and sizes: ``metrics.stream``) and skips those the
window does not need; it packs the rest into tasks by size as Spark's file sources do
(``packing.py``: thousands of small Firehose objects are a few tasks), and each task reads its
objects in Python (``mapInArrow``) as the local engine does: the files its executor reaches in
one DuckDB scan per format (``metrics/scan.py``), the others one at a time
(``stream.read_points``). No data point reaches the driver and no Hadoop S3 connector is
needed: an ``s3://`` object is read with boto3 on the executor, on a classic session or Spark
Connect alike.

Each task also groups its data points per series, dimension set and day, with the local
engine's grouping (``aggregate.partial_figures``), so what reaches the JVM follows the series
and the days, not the data points: at 10^7 points in 100 objects, a few hundred thousand rows
instead of ten million, which the JVM had to turn into rows, cache and group. The window's end
(the newest data point) is only known once every object is read, so the figures are per day:
the days after the one holding the window's start are wholly inside it, and that day alone is
counted again over the objects that hold its data points (``Recount``), as the local engine's
DuckDB scan does. A shuffle by series brings each series' days into one partition, where the
local engine's merge makes them one row (``series_figures``). The driver collects the aggregates
only, as many as the fleet has series.

The day figures are persisted once, on disk only: on a local master the executor is the
driver's JVM, and 10^8 decoded data points held in memory there ran its default 1 GiB heap out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from constructs_lib.audit.engines.spark.packing import TaskPacking, planned_objects, session_packing
from constructs_lib.audit.engines.spark.schemas import arrow_schema
from constructs_lib.audit.metrics import aggregate, scan, stream
from constructs_lib.audit.metrics.aggregate import PARTIAL_KEYS, MetricsInput
from constructs_lib.audit.metrics.decode import DEFAULT_STREAM_LIMITS, StreamLimits
from constructs_lib.audit.metrics.request import DAY_MS, DEFAULT_WINDOW_DAYS, window

# Rows per Arrow batch a read task hands back to the JVM.
BATCH_ROWS: Final = 65_536
# A read task groups its data points this many at a time (about 100 MiB of Arrow on the bench
# corpus), and merges the groups' figures once they pass MERGE_ROWS rows: a few times the
# series of a large fleet, so memory follows the series and the days, not the data points.
GROUP_ROWS: Final = 1_000_000
MERGE_ROWS: Final = 2_000_000

# What a read task yields, one schema for both kinds of row. Per object (``object`` set): its
# problem, how many data points it held, and its first and last kept data point. Per series,
# dimension set and day (``object`` null): the figures of the task's data points of that day.
DAY_SCHEMA: Final = StructType(
    [
        StructField("object", StringType(), True),
        StructField("reason", StringType(), True),
        StructField("data_points", LongType(), True),
        *(StructField(name, StringType(), True) for name in PARTIAL_KEYS),
        StructField("day", LongType(), True),
        *(StructField(n, DoubleType(), True) for n in ("maximum", "total", "samples")),
        StructField("first", LongType(), True),
        StructField("last", LongType(), True),
        *(StructField(n, DoubleType(), True) for n in ("opening", "closing")),
    ]
)
FIGURES_SCHEMA: Final = StructType(
    [
        *(StructField(name, StringType(), True) for name in PARTIAL_KEYS),
        *(StructField(n, DoubleType(), True) for n in aggregate.FIGURES[:3]),
        *(StructField(n, LongType(), True) for n in aggregate.FIGURES[3:5]),
        *(StructField(n, DoubleType(), True) for n in aggregate.FIGURES[5:]),
    ]
)
# The day figures' columns in DAY_SCHEMA, in the order of ``aggregate.FIGURES``.
DAY_FIGURES: Final = ("maximum", "total", "samples", "first", "last", "opening", "closing")
_DAY_KEYS: Final = (*PARTIAL_KEYS, "day")
_FIGURE_COLUMNS: Final = (*_DAY_KEYS, *aggregate.FIGURES)


@dataclass(frozen=True)
class Recount:
    """A read that keeps only the data points of ``day`` (epoch days) after ``start`` (epoch
    milliseconds): the day holding the window's start, counted again."""

    start: int
    day: int

    def kept(self, points: Any) -> Any:
        """``points`` of the day after the start."""
        import pyarrow.compute as pc

        stamps = points.column("timestamp")
        after = pc.greater(stamps, self.start)
        return points.filter(pc.and_(after, pc.less(stamps, (self.day + 1) * DAY_MS)))


class _DayFigures:
    """A task's data points folded into figures per series, dimension set and day: points wait
    in groups of ``GROUP_ROWS`` and are grouped together (a large object holds each series once,
    so grouping objects one at a time would not shrink them), the groups' figures merged when
    they pass ``MERGE_ROWS``."""

    def __init__(self) -> None:
        self.waiting: list[Any] = []
        self.held = 0
        self.parts: list[Any] = []
        self.part_rows = 0

    def add(self, points: Any) -> None:
        if not points.num_rows:
            return
        self.waiting.append(points)
        self.held += points.num_rows
        if self.held >= GROUP_ROWS:
            self._group()

    def add_figures(self, days: Any) -> None:
        """Figures already grouped per series, dimension set and day (``scan``'s)."""
        if days.num_rows:
            self.parts.append(days.select(list(_FIGURE_COLUMNS)).cast(_figure_schema()))
            self.part_rows += days.num_rows

    def _group(self) -> None:
        import numpy as np
        import pyarrow as pa

        if not self.waiting:
            return
        points = pa.concat_tables(self.waiting)
        self.waiting, self.held = [], 0
        stamps = points.column("timestamp").to_numpy()
        days = points.append_column("day", pa.array(np.floor_divide(stamps, DAY_MS)))
        grouped = aggregate.partial_figures(days, _DAY_KEYS)
        self.parts.append(grouped.select(list(_FIGURE_COLUMNS)).cast(_figure_schema()))
        self.part_rows += self.parts[-1].num_rows
        if self.part_rows > MERGE_ROWS and len(self.parts) > 1:
            self.parts = [aggregate.merge_figures(self.parts, _DAY_KEYS)]
            self.part_rows = self.parts[0].num_rows

    def batches(self) -> Iterator[Any]:
        """The figures as ``DAY_SCHEMA`` batches."""
        import pyarrow as pa

        self._group()
        if not self.parts:
            return
        merged = (
            self.parts[0]
            if len(self.parts) == 1
            else aggregate.merge_figures(self.parts, _DAY_KEYS)
        )
        rows = merged.num_rows
        columns = [
            pa.nulls(rows, pa.string()),
            pa.nulls(rows, pa.string()),
            pa.nulls(rows, pa.int64()),
            *(merged.column(name) for name in _FIGURE_COLUMNS),
        ]
        table = pa.Table.from_arrays(columns, schema=arrow_schema(DAY_SCHEMA))
        yield from table.to_batches(max_chunksize=BATCH_ROWS)


def _read_days(
    batches: Iterable[Any], limits: StreamLimits, recount: Recount | None = None
) -> Iterator[Any]:
    """One task's objects -> the figures of their data points per series, dimension set and day,
    then a row per object (on the executor). The objects the executor reaches as local files go
    through the local engine's DuckDB scan, in one query per format (``scan``), the others one at
    a time. With ``recount``, only the figures of the points it keeps, each object read alone,
    and no row per object: the objects were counted when first read."""
    import pyarrow as pa

    listed = [
        stream.StreamObject(location, size, None)
        for batch in batches
        for location, size in zip(
            batch.column("location").to_pylist(), batch.column("size").to_pylist(), strict=True
        )
    ]
    figures = _DayFigures()
    objects = _ObjectRows()
    rest = listed
    if recount is None:
        found, rest = scan.scan(listed, limits, workers=1)
        for days in found.days:
            figures.add_figures(days)
        left = {o.location for o in rest}
        for item in listed:
            if item.location not in left:
                first, last = found.spans.get(item.location, (None, None))
                count = found.data_points.get(item.location, 0)
                objects.add(item.location, found.problems.get(item.location), count, first, last)
    for item in rest:
        decoded = stream.read_points(item.location, item.size, limits)
        points = decoded.points
        if recount is not None:
            figures.add(recount.kept(points))
            continue
        figures.add(points)
        stamps = points.column("timestamp")
        first, last = _span(stamps) if points.num_rows else (None, None)
        objects.add(item.location, decoded.problem, decoded.data_points, first, last)
    yield from figures.batches()
    if objects.rows["object"]:
        summary: dict[str, list[Any]] = {
            f.name: [None] * len(objects.rows["object"]) for f in DAY_SCHEMA
        }
        summary.update(objects.rows)
        yield pa.RecordBatch.from_pydict(summary, schema=arrow_schema(DAY_SCHEMA))


class _ObjectRows:
    """A read task's row per object: its problem, data points, first and last kept point."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Any]] = {
            name: [] for name in ("object", "reason", "data_points", "first", "last")
        }

    def add(
        self,
        location: str,
        reason: str | None,
        data_points: int,
        first: int | None,
        last: int | None,
    ) -> None:
        for name, value in zip(
            self.rows, (location, reason, data_points, first, last), strict=True
        ):
            self.rows[name].append(value)


def _span(stamps: Any) -> tuple[int, int]:
    """The first and last of timestamps (not empty)."""
    import pyarrow.compute as pc

    low, high = pc.min_max(stamps).values()
    return low.as_py(), high.as_py()


def _figure_schema() -> Any:
    """The Arrow schema of figures per series, dimension set and day, as grouped."""
    import pyarrow as pa

    day = arrow_schema(DAY_SCHEMA)  # past the object's own columns, the day figures' in this order
    kinds = [day.field(n).type for n in day.names[3:]]
    return pa.schema(list(zip(_FIGURE_COLUMNS, kinds, strict=True)))


def day_frame(
    spark: SparkSession,
    listed: list[stream.StreamObject],
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
    packing: TaskPacking | None = None,
    recount: Recount | None = None,
) -> DataFrame:
    """The objects' figures per series, dimension set and day, and a row per object
    (``DAY_SCHEMA``, ``_read_days``), not yet computed."""
    objects = planned_objects(spark, listed, packing or session_packing(spark))
    read = functools.partial(_read_days, limits=limits, recount=recount)
    return objects.mapInArrow(read, DAY_SCHEMA)


def series_figures(days: DataFrame) -> DataFrame:
    """Day figures of the window's data points -> the figures per series and dimension set,
    coverage-only rows included (``FIGURES_SCHEMA``), readings as ``grouping.Edge``: a shuffle
    by series, then the local engine's merge in each partition. (A ``groupBy`` needs ``max_by``
    over a struct for the readings, which Spark runs as a slow sort-based aggregate.)"""
    named = days.select(
        *PARTIAL_KEYS,
        *(F.col(day).alias(name) for day, name in zip(DAY_FIGURES, aggregate.FIGURES, strict=True)),
    )
    return named.repartition(*PARTIAL_KEYS).mapInArrow(_merged, FIGURES_SCHEMA)


def _merged(batches: Iterable[Any]) -> Iterator[Any]:
    merged = aggregate.merge_batches(batches, MERGE_ROWS)
    if merged is not None:
        yield from merged.cast(arrow_schema(FIGURES_SCHEMA)).to_batches(max_chunksize=BATCH_ROWS)


def after_day(figures: DataFrame, day: int) -> DataFrame:
    """Day figures -> those of the days after ``day``."""
    return figures.filter(F.col("day") > F.lit(day))


@dataclass
class MetricFrames:
    """The metrics input on Spark: the figures per series as a DataFrame (``figures``,
    ``FIGURES_SCHEMA``), and what the driver already knows (the window, the counts, the
    problems). ``release`` drops the persisted day figures once the figures have been used."""

    location: str
    window_days: int
    window_start: int | None
    window_end: int | None
    figures: DataFrame
    objects_read: int
    objects_skipped: int
    data_points: int
    problems: tuple[tuple[str, str], ...]
    persisted: tuple[DataFrame, ...]

    def release(self) -> None:
        for frame in self.persisted:
            frame.unpersist()


def aggregate_frames(
    spark: SparkSession,
    location: str,
    window_days: int = DEFAULT_WINDOW_DAYS,
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
) -> MetricFrames:
    """List on the driver, read and group by day on the executors, aggregate with the DataFrame
    API. One action brings the objects' rows (the window's end, the counts, the problems); when
    the window starts after some data point, the objects holding data points of its first day
    are read again for that day (``Recount``). The figures are left for the caller to join or
    collect. MetricsInputError when the location cannot be listed."""
    listed = stream.list_objects(location)
    to_read, skipped = stream.within_window(listed, window_days)
    packing = session_packing(spark)
    days = day_frame(spark, to_read, limits, packing).persist(StorageLevel.DISK_ONLY)
    objects = (
        days.filter(F.col("object").isNotNull())
        .select("object", "reason", "data_points", "first", "last")
        .toArrow()
        .to_pylist()
    )
    newest = max((o["last"] for o in objects if o["last"] is not None), default=None)
    start, end = window(newest, window_days)
    figures = days.filter(F.col("object").isNull())
    persisted = [days]
    if start is not None and any(o["first"] is not None and o["first"] <= start for o in objects):
        recount = Recount(start, start // DAY_MS)
        near = _holding(to_read, objects, recount)
        again = day_frame(spark, near, limits, packing, recount).persist(StorageLevel.DISK_ONLY)
        persisted.append(again)
        figures = figures.transform(after_day, recount.day).unionByName(again)
    return MetricFrames(
        location=location,
        window_days=window_days,
        window_start=start,
        window_end=end,
        figures=series_figures(figures),
        objects_read=len(to_read),
        objects_skipped=len(skipped),
        data_points=sum(o["data_points"] or 0 for o in objects),
        problems=tuple(sorted((o["object"], o["reason"]) for o in objects if o["reason"])),
        persisted=tuple(persisted),
    )


def _holding(
    to_read: list[stream.StreamObject], objects: list[dict[str, Any]], recount: Recount
) -> list[stream.StreamObject]:
    """The objects holding a data point of ``recount``'s day after its start."""
    day_end = (recount.day + 1) * DAY_MS
    holding = {
        o["object"]
        for o in objects
        if o["first"] is not None and o["first"] < day_end and o["last"] > recount.start
    }
    return [o for o in to_read if o.location in holding]


def collect(frames: MetricFrames) -> MetricsInput:
    """The figures on the driver, as the local engine returns them (then ``release``): one job,
    whose rows travel as Arrow batches (a series per queue metric is hundreds of thousands of
    rows for a large fleet, which pickled rows bring over several times slower), made series
    and coverage by the local engine's own ``figure_rows``."""
    series, coverage = aggregate.figure_rows(frames.figures.toArrow())
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
