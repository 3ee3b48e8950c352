"""The example app a user copies (``app.py`` with ``example/``), deployed as a user deploys it.

``cdk deploy --all`` runs in the repository with its own ``cdk.json`` (the app command and feature
flags ``make run`` uses); only the cloud assembly goes to a scratch folder. Each pipeline is
found through the deployed templates and CloudFormation's ListStackResources, never by a name
guessed: every queue with a RedrivePolicy is a source and the queue it names is its DLQ; an event
source mapping that reads a source is the pipeline's consumer, one that reads a DLQ its
dead-letter consumer; an SNS subscription whose endpoint is a source is a producer; a role whose
policy may start message move tasks on a DLQ is a redrive operator.

``EXAMPLE_PIPELINES`` restates what ``example/stack.py`` declares, so a change of the example
that breaks a promise fails here instead of being absorbed.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .deployment import physical_ids
from .emulator import REPO_ROOT, CdkCli, CliResult

Template = dict[str, Any]
ClientFactory = Callable[..., Any]
MOVE_TASK_ACTION = "sqs:StartMessageMoveTask"


@dataclass(frozen=True)
class DeadLetterConsumer:
    """The function example/stack.py attaches to a pipeline's DLQ (``add_dead_letter_consumer``)."""

    function: str  # the construct id example/stack.py gives the function
    function_timeout: int  # seconds
    batch_size: int  # the library's default
    batching_window: int  # seconds, 0 when unset


@dataclass(frozen=True)
class TopicProducer:
    """An SNS topic example/stack.py lets send to the source queue (``add_producer``)."""

    raw_message_delivery: bool


@dataclass(frozen=True)
class ExamplePipeline:
    """One pipeline as example/stack.py declares it."""

    queue_name: str
    dead_letter_queue_name: str
    fifo: bool
    kms: bool
    function: str  # the construct id example/stack.py gives the consumer function
    function_timeout: int  # seconds
    batch_size: int
    batching_window: int  # seconds, 0 when unset
    max_concurrency: int | None
    provisioned_pollers: tuple[int, int] | None  # (minimum, maximum)
    max_receive_count: int  # the library's default
    retention_days: int
    # Every event source mapping of the pipeline publishes its event counts (MetricsConfig
    # EventCount) and has a failed-messages alarm: the library's default.
    event_source_metrics: bool
    dead_letter_consumer: DeadLetterConsumer | None
    topic_producer: TopicProducer | None
    redrive_operator: str | None  # the construct id of the role given grant_redrive
    # The critical alarms of the queue's stack page through one composite alarm,
    # "<queue>-critical", and carry no actions themselves.
    composite_alarm: bool
    # Bodies in S3 (large_payloads) under "<queue_name>/" of a bucket the construct creates,
    # kept this many days (None: no large payloads).
    payload_days: int | None = None

    @property
    def id(self) -> str:
        return self.queue_name


ORDERS = ExamplePipeline(
    queue_name="orders",
    dead_letter_queue_name="orders-dlq",
    fifo=False,
    kms=False,
    function="OrdersHandler",
    function_timeout=30,
    batch_size=100,
    batching_window=5,
    max_concurrency=None,
    provisioned_pollers=(2, 5),
    max_receive_count=5,
    retention_days=4,
    event_source_metrics=True,
    dead_letter_consumer=DeadLetterConsumer(
        function="RejectedOrdersHandler", function_timeout=10, batch_size=10, batching_window=0
    ),
    topic_producer=TopicProducer(raw_message_delivery=True),
    redrive_operator=None,
    composite_alarm=True,
)
PAYMENTS = ExamplePipeline(
    queue_name="payments.fifo",
    dead_letter_queue_name="payments-dlq.fifo",
    fifo=True,
    kms=True,
    function="PaymentsHandler",
    function_timeout=20,
    batch_size=10,
    batching_window=0,
    max_concurrency=50,
    provisioned_pollers=None,
    max_receive_count=5,
    retention_days=4,
    event_source_metrics=True,
    dead_letter_consumer=None,
    topic_producer=None,
    redrive_operator="PaymentsRedriveOperator",
    composite_alarm=False,
    # FIFO: the source's 4 days and the DLQ's 14 (the move restarts the clock), and a day.
    payload_days=4 + 14 + 1,
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
class DeployedConsumer:
    """One event source mapping of a pipeline and the function it invokes (logical ids)."""

    function: str
    event_source: str
    queue: str  # the queue the mapping reads: the source, or the DLQ
    # The mapping as the emulator reported it right after deploy, before it was disabled.
    at_deploy: dict[str, Any] = field(default_factory=dict)


@dataclass
class DeployedPipeline:
    """One pipeline of the example as deployed: logical ids and the emulator's physical ids."""

    spec: ExamplePipeline
    stack: str
    template: Template
    queue: str
    dead_letter_queue: str
    consumer: DeployedConsumer
    dead_letter_consumer: DeployedConsumer | None
    subscriptions: list[str]  # AWS::SNS::Subscription resources whose endpoint is the source
    redrive_roles: list[str]  # roles whose policies may start move tasks on the DLQ
    key: str | None  # the source queue's KMS key, None for SSE-SQS
    physical: dict[str, str]
    queue_url: str
    dead_letter_queue_url: str

    def properties(self, logical_id: str) -> Template:
        props: Template = self.template["Resources"][logical_id]["Properties"]
        return props

    def construct_path(self, logical_id: str) -> str:
        path: str = self.template["Resources"][logical_id]["Metadata"]["aws:cdk:path"]
        return path

    @property
    def consumers(self) -> list[DeployedConsumer]:
        """The source's consumer, then the DLQ's, if any."""
        return [self.consumer, *([self.dead_letter_consumer] if self.dead_letter_consumer else [])]

    @property
    def function_name(self) -> str:
        return self.physical[self.consumer.function]


@dataclass
class ExampleDeployment:
    assembly: Path
    templates: dict[str, Template]
    physical: dict[str, dict[str, str]]  # stack -> logical id -> physical id
    pipelines: dict[str, DeployedPipeline]  # by source queue name
    deploy_result: CliResult


def _statements(document: Template) -> list[Template]:
    statements = document.get("Statement", [])
    return statements if isinstance(statements, list) else [statements]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _roles_that_may_move_out_of(template: Template, dead_letter_queue: str) -> list[str]:
    """Roles of the template whose policies allow StartMessageMoveTask (by name or wildcard) on
    the DLQ's ARN (or on every resource)."""
    dead_letter_arn = {"Fn::GetAtt": [dead_letter_queue, "Arn"]}
    roles: set[str] = set()
    for _, policy in _resources_of(template, "AWS::IAM::Policy"):
        props = policy["Properties"]
        if any(
            statement.get("Effect") == "Allow"
            and any(
                fnmatch.fnmatch(MOVE_TASK_ACTION.lower(), str(action).lower())
                for action in _as_list(statement.get("Action", []))
            )
            and any(
                resource in (dead_letter_arn, "*")
                for resource in _as_list(statement.get("Resource", []))
            )
            for statement in _statements(props["PolicyDocument"])
        ):
            roles.update(role["Ref"] for role in props.get("Roles", []))
    return sorted(roles)


def locate_example(
    client: ClientFactory, assembly: Path, deploy_result: CliResult
) -> ExampleDeployment:
    templates = stack_templates(assembly)
    cloudformation = client("cloudformation")
    sqs = client("sqs")
    physical = {name: physical_ids(cloudformation, name) for name in templates}
    pipelines: dict[str, DeployedPipeline] = {}
    for stack, template in templates.items():
        ids = physical[stack]
        resources = template["Resources"]
        # Each source queue names its DLQ in its RedrivePolicy; a DLQ is a queue named so.
        dead_letter_of = {
            queue: _get_att_target(resource["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
            for queue, resource in _resources_of(template, "AWS::SQS::Queue")
            if "RedrivePolicy" in resource["Properties"]
        }
        source_of = {dead_letter: source for source, dead_letter in dead_letter_of.items()}
        consumers: dict[str, list[DeployedConsumer]] = {}
        dead_letter_consumers: dict[str, list[DeployedConsumer]] = {}
        for event_source, mapping in _resources_of(template, "AWS::Lambda::EventSourceMapping"):
            read = _get_att_target(mapping["Properties"]["EventSourceArn"])
            consumer = DeployedConsumer(
                mapping["Properties"]["FunctionName"]["Ref"], event_source, read
            )
            if read in dead_letter_of:
                consumers.setdefault(read, []).append(consumer)
            elif read in source_of:
                dead_letter_consumers.setdefault(source_of[read], []).append(consumer)
            else:
                raise AssertionError(
                    f"{event_source} reads {read}, which is neither a queue with a RedrivePolicy "
                    "nor the dead-letter queue of one"
                )
        assert set(dead_letter_consumers) <= set(consumers), (
            f"dead-letter consumers of sources without a consumer: {dead_letter_consumers}"
        )
        subscriptions = [
            (logical_id, _get_att_target(resource["Properties"]["Endpoint"]))
            for logical_id, resource in _resources_of(template, "AWS::SNS::Subscription")
            if resource["Properties"]["Protocol"] == "sqs"
        ]
        for queue, found in consumers.items():
            name = resources[queue]["Properties"]["QueueName"]
            spec = next((p for p in EXAMPLE_PIPELINES if p.queue_name == name), None)
            assert spec is not None, f"queue {name} is not in EXAMPLE_PIPELINES"
            assert len(found) == 1, f"{name}: expected one consumer, found {found}"
            found_dead_letter = dead_letter_consumers.get(queue, [])
            assert len(found_dead_letter) <= 1, f"{name}: several DLQ consumers {found_dead_letter}"
            dead_letter_queue = dead_letter_of[queue]
            key = resources[queue]["Properties"].get("KmsMasterKeyId")

            def url_of(logical_id: str, ids: Mapping[str, str] = ids) -> str:
                # The emulator reports queue URLs on the public SQS host; ask it for its own URL.
                queue_name = ids[logical_id].rstrip("/").rsplit("/", 1)[-1]
                url: str = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
                return url

            pipelines[name] = DeployedPipeline(
                spec=spec,
                stack=stack,
                template=template,
                queue=queue,
                dead_letter_queue=dead_letter_queue,
                consumer=found[0],
                dead_letter_consumer=found_dead_letter[0] if found_dead_letter else None,
                subscriptions=[s for s, endpoint in subscriptions if endpoint == queue],
                redrive_roles=_roles_that_may_move_out_of(template, dead_letter_queue),
                key=_get_att_target(key) if key is not None else None,
                physical=ids,
                queue_url=url_of(queue),
                dead_letter_queue_url=url_of(dead_letter_queue),
            )
    assert sorted(pipelines) == sorted(p.queue_name for p in EXAMPLE_PIPELINES), sorted(pipelines)
    return ExampleDeployment(assembly, templates, physical, pipelines, deploy_result)
