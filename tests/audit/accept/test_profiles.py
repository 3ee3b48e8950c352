"""Profiles and rule levels: which rules report at which severity, and the order reports lead
with. The noisy rules and their rates are measured on the real-shapes corpus
(``bench/noise_bench.py``; docs/audit/ci.md, "Profiles")."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import cli, report
from constructs_lib.audit.model import AuditResult, FileRow, Finding
from tests.audit.accept.test_suppressions import REASON, audit, faulty, usage_error
from tests.audit.conftest import write
from tests.audit.test_real_shapes import _files as real_shape_files

# The rules the recommended profile reports as info (docs/audit/ci.md, "Profiles"), by hand.
LOWERED = {"QR013", "QR015", "QR025"}


def rules_file(folder: Path, document: dict[str, Any]) -> Path:
    path = folder / "levels.json"
    path.write_text(json.dumps(document))
    return path


def real_shapes(profile: list[str], tmp_path: Path) -> dict[str, Any]:
    paths = [path for path, _stack in real_shape_files()]
    options = ["--fail-on", "never", *profile, "--output", str(tmp_path / "report.json")]
    code = cli.main([*paths, "--engine", "local", "--quiet", "--format", "json", *options])
    assert code == 0
    document: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    return document


def test_the_default_profile_reports_the_noisy_rules_as_info_and_loses_none(
    tmp_path: Path,
) -> None:
    everything = real_shapes(["--profile", "all"], tmp_path)
    default = real_shapes([], tmp_path)

    def key(f: dict[str, Any]) -> tuple[str, ...]:
        return (f["template"], f["rule_id"], f["resource"], f["message"])

    # the same findings, nothing left out
    assert sorted(map(key, default["findings"])) == sorted(map(key, everything["findings"]))
    severities = {key(f): f["severity"] for f in everything["findings"]}
    lowered: Counter[str] = Counter()
    for finding in default["findings"]:
        if finding["rule_id"] in LOWERED:
            assert severities[key(finding)] == "warning"
            assert finding["severity"] == "info"
            lowered[finding["rule_id"]] += 1
        else:
            assert finding["severity"] == severities[key(finding)]
    # each lowered rule fires on this corpus, and the summary says how many findings it regraded
    assert set(lowered) == LOWERED
    assert default["summary"]["regraded"] == {
        rule_id: {"catalog": "warning", "reported": "info", "findings": count}
        for rule_id, count in sorted(lowered.items())
    }
    assert everything["summary"]["regraded"] == {}
    warnings = default["summary"]["by_severity"]["warning"]
    assert warnings == everything["summary"]["by_severity"]["warning"] - sum(lowered.values())


def test_a_rules_level_in_the_suppressions_file_regrades_or_turns_off(
    engine_name: str, tmp_path: Path
) -> None:
    levels = rules_file(
        tmp_path, {"rules": {"QR028": "error", "QR012": {"level": "off", "reason": REASON}}}
    )
    code, document = audit(
        engine_name,
        [write(tmp_path, "a.json", faulty())],
        "--suppressions",
        str(levels),
        out=tmp_path,
    )
    by_rule = {f["rule_id"]: f for f in document["findings"]}
    assert by_rule["QR028"]["severity"] == "error"
    off = by_rule["QR012"]
    assert off["suppression"] == "external"
    assert f"{REASON} ({levels} rules.QR012)" == off["justification"]
    summary = document["summary"]
    assert summary["by_severity"] == {"error": 1, "warning": 0, "info": 0}
    assert summary["suppressed"] == 1
    assert summary["regraded"] == {
        "QR028": {"catalog": "warning", "reported": "error", "findings": 1}
    }
    assert code == 1  # QR028 is an error now


def test_the_files_level_wins_over_the_profile(tmp_path: Path) -> None:
    template = faulty()
    template["Resources"].pop("DlqAge")  # QR025 on the DLQ: info under the recommended profile
    levels = rules_file(tmp_path, {"rules": {"QR025": "warning"}})
    _, default = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    _, chosen = audit(
        "local", [write(tmp_path, "a.json", template)], "--suppressions", str(levels), out=tmp_path
    )
    [before] = [f for f in default["findings"] if f["rule_id"] == "QR025"]
    [after] = [f for f in chosen["findings"] if f["rule_id"] == "QR025"]
    assert (before["severity"], after["severity"]) == ("info", "warning")


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        pytest.param({"QR012": False}, "off gives no reason", id="off-without-reason"),
        pytest.param({"QR012": "off"}, "off gives no reason", id="off-string-without-reason"),
        pytest.param(
            {"QR012": {"level": "off", "reason": "ok"}}, "shorter than 10", id="off-short-reason"
        ),
        pytest.param({"QR028": "loud"}, "'loud' is not a level", id="unknown-level"),
        pytest.param({"QR999": "info"}, "'QR999' is not a rule", id="unknown-rule"),
        pytest.param({"QR902": "info"}, "QR902 cannot be turned down", id="qr902"),
        pytest.param(["QR025"], "rules is not a mapping", id="not-a-mapping"),
    ],
)
def test_a_wrong_rules_level_is_a_usage_error(
    rules: Any, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    levels = rules_file(tmp_path, {"rules": rules})
    template = write(tmp_path, "a.json", faulty())
    error = usage_error([str(template), "--engine", "local", "--suppressions", str(levels)], capsys)
    assert says in error


def test_an_unknown_profile_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write(tmp_path, "a.json", faulty())
    error = usage_error([str(template), "--profile", "strict"], capsys)
    assert "invalid choice: 'strict'" in error


# --- reports lead with what matters most ----------------------------------------------------------


def _finding(rule_id: str, severity: str, template: str, suppression: str = "") -> Finding:
    return Finding(
        rule_id, severity, template, "stack", "Res", "Res", f"{rule_id} msg", "fix", suppression
    )  # type: ignore[arg-type]


def test_human_formats_list_by_state_then_severity_then_impact() -> None:
    # in report order (by template), the least important come first
    findings = [
        _finding("QR013", "info", "a.json"),
        _finding("QR001", "error", "b.json", suppression="external"),
        _finding("QR024", "warning", "c.json"),
        _finding("QR012", "error", "d.json"),  # exposure
        _finding("QR018", "error", "e.json"),  # messages lost
        _finding("QR010", "warning", "f.json"),  # dead letters unseen
    ]
    result = AuditResult(findings, [FileRow(f.template, "s", "ok", "", 1) for f in findings], 6)

    table = report.render_table(result)
    lines = table.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("SEVERITY  RULE"))
    order = [line.split()[1] for line in lines[header + 1 : header + 7]]
    assert order == ["QR018", "QR012", "QR010", "QR024", "QR013", "QR001"]
    markdown = report.render_markdown(result)
    start = markdown.index("| Severity | Rule |")  # after the fleet view's rule table
    positions = [markdown.index(f"| {rule_id} |", start) for rule_id in order]
    assert positions == sorted(positions)
    # the machine formats keep report order
    listed = [f["rule_id"] for f in json.loads(report.render_json(result))["findings"]]
    assert listed == ["QR013", "QR001", "QR024", "QR012", "QR018", "QR010"]


# --- the in-app plugin takes the same profiles ---------------------------------------------------


def _plugin_findings(profile: str, tmp_path: Path) -> dict[str, str]:
    """Rule id -> severity of the plugin's findings on a queue and DLQ without alarms."""
    aws_cdk = pytest.importorskip("aws_cdk")
    from aws_cdk import aws_sqs as sqs

    from constructs_lib.checks import QueueResilienceChecks

    app = aws_cdk.App(outdir=str(tmp_path / profile))
    stack = aws_cdk.Stack(app, "Raw")
    dlq = sqs.Queue(stack, "Dlq", enforce_ssl=True, retention_period=aws_cdk.Duration.days(14))
    sqs.Queue(
        stack,
        "Source",
        enforce_ssl=True,
        dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=5, queue=dlq),
    )
    plugin = QueueResilienceChecks(fail_on="never", profile=profile)
    aws_cdk.Validations.of(app).add_plugins(plugin)
    app.synth()
    return {f.rule_id: f.severity for f in plugin.findings}


def test_the_in_app_plugin_takes_a_profile(tmp_path: Path) -> None:
    everything = _plugin_findings("all", tmp_path)
    recommended = _plugin_findings("recommended", tmp_path)

    assert everything["QR025"] == "warning"
    assert recommended["QR025"] == "info"
    # in-flight messages unwatched, dead letters unseen: warnings in both
    assert recommended["QR009"] == everything["QR009"] == "warning"
    assert recommended["QR010"] == everything["QR010"] == "warning"
    assert set(recommended) == set(everything)
