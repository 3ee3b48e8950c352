"""The alarm runbook's shell commands (docs/alarms.md), run as written against the emulator.

The commands are read from the page itself (its ``bash`` blocks), so a test runs what a reader
copies. The AWS CLI is the ``aws`` of the virtual environment (AWS CLI v1 from the awscli
package, a dev dependency; the page's commands use only options v1 and v2 share), pointed at the
emulator through ``AWS_ENDPOINT_URL``. Only what the page leaves to the reader is filled in: the
queue and DLQ names of the names block, and ``<placeholders>`` such as ``<function>``.

One adaptation, for the CLI and not the page: AWS CLI v1 replaces the SQS endpoint of us-east-1
with its legacy host name unless ``--endpoint-url`` is given on the command line
(``awscli/customizations/overridesslcommonname.py``), ignoring ``AWS_ENDPOINT_URL``. So ``aws``
on the commands' PATH is a two-line wrapper that adds ``--endpoint-url "$AWS_ENDPOINT_URL"``
(the emulator's) before the command's own arguments. AWS CLI v2 honours the variable itself.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .emulator import REPO_ROOT, Emulator

RUNBOOK = REPO_ROOT / "docs" / "alarms.md"
AWS_CLI = Path(sys.executable).parent / "aws"


def bash_blocks(text: str | None = None) -> list[str]:
    """The page's ``bash`` code blocks, dedented (list items indent theirs)."""
    text = RUNBOOK.read_text() if text is None else text
    blocks = re.findall(r"^[ \t]*```bash\n(.*?)^[ \t]*```", text, flags=re.DOTALL | re.MULTILINE)
    return [textwrap.dedent(block) for block in blocks]


def block_with(*needles: str) -> str:
    """The one block that contains every needle (fails if none or several do)."""
    found = [block for block in bash_blocks() if all(needle in block for needle in needles)]
    assert len(found) == 1, f"{len(found)} runbook blocks contain {needles}"
    return found[0]


def commands(block: str) -> list[str]:
    """A block's commands: each line with its backslash continuations (comments included)."""
    found: list[str] = []
    continued = False
    for line in block.splitlines():
        if continued:
            found[-1] += "\n" + line
        else:
            found.append(line)
        continued = line.rstrip().endswith("\\")
    return found


def line_with(block: str, needle: str) -> str:
    """The one command of a block that contains ``needle``."""
    found = [command for command in commands(block) if needle in command]
    assert len(found) == 1, f"{len(found)} commands with {needle!r} in\n{block}"
    return found[0]


@dataclass(frozen=True)
class Run:
    script: str
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.returncode == 0, self.describe()
        return json.loads(self.stdout)

    def describe(self) -> str:
        return f"{self.script}\n-> {self.returncode}\n{self.stdout}\n{self.stderr}"


class Runbook:
    """Runs runbook commands in bash after the page's names block, set for one queue."""

    def __init__(self, emulator: Emulator, workdir: Path, queue: str, dead_letter_queue: str):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        names = block_with("QUEUE=", "DLQ=", "get-queue-url")
        # The reader sets the two names; everything else in the block runs as written.
        names = re.sub(r"^QUEUE=\S+", f"QUEUE={queue}", names, count=1, flags=re.MULTILINE)
        names = re.sub(r"^DLQ=\S+", f"DLQ={dead_letter_queue}", names, count=1, flags=re.MULTILINE)
        assert f"QUEUE={queue}" in names and f"DLQ={dead_letter_queue}" in names, names
        self.names = names
        wrapper = workdir / "bin" / "aws"
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text(
            f'#!/bin/sh\nexec {shlex.quote(str(AWS_CLI))} --endpoint-url "$AWS_ENDPOINT_URL" "$@"\n'
        )
        wrapper.chmod(0o755)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))},
            **emulator.aws_env(),
            # No profile or credentials of the machine's user are read.
            "AWS_CONFIG_FILE": str(workdir / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(workdir / "no-credentials"),
            "PATH": os.pathsep.join([str(wrapper.parent), os.environ.get("PATH", "")]),
        }

    def run(
        self,
        command: str,
        placeholders: Mapping[str, str] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> Run:
        for placeholder, value in (placeholders or {}).items():
            assert placeholder in command, f"{placeholder} not in {command}"
            command = command.replace(placeholder, value)
        script = f"set -euo pipefail\n{self.names}\n{command}\n"
        completed = subprocess.run(
            ["bash", "-c", script],
            cwd=self.workdir,
            env={**self.env, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Run(script, completed.returncode, completed.stdout, completed.stderr)
