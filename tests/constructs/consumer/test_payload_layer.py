"""The layer a consumer of a queue with ``large_payloads`` gets: the backoff layer's files and
``constructs_lib.large_payloads``, importable in Lambda without aws-cdk-lib; and the backoff
layer itself, unchanged for consumers without large payloads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import LargePayloads, ResilientQueue, RetryBackoff, large_payloads
from constructs_lib.consumer.backoff_layer import LAYER_ID, PAYLOADS_LAYER_ID, RUNTIME_FILES

# What a handler needs beside the backoff's files (this test's list, not the library's).
PAYLOAD_FILES = (*RUNTIME_FILES, "large_payloads.py")


def worker(stack: cdk.Stack, name: str) -> lambda_.Function:
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
    )


def synth_layers(outdir: Path, with_payloads: bool) -> dict[str, tuple[Path, str]]:
    """Each layer of the synthesized app by its construct id: its staged directory and S3 key.
    The app always has a backoff consumer without large payloads; ``with_payloads`` adds a
    queue with them."""
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Layered")
    ResilientQueue(stack, "Orders").add_lambda_consumer(
        worker(stack, "OrdersWorker"), retry_backoff=RetryBackoff()
    )
    if with_payloads:
        ResilientQueue(stack, "Documents", large_payloads=LargePayloads()).add_lambda_consumer(
            worker(stack, "DocumentsWorker")
        )
    app.synth()
    template = json.loads((outdir / "Layered.template.json").read_text())
    assets: dict[str, Any] = json.loads((outdir / "Layered.assets.json").read_text())
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::LayerVersion":
            continue
        # A child of the stack: its logical id is its construct id and a hash.
        [construct_id] = [i for i in (LAYER_ID, PAYLOADS_LAYER_ID) if logical_id.startswith(i)]
        key = resource["Properties"]["Content"]["S3Key"]
        source = assets["files"][key.removesuffix(".zip")]["source"]
        found[construct_id] = (outdir / source["path"], key)
    return found


def files_of(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def test_the_payloads_layer_holds_the_backoff_files_and_large_payloads(tmp_path: Path) -> None:
    directory, _ = synth_layers(tmp_path, with_payloads=True)[PAYLOADS_LAYER_ID]

    assert files_of(directory) == sorted(f"python/constructs_lib/{n}" for n in PAYLOAD_FILES)
    package = Path(large_payloads.__file__).parent
    for name in PAYLOAD_FILES:
        staged = directory / "python" / "constructs_lib" / name
        assert staged.read_bytes() == (package / name).read_bytes()
        assert staged.stat().st_mode & 0o444 == 0o444  # readable by Lambda's runtime user


def test_the_payloads_layer_imports_without_aws_cdk(tmp_path: Path) -> None:
    directory, _ = synth_layers(tmp_path, with_payloads=True)[PAYLOADS_LAYER_ID]
    # -S -I: no site-packages, so neither aws-cdk-lib nor this checkout can be imported; only
    # the layer's python/ directory, as Lambda puts /opt/python on the path.
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import constructs_lib.large_payloads as m; import constructs_lib.backoff; "
        "assert not any(n.startswith(('aws_cdk', 'jsii')) for n in sys.modules); "
        "print(m.PAYLOAD_BUCKET_ENV)"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-I", "-c", script, str(directory / "python")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == large_payloads.PAYLOAD_BUCKET_ENV


def test_the_backoff_layer_is_the_same_with_payloads_beside_it(tmp_path: Path) -> None:
    alone = synth_layers(tmp_path / "alone", with_payloads=False)
    beside = synth_layers(tmp_path / "beside", with_payloads=True)

    assert set(alone) == {LAYER_ID}
    directory, key = alone[LAYER_ID]
    assert files_of(directory) == sorted(f"python/constructs_lib/{n}" for n in RUNTIME_FILES)
    # Its asset hash, and so every stack that has it, does not move with large_payloads.py.
    assert beside[LAYER_ID][1] == key
    assert beside[PAYLOADS_LAYER_ID][1] != key
