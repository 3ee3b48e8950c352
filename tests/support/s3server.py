"""A real S3 for the audit's ``s3://`` inputs: moto's server on loopback, one per test session.

The server is the one the end-to-end tests start (``tests/e2e/emulator.py``), as moto releases
it (no adapters: only S3 is used here). Nothing here touches ``os.environ``: a test that starts
a process passes ``S3Server.env`` to it, and a test that needs the variables in this process
sets them with ``monkeypatch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.emulator import DUMMY_KEY_ID, DUMMY_SECRET, REGION, Emulator


@dataclass
class S3Server:
    """A running moto server; ``env`` points any AWS SDK at it."""

    emulator: Emulator

    @property
    def endpoint(self) -> str:
        # An IP address, not "localhost": botocore then addresses buckets by path
        # (http://127.0.0.1:PORT/bucket/key), with no bucket.localhost name to resolve.
        return f"http://127.0.0.1:{self.emulator.port}"

    @property
    def env(self) -> dict[str, str]:
        """The AWS_* variables a process needs to reach this server (the credentials are dummies:
        moto accepts any, but botocore signs every request and needs some)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": DUMMY_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }

    def client(self) -> Any:
        """A boto3 S3 client for this server, whatever this process's environment says."""
        import boto3

        session = boto3.session.Session(
            aws_access_key_id=DUMMY_KEY_ID,
            aws_secret_access_key=DUMMY_SECRET,
            region_name=REGION,
        )
        return session.client("s3", endpoint_url=self.endpoint)

    def put_tree(self, bucket: str, prefix: str, local_folder: Path) -> list[str]:
        """Every file under ``local_folder`` as ``prefix/<relative path>`` in ``bucket`` (made
        when missing); the keys written, sorted."""
        client = self.client()
        existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        if bucket not in existing:
            client.create_bucket(Bucket=bucket)
        base = prefix.strip("/")
        keys: list[str] = []
        for path in sorted(p for p in Path(local_folder).rglob("*") if p.is_file()):
            relative = path.relative_to(local_folder).as_posix()
            key = f"{base}/{relative}" if base else relative
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
            keys.append(key)
        return sorted(keys)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One moto server for the session on a free loopback port; stopped (its process, by id) at
    the end even when tests fail. Its log is in the session's temporary folder."""
    log = tmp_path_factory.mktemp("s3server") / "moto.log"
    emulator = Emulator.start(log, adapters=False)
    try:
        yield S3Server(emulator)
    finally:
        emulator.stop()
