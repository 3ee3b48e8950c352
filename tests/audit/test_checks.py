"""The in-app validation plugin on a synthesized raw-L2 app (plain sqs.Queue + SqsEventSource).

One synth serves every test here: the app is built with the plugin in report-only mode, and its
cloud assembly is audited again by the Spark job, which must agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

aws_cdk = pytest.importorskip("aws_cdk")

from aws_cdk import Acknowledgment, App, Aspects, Duration, Stack, Validations  # noqa: E402
from aws_cdk import aws_lambda as lambda_  # noqa: E402
from aws_cdk import aws_lambda_event_sources as sources  # noqa: E402
from aws_cdk import aws_s3 as s3  # noqa: E402
from aws_cdk import aws_s3_notifications as s3n  # noqa: E402
from aws_cdk import aws_sqs as sqs  # noqa: E402

from constructs_lib.audit.engines import AuditInputs  # noqa: E402
from constructs_lib.audit.inputs import discovery  # noqa: E402
from constructs_lib.checks import PLUGIN_NAME, QueueResilienceChecks  # noqa: E402
from tests.audit.conftest import EngineAudit  # noqa: E402


@dataclass
class Synth:
    outdir: Path
    plugin: QueueResilienceChecks


@pytest.fixture(scope="module")
def raw_app(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """Three pipelines built the way CDK's defaults build them, with no resilience settings."""
    outdir = tmp_path_factory.mktemp("raw-l2")
    app = App(outdir=str(outdir))
    stack = Stack(app, "RawStack")
    code = lambda_.Code.from_inline("def handler(event, context):\n    return None\n")
    # Pipeline 1: a queue without a DLQ, consumed by a 30 s function; visibility left at 30 s.
    orders = sqs.Queue(stack, "Orders")
    slow = lambda_.Function(
        stack,
        "Slow",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=code,
        timeout=Duration.seconds(30),
    )
    slow.add_event_source(sources.SqsEventSource(orders))
    # Pipeline 2: a DLQ with defaults everywhere and maxReceiveCount 3.
    dlq = sqs.Queue(stack, "PaymentsDlq")
    payments = sqs.Queue(
        stack, "Payments", dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=3, queue=dlq)
    )
    fast = lambda_.Function(
        stack, "Fast", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=code
    )
    fast.add_event_source(sources.SqsEventSource(payments))
    # Pipeline 3: bucket notifications into a queue under the AWS managed key. CDK refuses an SNS
    # subscription to such a queue but writes this one (Custom::S3BucketNotifications).
    uploads = sqs.Queue(stack, "Uploads", encryption=sqs.QueueEncryption.KMS_MANAGED)
    s3.Bucket(stack, "Inbox").add_event_notification(
        s3.EventType.OBJECT_CREATED, s3n.SqsDestination(uploads)
    )
    plugin = QueueResilienceChecks(fail_on="never")
    Validations.of(app).add_plugins(plugin)
    app.synth()
    return Synth(outdir, plugin)


def _pairs(findings: list[Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.resource.rstrip("0123456789ABCDEF")) for f in findings}


def test_raw_l2_gets_the_findings_it_deserves(raw_app: Synth) -> None:
    # Expected from CDK's defaults and AWS's numbers:
    # - Orders: no DLQ (QR001); visibility 30 s < 6 x 30 s (QR007, not QR006: 30 >= 30);
    #   no in-flight alarm (QR009); no TLS-only policy (QR013).
    # - Payments: maxReceiveCount 3 < 5 with a Lambda consumer (QR008); both queues keep the
    #   default 4 days, so the DLQ is not longer (QR003); visibility 30 s >= 6 x 3 s default
    #   timeout, so no QR007; no in-flight alarm (QR009); no TLS policy (QR013).
    #   No age alarm watches it or its DLQ (QR025 on both).
    # - PaymentsDlq: no redrive-allow policy (QR004); no depth alarm (QR010); no TLS (QR013).
    # - Uploads: no DLQ (QR001), no in-flight alarm (QR009), its policy (S3's grant) has no TLS
    #   deny (QR013), and S3 cannot use the AWS managed key it is encrypted with (QR029).
    assert _pairs(raw_app.plugin.findings) == {
        ("QR001", "Orders"),
        ("QR009", "Orders"),
        ("QR013", "Orders"),
        ("QR007", "SlowSqsEventSourceRawStackOrders"),
        ("QR003", "Payments"),
        ("QR008", "Payments"),
        ("QR009", "Payments"),
        ("QR013", "Payments"),
        ("QR004", "PaymentsDlq"),
        ("QR010", "PaymentsDlq"),
        ("QR013", "PaymentsDlq"),
        ("QR025", "Payments"),
        ("QR025", "PaymentsDlq"),
        ("QR001", "Uploads"),
        ("QR009", "Uploads"),
        ("QR013", "Uploads"),
        ("QR029", "Uploads"),
    }


def test_findings_name_the_synthesized_template(raw_app: Synth) -> None:
    paths = {Path(f.template).name for f in raw_app.plugin.findings}
    assert paths == {"RawStack.template.json"}


@dataclass
class _Context:
    template_paths: list[str]


def test_fails_synth_report_on_errors(raw_app: Synth) -> None:
    template = str(raw_app.outdir / "RawStack.template.json")
    report = QueueResilienceChecks().validate(_Context([template]))  # type: ignore[arg-type]
    assert report.success is False
    rules = {v.rule_name for v in report.violations}
    assert {"QR001", "QR003", "QR007"} <= rules
    violation = next(v for v in report.violations if v.rule_name == "QR001")
    assert violation.severity == "error"
    # The bare id keeps CDK's acknowledgment id stable; the title leads the description.
    assert violation.description.startswith("Queue without a dead-letter queue: ")
    assert violation.violating_resources[0].template_path == template
    assert violation.fix


def test_report_only_on_warnings_by_default(tmp_path: Path) -> None:
    from tests.audit.conftest import healthy, props, write

    template = healthy("warn")
    props(template, "Source")["VisibilityTimeout"] = 59  # QR007 only, a warning
    path = write(tmp_path, "warn.template.json", template)
    report = QueueResilienceChecks().validate(_Context([str(path)]))  # type: ignore[arg-type]
    assert report.success is True
    assert [v.rule_name for v in report.violations] == ["QR007"]
    strict = QueueResilienceChecks(fail_on="warning").validate(_Context([str(path)]))  # type: ignore[arg-type]
    assert strict.success is False


def test_fails_unknown_fail_on() -> None:
    with pytest.raises(ValueError, match="fail_on='sometimes'"):
        QueueResilienceChecks(fail_on="sometimes")


@pytest.mark.spark
def test_spark_job_agrees_with_plugin(raw_app: Synth, spark_audit: EngineAudit) -> None:
    result = spark_audit(AuditInputs(discovery.discover([str(raw_app.outdir)])))
    assert result.findings == raw_app.plugin.findings


# --- suppressions: template Metadata, CDK acknowledgments -------------------------------------

_REASON = "Drained by the nightly reconciliation job."


def _one_queue_app(
    outdir: Path, fail_on: str, configure: Any = None
) -> tuple[QueueResilienceChecks, dict[str, Any]]:
    """A raw queue without a DLQ: QR001 is its only error (QR009 and QR013 are warnings).
    Returns the plugin and the plugin's part of CDK's validation report."""
    app = App(outdir=str(outdir))
    queue = sqs.Queue(Stack(app, "Solo"), "Jobs")
    if configure is not None:
        configure(app, queue)
    plugin = QueueResilienceChecks(fail_on=fail_on)
    Validations.of(app).add_plugins(plugin)
    app.synth()
    report = json.loads((outdir / "validation-report.json").read_text())
    (mine,) = [r for r in report["pluginReports"] if r["pluginName"] == PLUGIN_NAME]
    return plugin, mine


def _suppress_in_metadata(rule_id: str, reason: str) -> Any:
    def configure(_app: App, queue: sqs.Queue) -> None:
        queue.node.default_child.add_metadata(  # type: ignore[union-attr]
            "cdk_nag", {"rules_to_suppress": [{"id": rule_id, "reason": reason}]}
        )

    return configure


def test_metadata_suppression_is_no_violation_and_does_not_fail(tmp_path: Path) -> None:
    # QR001 is the app's only error: with it suppressed, fail_on="error" lets the synth pass.
    plugin, report = _one_queue_app(tmp_path, "error", _suppress_in_metadata("QR001", _REASON))
    assert report["conclusion"] == "success"
    assert {v["ruleName"] for v in report["violations"]} == {"QR009", "QR013"}
    (accepted,) = [f for f in plugin.findings if f.rule_id == "QR001"]
    assert accepted.suppression == "inSource"
    assert _REASON in accepted.justification
    assert not accepted.decides


def test_metadata_suppression_without_a_real_reason_is_not_honoured(tmp_path: Path) -> None:
    plugin, report = _one_queue_app(tmp_path, "never", _suppress_in_metadata("QR001", "ok"))
    severities = {v["ruleName"]: v["severity"] for v in report["violations"]}
    assert severities["QR001"] == "error"
    assert severities["QR902"] == "warning"
    (qr001,) = [f for f in plugin.findings if f.rule_id == "QR001"]
    assert qr001.suppression == ""
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        _one_queue_app(tmp_path / "strict", "error", _suppress_in_metadata("QR001", "ok"))


def test_cdk_acknowledgment_uses_the_stable_rule_id(tmp_path: Path) -> None:
    def acknowledge(_app: App, queue: sqs.Queue) -> None:
        Validations.of(queue).acknowledge(
            Acknowledgment(id=f"{PLUGIN_NAME}::QR001", reason=_REASON)
        )

    _plugin, report = _one_queue_app(tmp_path, "error", acknowledge)
    assert report["conclusion"] == "success"
    assert "QR001" not in {v["ruleName"] for v in report["violations"]}
    (suppressed,) = report["suppressedViolations"]
    assert suppressed["ruleName"] == "QR001"
    assert suppressed["acknowledgedId"] == "constructs-lib-queue-resilience::QR001"
    assert suppressed["reason"] == _REASON


def test_acknowledgment_written_by_cdk_nag_is_honoured_by_the_fleet_audit(tmp_path: Path) -> None:
    import cdk_nag

    from constructs_lib.audit.engines import local as engine

    def acknowledge(app: App, queue: sqs.Queue) -> None:
        # On the stack: cdk-nag's aspect copies it to every resource below.
        Validations.of(Stack.of(queue)).acknowledge(
            Acknowledgment(id=f"{PLUGIN_NAME}::QR001", reason=_REASON)
        )
        Aspects.of(app).add(cdk_nag.WriteNagSuppressionsToCloudFormationAspect())

    _one_queue_app(tmp_path, "error", acknowledge)
    template = json.loads((tmp_path / "Solo.template.json").read_text())
    (queue_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::SQS::Queue"]
    assert template["Resources"][queue_id]["Metadata"]["cdk_nag"]["rules_to_suppress"] == [
        {"id": f"{PLUGIN_NAME}::QR001", "reason": _REASON}
    ]
    findings = engine.audit_paths([str(tmp_path)]).findings
    (qr001,) = [f for f in findings if f.rule_id == "QR001"]
    assert qr001.suppression == "inSource"
    assert _REASON in qr001.justification
    assert all(f.decides for f in findings if f.rule_id != "QR001")
