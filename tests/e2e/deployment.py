"""Deploy the test app with the CDK CLI and find what it created, by logical id, in the emulator.

Physical resources are located through the synthesized templates (the consumer function the app
names, its event source mapping, the queue that mapping reads, that queue's redrive target) and
CloudFormation's ListStackResources, never by guessing a name the library chose. Stack Outputs
cannot be used: the emulator does not evaluate them when it executes a change set.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .app_spec import NAME_PREFIX_CONTEXT, QUEUES, QueueSpec
from .emulator import ACCOUNT, REGION, CdkCli, CliResult

APP_SCRIPT = Path(__file__).resolve().parent / "deploy_app.py"
Template = dict[str, Any]
ClientFactory = Callable[..., Any]


def app_command() -> str:
    """The ``--app`` command: this interpreter running the test app (quoted for the CLI's shell)."""
    return shlex.join([sys.executable, str(APP_SCRIPT)])


def app_args(prefix: str, assembly: Path) -> tuple[str, ...]:
    return (
        "--app",
        app_command(),
        "--output",
        str(assembly),
        "-c",
        f"{NAME_PREFIX_CONTEXT}={prefix}",
    )


def stack_name(prefix: str, spec_stack: str) -> str:
    return f"{prefix}-{spec_stack}"


def stack_names(prefix: str) -> list[str]:
    return sorted({stack_name(prefix, spec.stack) for spec in QUEUES})


def deploy(cdk: CdkCli, prefix: str, assembly: Path) -> CliResult:
    return cdk.run("deploy", "--all", "--require-approval", "never", *app_args(prefix, assembly))


def load_templates(assembly: Path, prefix: str) -> dict[str, Template]:
    return {
        name: json.loads((assembly / f"{name}.template.json").read_text())
        for name in stack_names(prefix)
    }


def _resources_of(template: Template, resource_type: str) -> Iterator[tuple[str, Template]]:
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == resource_type:
            yield logical_id, resource


def _by_path(template: Template, path: str) -> str:
    for logical_id, resource in template["Resources"].items():
        if resource.get("Metadata", {}).get("aws:cdk:path") == path:
            return logical_id
    raise AssertionError(f"no resource at construct path {path}")


def _get_att_target(value: Any, what: str) -> str:
    if not (isinstance(value, dict) and "Fn::GetAtt" in value):
        raise AssertionError(f"{what} is not a Fn::GetAtt reference: {value!r}")
    target: str = value["Fn::GetAtt"][0]
    return target


@dataclass
class QueueResources:
    """Logical ids of one ResilientQueue's pieces in its stack's template."""

    spec: QueueSpec
    stack: str
    template: Template
    queue: str
    dead_letter_queue: str
    function: str
    role: str
    event_source: str
    key: str | None

    def properties(self, logical_id: str) -> Template:
        props: Template = self.template["Resources"][logical_id]["Properties"]
        return props

    def resources_of(self, resource_type: str) -> list[tuple[str, Template]]:
        return list(_resources_of(self.template, resource_type))


def find_queue_resources(
    spec: QueueSpec, prefix: str, templates: Mapping[str, Template]
) -> QueueResources:
    stack = stack_name(prefix, spec.stack)
    template = templates[stack]
    function = _by_path(template, f"{stack}/{spec.construct_id}Consumer/Resource")
    mappings = [
        logical_id
        for logical_id, resource in _resources_of(template, "AWS::Lambda::EventSourceMapping")
        if resource["Properties"].get("FunctionName") == {"Ref": function}
    ]
    assert len(mappings) == 1, f"{spec.construct_id}: expected one event source, found {mappings}"
    event_source = mappings[0]
    queue = _get_att_target(
        template["Resources"][event_source]["Properties"]["EventSourceArn"], "EventSourceArn"
    )
    redrive = template["Resources"][queue]["Properties"].get("RedrivePolicy")
    assert redrive, f"{spec.construct_id}: source queue {queue} has no RedrivePolicy"
    dead_letter_queue = _get_att_target(redrive["deadLetterTargetArn"], "deadLetterTargetArn")
    role = _get_att_target(template["Resources"][function]["Properties"]["Role"], "function Role")
    key = _by_path(template, f"{stack}/{spec.construct_id}Key/Resource") if spec.kms else None
    return QueueResources(
        spec, stack, template, queue, dead_letter_queue, function, role, event_source, key
    )


@dataclass
class LiveQueue:
    """One ResilientQueue as deployed: its template pieces and the emulator's physical ids."""

    resources: QueueResources
    physical: dict[str, str]
    queue_url: str
    dead_letter_queue_url: str
    # The event source mapping as the emulator reported it right after deploy (see Deployment).
    event_source_at_deploy: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> QueueSpec:
        return self.resources.spec


def physical_ids(cloudformation: Any, stack: str) -> dict[str, str]:
    ids: dict[str, str] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for summary in page["StackResourceSummaries"]:
            if summary.get("LogicalResourceId"):
                ids[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
    return ids


def locate(
    client: ClientFactory, prefix: str, templates: Mapping[str, Template]
) -> dict[str, LiveQueue]:
    """Every queue of the app, keyed by construct id, with its live URLs and physical ids."""
    cloudformation = client("cloudformation")
    sqs = client("sqs")
    ids = {name: physical_ids(cloudformation, name) for name in stack_names(prefix)}
    located: dict[str, LiveQueue] = {}
    for spec in QUEUES:
        resources = find_queue_resources(spec, prefix, templates)
        physical = ids[resources.stack]

        def url_of(logical_id: str, physical: dict[str, str] = physical) -> str:
            # The emulator reports queue URLs on the public SQS host; ask it for its own URL.
            name = physical[logical_id].rstrip("/").rsplit("/", 1)[-1]
            url: str = sqs.get_queue_url(QueueName=name)["QueueUrl"]
            return url

        located[spec.construct_id] = LiveQueue(
            resources,
            physical,
            url_of(resources.queue),
            url_of(resources.dead_letter_queue),
        )
    return located


def kms_key_arn(client_factory: Any, key_id: str) -> str:
    """The key's ARN from ListKeys. DescribeKey cannot be used: for a key created by
    CloudFormation the emulator stores the key policy as an object and DescribeKey fails with
    HTTP 500 (TypeError in moto's kms policy_validator, json.loads of a dict)."""
    for page in client_factory("kms").get_paginator("list_keys").paginate():
        for key in page["Keys"]:
            if key["KeyId"] == key_id:
                arn: str = key["KeyArn"]
                return arn
    raise AssertionError(f"KMS key {key_id} not found")


def resolve(value: Any, physical_arns: Mapping[str, str]) -> Any:
    """Evaluate the few intrinsics the library writes into names and ARNs (Ref pseudo parameters,
    Fn::Join, Fn::GetAtt Arn) the way CloudFormation would in this account and region."""
    if isinstance(value, list):
        return [resolve(item, physical_arns) for item in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
        return pseudo.get(value["Ref"], physical_arns.get(value["Ref"]))
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(part, physical_arns)) for part in parts)
    if "Fn::GetAtt" in value and value["Fn::GetAtt"][1] == "Arn":
        return physical_arns.get(value["Fn::GetAtt"][0])
    return {key: resolve(item, physical_arns) for key, item in value.items()}


@dataclass
class Deployment:
    """The app as deployed: its prefix, cloud assembly, templates and located queues."""

    prefix: str
    assembly: Path
    templates: dict[str, Template]
    queues: dict[str, LiveQueue]
    deploy_result: CliResult
