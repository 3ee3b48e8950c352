"""Findings land on the line that wrote them: SARIF's region, Code Quality's lines, the JSON
report's line and column, the table's ``file:line``, on YAML, JSON, SAM, cdk.out and nested
templates, with both engines. Each expected line is found in the fixture's own text."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from constructs_lib.audit import report
from constructs_lib.audit.accept import baseline
from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.parse.documents import load_located
from tests.audit.conftest import EngineAudit
from tests.audit.report.test_report import _assert_valid_sarif, sarif_validator  # noqa: F401 (fixture)

# A queue without a dead-letter queue (QR001 on the queue), encryption turned off (QR012, about
# SqsManagedSseEnabled), consumed by a function that outlasts its visibility timeout (QR006 on
# the mapping).
YAML_TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Description: orders
Resources:
  # the queue
  OrdersQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 10
      SqsManagedSseEnabled: false
  Worker:
    Type: AWS::Lambda::Function
    Properties:
      Timeout: 30
      Runtime: python3.12
      Handler: index.handler
      Role: arn:aws:iam::123456789012:role/worker
      Code: {ZipFile: "def handler(event, context): pass"}
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      EventSourceArn: !GetAtt OrdersQueue.Arn
      FunctionName: !Ref Worker
"""

SAM_TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 10
  Consumer:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: index.handler
      InlineCode: "def handler(event, context): pass"
      Timeout: 30
      Events:
        Work:
          Type: SQS
          Properties:
            Queue: !GetAtt Jobs.Arn
"""

PARENT_TEMPLATE = """\
Resources:
  Child:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: ./child.yaml
      Parameters:
        Retention: "60"
"""

CHILD_TEMPLATE = """\
Parameters:
  Retention:
    Type: Number
    Default: 345600
Resources:


  Inner:
    Type: AWS::SQS::Queue
    Properties:
      MessageRetentionPeriod: !Ref Retention
"""


def position_of(text: str, needle: str) -> tuple[int, int]:
    """The 1-based line and column of ``needle`` in the one line of ``text`` that holds it."""
    (found,) = [
        (i, content.index(needle) + 1)
        for i, content in enumerate(text.splitlines(), 1)
        if needle in content
    ]
    return found


def line_of(text: str, needle: str) -> int:
    return position_of(text, needle)[0]


def as_json(yaml_text: str) -> str:
    """The YAML fixture as a JSON template (short forms as their long forms)."""
    document, _ = load_located("t.yaml", yaml_text.encode())
    return json.dumps(document, indent=2)


def audited(engine_audit: EngineAudit, paths: list[Path]) -> AuditResult:
    """``paths`` audited by ``engine_audit`` (the local engine parsing in one process)."""
    files = discovery.discover([str(p) for p in paths])
    return engine_audit(AuditInputs(files), AuditOptions(workers=1))


def regions(
    result: AuditResult, validator: jsonschema.Draft4Validator
) -> dict[tuple[str, str, str], dict[str, Any] | None]:
    """(file name, rule, resource) -> the SARIF region of that result (None: no region)."""
    document = _assert_valid_sarif(report.render_sarif(result), validator)
    found: dict[tuple[str, str, str], dict[str, Any] | None] = {}
    for entry in document["runs"][0]["results"]:
        (location,) = entry["locations"]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        resource = location.get("logicalLocations", [{}])[0].get("name", "")
        found[(os.path.basename(uri), entry["ruleId"], resource)] = location[
            "physicalLocation"
        ].get("region")
    return found


def test_every_result_has_the_line_of_its_resource_or_property_in_yaml_and_json(
    tmp_path: Path,
    engine_audit: EngineAudit,
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    json_text = as_json(YAML_TEMPLATE)
    yaml_path = tmp_path / "orders.yaml"
    json_path = tmp_path / "orders.json"
    yaml_path.write_text(YAML_TEMPLATE)
    json_path.write_text(json_text)
    result = audited(engine_audit, [yaml_path, json_path])
    found = regions(result, sarif_validator)
    for name, text, key in (
        ("orders.yaml", YAML_TEMPLATE, "{}:"),
        ("orders.json", json_text, '"{}":'),
    ):
        line, column = position_of(text, key.format("OrdersQueue"))
        assert found[(name, "QR001", "OrdersQueue")] == {
            "startLine": line,
            "startColumn": column,
        }
        # about one property: that property's line
        assert found[(name, "QR012", "OrdersQueue")]["startLine"] == line_of(  # type: ignore[index]
            text, key.format("SqsManagedSseEnabled")
        )
        assert found[(name, "QR006", "Mapping")]["startLine"] == line_of(  # type: ignore[index]
            text, key.format("Mapping")
        )
    assert all(region is not None for region in found.values())


def test_columns_count_characters_and_the_report_says_so(
    tmp_path: Path,
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    # A template on one line, with a character beyond U+FFFF (two UTF-16 code units, four UTF-8
    # bytes) before the queue: the column counts it once.
    text = json.dumps(
        {"Description": "orders \U0001f4e6", "Resources": {"Jobs": {"Type": "AWS::SQS::Queue"}}},
        ensure_ascii=False,
    )
    path = tmp_path / "one-line.json"
    path.write_text(text, encoding="utf-8")
    result = engine.audit_files(discovery.discover([str(path)]), workers=1)

    document = _assert_valid_sarif(report.render_sarif(result), sarif_validator)
    (run,) = document["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    before = text[: text.index('"Jobs"')]
    assert len(before.encode("utf-16-le")) // 2 == len(before) + 1  # the two counts differ here
    expected = {"startLine": 1, "startColumn": len(before) + 1}
    assert regions(result, sarif_validator)[("one-line.json", "QR001", "Jobs")] == expected


def test_sam_findings_point_at_the_resources_the_author_wrote(
    tmp_path: Path,
    engine_audit: EngineAudit,
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(SAM_TEMPLATE)
    result = audited(engine_audit, [path])
    found = regions(result, sarif_validator)
    assert found[("template.yaml", "QR001", "Jobs")]["startLine"] == line_of(  # type: ignore[index]
        SAM_TEMPLATE, "  Jobs:"
    )
    # the generated mapping (ConsumerWork) is named Consumer.Work and sits on its function
    assert found[("template.yaml", "QR006", "Consumer.Work")]["startLine"] == line_of(  # type: ignore[index]
        SAM_TEMPLATE, "  Consumer:"
    )
    assert all(region is not None for region in found.values())


def test_nested_children_are_located_in_their_own_file(
    tmp_path: Path,
    engine_audit: EngineAudit,
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    (tmp_path / "parent.yaml").write_text(PARENT_TEMPLATE)
    (tmp_path / "child.yaml").write_text(CHILD_TEMPLATE)
    result = audited(engine_audit, [tmp_path])
    found = regions(result, sarif_validator)
    assert found[("child.yaml", "QR001", "Inner")] == {
        "startLine": line_of(CHILD_TEMPLATE, "Inner:"),
        "startColumn": 3,
    }


@pytest.fixture(scope="module")
def cdk_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real cloud assembly: one queue with a short visibility timeout, path metadata on (the
    CDK CLI's default)."""
    aws_cdk = pytest.importorskip("aws_cdk")
    from aws_cdk import aws_sqs as sqs

    folder = tmp_path_factory.mktemp("app") / "cdk.out"
    app = aws_cdk.App(outdir=str(folder), context={"aws:cdk:enable-path-metadata": True})
    stack = aws_cdk.Stack(app, "Orders")
    sqs.Queue(stack, "OrdersQueue", visibility_timeout=aws_cdk.Duration.seconds(10))
    app.synth()
    return folder


def test_cdk_out_findings_point_at_the_template_line_and_name_the_construct(
    cdk_out: Path,
    engine_audit: EngineAudit,
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    template = cdk_out / "Orders.template.json"
    text = template.read_text()
    (logical_id,) = json.loads(text)["Resources"]  # CDK's hashed id, read, not typed
    result = audited(engine_audit, [cdk_out])
    found = regions(result, sarif_validator)
    assert found[("Orders.template.json", "QR001", logical_id)]["startLine"] == line_of(  # type: ignore[index]
        text, f'"{logical_id}":'
    )
    document = json.loads(report.render_sarif(result))
    paths = {r["properties"]["constructPath"] for r in document["runs"][0]["results"]}
    assert paths == {"Orders/OrdersQueue/Resource"}
    # the people-facing reports name the construct beside the logical id
    beside = f"{logical_id} (Orders/OrdersQueue/Resource)"
    assert beside in report.render_markdown(result)
    assert beside in report.render_table(result)
    assert '<code class="path">Orders/OrdersQueue/Resource</code>' in report.render_html(result)


def test_both_engines_write_the_same_positions(
    tmp_path: Path, local_audit: EngineAudit, spark_audit: EngineAudit
) -> None:
    (tmp_path / "orders.yaml").write_text(YAML_TEMPLATE)
    (tmp_path / "template.yaml").write_text(SAM_TEMPLATE)
    local, on_spark = (audited(each, [tmp_path]) for each in (local_audit, spark_audit))
    for render in (report.render_sarif, report.render_json, report.render_codequality):
        assert render(local) == render(on_spark)


def test_code_quality_json_and_table_carry_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a short path: the table cuts long cells
    path = Path("orders.yaml")
    path.write_text(YAML_TEMPLATE)
    result = engine.audit_files(discovery.discover([str(path)]), workers=1)
    queue_line = line_of(YAML_TEMPLATE, "OrdersQueue:")
    issues = json.loads(report.render_codequality(result))
    assert {i["location"]["lines"]["begin"] for i in issues if i["check_name"] == "QR001"} == {
        queue_line
    }
    findings = json.loads(report.render_json(result))["findings"]
    qr001 = next(f for f in findings if f["rule_id"] == "QR001")
    assert (qr001["line"], qr001["column"]) == (queue_line, 3)
    table = report.render_table(result)
    assert f"{path}:{queue_line} " in table
    assert f"`{path}:{queue_line}`" in report.render_markdown(result)
    assert f"line {queue_line}</p>" in report.render_html(result)


def test_a_file_that_cannot_be_read_has_no_region(
    tmp_path: Path,
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"Resources": {')
    result = engine.audit_files(discovery.discover([str(path)]), workers=1)
    assert regions(result, sarif_validator) == {("broken.json", "QR901", ""): None}
    (issue,) = json.loads(report.render_codequality(result))
    assert issue["location"]["lines"]["begin"] == 1  # GitLab requires a line: the file's first


def test_fingerprints_and_baselines_ignore_a_move(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(YAML_TEMPLATE)
    before = engine.audit_files(discovery.discover([str(path)]), workers=1)
    known = tmp_path / "baseline.json"
    baseline.write(str(known), before.findings)
    # an unrelated edit above every resource moves each finding down three lines
    path.write_text(
        YAML_TEMPLATE.replace("Resources:\n", "Metadata:\n  a: 1\n  b: 2\nResources:\n")
    )
    after = engine.audit_files(discovery.discover([str(path)]), workers=1)
    lines = {(f.rule_id, f.resource): f.line for f in before.findings}
    assert all(f.line == lines[(f.rule_id, f.resource)] + 3 for f in after.findings)

    def fingerprints(result: AuditResult) -> list[str]:
        document = json.loads(report.render_sarif(result))
        return [r["partialFingerprints"] for r in document["runs"][0]["results"]]

    assert fingerprints(before) == fingerprints(after)
    assert [baseline.fingerprint(f) for f in before.findings] == [
        baseline.fingerprint(f) for f in after.findings
    ]
