"""What real templates hold beyond resources: parameter defaults, conditions and ``Fn::If``,
queues other services use as dead-letter queues, and resources the audit cannot read.

Expectations come from CloudFormation's semantics and the rule catalog, worked out by hand. Every
case runs on both engines (the Spark job in ``test_both_engines_agree``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import AuditResult
from tests.audit.conftest import EngineAudit, Template, _alarm, healthy, props, write


def _pairs(result: AuditResult) -> set[tuple[str, str]]:
    return {(f.rule_id, f.resource) for f in result.findings}


def _audit(tmp_path: Path, template: Template | str, name: str = "t.template.json") -> AuditResult:
    write(tmp_path, name, template)
    return engine.audit_paths([str(tmp_path)])


# --- Parameters --------------------------------------------------------------------------------


def _with_visibility_parameter(spec: dict[str, Any], name: str = "params") -> Template:
    template = healthy(name)
    template["Parameters"] = {"QueueVisibility": spec}
    props(template, "Source")["VisibilityTimeout"] = {"Ref": "QueueVisibility"}
    return template


def test_parameter_default_is_judged_and_named(tmp_path: Path) -> None:
    # GIVEN visibility 45 s from a parameter default; the consumer needs 6 x 10 s = 60 s
    result = _audit(tmp_path, _with_visibility_parameter({"Type": "Number", "Default": 45}))
    # THEN QR007, saying where the value came from
    assert _pairs(result) == {("QR007", "Esm")}
    assert (
        "VisibilityTimeout from parameter QueueVisibility (default)" in result.findings[0].message
    )


def test_parameter_default_that_passes_is_clean(tmp_path: Path) -> None:
    result = _audit(tmp_path, _with_visibility_parameter({"Type": "Number", "Default": "60"}))
    assert result.findings == []


def test_ssm_parameter_default_is_not_a_value(tmp_path: Path) -> None:
    # The Default of an SSM parameter type names where the value lives, not the value
    spec = {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/queues/visibility"}
    result = _audit(tmp_path, _with_visibility_parameter(spec))
    assert {f.rule_id for f in result.findings} == {"QR900"}


def test_unknown_value_on_unconsumed_queue_is_no_noise(tmp_path: Path) -> None:
    template = _with_visibility_parameter({"Type": "Number"})
    for logical_id in ("Esm", "Fn"):
        template["Resources"].pop(logical_id)
    assert _audit(tmp_path, template).findings == []


def test_pseudo_parameters_resolve_to_placeholders(tmp_path: Path) -> None:
    # GIVEN a FIFO DLQ named by an ARN built from AWS::Region and AWS::AccountId
    template = healthy("pseudo")
    props(template, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = {
        "Fn::Join": [
            ":",
            ["arn:aws:sqs", {"Ref": "AWS::Region"}, {"Ref": "AWS::AccountId"}, "other-dlq.fifo"],
        ]
    }
    template["Resources"]["Other"] = {
        "Type": "AWS::SQS::Queue",
        "Properties": {"QueueName": "other-dlq.fifo", "FifoQueue": True},
    }
    result = _audit(tmp_path, template)
    # THEN the ARN resolves to that queue: a standard source with a FIFO DLQ
    assert ("QR002", "Source") in _pairs(result)


# --- Conditions ----------------------------------------------------------------------------------


def _conditional_dlq(default: str | None) -> Template:
    """The source's RedrivePolicy and the DLQ both depend on the parameter WithDlq."""
    template = healthy("cond")
    spec: dict[str, Any] = {"Type": "String", "AllowedValues": ["yes", "no"]}
    if default is not None:
        spec["Default"] = default
    template["Parameters"] = {"WithDlq": spec}
    template["Conditions"] = {
        "HasDlq": {"Fn::Equals": [{"Ref": "WithDlq"}, "yes"]},
        "NoDlq": {"Fn::Not": [{"Condition": "HasDlq"}]},
        "Both": {"Fn::And": [{"Condition": "HasDlq"}, {"Fn::Not": [{"Condition": "NoDlq"}]}]},
    }
    redrive = props(template, "Source")["RedrivePolicy"]
    props(template, "Source")["RedrivePolicy"] = {
        "Fn::If": ["HasDlq", redrive, {"Ref": "AWS::NoValue"}]
    }
    props(template, "Policy")["Queues"] = [
        {"Ref": "Source"},
        {"Fn::If": ["HasDlq", {"Ref": "Dlq"}, {"Ref": "AWS::NoValue"}]},
    ]
    template["Resources"]["Dlq"]["Condition"] = "Both"
    template["Resources"]["DlqDepth"]["Condition"] = "HasDlq"
    template["Resources"]["DlqAge"]["Condition"] = "HasDlq"
    return template


def test_condition_true_deploys_the_dlq(tmp_path: Path) -> None:
    assert _audit(tmp_path, _conditional_dlq("yes")).findings == []


def test_condition_false_drops_the_dlq_and_its_redrive(tmp_path: Path) -> None:
    result = _audit(tmp_path, _conditional_dlq("no"))
    # THEN the source has no DLQ, and the DLQ and its alarm, never created, get nothing
    assert _pairs(result) == {("QR001", "Source")}


def test_condition_that_cannot_be_decided_is_reported(tmp_path: Path) -> None:
    result = _audit(tmp_path, _conditional_dlq(None))
    pairs = _pairs(result)
    # THEN every resource the condition touches gets QR900 saying it was judged as if the
    # condition held, and nothing else is reported: the pair is whole under that assumption
    assert pairs == {
        ("QR900", "Dlq"),
        ("QR900", "DlqDepth"),
        ("QR900", "DlqAge"),
        ("QR900", "Source"),
        ("QR900", "Policy"),
    }


# --- Odd resources -----------------------------------------------------------------------------


RAIN_AND_BROKEN = """\
Resources:
  Bucket:
    Type: !Rain::Module "./modules/bucket.yaml"
  Broken:
    Type: AWS::SQS::Queue
    Properties: [not, a, mapping]
  Plain:
    Type: AWS::SQS::Queue
    Properties:
      SqsManagedSseEnabled: false
"""


def test_odd_resources_cost_themselves_not_the_file(tmp_path: Path) -> None:
    result = _audit(tmp_path, RAIN_AND_BROKEN, "rain.yaml")
    pairs = _pairs(result)
    assert ("QR900", "Bucket") in pairs
    assert ("QR901", "Broken") in pairs
    # the rest of the file is still judged
    assert {("QR001", "Plain"), ("QR012", "Plain")} <= pairs
    assert result.files[0].status == "ok"


# --- Queues other services use as dead-letter queues ------------------------------------------


def _service_dlq(feeder: dict[str, Any], alarm_metric: str | None) -> Template:
    """A queue that only a service sends failures to, with a TLS-only policy."""
    template = healthy("svc")
    resources = template["Resources"]
    for logical_id in ("Source", "Esm", "InFlight", "DlqDepth", "SourceAge"):
        resources.pop(logical_id)
    props(template, "Policy")["Queues"] = [{"Ref": "Dlq"}]
    props(template, "Dlq").pop("RedriveAllowPolicy")
    resources["Feeder"] = feeder
    if alarm_metric:
        resources["DlqAlarm"] = _alarm(alarm_metric, "Dlq")
    return template


DLQ_ARN = {"Fn::GetAtt": ["Dlq", "Arn"]}
FEEDERS = {
    "lambda-async": {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Runtime": "python3.12",
            "Handler": "index.handler",
            "Role": "arn:aws:iam::123456789012:role/r",
            "Code": {"ZipFile": "x"},
            "DeadLetterConfig": {"TargetArn": DLQ_ARN},
        },
    },
    "event-invoke-config": {
        "Type": "AWS::Lambda::EventInvokeConfig",
        "Properties": {
            "FunctionName": "worker",
            "Qualifier": "$LATEST",
            "DestinationConfig": {"OnFailure": {"Destination": DLQ_ARN}},
        },
    },
    "eventbridge-rule": {
        "Type": "AWS::Events::Rule",
        "Properties": {
            "EventPattern": {"source": ["orders"]},
            "Targets": [
                {
                    "Id": "t",
                    "Arn": "arn:aws:lambda:us-east-1:123456789012:function:worker",
                    "DeadLetterConfig": {"Arn": DLQ_ARN},
                }
            ],
        },
    },
    "scheduler": {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {
            "ScheduleExpression": "rate(5 minutes)",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {
                "Arn": "arn:aws:lambda:us-east-1:123456789012:function:worker",
                "RoleArn": "arn:aws:iam::123456789012:role/r",
                "DeadLetterConfig": {"Arn": DLQ_ARN},
            },
        },
    },
    "sns-subscription": {
        "Type": "AWS::SNS::Subscription",
        "Properties": {
            "Protocol": "lambda",
            "TopicArn": "arn:aws:sns:us-east-1:123456789012:orders",
            "Endpoint": "arn:aws:lambda:us-east-1:123456789012:function:worker",
            "RedrivePolicy": {"deadLetterTargetArn": DLQ_ARN},
        },
    },
    "pipe-stream": {
        "Type": "AWS::Pipes::Pipe",
        "Properties": {
            "RoleArn": "arn:aws:iam::123456789012:role/r",
            "Source": "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
            "Target": "arn:aws:lambda:us-east-1:123456789012:function:worker",
            "SourceParameters": {
                "KinesisStreamParameters": {
                    "StartingPosition": "LATEST",
                    "DeadLetterConfig": {"Arn": DLQ_ARN},
                }
            },
        },
    },
}


@pytest.mark.parametrize("feeder", sorted(FEEDERS))
def test_service_fed_dlq_needs_only_a_depth_alarm(tmp_path: Path, feeder: str) -> None:
    result = _audit(tmp_path, _service_dlq(FEEDERS[feeder], "ApproximateNumberOfMessagesVisible"))
    # no QR001 (needs no DLQ of its own), no QR009 (no in-flight alarm), no QR004 (no queue redrive)
    assert result.findings == []


@pytest.mark.parametrize("feeder", sorted(FEEDERS))
def test_fails_service_fed_dlq_without_alarm(tmp_path: Path, feeder: str) -> None:
    result = _audit(tmp_path, _service_dlq(FEEDERS[feeder], None))
    assert _pairs(result) == {("QR010", "Dlq")}
    assert "fed by" in result.findings[0].message and "Feeder" in result.findings[0].message


def test_service_fed_dlq_may_alarm_on_messages_sent(tmp_path: Path) -> None:
    # Services call SendMessage, so NumberOfMessagesSent sees their failures: no QR010, no QR011
    result = _audit(tmp_path, _service_dlq(FEEDERS["lambda-async"], "NumberOfMessagesSent"))
    assert result.findings == []


def test_fails_queue_redrive_dlq_alarm_on_messages_sent(tmp_path: Path) -> None:
    # The same alarm on a DLQ that a queue redrives into misses moved messages
    template = healthy("sent")
    template["Resources"]["DlqDepth"] = _alarm("NumberOfMessagesSent", "Dlq")
    assert _pairs(_audit(tmp_path, template)) == {("QR010", "Dlq"), ("QR011", "DlqDepth")}


def test_sns_topic_as_destination_makes_no_dlq(tmp_path: Path) -> None:
    template = _service_dlq(FEEDERS["lambda-async"], "ApproximateNumberOfMessagesVisible")
    template["Resources"]["Topic"] = {"Type": "AWS::SNS::Topic", "Properties": {}}
    props(template, "Feeder")["DeadLetterConfig"]["TargetArn"] = {"Ref": "Topic"}
    # THEN the queue is an ordinary queue again: no DLQ, no in-flight alarm
    assert {("QR001", "Dlq"), ("QR009", "Dlq")} <= _pairs(_audit(tmp_path, template))


# --- Services that send messages to a queue (producers) ---------------------------------------


def _managed_key_queue(name: str) -> Template:
    """The healthy pipeline, its source under the AWS managed key, and no producer yet."""
    template = healthy(name)
    props(template, "Source")["KmsMasterKeyId"] = "alias/aws/sqs"
    return template


def test_sns_subscription_to_a_queue_no_template_defines_is_reported(tmp_path: Path) -> None:
    template = healthy("outbound")
    template["Resources"]["Partner"] = {
        "Type": "AWS::SNS::Subscription",
        "Properties": {
            "TopicArn": "arn:aws:sns:us-east-1:123456789012:orders",
            "Protocol": "sqs",
            "Endpoint": "arn:aws:sqs:us-east-1:210987654321:partner-inbox",
        },
    }
    result = _audit(tmp_path, template)
    # THEN a QR900 on the subscription says which endpoint it could not find
    assert _pairs(result) == {("QR900", "Partner")}
    assert "subscription Endpoint" in result.findings[0].message
    assert "partner-inbox" in result.findings[0].message


def test_eventbridge_target_that_may_not_be_a_queue_makes_no_producer(tmp_path: Path) -> None:
    # GIVEN rule targets a parameter with no default and an import could name: a function, a
    # topic, a bus, or a queue. The audit cannot tell, so it neither guesses nor reports them.
    template = _managed_key_queue("targets")
    template["Parameters"] = {"TargetArn": {"Type": "String"}}
    template["Resources"]["Rule"] = {
        "Type": "AWS::Events::Rule",
        "Properties": {
            "EventPattern": {"source": ["orders.api"]},
            "Targets": [
                {"Id": "a", "Arn": {"Ref": "TargetArn"}},
                {"Id": "b", "Arn": {"Fn::ImportValue": "someone-elses-target"}},
                {"Id": "c", "Arn": "arn:aws:lambda:us-east-1:123456789012:function:worker"},
            ],
        },
    }
    assert _audit(tmp_path, template).findings == []


def test_sns_subscription_of_another_protocol_makes_no_producer(tmp_path: Path) -> None:
    template = _managed_key_queue("email")
    template["Resources"]["Topic"] = {
        "Type": "AWS::SNS::Topic",
        "Properties": {
            "Subscription": [
                {"Protocol": "lambda", "Endpoint": {"Fn::GetAtt": ["Fn", "Arn"]}},
                {"Protocol": "email", "Endpoint": "ops@example.com"},
            ]
        },
    }
    assert _audit(tmp_path, template).findings == []


_BUCKET_STACK: Template = {
    "Resources": {
        "Inbox": {
            "Type": "AWS::S3::Bucket",
            "Properties": {
                "NotificationConfiguration": {
                    "QueueConfigurations": [
                        {
                            "Event": "s3:ObjectCreated:*",
                            "Queue": "arn:aws:sqs:us-east-1:123456789012:uploads",
                        }
                    ]
                }
            },
        }
    }
}


def test_producer_in_another_stack_reaches_the_queue(tmp_path: Path) -> None:
    # GIVEN the queue in one stack and the bucket that notifies it, by literal ARN, in another
    write(tmp_path, "queues.template.json", _managed_key_queue("uploads"))
    write(tmp_path, "buckets.template.json", _BUCKET_STACK)
    result = engine.audit_paths([str(tmp_path)])
    # THEN the queue's stack gets QR029, naming the bucket's stack
    assert {(Path(f.template).name, f.rule_id, f.resource) for f in result.findings} == {
        ("queues.template.json", "QR029", "Source")
    }
    assert "S3 (buckets/Inbox)" in result.findings[0].message


# --- Both engines -------------------------------------------------------------------------------


@pytest.mark.spark
def test_both_engines_agree(tmp_path: Path, spark_audit: EngineAudit) -> None:
    write(tmp_path, "params.template.json", _with_visibility_parameter({"Default": 45}))
    write(tmp_path, "cond-no.template.json", _conditional_dlq("no"))
    write(tmp_path, "cond-unknown.template.json", _conditional_dlq(None))
    write(tmp_path, "rain.yaml", RAIN_AND_BROKEN)
    for feeder, body in FEEDERS.items():
        write(tmp_path, f"{feeder}.template.json", _service_dlq(body, None))
    write(tmp_path, "pipe.template.json", _piped({"Fn::GetAtt": ["Fn", "Arn"]}, window=5))
    write(tmp_path, "parent.yaml", PARENT)
    write(tmp_path, "nested/worker.yaml", CHILD)
    write(tmp_path, "producers/queues.template.json", _managed_key_queue("uploads"))
    write(tmp_path, "producers/buckets.template.json", _BUCKET_STACK)
    files = discovery.discover([str(tmp_path)])
    local = engine.audit_files(files)
    on_spark = spark_audit(AuditInputs(files))
    assert on_spark.findings == local.findings
    overrides = {"*": {"WithDlq": "yes"}, "params": {"QueueVisibility": "60"}}
    with_overrides = engine.audit_files(files, overrides=overrides)
    assert (
        spark_audit(AuditInputs(files), AuditOptions(overrides=overrides)).findings
        == with_overrides.findings
    )
    assert with_overrides.findings != local.findings
    assert {f.rule_id for f in local.findings} >= {
        "QR001",
        "QR007",
        "QR010",
        "QR029",
        "QR900",
        "QR901",
    }


# --- Parameter overrides -----------------------------------------------------------------------


def test_override_for_every_stack_replaces_the_default(tmp_path: Path) -> None:
    write(tmp_path, "t.template.json", _with_visibility_parameter({"Default": 60}))
    result = engine.audit_paths([str(tmp_path)], overrides={"*": {"QueueVisibility": "45"}})
    assert _pairs(result) == {("QR007", "Esm")}
    assert "parameter QueueVisibility (override)" in result.findings[0].message


def test_override_for_one_stack_leaves_the_others(tmp_path: Path) -> None:
    write(tmp_path, "a.template.json", _with_visibility_parameter({"Default": 60}))
    write(tmp_path, "b.template.json", _with_visibility_parameter({"Default": 60}, "other"))
    result = engine.audit_paths([str(tmp_path)], overrides={"a": {"QueueVisibility": "45"}})
    assert {(f.template.rsplit("/", 1)[-1], f.rule_id) for f in result.findings} == {
        ("a.template.json", "QR007")
    }


def test_override_decides_a_condition(tmp_path: Path) -> None:
    write(tmp_path, "t.template.json", _conditional_dlq("yes"))
    result = engine.audit_paths([str(tmp_path)], overrides={"*": {"WithDlq": "no"}})
    assert _pairs(result) == {("QR001", "Source")}


def test_cli_takes_overrides_and_parameter_files(tmp_path: Path) -> None:
    import json

    from constructs_lib.audit import cli

    templates = tmp_path / "templates"
    write(templates, "t.template.json", _with_visibility_parameter({"Default": 60}))
    parameters_file = tmp_path / "params.json"
    parameters_file.write_text(
        json.dumps([{"ParameterKey": "QueueVisibility", "ParameterValue": "45"}])
    )
    out = tmp_path / "out.json"
    base = [str(templates), "--engine", "local", "--format", "json", "--output", str(out)]
    # a parameters file for every stack: QR007 (a warning; exit 0 with --fail-on error)
    assert cli.main([*base, "--parameters-file", str(parameters_file)]) == 0
    assert [f["rule_id"] for f in json.loads(out.read_text())["findings"]] == ["QR007"]
    # an override after the file wins, for that stack only
    assert (
        cli.main(
            [
                *base,
                "--parameters-file",
                str(parameters_file),
                "--parameter-overrides",
                "t:QueueVisibility=60",
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["findings"] == []


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--parameter-overrides", "QueueVisibility", "KEY=VALUE"),
        ("--parameters-file", "missing.json", "cannot read parameters file"),
    ],
)
def test_fails_bad_parameter_option_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    from constructs_lib.audit import cli

    write(tmp_path, "t.template.json", healthy("usage"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main([str(tmp_path), "--engine", "local", option, value])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


# --- EventBridge Pipes -------------------------------------------------------------------------


def _piped(target: Any, window: int | None = None) -> Template:
    """The healthy pair, consumed by a pipe instead of an event source mapping."""
    template = healthy("piped")
    template["Resources"].pop("Esm")
    queue_parameters: dict[str, Any] = {"BatchSize": 10}
    if window is not None:
        queue_parameters["MaximumBatchingWindowInSeconds"] = window
    template["Resources"]["Pipe"] = {
        "Type": "AWS::Pipes::Pipe",
        "Properties": {
            "RoleArn": "arn:aws:iam::123456789012:role/r",
            "Source": {"Fn::GetAtt": ["Source", "Arn"]},
            "Target": target,
            "SourceParameters": {"SqsQueueParameters": queue_parameters},
        },
    }
    return template


def test_pipe_to_lambda_is_a_consumer(tmp_path: Path) -> None:
    # GIVEN visibility 60 s = 6 x 10 s, and a pipe batching window of 5 s: 65 s needed
    template = _piped({"Fn::GetAtt": ["Fn", "Arn"]}, window=5)
    props(template, "Source")["RedrivePolicy"]["maxReceiveCount"] = 3
    pairs = _pairs(_audit(tmp_path, template))
    assert pairs == {("QR007", "Pipe"), ("QR008", "Source")}


def test_pipe_to_lambda_within_limits_is_clean(tmp_path: Path) -> None:
    assert _audit(tmp_path, _piped({"Fn::GetAtt": ["Fn", "Arn"]})).findings == []


def test_pipe_to_another_target_says_what_it_cannot_judge(tmp_path: Path) -> None:
    template = _piped("arn:aws:states:us-east-1:123456789012:stateMachine:orders")
    props(template, "Source")["RedrivePolicy"]["maxReceiveCount"] = 3
    result = _audit(tmp_path, template)
    # THEN a QR900 on the pipe, and no QR008: the queue is not consumed by Lambda
    assert _pairs(result) == {("QR900", "Pipe")}
    assert "not a Lambda function" in result.findings[0].message


# --- Nested stacks -------------------------------------------------------------------------------

PARENT = """\
Resources:
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      MessageRetentionPeriod: 1209600
  DlqDepth:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesVisible
      Dimensions: [{Name: QueueName, Value: !GetAtt Dlq.QueueName}]
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 1
      ComparisonOperator: GreaterThanOrEqualToThreshold
  Worker:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: nested/worker.yaml
      Parameters:
        DeadLetterArn: !GetAtt Dlq.Arn
  InFlight:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: AWS/SQS
      MetricName: ApproximateNumberOfMessagesNotVisible
      Dimensions: [{Name: QueueName, Value: !GetAtt Worker.Outputs.QueueName}]
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 100
      ComparisonOperator: GreaterThanOrEqualToThreshold
"""
CHILD = """\
Parameters:
  DeadLetterArn:
    Type: String
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy:
        deadLetterTargetArn: !Ref DeadLetterArn
        maxReceiveCount: 5
Outputs:
  QueueName:
    Value: !GetAtt Jobs.QueueName
"""


def test_nested_stack_shares_the_parents_dlq_and_alarm(tmp_path: Path) -> None:
    write(tmp_path, "parent.yaml", PARENT)
    write(tmp_path, "nested/worker.yaml", CHILD)
    result = engine.audit_paths([str(tmp_path)])
    # THEN the child's queue has its DLQ (no QR001) and its in-flight alarm (no QR009) from the
    # parent, and the parent's queue is a DLQ (no QR001, no QR009; QR004: no redrive-allow).
    # Neither queue has an age alarm (QR025), and the parent's alarms notify no one (QR024).
    by_file = {(f.template.rsplit("/", 1)[-1], f.rule_id, f.resource) for f in result.findings}
    assert by_file == {
        ("parent.yaml", "QR004", "Dlq"),
        ("parent.yaml", "QR013", "Dlq"),
        ("parent.yaml", "QR024", "DlqDepth"),
        ("parent.yaml", "QR024", "InFlight"),
        ("parent.yaml", "QR025", "Dlq"),
        ("worker.yaml", "QR013", "Jobs"),
        ("worker.yaml", "QR025", "Jobs"),
    }


def test_nested_child_without_its_parent_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "nested/worker.yaml", CHILD)
    result = engine.audit_paths([str(tmp_path)])
    unresolved = [f for f in result.findings if f.rule_id == "QR900"]
    assert [f.resource for f in unresolved] == ["Jobs"]
    assert "no audited parent stack passes it" in unresolved[0].message
