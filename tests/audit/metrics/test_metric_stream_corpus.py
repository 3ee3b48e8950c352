"""The bench's metric stream corpus (bench/metric_stream_corpus.py) is what it says it is: the
local engine reads from it, in both delivery shapes and both formats, exactly the figures the
generator computes from its parameters alone; its JSON lines are those ``json.dumps`` writes;
the same parameters give the same bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.metrics import aggregate
from tests.support.scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[3]

# Two queues (two streams) over 1.25 days and a few points of one more minute, read with a
# 1-day window: some objects lie wholly outside it, the newest minute is partial.
QUEUES = 2
MINUTES = 1800
WINDOW_DAYS = 1
EXTRA_POINTS = 29
# Firehose's longest buffer interval (900 s): fewer objects, the same layout.
BUFFER_MINUTES = 15
OBJECT_POINTS = 20_000


GENERATOR = load_script(REPO_ROOT / "bench" / "metric_stream_corpus.py")


def _params(shape: str) -> Any:
    points = QUEUES * GENERATOR.SERIES_PER_QUEUE * MINUTES + EXTRA_POINTS
    return GENERATOR.Params(
        points, QUEUES, shape, object_points=OBJECT_POINTS, buffer_minutes=BUFFER_MINUTES
    )


@pytest.fixture(scope="module", params=["large", "small"])
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp(f"corpus-{request.param}")
    summary = GENERATOR.generate(out, _params(request.param))
    return out, request.param, summary


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_the_local_engine_reads_the_figures_the_generator_expects(corpus: Any, fmt: str) -> None:
    out, shape, _ = corpus
    want = GENERATOR.expected(_params(shape), WINDOW_DAYS)
    result = aggregate.read_and_aggregate(str(out / fmt), WINDOW_DAYS)
    assert result.problems == ()
    got_series = {tuple(row[:5]): tuple(row[5:]) for row in result.series}
    assert got_series == want["series"]
    assert {tuple(row[:2]): tuple(row[2:]) for row in result.coverage} == want["coverage"]
    # 23 kept series per queue, all inside the window.
    assert len(want["series"]) == QUEUES * 23


def test_the_shapes_deliver_as_configured(corpus: Any) -> None:
    out, shape, summary = corpus
    gz = sorted((out / "json").rglob("*.gz"))
    parquet = sorted((out / "parquet").rglob("*.parquet"))
    assert len(gz) == len(parquet) == summary["objects"]
    if shape == "large":
        points = _params(shape).points
        assert len(gz) == -(-points // OBJECT_POINTS)
    else:
        # One object per stream (a queue each here) and buffer, under its hour; the partial
        # minute's points are the first queue's only.
        assert len(gz) == QUEUES * MINUTES // BUFFER_MINUTES + 1
        assert {p.name.split("-1-")[0] for p in gz} == {"metrics-00", "metrics-01"}
        hours = {p.parent.relative_to(out / "json").as_posix() for p in gz}
        assert len(hours) == MINUTES // 60 + 1
        assert {"2026/11/01/00", "2026/11/02/06"} <= hours


def test_json_lines_are_written_as_json_dumps_writes_them(corpus: Any) -> None:
    out, _, _ = corpus
    import gzip

    first = sorted((out / "json").rglob("*.gz"))[0]
    lines = gzip.decompress(first.read_bytes()).decode().splitlines()
    assert lines
    for line in lines:
        point = json.loads(line)
        assert json.dumps(point, separators=(",", ":")) == line
        assert set(point["value"]) == {"max", "min", "sum", "count", "p99"}
        assert point["value"]["sum"] == point["value"]["max"] * point["value"]["count"] / 2


def test_the_same_parameters_give_the_same_bytes(tmp_path: Path) -> None:
    params = GENERATOR.Params(5_000, 1, "small", buffer_minutes=BUFFER_MINUTES)

    def digest(out: Path) -> str:
        GENERATOR.generate(out, params)
        files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "corpus.json")
        return hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()

    assert digest(tmp_path / "a") == digest(tmp_path / "b")
