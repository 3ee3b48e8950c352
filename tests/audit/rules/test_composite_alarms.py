"""QR024 with composite alarms: a metric alarm without actions is silent unless a composite alarm
whose AlarmRule can be set off by it has enabled actions (directly or through composites above).

Expectations come from the CloudWatch API reference (PutCompositeAlarm: the AlarmRule grammar,
names or ARNs, ActionsEnabled defaulting to TRUE) and the rule catalog, worked out by hand. The
Spark job must give the same findings (``test_spark_job_agrees``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditInputs
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.parse import alarm_expressions
from constructs_lib.audit.parse.dialects import composite_alarms
from tests.audit.conftest import ALARM_TOPIC_ARN, EngineAudit, Template, healthy, props, write

ALARMS = ("InFlight", "DlqDepth", "SourceAge", "DlqAge")
ALL_SILENT = {("QR024", alarm) for alarm in ALARMS}


def _quiet(name: str = "orders") -> Template:
    """The healthy pipeline with every alarm's actions taken away: four QR024 on their own."""
    template = healthy(name)
    for alarm in ALARMS:
        del props(template, alarm)["AlarmActions"]
    return template


def _composite(rule: Any, actions: bool = True, **extra: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {"AlarmRule": rule, **extra}
    if actions:
        properties["AlarmActions"] = [ALARM_TOPIC_ARN]
    return {"Type": "AWS::CloudWatch::CompositeAlarm", "Properties": properties}


def _joined(*alarms: str, operator: str = " OR ") -> dict[str, Any]:
    """CDK's shape: Fn::Join of ALARM(" + GetAtt Alarm.Arn + ")."""
    pieces: list[Any] = []
    for index, alarm in enumerate(alarms):
        pieces += [("" if index == 0 else '")' + operator) + 'ALARM("']
        pieces += [{"Fn::GetAtt": [alarm, "Arn"]}]
    return {"Fn::Join": ["", ["(", *pieces, '"))']]}


def _with(template: Template, **resources: Any) -> Template:
    template = copy.deepcopy(template)
    template["Resources"].update(resources)
    return template


def _found(tmp_path: Path, template: Template | str, name: str = "t.template.json") -> AuditResult:
    write(tmp_path, name, template)
    return engine.audit_paths([str(tmp_path)])


def _pairs(result: AuditResult) -> set[tuple[str, str]]:
    return {(f.rule_id, f.resource) for f in result.findings}


def _message(result: AuditResult, resource: str) -> str:
    return next(f.message for f in result.findings if f.resource == resource)


# --- The rule grammar -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ('ALARM("a") OR ALARM("b")', ["a", "b"]),
        (
            "ALARM(CPUUtilizationTooHigh) AND NOT ALARM(DeploymentInProgress)",
            ["CPUUtilizationTooHigh"],
        ),
        ("(ALARM(a) OR ALARM(b)) AND OK(c)", ["a", "b"]),
        ("NOT ALARM(a)", []),
        ("NOT (NOT ALARM(a))", ["a"]),
        ("NOT OK(a) OR INSUFFICIENT_DATA(b)", []),
        ("ALARM(a) AND FALSE", []),
        ("ALARM(a) OR FALSE", ["a"]),
        ("ALARM(a) AND TRUE", ["a"]),
        ("TRUE", []),
        (
            'ALARM("arn:aws:cloudwatch:us-east-1:123456789012:alarm:a (b)")',
            ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:a (b)"],
        ),
    ],
)
def test_which_alarms_a_rule_watches(rule: str, expected: list[str]) -> None:
    assert alarm_expressions.watched(rule) == expected


@pytest.mark.parametrize(
    "rule",
    ["(" * 249 + "ALARM(a)" + ")" * 249, "NOT " * 500 + "ALARM(a)", "NOT (" * 200 + "ALARM(a)"],
)
def test_deep_nesting_is_refused_not_a_crash(rule: str) -> None:
    with pytest.raises(alarm_expressions.RuleError):
        alarm_expressions.watched(rule)


@pytest.mark.parametrize(
    "rule",
    [
        "",
        "ALARM(a) AND",
        "ALARM()",
        "((ALARM(a))",
        "alarm(a)",
        "ALARM(a) ALARM(b)",
        "FOO(a)",
        "x" * (alarm_expressions.RULE_LENGTH_MAX + 1),
        " OR ".join(f"ALARM(a{i})" for i in range(alarm_expressions.RULE_CHILDREN_MAX + 1)),
    ],
)
def test_rules_cloudwatch_refuses_cannot_be_read(rule: str) -> None:
    with pytest.raises(alarm_expressions.RuleError):
        alarm_expressions.watched(rule)


# --- Composites in the template ---------------------------------------------------------------


def test_without_composites_every_quiet_alarm_is_silent(tmp_path: Path) -> None:
    assert _pairs(_found(tmp_path, _quiet())) == ALL_SILENT


def test_cdk_shaped_join_of_arns_clears_the_members(tmp_path: Path) -> None:
    template = _with(_quiet(), Critical=_composite(_joined(*ALARMS)))
    assert _pairs(_found(tmp_path, template)) == set()


def test_literal_names_and_arns_clear_the_alarms_they_name(tmp_path: Path) -> None:
    template = _quiet()
    props(template, "InFlight")["AlarmName"] = "orders-in-flight"
    props(template, "DlqDepth")["AlarmName"] = "orders-dlq-depth"
    props(template, "SourceAge")["AlarmName"] = {"Fn::Sub": "${AWS::StackName}-source-age"}
    rule = (
        'ALARM("orders-in-flight") OR ALARM(orders-dlq-depth) OR '
        'ALARM("arn:aws:cloudwatch:us-east-1:123456789012:alarm:t-source-age")'
    )
    result = _found(tmp_path, _with(template, Critical=_composite(rule)))
    # DlqAge has a generated name: no literal can name it
    assert _pairs(result) == {("QR024", "DlqAge")}


def test_sub_with_local_references_clears_them(tmp_path: Path) -> None:
    rule = {
        "Fn::Sub": [
            'ALARM("${InFlight}") OR ALARM("${DlqDepth.Arn}") OR ALARM("${Age}")',
            {"Age": {"Fn::GetAtt": ["SourceAge", "Arn"]}},
        ]
    }
    result = _found(tmp_path, _with(_quiet(), Critical=_composite(rule)))
    assert _pairs(result) == {("QR024", "DlqAge")}


def test_a_composite_of_composites_is_followed(tmp_path: Path) -> None:
    template = _with(
        _quiet(),
        Members=_composite(_joined("InFlight", "DlqDepth"), actions=False),
        Ages=_composite({"Fn::Sub": "ALARM(${SourceAge}) OR ALARM(${DlqAge})"}, actions=False),
        Top=_composite({"Fn::Sub": 'ALARM("${Members.Arn}") OR ALARM("${Ages}")'}),
    )
    assert _pairs(_found(tmp_path, template)) == set()


def test_nesting_is_followed_only_so_far(tmp_path: Path) -> None:
    levels = composite_alarms.NESTING_FOLLOWED
    chain = {"C0": _composite(_joined("InFlight"), actions=False)}
    for level in range(1, levels + 1):
        chain[f"C{level}"] = _composite(
            {"Fn::Sub": f"ALARM(${{C{level - 1}}})"}, actions=level == levels
        )
    result = _found(tmp_path, _with(_quiet(), **chain))
    assert ("QR024", "InFlight") in _pairs(result)
    assert f"more than {levels} levels above it are not followed" in _message(result, "InFlight")
    # one level less reaches the composite that acts
    del chain["C0"]
    chain["C1"] = _composite(_joined("InFlight"), actions=False)
    assert ("QR024", "InFlight") not in _pairs(_found(tmp_path, _with(_quiet(), **chain)))


def test_two_paths_to_one_silent_composite_name_it_once(tmp_path: Path) -> None:
    template = _with(
        _quiet(),
        Left=_composite(_joined("InFlight"), actions=False),
        Right=_composite(_joined("InFlight"), actions=False),
        Top=_composite({"Fn::Sub": "ALARM(${Left}) OR ALARM(${Right}) OR ALARM(${Top})"}, False),
    )
    message = _message(_found(tmp_path, template), "InFlight")
    assert "its composite alarms t/Left, t/Right, t/Top are silent too" in message
    assert "not followed" not in message


def test_not_alarm_does_not_watch(tmp_path: Path) -> None:
    rule = {"Fn::Sub": "ALARM(${InFlight}) AND NOT ALARM(${DlqDepth}) AND OK(${SourceAge})"}
    result = _found(tmp_path, _with(_quiet(), Critical=_composite(rule)))
    assert _pairs(result) == ALL_SILENT - {("QR024", "InFlight")}


@pytest.mark.parametrize(
    "switch_off",
    [{"ActionsEnabled": False}, {"ActionsEnabled": "false"}, {"AlarmActions": []}],
)
def test_a_silent_composite_is_named_in_its_members_findings(
    tmp_path: Path, switch_off: dict[str, Any]
) -> None:
    composite = _composite(_joined(*ALARMS))
    composite["Properties"].update(switch_off)
    result = _found(tmp_path, _with(_quiet(), Critical=composite))
    assert _pairs(result) == ALL_SILENT
    assert "its composite alarm t/Critical is silent too" in _message(result, "DlqDepth")


def test_an_unresolvable_rule_keeps_the_finding_and_says_why(tmp_path: Path) -> None:
    template = _with(
        _quiet(),
        Imported=_composite(
            {"Fn::Join": ["", ['ALARM("', {"Fn::ImportValue": "shared-alarm-arn"}, '")']]}
        ),
        Parameterized=_composite({"Fn::Sub": "ALARM(${WatchedAlarm})"}),
        Garbled=_composite("ALARM(orders-in-flight) AND"),
    )
    template["Parameters"] = {"WatchedAlarm": {"Type": "String"}}
    result = _found(tmp_path, template)
    assert _pairs(result) == ALL_SILENT
    message = _message(result, "InFlight")
    assert 't/Imported: ALARM("${?}") names an alarm the audit cannot resolve' in message
    assert "t/Parameterized" in message
    assert "t/Garbled: its AlarmRule cannot be read (the rule ends too early)" in message


def test_an_unreadable_rule_beside_a_readable_one_does_not_hide_the_readable(
    tmp_path: Path,
) -> None:
    rule = {"Fn::Sub": "ALARM(${InFlight}) OR ALARM(${Elsewhere})"}
    template = _with(_quiet(), Critical=_composite(rule))
    template["Parameters"] = {"Elsewhere": {"Type": "String"}}
    result = _found(tmp_path, template)
    assert _pairs(result) == ALL_SILENT - {("QR024", "InFlight")}
    assert "${?}" in _message(result, "DlqDepth")


def test_a_composite_that_is_not_created_clears_nothing(tmp_path: Path) -> None:
    template = _with(_quiet(), Critical={**_composite(_joined(*ALARMS)), "Condition": "Never"})
    template["Conditions"] = {"Never": {"Fn::Equals": ["a", "b"]}}
    assert _pairs(_found(tmp_path, template)) == ALL_SILENT


def test_a_composite_that_may_not_be_created_clears_nothing(tmp_path: Path) -> None:
    template = _with(_quiet(), Critical={**_composite(_joined(*ALARMS)), "Condition": "Maybe"})
    template["Parameters"] = {"Env": {"Type": "String"}}
    template["Conditions"] = {"Maybe": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}}
    result = _found(tmp_path, template)
    assert _pairs(result) == ALL_SILENT
    assert "its condition" in _message(result, "InFlight")


def test_a_composite_in_another_template_is_not_seen(tmp_path: Path) -> None:
    # The documented limit: references to alarms resolve within a template only.
    template = _quiet()
    props(template, "InFlight")["AlarmName"] = "orders-in-flight"
    write(tmp_path, "queues.template.json", template)
    other = {"Resources": {"Critical": _composite('ALARM("orders-in-flight")')}}
    result = _found(tmp_path, other, "composites.template.json")
    assert _pairs(result) == ALL_SILENT


YAML_TEMPLATE = """
Resources:
  Source:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: q
      RedrivePolicy: {deadLetterTargetArn: !GetAtt Dlq.Arn, maxReceiveCount: 5}
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      MessageRetentionPeriod: 1209600
      RedriveAllowPolicy:
        redrivePermission: byQueue
        sourceQueueArns: [!Sub "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:q"]
  Depth:
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
  Critical:
    Type: AWS::CloudWatch::CompositeAlarm
    Properties:
      AlarmRule: !Join ["", ["ALARM(\\"", !GetAtt Depth.Arn, "\\") OR FALSE"]]
      AlarmActions: [!Ref Pager]
  Pager:
    Type: AWS::SNS::Topic
"""


def test_yaml_short_forms(tmp_path: Path) -> None:
    result = _found(tmp_path, YAML_TEMPLATE, "yaml-composite.yaml")
    assert "QR024" not in {f.rule_id for f in result.findings}
    no_actions = YAML_TEMPLATE.replace("AlarmActions: [!Ref Pager]", "ActionsEnabled: false")
    result = _found(tmp_path, no_actions, "yaml-composite.yaml")
    assert ("QR024", "Depth") in _pairs(result)


# --- A CDK app ---------------------------------------------------------------------------------


def _cdk_app(outdir: Path, with_actions: bool) -> None:
    aws_cdk = pytest.importorskip("aws_cdk")
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk import aws_cloudwatch_actions as actions
    from aws_cdk import aws_sns as sns
    from aws_cdk import aws_sqs as sqs

    app = aws_cdk.App(outdir=str(outdir))
    stack = aws_cdk.Stack(app, "Tiers")
    dlq = sqs.Queue(stack, "Dlq", retention_period=aws_cdk.Duration.days(14))
    queue = sqs.Queue(
        stack, "Jobs", dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=5, queue=dlq)
    )
    in_flight = cloudwatch.Alarm(
        stack,
        "InFlight",
        metric=queue.metric_approximate_number_of_messages_not_visible(),
        threshold=100,
        evaluation_periods=1,
    )
    depth = cloudwatch.Alarm(
        stack,
        "DlqDepth",
        metric=dlq.metric_approximate_number_of_messages_visible(),
        threshold=1,
        evaluation_periods=1,
    )
    composite = cloudwatch.CompositeAlarm(
        stack,
        "Critical",
        alarm_rule=cloudwatch.AlarmRule.any_of(
            cloudwatch.AlarmRule.from_alarm(in_flight, cloudwatch.AlarmState.ALARM),
            cloudwatch.AlarmRule.from_alarm(depth, cloudwatch.AlarmState.ALARM),
        ),
        actions_enabled=with_actions,
    )
    composite.add_alarm_action(actions.SnsAction(sns.Topic(stack, "Pager")))
    app.synth()


@pytest.mark.parametrize("with_actions", [True, False])
def test_cdk_composite_alarm(tmp_path: Path, with_actions: bool) -> None:
    _cdk_app(tmp_path, with_actions)
    found = {
        (f.rule_id, f.resource.split("/")[-1][: len("DlqDepth")])
        for f in engine.audit_paths([str(tmp_path)]).findings
        if f.rule_id == "QR024"
    }
    assert found == (set() if with_actions else {("QR024", "InFlight"), ("QR024", "DlqDepth")})


# --- Both engines -------------------------------------------------------------------------------


def write_fleet(folder: Path) -> None:
    """Every shape above, in one fleet."""
    names = ("in-flight", "dlq-depth")
    named = _quiet("named")
    for alarm, name in zip(("InFlight", "DlqDepth"), names, strict=True):
        props(named, alarm)["AlarmName"] = f"named-{name}"
    fleet: dict[str, Template | str] = {
        "join.template.json": _with(_quiet("join"), Critical=_composite(_joined(*ALARMS))),
        "named.template.json": _with(
            named, Critical=_composite('ALARM("named-in-flight") OR ALARM(named-dlq-depth)')
        ),
        "nested.template.json": _with(
            _quiet("nested"),
            Members=_composite(_joined("InFlight", "DlqAge"), actions=False),
            Top=_composite({"Fn::Sub": "ALARM(${Members}) AND NOT ALARM(${DlqDepth})"}),
        ),
        "silent.template.json": _with(
            _quiet("silent"), Critical=_composite(_joined(*ALARMS), ActionsEnabled=False)
        ),
        "unread.template.json": _with(
            _quiet("unread"),
            Critical=_composite(
                {"Fn::Join": ["", ['ALARM("', {"Fn::ImportValue": "elsewhere"}, '")']]}
            ),
        ),
        "yaml-composite.yaml": YAML_TEMPLATE,
    }
    for name, template in fleet.items():
        write(folder, name, template)


@pytest.mark.spark
def test_spark_job_agrees(tmp_path: Path, spark_audit: EngineAudit) -> None:
    from tests.audit.rules import test_backoff_rule as test_retry_backoff

    write_fleet(tmp_path / "composites")
    test_retry_backoff.write_fleet(tmp_path / "backoff")
    files = discovery.discover([str(tmp_path)])
    local = engine.audit_files(files)
    assert {f.rule_id for f in local.findings} >= {"QR018", "QR024", "QR900"}
    assert spark_audit(AuditInputs(files)).findings == local.findings
