"""The alarms of one ResilientQueue: which metric each watches, its threshold, its name and the
description that tells the person it wakes what happened and what to do.

``AlarmFactory`` holds what every alarm of a queue shares (the queue's name and type, its
``max_receive_count`` and its tiers, ``constructs_lib.alarms.tiers``, which give each alarm its
actions); ``constructs_lib.alarms.alarm`` decides how each alarm behaves (statistic, period, missing
data), so all of them behave alike. Each spec here chooses its alarm's tier and says why.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from aws_cdk import Names
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from constructs_lib import limits, policy
from constructs_lib.alarms.alarm import (
    ALARM_NAME_MAX_LENGTH,
    ALARM_PERIOD,
    AlarmSpec,
    QueueAlarms,
    Tier,
    event_source_metric,
    queue_count_metric,
    queue_metric,
)
from constructs_lib.alarms.tiers import AlarmTiers

if TYPE_CHECKING:
    from constructs_lib.params.settings import QueueSettings

# A consumer fails every message: at least this percentage of the events its mapping invoked
# it with failed, in each of this many consecutive minutes. Not 100: a stray success (a message
# that needs no downstream call) must not hide an outage. Several minutes: a burst of poison
# messages is the failed-messages alarm's business, not a page.
EVERY_MESSAGE_FAILED_PERCENT = 99
EVERY_MESSAGE_FAILED_MINUTES = 5
# Minutes without invocations read 0 % (FILL), so an idle queue never looks like a failing one.
EVERY_MESSAGE_FAILED_EXPRESSION = (
    "IF(FILL(invoked, 0) > 0, 100 * FILL(failed, 0) / FILL(invoked, 0), 0)"
)


class AlarmFactory:
    """Makes the alarms of the queues named ``queue_name`` in ``scope``, each with its tier's
    actions (``tiers``)."""

    def __init__(
        self,
        scope: Construct,
        queue_name: str,
        fifo: bool,
        max_receive_count: object,
        tiers: AlarmTiers,
        fair: bool = False,
    ) -> None:
        self.scope = scope
        self.queue_name = queue_name
        self.fifo = fifo
        self.max_receive_count = max_receive_count
        self.tiers = tiers
        self.fair = fair
        self._in_flight_spec: AlarmSpec | None = None

    @classmethod
    def of_queue(
        cls, scope: Construct, queue_name: str, fifo: bool, settings: QueueSettings
    ) -> AlarmFactory:
        """The factory of a ``ResilientQueue(...)`` call, from its ``settings``: its
        ``max_receive_count`` and its tiers' actions."""
        tiers = AlarmTiers.of_queue(scope, queue_name, settings)
        fair = settings.fair is True
        return cls(scope, queue_name, fifo, settings.max_receive_count, tiers, fair)

    def create(self, spec: AlarmSpec, scope: Construct | None = None) -> cloudwatch.Alarm:
        """One alarm of ``spec`` in ``scope`` (default: the queue's), with its tier's actions."""
        return self.tiers.create(spec, scope)

    def queue_alarms(
        self,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        in_flight_threshold: int,
        source_retention: int | None,
        dead_letter_retention: int | None,
    ) -> QueueAlarms:
        """In-flight, dead-letter depth, and oldest-message age on both queues; no DLQ age alarm
        when ``dead_letter_retention`` is None (an imported DLQ whose retention nobody stated)."""
        source_retention = source_retention or limits.RETENTION_DEFAULT
        source_age, dead_letter_age = policy.expiry_alarm_thresholds(
            source_retention,
            dead_letter_retention or limits.RETENTION_DEFAULT,
            self.fifo,
        )
        name = self.queue_name
        specs = {
            "in_flight": AlarmSpec(
                "InFlightAlarm",
                queue_metric(queue, limits.METRIC_IN_FLIGHT),
                in_flight_threshold,
                5,
                f"{name}-in-flight-high",
                self.in_flight_description(in_flight_threshold),
                Tier.WARNING,
                "consumers are falling behind, nothing is lost yet",
            ),
            "dead_letter_depth": AlarmSpec(
                "DeadLetterDepthAlarm",
                queue_metric(dead_letter_queue, limits.METRIC_VISIBLE),
                1,
                1,
                f"{name}-dead-letters",
                f"Messages of {name} failed {self.max_receive_count} receives and are in its "
                "dead-letter queue. Read one, fix the cause, then redrive them with "
                "StartMessageMoveTask.",
                Tier.CRITICAL,
                "dead letters are arriving, nothing retries them",
            ),
            "source_expiry_risk": self._source_age_spec(queue, source_age),
        }
        if dead_letter_retention is not None:
            specs["dead_letter_expiry_risk"] = AlarmSpec(
                "DeadLetterExpiryRiskAlarm",
                queue_metric(dead_letter_queue, limits.METRIC_OLDEST_AGE),
                dead_letter_age,
                1,
                f"{name}-dead-letter-age",
                self._dead_letter_age_description(
                    dead_letter_age, source_retention, dead_letter_retention
                ),
                Tier.CRITICAL,
                "dead letters are about to expire",
            )
        self._in_flight_spec = specs["in_flight"]
        alarms: dict[str, cloudwatch.Alarm | None] = {
            key: self.create(spec) for key, spec in specs.items()
        }
        alarms.setdefault("dead_letter_expiry_risk", None)
        return QueueAlarms(**alarms)  # type: ignore[arg-type]

    def _source_age_spec(self, queue: sqs.IQueue, threshold: int) -> AlarmSpec:
        name = self.queue_name
        if self.fair:
            # On a fair queue this age is also one noisy tenant's backlog; the quiet groups' age
            # alarm (constructs_lib.alarms.signals) pages when everybody is held up.
            return AlarmSpec(
                "SourceExpiryRiskAlarm",
                queue_metric(queue, limits.METRIC_OLDEST_AGE),
                threshold,
                1,
                f"{name}-oldest-message-age",
                f"The oldest message of the fair queue {name} is {threshold} s old, half its "
                "retention. With the quiet groups' age alarm quiet, one noisy tenant's backlog is "
                "aging: find its message group and decide whether its messages may wait, since "
                "they expire at the retention period.",
                Tier.WARNING,
                "one tenant's backlog is aging while the quiet tenants are served",
            )
        return AlarmSpec(
            "SourceExpiryRiskAlarm",
            queue_metric(queue, limits.METRIC_OLDEST_AGE),
            threshold,
            1,
            f"{name}-oldest-message-age",
            f"The oldest message of {name} is {threshold} s old, half its retention: consumers "
            "are not keeping up and messages will expire unprocessed.",
            Tier.CRITICAL,
            "messages are about to expire unprocessed",
        )

    def in_flight_description(self, threshold: int) -> str:
        name = self.queue_name
        return (
            f"{threshold} or more messages of {name} have been received but not deleted "
            "for 5 minutes: consumers are stuck, failing without reporting, or too slow. At the "
            "in-flight quota receives stop. Check the consumer's errors, duration and throttles."
        )

    def retune_in_flight(self, alarm: cloudwatch.Alarm, threshold: int) -> None:
        """Give the in-flight alarm a new threshold, and the description that names it."""
        cfn = alarm.node.default_child
        assert isinstance(cfn, cloudwatch.CfnAlarm) and self._in_flight_spec is not None
        cfn.threshold = threshold
        cfn.alarm_description = dataclasses.replace(
            self._in_flight_spec, description=self.in_flight_description(threshold)
        ).full_description

    def _dead_letter_age_description(
        self, threshold: int, source_retention: int, dead_letter_retention: int
    ) -> str:
        """What the DLQ age alarm means, in the terms its threshold came from: half the time a
        dead letter has left, or, when that is below the metric's one-minute floor, minutes."""
        name = self.queue_name
        left = dead_letter_retention if self.fifo else dead_letter_retention - source_retention
        if 2 * threshold > left:
            return (
                f"A message has waited {threshold} s in the dead-letter queue of {name}, which "
                f"leaves a dead letter {left} s in the worst case (DLQ retention "
                f"{dead_letter_retention} s{'' if self.fifo else f' minus the source retention {source_retention} s'}): "
                "dead letters may expire within minutes. Redrive or archive them now, and "
                "lengthen the DLQ's retention."
            )
        return (
            f"A message has waited {threshold} s in the dead-letter queue of {name}, half the "
            "time it has left before SQS deletes it. Redrive or archive the dead letters now."
        )

    def failed_messages(
        self,
        function: lambda_.IFunction,
        event_source: event_sources.SqsEventSource,
        mapping: IConstruct | None,
        namesakes: int,
        dead_letter: bool,
    ) -> cloudwatch.Alarm:
        """An alarm on the mapping's FailedInvokeEventCount, next to the mapping: in the
        function's stack, which already depends on the queue's (an alarm in the queue's stack
        would make the two stacks depend on each other). ``namesakes``: the queue's consumers
        before this one whose function has the same construct id."""
        if dead_letter:
            description = (
                f"Dead letters of {self.queue_name} failed again in {function.node.path}, the "
                "consumer of the dead-letter queue (FailedInvokeEventCount >= 1 in a minute). "
                "The DLQ has no DLQ of its own: they are retried until its retention deletes "
                "them. Read the function's errors and logs."
            )
        else:
            description = (
                f"Messages of {self.queue_name} failed in {function.node.path} "
                "(FailedInvokeEventCount >= 1 in a minute): the function raised, timed out, or "
                "returned them in batchItemFailures. They are retried after the visibility "
                f"timeout and move to the dead-letter queue after {self.max_receive_count} "
                "receives. Read the function's errors and logs."
            )
        spec = AlarmSpec(
            _beside_mapping("FailedMessagesAlarm", function, mapping),
            event_source_metric(event_source, limits.METRIC_ESM_FAILED),
            1,
            1,
            self._consumer_alarm_name(function, namesakes, dead_letter, "failed-messages"),
            description,
            Tier.WARNING,
            "some messages fail and are retried, nothing is lost yet",
        )
        return self.create(spec, mapping if isinstance(mapping, Construct) else None)

    def failing_every_message(
        self,
        function: lambda_.IFunction,
        event_source: event_sources.SqsEventSource,
        mapping: IConstruct | None,
        namesakes: int,
        dead_letter: bool,
    ) -> cloudwatch.Alarm:
        """An alarm when the consumer fails (essentially) every message it is invoked with, for
        several minutes: metric math over the mapping's FailedInvokeEventCount and
        InvokedEventCount, next to the mapping (see ``failed_messages``). Minutes without
        invocations read 0 %, so an idle queue stays OK."""
        percent, minutes = EVERY_MESSAGE_FAILED_PERCENT, EVERY_MESSAGE_FAILED_MINUTES
        failed_share = cloudwatch.MathExpression(
            expression=EVERY_MESSAGE_FAILED_EXPRESSION,
            using_metrics={
                "failed": event_source_metric(event_source, limits.METRIC_ESM_FAILED),
                "invoked": event_source_metric(event_source, limits.METRIC_ESM_INVOKED),
            },
            label="failed, % of invoked",
            period=ALARM_PERIOD,
        )
        queue = "the dead-letter queue of " if dead_letter else ""
        spec = AlarmSpec(
            _beside_mapping("FailingEveryMessageAlarm", function, mapping),
            failed_share,
            percent,
            minutes,
            self._consumer_alarm_name(function, namesakes, dead_letter, "failing-every-message"),
            f"{function.node.path} failed {percent} % or more of the messages of {queue}"
            f"{self.queue_name} it was invoked with, in each of the last {minutes} minutes "
            "(FailedInvokeEventCount / InvokedEventCount): nothing gets through. Minutes "
            "without invocations count as 0 %. Look for a broken deployment, a downstream "
            "outage or a permission change; roll back or fix before "
            f"{'the dead letters expire' if dead_letter else 'the messages reach the dead-letter queue'}.",
            Tier.CRITICAL,
            "a consumer fails every message, nothing gets through",
        )
        return self.create(spec, mapping if isinstance(mapping, Construct) else None)

    def _consumer_alarm_name(
        self, function: lambda_.IFunction, namesakes: int, dead_letter: bool, what: str
    ) -> str:
        """``<queue>-<function>-<what>``: ``namesakes`` is the number of the queue's consumers
        before this one whose function has the same construct id."""
        queue_name = (
            policy.dead_letter_queue_name(self.queue_name, self.fifo)
            if dead_letter
            else self.queue_name
        )
        consumer_name = function.node.id
        if namesakes:
            consumer_name += f"-{namesakes + 1}"
        return f"{queue_name}-{consumer_name}-{what}"[:ALARM_NAME_MAX_LENGTH]

    def dead_letter_arrivals(self, dead_letter_queue: sqs.IQueue) -> cloudwatch.Alarm:
        name = self.queue_name
        spec = AlarmSpec(
            "DeadLetterArrivalsAlarm",
            # Never NumberOfMessagesSent: messages moved by the redrive policy are not counted.
            queue_count_metric(dead_letter_queue, limits.METRIC_RECEIVED),
            1,
            1,
            f"{name}-dead-letter-arrivals",
            f"The consumer of the dead-letter queue of {name} received messages "
            f"(NumberOfMessagesReceived >= 1 in a minute): messages failed {self.max_receive_count} "
            "receives on the source, or the consumer is retrying dead letters it failed. It drains "
            "the DLQ, so the dead-letters alarm stays quiet: find why the source's consumer fails.",
            Tier.CRITICAL,
            "dead letters are arriving, nothing retries them",
        )
        return self.create(spec)

    def sns_delivery_failures(self, construct_id: str, failures: sqs.IQueue) -> cloudwatch.Alarm:
        name = self.queue_name
        return self.create(
            AlarmSpec(
                construct_id,
                queue_metric(failures, limits.METRIC_VISIBLE),
                1,
                1,
                f"{name}-sns-delivery-failures",
                f"SNS could not deliver messages to {name} (the queue or key policy refused "
                "them, or the queue was unavailable) and put them in its SNS delivery-failures "
                "queue once its retries ended. Fix the cause, then send them to the queue again "
                "yourself: StartMessageMoveTask cannot move them (their source is not a queue).",
                Tier.CRITICAL,
                "SNS cannot deliver messages to the queue",
            )
        )


def _beside_mapping(
    construct_id: str, function: lambda_.IFunction, mapping: IConstruct | None
) -> str:
    """A consumer alarm's id: beside its mapping, or, when the mapping cannot be found (an
    imported function), in the queue's scope with the function's unique id."""
    if mapping is not None:
        return construct_id
    return f"{construct_id}{Names.node_unique_id(function.node)}"
