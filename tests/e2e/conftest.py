"""Fixtures that start the local AWS emulator and drive the pinned CDK CLI against it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from .deployment import Deployment, deploy, load_templates, locate
from .emulator import ACCOUNT, REGION, CdkCli, Emulator
from .example_deployment import ExampleDeployment, deploy_example, locate_example


@pytest.fixture(scope="session")
def e2e_tmp() -> Iterator[Path]:
    """One scratch folder for the session (cloud assemblies, CLI state, server log), removed after."""
    with tempfile.TemporaryDirectory(prefix="constructs-lib-e2e-") as folder:
        yield Path(folder)


@pytest.fixture(scope="session")
def emulator(e2e_tmp: Path) -> Iterator[Emulator]:
    """A moto server on a free loopback port, stopped at the end even when tests fail."""
    server = Emulator.start(e2e_tmp / "moto.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def cdk(emulator: Emulator, e2e_tmp: Path) -> CdkCli:
    workdir = e2e_tmp / "cdk"
    workdir.mkdir()
    return CdkCli(emulator, workdir)


@pytest.fixture(scope="session")
def bootstrapped(cdk: CdkCli) -> CdkCli:
    """The CDK CLI after ``cdk bootstrap`` of the emulator's account and region."""
    result = cdk.run("bootstrap", f"aws://{ACCOUNT}/{REGION}")
    assert result.returncode == 0, result.describe()
    return cdk


@pytest.fixture(scope="session")
def boto_session(emulator: Emulator) -> boto3.Session:
    env = emulator.aws_env()
    return boto3.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=REGION,
    )


@pytest.fixture(scope="session")
def client_factory(emulator: Emulator, boto_session: boto3.Session) -> Callable[..., Any]:
    """``client_factory("sqs")``: a boto3 client bound to the emulator's endpoint."""

    def make(service: str, **kwargs: Any) -> Any:
        return boto_session.client(service, endpoint_url=emulator.endpoint, **kwargs)

    return make


@pytest.fixture(scope="session")
def deployment(
    bootstrapped: CdkCli, client_factory: Callable[..., Any], e2e_tmp: Path
) -> Iterator[Deployment]:
    """The test app as ``cdk deploy --all`` left it in the emulator, with its consumers quiet.

    Right after deploy each event source mapping is recorded as the emulator reports it, then
    disabled (UpdateEventSourceMapping Enabled=false). Reason: the emulator cannot run Lambda
    functions (that needs Docker), yet an enabled SQS mapping makes every SendMessage receive up
    to a batch of visible messages on the spot, try to invoke, fail and release them. Those extra
    receives raise ApproximateReceiveCount and push healthy messages towards the DLQ, so the
    tests play the function's part with boto3 instead, on the queues and visibility timeouts the
    library deployed. The live mapping settings are checked from the record.
    """
    prefix = "live"
    assembly = e2e_tmp / f"assembly-{prefix}"
    result = deploy(bootstrapped, prefix, assembly)
    assert result.returncode == 0, result.describe()
    try:
        templates = load_templates(assembly, prefix)
        queues = locate(client_factory, prefix, templates)
        lambda_client = client_factory("lambda")
        for queue in queues.values():
            uuid = queue.physical[queue.resources.event_source]
            queue.event_source_at_deploy = lambda_client.get_event_source_mapping(UUID=uuid)
            lambda_client.update_event_source_mapping(UUID=uuid, Enabled=False)
        yield Deployment(prefix, assembly, templates, queues, result)
    finally:
        # Best effort: the lifecycle test checks destroy; the server ends with the session anyway.
        bootstrapped.run("destroy", "--all", "--force", "--app", str(assembly))


@pytest.fixture(scope="session")
def example_deployment(
    bootstrapped: CdkCli, client_factory: Callable[..., Any], e2e_tmp: Path
) -> Iterator[ExampleDeployment]:
    """The example app (``app.py`` with ``example/``) as ``cdk deploy --all`` left it, deployed
    once per session, with its consumers quiet.

    As for the test app (see ``deployment``), each event source mapping (the source's and the
    DLQ's consumer's) is recorded right after deploy and then disabled: the emulator cannot run
    the functions, and an enabled mapping would receive messages on every SendMessage and push
    them towards the DLQ (or, on the DLQ, receive the dead letters the tests look for). ``test_example_app.py``
    destroys the app in its last test; the teardown here only makes sure of it.
    """
    assembly = e2e_tmp / "example-assembly"
    result = deploy_example(bootstrapped, assembly)
    assert result.returncode == 0, result.describe()
    try:
        deployment = locate_example(client_factory, assembly, result)
        lambda_client = client_factory("lambda")
        for pipeline in deployment.pipelines.values():
            # The DLQ's consumer too: the emulator invokes it when the redrive policy moves a
            # message to the DLQ.
            for consumer in pipeline.consumers:
                uuid = pipeline.physical[consumer.event_source]
                consumer.at_deploy = lambda_client.get_event_source_mapping(UUID=uuid)
                lambda_client.update_event_source_mapping(UUID=uuid, Enabled=False)
        yield deployment
    finally:
        # Best effort, from the deployed assembly (no new synth); usually destroyed already.
        bootstrapped.run("destroy", "--all", "--force", "--app", str(assembly))
