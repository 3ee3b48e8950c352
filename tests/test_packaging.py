"""The wheel users install: what it holds, what it declares, and that it works on its own in a
fresh virtual environment with the locked runtime dependencies."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import constructs_lib
from tests.conftest import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
VERSION = PYPROJECT["version"]
TOOLS = Path(sys.executable).parent

# Run inside the fresh environment, from a directory without the source tree on sys.path.
SYNTH_SCRIPT = """
import json, sys
import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
import constructs_lib
from constructs_lib import ResilientQueue

app = cdk.App(outdir=sys.argv[1])
stack = cdk.Stack(app, "Packaged")
worker = lambda_.Function(
    stack, "Worker", runtime=lambda_.Runtime.PYTHON_3_14, handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\\n    return None\\n"),
    timeout=cdk.Duration.seconds(10),
)
queue = ResilientQueue(stack, "Orders", fifo=True)
queue.add_lambda_consumer(worker)
template = app.synth().get_stack_by_name("Packaged").template
print(json.dumps({
    "version": constructs_lib.__version__,
    "file": constructs_lib.__file__,
    "visibility": queue.visibility_timeout,
    "types": sorted(r["Type"] for r in template["Resources"].values()),
}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    completed = subprocess.run(
        [*build, "--wheel-dir", str(out), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    (built,) = out.glob("constructs_lib-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel and its locked runtime dependencies."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [str(TOOLS / "uv"), "pip", "install", "--python", str(python), "--quiet"]
    install += ["--constraint", str(REPO_ROOT / "requirements.lock"), str(wheel)]
    # From the local cache first; the network only when the cache lacks a locked package.
    completed = subprocess.run(
        [*install, "--offline"], capture_output=True, text=True, timeout=900, check=False
    )
    if completed.returncode != 0:
        completed = subprocess.run(
            install, capture_output=True, text=True, timeout=900, check=False
        )
    assert completed.returncode == 0, completed.stderr
    return venv


def test_wheel_holds_every_module_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    source = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "constructs_lib").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    packaged = {name for name in names if name.endswith(".py")}
    assert "constructs_lib/queue.py" in packaged
    assert "constructs_lib/audit/cli.py" in packaged
    assert packaged == source
    # PEP 561: users' type checkers read the package's annotations only with this marker.
    assert "constructs_lib/py.typed" in names
    outside = [n for n in names if not n.startswith(("constructs_lib/", "constructs_lib-"))]
    assert outside == []
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_wheel_declares_the_queue_audit_console_script(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"constructs_lib-{VERSION}.dist-info/entry_points.txt")
    parser = configparser.ConfigParser()
    parser.read_string(entry_points.decode())
    assert parser["console_scripts"]["queue-audit"] == "constructs_lib.audit.cli:main"


def test_wheel_metadata_matches_pyproject(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        raw = archive.read(f"constructs_lib-{VERSION}.dist-info/METADATA").decode()
    metadata = Parser().parsestr(raw)
    assert metadata["Name"] == PYPROJECT["name"]
    assert metadata["Version"] == VERSION
    requires = metadata.get_all("Requires-Dist") or []
    for dependency in PYPROJECT["dependencies"]:
        name = dependency.split(">")[0].split("=")[0].split("<")[0]
        assert any(r.startswith(name) and "extra ==" not in r for r in requires), dependency
    assert any(r.startswith("pyspark") and "extra == 'audit'" in r for r in requires)


def test_version_is_the_pyproject_version() -> None:
    assert constructs_lib.__version__ == VERSION


def test_installed_wheel_synthesizes_a_resilient_queue(installed: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": os.pathsep.join([str(TOOLS), os.environ.get("PATH", "")])}
    env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [str(installed / "bin" / "python"), "-c", SYNTH_SCRIPT, str(tmp_path / "out")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).is_relative_to(installed), "imported the source tree, not the wheel"
    assert result["version"] == VERSION
    assert result["visibility"] == 60  # 6 x 10 s
    assert result["types"].count("AWS::SQS::Queue") == 2
    # in-flight, DLQ depth, two ages, and the consumer's failed messages
    assert result["types"].count("AWS::CloudWatch::Alarm") == 5
    assert "AWS::Lambda::EventSourceMapping" in result["types"]


def test_installed_wheel_has_the_queue_audit_command(installed: Path) -> None:
    script = installed / "bin" / "queue-audit"
    assert script.is_file()
    assert "constructs_lib.audit.cli" in script.read_text()
