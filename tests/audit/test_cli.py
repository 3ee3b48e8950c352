"""`queue-audit` exit codes and outputs: 1 on findings at --fail-on, 2 on usage errors, 0 else."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import cli
from constructs_lib.audit.engines import choice, local
from tests.audit.conftest import healthy, props, write


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write(tmp_path, "clean.template.json", healthy("clean"))
    return tmp_path


def test_clean_input_exits_0(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([str(folder), "--engine", "local", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["findings"] == []
    assert document["summary"]["files_clean"] == 1


def test_fails_error_finding_exits_1(folder: Path, tmp_path: Path) -> None:
    bad = healthy("bad")
    props(bad, "Source")["SqsManagedSseEnabled"] = "false"
    write(folder, "bad.template.json", bad)
    out = tmp_path / "report.sarif"
    code = cli.main([str(folder), "--engine", "local", "--format", "sarif", "--output", str(out)])
    assert code == 1
    results = json.loads(out.read_text())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["QR012"]


def test_warning_below_default_threshold_exits_0(folder: Path) -> None:
    warn = healthy("warn")
    props(warn, "Source")["VisibilityTimeout"] = 59  # QR007, a warning
    write(folder, "warn.template.json", warn)
    assert cli.main([str(folder), "--engine", "local", "--quiet"]) == 0
    assert cli.main([str(folder), "--engine", "local", "--fail-on", "warning"]) == 1


def test_fails_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        cli.main(["--format", "pdf", "x"])
    assert raised.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_fails_no_path_exits_2() -> None:
    with pytest.raises(SystemExit) as raised:
        cli.main([])
    assert raised.value.code == 2


def test_fails_when_no_template_is_found_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        cli.main([str(tmp_path), "--engine", "local"])
    assert raised.value.code == 2
    assert f"no templates found in {tmp_path}" in capsys.readouterr().err


def test_module_entry_point_usage_error() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit", "--fail-on", "sometimes", "x"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 2
    assert "--fail-on" in completed.stderr


@pytest.mark.spark
def test_spark_engine_markdown_and_parquet(spark: Any, folder: Path, tmp_path: Path) -> None:
    broken = write(folder, "broken.yaml", b"Resources: [")
    out = tmp_path / "report.md"
    history = tmp_path / "history"
    code = cli.main(
        [
            str(folder),
            "--format",
            "markdown",
            "--output",
            str(out),
            "--parquet",  # the name --output-dir had before it wrote JSON Lines too
            str(history),
            "--engine",
            "spark",
            "--quiet",
        ]
    )
    assert code == 1  # QR901 is an error
    text = out.read_text()
    assert "QR901" in text and str(broken) in text
    rows = spark.read.parquet(str(history / "findings")).collect()
    assert [r["rule_id"] for r in rows] == ["QR901"]
    # the CLI left the session it found running
    assert spark.sparkContext._jsc is not None


# Just below and at the work the local engine does in a Spark run's fixed cost, at its measured
# rates (choice.py): templates alone, metric bytes alone, metric objects alone.
_BREAK_EVEN = choice.SPARK_FIXED_SECONDS
_TEMPLATES_AT = math.ceil(_BREAK_EVEN * choice.LOCAL_TEMPLATES_PER_SECOND)
_BYTES_AT = math.ceil(_BREAK_EVEN * choice.LOCAL_METRIC_BYTES_PER_SECOND)
_OBJECTS_AT = math.ceil(_BREAK_EVEN * choice.LOCAL_METRIC_OBJECTS_PER_SECOND)


@pytest.mark.parametrize(
    ("argv", "work", "expected"),
    [
        ([], choice.Workload(10), "local"),
        # No cluster named: one machine, where the local engine is faster at every size.
        ([], choice.Workload(10, 10**12, 10**7), "local"),
        (["--master", "local[2]"], choice.Workload(10), "local"),
        (["--master", "local[2]"], choice.Workload(_TEMPLATES_AT - 1), "local"),
        (["--master", "local[2]"], choice.Workload(_TEMPLATES_AT), "spark"),
        (["--remote", "sc://127.0.0.1:15002"], choice.Workload(0, _BYTES_AT - 1024), "local"),
        (["--remote", "sc://127.0.0.1:15002"], choice.Workload(0, _BYTES_AT), "spark"),
        (["--master", "spark://h:7077"], choice.Workload(0, 0, _OBJECTS_AT - 1), "local"),
        (["--master", "spark://h:7077"], choice.Workload(0, 0, _OBJECTS_AT), "spark"),
        (["--engine", "spark"], choice.Workload(10), "spark"),
        (["--engine", "local"], choice.Workload(10**9, 10**12, 10**7), "local"),
    ],
)
def test_engine_choice(argv: list[str], work: choice.Workload, expected: str) -> None:
    args = cli.build_parser().parse_args(["fleet", *argv])
    assert cli.choose_engine(args, work).engine == expected


def test_auto_runs_spark_from_the_fleet_size_the_local_engine_should_not_hold() -> None:
    args = cli.build_parser().parse_args(["fleet"])
    threshold = choice.auto_spark_files()
    # half of this machine's memory, at the measured cost of a template in the local engine
    assert threshold * choice.LOCAL_BYTES_PER_TEMPLATE * 2 <= os.sysconf(
        "SC_PHYS_PAGES"
    ) * os.sysconf("SC_PAGE_SIZE")
    assert cli.choose_engine(args, choice.Workload(threshold - 1)).engine == "local"
    chosen = cli.choose_engine(args, choice.Workload(threshold))
    assert chosen.engine == "spark"
    assert chosen.reason is not None and f"{threshold:,}" in chosen.reason


def test_auto_with_a_cluster_named_says_why_it_stays_local(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(folder, "no-dlq.template.json", props_without_dlq())
    assert cli.main([str(folder), "--master", "spark://unreachable:7077", "--format", "json"]) == 1
    err = capsys.readouterr().err
    assert "--engine auto runs local" in err and "--engine spark runs it" in err


def test_fails_local_engine_with_a_spark_master(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["fleet", "--engine", "local", "--master", "local[2]"])
    assert exit_info.value.code == 2
    assert "--master and --remote choose a Spark engine" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[2,4]", 2),
        ("local[*]", os.cpu_count()),
        ("spark://127.0.0.1:7077", 0),
        ("yarn", 0),
    ],
)
def test_local_cores(master: str, cores: int) -> None:
    from constructs_lib.audit.engines.spark import session

    assert session._local_cores(master) == cores


@pytest.mark.spark
def test_a_spark_run_prints_progress_and_no_jvm_output(folder: Path, tmp_path: Path) -> None:
    write(folder, "no-dlq.template.json", props_without_dlq())
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "constructs_lib.audit",
            str(folder),
            "--engine",
            "spark",
            "--master",
            "local[1]",
        ],
        capture_output=True,
        text=True,
        timeout=1800,  # a hang guard: a JVM start-up on a loaded 2-core machine took over 300 s
        check=False,
        env={**os.environ, "QUEUE_AUDIT_SPARK_LOG": str(tmp_path / "spark.log")},
    )
    assert completed.returncode == 1, completed.stderr  # QR001 is an error
    lines = completed.stderr.splitlines()
    assert lines and all(line.startswith("queue-audit: ") for line in lines), lines
    assert any("parsed 2 of 2 files" in line for line in lines)
    # What the JVM said on start-up went to the log file instead.
    assert "Using incubator modules" in (tmp_path / "spark.log").read_text()


def props_without_dlq() -> dict[str, Any]:
    template = healthy("lonely")
    props(template, "Source").pop("RedrivePolicy")
    return template


def test_progress_speaks_only_for_runs_longer_than_its_interval(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    times = iter([0.0, 1.0, 2.5, 2.6, 10.0, 11.0])
    monkeypatch.setattr(local.time, "monotonic", lambda: next(times))
    long_run = local.ReadProgress()  # created at 0.0
    long_run(10, 100)  # 1.0: within the first interval
    long_run(50, 100)  # 2.5
    long_run(100, 100)  # 2.6: the last line is always shown once anything was
    short_run = local.ReadProgress()  # 10.0
    short_run(100, 100)  # 11.0: done before the first interval
    assert capsys.readouterr().err.splitlines() == [
        "queue-audit: read 50 of 100 files",
        "queue-audit: read 100 of 100 files",
    ]


def test_local_engine_writes_the_same_datasets(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    write(folder, "no-dlq.template.json", props_without_dlq())
    history = tmp_path / "history"
    argv = [str(folder), "--engine", "local", "--format", "json", "--output-dir", str(history)]
    assert cli.main(argv) == 1
    document = json.loads(capsys.readouterr().out)
    (run_dir,) = (history / "findings").iterdir()
    rows = pq.read_table(next(run_dir.glob("*.parquet"))).to_pylist()
    assert rows == document["findings"] and rows
    lines = next((history / "findings-jsonl" / run_dir.name).glob("*.jsonl")).read_text()
    assert [json.loads(line) for line in lines.splitlines()] == document["findings"]
    summary = json.loads((history / "summary" / f"{run_dir.name}.json").read_text())
    assert summary["summary"] == document["summary"]


def test_the_work_auto_weighs_counts_the_metric_objects_the_window_needs(tmp_path: Path) -> None:
    from constructs_lib.audit.metrics.request import MetricsRequest

    old, new = tmp_path / "2026/01/01/00", tmp_path / "2026/03/01/00"
    for folder, data in ((old, b"x" * 7), (new, b"y" * 11)):
        folder.mkdir(parents=True)
        (folder / "stream-1.gz").write_bytes(data)
    request = MetricsRequest(str(tmp_path), window_days=14)
    with_cluster = cli.build_parser().parse_args(["fleet", "--master", "spark://h:7077"])
    # The January object lies wholly outside a 14-day window ending in March: not counted.
    assert cli._workload(with_cluster, 3, request) == choice.Workload(3, 11, 1)
    # Without a cluster named the metrics cannot change the choice: not even listed.
    alone = cli.build_parser().parse_args(["fleet"])
    assert cli._workload(alone, 3, request) == choice.Workload(3)
