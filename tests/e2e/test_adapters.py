"""The test harness's emulator adapters (emulator_adapters.py): needed, and faithful.

* Needed: the installed emulator still lacks every adapted type (this fails once a newer
  emulator supports one: delete that adapter), and the example app cannot be deployed by an
  emulator without the adapters, with the error a user of that emulator sees.
* Faithful: a CloudFormation alarm is the same alarm PutMetricAlarm makes, ``Ref`` and
  ``Fn::GetAtt Arn`` give its name and ARN, and deleting the stack deletes it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from ..conftest import SynthResult
from .emulator import ACCOUNT, REGION, CdkCli, Emulator
from .emulator_adapters import ADAPTERS, WRITTEN_FOR_MOTO

pytestmark = pytest.mark.e2e

NATIVE_TYPES = """
import json
from moto.cloudformation.parsing import get_model_map
print(json.dumps(sorted(get_model_map())))
"""


def test_every_adapted_type_is_still_missing_from_the_installed_emulator() -> None:
    """Asked of moto alone in a fresh interpreter (the adapters module is not imported there)."""
    completed = subprocess.run(
        [sys.executable, "-c", NATIVE_TYPES],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    native = set(json.loads(completed.stdout))
    version = subprocess.run(
        [sys.executable, "-c", "import moto; print(moto.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    assert "AWS::CloudWatch::Dashboard" in native  # the question is asked of the real map
    for resource_type, (_, info) in ADAPTERS.items():
        assert info.written_for == WRITTEN_FOR_MOTO
        assert resource_type not in native, (
            f"moto {version} creates {resource_type} itself (the adapter was written for "
            f"{info.written_for}): delete its adapter from tests/e2e/emulator_adapters.py"
        )


def test_without_the_adapters_the_example_app_cannot_be_deployed(
    example_assembly: SynthResult, e2e_tmp: Path
) -> None:
    """A separate emulator, as released: bootstrap, then deploy the assembly `make synth` made."""
    assert example_assembly.returncode == 0, example_assembly.output
    folder = e2e_tmp / "without-adapters"
    folder.mkdir()
    plain = Emulator.start(folder / "moto.log", adapters=False)
    try:
        cdk = CdkCli(plain, folder)
        bootstrapped = cdk.run("bootstrap", f"aws://{ACCOUNT}/{REGION}")
        assert bootstrapped.returncode == 0, bootstrapped.describe()

        deployed = cdk.run(
            "deploy", "--all", "--require-approval", "never", "--app", str(example_assembly.outdir)
        )
    finally:
        plain.stop()

    assert deployed.returncode != 0, deployed.describe()
    found = re.search(
        r"ValidationError: Template error: instance of Fn::GetAtt references undefined "
        r"resource (\w+)",
        deployed.output,
    )
    assert found, deployed.describe()
    types = {
        logical_id: resource["Type"]
        for template in example_assembly.templates().values()
        for logical_id, resource in template["Resources"].items()
    }
    # The first reference the emulator cannot resolve: an alarm, or the composite alarm the
    # dashboard shows.
    assert types[found.group(1)] in {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"}


ALARM = {
    "AlarmName": "adapter-check-dead-letters",
    "AlarmDescription": "adapter check",
    "Namespace": "AWS/SQS",
    "MetricName": "ApproximateNumberOfMessagesVisible",
    "Dimensions": [{"Name": "QueueName", "Value": "adapter-check-dlq"}],
    "Statistic": "Maximum",
    "Period": 60,
    "EvaluationPeriods": 1,
    "DatapointsToAlarm": 1,
    "Threshold": 1,
    "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    "TreatMissingData": "notBreaching",
    "AlarmActions": [f"arn:aws:sns:{REGION}:{ACCOUNT}:adapter-check"],
    "OKActions": [f"arn:aws:sns:{REGION}:{ACCOUNT}:adapter-check"],
}
VOLATILE = {"AlarmName", "AlarmArn", "AlarmConfigurationUpdatedTimestamp", "StateUpdatedTimestamp"}


def test_a_cloudformation_alarm_is_the_alarm_put_metric_alarm_makes(
    emulator: Emulator, client_factory: Any
) -> None:
    cloudformation = client_factory("cloudformation")
    cloudwatch = client_factory("cloudwatch")
    template = {
        "Resources": {
            "Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": ALARM},
            "Board": {
                "Type": "AWS::CloudWatch::Dashboard",
                "Properties": {
                    "DashboardName": "adapter-check",
                    "DashboardBody": {
                        "Fn::Join": [
                            "",
                            [
                                '{"ref":"',
                                {"Ref": "Alarm"},
                                '","arn":"',
                                {"Fn::GetAtt": ["Alarm", "Arn"]},
                                '"}',
                            ],
                        ]
                    },
                },
            },
        }
    }
    by_api = {**ALARM, "AlarmName": "adapter-check-by-api"}
    cloudwatch.put_metric_alarm(**by_api)

    cloudformation.create_stack(StackName="adapter-check", TemplateBody=json.dumps(template))

    try:
        found = cloudwatch.describe_alarms(AlarmNames=[ALARM["AlarmName"], by_api["AlarmName"]])[
            "MetricAlarms"
        ]
        by_name = {alarm["AlarmName"]: alarm for alarm in found}
        made, reference = by_name[ALARM["AlarmName"]], by_name[by_api["AlarmName"]]
        assert {k: v for k, v in made.items() if k not in VOLATILE} == {
            k: v for k, v in reference.items() if k not in VOLATILE
        }
        assert (
            made["AlarmArn"] == f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{ALARM['AlarmName']}"
        )
        body = json.loads(cloudwatch.get_dashboard(DashboardName="adapter-check")["DashboardBody"])
        assert body == {"ref": ALARM["AlarmName"], "arn": made["AlarmArn"]}
        resources = cloudformation.list_stack_resources(StackName="adapter-check")
        physical = {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in resources["StackResourceSummaries"]
        }
        assert physical["Alarm"] == ALARM["AlarmName"]
    finally:
        cloudformation.delete_stack(StackName="adapter-check")
        cloudwatch.delete_alarms(AlarmNames=[by_api["AlarmName"]])

    assert cloudwatch.describe_alarms(AlarmNames=[ALARM["AlarmName"]])["MetricAlarms"] == []


MATH_ALARM = {
    "AlarmName": "adapter-check-every-message",
    "AlarmDescription": "adapter check",
    "EvaluationPeriods": 5,
    "DatapointsToAlarm": 5,
    "Threshold": 99,
    "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    "TreatMissingData": "notBreaching",
    "AlarmActions": [f"arn:aws:sns:{REGION}:{ACCOUNT}:adapter-check"],
    "Metrics": [
        {
            "Id": "share",
            "Expression": "IF(FILL(invoked, 0) > 0, 100 * FILL(failed, 0) / FILL(invoked, 0), 0)",
            "Label": "failed, % of invoked",
            "ReturnData": True,
        },
        *(
            {
                "Id": query_id,
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/Lambda",
                        "MetricName": metric,
                        "Dimensions": [{"Name": "EventSourceMappingUUID", "Value": "uuid"}],
                    },
                    "Period": 60,
                    "Stat": "Sum",
                },
                "ReturnData": False,
            }
            for query_id, metric in (
                ("failed", "FailedInvokeEventCount"),
                ("invoked", "InvokedEventCount"),
            )
        ),
    ],
}


def test_a_cloudformation_metric_math_alarm_is_the_alarm_put_metric_alarm_makes(
    emulator: Emulator, client_factory: Any
) -> None:
    cloudformation = client_factory("cloudformation")
    cloudwatch = client_factory("cloudwatch")
    template = {
        "Resources": {"Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": MATH_ALARM}}
    }
    by_api = {**MATH_ALARM, "AlarmName": "adapter-check-every-message-by-api"}
    cloudwatch.put_metric_alarm(**by_api)

    cloudformation.create_stack(StackName="adapter-check-math", TemplateBody=json.dumps(template))

    try:
        found = cloudwatch.describe_alarms(
            AlarmNames=[MATH_ALARM["AlarmName"], by_api["AlarmName"]]
        )["MetricAlarms"]
        by_name = {alarm["AlarmName"]: alarm for alarm in found}
        made, reference = by_name[MATH_ALARM["AlarmName"]], by_name[by_api["AlarmName"]]
        assert {k: v for k, v in made.items() if k not in VOLATILE} == {
            k: v for k, v in reference.items() if k not in VOLATILE
        }
        assert made["Metrics"] == MATH_ALARM["Metrics"]
    finally:
        cloudformation.delete_stack(StackName="adapter-check-math")
        cloudwatch.delete_alarms(AlarmNames=[by_api["AlarmName"]])

    assert cloudwatch.describe_alarms(AlarmNames=[MATH_ALARM["AlarmName"]])["MetricAlarms"] == []


def test_a_cloudformation_composite_alarm_is_listed_as_a_composite_alarm(
    emulator: Emulator, client_factory: Any
) -> None:
    """The emulator has no PutCompositeAlarm to compare with: the alarm is read back as
    DescribeAlarms lists composite alarms, with its rule and actions."""
    cloudformation = client_factory("cloudformation")
    cloudwatch = client_factory("cloudwatch")
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:adapter-check"
    template = {
        "Resources": {
            "Member": {"Type": "AWS::CloudWatch::Alarm", "Properties": ALARM},
            "Composite": {
                "Type": "AWS::CloudWatch::CompositeAlarm",
                "DependsOn": ["Member"],
                "Properties": {
                    "AlarmName": "adapter-check-critical",
                    "AlarmDescription": "adapter check",
                    "AlarmRule": f'ALARM("{ALARM["AlarmName"]}")',
                    "AlarmActions": [topic],
                    "OKActions": [topic],
                },
            },
            "Board": {
                "Type": "AWS::CloudWatch::Dashboard",
                "Properties": {
                    "DashboardName": "adapter-check-composite",
                    "DashboardBody": {
                        "Fn::Join": ["", ['{"arn":"', {"Fn::GetAtt": ["Composite", "Arn"]}, '"}']]
                    },
                },
            },
        }
    }

    cloudformation.create_stack(
        StackName="adapter-check-composite", TemplateBody=json.dumps(template)
    )

    try:
        listed = cloudwatch.describe_alarms(
            AlarmNames=["adapter-check-critical"], AlarmTypes=["CompositeAlarm"]
        )
        assert listed["MetricAlarms"] == []
        [composite] = listed["CompositeAlarms"]
        assert composite["AlarmRule"] == f'ALARM("{ALARM["AlarmName"]}")'
        assert composite["AlarmActions"] == composite["OKActions"] == [topic]
        assert composite["AlarmDescription"] == "adapter check"
        arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:adapter-check-critical"
        assert composite["AlarmArn"] == arn
        body = cloudwatch.get_dashboard(DashboardName="adapter-check-composite")["DashboardBody"]
        assert json.loads(body) == {"arn": arn}
    finally:
        cloudformation.delete_stack(StackName="adapter-check-composite")

    remaining = cloudwatch.describe_alarms(
        AlarmNames=["adapter-check-critical"], AlarmTypes=["CompositeAlarm"]
    )
    assert remaining["CompositeAlarms"] == []


def test_the_launcher_registers_the_adapters_in_the_server(emulator: Emulator) -> None:
    """The session's emulator runs from the launcher, which says what it registered."""
    log = emulator.log_path.read_text(errors="replace")

    assert f"emulator adapters registered: {', '.join(sorted(ADAPTERS))}" in log


def test_a_cloudformation_queue_policy_is_the_policy_set_queue_attributes_sets(
    client_factory: Any,
) -> None:
    cloudformation = client_factory("cloudformation")
    sqs = client_factory("sqs")
    url = sqs.create_queue(QueueName="adapter-policy-check")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Action": "sqs:*",
                "Resource": arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }
    template = {
        "Resources": {
            "Policy": {
                "Type": "AWS::SQS::QueuePolicy",
                "Properties": {"Queues": [url], "PolicyDocument": document},
            }
        }
    }

    try:
        cloudformation.create_stack(StackName="adapter-policy", TemplateBody=json.dumps(template))
        made = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]
        cloudformation.delete_stack(StackName="adapter-policy")
        after = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"]).get(
            "Attributes", {}
        )
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(document)})
        by_api = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]
    finally:
        sqs.delete_queue(QueueUrl=url)

    assert json.loads(made["Policy"]) == document
    assert made == by_api
    assert "Policy" not in after


def test_a_cloudformation_subscription_is_the_subscription_subscribe_makes(
    client_factory: Any,
) -> None:
    """The same attributes as an SQS subscription made by Subscribe (with the same attributes),
    delivery of a published message, and unsubscribed when the stack is deleted."""
    cloudformation = client_factory("cloudformation")
    sqs = client_factory("sqs")
    sns = client_factory("sns")
    topic_arn = sns.create_topic(Name="adapter-subscription-check")["TopicArn"]
    urls = {
        name: sqs.create_queue(QueueName=f"adapter-subscription-{name}")["QueueUrl"]
        for name in ("by-stack", "by-api", "dlq")
    }
    arns = {
        name: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        for name, url in urls.items()
    }
    redrive = {"deadLetterTargetArn": arns["dlq"]}
    template = {
        "Resources": {
            "Subscription": {
                "Type": "AWS::SNS::Subscription",
                "Properties": {
                    "TopicArn": topic_arn,
                    "Endpoint": arns["by-stack"],
                    "Protocol": "sqs",
                    "RawMessageDelivery": True,
                    "RedrivePolicy": redrive,
                },
            }
        }
    }
    by_api = sns.subscribe(
        TopicArn=topic_arn,
        Endpoint=arns["by-api"],
        Protocol="sqs",
        Attributes={"RawMessageDelivery": "true", "RedrivePolicy": json.dumps(redrive)},
    )["SubscriptionArn"]
    volatile = {"SubscriptionArn", "Endpoint"}

    try:
        cloudformation.create_stack(
            StackName="adapter-subscription", TemplateBody=json.dumps(template)
        )
        resources = cloudformation.list_stack_resources(StackName="adapter-subscription")
        (made,) = [r["PhysicalResourceId"] for r in resources["StackResourceSummaries"]]
        listed = sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"]
        attributes = {
            arn: sns.get_subscription_attributes(SubscriptionArn=arn)["Attributes"]
            for arn in (made, by_api)
        }
        sns.publish(TopicArn=topic_arn, Message="adapter check ✓")
        bodies = {
            name: [
                m["Body"]
                for m in sqs.receive_message(QueueUrl=urls[name], WaitTimeSeconds=1).get(
                    "Messages", []
                )
            ]
            for name in ("by-stack", "by-api")
        }
        cloudformation.delete_stack(StackName="adapter-subscription")
        after = {
            s["SubscriptionArn"]
            for s in sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"]
        }
    finally:
        sns.unsubscribe(SubscriptionArn=by_api)
        sns.delete_topic(TopicArn=topic_arn)
        for url in urls.values():
            sqs.delete_queue(QueueUrl=url)

    assert sorted((s["SubscriptionArn"], s["Endpoint"]) for s in listed) == sorted(
        [(made, arns["by-stack"]), (by_api, arns["by-api"])]
    )
    assert attributes[made]["Endpoint"] == arns["by-stack"]
    assert {k: v for k, v in attributes[made].items() if k not in volatile} == {
        k: v for k, v in attributes[by_api].items() if k not in volatile
    }
    assert attributes[made]["RawMessageDelivery"] == "true"
    assert json.loads(attributes[made]["RedrivePolicy"]) == redrive
    assert bodies == {"by-stack": ["adapter check ✓"], "by-api": ["adapter check ✓"]}
    assert after == {by_api}


def _send_during_a_delete(monkeypatch: pytest.MonkeyPatch, locked: bool) -> int:
    """Messages left after one is deleted while another thread sends: 1 when nothing is lost.

    moto's backend is used in this process (no server, no network), so the interleaving is
    chosen, not hoped for: the send runs when the delete has read the whole queue and not yet
    stored what it keeps (on a loaded server, a thread switch at that point).
    """
    from moto.sqs.models import Queue, SQSBackend

    from .emulator_adapters import serialize_queue_updates

    raw = {
        "delete": getattr(Queue.delete_message, "__wrapped__", Queue.delete_message),
        "receive": getattr(SQSBackend.receive_message, "__wrapped__", SQSBackend.receive_message),
    }
    monkeypatch.setattr(Queue, "delete_message", raw["delete"])
    monkeypatch.setattr(SQSBackend, "receive_message", raw["receive"])
    if locked:
        serialize_queue_updates()

    backend = SQSBackend(REGION, ACCOUNT)
    queue = backend.create_queue("race-check")
    backend.send_message("race-check", "first")
    (received,) = backend.receive_message("race-check", 1, 0, 30)
    sender = threading.Thread(target=backend.send_message, args=("race-check", "second"))

    class SendsOnceReadThrough(list):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            yield from list.__iter__(self)
            if sender.ident is None:
                sender.start()
                sender.join(timeout=1)  # the send finishes now, unless the delete holds the lock

    queue._messages = SendsOnceReadThrough(queue._messages)
    backend.delete_message("race-check", received.receipt_handle)
    sender.join(timeout=10)
    assert sender.ident is not None and not sender.is_alive()
    return len(queue._messages)


def test_the_emulator_loses_a_message_sent_during_a_delete_unless_the_queue_is_locked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Needed: moto as released drops the concurrent send (fails once moto takes the lock itself:
    then delete ``serialize_queue_updates``). Faithful: with the lock, the send is kept, as SQS
    keeps every message it acknowledged (SendMessage returns only once the message is stored)."""
    import moto

    assert _send_during_a_delete(monkeypatch, locked=False) == 0, (
        f"moto {moto.__version__} no longer loses it: delete serialize_queue_updates"
    )
    assert _send_during_a_delete(monkeypatch, locked=True) == 1
