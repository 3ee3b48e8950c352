"""Docs are code: every example file runs, and the README shows them as they are."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SynthResult

EXAMPLES = sorted((REPO_ROOT / "docs" / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_synthesizes(example: Path, docs_example: Callable[[str], SynthResult]) -> None:
    synthesized = docs_example(example.stem)
    assert synthesized.returncode == 0, synthesized.output
    templates = synthesized.templates()
    assert templates, "the example synthesized no stack"
    for template in templates.values():
        types = {r["Type"] for r in template["Resources"].values()}
        assert "AWS::SQS::Queue" in types


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.DOTALL)


def test_readme_minimal_example_is_the_tested_file() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    minimal = (REPO_ROOT / "docs" / "examples" / "minimal_app.py").read_text()
    assert minimal in python_blocks(readme)


def test_readme_starts_with_the_two_commands() -> None:
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```bash") + 1 : lines.index("```bash") + 5]
    assert block[:4] == [
        "git clone <this repository> && cd constructs_lib",
        "make run    # synthesize the example app, then audit what it synthesized",
        "make test   # install from the lock files, then lint, type-check and run every test",
        "```",
    ]
    ci = (REPO_ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == "make test"


def test_readme_says_python_only_and_what_other_languages_can_use_before_the_install() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    first_screen = readme[: readme.index("## Add it to your CDK app")]
    assert "**Python CDK apps only.**" in first_screen
    for what_others_can_use in ("`queue-audit cdk.out`", "pre-commit hook", "`--format sarif`"):
        assert what_others_can_use in first_screen
