"""The example app a user copies (``app.py`` with ``example/``), deployed as a user deploys it.

``cdk deploy --all`` runs in the repository with its own ``cdk.json`` (the app command and feature
flags ``make run`` uses); only the cloud assembly goes to a scratch folder. Each pipeline is
found through the deployed templates (its event source mapping, the queue that mapping reads and
that queue's redrive target) and CloudFormation's ListStackResources, never by a name guessed.

``EXAMPLE_PIPELINES`` restates what ``example/stack.py`` declares, so a change of the example
that breaks a promise fails here instead of being absorbed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .deployment import physical_ids
from .emulator import REPO_ROOT, CdkCli, CliResult

Template = dict[str, Any]
ClientFactory = Callable[..., Any]


@dataclass(frozen=True)
class ExamplePipeline:
    """One pipeline as example/stack.py declares it."""

    queue_name: str
    dead_letter_queue_name: str
    fifo: bool
    kms: bool
    function_timeout: int  # seconds
    batch_size: int
    batching_window: int  # seconds, 0 when unset
    max_concurrency: int | None
    max_receive_count: int  # the library's default
    retention_days: int

    @property
    def id(self) -> str:
        return self.queue_name


ORDERS = ExamplePipeline(
    queue_name="orders",
    dead_letter_queue_name="orders-dlq",
    fifo=False,
    kms=False,
    function_timeout=30,
    batch_size=100,
    batching_window=5,
    max_concurrency=20,
    max_receive_count=5,
    retention_days=4,
)
PAYMENTS = ExamplePipeline(
    queue_name="payments.fifo",
    dead_letter_queue_name="payments-dlq.fifo",
    fifo=True,
    kms=True,
    function_timeout=20,
    batch_size=10,
    batching_window=0,
    max_concurrency=None,
    max_receive_count=5,
    retention_days=4,
)
EXAMPLE_PIPELINES = (ORDERS, PAYMENTS)


def deploy_example(cdk: CdkCli, assembly: Path) -> CliResult:
    """``cdk deploy --all`` in the repository, as a user runs it after ``cdk bootstrap``."""
    return cdk.run(
        "deploy", "--all", "--require-approval", "never", "--output", str(assembly), cwd=REPO_ROOT
    )


def stack_templates(assembly: Path) -> dict[str, Template]:
    """Every stack of the cloud assembly (all of them are deployed), by stack name."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    templates: dict[str, Template] = {}
    for artifact_id, artifact in manifest["artifacts"].items():
        if artifact["type"] == "aws:cloudformation:stack":
            properties = artifact["properties"]
            name = properties.get("stackName") or artifact_id
            templates[name] = json.loads((assembly / properties["templateFile"]).read_text())
    return templates


def _resources_of(template: Template, resource_type: str) -> Iterator[tuple[str, Template]]:
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == resource_type:
            yield logical_id, resource


def _get_att_target(value: Any) -> str:
    assert isinstance(value, dict) and "Fn::GetAtt" in value, value
    target: str = value["Fn::GetAtt"][0]
    return target


@dataclass
class DeployedPipeline:
    """One pipeline of the example as deployed: logical ids and the emulator's physical ids."""

    spec: ExamplePipeline
    stack: str
    template: Template
    queue: str
    dead_letter_queue: str
    function: str
    event_source: str
    physical: dict[str, str]
    queue_url: str
    dead_letter_queue_url: str
    # The mapping as the emulator reported it right after deploy, before it was disabled.
    event_source_at_deploy: dict[str, Any] = field(default_factory=dict)

    def properties(self, logical_id: str) -> Template:
        props: Template = self.template["Resources"][logical_id]["Properties"]
        return props

    @property
    def function_name(self) -> str:
        return self.physical[self.function]


@dataclass
class ExampleDeployment:
    assembly: Path
    templates: dict[str, Template]
    physical: dict[str, dict[str, str]]  # stack -> logical id -> physical id
    pipelines: dict[str, DeployedPipeline]  # by source queue name
    deploy_result: CliResult


def locate_example(
    client: ClientFactory, assembly: Path, deploy_result: CliResult
) -> ExampleDeployment:
    templates = stack_templates(assembly)
    cloudformation = client("cloudformation")
    sqs = client("sqs")
    physical = {name: physical_ids(cloudformation, name) for name in templates}
    pipelines: dict[str, DeployedPipeline] = {}
    for stack, template in templates.items():
        for event_source, mapping in _resources_of(template, "AWS::Lambda::EventSourceMapping"):
            queue = _get_att_target(mapping["Properties"]["EventSourceArn"])
            queue_props = template["Resources"][queue]["Properties"]
            dead_letter_queue = _get_att_target(queue_props["RedrivePolicy"]["deadLetterTargetArn"])
            function = mapping["Properties"]["FunctionName"]["Ref"]
            name = queue_props["QueueName"]
            spec = next(p for p in EXAMPLE_PIPELINES if p.queue_name == name)
            ids = physical[stack]

            def url_of(logical_id: str, ids: Mapping[str, str] = ids) -> str:
                # The emulator reports queue URLs on the public SQS host; ask it for its own URL.
                queue_name = ids[logical_id].rstrip("/").rsplit("/", 1)[-1]
                url: str = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
                return url

            pipelines[name] = DeployedPipeline(
                spec,
                stack,
                template,
                queue,
                dead_letter_queue,
                function,
                event_source,
                ids,
                url_of(queue),
                url_of(dead_letter_queue),
            )
    assert sorted(pipelines) == sorted(p.queue_name for p in EXAMPLE_PIPELINES), sorted(pipelines)
    return ExampleDeployment(assembly, templates, physical, pipelines, deploy_result)
