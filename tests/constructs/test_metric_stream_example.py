"""The metric stream example of docs/audit/deployed.md: each role holds what the AWS guides list for it
and nothing more, the four cdk-nag packs find nothing, and queue-audit finds no error in it.

The expected statements are written from the guides, not from the synthesized output."""

from __future__ import annotations

import contextlib
import json
import runpy
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, ServerlessChecks

from constructs_lib.audit import cli
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "docs" / "examples" / "metric_stream_app.py"
PACKS = {"AwsSolutions", "Serverless", "NIST.800.53.R5", "HIPAA.Security"}

# Firehose developer guide, "Grant Firehose access to an Amazon S3 destination"
# (https://docs.aws.amazon.com/firehose/latest/dev/controlling-access.html#using-iam-s3): the
# actions a delivery role needs on the bucket and on its objects.
FIREHOSE_S3_ACTIONS = {
    "s3:AbortMultipartUpload",
    "s3:GetBucketLocation",
    "s3:GetObject",
    "s3:ListBucket",
    "s3:ListBucketMultipartUploads",
    "s3:PutObject",
}
# Same section, for a bucket under a KMS key: the key, used through S3 only
# (kms:ViaService s3.<region>.amazonaws.com), for objects under the prefix only
# (kms:EncryptionContext:aws:s3:arn).
FIREHOSE_KMS_ACTIONS = {"kms:Decrypt", "kms:GenerateDataKey"}
# Same guide, "Allow Firehose to assume an IAM role": the trust names the account as external id.
FIREHOSE_PRINCIPAL = "firehose.amazonaws.com"
# CloudWatch user guide, "Trust between CloudWatch and Firehose"
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-metric-streams-trustpolicy.html):
# the principal, with no condition in its trust policy, and the two write actions.
METRIC_STREAMS_PRINCIPAL = "streams.metrics.cloudwatch.amazonaws.com"
METRIC_STREAMS_ACTIONS = {"firehose:PutRecord", "firehose:PutRecordBatch"}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example synthesized with the four packs as validation plugins of its app."""
    outdir = tmp_path_factory.mktemp("cdk.out")

    class CheckedApp(cdk.App):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(outdir=str(outdir), **kwargs)
            cdk.Validations.of(self).add_plugins(
                AwsSolutionsChecks(self),
                ServerlessChecks(self),
                NIST80053R5Checks(self),
                HIPAASecurityChecks(self),
            )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cdk, "App", CheckedApp)
        # a violation fails the synth after the report is written; the test reads the report
        with contextlib.suppress(Exception):
            runpy.run_path(str(EXAMPLE), run_name="__main__")
    return outdir


def template(outdir: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((outdir / "MetricStream.template.json").read_text())
    return document


def resources(outdir: Path, kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]
        for name, resource in template(outdir)["Resources"].items()
        if resource["Type"] == kind
    }


def output_bucket(outdir: Path) -> str:
    """The bucket the delivery stream writes to (the other one holds its access logs)."""
    (delivery,) = resources(outdir, "AWS::KinesisFirehose::DeliveryStream").values()
    name: str = delivery["ExtendedS3DestinationConfiguration"]["BucketARN"]["Fn::GetAtt"][0]
    return name


def role_named(outdir: Path, principal: str) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (name, props)
        for name, props in resources(outdir, "AWS::IAM::Role").items()
        if props["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": principal}
    ]
    return found


def statements_of(outdir: Path, role: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in resources(outdir, "AWS::IAM::ManagedPolicy").values()
        if {"Ref": role} in policy["Roles"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_firehose_role_trusts_firehose_for_this_account_only(synthesized: Path) -> None:
    _, role = role_named(synthesized, FIREHOSE_PRINCIPAL)
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"] == {"StringEquals": {"sts:ExternalId": {"Ref": "AWS::AccountId"}}}


def test_firehose_role_writes_only_the_output_bucket(synthesized: Path) -> None:
    name, _ = role_named(synthesized, FIREHOSE_PRINCIPAL)
    bucket = output_bucket(synthesized)
    bucket_arn = {"Fn::GetAtt": [bucket, "Arn"]}
    storage, encryption = statements_of(synthesized, name)
    assert storage["Effect"] == "Allow"
    assert actions(storage) == FIREHOSE_S3_ACTIONS
    assert storage["Resource"] == [bucket_arn, {"Fn::Join": ["", [bucket_arn, "/*"]]}]
    encrypted = resources(synthesized, "AWS::S3::Bucket")[bucket]["BucketEncryption"]
    (by_default,) = encrypted["ServerSideEncryptionConfiguration"]
    assert actions(encryption) == FIREHOSE_KMS_ACTIONS
    assert encryption["Resource"] == by_default["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]
    assert encryption["Condition"] == {
        "StringEquals": {
            "kms:ViaService": {"Fn::Join": ["", ["s3.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
        },
        "StringLike": {
            "kms:EncryptionContext:aws:s3:arn": {"Fn::Join": ["", [bucket_arn, "/metric-stream/*"]]}
        },
    }


def test_metric_stream_role_puts_records_into_the_one_delivery_stream(synthesized: Path) -> None:
    name, role = role_named(synthesized, METRIC_STREAMS_PRINCIPAL)
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Action"] == "sts:AssumeRole"
    assert "Condition" not in trust
    (delivery,) = resources(synthesized, "AWS::KinesisFirehose::DeliveryStream")
    (statement,) = statements_of(synthesized, name)
    assert actions(statement) == METRIC_STREAMS_ACTIONS
    assert statement["Resource"] == {"Fn::GetAtt": [delivery, "Arn"]}


def test_the_stream_sends_the_two_namespaces_as_json_gzipped_under_the_prefix(
    synthesized: Path,
) -> None:
    (stream,) = resources(synthesized, "AWS::CloudWatch::MetricStream").values()
    assert stream["OutputFormat"] == "json"
    assert stream["IncludeFilters"] == [{"Namespace": "AWS/SQS"}, {"Namespace": "AWS/Lambda"}]
    (delivery,) = resources(synthesized, "AWS::KinesisFirehose::DeliveryStream").values()
    destination = delivery["ExtendedS3DestinationConfiguration"]
    assert destination["CompressionFormat"] == "GZIP"
    assert destination["Prefix"] == "metric-stream/"


def test_the_bucket_is_private_encrypted_tls_only_and_outlives_the_audit_window(
    synthesized: Path,
) -> None:
    bucket = resources(synthesized, "AWS::S3::Bucket")[output_bucket(synthesized)]
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    expirations = [r["ExpirationInDays"] for r in bucket["LifecycleConfiguration"]["Rules"]]
    assert min(expirations) > 14  # queue-audit's default --metrics-window
    (policy,) = [
        p
        for p in resources(synthesized, "AWS::S3::BucketPolicy").values()
        if p["Bucket"] == {"Ref": output_bucket(synthesized)}
    ]
    denies = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


def test_the_four_packs_find_nothing(synthesized: Path) -> None:
    report = json.loads((synthesized / "validation-report.json").read_text())
    assert {r["pluginName"] for r in report["pluginReports"]} >= PACKS
    violations = [
        (r["pluginName"], v["ruleName"], c["constructPath"])
        for r in report["pluginReports"]
        for v in r["violations"]
        for c in v["violatingConstructs"]
    ]
    assert violations == []


def test_the_acknowledgments_are_the_known_ones_with_reasons(synthesized: Path) -> None:
    report = json.loads((synthesized / "validation-report.json").read_text())
    acknowledged = {
        (v["ruleName"].split("[")[0], c["constructPath"].removeprefix("MetricStream/"))
        for r in report["pluginReports"]
        if r["pluginName"] in PACKS
        for v in r.get("suppressedViolations", [])
        for c in v["violatingConstructs"]
    }
    assert acknowledged == {
        # Firehose names the objects it writes itself
        ("AwsSolutions-IAM5", "DeliveryPolicy/Resource"),
        # S3 delivers server access logs only to an SSE-S3 bucket
        ("NIST.800.53.R5-S3DefaultEncryptionKMS", "AccessLogs/Resource"),
        ("HIPAA.Security-S3DefaultEncryptionKMS", "AccessLogs/Resource"),
        # CloudWatch keeps the data points itself
        ("NIST.800.53.R5-S3BucketReplicationEnabled", "AccessLogs/Resource"),
        ("NIST.800.53.R5-S3BucketReplicationEnabled", "Output/Resource"),
        ("HIPAA.Security-S3BucketReplicationEnabled", "AccessLogs/Resource"),
        ("HIPAA.Security-S3BucketReplicationEnabled", "Output/Resource"),
        # the library's own: a dead-letter queue has no dead-letter queue
        ("Serverless-SQSRedrivePolicy", "Orders/DeadLetterQueue/Resource"),
    }


def test_queue_audit_finds_no_error(synthesized: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main([str(synthesized), "--engine", "local", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f for f in findings if f["severity"] == "error"] == []
    assert code == 0
