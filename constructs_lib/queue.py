"""ResilientQueue: an SQS source queue, its dead-letter queue, their alarms and Lambda consumers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import (
    Acknowledgment,
    Annotations,
    ArnFormat,
    Duration,
    Names,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits, policy, props
from constructs_lib.alarms import AlarmSpec, QueueAlarms, create_alarm, queue_metric
from constructs_lib.consumer import (
    ConsumerSettings,
    LambdaConsumer,
    function_timeout_seconds,
    make_event_source,
)
from constructs_lib.errors import ConfigurationError, Problem

DEFAULT_DEAD_LETTER_RETENTION = Duration.seconds(limits.RETENTION_MAX)
WARNING_PREFIX = "constructs_lib"


class ResilientQueue(Construct):
    """An SQS queue built for Lambda consumers, with a dead-letter queue and alarms.

    Creates a source queue and a dead-letter queue (DLQ) of the same type, both encrypted and
    refusing requests without TLS; a redrive policy from source to DLQ and a redrive-allow policy
    on the DLQ that admits only this source; and alarms on in-flight messages, DLQ depth and the
    age of the oldest message in each queue. ``add_lambda_consumer`` attaches functions and
    derives the source's visibility timeout from their timeouts.

    Both queues get deterministic physical names (the DLQ's redrive-allow policy must name the
    source's ARN without referring to the source resource, which would be a circular
    dependency). Changing a property that forces replacement, such as ``fifo``, therefore needs
    a new ``queue_name`` or construct id.

    Every argument is checked for its kind and range before any value reaches CDK: a value of
    the wrong kind raises ``TypeError``, a value out of range ``ConfigurationError`` (see the
    parameter tables in the docs).

    :param fifo: FIFO queues. Default: inferred from ``queue_name`` (a name ending ``.fifo``),
        else standard. The DLQ always has the source's type.
    :param queue_name: base name of the source queue; the DLQ is named ``<name>-dlq`` (plus
        ``.fifo``). At most 80 characters with those suffixes, of letters, digits, ``-`` and
        ``_``. Default: generated from the construct path.
    :param max_receive_count: receives before a message moves to the DLQ, 1-1,000. Default: 5,
        the least AWS recommends with a Lambda consumer.
    :param retention_period: source retention, 60 s-14 days; on a standard queue it must be
        shorter than the DLQ's. Default: 4 days (SQS's default).
    :param dead_letter_retention_period: DLQ retention, 60 s-14 days. Default: 14 days.
    :param visibility_timeout: source visibility timeout. Default: derived from the consumers
        (``visibility_timeout_factor`` x function timeout + batching window, largest over the
        consumers), or 30 s (SQS's default) with no consumer. An explicit value below the
        derived one is an error.
    :param encryption_key: a KMS key for SSE-KMS on both queues. Default: SSE-SQS.
    :param content_based_deduplication: FIFO only. Default: off.
    :param deduplication_scope: FIFO only. Default: SQS's (``QUEUE``).
    :param fifo_throughput_limit: FIFO only. Default: SQS's (``PER_QUEUE``).
    :param dead_letter_queue: use this DLQ instead of creating one; it must have the source's type
        and you own its retention and redrive-allow policy. Default: one is created.
    :param alarm_actions: actions of every alarm when it fires. Default: none.
    :param ok_actions: actions of every alarm when it recovers. Default: none.
    :param in_flight_alarm_threshold: in-flight messages that raise the in-flight alarm, 1 up to
        the queue's in-flight quota (120,000). Default: 12,000, a tenth of the quota.
    :param removal_policy: for both queues. Default: CDK's (destroy).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        fifo: bool | None = None,
        queue_name: str | None = None,
        max_receive_count: int = limits.MAX_RECEIVE_COUNT_DEFAULT,
        retention_period: Duration | None = None,
        dead_letter_retention_period: Duration | None = None,
        visibility_timeout: Duration | None = None,
        encryption_key: kms.IKey | None = None,
        content_based_deduplication: bool | None = None,
        deduplication_scope: sqs.DeduplicationScope | None = None,
        fifo_throughput_limit: sqs.FifoThroughputLimit | None = None,
        dead_letter_queue: sqs.IQueue | None = None,
        alarm_actions: Sequence[cloudwatch.IAlarmAction] = (),
        ok_actions: Sequence[cloudwatch.IAlarmAction] = (),
        in_flight_alarm_threshold: int | None = None,
        removal_policy: RemovalPolicy | None = None,
    ) -> None:
        arguments = {
            "scope": scope,
            "construct_id": construct_id,
            "fifo": fifo,
            "queue_name": queue_name,
            "max_receive_count": max_receive_count,
            "retention_period": retention_period,
            "dead_letter_retention_period": dead_letter_retention_period,
            "visibility_timeout": visibility_timeout,
            "encryption_key": encryption_key,
            "content_based_deduplication": content_based_deduplication,
            "deduplication_scope": deduplication_scope,
            "fifo_throughput_limit": fifo_throughput_limit,
            "dead_letter_queue": dead_letter_queue,
            "alarm_actions": alarm_actions,
            "ok_actions": ok_actions,
            "in_flight_alarm_threshold": in_flight_alarm_threshold,
            "removal_policy": removal_policy,
        }
        props.check_new_construct(props.QUEUE, arguments)
        super().__init__(scope, construct_id)
        given = props.check_queue(arguments)
        self._report(given.unresolved, given.problems)

        self.fifo = given.fifo
        """Whether both queues are FIFO."""
        self.max_receive_count = max_receive_count
        self.source_retention = given.source_retention
        self.dead_letter_retention = given.dead_letter_retention
        self._explicit_visibility: int | None = given["visibility_timeout"]
        self._stack = Stack.of(self)
        self.queue_name = self._physical_name(queue_name)
        """Physical name of the source queue."""

        encryption = sqs.QueueEncryption.KMS if encryption_key else sqs.QueueEncryption.SQS_MANAGED
        self.dead_letter_queue: sqs.IQueue = dead_letter_queue or self._create_dead_letter_queue(
            dead_letter_retention_period or DEFAULT_DEAD_LETTER_RETENTION,
            encryption,
            encryption_key,
            removal_policy,
        )
        """The dead-letter queue (created, or the one given)."""
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=self.queue_name,
            fifo=self.fifo or None,
            retention_period=retention_period,
            visibility_timeout=visibility_timeout,
            encryption=encryption,
            encryption_master_key=encryption_key,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=max_receive_count
            ),
            content_based_deduplication=content_based_deduplication,
            deduplication_scope=deduplication_scope,
            fifo_throughput_limit=fifo_throughput_limit,
            removal_policy=removal_policy,
        )
        """The source queue."""
        self.consumers: list[LambdaConsumer] = []
        self.alarms = self._create_alarms(
            in_flight_alarm_threshold or policy.default_in_flight_threshold(self.fifo),
            alarm_actions,
            ok_actions,
        )

    # --- consumers ---------------------------------------------------------------------------

    def add_lambda_consumer(
        self,
        function: lambda_.IFunction,
        *,
        batch_size: int = limits.BATCH_SIZE_DEFAULT,
        max_batching_window: Duration | None = None,
        max_concurrency: int | None = None,
        report_batch_item_failures: bool = True,
        visibility_timeout_factor: float = limits.VISIBILITY_TIMEOUT_FACTOR,
        function_timeout: Duration | None = None,
        enabled: bool = True,
        filters: Sequence[Mapping[str, Any]] | None = None,
    ) -> LambdaConsumer:
        """Attach ``function`` to the source queue through an SQS event source.

        Sets the source's visibility timeout to ``visibility_timeout_factor x function timeout +
        max_batching_window`` (the largest over all consumers; never below the function
        timeout, at most 12 hours) and grants the function exactly what consuming needs:
        receive, delete and change visibility on this queue, and decrypt with its key.

        :param function: the consumer: a function, alias or version (``lambda_.IFunction``), in
            this stack or another stack of the same app, account and region; at most once per
            queue.
        :param batch_size: records per invocation: 1-10 for FIFO, 1-10,000 for standard (above
            10 needs a batching window of at least 1 s). Default: 10.
        :param max_batching_window: how long Lambda gathers records, 0-300 s; not for FIFO.
            Default: none.
        :param max_concurrency: most concurrent invocations from this source, 2-1,000.
            Default: no limit.
        :param report_batch_item_failures: the function reports failed messages so that only
            they are retried. Default: on.
        :param visibility_timeout_factor: at least 1. Default: 6, as AWS recommends.
        :param function_timeout: the function's timeout; required for imported functions,
            aliases and versions, whose timeout the app cannot read. Default: read from the
            function.
        :param enabled: whether the event source polls. Default: on.
        :param filters: event filter patterns (``lambda_.FilterCriteria.filter(...)``).
            Default: every message.
        """
        arguments = {
            "function": function,
            "batch_size": batch_size,
            "max_batching_window": max_batching_window,
            "max_concurrency": max_concurrency,
            "report_batch_item_failures": report_batch_item_failures,
            "visibility_timeout_factor": visibility_timeout_factor,
            "function_timeout": function_timeout,
            "enabled": enabled,
            "filters": filters,
        }
        props.CONSUMER.check_kinds(lambda: self.node.path, arguments)
        given = props.CONSUMER.read(arguments, self.fifo)
        problems = props.consumer_misuse_problems(self, self._stack, function) + given.problems
        timeout, timeout_problems = function_timeout_seconds(
            function, given["function_timeout"], "function_timeout" in given.unresolved
        )
        problems += timeout_problems
        window: int | None = given["max_batching_window"]
        factor: float | None = given["visibility_timeout_factor"]
        problems += policy.batching_problems(self.fifo, given["batch_size"], window)
        if factor is not None:
            problems += policy.visibility_factor_problems(factor)
        if isinstance(self.max_receive_count, int):
            problems += policy.lambda_receive_count_problems(self.max_receive_count)
        derived = 0
        if (
            timeout is not None
            and factor is not None
            and not any(p.severity == "error" for p in problems)
        ):
            derived = policy.derived_visibility_timeout(timeout, window or 0, factor)
            largest = max([derived, *(c.visibility_timeout for c in self.consumers)])
            problems += policy.visibility_problems(largest, self._explicit_visibility)
        self._report(given.unresolved, problems)
        assert timeout is not None  # a missing timeout is one of the problems raised above

        settings = ConsumerSettings(
            batch_size=batch_size,
            batching_window=window,
            max_concurrency=max_concurrency,
            report_batch_item_failures=report_batch_item_failures,
            visibility_timeout_factor=visibility_timeout_factor,
            enabled=enabled,
            filters=filters,
        )
        event_source = make_event_source(self.queue, settings)
        function.add_event_source(event_source)
        mapping = function.node.try_find_child(
            f"SqsEventSource:{Names.node_unique_id(self.queue.node)}"
        )
        if mapping is not None:
            # AWS offers no on-failure destination for SQS event sources: failed messages go to
            # the queue's redrive policy, which this construct always sets (Lambda guide).
            Validations.of(mapping).acknowledge(
                Acknowledgment(
                    id="Serverless::Serverless-LambdaEventSourceMappingDestination",
                    reason="SQS event sources have no on-failure destination; failed messages "
                    "move to the source queue's dead-letter queue through its redrive policy.",
                )
            )
        consumer = LambdaConsumer(function, event_source, timeout, derived, settings)
        self.consumers.append(consumer)
        if self._explicit_visibility is None:
            self._cfn_queue.visibility_timeout = self.visibility_timeout
        return consumer

    @property
    def visibility_timeout(self) -> int:
        """The source queue's visibility timeout in seconds, as it will be deployed."""
        if self._explicit_visibility is not None:
            return self._explicit_visibility
        if not self.consumers:
            return limits.VISIBILITY_TIMEOUT_DEFAULT
        return max(c.visibility_timeout for c in self.consumers)

    def add_dashboard(self, dashboard_name: str | None = None) -> cloudwatch.Dashboard:
        """A CloudWatch dashboard of this queue, its DLQ, its alarms and its consumers.

        Call it once, after adding the consumers.

        :param dashboard_name: at most 255 characters of letters, digits, ``-`` and ``_``.
            Default: generated by CloudFormation.
        """
        from constructs_lib.dashboard import build_dashboard

        arguments = {"dashboard_name": dashboard_name}
        props.DASHBOARD.check_kinds(lambda: self.node.path, arguments)
        self._report([], props.dashboard_problems(self, dashboard_name))
        return build_dashboard(self, dashboard_name)

    # --- internals ---------------------------------------------------------------------------

    @property
    def _cfn_queue(self) -> sqs.CfnQueue:
        cfn = self.queue.node.default_child
        assert isinstance(cfn, sqs.CfnQueue)
        return cfn

    def _physical_name(self, queue_name: str | None) -> str:
        """The given base name, or one generated from the path, with room for the suffixes."""
        base_name = (
            policy.strip_fifo_suffix(queue_name)
            if queue_name is not None
            else Names.unique_resource_name(
                self,
                max_length=limits.QUEUE_NAME_MAX_LENGTH
                - len(policy.DEAD_LETTER_SUFFIX)
                - len(limits.FIFO_SUFFIX),
                allowed_special_characters="-_",
            )
        )
        return f"{base_name}{limits.FIFO_SUFFIX if self.fifo else ''}"

    def _create_dead_letter_queue(
        self,
        retention_period: Duration,
        encryption: sqs.QueueEncryption,
        encryption_key: kms.IKey | None,
        removal_policy: RemovalPolicy | None,
    ) -> sqs.Queue:
        dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            queue_name=policy.dead_letter_queue_name(self.queue_name, self.fifo),
            fifo=self.fifo or None,
            retention_period=retention_period,
            encryption=encryption,
            encryption_master_key=encryption_key,
            enforce_ssl=True,
            redrive_allow_policy=sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[
                    sqs.Queue.from_queue_arn(self, "SourceQueueArn", self._source_arn())
                ],
            ),
            removal_policy=removal_policy,
        )
        # cdk-nag's Serverless pack asks every queue for a redrive policy; a DLQ's own
        # redrive would move dead letters on, out of sight of this construct's alarms.
        Validations.of(dead_letter_queue).acknowledge(
            Acknowledgment(
                id="Serverless::Serverless-SQSRedrivePolicy",
                reason="This queue is a dead-letter queue; a DLQ of its own would hide "
                "failed messages from the DLQ alarms.",
            )
        )
        return dead_letter_queue

    def _source_arn(self) -> str:
        # Formatted from the physical name, not Fn::GetAtt: the DLQ's redrive-allow policy would
        # otherwise refer to the source, whose redrive policy refers to the DLQ (a cycle).
        return self._stack.format_arn(
            service="sqs", resource=self.queue_name, arn_format=ArnFormat.NO_RESOURCE_NAME
        )

    def _create_alarms(
        self,
        in_flight_threshold: int,
        alarm_actions: Sequence[cloudwatch.IAlarmAction],
        ok_actions: Sequence[cloudwatch.IAlarmAction],
    ) -> QueueAlarms:
        source_age, dead_letter_age = policy.expiry_alarm_thresholds(
            self.source_retention or limits.RETENTION_DEFAULT,
            self.dead_letter_retention or limits.RETENTION_DEFAULT,
            self.fifo,
        )
        name = self.queue_name
        dlq = self.dead_letter_queue
        specs = {
            "in_flight": AlarmSpec(
                "InFlightAlarm",
                queue_metric(self.queue, limits.METRIC_IN_FLIGHT),
                in_flight_threshold,
                5,
                f"{name}-in-flight-high",
                f"{in_flight_threshold} or more messages of {name} have been received but not deleted "
                "for 5 minutes: consumers are stuck, failing without reporting, or too slow. At the "
                "in-flight quota receives stop. Check the consumer's errors, duration and throttles.",
            ),
            "dead_letter_depth": AlarmSpec(
                "DeadLetterDepthAlarm",
                queue_metric(dlq, limits.METRIC_VISIBLE),
                1,
                1,
                f"{name}-dead-letters",
                f"Messages of {name} failed {self.max_receive_count} receives and are in its "
                "dead-letter queue. Read one, fix the cause, then redrive them with "
                "StartMessageMoveTask.",
            ),
            "source_expiry_risk": AlarmSpec(
                "SourceExpiryRiskAlarm",
                queue_metric(self.queue, limits.METRIC_OLDEST_AGE),
                source_age,
                1,
                f"{name}-oldest-message-age",
                f"The oldest message of {name} is {source_age} s old, half its retention: consumers "
                "are not keeping up and messages will expire unprocessed.",
            ),
            "dead_letter_expiry_risk": AlarmSpec(
                "DeadLetterExpiryRiskAlarm",
                queue_metric(dlq, limits.METRIC_OLDEST_AGE),
                dead_letter_age,
                1,
                f"{name}-dead-letter-age",
                f"A message has waited {dead_letter_age} s in the dead-letter queue of {name}, half "
                "the time it has left before SQS deletes it. Redrive or archive the dead letters now.",
            ),
        }
        return QueueAlarms(
            **{
                key: create_alarm(self, spec, alarm_actions, ok_actions)
                for key, spec in specs.items()
            }
        )

    def _warn(self, warning_id: str, message: str) -> None:
        Annotations.of(self).add_warning_v2(f"{WARNING_PREFIX}:{warning_id}", message)

    def _report(self, unresolved: Sequence[str], problems: Sequence[Problem]) -> None:
        """Warn about the tokens not judged; raise the errors at once, else warn the rest."""
        for prop in unresolved:
            self._warn(*props.unresolved_warning(prop))
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            raise ConfigurationError(self.node.path, errors)
        for problem in problems:
            self._warn(problem.prop, problem.describe())
