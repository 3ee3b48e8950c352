"""The tests docs/testing.md shows a user (docs/examples/testing/) pass as a user runs them: pytest
in the app's own folder, with a snapshot it records on the first run and holds on the next."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "docs" / "examples" / "testing"


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        # the library as installed in a user's environment; no settings of this repository's, and
        # none of an xdist worker's (syrupy prints no snapshot report on a worker)
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
            "PYTHONPATH": str(REPO_ROOT),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_example_tests_pass_and_their_snapshot_holds(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("__pycache__", "__snapshots__"))
    # GIVEN the snapshot recorded once, as a user does with --snapshot-update
    recorded = pytest_in(app, "--snapshot-update", "-k", "snapshot")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "1 snapshot generated" in recorded.stdout
    # THEN a second synth matches it (asset hashes normalized) and every example test passes
    completed = pytest_in(app)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "4 passed" in completed.stdout
