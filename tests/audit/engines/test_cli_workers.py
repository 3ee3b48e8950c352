"""`queue-audit --workers N`: how many worker processes parse the files of a local run.

The default is one per core; 1 to ``cli_options.MAX_WORKERS`` is taken, anything else is a usage
error (exit 2) naming the value, the range and the fix, as is ``--workers`` with a Spark run,
whose cores come from ``--master`` or the cluster. The findings do not depend on the count.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import cli, cli_options
from constructs_lib.audit.engines import choice
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.parse import isolation
from tests.audit.conftest import healthy, write

CORPUS = Path(__file__).resolve().parents[1] / "corpus_real_shapes"
NOT_TEMPLATES = {"expected.json", "parameters.json"}


def _fleet(folder: Path, count: int) -> Path:
    for index in range(count):
        write(folder, f"app{index}.template.json", healthy(f"app{index}"))
    return folder


def _watch(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int | None], set[int]]:
    """The ``workers`` each ``isolation.parse_files`` call was given, and the process ids of
    the parsing workers started. Both observe by monkeypatching this package's own code: the
    function the local engine calls is wrapped to record its argument and then run as it is,
    and the worker class is subclassed to record the id of each process it really started."""
    given: list[int | None] = []
    started: set[int] = set()
    parse_files = isolation.parse_files

    def recording_parse_files(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs["workers"] if "workers" in kwargs else args[2])
        return parse_files(*args, **kwargs)

    class RecordingWorker(isolation._Worker):
        def _start(self, from_parent: int, to_parent: int, shared_fd: int) -> None:
            super()._start(from_parent, to_parent, shared_fd)  # a forked worker never returns
            started.add(self.pid)

    monkeypatch.setattr(isolation, "parse_files", recording_parse_files)
    monkeypatch.setattr(isolation, "_Worker", RecordingWorker)
    return given, started


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as raised:
        cli.main(argv)
    assert raised.value.code == 2
    return capsys.readouterr().err


def test_default_is_one_worker_process_per_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cores = os.cpu_count() or 1
    # twice as many files as cores: one file a batch, so every worker the default allows starts
    folder = _fleet(tmp_path, 2 * cores)
    given, started = _watch(monkeypatch)
    assert cli.main([str(folder), "--engine", "local", "--quiet"]) == 0
    assert given == [cores]
    assert len(started) == cores


def test_default_applies_to_the_engine_auto_chooses_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given, _started = _watch(monkeypatch)
    assert cli.main([str(_fleet(tmp_path, 2)), "--quiet"]) == 0
    assert given == [choice.default_workers()]


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_start_exactly_that_many_parsing_processes(
    workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 files are 4 batches for 2 workers and 2 batches for 1: one process parses them all
    folder = _fleet(tmp_path, 4)
    given, started = _watch(monkeypatch)
    argv = [str(folder), "--engine", "local", "--workers", str(workers), "--quiet"]
    assert cli.main(argv) == 0
    assert given == [workers]
    assert len(started) == workers


def test_findings_do_not_depend_on_the_number_of_workers(tmp_path: Path) -> None:
    files = [
        path
        for path, _stack in discovery.discover([str(CORPUS)])
        if os.path.basename(path) not in NOT_TEMPLATES
    ]
    documents = []
    for workers in ("1", "2"):
        out = tmp_path / f"workers-{workers}.json"
        argv = ["--engine", "local", "--workers", workers, "--format", "json", "--quiet"]
        cli.main([*files, *argv, "--fail-on", "never", "--output", str(out)])
        documents.append(json.loads(out.read_text()))
    one, two = documents
    assert one["findings"] and one["findings"] == two["findings"]
    assert one["summary"]["files_read"] == two["summary"]["files_read"] == len(files)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "0 worker processes would parse nothing"),
        ("-1", "-1 worker processes would parse nothing"),
        ("two", "'two' is not a whole number of worker processes"),
        ("1.5", "'1.5' is not a whole number of worker processes"),
        ("257", "257 worker processes is over the limit of 256"),
    ],
)
def test_fails_workers_outside_1_to_the_limit(
    value: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _usage_error(["fleet", "--engine", "local", "--workers", value], capsys)
    assert f"argument --workers: {says}" in error
    assert f"give 1 to {cli_options.MAX_WORKERS}" in error


def test_the_limit_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # workers beyond the number of files are never started
    given, started = _watch(monkeypatch)
    limit = str(cli_options.MAX_WORKERS)
    assert cli.main([str(_fleet(tmp_path, 1)), "--engine", "local", "--workers", limit]) == 0
    assert given == [cli_options.MAX_WORKERS]
    assert len(started) == 1


@pytest.mark.parametrize(
    "spark_run",
    [["--engine", "spark"], ["--master", "local[2]"], ["--remote", "sc://127.0.0.1:15002"]],
)
def test_fails_workers_with_a_spark_run(
    spark_run: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _usage_error([str(_fleet(tmp_path, 1)), *spark_run, "--workers", "2"], capsys)
    assert "--workers 2 sets the local engine's parsing processes" in error
    assert "Spark takes its cores from --master (local[N]" in error
    assert "drop --workers, or give --engine local" in error


def test_fails_workers_when_auto_chooses_spark_for_the_fleet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "auto_spark_files", lambda: 2)  # as if memory held 1 template
    error = _usage_error([str(_fleet(tmp_path, 2)), "--workers", "2"], capsys)
    assert "--engine auto chooses Spark (2 templates need more than half" in error
    assert "give --engine local to parse on this machine, or drop --workers" in error


def test_help_names_the_default_the_range_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"one per core, here {choice.default_workers()}" in text
    assert f"1-{cli_options.MAX_WORKERS}" in text and "open files" in text
