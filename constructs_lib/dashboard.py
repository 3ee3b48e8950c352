"""An optional CloudWatch dashboard for one ResilientQueue: people look at graphs first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from constructs_lib import limits
from constructs_lib.alarms import ALARM_PERIOD, queue_metric

if TYPE_CHECKING:
    from constructs_lib.queue import ResilientQueue

GRAPH_WIDTH = 12
GRAPH_HEIGHT = 6


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


def build_dashboard(queue: ResilientQueue, dashboard_name: str | None) -> cloudwatch.Dashboard:
    """Queue depth, in-flight, oldest-message age, DLQ depth, and each consumer's health."""
    source, dlq, alarms = queue.queue, queue.dead_letter_queue, queue.alarms
    widgets: list[cloudwatch.IWidget] = [
        cloudwatch.AlarmStatusWidget(
            title="Alarms", alarms=list(alarms), width=GRAPH_WIDTH * 2, height=3
        ),
        _graph("Messages waiting", [queue_metric(source, limits.METRIC_VISIBLE)]),
        _graph(
            "Messages in flight",
            [queue_metric(source, limits.METRIC_IN_FLIGHT)],
            [alarms.in_flight.to_annotation()],
        ),
        _graph(
            "Age of oldest message (s)",
            [
                queue_metric(source, limits.METRIC_OLDEST_AGE).with_(label="source"),
                queue_metric(dlq, limits.METRIC_OLDEST_AGE).with_(label="dead-letter queue"),
            ],
            [
                alarms.source_expiry_risk.to_annotation(),
                alarms.dead_letter_expiry_risk.to_annotation(),
            ],
        ),
        _graph(
            "Dead letters",
            [queue_metric(dlq, limits.METRIC_VISIBLE)],
            [alarms.dead_letter_depth.to_annotation()],
        ),
    ]
    for consumer in queue.consumers:
        function = consumer.function
        widgets.append(
            _graph(
                f"Consumer {function.node.id}: errors and throttles",
                [
                    function.metric_errors(period=ALARM_PERIOD),
                    function.metric_throttles(period=ALARM_PERIOD),
                ],
            )
        )
        widgets.append(
            _graph(
                f"Consumer {function.node.id}: duration (ms)",
                [function.metric_duration(period=ALARM_PERIOD, statistic=cloudwatch.Stats.MAXIMUM)],
                [
                    cloudwatch.HorizontalAnnotation(
                        value=Duration.seconds(consumer.function_timeout).to_milliseconds(),
                        label="function timeout",
                    )
                ],
            )
        )
    return cloudwatch.Dashboard(
        queue, "Dashboard", dashboard_name=dashboard_name, widgets=[[w] for w in widgets]
    )
