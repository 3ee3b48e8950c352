"""Data points -> the figures the rules read: one ``SeriesRow`` per series, one ``CoverageRow``
per account and region, over the window. In one process, with pyarrow (``--engine local``);
``spark/metrics.py`` computes the same rows on Spark.

The window ends at the newest data point read and reaches ``window_days`` back: a data point
counts when ``end - window_days * DAY_MS < timestamp <= end`` (``request.window``) (exactly ``window_days`` days of
data points, whatever their period).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from constructs_lib.audit.metrics import stream
from constructs_lib.audit.metrics.decode import (
    DEFAULT_STREAM_LIMITS,
    SQS,
    StreamLimits,
    empty_points,
)
from constructs_lib.audit.metrics.request import DEFAULT_WINDOW_DAYS, window
from constructs_lib.audit.model import CoverageRow, SeriesRow

SERIES_KEYS: Final = ("account", "region", "namespace", "metric", "name")
COVERAGE_KEYS: Final = ("account", "region")


@dataclass(frozen=True)
class MetricsInput:
    """What ``--metrics`` read and the figures it made of it.

    ``window_start`` (exclusive) and ``window_end`` are epoch milliseconds, None when no data
    point was read. ``data_points`` counts every data point read, whatever its namespace;
    ``objects_skipped`` the objects the window did not need (listed, not read). ``problems``
    holds (object, reason) for each object that was not read whole.
    """

    location: str
    window_days: int
    window_start: int | None
    window_end: int | None
    series: tuple[SeriesRow, ...]
    coverage: tuple[CoverageRow, ...]
    objects_read: int
    objects_skipped: int
    data_points: int
    problems: tuple[tuple[str, str], ...] = field(default=())


def in_window(points: pa.Table, start: int | None) -> pa.Table:
    if start is None:
        return points
    return points.filter(pc.greater(points.column("timestamp"), start))


def aggregate(points: pa.Table) -> tuple[list[SeriesRow], list[CoverageRow]]:
    """Per series (account, region, namespace, metric, the dimension's value): the largest
    ``max``, the sums of ``sum`` and ``count``, the first and last timestamp. Per account and
    region: the first and last timestamp of any AWS/SQS data point. Both sorted."""
    named = points.filter(pc.not_equal(points.column("dimension_name"), ""))
    series = named.group_by(list(SERIES_KEYS)).aggregate(
        [
            ("maximum", "max"),
            ("total", "sum"),
            ("samples", "sum"),
            ("timestamp", "min"),
            ("timestamp", "max"),
        ]
    )
    series_rows = [
        SeriesRow(
            r["account"],
            r["region"],
            r["namespace"],
            r["metric"],
            r["name"],
            r["maximum_max"],
            r["total_sum"],
            r["samples_sum"],
            r["timestamp_min"],
            r["timestamp_max"],
        )
        for r in series.to_pylist()
    ]
    sqs = points.filter(pc.equal(points.column("namespace"), SQS))
    coverage = sqs.group_by(list(COVERAGE_KEYS)).aggregate(
        [("timestamp", "min"), ("timestamp", "max")]
    )
    coverage_rows = [
        CoverageRow(r["account"], r["region"], r["timestamp_min"], r["timestamp_max"])
        for r in coverage.to_pylist()
    ]
    return sorted(series_rows), sorted(coverage_rows)


def read_and_aggregate(
    location: str,
    window_days: int = DEFAULT_WINDOW_DAYS,
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
) -> MetricsInput:
    """The ``--metrics`` input of the local engine: list, read each object the window needs in
    this process, aggregate. MetricsInputError when the location cannot be listed."""
    listed = stream.list_objects(location)
    to_read, skipped = stream.within_window(listed, window_days)
    tables: list[pa.Table] = []
    problems: list[tuple[str, str]] = []
    data_points = 0
    for item in to_read:
        decoded = stream.read_points(item.location, item.size, limits)
        data_points += decoded.data_points
        if decoded.points.num_rows:
            tables.append(decoded.points)
        if decoded.problem:
            problems.append((item.location, decoded.problem))
    points = pa.concat_tables(tables) if tables else empty_points()
    newest = pc.max(points.column("timestamp")).as_py() if points.num_rows else None
    start, end = window(newest, window_days)
    series, coverage = aggregate(in_window(points, start))
    return MetricsInput(
        location=location,
        window_days=window_days,
        window_start=start,
        window_end=end,
        series=tuple(series),
        coverage=tuple(coverage),
        objects_read=len(to_read),
        objects_skipped=len(skipped),
        data_points=data_points,
        problems=tuple(sorted(problems)),
    )
