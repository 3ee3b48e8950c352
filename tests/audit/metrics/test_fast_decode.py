"""The vectorized JSON decode gives what the line-by-line decode gives, or leaves the object to
it; the bounds hold on both; the local engine's workers change nothing in the figures."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constructs_lib.audit.metrics import aggregate, decode, fast_json, grouping, scan, stream
from constructs_lib.audit.metrics.request import DAY_MS
from tests.audit.metrics.test_metrics_input import (
    HOUR,
    START,
    _corpus_points,
    _lines,
    _parquet,
    _point,
    expected,
    write_stream,
)

LIMITS = decode.DEFAULT_STREAM_LIMITS


@pytest.fixture(autouse=True, scope="module")
def _duckdb_for_every_size() -> Iterator[None]:
    """The corpora here are small: DuckDB decodes and groups them all the same, so both paths
    are compared on every object (module-scoped: Hypothesis runs each test many times)."""
    sizes = fast_json.MIN_BYTES, grouping.MIN_ROWS
    fast_json.MIN_BYTES = grouping.MIN_ROWS = 0  # type: ignore[misc]
    yield
    fast_json.MIN_BYTES, grouping.MIN_ROWS = sizes  # type: ignore[misc]


GOOD = [_point("1", "r", "AWS/SQS", "m", {"QueueName": f"q{i}"}, START + i) for i in range(5)]


def _both(data: bytes, limits: decode.StreamLimits = LIMITS) -> tuple[Any, Any]:
    return decode._json_points(data, limits), decode._json_lines(data, limits)


def _same(fast: decode.Decoded, slow: decode.Decoded) -> None:
    assert fast.points.schema == slow.points.schema
    # repr: a NaN read by both paths is the same NaN.
    assert repr(fast.points.to_pylist()) == repr(slow.points.to_pylist())
    assert (fast.data_points, fast.malformed, fast.problem) == (
        slow.data_points,
        slow.malformed,
        slow.problem,
    )


def test_good_lines_take_the_fast_path_and_give_the_line_paths_points() -> None:
    points = _corpus_points(days=1)
    data = _lines(points)
    assert len(data) < 2**20
    assert fast_json.json_points(data, 2**16, 2**20, dict(decode.SERIES_DIMENSION), decode.SQS)
    _same(*_both(data))
    assert decode._json_points(data, LIMITS).data_points == len(points)


def _with(**changes: Any) -> str:
    record: dict[str, Any] = {**GOOD[0], **changes}
    return json.dumps({k: v for k, v in record.items() if v is not _DROP})


def _raw_value(key: str, text: str) -> str:
    """A good line whose ``value.<key>`` is written as ``text``, raw JSON."""
    marker = 424242.5
    line = _with(value={**GOOD[0]["value"], key: marker})
    return line.replace(str(marker), text)


_DROP = object()
TRICKY = {
    "float timestamp": _with(timestamp=5.0),
    "bool timestamp": _with(timestamp=True),
    "text timestamp": _with(timestamp="5"),
    "null timestamp": _with(timestamp=None),
    "no timestamp": _with(timestamp=_DROP),
    "number account": _with(account_id=1),
    "null region": _with(region=None),
    "number dimension": _with(dimensions={"QueueName": 5}),
    "null dimension": _with(dimensions={"QueueName": None}),
    "list dimensions": _with(dimensions=["q"]),
    "text max": _with(value={"max": "1", "sum": 1, "count": 1}),
    "bool count": _with(value={"max": 1, "sum": 1, "count": False}),
    "no sum": _with(value={"max": 1, "count": 1}),
    "number value": _with(value=5),
    "NaN max": _with(value={"max": float("nan"), "sum": 1, "count": 1}),
    "huge timestamp": _with(timestamp=2**70),
    "array line": "[1]",
    "two objects": _with() + _with(),
    "trailing text": _with() + " x",
    "duplicate key": _with()[:-1] + ', "timestamp": 7}',
    "duplicate dimension": _with()[:-1].replace(
        '"QueueName": "q0"', '"QueueName": "a", "QueueName": "b"'
    )
    + "}",
    "carriage return": _with() + "\r",
    "blank": "   ",
    "control character": _with(metric_name="a\x01b").replace("\\u0001", "\x01"),
    "deep nesting": _with()[:-1] + ', "extra": ' + "[" * 2000 + "]" * 2000 + "}",
    "byte order mark": "\ufeff" + _with(),
    "not utf-8": _with(metric_name="\u00e9"),
    # Text written with escapes is the same text: grouped with the good lines' series.
    "escaped namespace": _with().replace('"AWS/SQS"', '"\\u0041WS\\/SQS"'),
    "escaped queue name": _with().replace('"q0"', '"\\u0071\\u0030"'),
    "escaped account and region": _with().replace('"1"', '"\\u0031"').replace('"r"', '"\\u0072"'),
    "quote and backslash in a name": _with(dimensions={"QueueName": 'q"\\'}),
    "exponent timestamp": _with().replace(f"{START}", f"{START / 1000}e3"),
    "exponent max": _raw_value("max", "1E2"),
    "negative zero sum": _raw_value("sum", "-0"),
    "leading zero sum": _raw_value("sum", "037.5"),
    "leading plus max": _raw_value("max", "+1"),
    "infinite count": _raw_value("count", "Infinity"),
    "huge exponent max": _raw_value("max", "1e400"),
    "tiny exponent max": _raw_value("max", "4.9e-324"),
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_a_tricky_line_among_good_ones_gives_the_line_paths_answer(name: str) -> None:
    line = TRICKY[name].encode()
    if name == "not utf-8":
        line = line.replace(b"\\u00e9", b"\xe9")
    good = _lines(GOOD).splitlines()
    data = b"\n".join([*good[:2], line, *good[2:]]) + b"\n"
    _same(*_both(data))


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["QueueName", "FunctionName", "x"]), st.text(max_size=3)),
)
FIELDS = st.sampled_from(
    ["account_id", "region", "namespace", "metric_name", "dimensions", "timestamp", "value"]
)


@settings(max_examples=60, deadline=None)
@given(changes=st.dictionaries(FIELDS, VALUES, max_size=2))
def test_any_field_of_any_type_gives_the_line_paths_answer(changes: dict[str, Any]) -> None:
    good = _lines(GOOD).splitlines()
    data = b"\n".join([good[0], json.dumps({**GOOD[1], **changes}).encode(), good[2]]) + b"\n"
    _same(*_both(data))


def test_a_line_at_the_cap_is_read_and_one_byte_over_is_not() -> None:
    line = json.dumps(GOOD[0]).encode()
    for cap, points, malformed in ((len(line), 1, 0), (len(line) - 1, 0, 1)):
        limits = decode.StreamLimits(max_line_bytes=cap)
        fast, slow = _both(line + b"\n" + line + b"\n", limits)
        _same(fast, slow)
        assert (fast.points.num_rows, fast.malformed) == (2 * points, 2 * malformed)
        assert (fast.problem is None) == (malformed == 0)


def test_an_object_at_the_decompressed_cap_is_read_and_one_byte_over_is_not() -> None:
    data = _lines(GOOD)
    at = decode.decode(gzip.compress(data), "x", decode.StreamLimits(max_decoded_bytes=len(data)))
    assert (at.problem, at.data_points) == (None, len(GOOD))
    over = decode.decode(
        gzip.compress(data), "x", decode.StreamLimits(max_decoded_bytes=len(data) - 1)
    )
    assert over.problem is not None and "decompressed" in over.problem
    assert over.points.num_rows == 0


def _fleet(folder: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Good hours in every format, and three broken objects among them."""
    points = [p for p in _corpus_points(days=1) if p["timestamp"] < START + 12 * HOUR]
    write_stream(folder, points)
    hour = folder / "2026" / "11" / "20" / "06"
    extra = [p for p in _corpus_points(days=1) if p["timestamp"] == START + 6 * HOUR]
    lines = _lines(extra[:4]).splitlines()
    (hour / "one-bad-line.gz").write_bytes(
        gzip.compress(b"\n".join([lines[0], b'{"value": 1}', *lines[1:]]) + b"\n")
    )
    (hour / "truncated.gz").write_bytes(gzip.compress(_lines(extra[4:20]))[:-30])
    (hour / "corrupt.parquet").write_bytes(_parquet(extra[20:30])[:-40])
    reasons = {
        "one-bad-line.gz": "1 line is not a metric stream data point (first: line 2: ",
        "truncated.gz": "truncated",
        "corrupt.parquet": "not readable Parquet",
    }
    return points + extra[:4], reasons


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_object_costs_that_object_only_with_any_number_of_workers(
    tmp_path: Path, workers: int
) -> None:
    good, reasons = _fleet(tmp_path)
    result = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, workers)
    problems = {Path(o).name: reason for o, reason in result.problems}
    assert set(problems) == set(reasons)
    for name, reason in reasons.items():
        assert reason in problems[name], problems[name]
    assert (list(result.series), list(result.coverage)) == expected(good, 14)
    assert result == aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 3 - workers)


def test_an_object_outside_the_window_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = _corpus_points(days=5)
    written = write_stream(tmp_path, points)
    read: list[str] = []
    original = stream.read_points

    def recording(location: str, *args: Any) -> decode.Decoded:
        read.append(location)
        return original(location, *args)

    original_scan = scan.scan

    def scanning(ordered: list[stream.StreamObject], *args: Any) -> Any:
        found, left = original_scan(ordered, *args)
        read.extend(o.location for o in ordered if o not in left)
        return found, left

    monkeypatch.setattr(stream, "read_points", recording)
    monkeypatch.setattr(scan, "scan", scanning)
    result = aggregate.read_and_aggregate(str(tmp_path), 1, LIMITS, 2)
    assert result.objects_skipped > 0
    assert str(written[0]) not in read and str(written[-1]) in read
    assert len(read) == len(set(read)) == result.objects_read


def _tricky_fleet(folder: Path, name: str) -> None:
    """Good gzip objects, and one that holds the tricky line among good ones."""
    line = TRICKY[name].encode()
    if name == "not utf-8":
        line = line.replace(b"\\u00e9", b"\xe9")
    hour = folder / "2026" / "11" / "20" / "06"
    hour.mkdir(parents=True)
    good = _lines(GOOD).splitlines()
    for number in range(3):
        (hour / f"good-{number}.gz").write_bytes(gzip.compress(b"\n".join(good) + b"\n"))
    tricky = b"\n".join([*good[:2], line, *good[2:]]) + b"\n"
    (hour / "tricky.gz").write_bytes(gzip.compress(tricky))


# Known differences of the whole scan, not yet closed: DuckDB's scan ignores fields it was not
# asked for, however deep (``json.loads`` gives up past Python's recursion limit), and a NaN
# ``max`` gives another series maximum than the per-object path's fold.
SCAN_DIFFERS: Final = {"deep nesting", "NaN max"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True)) if n in SCAN_DIFFERS else n
        for n in sorted(TRICKY)
    ],
)
def test_a_tricky_line_in_the_whole_scan_gives_the_per_object_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _tricky_fleet(tmp_path, name)
    read = _per_object_reads(monkeypatch)
    scanned = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 2)
    assert not [r for r in read if "good-" in r]  # the scan read the good objects
    monkeypatch.setattr(fast_json, "available", lambda: False)
    per_object = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 2)
    assert repr(scanned) == repr(per_object)  # repr: a NaN is the same NaN


def _per_object_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The objects the per-object path reads from here on (the scan's own calls included)."""
    read: list[str] = []
    original = stream.read_points

    def recording(location: str, *args: Any) -> decode.Decoded:
        read.append(location)
        return original(location, *args)

    monkeypatch.setattr(stream, "read_points", recording)
    monkeypatch.setattr(scan, "read_points", recording)
    return read


def test_the_whole_scan_reads_good_json_objects_in_one_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tricky_fleet(tmp_path, "bool count")
    read = _per_object_reads(monkeypatch)
    result = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 2)
    assert [Path(r).name for r in read] == ["tricky.gz"]  # for its problem text only
    assert result.data_points == 3 * len(GOOD) + len(GOOD)
    assert len(result.problems) == 1


def test_a_point_at_the_earliest_int64_time_is_read_in_the_one_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The readings' order reverses the time: a reversal that overflowed there failed the query
    # and sent every object of the run to the per-object path.
    hour = tmp_path / "2026" / "11" / "20" / "06"
    hour.mkdir(parents=True)
    earliest = {**GOOD[0], "timestamp": -(2**63)}
    for number in range(3):
        (hour / f"good-{number}.gz").write_bytes(gzip.compress(_lines([*GOOD, earliest])))
    read = _per_object_reads(monkeypatch)
    scanned = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 2)
    assert read == []
    assert scanned.data_points == 3 * (len(GOOD) + 1)
    monkeypatch.undo()
    monkeypatch.setattr(fast_json, "available", lambda: False)
    assert scanned == aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 2)


@pytest.mark.parametrize(
    "over",
    # Known difference, not yet closed: DuckDB's ``maximum_object_size`` does not hold for a
    # line inside its read buffer, so a line just over the cap is read by the scan.
    [0, pytest.param(1, marks=pytest.mark.xfail(strict=True))],
)
def test_a_line_at_or_over_the_cap_in_the_whole_scan_gives_the_per_object_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, over: int
) -> None:
    _tricky_fleet(tmp_path, "bool count")
    line = json.dumps(GOOD[0]).encode()
    limits = decode.StreamLimits(max_line_bytes=len(line) - over)
    scanned = aggregate.read_and_aggregate(str(tmp_path), 14, limits, 2)
    assert (scanned.data_points == 3 * len(GOOD) + len(GOOD)) == (not over)
    monkeypatch.setattr(fast_json, "available", lambda: False)
    assert scanned == aggregate.read_and_aggregate(str(tmp_path), 14, limits, 2)


class _RecountedFiles:
    """``scan._connection`` that records the files each recount (a query with a ``day``) reads."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.files: list[str] = []

    def __call__(self, workers: int) -> Any:
        connection = self.original(workers)
        recorded = self.files

        class Recording:
            def sql(self, query: str, params: dict[str, Any]) -> Any:
                if "day" in params:
                    recorded.extend(params["files"])
                return connection.sql(query, params=params)

        return Recording()


def test_the_day_holding_the_windows_start_is_counted_again_from_the_objects_holding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = _corpus_points(days=5)
    newest = max(p["timestamp"] for p in points)
    # Half a day and five minutes on: the window starts mid-day, between two points.
    points.append(
        _point("1", "r", "AWS/SQS", "m", {"QueueName": "q"}, newest + HOUR * 12 + 300_000)
    )
    written = write_stream(tmp_path, points)
    start = newest + HOUR * 12 + 300_000 - 2 * DAY_MS
    day_end = (start // DAY_MS + 1) * DAY_MS
    # Objects hold one hour of points each (write_stream), each of its times an AWS/SQS point,
    # kept: those holding a time of the day after the start, and only those, are read again (a
    # delivery hour a day either side of the day would have been near enough).
    hours = sorted({p["timestamp"] // HOUR for p in points})
    times = {p["timestamp"] for p in points if start < p["timestamp"] < day_end}
    holding = [
        str(path)
        for path, hour in zip(written, hours, strict=True)
        if hour in {t // HOUR for t in times}
    ]
    recounted = _RecountedFiles(scan._connection)
    monkeypatch.setattr(scan, "_connection", recounted)
    result = aggregate.read_and_aggregate(str(tmp_path), 2, LIMITS, 2)
    assert result.window_start == start
    assert (list(result.series), list(result.coverage)) == expected(points, 2)
    assert sorted(recounted.files) == sorted(holding)


def test_data_spanning_less_than_the_window_is_read_in_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = _corpus_points(days=2)
    write_stream(tmp_path, points)
    monkeypatch.setattr(scan, "_recount", None)  # never called
    result = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS, 2)
    assert (list(result.series), list(result.coverage)) == expected(points, 14)


def test_duckdb_draws_no_progress_bar_on_the_command_s_stderr() -> None:
    # DuckDB draws one on stderr for a query over 2 s, between queue-audit's own lines.
    from constructs_lib.audit.metrics import scan

    for connection in (fast_json.connection(), scan._connection(2)):
        setting = connection.sql("SELECT current_setting('enable_progress_bar')").fetchall()
        assert setting == [(False,)]


@pytest.mark.parametrize("kind", ["json", "parquet"])
def test_the_scan_counts_and_spans_each_object_as_the_per_object_path_does(
    tmp_path: Path, kind: str
) -> None:
    # The newest and the earliest rows are data points the audit does not keep, and one row is
    # not a data point: an object's span is its kept points' (the window's end and Spark's
    # recount follow it), its count leaves the bad row out and names it.
    newest = _point("1", "r", "AWS/EC2", "CPUUtilization", {"InstanceId": "i"}, START + 100)
    earliest = _point("1", "r", "AWS/Lambda", "Errors", {"Resource": "f"}, START - 50)
    bad = {**GOOD[1], "metric_name": None}
    hour = tmp_path / "2026" / "11" / "20" / "00"
    hour.mkdir(parents=True)
    for number, points in enumerate([[*GOOD, newest, earliest, bad], GOOD, [newest]]):
        name, data = (
            (f"part-{number}.gz", gzip.compress(_lines(points)))
            if kind == "json"
            else (f"part-{number}.parquet", _parquet(points))
        )
        (hour / name).write_bytes(data)
    listed = stream.list_objects(str(tmp_path))
    found, left = scan.scan(listed, LIMITS, 2)
    assert left == []
    for item in listed:
        decoded = stream.read_points(item.location, item.size, LIMITS)
        stamps = decoded.points.column("timestamp").to_pylist()
        span = (min(stamps), max(stamps)) if stamps else (None, None)
        assert found.spans[item.location] == span
        assert found.data_points[item.location] == decoded.data_points
        assert (item.location in found.problems) == (decoded.problem is not None)
    assert found.newest == GOOD[-1]["timestamp"]
    assert sorted(found.problems) == [
        str(hour / ("part-0.gz" if kind == "json" else "part-0.parquet"))
    ]
