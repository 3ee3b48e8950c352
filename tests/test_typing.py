"""The package is typed (PEP 561): a user's mypy sees its annotations, and a call with a wrong
type fails type-checking before the app ever runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

USER_APP = """
import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Orders")
worker = lambda_.Function(
    stack,
    "Worker",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\\n    return None\\n"),
    timeout=cdk.Duration.seconds(30),
)
orders = ResilientQueue(stack, "Orders", fifo=True, max_receive_count={max_receive_count})
consumer = orders.add_lambda_consumer(worker, batch_size=10)
seconds: int = orders.visibility_timeout
"""


CALLS = {
    "int": ("5", None),
    "str": ('"5"', 'Argument "max_receive_count" to "ResilientQueue" has incompatible type "str"'),
    "float": (
        "5.5",
        'Argument "max_receive_count" to "ResilientQueue" has incompatible type "float"',
    ),
}


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy --strict over one user app per call, outside the repository, as a user runs it
    (one run: analysing aws-cdk-lib's annotations takes most of a minute)."""
    app_dir = tmp_path_factory.mktemp("user_apps")
    for name, (value, _) in CALLS.items():
        (app_dir / f"app_{name}.py").write_text(USER_APP.format(max_receive_count=value))
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-version", "3.11", "."],
        cwd=app_dir,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    lines = completed.stdout.splitlines()
    return {name: [line for line in lines if line.startswith(f"app_{name}.py:")] for name in CALLS}


def test_the_package_ships_the_pep_561_marker() -> None:
    assert (REPO_ROOT / "constructs_lib" / "py.typed").is_file()


@pytest.mark.parametrize("call", list(CALLS))
def test_a_users_mypy_checks_the_calls(mypy_output: dict[str, list[str]], call: str) -> None:
    _, error = CALLS[call]
    errors = mypy_output[call]

    assert not [line for line in errors if "import-untyped" in line or "py.typed" in line]
    if error is None:
        assert errors == []
    else:
        assert len(errors) == 1, errors
        assert error in errors[0]
