"""Parsing and resolution: YAML short forms, cross-stack imports, literal ARNs, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.report import summarize
from tests.audit.conftest import healthy, props, write

YAML_PIPELINE = """\
AWSTemplateFormatVersion: 2010-09-09
Parameters:
  Env:
    Type: String
Resources:
  Source:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Join ["-", [yaml, orders]]
      VisibilityTimeout: 30
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt Dlq.Arn
        maxReceiveCount: 5
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "${AWS::StackName}-dlq"
      MessageRetentionPeriod: 1209600
      RedriveAllowPolicy:
        redrivePermission: byQueue
        sourceQueueArns:
          - !Sub arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:yaml-orders
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Timeout: 10
  Esm:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      EventSourceArn: !GetAtt [Source, Arn]
      FunctionName: !Ref Fn
  DlqDepth:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesVisible
      Dimensions:
        - Name: QueueName
          Value: !GetAtt Dlq.QueueName
  Policy:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues: [!Ref Source, !Ref Dlq]
      PolicyDocument:
        Statement:
          - Effect: Deny
            Principal: "*"
            Action: "sqs:*"
            Resource: "*"
            Condition: {Bool: {"aws:SecureTransport": false}}
"""


def pairs(result: AuditResult) -> set[tuple[str, str, str]]:
    return {(Path(f.template).name, f.rule_id, f.resource) for f in result.findings}


def test_yaml_short_forms_resolve(tmp_path: Path) -> None:
    # GIVEN a YAML template whose references all use short forms (!Ref, !GetAtt, !Sub, !Join)
    path = write(tmp_path, "yaml-stack.yaml", YAML_PIPELINE)
    result = engine.audit_paths([str(path)])
    # THEN the consumer and its function are found: visibility 30 < 6 x 10 -> QR007 on Esm;
    # the DLQ (named via !Sub with the stack name) is found, so QR004/QR010 do not fire;
    # the missing alarms are the source's in-flight alarm (QR009) and both queues' age alarms
    # (QR025), and the DLQ's depth alarm notifies no one (QR024).
    assert pairs(result) == {
        ("yaml-stack.yaml", "QR007", "Esm"),
        ("yaml-stack.yaml", "QR009", "Source"),
        ("yaml-stack.yaml", "QR024", "DlqDepth"),
        ("yaml-stack.yaml", "QR025", "Source"),
        ("yaml-stack.yaml", "QR025", "Dlq"),
    }
    assert result.files[0].status == "ok"


def test_yaml_import_value_short_form(tmp_path: Path) -> None:
    exporter = healthy("shared")
    exporter["Outputs"] = {
        "DlqArn": {"Value": {"Fn::GetAtt": ["Dlq", "Arn"]}, "Export": {"Name": "shared-dlq-arn"}}
    }
    write(tmp_path, "exporter.template.json", exporter)
    write(
        tmp_path,
        "importer.yaml",
        """\
Resources:
  Other:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy:
        deadLetterTargetArn: !ImportValue shared-dlq-arn
        maxReceiveCount: 5
""",
    )
    result = engine.audit_paths([str(tmp_path)])
    # The importer's queue becomes a second source of the shared DLQ, which allows only
    # "shared" by name: QR005 on the DLQ. Without the import resolving, there would be no QR005.
    assert ("exporter.template.json", "QR005", "Dlq") in pairs(result)
    assert not [f for f in result.findings if f.rule_id == "QR900"]


def _split_stacks(tmp_path: Path, dlq_retention: int) -> None:
    """The DLQ lives in one stack and is exported; the source in another imports it."""
    base = healthy("cross")
    dlq_stack = {
        "Resources": {"Dlq": base["Resources"]["Dlq"]},
        "Outputs": {
            "DlqArn": {
                "Value": {"Fn::GetAtt": ["Dlq", "Arn"]},
                "Export": {"Name": "DlqStack:DlqArn"},
            }
        },
    }
    props(dlq_stack, "Dlq")["MessageRetentionPeriod"] = dlq_retention
    for alarm in ("DlqDepth", "DlqAge"):
        dlq_stack["Resources"][alarm] = base["Resources"][alarm]
    dlq_stack["Resources"]["Policy"] = json.loads(json.dumps(base["Resources"]["Policy"]))
    props(dlq_stack, "Policy")["Queues"] = [{"Ref": "Dlq"}]
    source_stack = healthy("cross")
    for logical_id in ("Dlq", "DlqDepth", "DlqAge"):
        source_stack["Resources"].pop(logical_id)
    props(source_stack, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = {
        "Fn::ImportValue": "DlqStack:DlqArn"
    }
    props(source_stack, "Policy")["Queues"] = [{"Ref": "Source"}]
    write(tmp_path, "DlqStack.template.json", dlq_stack)
    write(tmp_path, "SourceStack.template.json", source_stack)


def test_cross_stack_pair_is_clean(tmp_path: Path) -> None:
    _split_stacks(tmp_path, dlq_retention=1209600)
    result = engine.audit_paths([str(tmp_path)])
    assert result.findings == []
    assert result.queues == 2


def test_fails_cross_stack_retention(tmp_path: Path) -> None:
    # GIVEN the DLQ in another stack keeps messages no longer than the source (4 days each)
    _split_stacks(tmp_path, dlq_retention=345600)
    result = engine.audit_paths([str(tmp_path)])
    # THEN the source, in the importing stack, gets QR003 naming the DLQ's stack
    assert pairs(result) == {("SourceStack.template.json", "QR003", "Source")}
    assert "DlqStack/Dlq" in result.findings[0].message


def test_missing_export_is_reported_not_skipped(tmp_path: Path) -> None:
    _split_stacks(tmp_path, dlq_retention=1209600)
    (tmp_path / "DlqStack.template.json").unlink()
    result = engine.audit_paths([str(tmp_path)])
    unresolved = [f for f in result.findings if f.rule_id == "QR900"]
    assert len(unresolved) == 1
    assert unresolved[0].severity == "info"
    assert "DlqStack:DlqArn" in unresolved[0].message
    assert unresolved[0].resource == "Source"


def test_queue_referenced_by_literal_arn(tmp_path: Path) -> None:
    # GIVEN a source that names a FIFO DLQ in another template by a literal ARN
    fifo_dlq = {
        "Resources": {
            "Dlq": {
                "Type": "AWS::SQS::Queue",
                "Properties": {"QueueName": "literal-dlq.fifo", "FifoQueue": True},
            }
        }
    }
    source = {
        "Resources": {
            "Source": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "QueueName": "literal",
                    "RedrivePolicy": json.dumps(
                        {  # CloudFormation also takes the policy as a JSON string
                            "deadLetterTargetArn": "arn:aws:sqs:eu-west-1:123456789012:literal-dlq.fifo",
                            "maxReceiveCount": 5,
                        }
                    ),
                },
            }
        }
    }
    write(tmp_path, "dlq.template.json", fifo_dlq)
    write(tmp_path, "source.template.json", source)
    result = engine.audit_paths([str(tmp_path)])
    # THEN the type mismatch is found across templates
    assert ("source.template.json", "QR002", "Source") in pairs(result)
    assert ("dlq.template.json", "QR004", "Dlq") in pairs(result)


def test_parameter_without_value_is_qr900(tmp_path: Path) -> None:
    template = healthy("param")
    template["Parameters"] = {"Visibility": {"Type": "Number"}}
    props(template, "Source")["VisibilityTimeout"] = {"Ref": "Visibility"}
    path = write(tmp_path, "param.template.json", template)
    result = engine.audit_paths([str(path)])
    assert {f.rule_id for f in result.findings} == {"QR900"}
    messages = " ".join(f.message for f in result.findings)
    assert "QR006" in messages and "QR007" in messages and "VisibilityTimeout" in messages


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("broken.json", b'{"Resources": {', "invalid JSON"),
        ("broken.yaml", b"Resources: [unclosed", "invalid YAML"),
        # a file named as a template must be one, whatever it holds
        ("not-a-template.template.json", b'{"name": "package"}', "no AWSTemplateFormatVersion"),
        ("list.template.yaml", b"- a\n- b\n", "not a mapping"),
        ("transform-only.yaml", b"Transform: AWS::Serverless-2016-10-31\n", "no Resources"),
        ("binary.template", b"\xff\xfe\x00\x01", "not UTF-8"),
    ],
)
def test_fails_unparseable_file_becomes_qr901(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    path = write(tmp_path, name, content)
    result = engine.audit_paths([str(path)])
    (finding,) = result.findings
    assert (finding.rule_id, finding.severity, finding.template) == ("QR901", "error", str(path))
    assert reason in finding.message


def test_missing_path_becomes_qr901(tmp_path: Path) -> None:
    result = engine.audit_paths([str(tmp_path / "nowhere.template.json")])
    assert [f.rule_id for f in result.findings] == ["QR901"]
    assert "cannot read" in result.findings[0].message


def test_counts_reconcile(tmp_path: Path) -> None:
    write(tmp_path, "clean.template.json", healthy("clean"))
    bad = healthy("bad")
    props(bad, "Source")["SqsManagedSseEnabled"] = False
    write(tmp_path, "bad.template.json", bad)
    write(tmp_path, "broken.json", b'{"Resources": ')
    write(tmp_path, "sub/also-broken.yaml", b"Resources: [")
    write(tmp_path, "sub/workflow.yaml", b"on: [push]\njobs: {}\n")
    result = engine.audit_paths([str(tmp_path)])
    summary = summarize(result)
    assert (
        summary["files_read"],
        summary["files_clean"],
        summary["files_with_findings"],
        summary["files_unparseable"],
        summary["files_not_templates"],
    ) == (5, 1, 1, 2, 1)
    assert summary["files_read"] == (
        summary["files_clean"]
        + summary["files_with_findings"]
        + summary["files_unparseable"]
        + summary["files_not_templates"]
    )
    assert summary["reconciled"] is True


def test_cloud_assembly_uses_manifest_stack_names(tmp_path: Path) -> None:
    write(tmp_path, "A1B2.template.json", healthy("assembly"))
    write(tmp_path, "tree.json", b'{"tree": {}}')
    write(
        tmp_path,
        "manifest.json",
        json.dumps(
            {
                "version": "55.0.0",
                "artifacts": {
                    "A1B2": {
                        "type": "aws:cloudformation:stack",
                        "properties": {
                            "templateFile": "A1B2.template.json",
                            "stackName": "orders-prod",
                        },
                    },
                    "Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}},
                },
            }
        ),
    )
    assert discovery.discover([str(tmp_path)]) == [
        (str(tmp_path / "A1B2.template.json"), "orders-prod")
    ]


def test_folder_walk_skips_project_files(tmp_path: Path) -> None:
    write(tmp_path, "package.json", b"{}")
    write(tmp_path, "node_modules/x/t.template.json", b"{}")
    write(tmp_path, "stacks/orders.template.yaml", b"Resources: {}")
    assert discovery.discover([str(tmp_path)]) == [
        (str(tmp_path / "stacks" / "orders.template.yaml"), "orders")
    ]


def test_templates_import_without_yaml_or_spark() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['yaml'] = None; sys.modules['pyspark'] = None\n"
        "import constructs_lib.audit.parse.pipeline, constructs_lib.audit.inputs.discovery, "
        "constructs_lib.audit.parse.dialects.cloudformation, constructs_lib.audit.rules, "
        "constructs_lib.audit.model, constructs_lib.audit.engines.local\n"
        "print('ok')"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert completed.stdout.strip() == "ok", completed.stderr
