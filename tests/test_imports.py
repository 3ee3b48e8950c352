"""The audit's modules must load without aws-cdk-lib: Spark workers import them by the thousand."""

from __future__ import annotations

import subprocess
import sys


def modules_loaded_after(statement: str) -> set[str]:
    completed = subprocess.run(
        [sys.executable, "-c", f"{statement}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(completed.stdout.split())


def test_importing_the_rules_does_not_load_aws_cdk() -> None:
    loaded = modules_loaded_after(
        "import constructs_lib, constructs_lib.policy, constructs_lib.audit.rules"
    )
    assert "constructs_lib.audit.rules" in loaded
    assert "aws_cdk" not in loaded


def test_constructs_load_on_first_use() -> None:
    loaded = modules_loaded_after("from constructs_lib import ResilientQueue")
    assert "aws_cdk" in loaded
    assert "constructs_lib.queue.construct" in loaded
