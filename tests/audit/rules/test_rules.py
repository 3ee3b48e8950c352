"""Each rule on a small inline template, failing and passing (single-process engine).

The Spark job runs the same cases in one job in test_job.py and must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.model import Finding
from constructs_lib.audit.rules import CATALOG, behaviour, describe_rules
from tests.audit.conftest import props, write
from tests.support.cases import CASES, Case, write_case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_case(case: Case, tmp_path: Path) -> None:
    # GIVEN one template with a known fault (or none), and the other stacks of its fleet
    path, companions = write_case(tmp_path, case)
    # WHEN they are audited together
    result = engine.audit_paths([str(path), *map(str, companions)])
    # THEN the template gets exactly the expected findings, each with the catalog's severity
    # and fix, and the other stacks none
    assert {(f.rule_id, f.resource) for f in result.findings} == case.expected
    catalog = {rule_id: (severity, fix) for rule_id, severity, _, fix in describe_rules()}
    for finding in result.findings:
        assert (finding.severity, finding.fix) == catalog[finding.rule_id]
        assert finding.template == str(path)
        assert finding.stack == case.id


def test_every_rule_has_a_failing_and_a_passing_case() -> None:
    # The behaviour rules judge observed metrics, which a template has not:
    # test_behaviour_rules.py holds their cases.
    failing = {rule for c in CASES for rule, _ in c.expected}
    assert failing >= {r.id for r in CATALOG} - {r.id for r in behaviour.RULES}
    assert any(not c.expected for c in CASES)


def test_messages_name_the_numbers(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "qr007-window-counts")
    path = write(tmp_path, "t.template.json", case.build("numbers"))
    (finding,) = engine.audit_paths([str(path)]).findings
    # 6 x 10 s + 5 s window = 65 s needed, 60 s given
    assert "60 s" in finding.message and "65 s" in finding.message


def test_fails_qr006_message_names_both_timeouts(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "qr006-function-timeout-above-visibility")
    path = write(tmp_path, "t.template.json", case.build("timeouts"))
    (finding,) = engine.audit_paths([str(path)]).findings
    assert "60 s" in finding.message and "120 s" in finding.message
    assert finding.queue == "Source"


def _findings(case_id: str, tmp_path: Path) -> list[Finding]:
    case = next(c for c in CASES if c.id == case_id)
    path, companions = write_case(tmp_path, case)
    return list(engine.audit_paths([str(path), *map(str, companions)]).findings)


def test_qr017_reports_the_function_once_naming_every_source(tmp_path: Path) -> None:
    # The function reads two queues in two stacks: both queues' contexts see it, one reports.
    (finding,) = _findings("qr017-across-stacks", tmp_path)
    assert (finding.rule_id, finding.resource) == ("QR017", "Fn")
    # 30 reserved against 20 + 20 from the two stacks' mappings
    assert "30" in finding.message and "40" in finding.message
    assert "qr017-across-stacks/Esm 20" in finding.message
    assert "qr017-across-stacks.other/Esm 20" in finding.message


def test_qr017_counts_provisioned_pollers_ten_invocations_each(tmp_path: Path) -> None:
    (finding,) = _findings("qr017-provisioned-pollers", tmp_path)
    assert "25" in finding.message and "Esm 30" in finding.message


def test_qr028_reports_a_function_reading_two_queues_once(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "qr020-pass-arrivals-alarm")
    template = case.build("loop")
    props(template, "Fn")["RecursiveLoop"] = "Allow"
    path = write(tmp_path, "t.template.json", template)
    findings = engine.audit_paths([str(path)]).findings
    assert [(f.rule_id, f.resource) for f in findings] == [("QR028", "Fn")]


@pytest.mark.parametrize(
    ("case_id", "numbers"),
    [
        ("qr015-no-event-count", ["5 receives x 60 s visibility = 300 s"]),
        ("qr016-minimum-above-maximum", ["(20, 10)"]),
        ("qr018-retention-equals-time-to-dlq", ["300 s", "5 receives x 60 s"]),
        ("qr021-smaller-dlq", ["262144 bytes", "131072 bytes"]),
        ("qr022-ten-mib-batch", ["BatchSize 10", "1048576 bytes", "10485760 bytes", "6291456"]),
        ("qr024-no-actions", ["ApproximateNumberOfMessagesNotVisible"]),
        ("qr025-no-source-age-alarm", ["345600 s"]),
        ("qr029-s3-bucket", ["alias/aws/sqs", "S3 (qr029-s3-bucket/Bucket)"]),
        ("qr029-sns-dead-letter", ["SNS dead-letter (qr029-sns-dead-letter/FnSubscription)"]),
    ],
)
def test_new_rule_messages_name_the_numbers(
    case_id: str, numbers: list[str], tmp_path: Path
) -> None:
    (finding,) = _findings(case_id, tmp_path)
    for number in numbers:
        assert number in finding.message, (number, finding.message)
