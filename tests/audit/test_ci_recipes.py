"""The CI recipes in docs/audit/ci.md ("In CI and pre-commit"), run as written.

Each recipe is a fenced block after a `<!-- ci-recipe: NAME -->` line. Its queue-audit command
lines run in a folder holding `templates/`, the input every recipe names, so nothing in them is
rewritten; what they write is then read as the CI system would read it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.audit.conftest import healthy, props

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit" / "ci.md"
RECIPE = re.compile(r"<!-- ci-recipe: (?P<name>[\w-]+) -->\n```\w*\n(?P<body>.*?)\n```", re.S)
# A queue-audit command as a YAML `run:` value, a YAML list item, or a shell line.
COMMAND = re.compile(r"^\s*(?:-\s+|run:\s+)?(?P<command>queue-audit\s+.+)$", re.M)

# GitLab's Code Quality report: the keys GitLab reads from each issue.
CODE_QUALITY_ISSUE = {
    "type": "object",
    "required": ["description", "check_name", "fingerprint", "severity", "location"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "check_name": {"type": "string", "pattern": "^QR[0-9]{3}$"},
        "fingerprint": {"type": "string", "minLength": 1},
        "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
        "location": {
            "type": "object",
            "required": ["path", "lines"],
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "lines": {
                    "type": "object",
                    "required": ["begin"],
                    "properties": {"begin": {"type": "integer", "minimum": 1}},
                },
            },
        },
    },
}


def recipes() -> dict[str, str]:
    found = {m["name"]: m["body"] for m in RECIPE.finditer(DOC.read_text())}
    assert set(found) == {"github-actions", "gitlab-ci", "shell"}, sorted(found)
    return found


def commands(recipe: str) -> list[list[str]]:
    lines = [shlex.split(m["command"]) for m in COMMAND.finditer(recipes()[recipe])]
    assert lines, f"no queue-audit command in the {recipe} recipe"
    return lines


def _output(argv: list[str]) -> str:
    return argv[argv.index("--output") + 1]


@pytest.fixture(params=["clean", "faulty"])
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, int]:
    """A folder with `templates/` in it, and the exit status the recipes' commands must give."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "orders.template.json").write_text(json.dumps(healthy("orders")))
    if request.param == "clean":
        return tmp_path, 0
    faulty = healthy("billing")
    props(faulty, "Source")["SqsManagedSseEnabled"] = "false"  # QR012, an error
    (templates / "billing.template.json").write_text(json.dumps(faulty))
    return tmp_path, 1


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # The console script installed beside this interpreter, found the way CI finds it: on PATH.
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_github_actions_recipe_writes_the_sarif_it_uploads(fleet: tuple[Path, int]) -> None:
    folder, status = fleet
    (argv,) = commands("github-actions")
    completed = run(argv, folder)
    assert completed.returncode == status, completed.stderr
    document = json.loads((folder / _output(argv)).read_text())
    (sarif_run,) = document["runs"]
    assert document["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif_run["results"]] == (["QR012"] if status else [])

    steps = yaml.safe_load(recipes()["github-actions"])["jobs"]["queue-audit"]["steps"]
    (upload,) = [
        s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif")
    ]
    assert upload["with"]["sarif_file"] == _output(argv)
    # Uploaded when the audit step fails the job, which is when the findings matter most.
    assert "always()" in upload["if"]


def test_gitlab_recipe_writes_the_code_quality_report_it_declares(fleet: tuple[Path, int]) -> None:
    folder, status = fleet
    (argv,) = commands("gitlab-ci")
    completed = run(argv, folder)
    assert completed.returncode == status, completed.stderr
    issues: Any = json.loads((folder / _output(argv)).read_text())
    assert isinstance(issues, list)
    for issue in issues:
        jsonschema.validate(issue, CODE_QUALITY_ISSUE)
    assert [(i["check_name"], i["severity"], i["location"]["path"]) for i in issues] == (
        [("QR012", "critical", "templates/billing.template.json")] if status else []
    )

    job = yaml.safe_load(recipes()["gitlab-ci"])["queue-audit"]
    assert job["artifacts"]["reports"]["codequality"] == _output(argv)
    assert job["artifacts"]["when"] == "always"


def test_shell_recipe_gates_on_warnings_and_writes_markdown(fleet: tuple[Path, int]) -> None:
    folder, status = fleet
    (argv,) = commands("shell")
    completed = run(argv, folder)
    assert completed.returncode == status, completed.stderr
    text = (folder / _output(argv)).read_text()
    assert text.startswith("## Queue audit")
    assert ("QR012" in text) == bool(status)


def test_shell_recipe_fails_on_a_warning_alone(tmp_path: Path) -> None:
    # The recipe's --fail-on warning is a real gate: a fleet with only a warning fails it.
    templates = tmp_path / "templates"
    templates.mkdir()
    warned = healthy("slow")
    props(warned, "Source")["VisibilityTimeout"] = 59  # QR007, a warning
    (templates / "slow.template.json").write_text(json.dumps(warned))
    (argv,) = commands("shell")
    assert run(argv, tmp_path).returncode == 1
