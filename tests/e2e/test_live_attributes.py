"""After ``cdk deploy``: the emulator's live resources carry the settings the library promised.

Live checks read the emulator with boto3. One thing the emulator drops is checked on the
synthesized template the CLI deployed instead (the test says so): the DLQ's RedriveAllowPolicy.
Alarms and queue policies are live: the emulator's CloudFormation lacks AWS::CloudWatch::Alarm
and AWS::SQS::QueuePolicy, and the test harness adds both (emulator_adapters.py).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest

from constructs_lib.policy.visibility import derived_visibility_timeout

from .app_spec import QUEUES, QueueSpec
from .deployment import Deployment, LiveQueue, kms_key_arn, resolve

pytestmark = pytest.mark.e2e
DAY = 86_400


def attributes(client_factory: Any, url: str) -> dict[str, str]:
    result: dict[str, str] = client_factory("sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["All"]
    )["Attributes"]
    return result


def live(deployment: Deployment, spec: QueueSpec) -> LiveQueue:
    return deployment.queues[spec.construct_id]


@pytest.fixture(params=QUEUES, ids=lambda spec: spec.construct_id)
def spec(request: pytest.FixtureRequest) -> QueueSpec:
    chosen: QueueSpec = request.param
    return chosen


def test_source_visibility_timeout_is_derived_from_the_function_timeout(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    expected = derived_visibility_timeout(spec.function_timeout, spec.batching_window or 0)
    # The rule in numbers, so a change of the shared policy cannot pass unnoticed:
    # 6 x function timeout + batching window (Lambda guide, services-sqs-configure).
    assert expected == 6 * spec.function_timeout + (spec.batching_window or 0)

    source = attributes(client_factory, live(deployment, spec).queue_url)

    assert int(source["VisibilityTimeout"]) == expected


def test_retention_periods(deployment: Deployment, client_factory: Any, spec: QueueSpec) -> None:
    queue = live(deployment, spec)

    source = attributes(client_factory, queue.queue_url)
    dead_letter = attributes(client_factory, queue.dead_letter_queue_url)

    assert int(source["MessageRetentionPeriod"]) == spec.retention_days * DAY
    assert int(dead_letter["MessageRetentionPeriod"]) == spec.dead_letter_retention_days * DAY


def test_redrive_policy_targets_the_dead_letter_queue(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    queue = live(deployment, spec)

    source = attributes(client_factory, queue.queue_url)
    dead_letter = attributes(client_factory, queue.dead_letter_queue_url)

    redrive = json.loads(source["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == dead_letter["QueueArn"]
    assert int(redrive["maxReceiveCount"]) == spec.max_receive_count
    assert "RedrivePolicy" not in dead_letter


def test_dead_letter_queue_has_the_type_of_its_source(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    queue = live(deployment, spec)

    source = attributes(client_factory, queue.queue_url)
    dead_letter = attributes(client_factory, queue.dead_letter_queue_url)

    for attrs in (source, dead_letter):
        assert (attrs.get("FifoQueue") == "true") is spec.fifo
        assert attrs["QueueArn"].endswith(".fifo") is spec.fifo


def test_both_queues_are_encrypted_the_same_way(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    queue = live(deployment, spec)

    source = attributes(client_factory, queue.queue_url)
    dead_letter = attributes(client_factory, queue.dead_letter_queue_url)

    if spec.kms:
        assert queue.resources.key is not None
        key_id = queue.physical[queue.resources.key]
        key_arn = kms_key_arn(client_factory, key_id)
        assert source["KmsMasterKeyId"] == key_arn
        assert dead_letter["KmsMasterKeyId"] == key_arn
    else:
        for attrs in (source, dead_letter):
            assert attrs["SqsManagedSseEnabled"] == "true"
            assert "KmsMasterKeyId" not in attrs


def test_event_source_mapping_settings(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    queue = live(deployment, spec)
    mapping = queue.event_source_at_deploy
    source = attributes(client_factory, queue.queue_url)
    function_name = queue.physical[queue.resources.function]

    assert mapping["State"] == "Enabled"
    assert mapping["EventSourceArn"] == source["QueueArn"]
    assert mapping["FunctionArn"].endswith(f":function:{function_name}")
    assert mapping["BatchSize"] == spec.batch_size
    assert mapping.get("MaximumBatchingWindowInSeconds", 0) == (spec.batching_window or 0)
    expected_types = ["ReportBatchItemFailures"] if spec.report_batch_item_failures else []
    assert mapping.get("FunctionResponseTypes", []) == expected_types
    assert mapping.get("ScalingConfig", {}).get("MaximumConcurrency") == spec.max_concurrency


def as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def allowed(statements: list[dict[str, Any]], action: str, resource: str) -> bool:
    """Whether some Allow statement grants ``action`` on ``resource`` (wildcards honoured)."""
    return any(
        statement["Effect"] == "Allow"
        and any(fnmatch.fnmatch(action.lower(), a.lower()) for a in as_list(statement["Action"]))
        and any(fnmatch.fnmatch(resource, r) for r in as_list(statement["Resource"]))
        for statement in statements
    )


def test_consumer_role_may_consume_its_queue_and_nothing_else(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    queue = live(deployment, spec)
    iam = client_factory("iam")
    role_name = queue.physical[queue.resources.role]
    statements: list[dict[str, Any]] = []
    for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        statements += document["Statement"]
    source_arn = attributes(client_factory, queue.queue_url)["QueueArn"]
    dead_letter_arn = attributes(client_factory, queue.dead_letter_queue_url)["QueueArn"]
    needed = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"]
    needed.append("sqs:GetQueueAttributes")

    for action in needed:
        assert allowed(statements, action, source_arn), f"{action} on {source_arn}"
        assert not allowed(statements, action, dead_letter_arn), f"{action} on the DLQ"
    other_queue = live(deployment, next(s for s in QUEUES if s != spec)).queue_url
    other_arn = attributes(client_factory, other_queue)["QueueArn"]
    assert not allowed(statements, "sqs:ReceiveMessage", other_arn)
    assert not allowed(statements, "sqs:SendMessage", source_arn)
    if spec.kms:
        assert queue.resources.key is not None
        key_id = queue.physical[queue.resources.key]
        key_arn = kms_key_arn(client_factory, key_id)
        assert allowed(statements, "kms:Decrypt", key_arn)
    else:
        granted = [a for st in statements for a in as_list(st["Action"]) if st["Effect"] == "Allow"]
        assert not [action for action in granted if action.lower().startswith("kms:")]


def test_redrive_allow_policy_names_only_the_deployed_source(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    """GAP: the emulator drops RedriveAllowPolicy on create, so the policy is read from the
    deployed template, its intrinsics evaluated, and compared with the live source ARN. This is
    also the proof that the name-derived ARN (no Fn::GetAtt, so no cycle) is the real one."""
    queue = live(deployment, spec)
    source_arn = attributes(client_factory, queue.queue_url)["QueueArn"]
    dead_letter = attributes(client_factory, queue.dead_letter_queue_url)

    declared = queue.resources.properties(queue.resources.dead_letter_queue)["RedriveAllowPolicy"]
    resolved = resolve(declared, {})

    assert resolved == {"redrivePermission": "byQueue", "sourceQueueArns": [source_arn]}
    if "RedriveAllowPolicy" in dead_letter:  # an emulator that keeps it is checked live too
        assert json.loads(dead_letter["RedriveAllowPolicy"]) == resolved


def test_both_queues_deny_requests_without_tls(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    """Read back live: the queue policies exist in the emulator through the harness's
    AWS::SQS::QueuePolicy adapter (emulator_adapters.py)."""
    queue = live(deployment, spec)

    for url in (queue.queue_url, queue.dead_letter_queue_url):
        attrs = attributes(client_factory, url)
        statements = json.loads(attrs.get("Policy", "{}")).get("Statement", [])
        assert any(
            s["Effect"] == "Deny"
            and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            and s["Resource"] == attrs["QueueArn"]
            for s in statements
        ), f"no TLS-only policy on {attrs['QueueArn']}: {statements}"


def test_alarms_watch_in_flight_dead_letters_and_age(
    deployment: Deployment, client_factory: Any, spec: QueueSpec
) -> None:
    """The alarms are found in the deployed template by what they watch, then read live
    (DescribeAlarms): each exists with the template's metric, threshold and live queue name."""
    resources = live(deployment, spec).resources
    alarms = [
        props
        for _, r in resources.resources_of("AWS::CloudWatch::Alarm")
        if (props := r["Properties"])
    ]

    def watching(logical_id: str, metric: str) -> list[dict[str, Any]]:
        dimension = [{"Name": "QueueName", "Value": {"Fn::GetAtt": [logical_id, "QueueName"]}}]
        return [
            a for a in alarms if a.get("MetricName") == metric and a.get("Dimensions") == dimension
        ]

    in_flight = watching(resources.queue, "ApproximateNumberOfMessagesNotVisible")
    depth = watching(resources.dead_letter_queue, "ApproximateNumberOfMessagesVisible")
    source_age = watching(resources.queue, "ApproximateAgeOfOldestMessage")
    dead_letter_age = watching(resources.dead_letter_queue, "ApproximateAgeOfOldestMessage")
    assert len(in_flight) == len(depth) == len(source_age) == len(dead_letter_age) == 1
    assert depth[0]["Threshold"] == 1
    assert depth[0]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert not watching(resources.dead_letter_queue, "NumberOfMessagesSent")
    topic = next(logical_id for logical_id, _ in resources.resources_of("AWS::SNS::Topic"))
    for alarm in in_flight + depth + source_age + dead_letter_age:
        assert alarm["Namespace"] == "AWS/SQS"
        assert alarm["Statistic"] == "Maximum"
        assert alarm["Period"] == 60
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [{"Ref": topic}]
    queue = live(deployment, spec)
    names = {  # logical id -> the live queue's name
        logical_id: attributes(client_factory, url)["QueueArn"].rsplit(":", 1)[-1]
        for logical_id, url in (
            (resources.queue, queue.queue_url),
            (resources.dead_letter_queue, queue.dead_letter_queue_url),
        )
    }
    declared = in_flight + depth + source_age + dead_letter_age
    found = client_factory("cloudwatch").describe_alarms(
        AlarmNames=[alarm["AlarmName"] for alarm in declared]
    )["MetricAlarms"]
    by_name = {alarm["AlarmName"]: alarm for alarm in found}
    assert sorted(by_name) == sorted(alarm["AlarmName"] for alarm in declared)
    for alarm in declared:
        running = by_name[alarm["AlarmName"]]
        watched = alarm["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        assert running["MetricName"] == alarm["MetricName"]
        assert running["Dimensions"] == [{"Name": "QueueName", "Value": names[watched]}]
        assert running["Threshold"] == alarm["Threshold"]
        assert running["Statistic"] == "Maximum"
        assert running["Period"] == 60
        assert running["TreatMissingData"] == "notBreaching"
        assert running["AlarmActions"] == [queue.physical[topic]]
