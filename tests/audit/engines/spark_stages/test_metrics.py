"""The metrics input's aggregation on Spark (``engines/spark/metrics.py``), on a few data points.

The expected figures are added up by hand from the points.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from constructs_lib.audit.engines.spark import metrics
from constructs_lib.audit.engines.spark.schemas import arrow_schema
from constructs_lib.audit.metrics import scan, stream
from tests.support.frames import assert_same_rows, frame

DAY = 86_400_000
# 2026-11-20T00:00:00Z, the first millisecond of a day.
T0 = 1_795_132_800_000
DAY0 = T0 // DAY
AGE = ("111", "us-east-1", "AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "orders")
ERRORS = ("111", "us-east-1", "AWS/Lambda", "Errors", "FunctionName", "handler")
# AWS/SQS without a dimension: kept for the account and region's coverage only.
COVERAGE_ONLY = ("111", "us-east-1", "AWS/SQS", "NumberOfEmptyReceives", "", "")
NOT_AN_OBJECT = (None, None, None)


def _line(keys: tuple[str, ...], high: float, total: float, count: float, ts: int) -> str:
    account, region, namespace, metric, dimension, name = keys
    point = {
        "metric_stream_name": "fleet",
        "account_id": account,
        "region": region,
        "namespace": namespace,
        "metric_name": metric,
        "dimensions": {dimension: name} if dimension else {},
        "timestamp": ts,
        "value": {"max": high, "min": 0.0, "sum": total, "count": count},
        "unit": "Count",
    }
    return json.dumps(point) + "\n"


@pytest.fixture
def two_objects(tmp_path: Path) -> list[stream.StreamObject]:
    """Object A: two points of the queue's age on day 0 and one of the function's errors.
    Object B, gzip: the age on day 1, a coverage-only point on day 0, an EC2 point (not kept)
    and a line that is not a data point."""
    first = tmp_path / "a.json"
    first.write_text(
        _line(AGE, 30.0, 60.0, 2.0, T0 + 1000)
        + _line(AGE, 50.0, 70.0, 3.0, T0 + 2000)
        + _line(ERRORS, 1.0, 1.0, 1.0, T0 + 1200)
    )
    second = tmp_path / "b.json.gz"
    ec2 = ("111", "us-east-1", "AWS/EC2", "CPUUtilization", "InstanceId", "i-1")
    second.write_bytes(
        gzip.compress(
            (
                _line(AGE, 90.0, 90.0, 1.0, T0 + DAY + 500)
                + _line(COVERAGE_ONLY, 0.0, 0.0, 1.0, T0 + 1500)
                + _line(ec2, 5.0, 5.0, 1.0, T0 + 1600)
                + "not json\n"
            ).encode()
        )
    )
    return [stream.StreamObject(str(p), p.stat().st_size, None) for p in (first, second)]


def _task(objects: list[stream.StreamObject], recount: metrics.Recount | None = None) -> pa.Table:
    """What one read task over ``objects`` yields, as one table."""
    batch = pa.RecordBatch.from_pydict(
        {
            "task": [0] * len(objects),
            "location": [o.location for o in objects],
            "size": [o.size for o in objects],
        }
    )
    read = metrics._read_days([batch], metrics.DEFAULT_STREAM_LIMITS, recount)
    return pa.Table.from_batches(list(read), schema=arrow_schema(metrics.DAY_SCHEMA))


def _day_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    days = table.filter(pa.compute.is_null(table.column("object")))
    names = [*metrics.PARTIAL_KEYS, "day", "maximum", "total", "samples", "first", "last"]
    return sorted(zip(*(days.column(n).to_pylist() for n in names), strict=True))


def _object_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    objects = table.filter(pa.compute.is_valid(table.column("object")))
    names = ["object", "data_points", "first", "last"]
    return sorted(zip(*(objects.column(n).to_pylist() for n in names), strict=True))


def test_a_read_task_adds_up_each_series_per_day(two_objects: list[Any]) -> None:
    table = _task(two_objects)
    assert _day_rows(table) == sorted(
        [
            (*AGE, DAY0, 50.0, 130.0, 5.0, T0 + 1000, T0 + 2000),
            (*AGE, DAY0 + 1, 90.0, 90.0, 1.0, T0 + DAY + 500, T0 + DAY + 500),
            (*ERRORS, DAY0, 1.0, 1.0, 1.0, T0 + 1200, T0 + 1200),
            (*COVERAGE_ONLY, DAY0, 0.0, 0.0, 1.0, T0 + 1500, T0 + 1500),
        ]
    )
    first, second = (o.location for o in two_objects)
    # Data points held, kept or not (the EC2 point counts, the bad line does not); the first
    # and last are of the kept points.
    assert _object_rows(table) == [
        (first, 3, T0 + 1000, T0 + 2000),
        (second, 3, T0 + 1500, T0 + DAY + 500),
    ]
    reasons = dict(zip(*(table.column(n).to_pylist() for n in ("object", "reason")), strict=True))
    assert reasons[first] is None and reasons[second] is not None


def test_a_read_task_scans_local_files_and_reads_the_rest_one_at_a_time(
    two_objects: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Object B's bad line fails DuckDB's query: B leaves the scan for the per-object path.
    alone: list[str] = []
    read_points = stream.read_points

    def spied(location: str, *args: Any) -> Any:
        alone.append(location)
        return read_points(location, *args)

    monkeypatch.setattr(stream, "read_points", spied)
    _task(two_objects)
    assert alone == [two_objects[1].location]


def test_a_read_task_gives_the_same_figures_whichever_path_reads_its_objects(
    two_objects: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    scanned = _task(two_objects)
    # Every object read alone, its points grouped one at a time and the groups merged each time.
    monkeypatch.setattr(scan, "scan", lambda listed, _limits, workers: (scan.Scan(), listed))
    monkeypatch.setattr(metrics, "GROUP_ROWS", 1)
    monkeypatch.setattr(metrics, "MERGE_ROWS", 1)
    alone = _task(two_objects)
    assert _day_rows(alone) == _day_rows(scanned)
    assert _object_rows(alone) == _object_rows(scanned)
    reasons = [table.column("reason").to_pylist() for table in (alone, scanned)]
    assert reasons[0] == reasons[1]


def test_a_recount_keeps_the_points_of_its_day_after_its_start(two_objects: list[Any]) -> None:
    table = _task(two_objects, metrics.Recount(start=T0 + 1200, day=DAY0))
    # The errors point at the start itself is out; day 1 is another day's.
    assert _day_rows(table) == sorted(
        [
            (*AGE, DAY0, 50.0, 70.0, 3.0, T0 + 2000, T0 + 2000),
            (*COVERAGE_ONLY, DAY0, 0.0, 0.0, 1.0, T0 + 1500, T0 + 1500),
        ]
    )
    assert _object_rows(table) == []  # counted when first read


def test_the_recount_reads_the_objects_holding_points_of_the_day_after_the_start() -> None:
    recount = metrics.Recount(start=T0 + 1000, day=DAY0)
    spans = {
        "ends-at-start": (T0 - 500, T0 + 1000),
        "ends-after-start": (T0 - 500, T0 + 1001),
        "inside": (T0 + 5000, T0 + 6000),
        "starts-next-day": (T0 + DAY, T0 + DAY + 10),
        "ends-next-day": (T0 + DAY - 1, T0 + DAY + 10),
        "no-points": (None, None),
    }
    listed = [stream.StreamObject(name, 1, None) for name in spans]
    read = [{"object": n, "first": first, "last": last} for n, (first, last) in spans.items()]
    holding = metrics._holding(listed, read, recount)
    assert [o.location for o in holding] == ["ends-after-start", "inside", "ends-next-day"]


def _figures(*rows: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return [(*NOT_AN_OBJECT, *row) for row in rows]


FIGURES = _figures(
    (*AGE, DAY0, 30.0, 60.0, 2.0, T0 + 1000, T0 + 1000, 30.0, 30.0),
    (*AGE, DAY0 + 1, 50.0, 70.0, 3.0, T0 + DAY + 2000, T0 + DAY + 3000, 40.0, 45.0),
    (*COVERAGE_ONLY, DAY0, 0.0, 0.0, 1.0, T0 + 500, T0 + 1500, 0.0, 0.0),
    (*ERRORS, DAY0 + 1, 1.0, 1.0, 1.0, T0 + DAY + 1200, T0 + DAY + 1200, 1.0, 1.0),
)


def test_a_series_adds_up_its_days(spark: Any) -> None:
    # the opening is the first day's (its first point), the closing the last day's
    expected = [
        (*AGE, 50.0, 130.0, 5.0, T0 + 1000, T0 + DAY + 3000, 30.0, 45.0),
        (*COVERAGE_ONLY, 0.0, 0.0, 1.0, T0 + 500, T0 + 1500, 0.0, 0.0),
        (*ERRORS, 1.0, 1.0, 1.0, T0 + DAY + 1200, T0 + DAY + 1200, 1.0, 1.0),
    ]
    assert_same_rows(
        frame(spark, metrics.DAY_SCHEMA, FIGURES).transform(metrics.series_figures),
        frame(spark, metrics.FIGURES_SCHEMA, expected),
    )


def test_the_days_after_a_day_are_those_of_later_days(spark: Any) -> None:
    figures = frame(spark, metrics.DAY_SCHEMA, FIGURES)
    assert_same_rows(
        figures.transform(metrics.after_day, DAY0),
        frame(spark, metrics.DAY_SCHEMA, [FIGURES[1], FIGURES[3]]),
    )
