"""Alarm factory: a metric and a threshold in, an alarm with the right statistic, period,
missing-data policy and actions out. The queue construct decides what to watch; this module
decides how every alarm behaves, so all of them behave alike.

Every alarm has a tier (``Tier``): critical alarms page someone, warning alarms file a ticket.
The tier is part of an alarm's spec, so adding an alarm means choosing its tier."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits

# SQS publishes one-minute data, and only while a queue is active: an idle queue has no data
# points, which must read as "nothing wrong" rather than INSUFFICIENT_DATA (SQS guide, monitoring).
ALARM_PERIOD = Duration.seconds(limits.SQS_METRIC_PERIOD)
# Approximate* metrics are gauges: the largest sample in the period is the one that matters.
ALARM_STATISTIC = cloudwatch.Stats.MAXIMUM
# Counters (messages received, events of an event source mapping) add up over the period.
COUNT_STATISTIC = cloudwatch.Stats.SUM
RUNBOOK = "Runbook: docs/alarms.md in the constructs_lib documentation."
# CloudWatch PutMetricAlarm AlarmName: 1-255 characters.
ALARM_NAME_MAX_LENGTH = 255


class Tier(StrEnum):
    """How urgent an alarm is: who hears of it, and how."""

    CRITICAL = "critical"
    """Pages on-call now: messages are lost or about to be (``critical_actions``)."""
    WARNING = "warning"
    """Files a ticket for working hours: something degrades, nothing is lost yet
    (``warning_actions``)."""

    @property
    def heading(self) -> str:
        """What the tier means to the person reading an alarm or a dashboard."""
        return "Critical: pages" if self is Tier.CRITICAL else "Warning: files a ticket"


@dataclass(frozen=True)
class AlarmSpec:
    """What one alarm watches, how urgent it is and what it tells the person it wakes.

    ``tier_reason`` says why the alarm has its tier, in a few words ("dead letters are
    arriving"); the description starts with the tier and that reason. The comparison and the
    missing-data policy default to what every alarm of a queue uses (at or above the threshold;
    no data is not breaching, for an idle queue); an alarm on something that must keep
    happening says otherwise (below the threshold, no data breaching).
    """

    construct_id: str
    metric: cloudwatch.IMetric
    threshold: int
    evaluation_periods: int
    alarm_name: str
    description: str
    tier: Tier
    tier_reason: str
    comparison_operator: cloudwatch.ComparisonOperator = (
        cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
    )
    # Most alarms watch for messages present: an idle queue publishes no data, which is healthy.
    treat_missing_data: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING

    @property
    def full_description(self) -> str:
        """The alarm's description: its tier and why, what happened, and the runbook."""
        return f"{self.tier.heading} — {self.tier_reason}. {self.description} {RUNBOOK}"


@dataclass(frozen=True)
class QueueAlarms:
    """The alarms of one ResilientQueue, by what they catch."""

    in_flight: cloudwatch.Alarm
    """Source ``ApproximateNumberOfMessagesNotVisible`` high: consumers stuck or too slow."""
    dead_letter_depth: cloudwatch.Alarm
    """DLQ ``ApproximateNumberOfMessagesVisible`` >= 1: messages failed every retry."""
    source_expiry_risk: cloudwatch.Alarm
    """Source ``ApproximateAgeOfOldestMessage`` past half its retention: messages about to expire."""
    dead_letter_expiry_risk: cloudwatch.Alarm | None
    """DLQ ``ApproximateAgeOfOldestMessage`` past half the time left: failures about to expire.
    None for an imported ``dead_letter_queue`` without ``dead_letter_retention_period``: its
    retention cannot be read, so no threshold can be derived (the construct warns)."""
    dead_letter_arrivals: cloudwatch.Alarm | None = None
    """DLQ ``NumberOfMessagesReceived`` >= 1 in a minute: made by ``add_dead_letter_consumer``,
    because a consumer drains the DLQ and its depth alarm then stays at zero. None without a
    dead-letter consumer."""
    no_messages_sent: cloudwatch.Alarm | None = None
    """Source ``NumberOfMessagesSent`` below 1 over ``expected_traffic``, missing data
    breaching: the producers fell silent. None without ``expected_traffic``."""
    quiet_groups_expiry_risk: cloudwatch.Alarm | None = None
    """Source ``ApproximateAgeOfOldestMessageInQuietGroups`` at the source's expiry threshold:
    on a fair queue, everybody is held up, not one noisy tenant. None unless ``fair``."""

    def __iter__(self) -> Iterator[cloudwatch.Alarm]:
        yield from (self.in_flight, self.dead_letter_depth, self.source_expiry_risk)
        if self.dead_letter_expiry_risk is not None:
            yield self.dead_letter_expiry_risk
        for optional in (
            self.dead_letter_arrivals,
            self.no_messages_sent,
            self.quiet_groups_expiry_risk,
        ):
            if optional is not None:
                yield optional


def queue_metric(queue: sqs.IQueue, metric_name: str) -> cloudwatch.Metric:
    """An SQS gauge at the period and statistic every alarm and graph of this library uses."""
    return queue.metric(metric_name, period=ALARM_PERIOD, statistic=ALARM_STATISTIC)


def queue_count_metric(queue: sqs.IQueue, metric_name: str) -> cloudwatch.Metric:
    """An SQS counter (``NumberOfMessagesReceived``...), summed per minute."""
    return queue.metric(metric_name, period=ALARM_PERIOD, statistic=COUNT_STATISTIC)


def event_source_metric(
    event_source: event_sources.SqsEventSource, metric_name: str
) -> cloudwatch.Metric:
    """An event source mapping's event count (``FailedInvokeEventCount``...), summed per minute.

    Published only when the mapping's MetricsConfig has ``EventCount``; the dimension is the
    mapping's UUID, which is its ``Ref`` (Lambda guide, monitoring-metrics-types).
    """
    return cloudwatch.Metric(
        namespace=limits.ESM_METRIC_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={limits.ESM_METRIC_DIMENSION: event_source.event_source_mapping_id},
        period=ALARM_PERIOD,
        statistic=COUNT_STATISTIC,
    )


def create_alarm(
    scope: Construct,
    spec: AlarmSpec,
    alarm_actions: Sequence[cloudwatch.IAlarmAction],
    ok_actions: Sequence[cloudwatch.IAlarmAction],
) -> cloudwatch.Alarm:
    alarm = cloudwatch.Alarm(
        scope,
        spec.construct_id,
        metric=spec.metric,
        threshold=spec.threshold,
        evaluation_periods=spec.evaluation_periods,
        datapoints_to_alarm=spec.evaluation_periods,
        comparison_operator=spec.comparison_operator,
        treat_missing_data=spec.treat_missing_data,
        alarm_name=spec.alarm_name,
        alarm_description=spec.full_description,
    )
    if alarm_actions:
        alarm.add_alarm_action(*alarm_actions)
    if ok_actions:
        alarm.add_ok_action(*ok_actions)
    return alarm
