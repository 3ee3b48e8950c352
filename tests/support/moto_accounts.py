"""Several AWS accounts on one moto server on loopback, for the audit's ``--deployed`` tests.

The server runs without ``MOTO_ACCOUNT_ID`` (the end-to-end emulator pins one account), so the
credentials decide the account, as in AWS: an assumed role's credentials act in the role's
account.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.emulator import DUMMY_KEY_ID, DUMMY_SECRET, REPO_ROOT, free_loopback_port

CALLER = "123456789012"  # moto's account for credentials it does not know
EAST, WEST = "us-east-1", "eu-west-1"
START_TIMEOUT_S = 30.0
# Where the AWS configuration files are said to be: a file that does not exist, which botocore
# reads as empty. Not os.devnull: a test that writes a report there must not change what a later
# process reads as its configuration (where /dev/null is a regular file, it keeps what is written).
NO_FILE = str(Path(__file__).with_name("no-aws-configuration"))


def policy(actions: list[str]) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
        }
    )


def trust(principal: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "sts:AssumeRole"}
            ],
        }
    )


@dataclass
class Fleet:
    endpoint: str
    key_id: str  # the auditing user's access key
    secret: str

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to audit as the auditing user, and nothing of this machine's own
        AWS configuration."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": EAST,
            "AWS_DEFAULT_REGION": EAST,
            "AWS_CONFIG_FILE": NO_FILE,
            "AWS_SHARED_CREDENTIALS_FILE": NO_FILE,
        }


def audit_as(fleet: Fleet, monkeypatch: Any) -> None:
    """Point this process at ``fleet`` as its auditing user, for one test (``monkeypatch``): its
    environment, and no S3 client made earlier for another server (``inputs.objects`` keeps the
    first one it makes, with the endpoint of that moment; each fleet module starts its own)."""
    from constructs_lib.audit.inputs import objects

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in fleet.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(objects, "_cached", None)


def queue_audit(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The real ``queue-audit`` in a child process, with ``env`` and this checkout importable."""
    return subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit", *argv],
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def without_aws(environment: dict[str, str]) -> dict[str, str]:
    """This process's environment without its own AWS settings."""
    return {k: v for k, v in environment.items() if not k.startswith("AWS_")}


def start_server(log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_loopback_port()
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "MOTO_ACCOUNT_ID"
    }
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            env=environment,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/data.json", timeout=2):
                return process, port
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    process.kill()
    process.wait()
    raise RuntimeError(f"moto server did not start; see {log}")


def session(region: str, credentials: dict[str, str] | None = None) -> Any:
    import boto3

    if credentials is None:
        credentials = {"AccessKeyId": DUMMY_KEY_ID, "SecretAccessKey": DUMMY_SECRET}
    return boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials.get("SessionToken"),
        region_name=region,
    )


def as_account(endpoint: str, role_arn: str) -> dict[str, str]:
    sts = session(EAST).client("sts", endpoint_url=endpoint)
    credentials: dict[str, str] = sts.assume_role(RoleArn=role_arn, RoleSessionName="setup")[
        "Credentials"
    ]
    return credentials


def create_stack(
    endpoint: str, session: Any, name: str, template: dict[str, Any], **extra: Any
) -> None:
    client = session.client("cloudformation", endpoint_url=endpoint)
    client.create_stack(StackName=name, TemplateBody=json.dumps(template), **extra)
    status = client.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]
    assert status == "CREATE_COMPLETE", (name, status)
