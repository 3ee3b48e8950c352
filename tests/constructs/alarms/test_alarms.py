"""The alarms a ResilientQueue creates: what they watch, when they fire, what they say."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from constructs_lib import ResilientQueue
from tests.constructs.conftest import FunctionFactory, resources_of_type

DAY = 24 * 3600


def alarms_by_metric_and_queue(stack: cdk.Stack) -> dict[tuple[str, str], dict[str, object]]:
    """Alarm properties keyed by (metric name, queue logical id named in the dimension)."""
    found: dict[tuple[str, str], dict[str, object]] = {}
    for alarm in resources_of_type(stack, "AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        assert isinstance(properties, dict)
        [dimension] = properties["Dimensions"]
        queue_logical_id = dimension["Value"]["Fn::GetAtt"][0]
        found[(properties["MetricName"], queue_logical_id)] = properties
    return found


def logical_ids(stack: cdk.Stack, queue: ResilientQueue) -> tuple[str, str]:
    return (
        stack.get_logical_id(queue.queue.node.default_child),  # type: ignore[arg-type]
        stack.get_logical_id(queue.dead_letter_queue.node.default_child),  # type: ignore[arg-type]
    )


def test_every_alarm_reads_one_minute_maximums_and_treats_silence_as_ok(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    alarms = resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
    assert len(alarms) == 4
    for alarm in alarms:
        properties = alarm["Properties"]
        assert properties["Namespace"] == "AWS/SQS"  # type: ignore[index]
        assert properties["Statistic"] == "Maximum"  # type: ignore[index]
        assert properties["Period"] == 60  # type: ignore[index]
        assert properties["TreatMissingData"] == "notBreaching"  # type: ignore[index]
        assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"  # type: ignore[index]


def test_in_flight_alarm_watches_the_source_at_a_tenth_of_the_quota(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    source_id, _ = logical_ids(stack, queue)

    alarm = alarms_by_metric_and_queue(stack)[("ApproximateNumberOfMessagesNotVisible", source_id)]
    assert alarm["Threshold"] == 12_000  # 120,000 in-flight quota / 10
    assert alarm["EvaluationPeriods"] == 5


def test_in_flight_threshold_can_be_chosen(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders", in_flight_alarm_threshold=250)
    source_id, _ = logical_ids(stack, queue)

    alarm = alarms_by_metric_and_queue(stack)[("ApproximateNumberOfMessagesNotVisible", source_id)]
    assert alarm["Threshold"] == 250


def test_dlq_alarm_fires_on_the_first_visible_message(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    _, dlq_id = logical_ids(stack, queue)

    alarm = alarms_by_metric_and_queue(stack)[("ApproximateNumberOfMessagesVisible", dlq_id)]
    assert alarm["Threshold"] == 1
    assert alarm["EvaluationPeriods"] == 1


def test_no_alarm_watches_number_of_messages_sent(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    metrics = {metric for metric, _ in alarms_by_metric_and_queue(stack)}
    assert "NumberOfMessagesSent" not in metrics


@pytest.mark.parametrize(
    ("fifo", "source_days", "dlq_days", "source_threshold", "dlq_threshold"),
    [
        # Standard: a moved message keeps its enqueue time, so in the worst case it has
        # (DLQ retention - source retention) left in the DLQ; alarm at half of that.
        pytest.param(False, 4, 14, 2 * DAY, 5 * DAY, id="standard-4d-14d"),
        pytest.param(False, 1, 7, DAY // 2, 3 * DAY, id="standard-1d-7d"),
        # FIFO resets the time on the move: the DLQ's whole retention is left.
        pytest.param(True, 4, 14, 2 * DAY, 7 * DAY, id="fifo-4d-14d"),
    ],
)
def test_expiry_alarms_fire_at_half_the_time_a_message_has_left(
    stack: cdk.Stack,
    fifo: bool,
    source_days: int,
    dlq_days: int,
    source_threshold: int,
    dlq_threshold: int,
) -> None:
    queue = ResilientQueue(
        stack,
        "Orders",
        queue_name="orders",
        fifo=fifo,
        retention_period=cdk.Duration.days(source_days),
        dead_letter_retention_period=cdk.Duration.days(dlq_days),
    )
    source_id, dlq_id = logical_ids(stack, queue)

    alarms = alarms_by_metric_and_queue(stack)
    assert alarms[("ApproximateAgeOfOldestMessage", source_id)]["Threshold"] == source_threshold
    assert alarms[("ApproximateAgeOfOldestMessage", dlq_id)]["Threshold"] == dlq_threshold


def test_alarm_names_and_descriptions_tell_on_call_what_happened(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders", max_receive_count=7)
    _, dlq_id = logical_ids(stack, queue)

    alarm = alarms_by_metric_and_queue(stack)[("ApproximateNumberOfMessagesVisible", dlq_id)]
    assert alarm["AlarmName"] == "orders-dead-letters"
    description = str(alarm["AlarmDescription"])
    assert "orders" in description
    assert "failed 7 receives" in description
    assert "StartMessageMoveTask" in description
    assert "Runbook" in description


def test_alarms_are_exposed_by_name(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")

    names = {
        "in_flight": "orders-in-flight-high",
        "dead_letter_depth": "orders-dead-letters",
        "source_expiry_risk": "orders-oldest-message-age",
        "dead_letter_expiry_risk": "orders-dead-letter-age",
    }
    for attribute, alarm_name in names.items():
        alarm = getattr(queue.alarms, attribute)
        cfn = alarm.node.default_child
        assert cfn.alarm_name == alarm_name


def test_dashboard_graphs_the_queue_dlq_and_consumers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(timeout_seconds=30))
    queue.add_dashboard("orders-pipeline")

    [dashboard] = resources_of_type(stack, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "orders-pipeline"  # type: ignore[index]
    body = str(stack.resolve(dashboard["Properties"]["DashboardBody"]))  # type: ignore[index]
    for metric in (
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateAgeOfOldestMessage",
        "Errors",
        "Throttles",
        "Duration",
    ):
        assert metric in body, metric
