"""SAM templates: Serverless functions' SQS events are consumers, judged like any other.

Templates are written here in the shapes SAM applications use (``Globals``, local ``CodeUri``,
``SQSPollerPolicy``, ``!GetAtt Queue.Arn`` events, ``AutoPublishAlias``). Expected findings are
worked out from the rule catalog and AWS's defaults (Lambda timeout 3 s, batching window 0 s):
QR006 when visibility < function timeout, QR007 when it is below 6 x timeout + window, QR014 for
a FIFO queue with a batching window. Every case runs on both engines, which must agree.
"""

from __future__ import annotations

import socket
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditInputs
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.parse.dialects import sam
from tests.audit.conftest import ALARM_TOPIC_ARN, EngineAudit, healthy, props, write

ACCOUNT_ARN = "arn:aws:sqs:us-east-1:123456789012"


def _indent(lines: dict[str, Any], depth: int) -> str:
    pad = " " * depth
    return "".join(f"{pad}{key}: {value}\n" for key, value in lines.items())


def sam_pipeline(
    name: str,
    *,
    visibility: int = 60,
    timeout: int | None = None,
    globals_timeout: int | None = 10,
    event: dict[str, Any] | None = None,
    function: dict[str, Any] | None = None,
    queue_ref: str = "!GetAtt Source.Arn",
    fifo: bool = False,
    transform: str = "AWS::Serverless-2016-10-31",
) -> str:
    """A SAM application: source queue + DLQ (redrive, byQueue allow, TLS-only policy, in-flight,
    depth and age alarms that notify a topic) and a Serverless function consuming the source
    through an SQS event ``Orders`` (batch item failures reported, event count metrics on).

    With the defaults it has no findings: visibility 60 s = 6 x 10 s (Globals) + 0 s window.
    """
    suffix = ".fifo" if fifo else ""
    fifo_line = "      FifoQueue: true\n" if fifo else ""
    globals_block = "Globals:\n  Function:\n    Runtime: python3.12\n    MemorySize: 256\n"
    if globals_timeout is not None:
        globals_block += f"    Timeout: {globals_timeout}\n"
    own = dict(function or {})
    if timeout is not None:
        own["Timeout"] = timeout
    return f"""\
AWSTemplateFormatVersion: '2010-09-09'
Transform: {transform}
Description: orders worker
{globals_block}
Resources:
  Source:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: {name}{suffix}
{fifo_line}      VisibilityTimeout: {visibility}
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt Dlq.Arn
        maxReceiveCount: 5
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: {name}-dlq{suffix}
{fifo_line}      MessageRetentionPeriod: 1209600
      RedriveAllowPolicy:
        redrivePermission: byQueue
        sourceQueueArns:
          - !Sub "arn:${{AWS::Partition}}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:{name}{suffix}"
  QueuePolicy:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues:
        - !Ref Source
        - !Ref Dlq
      PolicyDocument:
        Version: '2012-10-17'
        Statement:
          - Effect: Deny
            Principal: '*'
            Action: 'sqs:*'
            Resource: '*'
            Condition:
              Bool:
                aws:SecureTransport: 'false'
  InFlightAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmActions: [{ALARM_TOPIC_ARN}]
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesNotVisible
      Dimensions:
        - Name: QueueName
          Value: !GetAtt Source.QueueName
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 100
      ComparisonOperator: GreaterThanOrEqualToThreshold
  DlqDepthAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmActions: [{ALARM_TOPIC_ARN}]
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesVisible
      Dimensions:
        - Name: QueueName
          Value: !GetAtt Dlq.QueueName
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 1
      ComparisonOperator: GreaterThanOrEqualToThreshold
      TreatMissingData: notBreaching
  SourceAgeAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmActions: [{ALARM_TOPIC_ARN}]
      Namespace: AWS/SQS
      MetricName: ApproximateAgeOfOldestMessage
      Dimensions:
        - Name: QueueName
          Value: !GetAtt Source.QueueName
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 172800
      ComparisonOperator: GreaterThanOrEqualToThreshold
  DlqAgeAlarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmActions: [{ALARM_TOPIC_ARN}]
      Namespace: AWS/SQS
      MetricName: ApproximateAgeOfOldestMessage
      Dimensions:
        - Name: QueueName
          Value: !GetAtt Dlq.QueueName
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 432000
      ComparisonOperator: GreaterThanOrEqualToThreshold
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/worker/
      Handler: app.handler
{_indent(own, 6)}      Policies:
        - SQSPollerPolicy:
            QueueName: !GetAtt Source.QueueName
      Events:
        Orders:
          Type: SQS
          Properties:
            Queue: {queue_ref}
            FunctionResponseTypes:
              - ReportBatchItemFailures
            MetricsConfig:
              Metrics:
                - EventCount
{_indent(event or {}, 12)}"""


def _defined_elsewhere(name: str) -> dict[str, Any]:
    """A plain template defining a healthy queue pair named ``name``, with no consumer."""
    template = healthy(name)
    template["Resources"].pop("Esm")
    template["Resources"].pop("Fn")
    return template


def _exporter(name: str) -> dict[str, Any]:
    template = _defined_elsewhere(name)
    template["Outputs"] = {
        "QueueArn": {"Value": {"Fn::GetAtt": ["Source", "Arn"]}, "Export": {"Name": f"{name}-arn"}}
    }
    return template


PLAIN_MAPPING_ON_SERVERLESS_FUNCTION: dict[str, Any] = {
    "AWSTemplateFormatVersion": "2010-09-09",
    "Transform": ["AWS::Serverless-2016-10-31"],  # the list form
    "Resources": {
        **{k: v for k, v in healthy("sam-plain-esm")["Resources"].items() if k not in ("Fn",)},
        "Fn": {
            "Type": "AWS::Serverless::Function",
            "Properties": {
                "CodeUri": "./handler",
                "Handler": "index.handler",
                "Runtime": "nodejs22.x",
                "Timeout": 20,
                "Policies": ["AWSLambdaSQSQueueExecutionRole"],
            },
        },
    },
}

REJECTED = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Orphan:
    Type: AWS::SQS::Queue
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/
      Handler: app.handler
      Runtime: python3.12
      Events:
        Orders:
          Type: SQS
          Properties:
            BatchSize: 5
  Esm:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      EventSourceArn: !GetAtt Orphan.Arn
      FunctionName: !Ref Worker
"""


@dataclass(frozen=True)
class SamCase:
    id: str
    files: dict[str, Callable[[str], str | dict[str, Any]]]  # file name -> builder(case id)
    expected: dict[str, frozenset[tuple[str, str]]]  # file name -> {(rule, resource)}


def _case(
    case_id: str,
    build: Callable[[str], str | dict[str, Any]],
    expected: set[tuple[str, str]],
    **others: tuple[Callable[[str], str | dict[str, Any]], set[tuple[str, str]]],
) -> SamCase:
    files = {f"{case_id}.yaml": build, **{f"{case_id}-{k}.json": v[0] for k, v in others.items()}}
    wanted = {f"{case_id}.yaml": frozenset(expected)}
    wanted.update({f"{case_id}-{k}.json": frozenset(v[1]) for k, v in others.items()})
    return SamCase(case_id, files, wanted)


ORDERS = "Worker.Orders"  # the mapping SAM generates for event Orders of function Worker

CASES = [
    # 60 s = 6 x 10 s from Globals.Function.Timeout: exactly enough.
    _case("sam-globals-clean", lambda n: sam_pipeline(n), set()),
    # Globals 11 s: 6 x 11 = 66 > 60 >= 11.
    _case("sam-globals-qr007", lambda n: sam_pipeline(n, globals_timeout=11), {("QR007", ORDERS)}),
    # The function's own 70 s overrides Globals' 10 s: 60 < 70.
    _case("sam-own-timeout-qr006", lambda n: sam_pipeline(n, timeout=70), {("QR006", ORDERS)}),
    # The function's own 5 s overrides Globals' 10 s: 6 x 5 = 30 <= 60, clean.
    _case("sam-own-timeout-clean", lambda n: sam_pipeline(n, timeout=5), set()),
    # No timeout anywhere: Lambda's 3 s; 6 x 3 = 18 > 17.
    _case(
        "sam-default-timeout-qr007",
        lambda n: sam_pipeline(n, globals_timeout=None, visibility=17),
        {("QR007", ORDERS)},
    ),
    _case(
        "sam-default-timeout-clean",
        lambda n: sam_pipeline(n, globals_timeout=None, visibility=18),
        set(),
    ),
    # The batching window counts: 6 x 10 + 5 = 65 > 60.
    _case(
        "sam-window-qr007",
        lambda n: sam_pipeline(n, event={"MaximumBatchingWindowInSeconds": 5}),
        {("QR007", ORDERS)},
    ),
    # FIFO with a window is invalid (QR014); 61 = 6 x 10 + 1, so no QR007.
    _case(
        "sam-fifo-window-qr014",
        lambda n: sam_pipeline(
            n, fifo=True, visibility=61, event={"MaximumBatchingWindowInSeconds": 1}
        ),
        {("QR014", ORDERS)},
    ),
    # Maximum concurrency 1 is below Lambda's minimum of 2 (QR014); the filter deletes what it
    # does not match (QR019, information); every other property passes.
    _case(
        "sam-scaling-qr014",
        lambda n: sam_pipeline(
            n,
            event={
                "BatchSize": 5,
                "Enabled": "true",
                "ScalingConfig": "{MaximumConcurrency: 1}",
                "FilterCriteria": '{Filters: [{Pattern: \'{"body": {"kind": ["order"]}}\'}]}',
            },
        ),
        {("QR014", ORDERS), ("QR019", ORDERS)},
    ),
    # AutoPublishAlias points the mapping at an alias; the function's 20 s still counts: 120 > 60.
    _case(
        "sam-alias-qr007",
        lambda n: sam_pipeline(n, timeout=20, function={"AutoPublishAlias": "live"}),
        {("QR007", ORDERS)},
    ),
    # The queue is imported (exported by a plain template): 6 x 15 = 90 > 60 >= 15.
    _case(
        "sam-import",
        lambda n: sam_pipeline(f"{n}-unused", timeout=15, queue_ref=f"!ImportValue {n}-arn"),
        {("QR007", ORDERS)},
        exporter=(lambda n: _exporter(n.removesuffix("-exporter")), set()),
    ),
    # A literal ARN of a queue another template defines: 6 x 11 = 66 > 60.
    _case(
        "sam-literal-arn",
        lambda n: sam_pipeline(f"{n}-unused", timeout=11, queue_ref=f"{ACCOUNT_ARN}:{n}-definer"),
        {("QR007", ORDERS)},
        definer=(lambda n: _defined_elsewhere(n), set()),
    ),
    # A literal ARN of a queue no audited template defines: the consumer cannot be judged.
    _case(
        "sam-literal-arn-unknown",
        lambda n: sam_pipeline(n, queue_ref=f"{ACCOUNT_ARN}:nobody-defines-this"),
        {("QR900", ORDERS)},
    ),
]


def _plain_mapping(_name: str) -> dict[str, Any]:
    return PLAIN_MAPPING_ON_SERVERLESS_FUNCTION


def _rejected(_name: str) -> str:
    return REJECTED


EXTRA = [
    # A plain mapping naming a Serverless function gets its 20 s timeout: 6 x 20 = 120 > 60.
    SamCase(
        "plain-esm",
        {"sam-plain-esm.json": _plain_mapping},
        {"sam-plain-esm.json": frozenset({("QR007", "Esm")})},
    ),
    # The translator rejects the template (an SQS event without Queue): a QR900 note for the
    # template; the plain queue is still judged; the plain mapping's function is not known.
    SamCase(
        "rejected",
        {"sam-rejected.yaml": _rejected},
        {
            "sam-rejected.yaml": frozenset(
                {
                    ("QR900", ""),
                    ("QR001", "Orphan"),
                    ("QR009", "Orphan"),
                    ("QR013", "Orphan"),
                    ("QR900", "Esm"),
                }
            )
        },
    ),
]
ALL_CASES = CASES + EXTRA


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sam-corpus")
    for case in ALL_CASES:
        for file, build in case.files.items():
            write(folder, file, build(file.rsplit(".", 1)[0]))
    return folder


@pytest.fixture(scope="module")
def result(engine_audit: EngineAudit, corpus: Path) -> AuditResult:
    return engine_audit(AuditInputs(discovery.discover([str(corpus)])))


@pytest.fixture(scope="module")
def local_result(local_audit: EngineAudit, corpus: Path) -> AuditResult:
    return local_audit(AuditInputs(discovery.discover([str(corpus)])))


def by_file(findings: list[Finding]) -> dict[str, set[tuple[str, str]]]:
    grouped: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for finding in findings:
        grouped[Path(finding.template).name].add((finding.rule_id, finding.resource))
    return grouped


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_sam_case(result: AuditResult, case: SamCase) -> None:
    found = by_file(result.findings)
    for file, expected in case.expected.items():
        assert found.get(file, set()) == expected, file


def test_every_sam_file_is_read(result: AuditResult) -> None:
    files = {Path(f.file).name: f.status for f in result.files}
    assert set(files) == {file for case in ALL_CASES for file in case.files}
    assert set(files.values()) == {"ok"}


def test_engines_agree(local_result: AuditResult, result: AuditResult) -> None:
    assert result.findings == local_result.findings
    assert result.queues == local_result.queues


def test_rejection_note_says_why(result: AuditResult) -> None:
    (note,) = [
        f for f in result.findings if f.template.endswith("sam-rejected.yaml") and f.resource == ""
    ]
    assert note.severity == "info"
    assert "aws-sam-translator" in note.message
    assert "Missing required property 'Queue'" in note.message
    assert "[Worker.Orders]" in note.message  # the event as the author wrote it


def test_mapping_findings_name_the_event(result: AuditResult) -> None:
    mapping = [f for f in result.findings if f.template.endswith("sam-globals-qr007.yaml")]
    assert [(f.resource, f.queue) for f in mapping] == [(ORDERS, "Source")]
    assert "6 x 11 s function timeout" in mapping[0].message


# --- the expansion itself -------------------------------------------------------------------------

DEAD_LETTER = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Failures:
    Type: AWS::SQS::Queue
  Notifier:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: notifier/
      Handler: app.handler
      Runtime: python3.12
      DeadLetterQueue:
        Type: SQS
        TargetArn: !GetAtt Failures.Arn
      Events:
        Topic:
          Type: SNS
          Properties:
            Topic: arn:aws:sns:us-east-1:123456789012:orders
            SqsSubscription: true
"""


def _load(text: str) -> dict[str, Any]:
    from constructs_lib.audit.parse.documents import load_document

    return load_document("t.yaml", text.encode())


def test_dead_letter_queue_becomes_dead_letter_config() -> None:
    document = _load(DEAD_LETTER)
    expansion = sam.expand(document, sam.default_parameter_values(document))
    assert expansion.problem is None
    function = expansion.document["Resources"]["Notifier"]
    assert function["Type"] == "AWS::Lambda::Function"
    assert function["Properties"]["DeadLetterConfig"] == {
        "TargetArn": {"Fn::GetAtt": ["Failures", "Arn"]}
    }
    # an SNS event with SqsSubscription makes a queue and a mapping: both are the author's event
    generated = expansion.document["Resources"]
    queues = [k for k, v in generated.items() if v["Type"] == "AWS::SQS::Queue" and k != "Failures"]
    mappings = [k for k, v in generated.items() if v["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert len(queues) == 1 and len(mappings) == 1
    assert expansion.origins[queues[0]] == "Notifier.Topic"
    assert expansion.origins[mappings[0]] == "Notifier.Topic"
    # the input is not changed: a rejected template falls back to it
    assert document["Resources"]["Notifier"]["Type"] == "AWS::Serverless::Function"
    assert document["Resources"]["Notifier"]["Properties"]["CodeUri"] == "notifier/"


def test_without_the_translator_the_rest_is_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an environment without aws-sam-translator (the in-app plugin needs only aws-cdk-lib)
    monkeypatch.setitem(sys.modules, "samtranslator.translator.translator", None)
    document = _load(DEAD_LETTER)
    expansion = sam.expand(document, sam.default_parameter_values(document))
    # THEN the plain queue stays, the Serverless function goes, and the note says why
    assert set(expansion.document["Resources"]) == {"Failures"}
    assert expansion.problem is not None and "not installed" in expansion.problem


def test_plain_templates_are_not_sam() -> None:
    assert not sam.is_sam(healthy("x"))
    assert not sam.is_sam({"Transform": "AWS::LanguageExtensions", "Resources": {}})
    assert sam.is_sam({"Transform": ["AWS::LanguageExtensions", sam.TRANSFORM], "Resources": {}})


OFFLINE = """\
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
Globals:
  Function:
    CodeUri: ./src
    Timeout: 30
    AutoPublishAlias: !Ref Stage
Resources:
  Queue:
    Type: AWS::SQS::Queue
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      Handler: app.handler
      Runtime: python3.12
      Policies:
        - AWSLambdaBasicExecutionRole
        - arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess
      Events:
        Orders:
          Type: SQS
          Properties:
            Queue: !GetAtt Queue.Arn
  Image:
    Type: AWS::Serverless::Function
    Properties:
      PackageType: Image
    Metadata:
      Dockerfile: Dockerfile
      DockerContext: ./image
  Layer:
    Type: AWS::Serverless::LayerVersion
    Properties:
      ContentUri: layers/common
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: prod
      DefinitionUri: openapi.yaml
  Shared:
    Type: AWS::Serverless::Application
    Properties:
      Location:
        ApplicationId: arn:aws:serverlessrepo:us-east-1:123456789012:applications/shared
        SemanticVersion: 1.0.0
"""


def test_expansion_needs_no_network_credentials_or_configuration(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from samtranslator.translator import arn_generator

    for variable in (
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")  # a real boto3 session would fail
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "missing-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "missing-credentials"))
    monkeypatch.setattr(arn_generator.ArnGenerator, "BOTO_SESSION_REGION_NAME", None)
    arn_generator._get_region_from_session.cache_clear()

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the audit opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    document = _load(OFFLINE)
    expansion = sam.expand(document, sam.default_parameter_values(document))
    assert expansion.problem is None
    resources = expansion.document["Resources"]
    assert resources["Worker"]["Type"] == "AWS::Lambda::Function"
    assert resources["Image"]["Type"] == "AWS::Lambda::Function"
    assert resources["Shared"]["Type"] == "AWS::CloudFormation::Stack"
    mapping = resources["WorkerOrders"]
    assert mapping["Type"] == "AWS::Lambda::EventSourceMapping"
    alias = mapping["Properties"]["FunctionName"]["Ref"]
    assert resources[alias]["Type"] == "AWS::Lambda::Alias"
    assert expansion.origins["WorkerOrders"] == "Worker.Orders"


def test_alias_and_version_resolve_to_their_function_in_plain_templates(tmp_path: Path) -> None:
    # GIVEN plain CloudFormation: one mapping names an alias, another a version, of a 70 s
    # function; visibility 60 s < 70 s, so each mapping is QR006 once its function is known.
    template = healthy("plain-alias")
    props(template, "Fn")["Timeout"] = 70
    template["Resources"]["Version"] = {
        "Type": "AWS::Lambda::Version",
        "Properties": {"FunctionName": {"Ref": "Fn"}},
    }
    template["Resources"]["Alias"] = {
        "Type": "AWS::Lambda::Alias",
        "Properties": {
            "Name": "live",
            "FunctionName": {"Ref": "Fn"},
            "FunctionVersion": {"Fn::GetAtt": ["Version", "Version"]},
        },
    }
    props(template, "Esm")["FunctionName"] = {"Ref": "Alias"}
    template["Resources"]["EsmOnVersion"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "EventSourceArn": {"Fn::GetAtt": ["Source", "Arn"]},
            "FunctionName": {"Ref": "Version"},
        },
    }
    path = write(tmp_path, "alias.template.json", template)
    found = {(f.rule_id, f.resource) for f in engine.audit_paths([str(path)]).findings}
    assert found == {("QR006", "Esm"), ("QR006", "EsmOnVersion")}
