"""What a ResilientQueue watches beyond its consumers' failures: producers that fall silent
(``expected_traffic``) and, on a fair queue (``fair``), the tenants a noisy one must not hold up.

Silent producers: a queue that stops receiving messages is often the first sign of an outage
upstream, and no depth or age alarm sees it (both stay at zero). The alarm sums
``NumberOfMessagesSent`` over the period the app expects a message in and fires below one. SQS
publishes nothing for a queue inactive for six hours, so missing data counts as silence.

Fair queues: a standard queue whose producers set ``MessageGroupId`` serves the quiet groups
(tenants) first while one is noisy. Nothing changes on the queue; what changes is what to watch:
the queue-wide age alarm also fires when only the noisy tenant's backlog ages, while the quiet
groups' age shows whether everybody else is held up.
"""

from __future__ import annotations

import dataclasses

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs

from constructs_lib import limits, policy
from constructs_lib.alarms.alarm import ALARM_PERIOD, ALARM_STATISTIC, AlarmSpec, QueueAlarms, Tier
from constructs_lib.alarms.factory import AlarmFactory
from constructs_lib.errors import Problem


def signal_problems(fifo: bool, expected_traffic: int | None, fair: object) -> list[Problem]:
    """What is wrong with ``expected_traffic`` (seconds, its range already checked) and
    ``fair`` for a queue of this type."""
    problems: list[Problem] = []
    if expected_traffic is not None and expected_traffic % limits.ALARM_PERIOD_MULTIPLE:
        minutes = max(expected_traffic // limits.ALARM_PERIOD_MULTIPLE, 1)
        problems.append(
            Problem(
                "expected_traffic",
                expected_traffic,
                "must be whole minutes: it is the period of an alarm on SQS's one-minute "
                "metrics, and CloudWatch takes only multiples of 60 s for those",
                f"pass expected_traffic=Duration.minutes({minutes})",
            )
        )
    if fair is True and fifo:
        problems.append(
            Problem(
                "fair",
                True,
                "applies only to standard queues: a fair queue is a standard queue whose "
                "producers set MessageGroupId, while a FIFO queue already delivers each message "
                "group in order, one message at a time",
                "remove fair=True, or make the queue standard (fifo=False)",
            )
        )
    return problems


def silent_producers_spec(queue: sqs.IQueue, queue_name: str, period: int) -> AlarmSpec:
    """No message sent to the queue in ``period`` seconds; missing data breaches."""
    return AlarmSpec(
        "NoMessagesSentAlarm",
        queue.metric(
            limits.METRIC_SENT,
            period=Duration.seconds(period),
            statistic=cloudwatch.Stats.SUM,
        ),
        1,
        1,
        f"{queue_name}-no-messages-sent",
        f"No message was sent to {queue_name} for {_period_text(period)} (NumberOfMessagesSent "
        "below 1, or no data: SQS stops publishing the metrics of a queue idle for six hours): "
        "its producers stopped. Look upstream: a failed deploy, an outage, a revoked permission "
        "or key grant, a changed subscription or rule.",
        tier=Tier.CRITICAL,
        tier_reason="the producers stopped: an outage upstream",
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
    )


def quiet_groups_expiry_spec(queue: sqs.IQueue, queue_name: str, threshold: int) -> AlarmSpec:
    """The quiet groups' oldest message at the source's expiry threshold: not one noisy tenant,
    everybody is held up."""
    return AlarmSpec(
        "QuietGroupsExpiryRiskAlarm",
        queue.metric(
            limits.METRIC_OLDEST_AGE_QUIET, period=ALARM_PERIOD, statistic=ALARM_STATISTIC
        ),
        threshold,
        1,
        f"{queue_name}-quiet-groups-oldest-message-age",
        f"The oldest message of the quiet tenants (message groups SQS does not flag as noisy) "
        f"of the fair queue {queue_name} is {threshold} s old, half its retention: the consumers "
        "are not keeping up for everyone, not only for one noisy tenant, and messages will "
        "expire unprocessed.",
        Tier.CRITICAL,
        "every tenant's messages are about to expire unprocessed",
    )


def _period_text(seconds: int) -> str:
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} s"


def with_signal_alarms(
    factory: AlarmFactory,
    alarms: QueueAlarms,
    queue: sqs.IQueue,
    expected_traffic: int | None,
    fair: bool,
    source_retention: int | None,
) -> QueueAlarms:
    """``alarms`` with the silent-producers alarm (``expected_traffic`` seconds) and, on a fair
    queue, the quiet groups' age alarm at the source age alarm's threshold."""
    name = factory.queue_name
    retention = source_retention or limits.RETENTION_DEFAULT
    # The source's threshold depends on its own retention only; the DLQ's is not used here.
    source_age_threshold, _ = policy.expiry_alarm_thresholds(retention, retention, factory.fifo)
    added: dict[str, cloudwatch.Alarm] = {}
    if expected_traffic is not None:
        added["no_messages_sent"] = factory.create(
            silent_producers_spec(queue, name, expected_traffic)
        )
    if fair:
        added["quiet_groups_expiry_risk"] = factory.create(
            quiet_groups_expiry_spec(queue, name, source_age_threshold)
        )
    return dataclasses.replace(alarms, **added)
