"""The groups `make test` hands to its worker processes whole (tests/conftest.py)."""

from __future__ import annotations

import re

from tests.conftest import CLUSTER_TEST_FILES, REPO_ROOT, worker_group

CLUSTER_FIXTURE = re.compile(r"\b(standalone_cluster|connect_server)\b")


def test_every_test_file_on_a_spark_cluster_is_in_the_cluster_group() -> None:
    using = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "tests").rglob("test_*.py")
        if path.name != "test_worker_groups.py" and CLUSTER_FIXTURE.search(path.read_text())
    }
    assert using == CLUSTER_TEST_FILES


def test_end_to_end_and_cluster_tests_share_a_group_and_other_files_have_their_own() -> None:
    assert worker_group("tests/e2e/test_mixed_run.py::test_a") == worker_group(
        "tests/e2e/test_example_app.py::test_b[x]"
    )
    clusters = {worker_group(f"{path}::test_c") for path in CLUSTER_TEST_FILES}
    assert len(clusters) == 1
    assert worker_group("tests/audit/test_cli.py::test_d") == "tests/audit/test_cli.py"
    assert worker_group("tests/audit/test_cli.py::test_d") != worker_group(
        "tests/audit/engines/test_job.py::test_d"
    )
