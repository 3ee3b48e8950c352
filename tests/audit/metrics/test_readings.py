"""A series' readings at the window's edges (``SeriesRow.opening`` and ``closing``): the
``value.max`` of its first and last data point in the window, the larger of two on one
timestamp, a point exactly at the window's start left out; the same on every path that makes
series: DuckDB's and pyarrow's group-by, the local engine's scan and per-object reads, and
Spark. Expected readings are planted here by hand."""

from __future__ import annotations

import gzip
import json
import math
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from constructs_lib.audit.metrics import aggregate, fast_json, grouping

DAY = 86_400_000
HOUR = 3_600_000
MINUTE = 60_000
# The newest data point, mid-day, so the window's start falls mid-day too (the day holding it
# is counted again on both engines).
END = 1_795_132_800_000 + 13 * HOUR + 30 * MINUTE
START = END - DAY  # a window of one day: a point counts when START < timestamp <= END
ACCOUNT, REGION = "111111111111", "us-east-1"


def _point(metric: str, ts: int, high: float, queue: str = "orders") -> dict[str, Any]:
    return {
        "metric_stream_name": "fleet",
        "account_id": ACCOUNT,
        "region": REGION,
        "namespace": "AWS/SQS",
        "metric_name": metric,
        "dimensions": {"QueueName": queue},
        "timestamp": ts,
        "value": {"max": high, "min": 0.0, "sum": high, "count": 1.0},
        "unit": "Count",
    }


# Visible: 100 exactly at the window's start (out), a tie 3 / 7 at the first minute inside,
# then 20 at noon, and a tie 5 / 2 at the end. In flight: one point inside, before it one
# earlier day's point (out, and another day).
POINTS = [
    _point("ApproximateNumberOfMessagesVisible", START, 100.0),
    _point("ApproximateNumberOfMessagesVisible", START + MINUTE, 3.0),
    _point("ApproximateNumberOfMessagesVisible", START + MINUTE, 7.0),
    _point("ApproximateNumberOfMessagesVisible", START + 12 * HOUR, 20.0),
    _point("ApproximateNumberOfMessagesVisible", END, 5.0),
    _point("ApproximateNumberOfMessagesVisible", END, 2.0),
    _point("ApproximateNumberOfMessagesNotVisible", START - DAY, 50.0),
    _point("ApproximateNumberOfMessagesNotVisible", END - HOUR, 4.0),
]
# (metric) -> (opening, closing), by hand from the points above
READINGS = {
    "ApproximateNumberOfMessagesVisible": (7.0, 5.0),
    "ApproximateNumberOfMessagesNotVisible": (4.0, 4.0),
}


def _write(folder: Path, points: list[dict[str, Any]], compress: bool, name: str) -> None:
    """Each point in an object of its own under its hour (the ties of a timestamp in two
    objects, so that merging parts' readings decides them), gzip or plain JSON lines."""
    for index, point in enumerate(points):
        hour = time.strftime("%Y/%m/%d/%H", time.gmtime(point["timestamp"] / 1000))
        prefix = folder / hour
        prefix.mkdir(parents=True, exist_ok=True)
        body = (json.dumps(point) + "\n").encode()
        data = gzip.compress(body) if compress else body
        (prefix / f"{name}-{index:03d}{'.gz' if compress else ''}").write_bytes(data)


def _readings(series: Any) -> dict[str, tuple[float | None, float | None]]:
    return {s.metric: (s.opening, s.closing) for s in series}


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("readings")
    _write(folder, POINTS[::2], compress=True, name="zipped")
    _write(folder, POINTS[1::2], compress=False, name="plain")
    return folder


def test_the_local_scan_reads_the_first_and_last_point_in_the_window(stream: Path) -> None:
    result = aggregate.read_and_aggregate(str(stream), window_days=1)
    assert (result.window_start, result.window_end) == (START, END)
    assert _readings(result.series) == READINGS


def test_the_per_object_path_reads_the_same(stream: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # without DuckDB every object is read alone and grouped by pyarrow
    monkeypatch.setattr(fast_json, "available", lambda: False)
    result = aggregate.read_and_aggregate(str(stream), window_days=1)
    assert _readings(result.series) == READINGS


def test_spark_reads_the_same(spark: Any, stream: Path) -> None:
    from constructs_lib.audit.engines.spark import metrics

    result = metrics.read_and_aggregate(spark, str(stream), window_days=1)
    assert (result.window_start, result.window_end) == (START, END)
    assert _readings(result.series) == READINGS
    assert result.series == aggregate.read_and_aggregate(str(stream), window_days=1).series


def test_spark_reads_an_object_with_a_point_at_the_earliest_int64_time(
    spark: Any, tmp_path: Path
) -> None:
    # An object of DuckDB's size (grouping.MIN_ROWS) is grouped by DuckDB in Spark's Python
    # workers: the readings' reversal of time overflowed at the smallest int64 there and
    # failed the whole read.
    from constructs_lib.audit.engines.spark import metrics

    points = [
        _point("ApproximateNumberOfMessagesVisible", END - i * MINUTE, 1.0, f"q{i % 100}")
        for i in range(grouping.MIN_ROWS)
    ]
    points.append(_point("ApproximateNumberOfMessagesVisible", -(2**63), 1.0))
    (tmp_path / "fleet.gz").write_bytes(
        gzip.compress("".join(json.dumps(p) + "\n" for p in points).encode())
    )
    result = metrics.read_and_aggregate(spark, str(tmp_path), window_days=1)
    assert result.data_points == len(points)
    assert result.series == aggregate.read_and_aggregate(str(tmp_path), window_days=1).series


def _table() -> pa.Table:
    return pa.table(
        {
            "key": ["a", "a", "a", "a", "b"],
            "timestamp": pa.array([5, 1, 1, 9, 3], pa.int64()),
            "maximum": [2.0, 3.0, 8.0, 4.0, 6.0],
        }
    )


@pytest.mark.parametrize("duckdb", [False, True], ids=["pyarrow", "duckdb"])
def test_both_group_bys_give_the_edges_with_ties_to_the_larger(
    duckdb: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if duckdb:
        if not fast_json.available():
            pytest.skip("DuckDB is not installed")
        monkeypatch.setattr(grouping, "MIN_ROWS", 0)
    grouped = grouping.group(
        _table(), ["key"], [("maximum", "max")], grouping.POINT_READINGS
    ).sort_by("key")
    assert grouped.column("opening").to_pylist() == [8.0, 6.0]  # a: 3 and 8 at t=1
    assert grouped.column("closing").to_pylist() == [4.0, 6.0]  # a: 4 at t=9
    assert grouped.column("maximum_max").to_pylist() == [8.0, 6.0]


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Per key, (timestamp, max) pairs at the ends of int64 time and of the doubles; the readings
# by hand: the value at the earliest and at the latest time, a tie to the larger.
EXTREMES = {
    "negative": (
        [(INT64_MIN, -math.inf), (INT64_MIN, -5e-324), (0, 9.0), (7, -2.0), (7, -1.5)],
        (-5e-324, -1.5),
    ),
    "nan": (
        [(1, 1e300), (1, 0.0), (INT64_MAX, math.inf), (INT64_MAX, math.nan)],
        (1e300, math.nan),
    ),
    "subnormal": ([(-3, -0.0), (-3, 5e-324), (4, -1e-300), (4, -0.0)], (5e-324, -0.0)),
}


def test_the_duckdb_edges_order_any_int64_time_and_any_double(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not fast_json.available():
        pytest.skip("DuckDB is not installed")
    monkeypatch.setattr(grouping, "MIN_ROWS", 0)
    rows = [(key, t, v) for key, (pairs, _) in EXTREMES.items() for t, v in pairs]
    table = pa.table(
        {
            "key": [key for key, _, _ in rows],
            "timestamp": pa.array([t for _, t, _ in rows], pa.int64()),
            "maximum": [v for _, _, v in rows],
        }
    )
    grouped = grouping.group(table, ["key"], [], grouping.POINT_READINGS)
    found = dict(
        zip(
            grouped.column("key").to_pylist(),
            zip(*grouping.columns(grouped, ("opening", "closing")), strict=True),
            strict=True,
        )
    )
    for key, (_, expected) in EXTREMES.items():
        # NaN is no number's equal, its own included: compared as text
        assert [repr(v) for v in found[key]] == [repr(v) for v in expected], key


def test_merged_parts_keep_the_edges_of_the_earliest_and_latest_part() -> None:
    whole = aggregate.partial_figures(_points(_table()), ["name"])
    parts = [_points(_table().slice(0, 2)), _points(_table().slice(2))]
    merged = aggregate.merge_figures(
        [aggregate.partial_figures(p, ["name"]) for p in parts], ["name"]
    )
    assert merged.sort_by("name").to_pylist() == whole.sort_by("name").to_pylist()


@pytest.mark.parametrize("limit_rows", [1, 1_000])
def test_batches_of_figures_merge_as_one_table_whenever_the_parts_are_merged(
    limit_rows: int,
) -> None:
    # A batch per data point: with a limit of 1 the parts are merged at every batch.
    whole = aggregate.partial_figures(_points(_table()), ["name"])
    batches = [
        batch
        for i in range(_table().num_rows)
        for batch in aggregate.partial_figures(_points(_table().slice(i, 1)), ["name"])
        .rename_columns(["name", *aggregate.FIGURES])
        .to_batches()
    ]
    merged = aggregate.merge_batches(batches, limit_rows, ["name"])
    assert merged is not None
    assert merged.sort_by("name").to_pylist() == whole.sort_by("name").to_pylist()
    assert aggregate.merge_batches([], limit_rows, ["name"]) is None


def _points(table: pa.Table) -> pa.Table:
    """The hand-made rows as data points (``total`` and ``samples`` besides)."""
    return pa.table(
        {
            "name": table.column("key"),
            "maximum": table.column("maximum"),
            "total": table.column("maximum"),
            "samples": pa.array([1.0] * table.num_rows),
            "timestamp": table.column("timestamp"),
        }
    )
