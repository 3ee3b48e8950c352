"""Alarm tiers: which alarms page (critical) and which file a ticket (warning), the actions each
tier carries, the composite alarm that pages once per queue, the alarm on a consumer failing
every message, and the dashboard by tier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Capture, Match, Template

from constructs_lib import ResilientQueue
from constructs_lib.alarms.alarm import AlarmSpec, Tier, create_alarm
from constructs_lib.alarms.factory import (
    EVERY_MESSAGE_FAILED_EXPRESSION,
    EVERY_MESSAGE_FAILED_MINUTES,
    EVERY_MESSAGE_FAILED_PERCENT,
)
from constructs_lib.alarms.tiers import (
    COMPOSITE_ALARM_MAX_MEMBERS,
    COMPOSITE_ALARM_RULE_MAX_LENGTH,
    composite_rule_problems,
)
from tests.constructs.conftest import FunctionFactory, resources_of_type, warnings_matching
from tests.support.nag import PACKS, synth_with_packs

# Every alarm a queue with a consumer, a dead-letter consumer and an SNS producer has, by the
# end of its name, with the tier it must have.
TIER_OF_ALARM = {
    "orders-dead-letters": Tier.CRITICAL,
    "orders-oldest-message-age": Tier.CRITICAL,
    "orders-dead-letter-age": Tier.CRITICAL,
    "orders-dead-letter-arrivals": Tier.CRITICAL,
    "orders-sns-delivery-failures": Tier.CRITICAL,
    "orders-Worker-failing-every-message": Tier.CRITICAL,
    "orders-dlq-Archiver-failing-every-message": Tier.CRITICAL,
    "orders-in-flight-high": Tier.WARNING,
    "orders-Worker-failed-messages": Tier.WARNING,
    "orders-dlq-Archiver-failed-messages": Tier.WARNING,
}
CRITICAL_NAMES = sorted(name for name, tier in TIER_OF_ALARM.items() if tier is Tier.CRITICAL)


def topic_action(
    stack: cdk.Stack, name: str
) -> tuple[cloudwatch_actions.SnsAction, dict[str, str]]:
    """An SNS action and the Ref its alarms carry."""
    topic = sns.Topic(stack, name, enforce_ssl=True)
    return cloudwatch_actions.SnsAction(topic), {
        "Ref": stack.get_logical_id(topic.node.default_child)  # type: ignore[arg-type]
    }


def function(scope: cdk.Stack, construct_id: str) -> lambda_.Function:
    return lambda_.Function(
        scope,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
    )


def full_queue(stack: cdk.Stack, **props: Any) -> ResilientQueue:
    """Every kind of alarm: queue alarms, a consumer, a dead-letter consumer, an SNS producer."""
    queue = ResilientQueue(stack, "Orders", queue_name="orders", **props)
    queue.add_lambda_consumer(function(stack, "Worker"))
    queue.add_dead_letter_consumer(function(stack, "Archiver"))
    queue.add_producer(sns.Topic(stack, "Events", enforce_ssl=True))
    return queue


def alarms_by_name(stack: cdk.Stack) -> dict[str, dict[str, Any]]:
    return {
        alarm["Properties"]["AlarmName"]: alarm["Properties"]  # type: ignore[index]
        for alarm in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
    }


def composite(stack: cdk.Stack) -> dict[str, Any]:
    [found] = resources_of_type(stack, "AWS::CloudWatch::CompositeAlarm").values()
    return found


# --- tiers and their actions ---------------------------------------------------------------


def test_every_alarm_has_its_tier_and_says_why(stack: cdk.Stack) -> None:
    alarm, _ = topic_action(stack, "Alarms")
    queue = full_queue(stack, alarm_actions=[alarm])

    alarms = alarms_by_name(stack)
    assert sorted(alarms) == sorted(TIER_OF_ALARM)
    for name, tier in TIER_OF_ALARM.items():
        description = alarms[name]["AlarmDescription"]
        assert description.startswith(f"{tier.heading} — "), name
        assert description.endswith("Runbook: docs/alarms.md in the constructs_lib documentation.")
        # PutMetricAlarm AlarmDescription: at most 1,024 characters.
        assert len(description) <= 1024, name
    assert alarms["orders-dead-letters"]["AlarmDescription"].startswith(
        "Critical: pages — dead letters are arriving"
    )
    assert alarms["orders-in-flight-high"]["AlarmDescription"].startswith(
        "Warning: files a ticket — "
    )
    by_tier = queue.alarm_tiers.by_tier()
    named = {
        tier: sorted(a.node.default_child.alarm_name for a in alarms)  # type: ignore[union-attr]
        for tier, alarms in by_tier.items()
    }
    assert named[Tier.CRITICAL] == CRITICAL_NAMES
    assert named[Tier.WARNING] == sorted(set(TIER_OF_ALARM) - set(CRITICAL_NAMES))


@pytest.mark.parametrize(
    ("given", "critical", "warning"),
    [
        # alarm_actions alone is both tiers (what every queue did before tiers).
        pytest.param(("alarm",), "alarm", "alarm", id="alarm_actions-both-tiers"),
        pytest.param(("alarm", "critical"), "critical", "alarm", id="critical-overrides"),
        pytest.param(("alarm", "warning"), "alarm", "warning", id="warning-overrides"),
        pytest.param(("critical", "warning"), "critical", "warning", id="each-tier-its-own"),
        pytest.param(("alarm", "critical", "warning"), "critical", "warning", id="all-three"),
    ],
)
def test_each_tier_carries_its_actions(
    stack: cdk.Stack, given: tuple[str, ...], critical: str, warning: str
) -> None:
    topics = {name: topic_action(stack, name.title()) for name in ("alarm", "critical", "warning")}
    ok, ok_ref = topic_action(stack, "Recovered")
    full_queue(
        stack,
        ok_actions=[ok],
        **{f"{name}_actions": [topics[name][0]] for name in given},
    )

    alarms = alarms_by_name(stack)
    for name, tier in TIER_OF_ALARM.items():
        expected = topics[critical if tier is Tier.CRITICAL else warning][1]
        assert alarms[name]["AlarmActions"] == [expected], name
        assert alarms[name]["OKActions"] == [ok_ref], name
    assert resources_of_type(stack, "AWS::CloudWatch::CompositeAlarm") == {}
    assert warnings_matching(stack, "notify nobody") == []
    assert warnings_matching(stack, "_actions=[]") == []


def test_a_tier_without_actions_warns(stack: cdk.Stack) -> None:
    alarm, _ = topic_action(stack, "Alarms")
    ResilientQueue(stack, "Orders", queue_name="orders", alarm_actions=[alarm], warning_actions=[])

    [message] = warnings_matching(stack, "warning_actions")
    assert "warning_actions=[]: is empty, so the warning alarms" in message
    assert "file no ticket" in message
    assert warnings_matching(stack, "critical_actions") == []


def test_a_tier_defaulting_to_empty_alarm_actions_warns(stack: cdk.Stack) -> None:
    critical, _ = topic_action(stack, "Pager")
    ResilientQueue(stack, "Orders", queue_name="orders", critical_actions=[critical])

    [message] = warnings_matching(stack, "warning_actions")
    assert "(alarm_actions, its default, is empty)" in message
    assert warnings_matching(stack, "critical_actions") == []
    assert warnings_matching(stack, "alarm_actions=[]") == []


def test_no_actions_at_all_is_the_one_silent_alarm_warning(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders", composite_alarm=True)

    [message] = warnings_matching(stack, "notify nobody")
    assert "alarm_actions=[]: is empty" in message
    assert warnings_matching(stack, "critical_actions") == []


# --- the composite alarm -------------------------------------------------------------------


def test_the_composite_alarm_pages_once_for_the_critical_alarms(stack: cdk.Stack) -> None:
    alarm, alarm_ref = topic_action(stack, "Alarms")
    ok, ok_ref = topic_action(stack, "Recovered")
    queue = full_queue(stack, alarm_actions=[alarm], ok_actions=[ok], composite_alarm=True)

    rule = Capture()
    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::CompositeAlarm",
        {
            "AlarmName": "orders-critical",
            "AlarmRule": rule,
            "AlarmActions": [alarm_ref],
            "OKActions": [ok_ref],
            "AlarmDescription": Match.string_like_regexp("^Critical: pages — "),
        },
    )
    assert rule.as_string() == " OR ".join(
        f'ALARM("{name}")'
        for name in (
            "orders-dead-letters",
            "orders-oldest-message-age",
            "orders-dead-letter-age",
            "orders-Worker-failing-every-message",
            # the dead-letter consumer's alarm, then the arrivals alarm its addition makes
            "orders-dlq-Archiver-failing-every-message",
            "orders-dead-letter-arrivals",
            "orders-sns-delivery-failures",
        )
    )
    alarms = alarms_by_name(stack)
    for name in CRITICAL_NAMES:  # members: the composite pages for them
        assert "AlarmActions" not in alarms[name], name
        assert "OKActions" not in alarms[name], name
    for name in set(TIER_OF_ALARM) - set(CRITICAL_NAMES):  # warnings keep their ticket
        assert alarms[name]["AlarmActions"] == [alarm_ref], name
    # CloudFormation creates the members before the composite that names them.
    found = composite(stack)
    assert len(found["DependsOn"]) == len(CRITICAL_NAMES)
    assert queue.alarm_tiers.composite_alarm is not None
    assert len(queue.alarm_tiers.members) == len(CRITICAL_NAMES)
    # The composite carries the actions: no warning calls its members silent.
    assert warnings_matching(stack, "nobody") == []


def test_the_composite_carries_critical_actions_and_warnings_keep_theirs(
    stack: cdk.Stack,
) -> None:
    pager, pager_ref = topic_action(stack, "Pager")
    tickets, tickets_ref = topic_action(stack, "Tickets")
    full_queue(stack, critical_actions=[pager], warning_actions=[tickets], composite_alarm=True)

    assert composite(stack)["Properties"]["AlarmActions"] == [pager_ref]
    alarms = alarms_by_name(stack)
    assert alarms["orders-in-flight-high"]["AlarmActions"] == [tickets_ref]
    assert "AlarmActions" not in alarms["orders-dead-letters"]


def test_the_rule_includes_consumers_added_after_the_queue(stack: cdk.Stack) -> None:
    alarm, _ = topic_action(stack, "Alarms")
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", alarm_actions=[alarm], composite_alarm=True
    )
    assert queue.alarm_tiers.composite_alarm is not None
    cfn = queue.alarm_tiers.composite_alarm.node.default_child
    assert isinstance(cfn, cloudwatch.CfnCompositeAlarm)
    rule_before = stack.resolve(cfn.alarm_rule)  # rendered now, without a synth
    queue.add_lambda_consumer(function(stack, "Late"))

    rule = composite(stack)["Properties"]["AlarmRule"]
    assert "orders-Late-failing-every-message" not in rule_before
    assert rule == rule_before + ' OR ALARM("orders-Late-failing-every-message")'


def test_a_consumer_in_another_stack_keeps_its_own_critical_actions() -> None:
    app = cdk.App()
    queues = cdk.Stack(app, "Queues")
    workers = cdk.Stack(app, "Workers")
    alarm, alarm_ref = topic_action(queues, "Alarms")
    queue = ResilientQueue(
        queues, "Orders", queue_name="orders", alarm_actions=[alarm], composite_alarm=True
    )
    queue.add_lambda_consumer(function(workers, "Worker"))

    assembly = app.synth()  # no dependency cycle

    rule = composite(queues)["Properties"]["AlarmRule"]
    assert "failing-every-message" not in rule
    worker_alarms = alarms_by_name(workers)
    every_message = worker_alarms["orders-Worker-failing-every-message"]
    # The topic is exported by the queue's stack, which the workers' stack already depends on.
    [action] = every_message["AlarmActions"]
    assert "Fn::ImportValue" in action
    assert alarm_ref["Ref"] in json.dumps(assembly.get_stack_by_name("Queues").template["Outputs"])

    def stacks_before(name: str) -> list[str]:
        artifact = assembly.get_stack_by_name(name)
        return [d.id for d in artifact.dependencies if not d.id.endswith(".assets")]

    assert stacks_before("Queues") == []
    assert stacks_before("Workers") == ["Queues"]


def test_the_composite_alarm_is_off_by_default(stack: cdk.Stack) -> None:
    alarm, alarm_ref = topic_action(stack, "Alarms")
    queue = full_queue(stack, alarm_actions=[alarm])

    assert queue.alarm_tiers.composite_alarm is None
    assert queue.alarm_tiers.members == []
    assert resources_of_type(stack, "AWS::CloudWatch::CompositeAlarm") == {}
    assert alarms_by_name(stack)["orders-dead-letters"]["AlarmActions"] == [alarm_ref]


def test_the_rule_stays_within_cloudwatchs_limits() -> None:
    assert composite_rule_problems(["orders-dead-letters"] * COMPOSITE_ALARM_MAX_MEMBERS) == []
    [too_many] = composite_rule_problems(["a"] * (COMPOSITE_ALARM_MAX_MEMBERS + 1))
    assert "at most 100" in too_many.describe()
    long_name = "x" * 255  # PutMetricAlarm AlarmName: at most 255 characters
    members = COMPOSITE_ALARM_RULE_MAX_LENGTH // len(f'ALARM("{long_name}") OR ') + 1
    [too_long] = composite_rule_problems([long_name] * members)
    assert "at most 10240" in too_long.describe()


@pytest.mark.parametrize(
    ("prop", "value", "message"),
    [
        pytest.param("critical_actions", "topic", "critical_actions=", id="critical-str"),
        pytest.param("warning_actions", [object()], "warning_actions=", id="warning-object"),
        pytest.param("composite_alarm", "yes", "not a bool", id="composite-str"),
        pytest.param("composite_alarm", None, "not a bool", id="composite-none"),
    ],
)
def test_wrong_kinds_are_refused_with_our_errors(
    stack: cdk.Stack, prop: str, value: object, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        ResilientQueue(stack, "Orders", queue_name="orders", **{prop: value})


# --- the alarm on a consumer failing every message -----------------------------------------


def test_failing_every_message_is_metric_math_that_stays_ok_when_idle(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    alarm, alarm_ref = topic_action(stack, "Alarms")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", alarm_actions=[alarm])
    consumer = queue.add_lambda_consumer(make_function())
    mapping_ref = {"Ref": Match.string_like_regexp("SqsEventSource")}

    assert consumer.failing_every_message_alarm is not None
    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "orders-Fn0-failing-every-message",
            "AlarmActions": [alarm_ref],
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": EVERY_MESSAGE_FAILED_PERCENT,
            "EvaluationPeriods": EVERY_MESSAGE_FAILED_MINUTES,
            "DatapointsToAlarm": EVERY_MESSAGE_FAILED_MINUTES,
            # An idle queue has no data points: not breaching, so OK (not INSUFFICIENT_DATA).
            "TreatMissingData": "notBreaching",
            "Metrics": [
                {
                    "Id": "expr_1",
                    "Expression": EVERY_MESSAGE_FAILED_EXPRESSION,
                    "Label": Match.any_value(),
                    "ReturnData": True,
                },
                {
                    "Id": "failed",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": "AWS/Lambda",
                            "MetricName": "FailedInvokeEventCount",
                            "Dimensions": [
                                {"Name": "EventSourceMappingUUID", "Value": mapping_ref}
                            ],
                        },
                        "Period": 60,
                        "Stat": "Sum",
                    },
                    "ReturnData": False,
                },
                {
                    "Id": "invoked",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": "AWS/Lambda",
                            "MetricName": "InvokedEventCount",
                            "Dimensions": [
                                {"Name": "EventSourceMappingUUID", "Value": mapping_ref}
                            ],
                        },
                        "Period": 60,
                        "Stat": "Sum",
                    },
                    "ReturnData": False,
                },
            ],
        },
    )
    # A minute without invocations reads 0 %, never a division by zero: with traffic that
    # stopped, the alarm returns to OK rather than holding its last state.
    assert EVERY_MESSAGE_FAILED_EXPRESSION.startswith("IF(FILL(invoked, 0) > 0, ")
    assert EVERY_MESSAGE_FAILED_EXPRESSION.endswith(", 0)")


def test_no_event_source_metrics_means_no_consumer_alarms(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    alarm, _ = topic_action(stack, "Alarms")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", alarm_actions=[alarm])
    consumer = queue.add_lambda_consumer(
        make_function(), event_source_metrics=False, report_batch_item_failures=False
    )

    assert consumer.failing_every_message_alarm is None
    assert consumer.failed_messages_alarm is None
    assert len(queue.alarm_tiers.by_tier()[Tier.CRITICAL]) == 3


# --- the dashboard by tier -----------------------------------------------------------------


def dashboard_widgets(stack: cdk.Stack) -> list[dict[str, Any]]:
    """The dashboard's widgets, each token replaced by the logical id it names."""
    [dashboard] = resources_of_type(stack, "AWS::CloudWatch::Dashboard").values()
    body = stack.resolve(dashboard["Properties"]["DashboardBody"])  # type: ignore[index]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(
        part
        if isinstance(part, str)
        else next(iter(part.values()))[0]
        if isinstance(next(iter(part.values())), list)
        else str(next(iter(part.values())))
        for part in parts
    )
    widgets: list[dict[str, Any]] = json.loads(text)["widgets"]
    return widgets


def test_the_dashboard_shows_alarms_by_tier_with_the_composite_first(stack: cdk.Stack) -> None:
    alarm, _ = topic_action(stack, "Alarms")
    queue = full_queue(stack, alarm_actions=[alarm], composite_alarm=True)
    queue.add_dashboard("orders")

    statuses = [w for w in dashboard_widgets(stack) if w["type"] == "alarm"]
    assert [w["properties"]["title"] for w in statuses] == [
        "Critical: pages",
        "Warning: files a ticket",
    ]
    logical = {
        a.node.default_child.alarm_name: stack.get_logical_id(a.node.default_child)  # type: ignore[union-attr]
        for tier_alarms in queue.alarm_tiers.by_tier().values()
        for a in tier_alarms
    }
    composite_id = stack.get_logical_id(queue.alarm_tiers.composite_alarm.node.default_child)  # type: ignore[union-attr, arg-type]
    critical, warning = (w["properties"]["alarms"] for w in statuses)
    assert critical[0] == composite_id
    assert sorted(critical[1:]) == sorted(logical[name] for name in CRITICAL_NAMES)
    assert sorted(warning) == sorted(
        logical[name] for name in set(TIER_OF_ALARM) - set(CRITICAL_NAMES)
    )


def test_without_a_composite_the_critical_widget_lists_the_alarms(stack: cdk.Stack) -> None:
    alarm, _ = topic_action(stack, "Alarms")
    queue = full_queue(stack, alarm_actions=[alarm])
    queue.add_dashboard()

    statuses = [w for w in dashboard_widgets(stack) if w["type"] == "alarm"]
    critical = statuses[0]["properties"]["alarms"]
    assert statuses[0]["properties"]["title"] == "Critical: pages"
    assert len(critical) == len(CRITICAL_NAMES)


# --- cdk-nag -------------------------------------------------------------------------------


def nag_report(outdir: Path) -> dict[str, Any]:
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Intake")
    pager, _ = topic_action(stack, "Pager")
    tickets, _ = topic_action(stack, "Tickets")
    full_queue(stack, critical_actions=[pager], warning_actions=[tickets], composite_alarm=True)
    return synth_with_packs(app, outdir)


def test_the_four_packs_find_nothing_in_the_tiered_alarms(tmp_path: Path) -> None:
    report = nag_report(tmp_path)

    assert {r["pluginName"] for r in report["pluginReports"]} == PACKS
    on_alarms = [
        (r["pluginName"], v["ruleName"], c["constructPath"])
        for r in report["pluginReports"]
        for v in r["violations"]
        for c in v["violatingConstructs"]
        if c["constructPath"].startswith("Intake/Orders/") or "Alarm" in c["constructPath"]
    ]
    assert on_alarms == []
    acknowledged = {
        (v["ruleName"], c["constructPath"].removeprefix("Intake/"))
        for r in report["pluginReports"]
        for v in r.get("suppressedViolations", [])
        for c in v["violatingConstructs"]
        if "CloudWatchAlarmAction" in v["ruleName"]
    }
    # Exactly the composite's members, each for the two packs that want an action on every
    # alarm: the composite carries them.
    assert len(acknowledged) == 2 * len(CRITICAL_NAMES)
    assert {path.split("/")[-2] for _, path in acknowledged} >= {
        "DeadLetterDepthAlarm",
        "SourceExpiryRiskAlarm",
        "FailingEveryMessageAlarm",
    }


def test_a_rule_past_cloudwatchs_length_fails_the_synth_naming_the_limit() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Orders")
    alarm, _ = topic_action(stack, "Alarms")
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", alarm_actions=[alarm], composite_alarm=True
    )
    # Long construct ids make long alarm names (at most 255 characters each): about 250
    # characters of rule per consumer, past 10,240 with a few dozen consumers.
    for number in range(COMPOSITE_ALARM_RULE_MAX_LENGTH // 250 + 1):
        queue.add_lambda_consumer(function(stack, f"Consumer{number:03d}" + "x" * 200))

    with pytest.raises(RuntimeError, match=r"composite_alarm.*CloudWatch allows at most 10240"):
        app.synth()


# --- the spec's comparison and missing-data policy -----------------------------------------


def test_an_alarm_spec_may_fire_below_its_threshold_and_on_missing_data(stack: cdk.Stack) -> None:
    """What an alarm on traffic that must keep coming needs (fewer than 1 message sent)."""
    queue = sqs.Queue(stack, "Queue")
    spec = AlarmSpec(
        "SilentProducerAlarm",
        queue.metric("NumberOfMessagesSent", period=cdk.Duration.minutes(1), statistic="Sum"),
        1,
        1,
        "queue-silent-producer",
        "Nothing was sent to the queue.",
        Tier.WARNING,
        "the producer went quiet",
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
    )
    create_alarm(stack, spec, (), ())

    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "queue-silent-producer",
            "ComparisonOperator": "LessThanThreshold",
            "TreatMissingData": "breaching",
            "AlarmDescription": Match.string_like_regexp(
                "^Warning: files a ticket — the producer went quiet. Nothing was sent"
            ),
        },
    )
    defaults = AlarmSpec("Id", spec.metric, 1, 1, "name", "text", Tier.CRITICAL, "why")
    assert defaults.comparison_operator == (
        cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
    )
    assert defaults.treat_missing_data == cloudwatch.TreatMissingData.NOT_BREACHING
