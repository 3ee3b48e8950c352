"""The wheel users install: what it holds, what it declares, and that it works on its own in a
fresh virtual environment with the locked runtime dependencies."""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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


def fresh_environment(folder: Path, requirement: str) -> Path:
    """A fresh virtual environment with ``requirement`` (the wheel, with or without extras) and
    the versions the lock file pins."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [str(TOOLS / "uv"), "pip", "install", "--python", str(python), "--quiet"]
    install += ["--constraint", str(REPO_ROOT / "requirements.lock"), requirement]
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


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel and its locked runtime dependencies."""
    return fresh_environment(tmp_path_factory.mktemp("fresh"), str(wheel))


def run_in(venv: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command of the environment, from a directory without the source tree on sys.path."""
    env = {**os.environ, "PATH": os.pathsep.join([str(TOOLS), os.environ.get("PATH", "")])}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_wheel_holds_every_module_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    source = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "constructs_lib").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    packaged = {name for name in names if name.endswith(".py")}
    assert "constructs_lib/queue/construct.py" in packaged
    assert "constructs_lib/audit/cli.py" in packaged
    assert packaged == source
    # PEP 561: users' type checkers read the package's annotations only with this marker.
    assert "constructs_lib/py.typed" in names
    # The files the code reads at run time (the HTML report's page and styles, Spark's logging
    # configuration) ship next to it.
    data = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "constructs_lib").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }
    assert {
        "constructs_lib/audit/report/html/page.html",
        "constructs_lib/audit/report/html/report.css",
    } <= data
    assert data <= set(names)
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


def requirements_by_extra(wheel: Path) -> dict[str, set[str]]:
    """The wheel's METADATA ``Requires-Dist``: extra ("" for none) -> requirement names."""
    with zipfile.ZipFile(wheel) as archive:
        raw = archive.read(f"constructs_lib-{VERSION}.dist-info/METADATA").decode()
    found: dict[str, set[str]] = {}
    for line in Parser().parsestr(raw).get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        extra = ""
        if requirement.marker is not None:
            extras = re.findall(r"extra == ['\"]([\w-]+)['\"]", str(requirement.marker))
            assert len(extras) == 1, line
            extra = extras[0]
        name = canonicalize_name(requirement.name)
        if requirement.extras:
            name += "[" + ",".join(sorted(requirement.extras)) + "]"
        found.setdefault(extra, set()).add(name)
    return found


def test_wheel_splits_the_audit_and_spark_extras(wheel: Path) -> None:
    extras = requirements_by_extra(wheel)
    assert set(extras) == {"", "audit", "spark"}
    assert extras[""] == {"aws-cdk-lib", "constructs"}
    # the local engine: parsers, the SAM translator and DuckDB (--metrics), no Spark, no
    # dataframes
    assert extras["audit"] == {"pyyaml", "aws-sam-translator", "boto3", "duckdb"}
    # the Spark engine: the audit extra (which the build writes out in full), plus Spark with
    # its Connect client (and its pyarrow) and pandas
    assert extras["spark"] == extras["audit"] | {"pyspark[connect]", "pandas"}


def test_pre_commit_hook_installs_the_audit_extra() -> None:
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "queue-audit"]
    assert hook["args"][:2] == ["--engine", "local"]
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(hook["additional_dependencies"]) == sorted(
        declared["optional-dependencies"]["audit"]
    )


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
    # in-flight, DLQ depth, two ages, and the consumer's failed messages and failing every message
    assert result["types"].count("AWS::CloudWatch::Alarm") == 6
    assert "AWS::Lambda::EventSourceMapping" in result["types"]


def test_installed_wheel_has_the_queue_audit_command(installed: Path) -> None:
    script = installed / "bin" / "queue-audit"
    assert script.is_file()
    assert "constructs_lib.audit.cli" in script.read_text()


def test_installed_wheel_without_the_audit_extra_names_it(installed: Path, tmp_path: Path) -> None:
    # A real environment without PyYAML or aws-sam-translator: the constructs alone.
    template = tmp_path / "template.yaml"
    template.write_text("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n")
    completed = run_in(installed, ["queue-audit", str(template)], tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    assert (
        completed.stderr.rstrip()
        .splitlines()[-1]
        .endswith("not installed: pip install 'constructs-lib[audit]'")
    )
    assert completed.stdout == ""


def test_audit_extra_alone_audits_a_sam_tree_cleanly(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``pip install constructs-lib[audit]`` in a fresh environment (the lock's versions): no
    Spark, no dataframes, and the local audit of a SAM tree prints nothing on stderr."""
    venv = fresh_environment(tmp_path_factory.mktemp("audit-extra"), f"{wheel}[audit]")
    probe = run_in(
        venv,
        [
            "python",
            "-c",
            "import importlib.util as u; "
            "print(sorted(m for m in ('pyspark', 'pandas', 'pyarrow', 'yaml', 'samtranslator') "
            "if u.find_spec(m)))",
        ],
        tmp_path,
    )
    assert probe.stdout.strip() == "['samtranslator', 'yaml']", probe.stderr
    # GIVEN a SAM application whose function has no CodeUri (the SAM CLI's default) and whose
    # function timeout of 20 s is too long for the queue's 60 s (QR007, a warning), and a
    # healthy SAM application with an API, whose expansion makes the translator log
    from tests.audit.parse.test_sam import sam_pipeline

    app = sam_pipeline("packaged", function={"Timeout": 20})
    lines = app.splitlines(keepends=True)
    (tree := tmp_path / "sam").mkdir()
    (tree / "orders").mkdir()
    (tree / "orders" / "template.yaml").write_text(
        "".join(line for line in lines if not line.strip().startswith("CodeUri:"))
    )
    (tree / "api").mkdir()
    (tree / "api" / "template.yaml").write_text(sam_pipeline("packaged-api") + SAM_API)
    completed = run_in(
        venv,
        ["queue-audit", str(tree), "--engine", "local", "--quiet", "--format", "json"],
        tmp_path,
    )
    # THEN a warning does not fail the run, stderr is empty, and the SAM consumer was judged
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    findings = json.loads(completed.stdout)["findings"]
    assert [(f["rule_id"], f["resource"]) for f in findings] == [("QR007", "Worker.Orders")]
    # AND the HTML report renders its page and styles from the files the wheel ships
    page = run_in(
        venv,
        ["queue-audit", str(tree), "--engine", "local", "--quiet", "--format", "html"],
        tmp_path,
    )
    assert page.returncode == 0, page.stderr
    assert page.stdout.startswith("<!DOCTYPE html>\n") and "<style>\nbody{" in page.stdout


SAM_API = """\
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: prod
      DefinitionBody:
        openapi: '3.0.1'
        info: {title: orders, version: '1'}
        paths: {}
"""
