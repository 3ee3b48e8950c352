"""``queue-audit --deployed --metrics`` gives the same findings, the same metrics summary and the
same ledger on the local engine, the standalone cluster and Spark Connect. (A local Spark
session reading the same fleet is ``test_observed_fleet.py``'s, in this process's session.)

The fleet (``planted_fleet.py``) is created in the session's emulator, which the cluster's and
the Connect server's executors reach with its settings: they list the stacks (one task per
region) and read the metric objects themselves. That emulator acts as one account (it pins
``MOTO_ACCOUNT_ID``), so the accounts are one here; ``test_observed_fleet.py`` runs the same
fleet across two accounts on the local engine and a local session. Each run is the real CLI in a
child process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.clusters import ConnectServer, StandaloneCluster
from tests.support.moto_accounts import CALLER, EAST, WEST, queue_audit
from tests.support.planted_fleet import DAYS, behaviour, expected, plant_stacks, write_metrics
from tests.support.s3server import S3Server

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

RUN_TIMEOUT = 600


@pytest.fixture(scope="module")
def metrics_url(s3_server: S3Server) -> str:
    plant_stacks(s3_server.endpoint)
    return write_metrics(s3_server.endpoint, CALLER)


def _audit(metrics: str, engine: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    argv = ["--deployed", "--region", EAST, "--region", WEST, "--metrics", metrics]
    argv += ["--metrics-window", str(DAYS), *engine, "--format", "json", "--quiet"]
    completed = queue_audit(argv, env, cwd, RUN_TIMEOUT)
    assert completed.returncode == 1, completed.stderr[-3000:]
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def _keyed(report: dict[str, Any]) -> list[tuple[str, ...]]:
    fields = ("rule_id", "severity", "template", "stack", "resource", "message", "physical")
    return sorted(tuple(f[name] for name in fields) for f in report["findings"])


@pytest.fixture(scope="module")
def reference(metrics_url: str, s3_server: S3Server, tmp_path_factory: Any) -> dict[str, Any]:
    env = {**os.environ, **s3_server.env}
    report = _audit(metrics_url, ["--engine", "local"], env, tmp_path_factory.mktemp("local"))
    assert behaviour(report["findings"]) == expected(CALLER)
    return report


def _agrees(report: dict[str, Any], reference: dict[str, Any]) -> None:
    assert _keyed(report) == _keyed(reference)
    assert report["summary"]["metrics"] == reference["summary"]["metrics"]
    # each observed queue's ledger, in the same rank (ten queues have series of their own)
    assert len(reference["ledger"]) == 10
    assert report["ledger"] == reference["ledger"]


def test_the_standalone_cluster_agrees(
    metrics_url: str,
    reference: dict[str, Any],
    standalone_cluster: StandaloneCluster,
    tmp_path: Path,
) -> None:
    engine = ["--engine", "spark", "--master", standalone_cluster.master_url]
    _agrees(_audit(metrics_url, engine, standalone_cluster.env, tmp_path), reference)


def test_spark_connect_agrees(
    metrics_url: str, reference: dict[str, Any], connect_server: ConnectServer, tmp_path: Path
) -> None:
    engine = ["--engine", "spark", "--remote", connect_server.url]
    _agrees(_audit(metrics_url, engine, connect_server.env, tmp_path), reference)
