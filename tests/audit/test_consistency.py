"""What the constructs build, the audit passes: the example app has no error or warning findings.

The example app (app.py) is synthesized once, in-process, with the in-app plugin added next to
its cdk-nag packs; its cloud assembly is then audited by the single-process engine.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from constructs_lib.audit.engines import local as engine

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Synthesized:
    outdir: Path
    plugin_findings: list[object]


@pytest.fixture(scope="module")
def example_app(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    aws_cdk = pytest.importorskip("aws_cdk")
    from constructs_lib.checks import QueueResilienceChecks

    sys.path.insert(0, str(REPO_ROOT))
    try:
        import app as example_module
    finally:
        sys.path.remove(str(REPO_ROOT))
    outdir = tmp_path_factory.mktemp("example-app")
    cdk_app = example_module.build_app(aws_cdk.App(outdir=str(outdir)))
    plugin = QueueResilienceChecks(fail_on="never")
    aws_cdk.Validations.of(cdk_app).add_plugins(plugin)
    cdk_app.synth()
    return Synthesized(outdir, list(plugin.findings))


def test_example_app_has_no_error_or_warning_findings(example_app: Synthesized) -> None:
    result = engine.audit_paths([str(example_app.outdir)])
    # the audit saw the pipelines: two source queues, their two DLQs, and the queue that keeps
    # the orders topic's undeliverable messages
    assert result.queues == 5
    assert [f.rule_id for f in result.findings if f.severity in ("error", "warning")] == []
    assert all(f.status == "ok" for f in result.files)


@pytest.mark.parametrize("profile", ["recommended", "all"])
def test_example_app_passes_under_every_profile(
    example_app: Synthesized, profile: str, tmp_path: Path
) -> None:
    from constructs_lib.audit import cli

    out = tmp_path / "report.json"
    options = ["--profile", profile, "--fail-on", "warning", "--output", str(out)]
    code = cli.main(
        [str(example_app.outdir), "--engine", "local", "--quiet", "--format", "json", *options]
    )
    summary = json.loads(out.read_text())["summary"]
    assert summary["by_severity"]["error"] == summary["by_severity"]["warning"] == 0
    assert summary["queues"] == 5
    assert code == 0


def test_in_app_plugin_agrees(example_app: Synthesized) -> None:
    result = engine.audit_paths([str(example_app.outdir)])
    assert example_app.plugin_findings == result.findings


def test_a_suppression_on_an_example_queue_shows_as_suppressed_not_clean(
    tmp_path: Path,
) -> None:
    """The example app with one deliberate fault on the orders queue (maxReceiveCount 3 with a
    Lambda consumer: QR008), accepted the way a CDK app accepts it: an acknowledgment on the
    ResilientQueue, written into the template by cdk-nag's aspect."""
    aws_cdk = pytest.importorskip("aws_cdk")
    import cdk_nag

    from constructs_lib.audit import report
    from constructs_lib.checks import QueueResilienceChecks

    sys.path.insert(0, str(REPO_ROOT))
    try:
        import app as example_module
    finally:
        sys.path.remove(str(REPO_ROOT))
    reason = "Orders are replayed from the event store, so three attempts are enough."
    cdk_app = example_module.build_app(aws_cdk.App(outdir=str(tmp_path)))
    orders = cdk_app.node.find_child("Pipelines").node.find_child("Orders")
    orders.queue.node.default_child.add_property_override("RedrivePolicy.maxReceiveCount", 3)
    aws_cdk.Validations.of(orders).acknowledge(
        aws_cdk.Acknowledgment(id="constructs-lib-queue-resilience::QR008", reason=reason)
    )
    aws_cdk.Aspects.of(cdk_app).add(cdk_nag.WriteNagSuppressionsToCloudFormationAspect())
    plugin = QueueResilienceChecks(fail_on="warning")
    aws_cdk.Validations.of(cdk_app).add_plugins(plugin)
    cdk_app.synth()

    result = engine.audit_paths([str(tmp_path)])
    (accepted,) = result.findings
    assert (accepted.rule_id, accepted.suppression) == ("QR008", "inSource")
    assert accepted.resource.startswith("Orders") and reason in accepted.justification
    summary = report.summarize(result)
    assert summary["findings"] == 0 and summary["suppressed"] == 1
    assert summary["files_with_findings"] == 1 and summary["files_clean"] == 0
    assert report.exit_code(result.findings, "info") == 0
    assert [f.state for f in plugin.findings] == ["suppressed"]
