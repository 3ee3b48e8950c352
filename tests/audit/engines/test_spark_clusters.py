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

from constructs_lib.audit import cli
from tests.audit.accept.test_suppressions import REASON, faulty, suppress, suppressions_file
from tests.audit.conftest import props, write
from tests.support.clusters import ConnectServer, StandaloneCluster
from tests.support.s3server import S3Server

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

REPO_ROOT = Path(__file__).resolve().parents[3]
FLEET_SIZE = 120
KILL_FLEET_SIZE = 500
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


def test_standalone_cluster_reads_relative_paths(
    standalone_cluster: StandaloneCluster,
    fleet: Path,
    reference: list[Key],
    local_report: dict[str, Any],
) -> None:
    # Executors start in their own work directories: the relative path must still be found.
    report = audit(
        ["templates", "--engine", "spark", "--master", standalone_cluster.master_url],
        standalone_cluster.env,
        fleet.parent,
    )
    assert keyed(report, "templates/") == reference
    # Spark counts where the findings are; the local engine counts them in memory.
    assert report["summary"] == local_report["summary"]


def test_standalone_cluster_reads_s3(
    standalone_cluster: StandaloneCluster, s3_fleet: str, reference: list[Key], tmp_path: Path
) -> None:
    report = audit(
        [s3_fleet, "--engine", "spark", "--master", standalone_cluster.master_url],
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
        [s3_fleet, "--engine", "spark", "--remote", connect_server.url, "--output-dir", output],
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


@pytest.fixture(scope="module")
def accepted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], int, bytes]:
    """Two templates with findings in every accepted state (test_suppressions.accepted_fleet):
    a Metadata suppression, a file entry in force and one expired, a baseline with a finding
    since fixed. The arguments, and the local engine's exit status and JSON report."""
    folder = tmp_path_factory.mktemp("accepted")
    base = folder / "baseline.json"
    original = faulty()
    props(original, "Dlq")["SqsManagedSseEnabled"] = False  # in the baseline, fixed below
    first = [str(write(folder / "before", "a.json", original)), "--engine", "local", "--quiet"]
    assert cli.main([*first, "--write-baseline", str(base), "--output", os.devnull]) == 0
    entries = suppressions_file(
        folder,
        {"rule": "QR028", "template": "*b.json", "reason": REASON},
        {"rule": "QR012", "reason": REASON, "expires": "2000-01-01"},
    )
    template = suppress(faulty(), "Source", {"id": "QR012", "reason": REASON})
    paths = [write(folder, "a.json", template), write(folder, "b.json", faulty("billing"))]
    args = [*map(str, paths), "--suppressions", str(entries), "--baseline", str(base)]
    code, document = run_json([*args, "--engine", "local"], dict(os.environ), folder)
    return args, code, document


def run_json(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """The CLI's exit status and JSON report, as bytes; a usage error or a failed run is not a
    result."""
    completed = subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit", *args, "--format", "json", "--quiet"],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr.decode(errors="replace")[-3000:]
    return completed.returncode, completed.stdout


@pytest.mark.parametrize("kind", ["cluster", "connect"])
def test_suppressions_and_baseline_give_the_local_report_byte_for_byte(
    kind: str,
    accepted_run: tuple[list[str], int, bytes],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    # The file's entries travel in the closure of a mapInArrow, the expiry QR902s and the
    # baseline's counts in DataFrames made on the driver: through Connect and to executors
    # without constructs_lib, as on a cluster.
    args, code, expected = accepted_run
    if kind == "cluster":
        cluster: StandaloneCluster = request.getfixturevalue("standalone_cluster")
        env, where = cluster.env, ["--engine", "spark", "--master", cluster.master_url]
    else:
        server: ConnectServer = request.getfixturevalue("connect_server")
        env, where = server.env, ["--engine", "spark", "--remote", server.url]
    assert run_json([*args, *where], env, tmp_path) == (code, expected)
    document = json.loads(expected)
    states = {(f["rule_id"], f["suppression"], f["baseline"]) for f in document["findings"]}
    assert {("QR012", "inSource", ""), ("QR028", "external", "")} <= states
    assert ("QR012", "", "new") in states and ("QR902", "", "new") in states
    assert "Dlq" in {f["resource"] for f in document["fixed"]}
    assert code == 1  # the new QR012 on billing's Source


def test_a_worker_killed_mid_run_costs_a_retry_not_a_finding(
    standalone_cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Worker 1 dies as soon as a task of this run runs Python there (the parse or a later
    # stage), under that task, with the rest of the run still to go.
    fleet = _generate(tmp_path_factory.mktemp("kill-fleet"), KILL_FLEET_SIZE)
    env = standalone_cluster.env
    expected = keyed(audit([str(fleet), "--engine", "local"], env, fleet.parent), f"{fleet}/")
    command = [
        sys.executable,
        "-m",
        "constructs_lib.audit",
        str(fleet),
        "--format",
        "json",
        "--engine",
        "spark",
        "--master",
        standalone_cluster.master_url,
    ]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not standalone_cluster.python_worker_pids(1):
            assert run.poll() is None, (
                run.stderr.read().decode(errors="replace") if run.stderr else ""
            )
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert run.poll() is None, "the run ended before the worker could be killed"
        killed = standalone_cluster.kill_worker(1)
        stdout, stderr = run.communicate(timeout=RUN_TIMEOUT)
    try:
        assert run.returncode == 1, stderr.decode(errors="replace")[-3000:]
        assert len(killed) >= 3  # the worker, its executor and at least one Python worker
        assert keyed(json.loads(stdout), f"{fleet}/") == expected
    finally:
        standalone_cluster.restart_worker(1)
