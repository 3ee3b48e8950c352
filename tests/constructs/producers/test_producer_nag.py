"""The four cdk-nag packs on every producer shape over an SSE-KMS queue: the bucket destination
and key statements the library writes, the SNS delivery-failures queue and its alarm, the
EventBridge target, and the redrive grant bound to SQS. The example app covers SNS and redrive;
this covers the shapes it lacks. Resources the test itself adds (the bucket, topic, rule, role)
are not the library's and are not judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue
from tests.support.nag import PACKS, synth_with_packs, violations_under


def nag_report(outdir: Path) -> dict[str, Any]:
    app = cdk.App(
        outdir=str(outdir),
        context={"@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption": True},
    )
    stack = cdk.Stack(app, "Intake")
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    alarms = sns.Topic(stack, "Alarms", enforce_ssl=True)
    actions = [cloudwatch_actions.SnsAction(alarms)]
    intake = ResilientQueue(
        stack,
        "Intake",
        queue_name="intake",
        encryption_key=key,
        alarm_actions=actions,
        ok_actions=actions,
    )
    intake.add_producer(s3.Bucket(stack, "Uploads", enforce_ssl=True))
    intake.add_producer(sns.Topic(stack, "Orders", enforce_ssl=True))
    intake.add_producer(
        events.Rule(stack, "Refunds", event_pattern=events.EventPattern(source=["refunds"]))
    )
    intake.grant_redrive(iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal()))
    return synth_with_packs(app, outdir)


def test_the_four_packs_find_nothing_in_the_librarys_producer_resources(tmp_path: Path) -> None:
    report = nag_report(tmp_path)

    assert {r["pluginName"] for r in report["pluginReports"]} == PACKS
    assert violations_under(report, "Intake/Intake/") == []


def test_the_librarys_acknowledgments_are_the_known_ones_with_reasons(tmp_path: Path) -> None:
    report = nag_report(tmp_path)

    acknowledged = {
        (v["ruleName"], c["constructPath"].removeprefix("Intake/Intake/"))
        for r in report["pluginReports"]
        for v in r.get("suppressedViolations", [])
        for c in v["violatingConstructs"]
        if c["constructPath"].startswith("Intake/Intake/")
    }
    assert acknowledged == {
        ("Serverless-SQSRedrivePolicy", "DeadLetterQueue/Resource"),
        ("Serverless-SQSRedrivePolicy", "SnsDeliveryFailures/Resource"),
        ("AwsSolutions-SQS3", "SnsDeliveryFailures/Resource"),
    }
