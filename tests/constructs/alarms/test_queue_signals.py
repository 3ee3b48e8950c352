"""Silent producers (``expected_traffic``) and fair queues (``fair``): the alarms each adds, the
values each refuses, and what a producer of a fair queue is told.

CloudWatch's limits are from the PutMetricAlarm API reference: Period 10, 20, 30 or a multiple of
60 s; Period x EvaluationPeriods at most 604,800 s. SQS's from its developer guide: no metrics
for a queue idle more than six hours; the fair-queue metrics end in ``InQuietGroups``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from constructs_lib import ConfigurationError, ResilientQueue
from constructs_lib.checks import QueueResilienceChecks
from tests.constructs.conftest import resources_of_type, warnings_matching
from tests.support.nag import synth_with_packs, violations_under

WEEK = 7 * 24 * 3600


def alarm_on(stack: cdk.Stack, metric: str) -> dict[str, object]:
    [alarm] = [
        a["Properties"]
        for a in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == metric  # type: ignore[index]
    ]
    assert isinstance(alarm, dict)
    return alarm


def alarm_metrics(stack: cdk.Stack) -> list[str]:
    return sorted(
        a["Properties"]["MetricName"]  # type: ignore[index]
        for a in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
    )


# --- silent producers --------------------------------------------------------------------------


def test_expected_traffic_alarms_when_fewer_than_one_message_is_sent_in_the_period(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", expected_traffic=cdk.Duration.minutes(15)
    )

    alarm = alarm_on(stack, "NumberOfMessagesSent")
    assert alarm["Statistic"] == "Sum"
    assert alarm["Period"] == 900
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "LessThanThreshold"
    # SQS publishes nothing for a queue idle for six hours: no data must read as silence.
    assert alarm["TreatMissingData"] == "breaching"
    assert alarm["AlarmName"] == "orders-no-messages-sent"
    assert "15 minutes" in str(alarm["AlarmDescription"])
    [dimension] = alarm["Dimensions"]  # type: ignore[misc]
    assert dimension["Value"] == {
        "Fn::GetAtt": [stack.get_logical_id(queue.queue.node.default_child), "QueueName"]  # type: ignore[arg-type]
    }
    assert queue.alarms.no_messages_sent is not None
    assert queue.alarms.no_messages_sent in list(queue.alarms)


def test_no_silent_producer_alarm_unless_asked(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")

    assert "NumberOfMessagesSent" not in alarm_metrics(stack)
    assert queue.alarms.no_messages_sent is None


@pytest.mark.parametrize(
    "seconds",
    [60, 3_600, WEEK],
    ids=["one-minute", "one-hour", "seven-days"],
)
def test_expected_traffic_at_the_bounds_is_accepted(stack: cdk.Stack, seconds: int) -> None:
    ResilientQueue(stack, "Orders", expected_traffic=cdk.Duration.seconds(seconds))

    assert alarm_on(stack, "NumberOfMessagesSent")["Period"] == seconds


@pytest.mark.parametrize(
    ("seconds", "says"),
    [
        (59, "between 60 and 604800 seconds"),
        (WEEK + 60, "between 60 and 604800 seconds"),
        (90, "must be whole minutes"),
        (WEEK - 1, "between 60 and 604800 seconds"),
    ],
    ids=["below-one-minute", "above-seven-days", "not-whole-minutes", "odd-seconds-in-range"],
)
def test_fails_expected_traffic_outside_what_cloudwatch_accepts(
    stack: cdk.Stack, seconds: int, says: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", expected_traffic=cdk.Duration.seconds(seconds))

    text = str(raised.value)
    assert "expected_traffic" in text
    if seconds % 60:
        assert "must be whole minutes" in text
        assert f"Duration.minutes({max(seconds // 60, 1)})" in text
    else:
        assert says in text


def test_fails_expected_traffic_of_the_wrong_kind(stack: cdk.Stack) -> None:
    with pytest.raises(TypeError, match=r"expected_traffic.*not an aws_cdk.Duration"):
        ResilientQueue(stack, "Orders", expected_traffic=900)  # type: ignore[arg-type]


# --- fair queues -------------------------------------------------------------------------------


def test_fair_queue_alarms_on_the_quiet_groups_age_at_the_source_threshold(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(
        stack, "Tenants", queue_name="tenants", fair=True, retention_period=cdk.Duration.days(4)
    )

    quiet = alarm_on(stack, "ApproximateAgeOfOldestMessageInQuietGroups")
    queue_wide = [
        a["Properties"]
        for a in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == "ApproximateAgeOfOldestMessage"  # type: ignore[index]
        and a["Properties"]["AlarmName"] == "tenants-oldest-message-age"  # type: ignore[index]
    ]
    assert len(queue_wide) == 1
    # Half of the 4-day retention, like the queue-wide one: same risk, for the quiet tenants.
    assert quiet["Threshold"] == 2 * 24 * 3600 == queue_wide[0]["Threshold"]  # type: ignore[index]
    assert quiet["Statistic"] == "Maximum"
    assert quiet["Period"] == 60
    assert quiet["TreatMissingData"] == "notBreaching"
    assert quiet["AlarmName"] == "tenants-quiet-groups-oldest-message-age"
    assert "quiet tenants" in str(quiet["AlarmDescription"])
    assert queue.fair is True
    assert queue.alarms.quiet_groups_expiry_risk in list(queue.alarms)


def test_a_fair_queue_changes_nothing_on_the_queue_itself(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Fair", queue_name="fair", fair=True)
    ResilientQueue(stack, "Plain", queue_name="plain")

    queues = {
        q["Properties"]["QueueName"]: {  # type: ignore[index]
            k: v
            for k, v in q["Properties"].items()  # type: ignore[union-attr]
            if k not in ("QueueName", "RedrivePolicy")
        }
        for q in resources_of_type(stack, "AWS::SQS::Queue").values()
    }
    assert queues["fair"] == queues["plain"]


def test_fails_fair_on_a_fifo_queue(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", fifo=True, fair=True)

    text = str(raised.value)
    assert "fair" in text and "applies only to standard queues" in text
    assert "remove fair=True" in text


def test_fails_fair_of_the_wrong_kind(stack: cdk.Stack) -> None:
    with pytest.raises(TypeError, match="fair"):
        ResilientQueue(stack, "Orders", fair="yes")  # type: ignore[arg-type]


def test_a_rule_sending_to_a_fair_queue_without_a_message_group_warns(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Tenants", queue_name="tenants", fair=True)
    rule = events.Rule(stack, "Rule", event_pattern=events.EventPattern(source=["shop"]))

    queue.add_producer(rule)

    [warning] = warnings_matching(stack, "is a fair queue")
    assert "message_group_id" in warning


def test_a_rule_with_a_message_group_sends_it_to_the_fair_queue(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Tenants", queue_name="tenants", fair=True)
    rule = events.Rule(stack, "Rule", event_pattern=events.EventPattern(source=["shop"]))

    queue.add_producer(rule, message_group_id="shop")

    assert warnings_matching(stack, "is a fair queue") == []
    Template.from_stack(stack).has_resource_properties(
        "AWS::Events::Rule",
        {"Targets": [Match.object_like({"SqsParameters": {"MessageGroupId": "shop"}})]},
    )


def test_a_topic_needs_no_setting_for_a_fair_queue(stack: cdk.Stack) -> None:
    # SNS standard topics forward the publisher's MessageGroupId to SQS standard subscriptions
    # (SNS API reference, Publish): nothing to configure, nothing to warn about.
    queue = ResilientQueue(stack, "Tenants", queue_name="tenants", fair=True)

    queue.add_producer(sns.Topic(stack, "Topic"))

    assert warnings_matching(stack, "fair queue") == []


# --- dashboard ---------------------------------------------------------------------------------


def dashboard_widgets(stack: cdk.Stack) -> list[dict[str, object]]:
    """The dashboard's widgets, its body parsed with each reference left as a placeholder."""
    [dashboard] = resources_of_type(stack, "AWS::CloudWatch::Dashboard").values()
    body = stack.resolve(dashboard["Properties"]["DashboardBody"])  # type: ignore[index]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(part if isinstance(part, str) else "REF" for part in parts)
    widgets: list[dict[str, object]] = json.loads(text)["widgets"]
    return widgets


def graph(widgets: list[dict[str, object]], title: str) -> dict[str, Any]:
    [found] = [w for w in widgets if w["properties"].get("title") == title]  # type: ignore[attr-defined]
    return found["properties"]  # type: ignore[return-value]


def test_the_dashboard_shows_the_quiet_groups_beside_the_whole_queue(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Tenants", queue_name="tenants", fair=True).add_dashboard()

    widgets = dashboard_widgets(stack)
    waiting = [m[1] for m in graph(widgets, "Messages waiting")["metrics"]]
    assert waiting == [
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesVisibleInQuietGroups",
    ]
    ages = [m[1] for m in graph(widgets, "Age of oldest message (s)")["metrics"]]
    assert "ApproximateAgeOfOldestMessageInQuietGroups" in ages
    noisy = graph(widgets, "Noisy message groups (tenants)")["metrics"]
    assert [m[1] for m in noisy] == ["ApproximateNumberOfNoisyGroups"]


def test_the_dashboard_graphs_messages_sent_against_the_silence_alarm(stack: cdk.Stack) -> None:
    ResilientQueue(
        stack, "Orders", queue_name="orders", expected_traffic=cdk.Duration.hours(1)
    ).add_dashboard()

    sent = graph(dashboard_widgets(stack), "Messages sent per expected period")
    [metric] = sent["metrics"]
    assert metric[1] == "NumberOfMessagesSent"
    assert metric[-1]["period"] == 3600 and metric[-1]["stat"] == "Sum"
    [annotation] = sent["annotations"]["horizontal"]
    assert annotation["value"] == 1


def test_a_plain_queue_has_no_fair_or_silence_graphs(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders").add_dashboard()

    titles = {w["properties"].get("title") for w in dashboard_widgets(stack)}  # type: ignore[attr-defined]
    assert "Noisy message groups (tenants)" not in titles
    assert "Messages sent per expected period" not in titles


# --- peers -------------------------------------------------------------------------------------


def test_the_four_nag_packs_and_the_audit_find_nothing_in_a_fair_watched_paging_queue(
    tmp_path: Path,
) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Tenants")
    topic = sns.Topic(stack, "OnCall", enforce_ssl=True)
    actions = [cloudwatch_actions.SnsAction(topic)]
    ResilientQueue(
        stack,
        "Documents",
        queue_name="documents",
        fair=True,
        expected_traffic=cdk.Duration.minutes(30),
        alarm_actions=actions,
        ok_actions=actions,
        # Its members carry no actions: the audit must read the composite's rule (QR024).
        composite_alarm=True,
    ).add_dashboard()
    audit = QueueResilienceChecks(fail_on="never")
    report = synth_with_packs(app, tmp_path, audit)

    on_library = violations_under(report, "Tenants/Documents/")
    assert on_library == []
    assert [(f.rule_id, f.severity) for f in audit.findings if f.severity != "info"] == []


# --- tiers -------------------------------------------------------------------------------------


def test_on_a_fair_queue_the_quiet_groups_page_and_the_whole_queue_files_a_ticket(
    stack: cdk.Stack,
) -> None:
    pager = sns.Topic(stack, "Pager")
    tickets = sns.Topic(stack, "Tickets")
    ResilientQueue(
        stack,
        "Tenants",
        queue_name="tenants",
        fair=True,
        expected_traffic=cdk.Duration.minutes(10),
        critical_actions=[cloudwatch_actions.SnsAction(pager)],
        warning_actions=[cloudwatch_actions.SnsAction(tickets)],
    )
    by_name = {
        a["Properties"]["AlarmName"]: a["Properties"]  # type: ignore[index]
        for a in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
    }
    pager_ref = {"Ref": stack.get_logical_id(pager.node.default_child)}  # type: ignore[arg-type]
    tickets_ref = {"Ref": stack.get_logical_id(tickets.node.default_child)}  # type: ignore[arg-type]

    quiet = by_name["tenants-quiet-groups-oldest-message-age"]
    queue_wide = by_name["tenants-oldest-message-age"]
    silence = by_name["tenants-no-messages-sent"]
    assert quiet["AlarmActions"] == [pager_ref]
    assert str(quiet["AlarmDescription"]).startswith("Critical: pages")
    assert silence["AlarmActions"] == [pager_ref]
    assert queue_wide["AlarmActions"] == [tickets_ref]
    assert str(queue_wide["AlarmDescription"]).startswith("Warning: files a ticket")
    assert "one noisy tenant" in str(queue_wide["AlarmDescription"])


def test_the_composite_alarm_pages_for_the_quiet_groups_and_silent_producers(
    stack: cdk.Stack,
) -> None:
    pager = cloudwatch_actions.SnsAction(sns.Topic(stack, "Pager"))
    ResilientQueue(
        stack,
        "Tenants",
        queue_name="tenants",
        fair=True,
        expected_traffic=cdk.Duration.minutes(10),
        alarm_actions=[pager],
        composite_alarm=True,
    )
    [composite] = resources_of_type(stack, "AWS::CloudWatch::CompositeAlarm").values()
    rule = json.dumps(stack.resolve(composite["Properties"]["AlarmRule"]))  # type: ignore[index]

    assert "tenants-quiet-groups-oldest-message-age" in rule
    assert "tenants-no-messages-sent" in rule
    # The queue-wide age files a ticket on a fair queue: not a member, it keeps its actions.
    assert "tenants-oldest-message-age\\" not in rule
