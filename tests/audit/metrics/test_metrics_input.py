"""``--metrics``: metric stream output read and aggregated, locally and on Spark alike.

The corpus is generated here as Firehose delivers a metric stream (JSON lines, gzip, Parquet,
under ``YYYY/MM/DD/HH/``), and every expected figure is computed in this module from the
generated data points, never by the code under test.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from constructs_lib.audit import cli, cli_options
from constructs_lib.audit.inputs import objects
from constructs_lib.audit.metrics import aggregate, decode, request, stream
from constructs_lib.audit.model import CoverageRow, SeriesRow
from tests.support.s3server import S3Server

Point = dict[str, Any]
DAY = 86_400_000
HOUR = 3_600_000
MINUTE = 60_000
# 2026-11-20T00:00:00Z
START = 1_795_132_800_000


def _point(
    account: str, region: str, namespace: str, metric: str, dims: dict[str, str], ts: int
) -> Point:
    rng = random.Random(f"{account}{namespace}{metric}{sorted(dims.items())}{ts}")
    # Whole numbers and halves: every sum is exact in any order, so both engines agree bit for bit.
    count = float(rng.randint(1, 5))
    high = rng.randint(0, 400) / 2
    return {
        "metric_stream_name": "fleet",
        "account_id": account,
        "region": region,
        "namespace": namespace,
        "metric_name": metric,
        "dimensions": dims,
        "timestamp": ts,
        "value": {"max": high, "min": 0.0, "sum": high * count / 2, "count": count, "p99": high},
        "unit": "Count",
    }


def _corpus_points(days: int) -> list[Point]:
    """Data points every 10 minutes over ``days``: queues in two accounts, a consumer function
    published by FunctionName and again by Resource and ExecutedVersion, SQS points by another
    dimension set, and a namespace the audit ignores."""
    points: list[Point] = []
    for ts in range(START, START + days * DAY, 10 * MINUTE):
        for account, region, queue in (
            ("111111111111", "us-east-1", "orders"),
            ("111111111111", "us-east-1", "orders-dlq"),
            ("222222222222", "eu-west-1", "billing"),
        ):
            for metric in ("ApproximateAgeOfOldestMessage", "NumberOfMessagesSent"):
                points.append(_point(account, region, "AWS/SQS", metric, {"QueueName": queue}, ts))
        lam = ("111111111111", "us-east-1", "AWS/Lambda", "Errors")
        points.append(_point(*lam, {"FunctionName": "worker"}, ts))
        points.append(_point(*lam, {"FunctionName": "worker", "Resource": "worker:live"}, ts))
        points.append(_point(*lam, {"FunctionName": "worker", "ExecutedVersion": "3"}, ts))
        points.append(_point(*lam, {"Resource": "worker"}, ts))
        if ts % HOUR == 0:
            # In AWS/SQS but not by QueueName alone: coverage only (an account with no queue
            # series, so its coverage comes from these alone).
            points.append(_point("333333333333", "us-west-2", "AWS/SQS", "X", {}, ts))
        points.append(
            _point("111111111111", "us-east-1", "AWS/EC2", "CPU", {"InstanceId": "i"}, ts)
        )
    return points


def _parquet(points: list[Point]) -> bytes:
    value = pa.struct([(f, pa.float64()) for f in ("max", "min", "sum", "count", "p99")])
    table = pa.table(
        {
            "metric_stream_name": [p["metric_stream_name"] for p in points],
            "account_id": [p["account_id"] for p in points],
            "region": [p["region"] for p in points],
            "namespace": [p["namespace"] for p in points],
            "metric_name": [p["metric_name"] for p in points],
            "dimensions": pa.array(
                [list(p["dimensions"].items()) for p in points], pa.map_(pa.string(), pa.string())
            ),
            "timestamp": pa.array([p["timestamp"] for p in points], pa.int64()),
            "value": pa.array([p["value"] for p in points], value),
            "unit": [p["unit"] for p in points],
        }
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def _lines(points: list[Point]) -> bytes:
    return "".join(json.dumps(p) + "\n" for p in points).encode()


def write_stream(folder: Path, points: list[Point]) -> list[Path]:
    """Points by delivery hour, as Firehose writes them: each hour one object, in turn JSON
    lines, gzip (named .gz, or not) and Parquet. The written files, in hour order."""
    by_hour: dict[int, list[Point]] = {}
    for p in points:
        by_hour.setdefault(p["timestamp"] // HOUR * HOUR, []).append(p)
    written: list[Path] = []
    for index, hour in enumerate(sorted(by_hour)):
        prefix = folder / time.strftime("%Y/%m/%d/%H", time.gmtime(hour / 1000))
        prefix.mkdir(parents=True, exist_ok=True)
        name = f"fleet-1-{index:05d}"
        kind = index % 4
        if kind == 0:
            path, data = prefix / name, _lines(by_hour[hour])
        elif kind == 1:
            path, data = prefix / f"{name}.gz", gzip.compress(_lines(by_hour[hour]))
        elif kind == 2:
            path, data = prefix / name, gzip.compress(_lines(by_hour[hour]))  # no suffix
        else:
            path, data = prefix / f"{name}.parquet", _parquet(by_hour[hour])
        path.write_bytes(data)
        written.append(path)
    return written


def expected(points: list[Point], window_days: int) -> tuple[list[SeriesRow], list[CoverageRow]]:
    """The figures, from the rules of docs/audit/deployed.md ("Metrics"), computed here."""

    def kept(p: Point) -> str | None:
        dims = p["dimensions"]
        wanted = {"AWS/SQS": "QueueName", "AWS/Lambda": "FunctionName"}.get(p["namespace"])
        return dims[wanted] if wanted and list(dims) == [wanted] else None

    relevant = [p for p in points if kept(p) or p["namespace"] == "AWS/SQS"]
    end = max(p["timestamp"] for p in relevant)
    inside = [p for p in relevant if p["timestamp"] > end - window_days * DAY]
    series: dict[tuple[str, ...], list[Point]] = {}
    coverage: dict[tuple[str, str], list[int]] = {}
    for p in inside:
        name = kept(p)
        if name:
            key = (p["account_id"], p["region"], p["namespace"], p["metric_name"], name)
            series.setdefault(key, []).append(p)
        if p["namespace"] == "AWS/SQS":
            coverage.setdefault((p["account_id"], p["region"]), []).append(p["timestamp"])
    rows = [
        SeriesRow(
            *key,
            max(p["value"]["max"] for p in ps),
            sum(p["value"]["sum"] for p in ps),
            sum(p["value"]["count"] for p in ps),
            min(p["timestamp"] for p in ps),
            max(p["timestamp"] for p in ps),
            # the first and last data point's max, the larger of a timestamp's ties
            max(p["value"]["max"] for p in ps if p["timestamp"] == min(q["timestamp"] for q in ps)),
            max(p["value"]["max"] for p in ps if p["timestamp"] == max(q["timestamp"] for q in ps)),
        )
        for key, ps in series.items()
    ]
    cover = [CoverageRow(*key, min(ts), max(ts)) for key, ts in coverage.items()]
    return sorted(rows), sorted(cover)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Point]]:
    folder = tmp_path_factory.mktemp("stream")
    points = _corpus_points(days=3)
    write_stream(folder, points)
    return folder, points


def test_local_figures_are_those_computed_from_the_data_points(
    corpus: tuple[Path, list[Point]],
) -> None:
    folder, points = corpus
    result = aggregate.read_and_aggregate(str(folder), window_days=14)
    series, coverage = expected(points, 14)
    assert list(result.series) == series
    assert list(result.coverage) == coverage
    assert result.problems == ()
    assert result.data_points == len(points)
    assert result.objects_read == 3 * 24 and result.objects_skipped == 0
    # Lambda's Resource and ExecutedVersion series would have tripled the function's samples.
    worker = [s for s in series if s.name == "worker"]
    assert len(worker) == 1 and worker[0].samples == sum(
        p["value"]["count"] for p in points if p["dimensions"] == {"FunctionName": "worker"}
    )
    assert ("333333333333", "us-west-2") in {(c.account, c.region) for c in coverage}


def test_the_window_counts_back_from_the_newest_data_point(
    corpus: tuple[Path, list[Point]],
) -> None:
    folder, points = corpus
    result = aggregate.read_and_aggregate(str(folder), window_days=1)
    assert (list(result.series), list(result.coverage)) == expected(points, 1)
    newest = max(p["timestamp"] for p in points if p["namespace"] != "AWS/EC2")
    assert (result.window_start, result.window_end) == (newest - DAY, newest)
    # Three days of data: the first day's hours ended before the window and its day of slack.
    assert (result.objects_read, result.objects_skipped) == (48, 24)


def test_objects_delivered_before_the_window_are_listed_not_read(tmp_path: Path) -> None:
    points = _corpus_points(days=6)
    write_stream(tmp_path, points)
    undated = tmp_path / "manual-export.json"  # no delivery hour: always read
    undated.write_bytes(_lines(points[-5:]))
    result = aggregate.read_and_aggregate(str(tmp_path), window_days=2)
    assert (list(result.series), list(result.coverage)) == expected(points + points[-5:], 2)
    newest_hour = (START + 6 * DAY - HOUR) // HOUR * HOUR
    # Hours that ended at least window + 1 day before the newest hour ended are not read.
    cut = newest_hour + HOUR - 3 * DAY
    skipped = (cut - START) // HOUR
    assert result.objects_skipped == skipped
    assert result.objects_read == 6 * 24 - skipped + 1
    assert stream.delivery_hour("a/2026/11/20/00/x") == START
    assert stream.delivery_hour("a/2026/13/20/00/x") is None
    assert stream.delivery_hour("2026/11/20/00") is None  # an hour folder, not an object in it


def test_listing_a_folder_dates_each_object_by_its_path_below_that_folder(tmp_path: Path) -> None:
    # The folder given may itself look like a delivery hour: only the path below it counts.
    root = tmp_path / "2026" / "11" / "19" / "23"
    hour = root / "2026" / "11" / "20" / "00"
    hour.mkdir(parents=True)
    (hour / "x.gz").write_bytes(b"")
    (root / "y.gz").write_bytes(b"")
    for location in (str(root), f"{root}/", f"{root}/./"):
        hours = {Path(o.location).name: o.hour for o in stream.list_objects(location)}
        assert hours == {"x.gz": START, "y.gz": None}


def _broken_objects(folder: Path, good: list[Point]) -> dict[str, str]:
    """Objects that are not (all) metric stream data points; their names -> a word the
    problem must say."""
    hour = folder / "2026" / "11" / "20" / "05"
    hour.mkdir(parents=True, exist_ok=True)
    lines = _lines(good[:3]).decode().splitlines()
    bad_lines = [
        lines[0],
        "{not json",
        json.dumps({**good[1], "value": {"min": 1}}),
        json.dumps({**good[1], "timestamp": "yesterday"}),
        lines[1],
        "[]",
        lines[2],
    ]
    (hour / "mixed").write_text("\n".join(bad_lines) + "\n")
    (hour / "truncated.gz").write_bytes(gzip.compress(_lines(good[3:40]))[:-30])
    (hour / "README.txt").write_text("metric stream output lands here\n")
    (hour / "huge").write_bytes(_lines(good[40:]) + b" " * 300_000)
    (hour / "corrupt.parquet").write_bytes(b"PAR1" + b"\0" * 64)
    return {
        "mixed": "4 lines are not metric stream data points",
        "truncated.gz": "truncated",
        "README.txt": "not JSON",
        "huge": "over the",
        "corrupt.parquet": "Parquet",
    }


# Larger than any hour of the corpus, smaller than the "huge" object.
LIMITS = decode.StreamLimits(max_object_bytes=256 * 2**10)


def test_broken_objects_are_problems_and_the_rest_is_read(tmp_path: Path) -> None:
    points = [p for p in _corpus_points(days=1) if p["timestamp"] < START + 6 * HOUR]
    write_stream(tmp_path, points)
    extra = [p for p in _corpus_points(days=1) if p["timestamp"] == START + 5 * HOUR]
    words = _broken_objects(tmp_path, extra)
    result = aggregate.read_and_aggregate(str(tmp_path), 14, decode.StreamLimits())
    problems = {Path(o).name: reason for o, reason in result.problems}
    assert set(problems) == set(words) - {"huge"}
    for name, word in words.items():
        if name != "huge":
            assert word in problems[name], (name, problems[name])
    # The mixed object's three good lines count; the truncated one counts nothing.
    good = points + extra[:3] + extra[40:]
    assert (list(result.series), list(result.coverage)) == expected(good, 14)
    capped = aggregate.read_and_aggregate(str(tmp_path), 14, LIMITS)
    assert "over the 256 KiB" in dict((Path(o).name, r) for o, r in capped.problems)["huge"]


def test_a_line_over_the_cap_is_malformed() -> None:
    line = json.dumps(_point("1", "r", "AWS/SQS", "m", {"QueueName": "q"}, START)).encode()
    small = decode.StreamLimits(max_line_bytes=len(line) - 1)
    decoded = decode.decode(line + b"\n", "x", small)
    assert decoded.points.num_rows == 0 and decoded.malformed == 1
    assert decoded.problem is not None and "longer than" in decoded.problem
    assert decode.decode(line, "x").points.num_rows == 1


def test_a_decompression_bomb_is_not_read() -> None:
    bomb = gzip.compress(b"\n" * (2 * 2**20))
    decoded = decode.decode(bomb, "x", decode.StreamLimits(max_decoded_bytes=2**20))
    assert decoded.problem is not None and "decompressed" in decoded.problem


@pytest.mark.spark
def test_spark_gives_the_local_figures(spark: Any, tmp_path: Path) -> None:
    from constructs_lib.audit.engines.spark import metrics as spark_metrics

    points = _corpus_points(days=4)
    write_stream(tmp_path, points)
    _broken_objects(tmp_path, points[-60:])
    for days in (14, 2):
        local = aggregate.read_and_aggregate(str(tmp_path), days, LIMITS)
        on_spark = spark_metrics.read_and_aggregate(spark, str(tmp_path), days, LIMITS)
        assert on_spark == local
        assert local.series and local.coverage
        # The broken objects are in the first day: the 2-day window does not read them.
        assert len(local.problems) == (5 if days == 14 else 0)
        assert (local.objects_skipped > 0) == (days == 2)


@pytest.mark.spark
def test_spark_figures_are_those_computed_from_the_data_points(spark: Any, tmp_path: Path) -> None:
    # A point six hours into a fourth day moves the window's end there: a one-day window then
    # starts at 06:00 of the third day, whose points after it are counted again (``Recount``)
    # and whose points up to it are not, and the days before it are dropped.
    from constructs_lib.audit.engines.spark import metrics as spark_metrics

    late = _point("111111111111", "us-east-1", "AWS/SQS", "NumberOfMessagesSent",
                  {"QueueName": "orders"}, START + 3 * DAY + 6 * HOUR)  # fmt: skip
    points = [*_corpus_points(days=3), late]
    write_stream(tmp_path, points)
    for days in (14, 1):
        result = spark_metrics.read_and_aggregate(spark, str(tmp_path), days)
        assert (list(result.series), list(result.coverage)) == expected(points, days)
        assert result == aggregate.read_and_aggregate(str(tmp_path), days)
    assert result.window_start == START + 2 * DAY + 6 * HOUR


@pytest.mark.spark
def test_spark_keeps_the_day_figures_on_disk_not_in_the_jvm_heap(
    spark: Any, tmp_path: Path
) -> None:
    # On a local master the executor is the driver's JVM: 10^8 points cached in memory ran its
    # default 1 GiB heap out (docs/performance.md, "Spark at 10^8").
    from pyspark import StorageLevel

    from constructs_lib.audit.engines.spark import metrics as spark_metrics

    write_stream(tmp_path, _corpus_points(days=2))
    frames = spark_metrics.aggregate_frames(spark, str(tmp_path), 1, LIMITS)
    try:
        assert len(frames.persisted) == 2  # the day figures, and the first day's recount
        for persisted in frames.persisted:
            assert persisted.storageLevel == StorageLevel.DISK_ONLY
            assert persisted.is_cached
    finally:
        frames.release()
    assert not any(persisted.is_cached for persisted in frames.persisted)


@pytest.mark.spark
def test_spark_without_objects_has_no_figures(spark: Any, tmp_path: Path) -> None:
    from constructs_lib.audit.engines.spark import metrics as spark_metrics

    result = spark_metrics.read_and_aggregate(spark, str(tmp_path), 14)
    assert result == aggregate.read_and_aggregate(str(tmp_path), 14)
    assert result.series == () and result.window_end is None


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setattr(objects, "_cached", None)
    yield


def test_s3_input_is_read_as_a_folder(s3_server: S3Server, s3_env: None, tmp_path: Path) -> None:
    points = _corpus_points(days=1)
    write_stream(tmp_path, points)
    s3_server.put_tree("metric-stream", "cw/", tmp_path)
    result = aggregate.read_and_aggregate("s3://metric-stream/cw", 14)
    assert (list(result.series), list(result.coverage)) == expected(points, 14)
    assert result.objects_read == 24 and result.problems == ()
    one = aggregate.read_and_aggregate("s3://metric-stream/cw/2026/11/20/03/fleet-1-00003.parquet")
    assert one.objects_read == 1 and one.series
    with pytest.raises(stream.MetricsInputError, match="NoSuchBucket"):
        aggregate.read_and_aggregate("s3://no-such-metric-bucket/cw")


@pytest.mark.spark
def test_spark_reads_s3_on_the_executors(
    spark: Any, s3_server: S3Server, s3_env: None, tmp_path: Path
) -> None:
    from constructs_lib.audit.engines.spark import metrics as spark_metrics

    points = _corpus_points(days=1)
    write_stream(tmp_path, points)
    s3_server.put_tree("metric-stream-spark", "cw", tmp_path)
    # Python workers take their environment from the context's, shipped with each task.
    environment = spark.sparkContext.environment
    saved = dict(environment)
    environment.update(s3_server.env)
    try:
        result = spark_metrics.read_and_aggregate(spark, "s3://metric-stream-spark/cw/", 14)
    finally:
        environment.clear()
        environment.update(saved)
    assert result == aggregate.read_and_aggregate("s3://metric-stream-spark/cw/", 14)
    assert (list(result.series), list(result.coverage)) == expected(points, 14)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--metrics-window", "0"], "0 days is outside 1 to 455"),
        (["--metrics-window", "456"], "456 days is outside 1 to 455"),
        (["--metrics-window", "two"], "'two' is not a whole number of days; give 1 to 455"),
        (["--metrics-window", "7"], "--metrics-window 7 sets the window of --metrics"),
        (["--metrics", "no/such/stream"], "--metrics no/such/stream: no such file or folder"),
    ],
)
def test_bad_metrics_options_are_usage_errors(
    options: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([str(tmp_path), *options])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_metrics_options_make_the_request(tmp_path: Path) -> None:
    parse = cli_options.build_parser().parse_args
    args = parse([str(tmp_path), "--metrics", "s3://b/cw/", "--metrics-window", "455"])
    assert cli_options.metrics_from(args) == request.MetricsRequest("s3://b/cw/", 455)
    args = parse([str(tmp_path), "--metrics", str(tmp_path)])
    assert cli_options.metrics_from(args) == request.MetricsRequest(str(tmp_path), 14)
    assert cli_options.metrics_from(parse([str(tmp_path)])) is None


def test_a_data_point_newer_than_its_delivery_hour_still_ends_the_window(tmp_path: Path) -> None:
    points = _corpus_points(days=3)
    write_stream(tmp_path, points)
    # Filed under the first hour (a prefix in another time zone, or a late copy), yet the newest.
    late = [
        _point("111111111111", "us-east-1", "AWS/SQS", "NumberOfMessagesSent", {"QueueName": q}, t)
        for q in ("orders", "late-queue")
        for t in (START + 3 * DAY + HOUR, START + 3 * DAY + 2 * HOUR)
    ]
    (tmp_path / "2026" / "11" / "20" / "00" / "late-copy").write_bytes(_lines(late))
    result = aggregate.read_and_aggregate(str(tmp_path), window_days=14)
    assert result.window_end == START + 3 * DAY + 2 * HOUR
    assert (list(result.series), list(result.coverage)) == expected(points + late, 14)
