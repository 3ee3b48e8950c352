"""The example app as `cdk synth` builds it, judged by cdk-nag, cfn-lint and a snapshot."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from tests.conftest import REPO_ROOT, SynthResult, cfn_lint

# Paths of the resources ResilientQueue creates in the example app.
LIBRARY_PATHS = re.compile(r"^Pipelines/(Orders|Payments)/|/SqsEventSource:")
# The only acknowledgments the library itself makes, each on one resource, with the reason.
LIBRARY_ACKNOWLEDGMENTS = {
    "Serverless-SQSRedrivePolicy",  # a DLQ's own DLQ would hide failures from the DLQ alarm
    "Serverless-LambdaEventSourceMappingDestination",  # SQS mappings have no such destination
    # The SNS delivery-failures queue is an SNS subscription's dead-letter queue, a use the
    # rule does not recognise (it looks for queues' RedrivePolicy only).
    "AwsSolutions-SQS3",
    # The members of a composite alarm carry no actions: the composite pages for them
    # (composite_alarm=True on orders). Two packs want an action on every metric alarm.
    "NIST.800.53.R5-CloudWatchAlarmAction",
    "HIPAA.Security-CloudWatchAlarmAction",
    # The payload bucket (large_payloads on payments): server access logs would need a second
    # bucket per queue, versions would outlive the lifecycle that bounds payloads, and a payload
    # lives only as long as its message, in the queue's region.
    "AwsSolutions-S1",
    "NIST.800.53.R5-S3BucketLoggingEnabled",
    "HIPAA.Security-S3BucketLoggingEnabled",
    "NIST.800.53.R5-S3BucketVersioningEnabled",
    "HIPAA.Security-S3BucketVersioningEnabled",
    "NIST.800.53.R5-S3BucketReplicationEnabled",
    "HIPAA.Security-S3BucketReplicationEnabled",
}
# The AwsSolutions rules acknowledged on a library resource, and where.
SNS_FAILURES_SQS3 = re.compile(r"^Pipelines/Orders/SnsDeliveryFailures/Resource$")
PAYLOAD_BUCKET_S1 = re.compile(r"^Pipelines/Payments/PayloadBucket/Resource$")
ASSET_HASH = re.compile(r"[0-9a-f]{64}")
# The example app's alarm counts as docs/alarms.md states them.
DOCUMENTED_ALARMS = re.compile(
    r"The example app \(`app.py`, what `make run` synthesizes\) has (?P<alarms>\d+) alarms and\s+"
    r"(?P<composites>\d+) composite alarm"
)


def validation_report(assembly: SynthResult) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((assembly.outdir / "validation-report.json").read_text())
    return report


def test_synth_succeeds_without_warnings(example_assembly: SynthResult) -> None:
    assert example_assembly.returncode == 0, example_assembly.output
    assert not re.search(r"\bWARN(ING)?\b|\[Warning", example_assembly.output, re.IGNORECASE), (
        example_assembly.output
    )


def test_every_cdk_nag_pack_ran_and_passed(example_assembly: SynthResult) -> None:
    reports = validation_report(example_assembly)["pluginReports"]
    assert {r["pluginName"] for r in reports} == {
        "AwsSolutions",
        "Serverless",
        "NIST.800.53.R5",
        "HIPAA.Security",
    }
    for report in reports:
        assert report["conclusion"] == "success", report["pluginName"]
        assert report["violations"] == [], report["pluginName"]


def suppressions(assembly: SynthResult) -> list[tuple[str, str, str, str]]:
    """(pack, rule, construct path, reason) of every acknowledged violation."""
    found = []
    for report in validation_report(assembly)["pluginReports"]:
        for suppressed in report.get("suppressedViolations", []):
            for construct in suppressed["violatingConstructs"]:
                found.append(
                    (
                        report["pluginName"],
                        suppressed["ruleName"],
                        construct["constructPath"],
                        suppressed.get("reason", ""),
                    )
                )
    return found


def test_library_resources_need_no_aws_solutions_acknowledgment(
    example_assembly: SynthResult,
) -> None:
    on_library = [
        s
        for s in suppressions(example_assembly)
        if s[0] == "AwsSolutions" and LIBRARY_PATHS.search(s[2])
    ]
    where = {"AwsSolutions-SQS3": SNS_FAILURES_SQS3, "AwsSolutions-S1": PAYLOAD_BUCKET_S1}
    assert sorted((rule, bool(where[rule].match(path))) for _, rule, path, _ in on_library) == [
        ("AwsSolutions-S1", True),
        ("AwsSolutions-SQS3", True),
    ]


def test_library_acknowledges_only_rules_that_cannot_apply(example_assembly: SynthResult) -> None:
    on_library = {s[1] for s in suppressions(example_assembly) if LIBRARY_PATHS.search(s[2])}
    assert on_library == LIBRARY_ACKNOWLEDGMENTS


def test_every_acknowledgment_gives_its_reason(example_assembly: SynthResult) -> None:
    found = suppressions(example_assembly)
    assert found
    for pack, rule, path, reason in found:
        assert len(reason) > 40, (pack, rule, path)


def test_cfn_lint_passes_every_template(example_assembly: SynthResult) -> None:
    templates = sorted(example_assembly.outdir.glob("*.template.json"))
    assert templates
    completed = cfn_lint(templates)  # E3004 (circular dependencies) included
    assert completed.returncode == 0, completed.stdout + completed.stderr


def normalized(template: dict[str, Any]) -> Any:
    """The template with asset hashes replaced, so a handler edit is not a snapshot change."""
    return json.loads(ASSET_HASH.sub("<asset-hash>", json.dumps(template)))


@pytest.mark.parametrize("name", ["Pipelines.template.json"])
def test_template_snapshot(
    example_assembly: SynthResult, snapshot: SnapshotAssertion, name: str
) -> None:
    template = example_assembly.templates()[name]
    assert normalized(template) == snapshot(extension_class=JSONSnapshotExtension)


def test_alarm_counts_are_the_ones_the_docs_state(example_assembly: SynthResult) -> None:
    stated = DOCUMENTED_ALARMS.search((REPO_ROOT / "docs" / "alarms.md").read_text())
    assert stated, "docs/alarms.md no longer states the example app's alarm count"
    types = [
        resource["Type"]
        for template in example_assembly.templates().values()
        for resource in template["Resources"].values()
    ]
    assert types.count("AWS::CloudWatch::Alarm") == int(stated["alarms"])
    assert types.count("AWS::CloudWatch::CompositeAlarm") == int(stated["composites"])
