"""queue-audit on a real standalone cluster and through Spark Connect, reading disk and S3.

The fleet comes from bench/generate_templates.py (faults injected with known findings). The
local engine's findings on local disk are the reference; every other way of running must give
exactly the same (rule, stack, resource, queue, message), path prefix aside. The cluster's and
the Connect server's Python workers do not have constructs_lib (``clusters.worker_python``), so
these runs also prove the job ships its own code. Each run is the real CLI in a child process:
this pytest process already holds a local SparkSession (``conftest.spark``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.audit.clusters import ConnectServer, StandaloneCluster
from tests.audit.s3server import S3Server

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

REPO_ROOT = Path(__file__).resolve().parents[2]
FLEET_SIZE = 120
BUCKET = "fleet"
RUN_TIMEOUT = 600

Key = tuple[str, str, str, str, str, str]


def _generate(folder: Path, count: int) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "generate_templates.py"),
            "--count",
            str(count),
            "--out",
            str(folder),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return folder / "templates"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _generate(tmp_path_factory.mktemp("cluster-fleet"), FLEET_SIZE)


@pytest.fixture(scope="module")
def s3_fleet(s3_server: S3Server, fleet: Path) -> str:
    s3_server.put_tree(BUCKET, "templates", fleet)
    return f"s3://{BUCKET}/templates/"


def audit(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """The CLI's JSON report; the run must end with 1 (the fleet has errors), not 2 or 3."""
    completed = subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit", *args, "--format", "json", "--quiet"],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr.decode(errors="replace")[-3000:]
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def keyed(report: dict[str, Any], prefix: str) -> list[Key]:
    """Findings with the fleet's location removed from paths and messages."""

    def strip(text: str) -> str:
        return text.replace(prefix, "<fleet>/")

    return sorted(
        (
            f["rule_id"],
            strip(f["template"]),
            f["stack"],
            f["resource"],
            f["queue"],
            strip(f["message"]),
        )
        for f in report["findings"]
    )


@pytest.fixture(scope="module")
def local_report(fleet: Path, s3_server: S3Server) -> dict[str, Any]:
    env = {**os.environ, **s3_server.env}
    report = audit([str(fleet), "--engine", "local"], env, fleet.parent)
    assert report["summary"]["reconciled"] and report["summary"]["files_read"] == FLEET_SIZE
    return report


@pytest.fixture(scope="module")
def reference(local_report: dict[str, Any], fleet: Path) -> list[Key]:
    return keyed(local_report, f"{fleet}/")


def test_local_spark_session_agrees(
    fleet: Path, reference: list[Key], local_report: dict[str, Any], s3_server: S3Server
) -> None:
    env = {**os.environ, **s3_server.env}
    report = audit([str(fleet), "--master", "local[2]"], env, fleet.parent)
    assert keyed(report, f"{fleet}/") == reference
    # Spark counts where the findings are; the local engine counts them in memory.
    assert report["summary"] == local_report["summary"]


def test_standalone_cluster_reads_relative_paths(
    standalone_cluster: StandaloneCluster, fleet: Path, reference: list[Key]
) -> None:
    # Executors start in their own work directories: the relative path must still be found.
    report = audit(
        ["templates", "--master", standalone_cluster.master_url],
        standalone_cluster.env,
        fleet.parent,
    )
    assert keyed(report, "templates/") == reference


def test_standalone_cluster_reads_s3(
    standalone_cluster: StandaloneCluster, s3_fleet: str, reference: list[Key], tmp_path: Path
) -> None:
    report = audit(
        [s3_fleet, "--master", standalone_cluster.master_url],
        standalone_cluster.env,
        tmp_path,
    )
    assert keyed(report, s3_fleet) == reference


def test_spark_connect_reads_s3_and_writes_the_dataset_there(
    connect_server: ConnectServer,
    s3_server: S3Server,
    s3_fleet: str,
    reference: list[Key],
    tmp_path: Path,
) -> None:
    import pyarrow.parquet as pq

    output = f"s3://{BUCKET}/history"
    report = audit(
        [s3_fleet, "--remote", connect_server.url, "--output-dir", output],
        connect_server.env,
        tmp_path,
    )
    assert keyed(report, s3_fleet) == reference
    client = s3_server.client()
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="history/")["Contents"]
    parts = [o["Key"] for o in listed if o["Key"].endswith(".parquet")]
    assert parts and all(key.startswith("history/findings/run=") for key in parts)
    rows = []
    for key in parts:
        body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        rows += pq.read_table(pa_buffer(body)).to_pylist()
    written = sorted(
        (
            r["rule_id"],
            r["template"].replace(s3_fleet, "<fleet>/"),
            r["stack"],
            r["resource"],
            r["queue"],
            r["message"].replace(s3_fleet, "<fleet>/"),
        )
        for r in rows
    )
    assert written == reference
    summaries = [o["Key"] for o in listed if o["Key"].startswith("history/summary/")]
    assert len(summaries) == 1


def pa_buffer(data: bytes) -> Any:
    import pyarrow as pa

    return pa.BufferReader(data)


def test_a_worker_killed_mid_run_costs_a_retry_not_a_finding(
    standalone_cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Big enough that the parse stage outlasts the kill: many tasks on both workers.
    fleet = _generate(tmp_path_factory.mktemp("kill-fleet"), 4000)
    env = standalone_cluster.env
    expected = keyed(audit([str(fleet), "--engine", "local"], env, fleet.parent), f"{fleet}/")
    command = [
        sys.executable,
        "-m",
        "constructs_lib.audit",
        str(fleet),
        "--format",
        "json",
        "--master",
        standalone_cluster.master_url,
    ]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        deadline = time.monotonic() + RUN_TIMEOUT
        # Kill the second worker once its executor is working on this run's tasks.
        while not standalone_cluster.executor_pids(1):
            assert run.poll() is None, (
                run.stderr.read().decode(errors="replace") if run.stderr else ""
            )
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(3)
        assert run.poll() is None, "the run ended before the worker could be killed"
        killed = standalone_cluster.kill_worker(1)
        stdout, stderr = run.communicate(timeout=RUN_TIMEOUT)
    try:
        assert run.returncode == 1, stderr.decode(errors="replace")[-3000:]
        assert len(killed) >= 2  # the worker and at least its executor
        assert keyed(json.loads(stdout), f"{fleet}/") == expected
    finally:
        standalone_cluster.restart_worker(1)
