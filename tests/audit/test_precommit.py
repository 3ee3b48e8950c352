"""The pre-commit hook (.pre-commit-hooks.yaml): its definition, and pre-commit running it.

The end-to-end test does what a team does: a repository whose `.pre-commit-config.yaml` names
this one as the hook repository, pre-commit building the hook's environment (a fresh venv with
this package installed into it by pip) and running it on the files given.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.audit.conftest import healthy, props

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def _hook() -> dict[str, Any]:
    (hook,) = yaml.safe_load(MANIFEST.read_text())
    assert isinstance(hook, dict)
    return hook


def test_the_manifest_is_valid_for_pre_commit() -> None:
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(MANIFEST))
    assert hook["id"] == "queue-audit"


def test_the_hook_runs_the_installed_console_script_on_the_local_engine() -> None:
    hook = _hook()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert hook["language"] == "python"
    # The entry is looked up on the hook venv's PATH: the console script pip installs from
    # pyproject, which must be queue-audit's main.
    assert scripts[hook["entry"]] == "constructs_lib.audit.cli:main"
    assert hook["pass_filenames"] is True
    # The local engine: a commit must not start a JVM.
    args = hook["args"]
    assert args[args.index("--engine") + 1] == "local"
    from constructs_lib.audit import cli

    cli.build_parser().parse_args(["template.yaml", *args])  # the CLI accepts the hook's args


@pytest.mark.parametrize(
    ("path", "selected"),
    [
        ("Orders.template.json", True),
        ("infra/Orders.template.yaml", True),
        ("template.yaml", True),  # SAM's default name
        ("services/api/template.yml", True),
        ("templates/queues.json", True),
        ("cloudformation/queues.yaml", True),
        ("cfn/legacy.template", True),
        ("deploy/stacks/orders.yml", True),
        # JSON and YAML that are not templates: each would be a QR901 error
        ("package.json", False),
        ("templates/package.json", False),
        ("tsconfig.json", False),
        (".github/workflows/ci.yml", False),
        (".pre-commit-config.yaml", False),
        ("mkdocs.yml", False),
        ("docs/openapi.yaml", False),
        ("cdk.json", False),
        ("cdk.out/Orders.template.json", False),  # synthesized output, not source
        ("cdk.out/Orders.assets.json", False),
        ("node_modules/x/templates/a.json", False),
    ],
)
def test_the_hook_takes_templates_and_leaves_other_json_and_yaml(path: str, selected: bool) -> None:
    hook = _hook()
    # pre-commit matches with re.search on the path relative to the repository root
    chosen = bool(re.search(hook["files"], path)) and not re.search(hook["exclude"], path)
    assert chosen == selected


def _snapshot_of_this_repository(destination: Path) -> str:
    """This repository's working tree (tracked and new files, as they are now) as one commit of
    a throwaway repository: what pre-commit clones is then exactly what is being tested."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return _commit(destination)


def _commit(repository: Path) -> str:
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=repository, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "snapshot"], cwd=repository, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_pre_commit_runs_the_hook_on_templates(tmp_path: Path) -> None:
    hooks_repo = tmp_path / "hooks-repo"
    rev = _snapshot_of_this_repository(hooks_repo)

    project = tmp_path / "project"
    (project / "templates").mkdir(parents=True)
    (project / "templates" / "orders.template.json").write_text(json.dumps(healthy("orders")))
    faulty = healthy("billing")
    props(faulty, "Source")["SqsManagedSseEnabled"] = "false"  # QR012, an error
    (project / "templates" / "billing.template.json").write_text(json.dumps(faulty))
    # Files the hook must leave alone: queue-audit would call each an unparseable template.
    (project / "package.json").write_text('{"name": "project", "version": "1.0.0"}')
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "workflows" / "ci.yml").write_text("on: [push]\njobs: {}\n")
    config = {"repos": [{"repo": str(hooks_repo), "rev": rev, "hooks": [{"id": "queue-audit"}]}]}
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    _commit(project)

    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    # pip reads PIP_NO_BUILD_ISOLATION=0 as "build without isolation" (the value of its "no-"
    # options is inverted), and the hook's fresh venv has no hatchling to build this package
    # with: the build needs pip's isolated build environment, so the variable must not be set.
    env.pop("PIP_NO_BUILD_ISOLATION", None)

    def run(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--color", "never", "--files", *files],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,  # the first run installs the hook's environment
            check=False,
        )

    failing = run(
        "templates/orders.template.json",
        "templates/billing.template.json",
        "package.json",
        ".github/workflows/ci.yml",
    )
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "Failed" in failing.stdout
    finding = next(line for line in failing.stdout.splitlines() if "QR012" in line)
    assert "templates/billing.template.json" in finding
    # Only the two templates reached queue-audit: no QR901 for package.json or the workflow.
    assert "QR901" not in failing.stdout
    assert "in 2 files: 1 clean, 1 with findings" in failing.stdout

    passing = run("templates/orders.template.json", "package.json", ".github/workflows/ci.yml")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "Passed" in passing.stdout

    # Non-templates alone: the hook has nothing to run on.
    skipped = run("package.json", ".github/workflows/ci.yml")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "(no files to check)Skipped" in skipped.stdout
