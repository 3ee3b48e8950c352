"""The example app a user copies (``app.py`` with ``example/``): deployed, checked live, destroyed.

The example is deployed once per session (fixture ``example_deployment``) with the pinned CLI,
``cdk deploy --all`` in the repository as ``make run`` synthesizes it, after the session's
``cdk bootstrap``. The emulator's CloudFormation has no ``AWS::CloudWatch::Alarm``,
``AWS::SQS::QueuePolicy`` or ``AWS::SNS::Subscription``; the test harness adds them
(``emulator_adapters.py``), and ``test_adapters.py`` shows the deploy failing without them.
Everything below is read back through the AWS APIs (boto3 or the AWS CLI) except what the
emulator drops, which each test names. The last test destroys the app.

The consumers are played with boto3 (the emulator cannot invoke functions), with the deployed
event source mappings disabled after their settings were recorded (see ``example_deployment``).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import botocore.exceptions
import pytest

from constructs_lib.policy.visibility import derived_visibility_timeout

from ..conftest import SynthResult
from .deployment import kms_key_arn, resolve
from .emulator import ACCOUNT, REGION, REPO_ROOT, CdkCli, Emulator
from .example_deployment import (
    EXAMPLE_PIPELINES,
    DeployedConsumer,
    DeployedPipeline,
    ExampleDeployment,
    ExamplePipeline,
)
from .messages import depth, drain, receive, release
from .runbook import Runbook, block_with, line_with

pytestmark = pytest.mark.e2e
DAY = 86_400
DEAD_LETTER_RETENTION = 14 * DAY  # the library's default and SQS's maximum
# The README's numbers, restated: in-flight alarm threshold (a tenth of the 120,000 quota), and
# the visibility timeouts example/stack.py's functions and windows lead to (6 x timeout + window).
IN_FLIGHT_THRESHOLD = 12_000
VISIBILITY = {"orders": 6 * 30 + 5, "payments.fifo": 6 * 20}
# The DLQ's: derived from its consumer's function (6 x 10 s) where the example adds one, else
# SQS's default, which the library leaves alone.
DEAD_LETTER_VISIBILITY = {"orders": 6 * 10, "payments.fifo": 30}
RUNBOOK_NOTE = "Runbook: docs/alarms.md in the constructs_lib documentation."
# The alarms that page (docs/alarms.md, "Alarm tiers"); the others file a ticket.
CRITICAL_ROLES = frozenset(
    {
        "dead_letter_depth",
        "source_expiry_risk",
        "dead_letter_expiry_risk",
        "dead_letter_arrivals",
        "failing_every_message",
        "dead_letter_failing_every_message",
    }
)
# Metric math over the mapping's event counts (no metric of their own): by the consumer role.
EVERY_MESSAGE_ROLES = {
    "failing_every_message": "consumer",
    "dead_letter_failing_every_message": "dead_letter_consumer",
}


@pytest.fixture(params=EXAMPLE_PIPELINES, ids=lambda spec: spec.id)
def pipeline(request: pytest.FixtureRequest, example_deployment: ExampleDeployment) -> Any:
    spec: ExamplePipeline = request.param
    return example_deployment.pipelines[spec.queue_name]


@pytest.fixture
def sqs(client_factory: Any) -> Any:
    return client_factory("sqs")


def attributes(sqs: Any, url: str) -> dict[str, str]:
    result: dict[str, str] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])[
        "Attributes"
    ]
    return result


def alarm_names(spec: ExamplePipeline) -> dict[str, str]:
    """The alarm names docs/alarms.md documents for a pipeline: four for the queue, two per
    consumer (``<queue>-<function>-failed-messages`` and ``-failing-every-message``, the DLQ's
    consumer on ``<queue>-dlq``) and the DLQ arrivals alarm with a dead-letter consumer."""
    queue_name = spec.queue_name
    names = {
        "in_flight": f"{queue_name}-in-flight-high",
        "dead_letter_depth": f"{queue_name}-dead-letters",
        "source_expiry_risk": f"{queue_name}-oldest-message-age",
        "dead_letter_expiry_risk": f"{queue_name}-dead-letter-age",
    }
    if spec.event_source_metrics:
        names["failed_messages"] = f"{queue_name}-{spec.function}-failed-messages"
        names["failing_every_message"] = f"{queue_name}-{spec.function}-failing-every-message"
    dead_letter = spec.dead_letter_consumer
    if dead_letter is not None:
        names["dead_letter_arrivals"] = f"{queue_name}-dead-letter-arrivals"
        if spec.event_source_metrics:
            names["dead_letter_failed_messages"] = (
                f"{spec.dead_letter_queue_name}-{dead_letter.function}-failed-messages"
            )
            names["dead_letter_failing_every_message"] = (
                f"{spec.dead_letter_queue_name}-{dead_letter.function}-failing-every-message"
            )
    return names


def live_alarms(client_factory: Any, spec: ExamplePipeline) -> dict[str, dict[str, Any]]:
    names = alarm_names(spec)
    found = client_factory("cloudwatch").describe_alarms(AlarmNames=list(names.values()))
    by_name = {alarm["AlarmName"]: alarm for alarm in found["MetricAlarms"]}
    return {role: by_name[name] for role, name in names.items() if name in by_name}


def uuid_of(pipeline: DeployedPipeline, consumer: DeployedConsumer) -> str:
    """The deployed mapping's UUID: its physical id, the same as the emulator's record."""
    uuid = pipeline.physical[consumer.event_source]
    assert uuid == consumer.at_deploy["UUID"]
    return uuid


def alarm_topic(example_deployment: ExampleDeployment, pipeline: DeployedPipeline) -> str:
    """The live ARN of the example's alarm topic: the one topic of the stack that produces to
    no queue (the others are producers, subscribed to a source)."""
    template = pipeline.template
    producers = {
        template["Resources"][subscription]["Properties"]["TopicArn"]["Ref"]
        for p in example_deployment.pipelines.values()
        if p.stack == pipeline.stack
        for subscription in p.subscriptions
    }
    topics = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::SNS::Topic" and logical_id not in producers
    ]
    assert len(topics) == 1, topics
    return example_deployment.physical[pipeline.stack][topics[0]]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def emulator_log_count(emulator: Emulator, text: str) -> int:
    return emulator.log_path.read_text(errors="replace").count(text)


def emulator_logged(emulator: Emulator, text: str, before: int, polls: int = 50) -> bool:
    """Whether the server's log holds ``text`` more often than ``before`` times; the server
    writes a traceback after it has answered, so the log is read a bounded number of times."""
    for _ in range(polls):
        if emulator_log_count(emulator, text) > before:
            return True
        time.sleep(0.2)
    return False


def poison(sqs: Any, pipeline: DeployedPipeline, label: str) -> tuple[str, str, list[int]]:
    """Send one poison message and fail it until the redrive policy moves it; the receive
    counts seen, read from each delivery's ApproximateReceiveCount."""
    spec = pipeline.spec
    body = json.dumps({"pipeline": spec.queue_name, "case": label, "note": "Ünïcode ✓"})
    # FIFO: payments uses content-based deduplication, so no deduplication id is sent.
    extra = {"MessageGroupId": label} if spec.fifo else {}
    sent_id: str = sqs.send_message(QueueUrl=pipeline.queue_url, MessageBody=body, **extra)[
        "MessageId"
    ]
    seen: list[int] = []
    for _ in range(spec.max_receive_count + 3):  # bounded: a few more tries than allowed
        batch = receive(sqs, pipeline.queue_url, wait=1)
        if not batch:
            break
        (message,) = batch
        assert message.message_id == sent_id
        seen.append(message.receive_count)
        if message.receive_count < spec.max_receive_count:
            assert depth(sqs, pipeline.dead_letter_queue_url) == 0, "dead-lettered too early"
        release(sqs, pipeline.queue_url, message)  # the consumer fails: no delete
    return sent_id, body, seen


def test_every_stack_of_the_example_is_deployed_as_make_run_synthesizes_it(
    example_deployment: ExampleDeployment, example_assembly: SynthResult, client_factory: Any
) -> None:
    cloudformation = client_factory("cloudformation")
    # `make synth`'s own command (tests/conftest.py), synthesized apart from the deploy.
    assert example_assembly.returncode == 0, example_assembly.output
    synthesized = {
        name.removesuffix(".template.json"): template
        for name, template in example_assembly.templates().items()
    }

    assert sorted(example_deployment.templates) == sorted(synthesized)
    for name, template in synthesized.items():
        stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE"
        body = cloudformation.get_template(StackName=name)["TemplateBody"]
        assert (json.loads(body) if isinstance(body, str) else body) == template
        # Every alarm and dashboard the template declares exists as a resource of the stack.
        physical = example_deployment.physical[name]
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"):
                assert physical.get(logical_id), f"{logical_id} was not created"
                if resource["Type"] == "AWS::CloudWatch::Alarm":
                    assert physical[logical_id] == resource["Properties"]["AlarmName"]


def test_diff_of_the_example_shows_no_changes(
    example_deployment: ExampleDeployment, bootstrapped: CdkCli, e2e_tmp: Path
) -> None:
    """``--method=template``: the default method trips over an emulator bug (see
    test_lifecycle.py); the CLI re-synthesizes the app from the repository and compares."""
    diff = bootstrapped.run(
        "diff",
        "--method=template",
        "--fail",
        "--output",
        str(e2e_tmp / "example-diff"),
        cwd=REPO_ROOT,
    )

    assert diff.returncode == 0, diff.describe()
    assert "Number of stacks with differences: 0" in diff.output, diff.describe()


def test_source_visibility_timeout_is_derived_from_the_deployed_consumer(
    pipeline: DeployedPipeline, sqs: Any, client_factory: Any
) -> None:
    spec = pipeline.spec
    function = client_factory("lambda").get_function_configuration(
        FunctionName=pipeline.function_name
    )
    window = pipeline.consumer.at_deploy.get("MaximumBatchingWindowInSeconds", 0)
    assert (function["Timeout"], window) == (spec.function_timeout, spec.batching_window)

    expected = derived_visibility_timeout(function["Timeout"], window)

    assert expected == VISIBILITY[spec.queue_name]
    assert int(attributes(sqs, pipeline.queue_url)["VisibilityTimeout"]) == expected


def test_dead_letter_consumer_reads_the_dlq_whose_visibility_timeout_it_sets(
    pipeline: DeployedPipeline, sqs: Any, client_factory: Any
) -> None:
    """The mapping found in the template on the DLQ exists live on the live DLQ, invokes the
    function the example names, and the DLQ's visibility timeout is derived from that function's
    timeout. Without a dead-letter consumer no mapping reads the DLQ and its visibility timeout
    stays SQS's default."""
    spec = pipeline.spec
    lambda_client = client_factory("lambda")
    dead_letter = attributes(sqs, pipeline.dead_letter_queue_url)
    reading_the_dlq = lambda_client.list_event_source_mappings(
        EventSourceArn=dead_letter["QueueArn"]
    )["EventSourceMappings"]
    expected_visibility = DEAD_LETTER_VISIBILITY[spec.queue_name]

    if spec.dead_letter_consumer is None:
        assert pipeline.dead_letter_consumer is None
        assert reading_the_dlq == []
        assert int(dead_letter["VisibilityTimeout"]) == expected_visibility
        return

    declared = spec.dead_letter_consumer
    consumer = pipeline.dead_letter_consumer
    assert consumer is not None, "the example's DLQ consumer is not in the deployed template"
    assert consumer.queue == pipeline.dead_letter_queue
    assert (
        pipeline.construct_path(consumer.function)
        == f"{pipeline.stack}/{declared.function}/Resource"
    )
    assert consumer.function != pipeline.consumer.function
    mapping = consumer.at_deploy
    assert [m["UUID"] for m in reading_the_dlq] == [uuid_of(pipeline, consumer)]
    assert mapping["State"] == "Enabled"
    assert mapping["EventSourceArn"] == dead_letter["QueueArn"]
    function_name = pipeline.physical[consumer.function]
    assert mapping["FunctionArn"].endswith(f":function:{function_name}")
    assert mapping["BatchSize"] == declared.batch_size
    assert mapping.get("MaximumBatchingWindowInSeconds", 0) == declared.batching_window
    assert mapping.get("FunctionResponseTypes") == ["ReportBatchItemFailures"]
    function = lambda_client.get_function_configuration(FunctionName=function_name)
    assert function["Timeout"] == declared.function_timeout

    derived = derived_visibility_timeout(function["Timeout"], declared.batching_window)

    assert derived == expected_visibility
    assert int(dead_letter["VisibilityTimeout"]) == derived
    # The source's own timeout is its consumer's, not raised or lowered by the DLQ's consumer.
    assert int(attributes(sqs, pipeline.queue_url)["VisibilityTimeout"]) == VISIBILITY[spec.id]


def test_dead_letter_queue_has_the_source_type_14_day_retention_and_the_redrive(
    pipeline: DeployedPipeline, sqs: Any
) -> None:
    spec = pipeline.spec

    source = attributes(sqs, pipeline.queue_url)
    dead_letter = attributes(sqs, pipeline.dead_letter_queue_url)

    assert source["QueueArn"].rsplit(":", 1)[-1] == spec.queue_name
    assert dead_letter["QueueArn"].rsplit(":", 1)[-1] == spec.dead_letter_queue_name
    for attrs in (source, dead_letter):
        assert (attrs.get("FifoQueue") == "true") is spec.fifo
    assert int(source["MessageRetentionPeriod"]) == spec.retention_days * DAY
    assert int(dead_letter["MessageRetentionPeriod"]) == DEAD_LETTER_RETENTION
    redrive = json.loads(source["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == dead_letter["QueueArn"]
    assert int(redrive["maxReceiveCount"]) == spec.max_receive_count
    if spec.kms:
        assert (
            source["KmsMasterKeyId"] and source["KmsMasterKeyId"] == dead_letter["KmsMasterKeyId"]
        )
    else:
        assert source["SqsManagedSseEnabled"] == dead_letter["SqsManagedSseEnabled"] == "true"


def test_both_queues_deny_requests_without_tls(pipeline: DeployedPipeline, sqs: Any) -> None:
    """Read back live: the queue policies exist in the emulator through the harness's
    AWS::SQS::QueuePolicy adapter (emulator_adapters.py)."""
    for url in (pipeline.queue_url, pipeline.dead_letter_queue_url):
        attrs = attributes(sqs, url)

        statements = json.loads(attrs.get("Policy", "{}")).get("Statement", [])

        assert {
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": "sqs:*",
            "Resource": attrs["QueueArn"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        } in statements, f"no TLS-only deny on {attrs['QueueArn']}: {statements}"


def test_dead_letter_queue_allows_redrive_from_its_source_only(
    pipeline: DeployedPipeline, sqs: Any
) -> None:
    """GAP: the emulator drops RedriveAllowPolicy on create, so the policy is read from the
    deployed template, its intrinsics evaluated, and compared with the live source ARN (and with
    the live attribute too, should an emulator keep it)."""
    source_arn = attributes(sqs, pipeline.queue_url)["QueueArn"]
    dead_letter = attributes(sqs, pipeline.dead_letter_queue_url)

    declared = pipeline.properties(pipeline.dead_letter_queue)["RedriveAllowPolicy"]
    resolved = resolve(declared, {})

    assert resolved == {"redrivePermission": "byQueue", "sourceQueueArns": [source_arn]}
    if "RedriveAllowPolicy" in dead_letter:
        assert json.loads(dead_letter["RedriveAllowPolicy"]) == resolved


def test_every_promised_alarm_exists_on_the_right_metric_with_its_actions(
    pipeline: DeployedPipeline, example_deployment: ExampleDeployment, client_factory: Any
) -> None:
    """The four queue alarms of the README, and docs/alarms.md's alarm per consumer on its
    mapping's FailedInvokeEventCount and, with a dead-letter consumer, on the DLQ's arrivals;
    with a consumer failing every message per consumer (metric math); each saying its tier, with
    the alarm topic as alarm and OK action, or, as a member of the pipeline's composite alarm,
    none: the composite carries them. No other alarm watches the pipeline.

    The emulator stores the composite alarm's rule but never evaluates it (nor the metric
    math): that the composite fires with any member and that CloudFormation creates it after
    its members are read from the synthesized template instead."""
    spec = pipeline.spec
    topic = alarm_topic(example_deployment, pipeline)
    live_topics = {t["TopicArn"] for t in client_factory("sns").list_topics()["Topics"]}
    assert topic in live_topics
    dead_letter_age = (
        DEAD_LETTER_RETENTION // 2  # FIFO: the age restarts in the DLQ
        if spec.fifo
        else (DEAD_LETTER_RETENTION - spec.retention_days * DAY) // 2
    )

    def queue(name: str) -> list[dict[str, str]]:
        return [{"Name": "QueueName", "Value": name}]

    def mapping(consumer: DeployedConsumer) -> list[dict[str, str]]:
        return [{"Name": "EventSourceMappingUUID", "Value": uuid_of(pipeline, consumer)}]

    # role -> (namespace, metric, dimensions, statistic, threshold, evaluation periods)
    expected: dict[str, tuple[str, str, list[dict[str, str]], str, int, int]] = {
        "in_flight": (
            "AWS/SQS",
            "ApproximateNumberOfMessagesNotVisible",
            queue(spec.queue_name),
            "Maximum",
            IN_FLIGHT_THRESHOLD,
            5,
        ),
        "dead_letter_depth": (
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            queue(spec.dead_letter_queue_name),
            "Maximum",
            1,
            1,
        ),
        "source_expiry_risk": (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            queue(spec.queue_name),
            "Maximum",
            spec.retention_days * DAY // 2,
            1,
        ),
        "dead_letter_expiry_risk": (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            queue(spec.dead_letter_queue_name),
            "Maximum",
            dead_letter_age,
            1,
        ),
    }
    if spec.event_source_metrics:
        expected["failed_messages"] = (
            "AWS/Lambda",
            "FailedInvokeEventCount",
            mapping(pipeline.consumer),
            "Sum",
            1,
            1,
        )
    if spec.dead_letter_consumer is not None:
        consumer = pipeline.dead_letter_consumer
        assert consumer is not None, "the example's DLQ consumer is not in the deployed template"
        expected["dead_letter_arrivals"] = (
            "AWS/SQS",
            "NumberOfMessagesReceived",  # never NumberOfMessagesSent: blind to redriven ones
            queue(spec.dead_letter_queue_name),
            "Sum",
            1,
            1,
        )
        if spec.event_source_metrics:
            expected["dead_letter_failed_messages"] = (
                "AWS/Lambda",
                "FailedInvokeEventCount",
                mapping(consumer),
                "Sum",
                1,
                1,
            )

    alarms = live_alarms(client_factory, spec)
    every_message = {
        role: getattr(pipeline, consumer)
        for role, consumer in EVERY_MESSAGE_ROLES.items()
        if role in alarm_names(spec)
    }

    assert sorted(alarms) == sorted([*expected, *every_message])
    for role, alarm in alarms.items():
        member = role in CRITICAL_ROLES and spec.composite_alarm
        heading = "Critical: pages — " if role in CRITICAL_ROLES else "Warning: files a ticket — "
        assert alarm["AlarmDescription"].startswith(heading), role
        assert alarm["AlarmDescription"].endswith(RUNBOOK_NOTE), role
        assert alarm["ActionsEnabled"] is True, role
        assert alarm["AlarmActions"] == ([] if member else [topic]), role
        assert alarm["OKActions"] == ([] if member else [topic]), role
    for role, consumer in every_message.items():
        alarm = alarms[role]
        assert alarm["Threshold"] == 99, role
        assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 5, role
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold", role
        assert alarm["TreatMissingData"] == "notBreaching", role
        [expression, *counts] = alarm["Metrics"]
        assert expression["Expression"].startswith("IF(FILL(invoked, 0) > 0, "), role
        assert expression["ReturnData"] is True, role
        assert {
            query["Id"]: (
                query["MetricStat"]["Metric"]["Namespace"],
                query["MetricStat"]["Metric"]["MetricName"],
                query["MetricStat"]["Metric"]["Dimensions"],
                query["MetricStat"]["Stat"],
                query["MetricStat"]["Period"],
            )
            for query in counts
        } == {
            "failed": ("AWS/Lambda", "FailedInvokeEventCount", mapping(consumer), "Sum", 60),
            "invoked": ("AWS/Lambda", "InvokedEventCount", mapping(consumer), "Sum", 60),
        }, role
    check_composite_alarm(pipeline, client_factory, topic, alarm_names(spec))
    for role, (namespace, metric, dimensions, statistic, threshold, periods) in expected.items():
        alarm = alarms[role]
        assert alarm["Namespace"] == namespace, role
        assert alarm["MetricName"] == metric, role
        assert alarm["Dimensions"] == dimensions, role
        assert alarm["Statistic"] == statistic, role
        assert alarm["Period"] == 60, role
        assert alarm["EvaluationPeriods"] == periods, role
        assert alarm.get("DatapointsToAlarm", periods) == periods, role
        assert alarm["Threshold"] == threshold, role
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold", role
        assert alarm["TreatMissingData"] == "notBreaching", role
    # Every alarm on this pipeline's queues or mappings is one of those (no NumberOfMessagesSent
    # alarm on the DLQ, no second alarm on a mapping).
    watched = {
        json.dumps(d, sort_keys=True) for (_, _, dims, *_) in expected.values() for d in dims
    }
    everything = [
        alarm
        for page in client_factory("cloudwatch").get_paginator("describe_alarms").paginate()
        for alarm in page["MetricAlarms"]
    ]
    on_this_pipeline = sorted(
        alarm["AlarmName"]
        for alarm in everything
        if any(json.dumps(d, sort_keys=True) in watched for d in alarm["Dimensions"])
    )
    assert on_this_pipeline == sorted(
        name for role, name in alarm_names(spec).items() if role not in every_message
    )


def check_composite_alarm(
    pipeline: DeployedPipeline, client_factory: Any, topic: str, names: dict[str, str]
) -> None:
    """The pipeline's composite alarm, live and as synthesized: over every critical alarm (the
    SNS delivery failures' too), with the topic; none without ``composite_alarm``."""
    spec = pipeline.spec
    composite_name = f"{spec.queue_name}-critical"
    live = client_factory("cloudwatch").describe_alarms(
        AlarmNames=[composite_name], AlarmTypes=["CompositeAlarm"]
    )["CompositeAlarms"]
    declared = [
        (logical_id, resource)
        for logical_id, resource in pipeline.template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::CompositeAlarm"
        and resource["Properties"]["AlarmName"] == composite_name
    ]
    if not spec.composite_alarm:
        assert live == declared == []
        return
    [composite] = live
    [(_, resource)] = declared
    critical = {names[role] for role in CRITICAL_ROLES if role in names}
    if spec.topic_producer is not None:
        critical.add(f"{spec.queue_name}-sns-delivery-failures")
    rule = composite["AlarmRule"]
    assert rule == resource["Properties"]["AlarmRule"]
    assert sorted(rule.split(" OR ")) == sorted(f'ALARM("{name}")' for name in critical)
    assert composite["AlarmActions"] == composite["OKActions"] == [topic]
    assert composite["AlarmDescription"].startswith("Critical: pages — ")
    # Not shown by the emulator: CloudFormation creates every member before the composite.
    member_ids = {
        logical_id
        for logical_id, other in pipeline.template["Resources"].items()
        if other["Type"] == "AWS::CloudWatch::Alarm"
        and other["Properties"]["AlarmName"] in critical
    }
    assert member_ids == set(resource["DependsOn"])


def test_dashboard_exists_and_shows_the_live_alarms_and_consumers(
    pipeline: DeployedPipeline, example_deployment: ExampleDeployment, client_factory: Any
) -> None:
    cloudwatch = client_factory("cloudwatch")
    physical = example_deployment.physical[pipeline.stack]
    names = [
        physical[logical_id]
        for logical_id, resource in pipeline.template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    listed = {d["DashboardName"] for d in cloudwatch.list_dashboards()["DashboardEntries"]}
    alarm_arns = sorted(a["AlarmArn"] for a in live_alarms(client_factory, pipeline.spec).values())
    assert len(alarm_arns) == len(alarm_names(pipeline.spec))
    composite = cloudwatch.describe_alarms(
        AlarmNames=[f"{pipeline.spec.queue_name}-critical"], AlarmTypes=["CompositeAlarm"]
    )["CompositeAlarms"]

    def alarm_widgets(body: dict[str, Any]) -> dict[str, list[str]]:
        """The alarm-status widgets by title: one per tier."""
        return {
            widget["properties"]["title"]: widget["properties"]["alarms"]
            for widget in body["widgets"]
            if widget["type"] == "alarm"
        }

    def shows_the_pipeline(body: dict[str, Any]) -> bool:
        shown = [arn for arns in alarm_widgets(body).values() for arn in arns]
        return set(alarm_arns) <= set(shown)

    bodies = [json.loads(cloudwatch.get_dashboard(DashboardName=n)["DashboardBody"]) for n in names]
    mine = [body for body in bodies if shows_the_pipeline(body)]

    assert set(names) <= listed
    assert len(mine) == 1, "no dashboard shows this pipeline's live alarms"
    tiers = alarm_widgets(mine[0])
    assert list(tiers) == ["Critical: pages", "Warning: files a ticket"]
    if pipeline.spec.composite_alarm:  # the composite first: the one that pages
        assert tiers["Critical: pages"][0] == composite[0]["AlarmArn"]
    else:
        assert composite == []
    text = json.dumps(mine[0]).replace(" ", "").replace('\\"', '"')
    for shown in (pipeline.spec.queue_name, pipeline.spec.dead_letter_queue_name):
        assert f'"QueueName","{shown}"' in text
    for consumer in pipeline.consumers:
        function_name = pipeline.physical[consumer.function]
        for metric in ("Errors", "Throttles", "Duration"):
            assert f'"{metric}","FunctionName","{function_name}"' in text
        uuid = uuid_of(pipeline, consumer)
        for metric in (
            "PolledEventCount",
            "FilteredOutEventCount",
            "InvokedEventCount",
            "FailedInvokeEventCount",
            "DeletedEventCount",
        ):
            assert f'"{metric}","EventSourceMappingUUID","{uuid}"' in text, (metric, uuid)


def test_event_source_mapping_carries_the_batch_settings(
    pipeline: DeployedPipeline, sqs: Any
) -> None:
    spec = pipeline.spec
    mapping = pipeline.consumer.at_deploy

    assert pipeline.consumer.queue == pipeline.queue
    assert (
        pipeline.construct_path(pipeline.consumer.function)
        == f"{pipeline.stack}/{spec.function}/Resource"
    )
    assert mapping["State"] == "Enabled"
    assert mapping["EventSourceArn"] == attributes(sqs, pipeline.queue_url)["QueueArn"]
    assert mapping["FunctionArn"].endswith(f":function:{pipeline.function_name}")
    assert mapping["BatchSize"] == spec.batch_size
    assert mapping.get("MaximumBatchingWindowInSeconds", 0) == spec.batching_window
    assert mapping.get("FunctionResponseTypes") == ["ReportBatchItemFailures"]
    assert mapping.get("ScalingConfig", {}).get("MaximumConcurrency") == spec.max_concurrency


def test_every_mapping_polls_in_the_promised_mode_and_publishes_its_event_counts(
    pipeline: DeployedPipeline, client_factory: Any
) -> None:
    """ProvisionedPollerConfig and MetricsConfig of each mapping (the source's consumer and the
    DLQ's), as the emulator reported them right after deploy (GetEventSourceMapping) and as it
    lists them now (ListEventSourceMappings by function, after the fixture disabled them). The
    emulator keeps both properties, so they are read live; the deployed template must say the
    same. Provisioned mode has no maximum concurrency (the two exclude each other)."""
    spec = pipeline.spec
    lambda_client = client_factory("lambda")
    metrics = {"Metrics": ["EventCount"]} if spec.event_source_metrics else None
    for consumer in pipeline.consumers:
        # The example gives pollers to the source's consumer only.
        pollers = spec.provisioned_pollers if consumer is pipeline.consumer else None
        poller_config = (
            {"MinimumPollers": pollers[0], "MaximumPollers": pollers[1]} if pollers else None
        )
        function_name = pipeline.physical[consumer.function]
        (now,) = lambda_client.list_event_source_mappings(FunctionName=function_name)[
            "EventSourceMappings"
        ]
        assert now["UUID"] == uuid_of(pipeline, consumer)
        assert now["State"] == "Disabled"  # by the fixture; "Enabled" as deployed

        for seen in (consumer.at_deploy, now):
            assert seen.get("MetricsConfig") == metrics, (consumer.event_source, seen)
            assert seen.get("ProvisionedPollerConfig") == poller_config, consumer.event_source
            if pollers:
                assert "ScalingConfig" not in seen, consumer.event_source
        declared = pipeline.properties(consumer.event_source)
        assert declared.get("MetricsConfig") == metrics
        assert declared.get("ProvisionedPollerConfig") == poller_config


def test_a_message_published_to_the_topic_arrives_in_the_source_queue(
    pipeline: DeployedPipeline, sqs: Any, client_factory: Any
) -> None:
    """The subscription exists through the harness's AWS::SNS::Subscription adapter (the
    emulator's CloudFormation skips the type); Publish and the delivery to the queue are the
    emulator's own SNS. GAPS: the emulator enforces no queue policy and retries no failed
    delivery, so the policy that lets only this topic send is read back, and so is the
    subscription's RedrivePolicy (SNS's own dead-lettering to the pipeline's SNS
    delivery-failures queue), unexercised."""
    spec = pipeline.spec
    sns = client_factory("sns")
    source = attributes(sqs, pipeline.queue_url)
    dead_letter = attributes(sqs, pipeline.dead_letter_queue_url)
    subscribed = [
        subscription
        for page in sns.get_paginator("list_subscriptions").paginate()
        for subscription in page["Subscriptions"]
        if subscription["Endpoint"] == source["QueueArn"]
    ]
    if spec.topic_producer is None:
        assert pipeline.subscriptions == []
        assert subscribed == []
        return

    (declared,) = pipeline.subscriptions
    topic_arn = pipeline.physical[pipeline.properties(declared)["TopicArn"]["Ref"]]
    (subscription,) = subscribed
    assert subscription["TopicArn"] == topic_arn
    assert subscription["Protocol"] == "sqs"
    assert subscription["SubscriptionArn"] == pipeline.physical[declared]
    settings = sns.get_subscription_attributes(SubscriptionArn=subscription["SubscriptionArn"])[
        "Attributes"
    ]
    raw = spec.topic_producer.raw_message_delivery
    assert settings["RawMessageDelivery"] == ("true" if raw else "false")
    # What SNS cannot deliver goes to the pipeline's SNS delivery-failures queue, not its DLQ.
    (failures_id,) = [
        logical_id
        for logical_id, resource in pipeline.template["Resources"].items()
        if resource["Type"] == "AWS::SQS::Queue"
        and pipeline.construct_path(logical_id).endswith("/SnsDeliveryFailures/Resource")
    ]
    failures = attributes(sqs, pipeline.physical[failures_id])
    assert json.loads(settings["RedrivePolicy"]) == {"deadLetterTargetArn": failures["QueueArn"]}
    assert not [
        s
        for s in json.loads(dead_letter.get("Policy", '{"Statement": []}'))["Statement"]
        if s.get("Principal") == {"Service": "sns.amazonaws.com"}
    ]
    # SNS may send to the source (and, for its redrive, to the failures queue), from this topic
    # only.
    for attrs in (source, failures):
        statements = json.loads(attrs["Policy"])["Statement"]
        from_sns = [s for s in statements if s.get("Principal") == {"Service": "sns.amazonaws.com"}]
        assert from_sns == [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": attrs["QueueArn"],
                "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
            }
        ], attrs["QueueArn"]
    published = json.dumps({"order_id": "published-1", "note": "Ünïcode ✓"})
    origin = {"DataType": "String", "StringValue": "e2e"}

    sns.publish(TopicArn=topic_arn, Message=published, MessageAttributes={"origin": origin})

    (arrived,) = drain(sqs, pipeline.queue_url, expected=1)
    if raw:
        # Raw message delivery: the body is the published text, the attributes SQS's own.
        assert arrived.body == published
        assert arrived.attributes["origin"]["StringValue"] == "e2e"
    else:
        assert json.loads(arrived.body)["Message"] == published
    assert arrived.receive_count == 1
    assert depth(sqs, pipeline.queue_url) == 0
    assert depth(sqs, pipeline.dead_letter_queue_url) == 0


def test_redrive_operator_may_move_dead_letters_back_and_nothing_else(
    pipeline: DeployedPipeline, sqs: Any, client_factory: Any
) -> None:
    """The role the example gives ``grant_redrive``, read back with IAM (ListRolePolicies,
    GetRolePolicy, ListAttachedRolePolicies, GetRole). GAPS: the emulator has no message move
    tasks (see the runbook test) and evaluates no IAM policy, so the grant is checked statement
    by statement, not by a move. The role is found in the template as the one whose policy may
    StartMessageMoveTask on the DLQ; without an operator no role may."""
    spec = pipeline.spec
    if spec.redrive_operator is None:
        assert pipeline.redrive_roles == []
        return

    (role,) = pipeline.redrive_roles
    assert pipeline.construct_path(role) == f"{pipeline.stack}/{spec.redrive_operator}/Resource"
    role_name = pipeline.physical[role]
    iam = client_factory("iam")
    trust = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    trust = json.loads(trust) if isinstance(trust, str) else trust
    assert trust["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
        }
    ]
    assert iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"] == []
    statements: list[dict[str, Any]] = []
    for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        statements += document["Statement"]
    granted: dict[tuple[str, str], set[str]] = {}
    via_sqs = {"StringEquals": {"kms:ViaService": f"sqs.{REGION}.amazonaws.com"}}
    via_s3 = {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}}
    tls_only = {"Bool": {"aws:SecureTransport": "true"}}
    for statement in statements:
        # Plain allows, no NotAction or NotResource that would widen them; the key's actions
        # hold only through SQS or, for the payloads, S3 (kms:ViaService); the queues' need no
        # condition, the payloads' only TLS.
        assert set(statement) <= {"Sid", "Effect", "Action", "Resource", "Condition"}, statement
        assert statement["Effect"] == "Allow", statement
        actions = as_list(statement["Action"])
        condition = statement.get("Condition")
        if any(a.startswith("kms:") for a in actions):
            assert condition in (via_sqs, via_s3), statement
        else:
            assert condition == (tls_only if actions == ["s3:GetObject"] else None), statement
        for resource in as_list(statement["Resource"]):
            key = (resource, json.dumps(condition, sort_keys=True))
            granted.setdefault(key, set()).update(actions)
    source = attributes(sqs, pipeline.queue_url)
    dead_letter = attributes(sqs, pipeline.dead_letter_queue_url)
    # docs/alarms.md's redrive step and grant_redrive's promise, restated.
    none = json.dumps(None)
    expected = {
        (dead_letter["QueueArn"], none): {
            "sqs:StartMessageMoveTask",
            "sqs:ListMessageMoveTasks",
            "sqs:CancelMessageMoveTask",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        },
        (source["QueueArn"], none): {"sqs:SendMessage", "sqs:GetQueueAttributes"},
    }
    key_arn = None
    if spec.kms:
        assert pipeline.key is not None
        key_id = pipeline.physical[pipeline.key]
        key_arn = kms_key_arn(client_factory, key_id)
        # The key both queues are encrypted with.
        assert source["KmsMasterKeyId"] in (key_id, key_arn)
        assert dead_letter["KmsMasterKeyId"] == source["KmsMasterKeyId"]
        expected[(key_arn, json.dumps(via_sqs, sort_keys=True))] = {
            "kms:Decrypt",
            "kms:GenerateDataKey",
        }
    if spec.payload_days is not None:
        # The operator reads what dead letters point to, under the queue's prefix, over TLS;
        # with the queue's key through S3.
        bucket = payload_bucket(pipeline)
        objects = f"arn:aws:s3:::{pipeline.physical[bucket]}/{spec.queue_name}/*"
        expected[(objects, json.dumps(tls_only, sort_keys=True))] = {"s3:GetObject"}
        if key_arn is not None:
            expected[(key_arn, json.dumps(via_s3, sort_keys=True))] = {"kms:Decrypt"}

    assert granted == expected


def payload_bucket(pipeline: DeployedPipeline) -> str:
    """The logical id of the bucket whose lifecycle rule covers the queue's prefix."""
    (bucket,) = (
        logical_id
        for logical_id, resource in pipeline.template["Resources"].items()
        if resource["Type"] == "AWS::S3::Bucket"
        and any(
            rule.get("Prefix") == f"{pipeline.spec.queue_name}/"
            for rule in resource["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
        )
    )
    return bucket


def test_the_payload_bucket_is_encrypted_private_tls_only_and_outlives_the_messages(
    pipeline: DeployedPipeline, client_factory: Any
) -> None:
    """The bucket and its encryption read back from the emulator's S3 (HeadBucket,
    GetBucketEncryption). GAPS: the emulator's CloudFormation (moto 5.2.5,
    ``FakeBucket.create_from_cloudformation_json``) applies only ``BucketEncryption`` and
    ``Tags`` of an ``AWS::S3::Bucket`` (and of the encryption only the algorithm and the key, not
    ``BucketKeyEnabled``, moto/s3/cloud_formation.py) and creates no ``AWS::S3::BucketPolicy``:
    the bucket key, the lifecycle, the public access block and the TLS deny are checked on the
    template CloudFormation holds
    (GetTemplate), and the emulator's lack of them is asserted, so that a release that applies
    them makes this test read them live instead. Without large payloads the pipeline has no
    payload bucket."""
    spec = pipeline.spec
    if spec.payload_days is None:
        assert not any(
            rule.get("Prefix") == f"{spec.queue_name}/"
            for resource in pipeline.template["Resources"].values()
            if resource["Type"] == "AWS::S3::Bucket"
            for rule in resource["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
        )
        return
    logical_id = payload_bucket(pipeline)
    name = pipeline.physical[logical_id]
    s3 = client_factory("s3")
    s3.head_bucket(Bucket=name)

    [encryption] = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"][
        "Rules"
    ]
    default = encryption["ApplyServerSideEncryptionByDefault"]
    if spec.kms:
        assert pipeline.key is not None
        key_id = pipeline.physical[pipeline.key]
        assert default["SSEAlgorithm"] == "aws:kms"
        assert default["KMSMasterKeyID"] in (kms_key_arn(client_factory, key_id), key_id)
    else:
        assert default == {"SSEAlgorithm": "AES256"}

    for read in (s3.get_bucket_lifecycle_configuration, s3.get_public_access_block):
        with pytest.raises(botocore.exceptions.ClientError):
            read(Bucket=name)  # the emulator's gap (see the docstring)
    deployed = client_factory("cloudformation").get_template(StackName=pipeline.stack)
    body = deployed["TemplateBody"]
    resources = (json.loads(body) if isinstance(body, str) else body)["Resources"]
    properties = resources[logical_id]["Properties"]
    [deployed_encryption] = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert deployed_encryption.get("BucketKeyEnabled") is (True if spec.kms else None)
    [rule] = properties["LifecycleConfiguration"]["Rules"]
    assert rule == {
        "Id": rule["Id"],
        "Prefix": f"{spec.queue_name}/",
        "Status": "Enabled",
        "ExpirationInDays": spec.payload_days,
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
    }
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert resources[logical_id]["DeletionPolicy"] == "Retain"
    [policy] = [
        r["Properties"]["PolicyDocument"]
        for r in resources.values()
        if r["Type"] == "AWS::S3::BucketPolicy" and r["Properties"]["Bucket"] == {"Ref": logical_id}
    ]
    assert {
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Action": "s3:*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Resource": [
            {"Fn::GetAtt": [logical_id, "Arn"]},
            {"Fn::Join": ["", [{"Fn::GetAtt": [logical_id, "Arn"]}, "/*"]]},
        ],
    } in policy["Statement"]


def test_poison_message_reaches_the_dlq_after_exactly_max_receive_count_receives(
    pipeline: DeployedPipeline, sqs: Any
) -> None:
    spec = pipeline.spec

    sent_id, body, seen = poison(sqs, pipeline, "poison")

    assert seen == list(range(1, spec.max_receive_count + 1))
    assert depth(sqs, pipeline.queue_url) == 0
    (dead,) = drain(sqs, pipeline.dead_letter_queue_url, expected=1)
    assert (dead.message_id, dead.body) == (sent_id, body)
    assert dead.group_id == ("poison" if spec.fifo else None)


def test_alarm_runbook_commands_inspect_the_deployed_pipeline(
    pipeline: DeployedPipeline,
    sqs: Any,
    client_factory: Any,
    emulator: Emulator,
    e2e_tmp: Path,
) -> None:
    """docs/alarms.md's commands, as written, with the AWS CLI against the deployed example.

    GAPS: the emulator publishes no SQS metrics and evaluates no alarm, so the test sets the
    state CloudWatch would set (SetAlarmState) before the state command reads it; and it has no
    message move tasks, so ``start-message-move-task`` is run and its failure asserted (the
    redrive itself is covered by nothing here; see docs/e2e.md)."""
    spec = pipeline.spec
    runbook = Runbook(
        emulator, e2e_tmp / f"runbook-{spec.id}", spec.queue_name, spec.dead_letter_queue_name
    )
    sent_id, body, _ = poison(sqs, pipeline, "runbook")

    # Names block: the URLs it computes are the deployed queues'.
    urls = runbook.run('echo "$QUEUE_URL $DLQ_URL"')
    assert urls.returncode == 0, urls.describe()
    assert urls.stdout.split() == [pipeline.queue_url, pipeline.dead_letter_queue_url]

    # Dead letters, step 1: DLQ depth.
    dead_letters = block_with('--queue-url "$DLQ_URL"', "ApproximateNumberOfMessagesNotVisible")
    counted = runbook.run(dead_letters).json()["Attributes"]
    assert counted == {
        "ApproximateNumberOfMessages": "1",
        "ApproximateNumberOfMessagesNotVisible": "0",
    }

    # Step 2: peek without removing.
    peek = block_with("receive-message", "--visibility-timeout 60")
    (message,) = runbook.run(peek).json()["Messages"]
    assert (message["MessageId"], message["Body"]) == (sent_id, body)
    # "ApproximateReceiveCount ... tell[s] how often they failed": the source's receives go along.
    assert int(message["Attributes"]["ApproximateReceiveCount"]) > spec.max_receive_count
    after_peek = runbook.run(dead_letters).json()["Attributes"]
    assert after_peek == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "1",
    }
    # Standing in for the 60 s after which the peeked message reappears by itself.
    sqs.change_message_visibility(
        QueueUrl=pipeline.dead_letter_queue_url,
        ReceiptHandle=message["ReceiptHandle"],
        VisibilityTimeout=0,
    )

    # Step 4: the DLQ's ARN for the redrive, then the move task the emulator cannot run.
    redrive = block_with("start-message-move-task")
    arn = runbook.run(line_with(redrive, "DLQ_ARN=") + '\necho "$DLQ_ARN"')
    assert arn.stdout.strip() == attributes(sqs, pipeline.dead_letter_queue_url)["QueueArn"]
    unimplemented = "The start_message_move_task action has not been implemented"
    logged_before = emulator_log_count(emulator, unimplemented)
    move = runbook.run(
        line_with(redrive, "DLQ_ARN=") + "\n" + line_with(redrive, "aws sqs start-"),
        extra_env={"AWS_MAX_ATTEMPTS": "1"},  # the CLI would retry the emulator's HTTP 500
    )
    assert move.returncode != 0, "the emulator now runs message move tasks: cover the redrive"
    assert emulator_logged(emulator, unimplemented, logged_before), move.describe()

    # Step 5: the alarm's state.
    alarm_name = alarm_names(spec)["dead_letter_depth"]
    client_factory("cloudwatch").set_alarm_state(
        AlarmName=alarm_name,
        StateValue="ALARM",
        StateReason="Threshold Crossed: 1 datapoint [1.0] was >= the threshold (1.0).",
    )
    state = block_with("describe-alarms", "dead-letters")
    (shown,) = runbook.run(state).json()
    assert shown["State"] == "ALARM"
    assert shown["Reason"].startswith("Threshold Crossed")

    # Dead letters about to expire: archive to a file, then delete what the file holds.
    archive = block_with("dead-letters-$(date +%s).json")
    stored = runbook.run(line_with(archive, "aws sqs receive-message"))
    assert stored.returncode == 0, stored.describe()
    (archived_file,) = runbook.workdir.glob("dead-letters-*.json")
    (archived,) = json.loads(archived_file.read_text())["Messages"]
    assert (archived["MessageId"], archived["Body"]) == (sent_id, body)
    deleted = runbook.run(
        line_with(archive, "aws sqs delete-message"),
        {"<ReceiptHandle from the file>": f"'{archived['ReceiptHandle']}'"},
    )
    assert deleted.returncode == 0, deleted.describe()
    assert depth(sqs, pipeline.dead_letter_queue_url) == 0

    # In-flight alarm, step 2: the mapping and the source's in-flight count and timeout.
    in_flight = block_with("list-event-source-mappings", "Scaling:ScalingConfig")
    mappings = runbook.run(
        line_with(in_flight, "list-event-source-mappings"),
        {"<function>": pipeline.function_name},
    ).json()
    assert mappings == [
        {
            "State": "Disabled",  # disabled by the fixture; "Enabled" as deployed
            "Batch": spec.batch_size,
            # Provisioned mode (orders) has no ScalingConfig: its ceiling is the pollers'.
            "Scaling": (
                {"MaximumConcurrency": spec.max_concurrency} if spec.max_concurrency else None
            ),
            "Pollers": (
                {
                    "MinimumPollers": spec.provisioned_pollers[0],
                    "MaximumPollers": spec.provisioned_pollers[1],
                }
                if spec.provisioned_pollers
                else None
            ),
        }
    ]
    source = runbook.run(line_with(in_flight, "VisibilityTimeout")).json()["Attributes"]
    assert source == {
        "ApproximateNumberOfMessagesNotVisible": "0",
        "VisibilityTimeout": str(VISIBILITY[spec.queue_name]),
    }

    # Oldest-message alarm, step 2: the backlog.
    backlog = block_with('--queue-url "$QUEUE_URL"', "ApproximateNumberOfMessages ")
    assert runbook.run(line_with(backlog, "get-queue-attributes")).json()["Attributes"] == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
    }


def test_failed_messages_runbook_finds_each_mapping_and_reads_what_its_alarm_watches(
    pipeline: DeployedPipeline,
    sqs: Any,
    client_factory: Any,
    emulator: Emulator,
    e2e_tmp: Path,
) -> None:
    """docs/alarms.md's failed-messages commands, as written, with the AWS CLI, for every
    consumer of the pipeline (the DLQ's too: its alarm is ``<queue>-dlq-<function>-failed-messages``).

    GAP: the emulator runs no mapping, so nothing publishes FailedInvokeEventCount. The test puts
    one datapoint (PutMetricData) on exactly the namespace, metric and dimensions the consumer's
    live alarm watches, standing in for Lambda, and the runbook's get-metric-statistics must
    read it back with the UUID the runbook's first command found. The dead-letter-arrivals
    runbook has no command to run."""
    spec = pipeline.spec
    runbook = Runbook(
        emulator,
        e2e_tmp / f"runbook-failed-{spec.id}",
        spec.queue_name,
        spec.dead_letter_queue_name,
    )
    block = block_with("list-event-source-mappings", "FailedInvokeEventCount")
    alarms = live_alarms(client_factory, spec)
    consumers = [("failed_messages", pipeline.consumer)]
    if pipeline.dead_letter_consumer is not None:
        consumers.append(("dead_letter_failed_messages", pipeline.dead_letter_consumer))
    assert sorted(role for role, _ in consumers) == sorted(
        role for role in alarms if role.endswith("failed_messages")
    )
    urls = {
        pipeline.queue: pipeline.queue_url,
        pipeline.dead_letter_queue: pipeline.dead_letter_queue_url,
    }

    for failed, (role, consumer) in enumerate(consumers, start=2):
        # Step 1: the mapping of the function, and the queue it reads.
        listed = runbook.run(
            line_with(block, "list-event-source-mappings"),
            {"<function>": pipeline.physical[consumer.function]},
        ).json()
        assert listed == [
            {
                "UUID": uuid_of(pipeline, consumer),
                "Source": attributes(sqs, urls[consumer.queue])["QueueArn"],
                "State": "Disabled",  # disabled by the fixture; "Enabled" as deployed
            }
        ]
        alarm = alarms[role]
        assert alarm["Dimensions"] == [
            {"Name": "EventSourceMappingUUID", "Value": listed[0]["UUID"]}
        ]
        # Standing in for Lambda: failed messages counted two minutes ago, on the alarm's metric.
        client_factory("cloudwatch").put_metric_data(
            Namespace=alarm["Namespace"],
            MetricData=[
                {
                    "MetricName": alarm["MetricName"],
                    "Dimensions": alarm["Dimensions"],
                    "Timestamp": datetime.now(UTC) - timedelta(minutes=2),
                    "Value": failed,
                    "Unit": "Count",
                }
            ],
        )

        # Step 1, second command: the failed count of the last hour, by that UUID.
        counted = runbook.run(
            line_with(block, "get-metric-statistics"), {"<UUID>": listed[0]["UUID"]}
        ).json()

        assert counted["Label"] == "FailedInvokeEventCount"
        assert [point["Sum"] for point in counted["Datapoints"]] == [float(failed)], role


def test_destroy_removes_the_example(
    example_deployment: ExampleDeployment, bootstrapped: CdkCli, client_factory: Any, e2e_tmp: Path
) -> None:
    """Runs last in this module: the example app is gone afterwards."""
    queues = sorted(
        name
        for spec in EXAMPLE_PIPELINES
        for name in (spec.queue_name, spec.dead_letter_queue_name)
    )
    names = [alarm for spec in EXAMPLE_PIPELINES for alarm in alarm_names(spec).values()]
    cloudwatch = client_factory("cloudwatch")
    composites = [
        f"{spec.queue_name}-critical" for spec in EXAMPLE_PIPELINES if spec.composite_alarm
    ]

    def live_composites() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = cloudwatch.describe_alarms(
            AlarmNames=composites, AlarmTypes=["CompositeAlarm"]
        )["CompositeAlarms"]
        return found

    dashboards = {
        example_deployment.physical[stack][logical_id]
        for stack, template in example_deployment.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Dashboard"
    }
    pipelines = example_deployment.pipelines.values()
    functions = {p.physical[c.function] for p in pipelines for c in p.consumers}
    mappings = {p.physical[c.event_source] for p in pipelines for c in p.consumers}
    subscriptions = {p.physical[s] for p in pipelines for s in p.subscriptions}
    roles = {p.physical[r] for p in pipelines for r in p.redrive_roles}
    topics = {
        example_deployment.physical[stack][logical_id]
        for stack, template in example_deployment.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::SNS::Topic"
    }
    assert len(functions) == len(mappings) == 3  # two consumers and the DLQ's
    assert len(subscriptions) == len(roles) == 1 and len(topics) == 2
    sqs = client_factory("sqs")
    sns = client_factory("sns")
    iam = client_factory("iam")

    def live_subscriptions() -> set[str]:
        return {
            subscription["SubscriptionArn"]
            for page in sns.get_paginator("list_subscriptions").paginate()
            for subscription in page["Subscriptions"]
        }

    def live_topics() -> set[str]:
        return {t["TopicArn"] for t in sns.list_topics()["Topics"]}

    def live_roles() -> set[str]:
        return {r["RoleName"] for r in iam.list_roles()["Roles"]}

    def live_queues() -> list[str]:
        urls = sqs.list_queues().get("QueueUrls", [])
        return sorted(u.rsplit("/", 1)[-1] for u in urls if u.rsplit("/", 1)[-1] in queues)

    assert live_queues() == queues
    assert len(cloudwatch.describe_alarms(AlarmNames=names)["MetricAlarms"]) == len(names)
    assert len(live_composites()) == len(composites)
    assert subscriptions <= live_subscriptions()
    assert topics <= live_topics()
    assert roles <= live_roles()

    payload_buckets = [
        p.physical[payload_bucket(p)] for p in pipelines if p.spec.payload_days is not None
    ]
    assert payload_buckets

    destroyed = bootstrapped.run(
        "destroy", "--all", "--force", "--output", str(e2e_tmp / "example-destroy"), cwd=REPO_ROOT
    )

    assert destroyed.returncode == 0, destroyed.describe()
    # The payload buckets are retained (DeletionPolicy Retain): a platform team keeps data.
    for name in payload_buckets:
        client_factory("s3").head_bucket(Bucket=name)
    for name in example_deployment.templates:
        with pytest.raises(botocore.exceptions.ClientError):
            client_factory("cloudformation").describe_stacks(StackName=name)
    assert live_queues() == []
    assert cloudwatch.describe_alarms(AlarmNames=names)["MetricAlarms"] == []
    assert live_composites() == []
    listed = {d["DashboardName"] for d in cloudwatch.list_dashboards()["DashboardEntries"]}
    assert not dashboards & listed
    lambda_client = client_factory("lambda")
    assert not functions & {f["FunctionName"] for f in lambda_client.list_functions()["Functions"]}
    left = {m["UUID"] for m in lambda_client.list_event_source_mappings()["EventSourceMappings"]}
    assert not mappings & left
    assert not subscriptions & live_subscriptions()
    assert not topics & live_topics()
    assert not roles & live_roles()
