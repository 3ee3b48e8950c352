"""Data points -> the figures the rules read: one ``SeriesRow`` per series, one ``CoverageRow``
per account and region, over the window. In one process, with pyarrow (``--engine local``);
``spark/metrics.py`` computes the same rows on Spark.

The window ends at the newest data point read and reaches ``window_days`` back: a data point
counts when ``end - window_days * DAY_MS < timestamp <= end`` (``request.window``) (exactly ``window_days`` days of
data points, whatever their period).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from constructs_lib.audit.engines.choice import default_workers
from constructs_lib.audit.metrics import grouping, scan, stream
from constructs_lib.audit.metrics.decode import DEFAULT_STREAM_LIMITS, SQS, Decoded, StreamLimits
from constructs_lib.audit.metrics.request import DEFAULT_WINDOW_DAYS, HOUR_MS, window
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


PARTIAL_KEYS: Final = ("account", "region", "namespace", "metric", "dimension_name", "name")
# Running figures are merged again once they hold this many rows: a few times the series of a
# large fleet, so merging is rare and memory stays a small multiple of the series.
_COMPACT_ROWS: Final = 2_000_000


FIGURES: Final = grouping.FIGURES
_POINT_COLUMNS: Final = ("maximum", "total", "samples", "timestamp", "timestamp")
_FIGURE_FUNCTIONS: Final = ("max", "sum", "sum", "min", "max")
# Objects read ahead of the fold per worker: enough that a worker never waits for the fold,
# few enough that the objects in flight stay a small multiple of one object's points.
_READ_AHEAD_PER_WORKER: Final = 2


def partial_figures(points: pa.Table, keys: Sequence[str] = PARTIAL_KEYS) -> pa.Table:
    """Data points -> figures per ``keys`` (by default per series and dimension set, coverage-only
    rows included): ``FIGURES``, the readings in the same pass."""
    figures = list(zip(_POINT_COLUMNS, _FIGURE_FUNCTIONS, strict=True))
    return grouping.group(points, keys, figures, grouping.POINT_READINGS)


def merge_figures(partials: list[pa.Table], keys: Sequence[str] = PARTIAL_KEYS) -> pa.Table:
    """Figures of parts of the data -> figures of the whole (max, sums, min, max again; the
    readings of the part with the first and with the last data point)."""
    figures = list(zip(FIGURES[: len(_FIGURE_FUNCTIONS)], _FIGURE_FUNCTIONS, strict=True))
    merged = grouping.group(pa.concat_tables(partials), keys, figures, grouping.FIGURE_READINGS)
    return merged.rename_columns([*keys, *FIGURES])


def merge_batches(
    batches: Iterable[pa.RecordBatch], limit_rows: int, keys: Sequence[str] = PARTIAL_KEYS
) -> pa.Table | None:
    """Batches of figures (``keys`` and ``FIGURES``), each series' in any of them -> the
    figures per series (None without a row); parts merged as they pass ``limit_rows``, so
    memory follows the series, not the parts."""
    parts: list[pa.Table] = []
    held = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        parts.append(pa.Table.from_batches([batch]))
        held += batch.num_rows
        if held > limit_rows and len(parts) > 1:
            parts = [merge_figures(parts, keys)]
            held = parts[0].num_rows
    return merge_figures(parts, keys) if parts else None


def figure_rows(partial: pa.Table) -> tuple[list[SeriesRow], list[CoverageRow]]:
    """Figures per series and dimension set (``PARTIAL_KEYS`` and ``FIGURES``) -> the series
    (those with a dimension), and each account and region's AWS/SQS coverage, both sorted."""
    named = partial.filter(pc.not_equal(partial.column("dimension_name"), ""))
    # Text sorts by its UTF-8 bytes, which is Python's order of code points, and the series
    # keys are unique: the rows come out in Python's order.
    ordered = grouping.sort(named, SERIES_KEYS)
    with _collector_paused():
        columns = grouping.columns(ordered, (*SERIES_KEYS, *FIGURES))
        series_rows = list(map(SeriesRow._make, zip(*columns, strict=True)))
    sqs = partial.filter(pc.equal(partial.column("namespace"), SQS))
    coverage = sqs.group_by(list(COVERAGE_KEYS)).aggregate(
        [("timestamp_min", "min"), ("timestamp_max", "max")]
    )
    spans = ("timestamp_min_min", "timestamp_max_max")
    coverage_rows = list(
        map(
            CoverageRow._make,
            zip(*grouping.columns(coverage, (*COVERAGE_KEYS, *spans)), strict=True),
        )
    )
    return series_rows, sorted(coverage_rows)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cycle collector off while a fleet's rows are built: hundreds of thousands of tuples,
    none in a cycle, would start a collection every few hundred allocations, each walking the
    tuples made so far (``bench/local_metrics_steps.py``'s rows step)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def aggregate(points: pa.Table) -> tuple[list[SeriesRow], list[CoverageRow]]:
    """Per series (account, region, namespace, metric, the dimension's value): the largest
    ``max``, the sums of ``sum`` and ``count``, the first and last timestamp, and the ``max`` of
    the first and of the last data point (the larger where two share a timestamp). Per account and
    region: the first and last timestamp of any AWS/SQS data point. Both sorted."""
    return figure_rows(partial_figures(points))


class _Fold:
    """Running figures over objects read newest first. Until the window's end is settled the
    objects' points wait; from then on each object is filtered to the window and folded in."""

    def __init__(self, window_days: int, end: int | None = None) -> None:
        self.window_days = window_days
        self.end = end
        self.newest: int | None = None
        self.waiting: list[pa.Table] = []
        self.partials: list[pa.Table] = []
        self.rows = 0

    def add(self, points: pa.Table) -> None:
        if not points.num_rows:
            return
        top = pc.max(points.column("timestamp")).as_py()
        self.newest = top if self.newest is None else max(self.newest, top)
        if self.end is None:
            self.waiting.append(points)
            return
        partial = partial_figures(in_window(points, window(self.end, self.window_days)[0]))
        self.partials.append(partial)
        self.rows += partial.num_rows
        if self.rows > _COMPACT_ROWS and len(self.partials) > 1:
            self.partials = [merge_figures(self.partials)]
            self.rows = self.partials[0].num_rows

    def settle(self) -> None:
        if self.end is None:
            self.end = self.newest
            waiting, self.waiting = self.waiting, []
            for points in waiting:
                self.add(points)

    def figures(self) -> tuple[list[SeriesRow], list[CoverageRow]]:
        self.settle()
        if len(self.partials) == 1:
            return figure_rows(self.partials[0])  # one part: its figures are the whole's
        return figure_rows(merge_figures(self.partials)) if self.partials else ([], [])


def _decoded_in_order(
    ordered: list[stream.StreamObject], limits: StreamLimits, workers: int
) -> Iterator[Decoded]:
    """Each object's data points, in ``ordered``'s order, read by ``workers`` threads (the
    decompression, DuckDB and pyarrow release the GIL) a bounded number of objects ahead."""
    if workers <= 1:
        for item in ordered:
            yield stream.read_points(item.location, item.size, limits)
        return
    ahead = workers * _READ_AHEAD_PER_WORKER
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: list[Future[Decoded]] = []
        for item in ordered:
            pending.append(pool.submit(stream.read_points, item.location, item.size, limits))
            if len(pending) > ahead:
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def _fold_objects(
    ordered: list[stream.StreamObject],
    window_days: int,
    limits: StreamLimits,
    end: int | None = None,
    workers: int = 1,
    seen: int | None = None,
) -> tuple[_Fold, list[tuple[str, str]], int]:
    """(the figures, the problems, the data points read) of objects in newest-first order. The
    end settles once the next object was delivered a day of slack before the newest data point
    read so far: no object delivered that early holds a newer one (``stream``)."""
    fold = _Fold(window_days, end)
    fold.newest = seen  # the newest data point of objects read another way
    problems: list[tuple[str, str]] = []
    data_points = 0
    for item, decoded in zip(ordered, _decoded_in_order(ordered, limits, workers), strict=True):
        newest = fold.newest
        if (
            item.hour is not None
            and newest is not None
            and item.hour + HOUR_MS + stream.PARTITION_SLACK_MS <= newest
        ):
            fold.settle()
        data_points += decoded.data_points
        fold.add(decoded.points)
        if decoded.problem:
            problems.append((item.location, decoded.problem))
    fold.settle()
    return fold, problems, data_points


Read = tuple[int | None, _Fold, list[tuple[str, str]], int]


def _read_objects(
    ordered: list[stream.StreamObject], window_days: int, limits: StreamLimits, workers: int
) -> Read:
    """(the newest data point, the figures, the problems, the data points read) of the objects:
    local ones in one DuckDB scan per format (``scan``), the others one at a time."""
    found, rest = scan.scan(ordered, limits, workers)
    fold, problems, data_points = _fold_objects(
        rest, window_days, limits, None, workers, found.newest
    )
    newest = fold.newest
    if newest != fold.end:
        # An object delivered a day or more before a data point it holds (a prefix in another
        # time zone): read again with the true end.
        fold, problems, data_points = _fold_objects(rest, window_days, limits, newest, workers)
    fold.settle()
    figures = scan.figures(found, window(newest, window_days)[0], workers)
    if figures.num_rows:
        fold.partials.append(figures)
    problems += found.problems.items()
    data_points += sum(found.data_points.values())
    return newest, fold, problems, data_points


def read_and_aggregate(
    location: str,
    window_days: int = DEFAULT_WINDOW_DAYS,
    limits: StreamLimits = DEFAULT_STREAM_LIMITS,
    workers: int | None = None,
) -> MetricsInput:
    """The ``--metrics`` input of the local engine: list, read each object the window needs in
    this process, aggregate. Objects are read newest delivery hour first (those without one
    before all), and folded into running figures once the window's end is known, so memory
    follows the series and a day of data points, not the whole window; local JSON and Parquet
    objects are read by DuckDB in one streaming scan per format instead (``scan``).
    MetricsInputError when the location cannot be listed. ``workers`` (default: one per core)
    are the threads that read objects ahead of the fold, and DuckDB's; the figures do not
    depend on them."""
    workers = default_workers() if workers is None else workers
    listed = stream.list_objects(location)
    to_read, skipped = stream.within_window(listed, window_days)
    ordered = sorted(to_read, key=lambda o: -1 if o.hour is None else -o.hour)
    newest, fold, problems, data_points = _read_objects(ordered, window_days, limits, workers)
    start, end = window(newest, window_days)
    series, coverage = fold.figures()
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
