"""`queue-audit` on ``s3://`` inputs, against a real S3 API (moto's server on loopback).

The CLI runs as a child process with the server's environment, as a user runs it; what cannot be
seen from outside (pages requested, bytes read from a body) is observed in this process or in
the server's request log. Expected findings come from the rule catalog (the same faults as in
``test_cli.py``), never from running the audit on the same input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery, objects
from constructs_lib.audit.inputs.reading import SkippedFile
from constructs_lib.audit.safety import ReadLimits
from tests.audit.conftest import healthy, props, write
from tests.e2e.emulator import free_loopback_port
from tests.support.s3server import S3Server


def _without_aws(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """This environment minus every AWS_* variable (a developer's profile or endpoint must not
    decide where the child goes)."""
    return {k: v for k, v in environ.items() if not k.startswith("AWS_")}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit.cli", *args, "--engine", "local", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def report(completed: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert completed.returncode in (0, 1), completed.stderr
    document: dict[str, Any] = json.loads(completed.stdout)
    return document


@pytest.fixture
def child_env(s3_server: S3Server) -> dict[str, str]:
    return {**_without_aws(os.environ), **s3_server.env}


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's environment in this process, for this test only."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    # objects.py keeps its client for the life of the process: one made under another test's
    # environment would still point where that one did.
    monkeypatch.setattr(objects, "_cached", None)


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    """A new, empty bucket: the server lives for the whole session."""
    name = f"audit-{uuid.uuid4().hex[:20]}"
    s3_server.client().create_bucket(Bucket=name)
    return name


def small_fleet(folder: Path) -> dict[str, set[str]]:
    """Five templates and, from the rule catalog, the rules each must break."""
    write(folder, "alpha.template.json", healthy("alpha"))
    no_encryption = healthy("beta")
    props(no_encryption, "Source")["SqsManagedSseEnabled"] = "false"  # QR012, an error
    write(folder, "beta.template.json", no_encryption)
    short_visibility = healthy("delta")
    props(short_visibility, "Source")["VisibilityTimeout"] = 59  # QR007: 6 x 10 s is 60 s
    write(folder, "team/delta.template.json", short_visibility)
    write(folder, "team/gamma.yaml", json.dumps(healthy("gamma"), indent=2))  # JSON is YAML
    write(folder, "broken.template.json", b'{"Resources": {"Source": ')  # QR901
    return {
        "alpha": set(),
        "beta": {"QR012"},
        "delta": {"QR007"},
        "gamma": set(),
        "broken": {"QR901"},
    }


def rules_by_stack(document: dict[str, Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in document["findings"]:
        found.setdefault(finding["stack"], set()).add(finding["rule_id"])
    return found


def comparable(document: dict[str, Any], root: str) -> list[tuple[str, str, str, str, str]]:
    """Findings with the templates' common root cut from their paths and messages."""
    return sorted(
        (
            f["rule_id"],
            f["stack"],
            f["resource"],
            f["template"].removeprefix(root),
            f["message"].replace(root, "<root>/"),
        )
        for f in document["findings"]
    )


# --- the same fleet, on disk and in a bucket ------------------------------------------------------


def test_bucket_fleet_has_the_findings_of_the_same_fleet_on_disk(
    s3_server: S3Server, child_env: dict[str, str], bucket: str, tmp_path: Path
) -> None:
    folder = tmp_path / "fleet"
    expected = small_fleet(folder)
    s3_server.put_tree(bucket, "fleet", folder)

    local = report(cli(str(folder), "--format", "json", env=child_env))
    remote = report(cli(f"s3://{bucket}/fleet/", "--format", "json", env=child_env))

    stacks = set(expected)
    assert {s: rules_by_stack(remote).get(s, set()) for s in stacks} == expected
    assert set(rules_by_stack(remote)) <= stacks
    assert comparable(remote, f"s3://{bucket}/fleet/") == comparable(local, f"{folder}/")
    assert all(f["template"].startswith(f"s3://{bucket}/fleet/") for f in remote["findings"])
    assert remote["summary"]["files_read"] == 5
    assert remote["summary"]["files_unparseable"] == 1


def test_s3_urls_mixed_with_a_local_folder(
    s3_server: S3Server, child_env: dict[str, str], bucket: str, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    write(local, "local-ok.template.json", healthy("local-ok"))
    no_encryption = healthy("local-bad")
    props(no_encryption, "Source")["SqsManagedSseEnabled"] = "false"
    write(local, "local-bad.template.json", no_encryption)
    remote = tmp_path / "remote"
    short_visibility = healthy("remote-warn")
    props(short_visibility, "Source")["VisibilityTimeout"] = 59
    write(remote, "remote-warn.template.json", short_visibility)
    write(remote, "remote-ok.template.json", healthy("remote-ok"))
    s3_server.put_tree(bucket, "mixed", remote)

    document = report(cli(f"s3://{bucket}/mixed/", str(local), "--format", "json", env=child_env))

    assert {(f["template"], f["rule_id"]) for f in document["findings"]} == {
        (str(local / "local-bad.template.json"), "QR012"),
        (f"s3://{bucket}/mixed/remote-warn.template.json", "QR007"),
    }
    assert document["summary"]["files_read"] == 4
    assert document["summary"]["files_clean"] == 2


# --- listing ---------------------------------------------------------------------------------------


def _list_requests(server: S3Server, bucket: str, prefix: str) -> list[str]:
    """ListObjectsV2 requests for ``bucket``/``prefix`` in the server's request log."""
    wanted = f"GET /{bucket}?list-type=2"
    lines = server.emulator.log_path.read_text(errors="replace").splitlines()
    return [line for line in lines if wanted in line and f"prefix={prefix}" in line]


def _eventually(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    """The server logs a request just after answering it: wait a moment for the line."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_listing_follows_every_page(
    s3_server: S3Server, s3_env: None, bucket: str, tmp_path: Path
) -> None:
    for i in range(5):
        write(tmp_path, f"stack{i}.template.json", healthy(f"stack{i}"))
    s3_server.put_tree(bucket, "paged", tmp_path)
    # The server does cut a listing at the page size, so a single request would miss keys.
    first = s3_server.client().list_objects_v2(Bucket=bucket, Prefix="paged/", MaxKeys=2)
    assert first["IsTruncated"] and first["KeyCount"] == 2
    assert _eventually(lambda: len(_list_requests(s3_server, bucket, "paged/")) == 1)

    listed = objects.list_templates(f"s3://{bucket}/paged/", page_size=2)

    assert listed == [
        (f"s3://{bucket}/paged/stack{i}.template.json", f"stack{i}") for i in range(5)
    ]
    # 5 keys, 2 a page: 3 requests, each asking for 2 keys, the last two continuing the first.
    assert _eventually(lambda: len(_list_requests(s3_server, bucket, "paged/")) >= 4)
    requests = _list_requests(s3_server, bucket, "paged/")[1:]
    assert len(requests) == 3, requests
    assert all("max-keys=2&" in line for line in requests), requests
    assert ["continuation-token=" in line for line in requests] == [False, True, True], requests


def test_listing_keeps_only_what_a_folder_walk_keeps(
    s3_server: S3Server, s3_env: None, bucket: str, tmp_path: Path
) -> None:
    kept = [
        "a.template.json",
        "b.template.yaml",
        "c.template.yml",
        "d.template",
        "e.json",
        "f.yaml",
        "g.yml",
        "nested/h.template.json",
    ]
    dropped = [
        "manifest.json",
        "package.json",
        "package-lock.json",
        "tree.json",
        "cdk.json",
        "cdk.context.json",
        "tsconfig.json",
        "App.assets.json",
        "README.md",
        "handler.py",
        "notes.txt",
        "bundle.zip",
        "asset.0123abcd/inner.json",
        "node_modules/lib/index.json",
        ".git/hooks.json",
    ]
    for name in kept + dropped:
        write(tmp_path, name, b"{}")
    s3_server.put_tree(bucket, "mixed-names", tmp_path)

    listed = objects.list_templates(f"s3://{bucket}/mixed-names/")

    assert listed == [
        (f"s3://{bucket}/mixed-names/{name}", stack)
        for name, stack in zip(kept, "abcdefgh", strict=True)
    ]


def test_a_url_names_one_object_or_a_folder(
    s3_server: S3Server, s3_env: None, bucket: str, tmp_path: Path
) -> None:
    write(tmp_path, "solo/app.template.json", b"{}")
    write(tmp_path, "solo/other.json", b"{}")
    write(tmp_path, "solo/README.md", b"# not a template")
    write(tmp_path, "solo-old/stale.json", b"{}")
    s3_server.put_tree(bucket, "", tmp_path)
    url = f"s3://{bucket}"

    assert objects.list_templates(f"{url}/solo/app.template.json") == [
        (f"{url}/solo/app.template.json", "app")
    ]
    # An object named outright is audited whatever its name, as a file named by path is.
    assert objects.list_templates(f"{url}/solo/README.md") == [
        (f"{url}/solo/README.md", "README.md")
    ]
    # No object "solo": the folder solo/, not every key that starts with "solo".
    expected_folder = [
        (f"{url}/solo/app.template.json", "app"),
        (f"{url}/solo/other.json", "other"),
    ]
    assert objects.list_templates(f"{url}/solo") == expected_folder
    assert objects.list_templates(f"{url}/solo/") == expected_folder
    assert discovery.discover([f"{url}/solo", f"{url}/solo/app.template.json"]) == expected_folder


# --- reading ---------------------------------------------------------------------------------------


def test_object_over_the_cap_is_refused_before_its_body_is_read(
    s3_server: S3Server, s3_env: None, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib3

    client = s3_server.client()
    small = b'{"Resources": {}}' + b" " * 983  # 1,000 bytes
    client.put_object(Bucket=bucket, Key="small.template.json", Body=small)
    client.put_object(Bucket=bucket, Key="big.template.json", Body=b" " * (4 * 2**20))
    # Every byte of an HTTP body this process reads goes through urllib3's read (botocore's
    # streaming body wraps it): count them.
    received: list[int] = []
    original = urllib3.response.HTTPResponse.read

    def counting(self: Any, *args: Any, **kwargs: Any) -> bytes:
        data: bytes = original(self, *args, **kwargs)
        received.append(len(data))
        return data

    monkeypatch.setattr(urllib3.response.HTTPResponse, "read", counting)
    limits = ReadLimits(max_file_bytes=1024)

    assert objects.read_object(f"s3://{bucket}/small.template.json", limits) == small
    assert sum(received) == 1000  # the counter sees the reads of an object within the cap
    received.clear()
    with pytest.raises(SkippedFile) as raised:
        objects.read_object(f"s3://{bucket}/big.template.json", limits)
    assert sum(received) == 0
    assert str(raised.value) == (
        "not read: the object has 4,194,304 bytes: over the limit of 1 KiB "
        "(raise it with --max-file-size)"
    )


def test_object_over_max_file_size_is_a_skipped_qr901(
    s3_server: S3Server, child_env: dict[str, str], bucket: str, tmp_path: Path
) -> None:
    write(tmp_path, "fine.template.json", healthy("fine"))
    write(tmp_path, "huge.template.json", b" " * (4 * 2**20))
    s3_server.put_tree(bucket, "capped", tmp_path)

    document = report(
        cli(f"s3://{bucket}/capped/", "--max-file-size", "1M", "--format", "json", env=child_env)
    )

    huge = f"s3://{bucket}/capped/huge.template.json"
    assert [(f["rule_id"], f["template"], f["message"]) for f in document["findings"]] == [
        (
            "QR901",
            huge,
            f"could not read {huge}: not read: the object has 4,194,304 bytes: "
            "over the limit of 1 MiB (raise it with --max-file-size)",
        )
    ]
    assert document["summary"]["files_skipped"] == 1
    assert document["summary"]["files_clean"] == 1


def test_object_deleted_after_listing_is_a_qr901_for_it_alone(
    s3_server: S3Server, s3_env: None, bucket: str, tmp_path: Path
) -> None:
    small_fleet(tmp_path)
    s3_server.put_tree(bucket, "gone", tmp_path)
    files = discovery.discover([f"s3://{bucket}/gone/"])
    assert len(files) == 5
    s3_server.client().delete_object(Bucket=bucket, Key="gone/beta.template.json")

    result = engine.audit_files(files, workers=2)

    deleted = f"s3://{bucket}/gone/beta.template.json"
    unreadable = {(f.template, f.stack) for f in result.findings if f.rule_id == "QR901"}
    assert unreadable == {(deleted, "beta"), (f"s3://{bucket}/gone/broken.template.json", "broken")}
    message = next(f.message for f in result.findings if f.template == deleted)
    assert "no longer exists" in message and "deleted after it was listed" in message
    # The rest of the fleet is still judged.
    assert {(f.stack, f.rule_id) for f in result.findings if f.rule_id != "QR901"} == {
        ("delta", "QR007")
    }


# --- inputs that cannot be listed: usage errors ----------------------------------------------------


def test_missing_bucket_is_a_usage_error(child_env: dict[str, str]) -> None:
    url = f"s3://no-such-bucket-{uuid.uuid4().hex[:12]}/fleet/"

    completed = cli(url, env=child_env)

    assert completed.returncode == 2, completed.stderr
    assert url in completed.stderr
    assert "NoSuchBucket" in completed.stderr
    assert completed.stdout == ""


def test_unreachable_endpoint_is_a_usage_error(child_env: dict[str, str], bucket: str) -> None:
    url = f"s3://{bucket}/fleet/"
    nowhere = f"http://127.0.0.1:{free_loopback_port()}"

    completed = cli(url, env={**child_env, "AWS_ENDPOINT_URL": nowhere})

    assert completed.returncode == 2, completed.stderr
    assert url in completed.stderr
    assert "AWS_ENDPOINT_URL" in completed.stderr  # the fix names what to check
    assert completed.stdout == ""


def test_missing_credentials_are_a_usage_error(
    child_env: dict[str, str], bucket: str, tmp_path: Path
) -> None:
    url = f"s3://{bucket}/fleet/"
    env = {
        k: v
        for k, v in child_env.items()
        if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    }
    env |= {
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }

    completed = cli(url, env=env)

    assert completed.returncode == 2, completed.stderr
    assert url in completed.stderr
    assert "NoCredentialsError" in completed.stderr
    assert completed.stdout == ""


def test_is_object_url() -> None:
    assert objects.is_object_url("s3://bucket/prefix/")
    assert not objects.is_object_url("cdk.out")
    assert not objects.is_object_url("/tmp/s3://x")
    assert not objects.is_object_url("https://bucket.s3.amazonaws.com/key")
