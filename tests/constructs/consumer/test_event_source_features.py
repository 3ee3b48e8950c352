"""Event source metrics, provisioned mode, concurrency ceilings, expiry before dead-lettering,
filters, dead-letter consumers, message size, recursive loops and silent alarms: what the
constructs build, what they refuse, what they warn about, and that the audit agrees."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template

from constructs_lib import ConfigurationError, ResilientQueue
from constructs_lib.audit.engines import local as engine
from tests.constructs.conftest import (
    FunctionFactory,
    queue_properties,
    resources_of_type,
    warnings_matching,
)

S = cdk.Duration.seconds
MIB = 1_048_576
ONE_FILTER = [lambda_.FilterCriteria.filter({"body": {"kind": lambda_.FilterRule.is_equal("a")}})]


# --- helpers --------------------------------------------------------------------------------


def paged(stack: cdk.Stack, construct_id: str, **props: Any) -> ResilientQueue:
    """A queue whose alarms page someone (no silent-alarm warning in the way)."""
    topic = stack.node.try_find_child("OnCall") or sns.Topic(stack, "OnCall", enforce_ssl=True)
    assert isinstance(topic, sns.Topic)
    action = cloudwatch_actions.SnsAction(topic)
    return ResilientQueue(stack, construct_id, alarm_actions=[action], ok_actions=[action], **props)


def logical_id(stack: cdk.Stack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


def mapping_of(stack: cdk.Stack, queue: sqs.IQueue) -> tuple[str, dict[str, Any]]:
    """The (logical id, properties) of the one event source mapping reading ``queue``."""
    arn = {"Fn::GetAtt": [logical_id(stack, queue), "Arn"]}
    [found] = [
        (mapping_id, resource["Properties"])
        for mapping_id, resource in resources_of_type(
            stack, "AWS::Lambda::EventSourceMapping"
        ).items()
        if resource["Properties"]["EventSourceArn"] == arn  # type: ignore[index]
    ]
    return found  # type: ignore[return-value]


def alarm_named(stack: cdk.Stack, name: str) -> dict[str, Any]:
    for alarm in resources_of_type(stack, "AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        assert isinstance(properties, dict)
        if properties.get("AlarmName") == name:
            return properties
    raise AssertionError(f"no alarm named {name!r}")


def alarm_names(stack: cdk.Stack) -> set[str]:
    return {
        str(alarm["Properties"]["AlarmName"])  # type: ignore[index]
        for alarm in resources_of_type(stack, "AWS::CloudWatch::Alarm").values()
    }


def audit(stack: cdk.Stack) -> list[tuple[str, str]]:
    """(rule id, severity) of every finding the fleet audit makes on the synthesized app."""
    assembly = cdk.Stage.of(stack).synth(force=True)  # type: ignore[union-attr]
    result = engine.audit_paths([assembly.directory])
    return sorted((f.rule_id, f.severity) for f in result.findings)


def serious(findings: list[tuple[str, str]]) -> list[str]:
    return [rule for rule, severity in findings if severity in ("error", "warning")]


def construct_warnings(stack: cdk.Stack, warning_id: str) -> list[str]:
    return warnings_matching(stack, f"[ack: constructs_lib:{warning_id}]")


def dashboard_body(stack: cdk.Stack) -> str:
    [dashboard] = resources_of_type(stack, "AWS::CloudWatch::Dashboard").values()
    return json.dumps(stack.resolve(dashboard["Properties"]["DashboardBody"]))  # type: ignore[index]


# --- 1. event source metrics and the failed-messages alarm ----------------------------------


def test_event_source_metrics_are_on_by_default(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    _, mapping = mapping_of(stack, queue.queue)
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}


def test_each_consumer_gets_an_alarm_on_its_failed_messages(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())
    mapping_id, _ = mapping_of(stack, queue.queue)

    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "orders-Fn0-failed-messages",
            "Namespace": "AWS/Lambda",
            "MetricName": "FailedInvokeEventCount",
            "Dimensions": [{"Name": "EventSourceMappingUUID", "Value": {"Ref": mapping_id}}],
            "Statistic": "Sum",
            "Period": 60,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": 1,
            "TreatMissingData": "notBreaching",
        },
    )


def test_the_failed_messages_alarm_notifies_the_queues_actions(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    topic = {"Ref": logical_id(stack, stack.node.find_child("OnCall"))}
    alarm = alarm_named(stack, "orders-Fn0-failed-messages")
    assert alarm["AlarmActions"] == [topic]
    assert alarm["OKActions"] == [topic]


def test_the_consumer_exposes_its_failed_messages_alarm(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    consumer = queue.add_lambda_consumer(make_function())

    assert isinstance(consumer.failed_messages_alarm, cloudwatch.Alarm)
    cfn = consumer.failed_messages_alarm.node.default_child
    assert isinstance(cfn, cloudwatch.CfnAlarm)
    assert cfn.metric_name == "FailedInvokeEventCount"


def test_two_consumers_of_one_queue_get_an_alarm_each(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())
    queue.add_lambda_consumer(make_function())

    assert {"orders-Fn0-failed-messages", "orders-Fn1-failed-messages"} <= alarm_names(stack)


def test_metrics_can_be_turned_off_and_then_there_is_no_failed_messages_alarm(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    consumer = queue.add_lambda_consumer(
        make_function(), event_source_metrics=False, report_batch_item_failures=False
    )

    _, mapping = mapping_of(stack, queue.queue)
    assert "MetricsConfig" not in mapping
    assert consumer.failed_messages_alarm is None
    Template.from_stack(stack).resource_properties_count_is(
        "AWS::CloudWatch::Alarm", {"MetricName": "FailedInvokeEventCount"}, 0
    )


@pytest.mark.parametrize(
    ("metrics", "report", "warned"),
    [
        pytest.param(False, True, True, id="metrics-off-reporting-on"),
        pytest.param(False, False, False, id="metrics-off-reporting-off"),
        pytest.param(True, True, False, id="metrics-on-reporting-on"),
    ],
)
def test_warns_when_reported_failures_have_no_event_source_metrics(
    stack: cdk.Stack, make_function: FunctionFactory, metrics: bool, report: bool, warned: bool
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        make_function(), event_source_metrics=metrics, report_batch_item_failures=report
    )

    found = construct_warnings(stack, "event_source_metrics")
    assert bool(found) is warned
    if warned:
        assert "invocations succeed whatever happened to the messages" in found[0]
    # The audit's rule of the same meaning agrees.
    assert ("QR015" in serious(audit(stack))) is warned


def test_the_dashboard_graphs_each_consumers_event_counts_and_alarm(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    consumer = queue.add_lambda_consumer(make_function())
    queue.add_dashboard()

    body = dashboard_body(stack)
    for metric in (
        "PolledEventCount",
        "InvokedEventCount",
        "FailedInvokeEventCount",
        "FilteredOutEventCount",
        "DeletedEventCount",
    ):
        assert metric in body, metric
    assert consumer.failed_messages_alarm is not None
    alarm_id = logical_id(stack, consumer.failed_messages_alarm)
    assert alarm_id in body  # in the alarm status widget, by its ARN


def test_the_dashboard_has_no_event_counts_without_metrics(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        make_function(), event_source_metrics=False, report_batch_item_failures=False
    )
    queue.add_dashboard()

    assert "PolledEventCount" not in dashboard_body(stack)


def test_a_consumer_in_another_stack_gets_its_alarm_in_that_stack(
    make_function: FunctionFactory,
) -> None:
    app = cdk.App()
    queue_stack, function_stack = cdk.Stack(app, "Queues"), cdk.Stack(app, "Functions")
    queue = paged(queue_stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(scope=function_stack))

    app.synth()  # no dependency cycle between the two stacks
    assert "orders-Fn0-failed-messages" in alarm_names(function_stack)
    assert "orders-Fn0-failed-messages" not in alarm_names(queue_stack)


# --- 2. provisioned mode --------------------------------------------------------------------


def test_provisioned_pollers_reach_the_event_source_mapping(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    consumer = queue.add_lambda_consumer(make_function(), provisioned_pollers=(2, 20))

    _, mapping = mapping_of(stack, queue.queue)
    assert mapping["ProvisionedPollerConfig"] == {"MinimumPollers": 2, "MaximumPollers": 20}
    assert "ScalingConfig" not in mapping
    assert consumer.settings.provisioned_pollers == (2, 20)


def test_on_demand_polling_by_default(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    _, mapping = mapping_of(stack, queue.queue)
    assert "ProvisionedPollerConfig" not in mapping


POLLER_CASES = [
    pytest.param(
        (1, 10), "provisioned_pollers.minimum=1: must be between 2 and 200 pollers", id="min-1"
    ),
    pytest.param((2, 10), None, id="min-2"),
    pytest.param((200, 300), None, id="min-200"),
    pytest.param(
        (201, 300),
        "provisioned_pollers.minimum=201: must be between 2 and 200 pollers",
        id="min-201",
    ),
    pytest.param(
        (2, 1), "provisioned_pollers.maximum=1: must be between 2 and 2000 pollers", id="max-1"
    ),
    pytest.param((2, 2), None, id="max-2"),
    pytest.param((2, 2000), None, id="max-2000"),
    pytest.param(
        (2, 2001),
        "provisioned_pollers.maximum=2001: must be between 2 and 2000 pollers",
        id="max-2001",
    ),
    pytest.param((10, 10), None, id="min-equals-max"),
    pytest.param(
        (11, 10),
        "provisioned_pollers=(11, 10): has a minimum (11) above its maximum (10)",
        id="min-above-max",
    ),
]


@pytest.mark.parametrize(("pollers", "expected"), POLLER_CASES)
def test_provisioned_pollers_limits(
    stack: cdk.Stack,
    make_function: FunctionFactory,
    pollers: tuple[int, int],
    expected: str | None,
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    if expected is None:
        queue.add_lambda_consumer(make_function(), provisioned_pollers=pollers)
        _, mapping = mapping_of(stack, queue.queue)
        assert mapping["ProvisionedPollerConfig"] == {
            "MinimumPollers": pollers[0],
            "MaximumPollers": pollers[1],
        }
        return
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(make_function(), provisioned_pollers=pollers)
    message = str(raised.value)
    assert expected in message
    assert "Fix: " in message
    assert not resources_of_type(stack, "AWS::Lambda::EventSourceMapping")


def test_a_poller_count_token_is_passed_through_and_warned_about(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    maximum = cdk.CfnParameter(stack, "MaximumPollers", type="Number")
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(), provisioned_pollers=(2, maximum.value_as_number))

    _, mapping = mapping_of(stack, queue.queue)
    assert mapping["ProvisionedPollerConfig"] == {
        "MinimumPollers": 2,
        "MaximumPollers": {"Ref": "MaximumPollers"},
    }
    assert warnings_matching(stack, "provisioned_pollers is a token")


def test_fails_for_provisioned_pollers_with_maximum_concurrency(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(make_function(), provisioned_pollers=(2, 20), max_concurrency=50)

    [problem] = raised.value.problems
    assert problem.prop == "max_concurrency"
    assert "max_concurrency=50: cannot be combined with provisioned pollers" in str(raised.value)
    assert "cap concurrency with the maximum poller count instead" in str(raised.value)


def test_the_error_lists_every_poller_problem_at_once(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(make_function(), provisioned_pollers=(1, 2001), max_concurrency=5)

    assert [p.prop for p in raised.value.problems] == [
        "provisioned_pollers.minimum",
        "provisioned_pollers.maximum",
        "max_concurrency",
    ]


def test_in_flight_threshold_follows_what_capped_consumers_hold(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    window = S(1)
    # 1,000 concurrent invocations x 50 messages, then 20 pollers x 10 x 200 messages.
    queue.add_lambda_consumer(
        make_function(), max_concurrency=1000, batch_size=50, max_batching_window=window
    )
    queue.add_lambda_consumer(
        make_function(), provisioned_pollers=(2, 20), batch_size=200, max_batching_window=window
    )

    alarm = alarm_named(stack, "orders-in-flight-high")
    assert alarm["Threshold"] == 1000 * 50 + 20 * 10 * 200 + 1
    assert str(alarm["AlarmDescription"]).startswith(
        "Warning: files a ticket — consumers are falling behind, nothing is lost yet. "
        "90001 or more messages of orders"
    )
    assert queue.in_flight_threshold == 90_001


def test_in_flight_threshold_stays_a_tenth_of_the_quota_for_small_consumers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(), max_concurrency=100, batch_size=10)  # 1,000

    assert alarm_named(stack, "orders-in-flight-high")["Threshold"] == 12_000


def test_in_flight_threshold_never_passes_the_quota(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        make_function(), provisioned_pollers=(2, 2000), batch_size=100, max_batching_window=S(1)
    )

    assert alarm_named(stack, "orders-in-flight-high")["Threshold"] == 120_000


def test_uncapped_consumers_leave_the_in_flight_threshold(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(), batch_size=10_000, max_batching_window=S(1))

    assert alarm_named(stack, "orders-in-flight-high")["Threshold"] == 12_000


def test_a_chosen_in_flight_threshold_is_kept_whatever_the_consumers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders", in_flight_alarm_threshold=500)
    queue.add_lambda_consumer(
        make_function(), max_concurrency=1000, batch_size=50, max_batching_window=S(1)
    )

    assert alarm_named(stack, "orders-in-flight-high")["Threshold"] == 500


def test_the_dashboard_shows_the_in_flight_threshold_as_deployed(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        make_function(), max_concurrency=1000, batch_size=50, max_batching_window=S(1)
    )
    queue.add_dashboard()

    body = dashboard_body(stack)
    assert '\\"value\\":50001' in body
    assert '\\"value\\":12000' not in body


# --- 3. reserved concurrency against the queues feeding a function --------------------------


def reserved_function(stack: cdk.Stack, reserved: int | None, name: str = "Worker") -> Any:
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=S(30),
        reserved_concurrent_executions=reserved,
    )


@pytest.mark.parametrize(
    ("reserved", "warned"),
    [
        pytest.param(59, True, id="59"),
        pytest.param(60, False, id="60"),
        pytest.param(61, False, id="61"),
    ],
)
def test_warns_when_reserved_concurrency_is_below_the_queues_feeding_the_function(
    stack: cdk.Stack, reserved: int, warned: bool
) -> None:
    worker = reserved_function(stack, reserved)
    paged(stack, "Orders", queue_name="orders").add_lambda_consumer(worker, max_concurrency=30)
    paged(stack, "Refunds", queue_name="refunds").add_lambda_consumer(
        worker, provisioned_pollers=(2, 3)
    )

    found = construct_warnings(stack, "reserved_concurrent_executions")
    assert bool(found) is warned
    if warned:
        [message] = found
        assert f"reserved_concurrent_executions={reserved}: is below the 60 concurrent" in message
        assert "(orders 30 + refunds 30)" in message
        assert "raise the function's reserved concurrency to at least 60" in message
    assert ("QR017" in serious(audit(stack))) is warned


def test_the_reserved_concurrency_warning_does_not_depend_on_the_order_of_calls(
    stack: cdk.Stack,
) -> None:
    worker = reserved_function(stack, reserved=None)
    refunds = paged(stack, "Refunds", queue_name="refunds")
    orders = paged(stack, "Orders", queue_name="orders")
    refunds.add_lambda_consumer(worker, max_concurrency=30)
    # Reserved concurrency set after the first queue, through the escape hatch.
    cfn = worker.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    cfn.reserved_concurrent_executions = 40
    orders.add_lambda_consumer(worker, max_concurrency=20)

    [message] = construct_warnings(stack, "reserved_concurrent_executions")
    assert "reserved_concurrent_executions=40: is below the 50 concurrent" in message
    assert "(orders 20 + refunds 30)" in message


def test_a_dead_letter_consumer_counts_toward_the_functions_sources(stack: cdk.Stack) -> None:
    worker = reserved_function(stack, reserved=10)
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(worker, max_concurrency=5)
    queue.add_dead_letter_consumer(worker, max_concurrency=6)

    [message] = construct_warnings(stack, "reserved_concurrent_executions")
    assert "(orders 5 + orders-dlq 6)" in message


def test_consumers_through_an_alias_count_for_the_function(stack: cdk.Stack) -> None:
    worker = reserved_function(stack, reserved=10)
    live = worker.add_alias("live")
    paged(stack, "Orders", queue_name="orders").add_lambda_consumer(
        live, max_concurrency=20, function_timeout=S(30)
    )

    [message] = construct_warnings(stack, "reserved_concurrent_executions")
    assert "is below the 20 concurrent" in message


@pytest.mark.parametrize(
    ("reserved", "warned"),
    [
        pytest.param(1_249, True, id="1249"),
        pytest.param(1_250, False, id="1250"),
        pytest.param(1_251, False, id="1251"),
    ],
)
def test_an_uncapped_source_counts_as_lambdas_on_demand_limit(
    stack: cdk.Stack, reserved: int, warned: bool
) -> None:
    # Lambda guide, services-sqs-scaling: an on-demand SQS source scales up to 1,250
    # concurrent invocations; the construct and the audit warn alike below that.
    worker = reserved_function(stack, reserved=reserved)
    paged(stack, "Orders", queue_name="orders").add_lambda_consumer(worker)

    found = construct_warnings(stack, "reserved_concurrent_executions")
    assert bool(found) is warned
    assert ("QR017" in serious(audit(stack))) is warned
    if warned:
        [message] = found
        assert "is below the 1250 concurrent invocations" in message
        assert "(orders up to 1250 (no maximum concurrency))" in message
        assert "set the maximum concurrency of orders (at least 2)" in message


def test_a_small_reservation_fed_by_an_uncapped_queue_warns_on_both_sides(
    stack: cdk.Stack,
) -> None:
    # The classic case maximum concurrency was made for: throttled receives push healthy
    # messages to the DLQ.
    worker = reserved_function(stack, reserved=5)
    orders = paged(stack, "Orders", queue_name="orders")
    orders.add_lambda_consumer(worker)

    [message] = construct_warnings(stack, "reserved_concurrent_executions")
    assert "reserved_concurrent_executions=5: is below the 1250 concurrent" in message
    assert "QR017" in serious(audit(stack))


def test_capping_the_source_at_the_reservation_clears_the_warning(stack: cdk.Stack) -> None:
    worker = reserved_function(stack, reserved=5)
    paged(stack, "Orders", queue_name="orders").add_lambda_consumer(worker, max_concurrency=5)

    assert construct_warnings(stack, "reserved_concurrent_executions") == []
    assert "QR017" not in serious(audit(stack))


# --- 4. expiry before dead-lettering --------------------------------------------------------


@pytest.mark.parametrize(
    ("retention", "ok"),
    [
        pytest.param(299, False, id="299"),
        pytest.param(300, False, id="300"),
        pytest.param(301, True, id="301"),
    ],
)
def test_fails_when_messages_would_expire_before_reaching_the_dlq(
    stack: cdk.Stack, make_function: FunctionFactory, retention: int, ok: bool
) -> None:
    # 5 receives x (6 x 10 s) = 300 s.
    queue = paged(stack, "Orders", queue_name="orders", retention_period=S(retention))
    function = make_function(timeout_seconds=10)
    if ok:
        queue.add_lambda_consumer(function)
        assert serious(audit(stack)) == []
        return
    with pytest.raises(ConfigurationError) as raised:
        queue.add_lambda_consumer(function)
    message = str(raised.value)
    assert f"retention_period={retention}: is not longer than the 300 s" in message
    assert "(5 receives x 60 s visibility timeout)" in message
    assert "Fix: keep messages longer than 300 s" in message


def test_the_expiry_check_counts_the_largest_consumer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders", retention_period=S(1000))
    queue.add_lambda_consumer(make_function(timeout_seconds=10))  # 5 x 60 s: fine
    with pytest.raises(ConfigurationError, match=r"\(5 receives x 240 s visibility timeout\)"):
        queue.add_lambda_consumer(make_function(timeout_seconds=40))  # 5 x 240 s = 1,200 s


@pytest.mark.parametrize(
    ("retention", "ok"),
    [
        pytest.param(299, False, id="299"),
        pytest.param(300, False, id="300"),
        pytest.param(301, True, id="301"),
    ],
)
def test_fails_for_an_explicit_visibility_timeout_that_lets_messages_expire(
    stack: cdk.Stack, retention: int, ok: bool
) -> None:
    props = {"retention_period": S(retention), "visibility_timeout": S(60)}
    if ok:
        paged(stack, "Orders", queue_name="orders", **props)
        return
    with pytest.raises(ConfigurationError) as raised:
        paged(stack, "Orders", queue_name="orders", **props)
    assert f"retention_period={retention}: is not longer than the 300 s" in str(raised.value)
    assert str(raised.value).startswith("TestStack/Orders: ")


@pytest.mark.parametrize(
    ("retention", "ok"),
    [
        pytest.param(149, False, id="149"),
        pytest.param(150, False, id="150"),
        pytest.param(151, True, id="151"),
    ],
)
def test_a_queue_without_consumers_is_judged_at_synth_with_sqs_default_visibility(
    stack: cdk.Stack, retention: int, ok: bool
) -> None:
    # 5 receives x SQS's default 30 s = 150 s.
    paged(stack, "Orders", queue_name="orders", retention_period=S(retention))
    if ok:
        assert serious(audit(stack)) == []
        return
    with pytest.raises(RuntimeError, match=f"retention_period={retention}: is not longer than"):
        cdk.Stage.of(stack).synth()  # type: ignore[union-attr]


def test_a_consumer_added_before_synth_sets_the_visibility_the_synth_check_judges(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # 30 s default visibility x 5 = 150 s would be too long for 100 s; 5 x 6 x 3 s = 90 s is not.
    queue = paged(stack, "Orders", queue_name="orders", retention_period=S(100))
    queue.add_lambda_consumer(make_function(timeout_seconds=3))

    cdk.Stage.of(stack).synth()  # type: ignore[union-attr]
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 18


# --- 5. filters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "filters", [pytest.param(ONE_FILTER, id="filters"), pytest.param(None, id="none")]
)
def test_warns_that_messages_matching_no_filter_are_deleted(
    stack: cdk.Stack, make_function: FunctionFactory, filters: Any
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(), filters=filters)

    found = construct_warnings(stack, "filters")
    assert bool(found) is (filters is not None)
    if filters:
        assert "it is never dead-lettered" in found[0]
        assert "FilteredOutEventCount" in found[0]
    assert (("QR019", "info") in audit(stack)) is (filters is not None)


# --- 6. dead-letter consumers ---------------------------------------------------------------


def test_a_dead_letter_consumer_reads_the_dlq(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    consumer = queue.add_dead_letter_consumer(make_function(timeout_seconds=20), batch_size=5)

    _, mapping = mapping_of(stack, queue.dead_letter_queue)
    assert mapping["BatchSize"] == 5
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    assert consumer.queue is queue.dead_letter_queue
    assert queue.dead_letter_consumers == [consumer]
    assert queue.consumers == []


def test_the_dlq_visibility_timeout_is_derived_from_its_consumers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(timeout_seconds=10))
    queue.add_dead_letter_consumer(make_function(timeout_seconds=20))
    queue.add_dead_letter_consumer(make_function(timeout_seconds=40))

    assert queue_properties(stack, "orders-dlq")["VisibilityTimeout"] == 6 * 40
    assert queue_properties(stack, "orders")["VisibilityTimeout"] == 6 * 10
    assert queue.dead_letter_visibility_timeout == 240


def test_the_dlq_visibility_timeout_is_left_to_sqs_without_dead_letter_consumers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    assert "VisibilityTimeout" not in queue_properties(stack, "orders-dlq")
    assert queue.dead_letter_visibility_timeout is None


def test_a_dead_letter_consumer_brings_an_arrivals_alarm(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_dead_letter_consumer(make_function())

    dlq_id = logical_id(stack, queue.dead_letter_queue)
    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "orders-dead-letter-arrivals",
            "Namespace": "AWS/SQS",
            "MetricName": "NumberOfMessagesReceived",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}],
            "Statistic": "Sum",
            "Period": 60,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": 1,
            "TreatMissingData": "notBreaching",
            "AlarmActions": Match.any_value(),
        },
    )
    assert queue.alarms.dead_letter_arrivals is not None
    assert queue.alarms.dead_letter_arrivals in list(queue.alarms)


def test_the_depth_and_age_alarms_stay_next_to_the_arrivals_alarm(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_dead_letter_consumer(make_function())
    queue.add_dead_letter_consumer(make_function())

    assert alarm_names(stack) == {
        "orders-in-flight-high",
        "orders-dead-letters",
        "orders-oldest-message-age",
        "orders-dead-letter-age",
        "orders-dead-letter-arrivals",  # one, however many dead-letter consumers
        "orders-dlq-Fn0-failed-messages",
        "orders-dlq-Fn1-failed-messages",
        "orders-dlq-Fn0-failing-every-message",
        "orders-dlq-Fn1-failing-every-message",
    }


def test_no_arrivals_alarm_without_a_dead_letter_consumer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function())

    assert queue.alarms.dead_letter_arrivals is None
    assert "orders-dead-letter-arrivals" not in alarm_names(stack)


def test_a_dead_letter_consumer_may_consume_and_decrypt_the_dlq_only(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    key = kms.Key(stack, "Key")
    queue = paged(stack, "Orders", queue_name="orders", encryption_key=key)
    queue.add_dead_letter_consumer(make_function())

    [policy] = resources_of_type(stack, "AWS::IAM::Policy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]  # type: ignore[index]
    resources = [statement["Resource"] for statement in statements]
    assert {"Fn::GetAtt": [logical_id(stack, queue.dead_letter_queue), "Arn"]} in resources
    assert {"Fn::GetAtt": [logical_id(stack, key), "Arn"]} in resources
    assert {"Fn::GetAtt": [logical_id(stack, queue.queue), "Arn"]} not in resources


def test_fails_for_a_dead_letter_consumer_on_a_dlq_the_construct_did_not_create(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    mine = sqs.Queue(stack, "MyDlq", retention_period=cdk.Duration.days(14))
    queue = paged(stack, "Orders", queue_name="orders", dead_letter_queue=mine)

    with pytest.raises(ConfigurationError) as raised:
        queue.add_dead_letter_consumer(make_function())

    message = str(raised.value)
    assert "add_dead_letter_consumer=queue MyDlq: needs the dead-letter queue" in message
    assert "cannot set the visibility timeout of a dead_letter_queue you gave" in message
    assert "Fix: leave dead_letter_queue unset" in message
    assert not resources_of_type(stack, "AWS::Lambda::EventSourceMapping")


def test_fails_when_a_function_consumes_the_dlq_twice(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    worker = make_function()
    queue.add_dead_letter_consumer(worker)

    with pytest.raises(
        ConfigurationError, match="already consumes the dead-letter queue of TestStack/Orders"
    ):
        queue.add_dead_letter_consumer(worker)


def test_one_function_may_consume_the_source_and_its_dlq(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    worker = make_function()
    queue.add_lambda_consumer(worker)
    queue.add_dead_letter_consumer(worker)

    assert len(resources_of_type(stack, "AWS::Lambda::EventSourceMapping")) == 2


def test_a_dead_letter_consumer_gets_the_same_checks_as_a_source_consumer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    with pytest.raises(ConfigurationError) as raised:
        queue.add_dead_letter_consumer(make_function(), batch_size=11, provisioned_pollers=(1, 5))

    assert [p.prop for p in raised.value.problems] == [
        "max_batching_window",
        "provisioned_pollers.minimum",
    ]


def test_the_dashboard_graphs_dead_letter_arrivals_and_consumers(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_dead_letter_consumer(make_function())
    queue.add_dashboard()

    body = dashboard_body(stack)
    assert "NumberOfMessagesReceived" in body
    assert "Dead-letter consumer Fn0" in body
    assert "FailedInvokeEventCount" in body


# --- 7. maximum message size ----------------------------------------------------------------


def test_the_maximum_message_size_is_set_on_both_queues(stack: cdk.Stack) -> None:
    paged(stack, "Orders", queue_name="orders", max_message_size=262_144)

    assert queue_properties(stack, "orders")["MaximumMessageSize"] == 262_144
    assert queue_properties(stack, "orders-dlq")["MaximumMessageSize"] == 262_144


def test_the_maximum_message_size_is_left_to_sqs_by_default(stack: cdk.Stack) -> None:
    queue = paged(stack, "Orders", queue_name="orders")

    assert "MaximumMessageSize" not in queue_properties(stack, "orders")
    assert "MaximumMessageSize" not in queue_properties(stack, "orders-dlq")
    assert queue.max_message_size is None


@pytest.mark.parametrize(
    ("size", "ok"),
    [
        pytest.param(1_023, False, id="1023"),
        pytest.param(1_024, True, id="1024"),
        pytest.param(MIB, True, id="1048576"),
        pytest.param(MIB + 1, False, id="1048577"),
    ],
)
def test_maximum_message_size_limits(stack: cdk.Stack, size: int, ok: bool) -> None:
    if ok:
        paged(stack, "Orders", queue_name="orders", max_message_size=size)
        return
    with pytest.raises(ConfigurationError) as raised:
        paged(stack, "Orders", queue_name="orders", max_message_size=size)
    message = str(raised.value)
    assert f"max_message_size={size}: must be between 1024 and 1048576 bytes" in message
    assert "Fix: choose a size from 1024 to 1048576 bytes" in message


@pytest.mark.parametrize(
    ("source", "dead_letter", "ok"),
    [
        pytest.param(262_144, 262_143, False, id="dlq-one-byte-smaller"),
        pytest.param(262_144, 262_144, True, id="dlq-same"),
        pytest.param(262_144, None, True, id="dlq-default-1mib"),
        pytest.param(None, 262_144, False, id="source-default-1mib"),
        pytest.param(None, MIB, True, id="both-1mib"),
    ],
)
def test_a_given_dlq_must_take_every_message_of_the_source(
    stack: cdk.Stack, source: int | None, dead_letter: int | None, ok: bool
) -> None:
    mine = sqs.Queue(
        stack,
        "MyDlq",
        retention_period=cdk.Duration.days(14),
        max_message_size_bytes=dead_letter,
    )
    props = {"dead_letter_queue": mine, "max_message_size": source}
    if ok:
        paged(stack, "Orders", queue_name="orders", **props)
        return
    with pytest.raises(ConfigurationError) as raised:
        paged(stack, "Orders", queue_name="orders", **props)
    message = str(raised.value)
    assert f"above the dead-letter queue's maximum message size ({dead_letter} bytes)" in message
    assert "Fix: give the dead-letter queue a maximum message size at least the source's" in message


@pytest.mark.parametrize(
    ("batch_size", "warned"),
    [pytest.param(5, False, id="5"), pytest.param(6, False, id="6"), pytest.param(7, True, id="7")],
)
def test_warns_when_a_batch_of_the_largest_messages_passes_lambdas_payload(
    stack: cdk.Stack, make_function: FunctionFactory, batch_size: int, warned: bool
) -> None:
    # 6 x 1 MiB is exactly Lambda's 6 MB (6,291,456 bytes).
    queue = paged(stack, "Orders", queue_name="orders", max_message_size=MIB)
    queue.add_lambda_consumer(make_function(), batch_size=batch_size)

    found = construct_warnings(stack, "batch_size")
    assert bool(found) is warned
    if warned:
        assert "above Lambda's 6291456-byte invocation payload" in found[0]
        assert "(about 6 messages of the maximum size)" in found[0]
    assert ("QR022" in serious(audit(stack))) is warned


def test_no_payload_warning_when_the_size_is_left_to_sqs(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(make_function(), batch_size=10_000, max_batching_window=S(1))

    assert construct_warnings(stack, "batch_size") == []


def test_a_dead_letter_consumer_is_judged_against_the_same_size(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = paged(stack, "Orders", queue_name="orders", max_message_size=MIB)
    queue.add_dead_letter_consumer(make_function(), batch_size=7)

    assert construct_warnings(stack, "batch_size")


# --- 8. recursive loops ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loop", "warned"),
    [
        pytest.param(lambda_.RecursiveLoop.ALLOW, True, id="allow"),
        pytest.param(lambda_.RecursiveLoop.TERMINATE, False, id="terminate"),
        pytest.param(None, False, id="default"),
    ],
)
def test_warns_for_a_consumer_that_allows_recursive_loops(
    stack: cdk.Stack, loop: lambda_.RecursiveLoop | None, warned: bool
) -> None:
    worker = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=S(30),
        recursive_loop=loop,
    )
    paged(stack, "Orders", queue_name="orders").add_lambda_consumer(worker)

    found = construct_warnings(stack, "recursive_loop")
    assert bool(found) is warned
    if warned:
        assert "recursive_loop='Allow'" in found[0]
    assert ("QR028" in serious(audit(stack))) is warned


# --- silent alarms --------------------------------------------------------------------------


def test_warns_that_alarms_without_actions_notify_nobody(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders")

    [message] = construct_warnings(stack, "alarm_actions")
    assert "alarm_actions=[]: is empty, so the alarms notify nobody" in message
    assert "QR024" in serious(audit(stack))


def test_no_silent_alarm_warning_with_actions(stack: cdk.Stack) -> None:
    paged(stack, "Orders", queue_name="orders")

    assert construct_warnings(stack, "alarm_actions") == []


# --- parity: everything at once, zero audit findings of severity error or warning ----------


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_every_feature_together_passes_the_audit(
    stack: cdk.Stack, make_function: FunctionFactory, fifo: bool
) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    queue = paged(
        stack, "Orders", queue_name="orders", fifo=fifo, encryption_key=key, max_message_size=65_536
    )
    worker = reserved_function(stack, reserved=300, name="Worker")
    queue.add_lambda_consumer(worker, provisioned_pollers=(2, 20), batch_size=10)
    queue.add_lambda_consumer(make_function(timeout_seconds=60), max_concurrency=50)
    queue.add_dead_letter_consumer(make_function(timeout_seconds=20), max_concurrency=2)
    queue.add_dashboard()

    assert serious(audit(stack)) == []
    assert warnings_matching(stack, "[ack: constructs_lib:") == []
