"""An optional CloudWatch dashboard for one ResilientQueue: people look at graphs first. The
alarms' states come first, one widget per tier ("Critical: pages", then "Warning: files a
ticket"), the composite alarm first among the critical ones when there is one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from constructs_lib import limits
from constructs_lib.alarms.alarm import (
    ALARM_PERIOD,
    Tier,
    event_source_metric,
    queue_count_metric,
    queue_metric,
)
from constructs_lib.params import combinations, prop_tables

if TYPE_CHECKING:
    from constructs_lib.consumer import LambdaConsumer
    from constructs_lib.queue.construct import ResilientQueue
    from constructs_lib.synth.deferred import WarningReporter

GRAPH_WIDTH = 12
GRAPH_HEIGHT = 6
# The event counts of one event source mapping, in the order a message meets them.
EVENT_COUNTS = (
    (limits.METRIC_ESM_POLLED, "polled"),
    (limits.METRIC_ESM_FILTERED_OUT, "filtered out (deleted unprocessed)"),
    (limits.METRIC_ESM_INVOKED, "invoked"),
    (limits.METRIC_ESM_FAILED, "failed"),
    (limits.METRIC_ESM_DELETED, "deleted (processed)"),
)


def _graph(
    title: str,
    metrics: list[cloudwatch.IMetric],
    annotations: list[cloudwatch.HorizontalAnnotation] | None = None,
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(
        title=title,
        left=metrics,
        left_annotations=annotations,
        width=GRAPH_WIDTH,
        height=GRAPH_HEIGHT,
    )


def add_dashboard(
    queue: ResilientQueue, reporter: WarningReporter, dashboard_name: str | None
) -> cloudwatch.Dashboard:
    """``ResilientQueue.add_dashboard``: its argument's kind and problems (``reporter`` raises
    the errors, warns the rest), then the dashboard."""
    prop_tables.DASHBOARD.check_kinds(lambda: queue.node.path, {"dashboard_name": dashboard_name})
    reporter.report([], combinations.dashboard_problems(queue, dashboard_name))
    return build_dashboard(queue, dashboard_name)


def build_dashboard(queue: ResilientQueue, dashboard_name: str | None) -> cloudwatch.Dashboard:
    """Queue depth, in-flight, oldest-message age, DLQ depth and arrivals, and each consumer's
    health and event counts."""
    source, dlq, alarms = queue.queue, queue.dead_letter_queue, queue.alarms
    consumers = [*queue.consumers, *queue.dead_letter_consumers]
    dead_letter_metrics: list[cloudwatch.IMetric] = [queue_metric(dlq, limits.METRIC_VISIBLE)]
    dead_letter_annotations = [alarms.dead_letter_depth.to_annotation()]
    if alarms.dead_letter_arrivals is not None:
        # A consumer drains the DLQ: arrivals show where the depth stays at zero.
        dead_letter_metrics.append(
            queue_count_metric(dlq, limits.METRIC_RECEIVED).with_(label="received")
        )
        dead_letter_annotations.append(alarms.dead_letter_arrivals.to_annotation())
    waiting: list[cloudwatch.IMetric] = [queue_metric(source, limits.METRIC_VISIBLE)]
    ages: list[cloudwatch.IMetric] = []
    if queue.fair:
        # The quiet groups beside the queue-wide figures: how much of a backlog is one tenant's.
        waiting = [
            queue_metric(source, limits.METRIC_VISIBLE).with_(label="all groups"),
            queue_metric(source, limits.METRIC_VISIBLE_QUIET).with_(label="quiet groups"),
        ]
        ages = [queue_metric(source, limits.METRIC_OLDEST_AGE_QUIET).with_(label="quiet groups")]
    widgets: list[cloudwatch.IWidget] = [
        *alarm_status_by_tier(queue),
        _graph("Messages waiting", waiting),
        _graph(
            "Messages in flight",
            [queue_metric(source, limits.METRIC_IN_FLIGHT)],
            # The threshold as deployed: consumers may have raised it after the alarm was made.
            [
                cloudwatch.HorizontalAnnotation(
                    value=queue.in_flight_threshold, label="in-flight alarm"
                )
            ],
        ),
        _graph(
            "Age of oldest message (s)",
            [
                queue_metric(source, limits.METRIC_OLDEST_AGE).with_(label="source"),
                queue_metric(dlq, limits.METRIC_OLDEST_AGE).with_(label="dead-letter queue"),
                *ages,
            ],
            [
                alarm.to_annotation()
                for alarm in (
                    alarms.source_expiry_risk,
                    alarms.dead_letter_expiry_risk,
                    alarms.quiet_groups_expiry_risk,
                )
                if alarm is not None
            ],
        ),
        _graph("Dead letters", dead_letter_metrics, dead_letter_annotations),
        *_signal_graphs(queue),
    ]
    for consumer in consumers:
        widgets += _consumer_graphs(consumer, consumer in queue.dead_letter_consumers)
    return cloudwatch.Dashboard(
        queue, "Dashboard", dashboard_name=dashboard_name, widgets=[[w] for w in widgets]
    )


def _signal_graphs(queue: ResilientQueue) -> list[cloudwatch.IWidget]:
    """Messages sent against the silent-producers alarm; a fair queue's noisy groups."""
    widgets: list[cloudwatch.IWidget] = []
    silence = queue.alarms.no_messages_sent
    if silence is not None:
        widgets.append(
            _graph(
                "Messages sent per expected period",
                [silence.metric],
                [silence.to_annotation()],
            )
        )
    if queue.fair:
        widgets.append(
            _graph(
                "Noisy message groups (tenants)",
                [queue_metric(queue.queue, limits.METRIC_NOISY_GROUPS)],
            )
        )
    return widgets


def alarm_status_by_tier(queue: ResilientQueue) -> list[cloudwatch.AlarmStatusWidget]:
    """One alarm-status widget per tier, titled with what the tier means; the composite alarm
    first among the critical alarms."""
    tiers = queue.alarm_tiers
    widgets = []
    for tier, alarms in tiers.by_tier().items():
        shown: list[cloudwatch.IAlarm] = list(alarms)
        if tier is Tier.CRITICAL and tiers.composite_alarm is not None:
            shown.insert(0, tiers.composite_alarm)
        widgets.append(
            cloudwatch.AlarmStatusWidget(
                title=tier.heading, alarms=shown, width=GRAPH_WIDTH * 2, height=3
            )
        )
    return widgets


def _consumer_graphs(consumer: LambdaConsumer, dead_letter: bool) -> list[cloudwatch.IWidget]:
    """The function's errors, throttles and duration; the mapping's event counts."""
    function = consumer.function
    title = f"{'Dead-letter consumer' if dead_letter else 'Consumer'} {function.node.id}"
    widgets: list[cloudwatch.IWidget] = [
        _graph(
            f"{title}: errors and throttles",
            [
                function.metric_errors(period=ALARM_PERIOD),
                function.metric_throttles(period=ALARM_PERIOD),
            ],
        ),
        _graph(
            f"{title}: duration (ms)",
            [function.metric_duration(period=ALARM_PERIOD, statistic=cloudwatch.Stats.MAXIMUM)],
            [
                cloudwatch.HorizontalAnnotation(
                    value=Duration.seconds(consumer.function_timeout).to_milliseconds(),
                    label="function timeout",
                )
            ],
        ),
    ]
    if consumer.failed_messages_alarm is not None:
        widgets.append(
            _graph(
                f"{title}: events per minute",
                [
                    event_source_metric(consumer.event_source, metric).with_(label=label)
                    for metric, label in EVENT_COUNTS
                ],
                [consumer.failed_messages_alarm.to_annotation()],
            )
        )
    return widgets
