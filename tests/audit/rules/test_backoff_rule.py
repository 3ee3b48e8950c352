"""QR018 with a consumer that backs off (``constructs_lib.backoff``): the time a failing message
needs to reach the dead-letter queue is the backoff's worst case, not maxReceiveCount x the
visibility timeout.

The numbers are worked out by hand from the backoff's definition (wait after the n-th failed
receive: min(cap, base x factor ** (n - 1)), none after the last; each receive holds a message
for the longer of the visibility timeout and the function timeout plus the wait). The Spark job
judges the same fleet in ``test_composite_alarms.test_spark_job_agrees``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from constructs_lib import backoff
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.model import AuditResult
from tests.audit.conftest import Template, healthy, props, write

# healthy(): maxReceiveCount 5, visibility 60 s, function timeout 10 s. With base 10, factor 2,
# cap 900 the waits are 10, 20, 40, 80 and none after the 5th receive; each receive holds the
# message max(60, 10 + wait): 60 + 60 + 60 + 90 + 60 = 330 s (plain: 5 x 60 = 300 s).
WORST_CASE = 330
SETTINGS = {backoff.ENV_BASE: "10", backoff.ENV_FACTOR: "2.0", backoff.ENV_CAP: "900"}


def _backing_off(
    retention: int, variables: dict[str, Any] | None = None, name: str = "b"
) -> Template:
    template = healthy(name)
    props(template, "Source")["MessageRetentionPeriod"] = retention
    props(template, "Fn")["Environment"] = {
        "Variables": {"LOG_LEVEL": "INFO", **(SETTINGS if variables is None else variables)}
    }
    return template


def _audit(tmp_path: Path, template: Template) -> AuditResult:
    write(tmp_path, "b.template.json", template)
    return engine.audit_paths([str(tmp_path)])


def _pairs(result: AuditResult) -> set[tuple[str, str]]:
    return {(f.rule_id, f.resource) for f in result.findings}


@pytest.mark.parametrize(
    ("retention", "expired"),
    [(WORST_CASE + 1, False), (WORST_CASE, True), (WORST_CASE - 1, True)],
)
def test_the_worst_case_against_the_retention(
    tmp_path: Path, retention: int, expired: bool
) -> None:
    # The plain count x visibility (300 s) is below every retention here: only the backoff can
    # expire the message.
    result = _audit(tmp_path, _backing_off(retention))
    assert _pairs(result) == ({("QR018", "Source")} if expired else set())
    if expired:
        message = result.findings[0].message
        assert f"keeps messages {retention} s" in message
        assert "waits 10, 20, 40, 80, 0 s" in message
        assert f"60 + 60 + 60 + 90 + 60 = {WORST_CASE} s" in message
        assert "consumer b/Fn backs off" in message


def test_the_same_settings_as_the_constructs_write_them(tmp_path: Path) -> None:
    variables = backoff.Backoff(base_seconds=10, factor=2, cap_seconds=900).to_environment()
    assert _pairs(_audit(tmp_path, _backing_off(WORST_CASE, variables))) == {("QR018", "Source")}


def test_the_queues_receive_count_is_what_counts(tmp_path: Path) -> None:
    # The handler's own copy of the receive limit does not change how often SQS delivers.
    variables = {**SETTINGS, backoff.ENV_MAX_RECEIVE_COUNT: "2"}
    assert _pairs(_audit(tmp_path, _backing_off(WORST_CASE, variables))) == {("QR018", "Source")}


def test_no_backoff_variables_keeps_the_plain_rule(tmp_path: Path) -> None:
    assert _pairs(_audit(tmp_path, _backing_off(301, {}))) == set()
    assert _pairs(_audit(tmp_path, _backing_off(300, {}))) == {("QR018", "Source")}


def test_a_variable_the_audit_cannot_resolve_is_unknown(tmp_path: Path) -> None:
    variables = {**SETTINGS, backoff.ENV_CAP: {"Fn::ImportValue": "shared-backoff-cap"}}
    result = _audit(tmp_path, _backing_off(WORST_CASE + 1000, variables))
    assert _pairs(result) == {("QR900", "Fn")}
    assert backoff.ENV_CAP in result.findings[0].message
    assert "QR018" in result.findings[0].message


def test_an_unknown_backoff_does_not_hide_a_plain_expiry(tmp_path: Path) -> None:
    variables = {**SETTINGS, backoff.ENV_CAP: {"Fn::ImportValue": "shared-backoff-cap"}}
    result = _audit(tmp_path, _backing_off(300, variables))
    assert _pairs(result) == {("QR018", "Source")}
    assert "5 receives x 60 s visibility timeout" in result.findings[0].message


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        (backoff.ENV_FACTOR, "fast", "is not a number"),
        (backoff.ENV_BASE, "1.5", "is not a whole number"),
        (backoff.ENV_FACTOR, "11", "outside 1-10"),
        (backoff.ENV_JITTER, True, "is not a number"),
    ],
)
def test_a_value_the_handler_refuses_is_a_finding_on_the_function(
    tmp_path: Path, variable: str, value: Any, says: str
) -> None:
    result = _audit(tmp_path, _backing_off(WORST_CASE + 1000, {**SETTINGS, variable: value}))
    assert _pairs(result) == {("QR018", "Fn")}
    assert variable in result.findings[0].message
    assert says in result.findings[0].message


def test_an_environment_the_audit_cannot_resolve_is_unknown(tmp_path: Path) -> None:
    template = _backing_off(WORST_CASE + 1000)
    props(template, "Fn")["Environment"] = {"Variables": {"Fn::ImportValue": "shared-env"}}
    assert _pairs(_audit(tmp_path, template)) == {("QR900", "Fn")}


def write_fleet(folder: Path) -> None:
    """The shapes above, in one fleet (queue and function names are unique per template)."""
    cases: dict[str, Template] = {
        "below": _backing_off(WORST_CASE + 1, name="below"),
        "at": _backing_off(WORST_CASE, name="at"),
        "unknown": _backing_off(
            WORST_CASE + 1000, {**SETTINGS, backoff.ENV_CAP: {"Fn::ImportValue": "x"}}, "unknown"
        ),
        "refused": _backing_off(WORST_CASE + 1000, {backoff.ENV_FACTOR: "fast"}, "refused"),
    }
    for name, template in cases.items():
        write(folder, f"{name}.template.json", template)


SAM_TEMPLATE = """
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Timeout: 10
    Runtime: python3.12
    Environment:
      Variables:
        CONSTRUCTS_LIB_BACKOFF_BASE_SECONDS: 10
        CONSTRUCTS_LIB_BACKOFF_FACTOR: 2
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
      MessageRetentionPeriod: 330
      RedrivePolicy: {deadLetterTargetArn: !GetAtt JobsDlq.Arn, maxReceiveCount: 5}
  JobsDlq:
    Type: AWS::SQS::Queue
    Properties: {MessageRetentionPeriod: 1209600}
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/
      Handler: app.handler
      Events:
        Jobs:
          Type: SQS
          Properties: {Queue: !GetAtt Jobs.Arn, BatchSize: 10}
"""


def test_sam_globals_carry_the_backoff_to_the_function(tmp_path: Path) -> None:
    # Globals' environment reaches the expanded function: 330 s needed, 330 s kept.
    write(tmp_path, "sam-backoff.yaml", SAM_TEMPLATE)
    result = engine.audit_paths([str(tmp_path)])
    expired = [f for f in result.findings if f.rule_id == "QR018"]
    assert [f.resource for f in expired] == ["Jobs"]
    assert "60 + 60 + 60 + 90 + 60 = 330 s" in expired[0].message
