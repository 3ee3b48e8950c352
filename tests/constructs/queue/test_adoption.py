"""Adopting deployed queues: for each kind of "before" stack, the real CDK CLI's ``cdk diff``
against the "after" app (docs/examples/migration_*_after.py) shows no queue, queue policy or
event source mapping replaced or removed, and shows the changes the adoption makes. The docs
examples are the run's shared synths (``docs_example``); the Solutions Constructs app needs a
venv of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SynthResult

EXAMPLES = REPO_ROOT / "docs" / "examples"
KEPT = ("AWS::SQS::Queue", "AWS::SQS::QueuePolicy", "AWS::Lambda::EventSourceMapping")
# The Solutions Constructs peer, installed from its lock once (shared with bench/synth_bench.py).
SOLUTIONS_VENV = REPO_ROOT / ".bench-venvs" / "solutions"
SOLUTIONS_LOCK = REPO_ROOT / "bench" / "peers" / "solutions-constructs.lock"
Examples = Callable[[str], SynthResult]


def synth(python: str, app: Path, outdir: Path) -> Path:
    env = {**os.environ, "CDK_OUTDIR": str(outdir)}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    subprocess.run([python, str(app)], cwd=REPO_ROOT, env=env, check=True, capture_output=True)
    return outdir / "Orders.template.json"


def template_of(synthesized: SynthResult) -> Path:
    assert synthesized.returncode == 0, synthesized.output
    return synthesized.outdir / "Orders.template.json"


def cdk_diff(before: Path, after_assembly: Path, cwd: Path) -> str:
    """``cdk diff`` of the assembly against ``before``, run in ``cwd`` (the assembly may be shared,
    so nothing is written beside it)."""
    completed = subprocess.run(
        [
            "cdk",
            "diff",
            "--app",
            str(after_assembly),
            "--template",
            str(before),
            "--fail-on",
            "destructive",
            "Orders",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"cdk diff found a destructive change:\n{output}"
    return output


def kept_lines(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if any(kind in line for kind in KEPT)]


def assert_nothing_replaced(diff: str) -> None:
    for line in kept_lines(diff):
        assert not line.startswith("[-]"), line
        assert "replace" not in line.lower(), line
    assert "requires replacement" not in diff
    assert "may be replaced" not in diff


@pytest.fixture(scope="session")
def solutions_python() -> str:
    """A venv of its own for AWS Solutions Constructs (it pins its own aws-cdk-lib), installed
    from its hash-locked file by uv (the installer ``make install`` uses), once."""
    python = SOLUTIONS_VENV / "bin" / "python"
    if not python.exists():
        venv.create(SOLUTIONS_VENV, with_pip=False)
        uv = str(Path(sys.executable).parent / "uv")
        sync = [uv, "pip", "sync", "--quiet", "--require-hashes", "--python", str(python)]
        subprocess.run([*sync, str(SOLUTIONS_LOCK)], check=True, timeout=900)
    return str(python)


def test_generated_names_keep_both_queues(tmp_path: Path, docs_example: Examples) -> None:
    before = template_of(docs_example("migration_generated_before"))
    after = docs_example("migration_generated_after").outdir
    diff = cdk_diff(before, after, tmp_path)
    assert_nothing_replaced(diff)
    assert re.search(r"\[~\] AWS::SQS::Queue Orders/Queue OrdersQueue3DFA1D51", diff)
    assert re.search(r"\[~\] AWS::SQS::Queue Orders/DeadLetterQueue OrdersDlq16CD0DA3", diff)
    assert "Orders-OrdersQueue3DFA1D51-1A2B3C4D5E6F" in diff  # the DLQ admits the source only
    assert "QueueName" not in diff


def test_named_queues_keep_queues_policies_and_mapping(
    tmp_path: Path, docs_example: Examples
) -> None:
    before = template_of(docs_example("migration_raw_before"))
    after = docs_example("migration_raw_after").outdir
    diff = cdk_diff(before, after, tmp_path)
    assert_nothing_replaced(diff)
    assert "[~] AWS::SQS::Queue Orders/Queue OrdersQueue3DFA1D51" in diff
    assert "[~] AWS::Lambda::EventSourceMapping" in diff


def test_solutions_constructs_sqs_to_lambda_keeps_everything(
    tmp_path: Path, solutions_python: str, docs_example: Examples
) -> None:
    before = synth(
        solutions_python,
        REPO_ROOT / "tests" / "adoption_apps" / "solutions_before.py",
        tmp_path / "b",
    )
    after = docs_example("migration_solutions_after").outdir
    diff = cdk_diff(before, after, tmp_path)
    assert_nothing_replaced(diff)
    assert "[~] AWS::SQS::Queue Orders/Queue PairqueueF51BF5AC" in diff
    assert "[~] AWS::SQS::Queue Orders/DeadLetterQueue PairqueuedlqFF9DF9E0" in diff


def test_serverless_lift_queue_keeps_everything(tmp_path: Path, docs_example: Examples) -> None:
    after = docs_example("migration_lift_after").outdir
    diff = cdk_diff(EXAMPLES / "migration_lift_before.template.json", after, tmp_path)
    assert_nothing_replaced(diff)
    assert "[~] AWS::SQS::Queue Jobs/Queue jobsQueueCEDBAE3E" in diff
    assert "[~] AWS::Lambda::EventSourceMapping" in diff
