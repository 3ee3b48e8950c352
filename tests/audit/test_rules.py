"""Each rule on a small inline template, failing and passing (single-process engine).

The Spark job runs the same cases in one job in test_job.py and must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from constructs_lib.audit import engine
from constructs_lib.audit.rules import CATALOG, describe_rules
from tests.audit.cases import CASES, Case
from tests.audit.conftest import write


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_case(case: Case, tmp_path: Path) -> None:
    # GIVEN one template with a known fault (or none)
    path = write(tmp_path, f"{case.id}.template.json", case.build(case.id))
    # WHEN it is audited
    result = engine.audit_paths([str(path)])
    # THEN it gets exactly the expected findings, each with the catalog's severity and fix
    assert {(f.rule_id, f.resource) for f in result.findings} == case.expected
    catalog = {rule_id: (severity, fix) for rule_id, severity, _, fix in describe_rules()}
    for finding in result.findings:
        assert (finding.severity, finding.fix) == catalog[finding.rule_id]
        assert finding.template == str(path)
        assert finding.stack == case.id


def test_every_rule_has_a_failing_and_a_passing_case() -> None:
    failing = {rule for c in CASES for rule, _ in c.expected}
    assert failing >= {r.id for r in CATALOG}
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
