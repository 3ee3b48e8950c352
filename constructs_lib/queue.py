"""ResilientQueue: an SQS source queue, its dead-letter queue, their alarms and Lambda consumers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import (
    Acknowledgment,
    Annotations,
    ArnFormat,
    Aspects,
    Duration,
    IAspect,
    Names,
    RemovalPolicy,
    Stack,
    Token,
    Validations,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct, IValidation

from constructs_lib import (
    acknowledgments,
    docstrings,
    grants,
    limits,
    naming,
    policy,
    producers,
    props,
)
from constructs_lib.alarms import (
    ALARM_NAME_MAX_LENGTH,
    RUNBOOK,
    AlarmSpec,
    QueueAlarms,
    create_alarm,
    event_source_metric,
    queue_count_metric,
    queue_metric,
)
from constructs_lib.consumer import (
    ConsumerSettings,
    LambdaConsumer,
    function_timeout_seconds,
    make_event_source,
)
from constructs_lib.errors import ConfigurationError, Problem
from constructs_lib.suppression_terms import MIN_REASON_LENGTH

DEFAULT_DEAD_LETTER_RETENTION = Duration.seconds(limits.RETENTION_MAX)
WARNING_PREFIX = "constructs_lib"
# The warnings (by prop) that are the same fault as an audit rule (docs/audit.md, "The rules"):
# a suppression of the rule that the audit would honour turns the warning into an info.
AUDIT_RULE_OF_WARNING = {
    "alarm_actions": "QR024",
    "max_receive_count": "QR008",
    "event_source_metrics": "QR015",
    "reserved_concurrent_executions": "QR017",
    "filters": "QR019",
    "batch_size": "QR022",
    "recursive_loop": "QR028",
}
# The rules whose findings name a consumer's event source mapping (the rest: the alarms, QR024;
# the source queue, QR008; the function, QR017 and QR028).
_MAPPING_RULES = frozenset({"QR015", "QR019", "QR022"})


@docstrings.signed
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

    The warnings that are the audit's findings (``AUDIT_RULE_OF_WARNING``: empty
    ``alarm_actions`` is QR024, for example) are decided at synth: a suppression of that rule
    which the audit would honour for the resources the finding names turns the warning into an
    info naming the rule and the reason. That is an acknowledgment on the construct or any
    ancestor, ``Validations.of(scope).acknowledge(Acknowledgment(id="QR024", reason=...))`` (or
    the id ``constructs-lib-queue-resilience::QR024``), or ``cdk_nag: rules_to_suppress``
    Metadata on those resources (the alarms for QR024, the source queue for QR008, the event
    source mapping for QR015, QR019 and QR022, the function for QR017 and QR028) or on their
    template. A suppression whose reason is shorter than 10 characters is not honoured: the
    warning stays, with another saying why.

    :param fifo: FIFO queues. Default: inferred from ``queue_name`` (a name ending ``.fifo``),
        else standard. The DLQ always has the source's type.
    :param queue_name: base name of the source queue; the DLQ is named ``<name>-dlq`` (plus
        ``.fifo``). At most 80 characters with those suffixes, of letters, digits, ``-`` and
        ``_``. Default: generated from the construct path.
    :param max_receive_count: receives before a message moves to the DLQ, 1-1,000. Default: 5,
        the least AWS recommends with a Lambda consumer.
    :param retention_period: source retention, 60 s-14 days; on a standard queue it must be
        shorter than the DLQ's. Default: 4 days (SQS's default).
    :param dead_letter_retention_period: DLQ retention, 60 s-14 days. With an imported
        ``dead_letter_queue``, whose retention the app cannot read, the retention that queue has:
        it is checked against the source's and sets the DLQ expiry alarm's threshold. An error
        with a ``dead_letter_queue`` defined in the app, whose own retention is read. Default:
        14 days; with an imported ``dead_letter_queue``, unknown: no DLQ expiry alarm
        (``alarms.dead_letter_expiry_risk`` is None) and a warning saying how to add it.
    :param visibility_timeout: source visibility timeout. Default: derived from the consumers
        (``visibility_timeout_factor`` x function timeout + batching window, largest over the
        consumers), or 30 s (SQS's default) with no consumer. An explicit value below the
        derived one is an error, and so is one for which ``max_receive_count`` x visibility
        timeout reaches ``retention_period`` (messages would expire before they are
        dead-lettered).
    :param max_message_size: largest message in bytes, 1,024-1,048,576 (CloudFormation
        ``MaximumMessageSize``); the created DLQ gets the same, and a ``dead_letter_queue`` you
        give may not allow less. With it set, a consumer whose ``batch_size`` x this size is
        above Lambda's 6 MB payload warns. Default: SQS's 1,048,576 (1 MiB), not written to the
        template.
    :param encryption_key: a KMS key for SSE-KMS on both queues. Default: SSE-SQS.
    :param content_based_deduplication: FIFO only. Default: off.
    :param deduplication_scope: FIFO only. Default: SQS's (``QUEUE``).
    :param fifo_throughput_limit: FIFO only. Default: SQS's (``PER_QUEUE``).
    :param dead_letter_queue: use this DLQ instead of creating one; it must have the source's type
        and keep messages longer than the source (standard queues), and you own its retention
        and redrive-allow policy. Default: one is created.
    :param alarm_actions: actions of every alarm when it fires. Default: none, which warns:
        the alarms then notify nobody.
    :param ok_actions: actions of every alarm when it recovers. Default: none.
    :param in_flight_alarm_threshold: in-flight messages that raise the in-flight alarm, 1 up to
        the queue's in-flight quota (120,000). Default: 12,000, a tenth of the quota, raised
        above what the capped consumers hold in flight at full speed (the sum of each one's
        ``max_concurrency``, or maximum pollers x 10, times its batch size) when that is more.
    :param removal_policy: for both queues. Default: CDK's (destroy).
    """

    @docstrings.with_params(props.QUEUE)
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
        max_message_size: int | None = None,
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
        """Build the source queue, its dead-letter queue, their policies and alarms in ``scope``
        under ``construct_id``; add consumers with ``add_lambda_consumer``.

        Every argument is checked before any value reaches CDK: a value of the wrong kind
        raises ``TypeError``, a value out of range ``ConfigurationError`` listing every
        problem at once.
        """
        arguments = {
            "scope": scope,
            "construct_id": construct_id,
            "fifo": fifo,
            "queue_name": queue_name,
            "max_receive_count": max_receive_count,
            "retention_period": retention_period,
            "dead_letter_retention_period": dead_letter_retention_period,
            "visibility_timeout": visibility_timeout,
            "max_message_size": max_message_size,
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
        # Warnings that a suppression of an audit rule may turn into infos, decided at synth.
        self._suppressible: list[_SuppressibleWarning] = []
        self._warnings_decided = False
        Aspects.of(self).add(_DecideWarnings(self))
        given = props.check_queue(arguments)
        self._report(given.unresolved, given.problems + _silent_alarm_problems(alarm_actions))

        self.fifo = given.fifo
        """Whether both queues are FIFO."""
        self.max_receive_count = max_receive_count
        self.source_retention = given.source_retention
        self.dead_letter_retention = given.dead_letter_retention
        self._explicit_visibility: int | None = given["visibility_timeout"]
        self._visibility_unknown = "visibility_timeout" in given.unresolved
        self.max_message_size: int | None = given["max_message_size"]
        """The maximum message size given (bytes), or None: SQS's default of 1 MiB."""
        self._explicit_in_flight = in_flight_alarm_threshold
        self._alarm_actions = tuple(alarm_actions)
        self._ok_actions = tuple(ok_actions)
        self._dead_letter_queue_given = dead_letter_queue is not None
        self._stack = Stack.of(self)
        self.queue_name = self._physical_name(queue_name)
        """Physical name of the source queue."""

        encryption = sqs.QueueEncryption.KMS if encryption_key else sqs.QueueEncryption.SQS_MANAGED
        self.dead_letter_queue: sqs.IQueue = dead_letter_queue or self._create_dead_letter_queue(
            dead_letter_retention_period or DEFAULT_DEAD_LETTER_RETENTION,
            encryption,
            encryption_key,
            removal_policy,
            max_message_size,
        )
        """The dead-letter queue (created, or the one given)."""
        # Grants on the key are bound to SQS (kms:ViaService); constructs_lib.grants.
        self.queue: sqs.Queue = grants.KeyViaSqsQueue(
            self,
            "Queue",
            queue_name=self.queue_name,
            fifo=self.fifo or None,
            retention_period=retention_period,
            visibility_timeout=visibility_timeout,
            max_message_size_bytes=max_message_size,
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
        """The consumers of the source queue (``add_lambda_consumer``)."""
        self.sns_delivery_failures: producers.SnsDeliveryFailures | None = None
        """What SNS could not deliver to the source queue: a queue and its depth alarm, created
        by the first ``add_producer`` of a topic (docs/kms.md). None without a topic."""
        self.dead_letter_consumers: list[LambdaConsumer] = []
        """The consumers of the dead-letter queue (``add_dead_letter_consumer``)."""
        self.in_flight_threshold: int = in_flight_alarm_threshold or policy.in_flight_threshold(
            self.fifo, None
        )
        """The in-flight alarm's threshold, as it will be deployed."""
        self.alarms = self._create_alarms(self.in_flight_threshold, alarm_actions, ok_actions)
        # Without a consumer nothing else sets the visibility timeout; SQS's default must still
        # let a failing message reach the DLQ before it expires. Judged at synth, when it is
        # known whether a consumer came.
        self.node.add_validation(_DeliveryBeforeExpiry(self))

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
        event_source_metrics: bool = True,
        provisioned_pollers: tuple[int, int] | None = None,
    ) -> LambdaConsumer:
        """Attach ``function`` to the source queue through an SQS event source.

        Sets the source's visibility timeout to ``visibility_timeout_factor x function timeout +
        max_batching_window`` (the largest over all consumers; never below the function
        timeout, at most 12 hours) and grants the function exactly what consuming needs:
        receive, delete and change visibility on this queue, and decrypt with its key. It is an
        error when ``max_receive_count`` x that visibility timeout reaches the source's
        retention: a failing message would expire before it is dead-lettered.

        With ``event_source_metrics`` on, the mapping publishes its event counts and the
        consumer gets an alarm on ``FailedInvokeEventCount`` (``LambdaConsumer
        .failed_messages_alarm``): with batch item failures reported the invocations succeed
        whatever happened to the messages, so this is the first sign of failing messages, long
        before they reach the DLQ.

        Warnings (annotations): filters (a message matching no filter is deleted by Lambda,
        never dead-lettered); metrics off with batch item failures on; ``batch_size`` x an
        explicit ``max_message_size`` above Lambda's 6 MB payload; a function with
        ``RecursiveLoop`` Allow; and, judged at synth over the whole app, a function whose
        reserved concurrency is below the sum of the concurrency caps of all the queues
        feeding it (Lambda then throttles, and throttled receives move healthy messages to
        the DLQ). Each is an audit finding (QR019, QR015, QR022, QR028, QR017; and
        ``max_receive_count`` below 5, QR008) and gives way, at synth, to a suppression of
        that rule on the resource the finding names (see the class).

        :param function: the consumer: a function, alias or version (``lambda_.IFunction``), in
            this stack or another stack of the same app, account and region; at most once per
            queue.
        :param batch_size: records per invocation: 1-10 for FIFO, 1-10,000 for standard (above
            10 needs a batching window of at least 1 s). Default: 10.
        :param max_batching_window: how long Lambda gathers records, 0-300 s; not for FIFO.
            Default: none.
        :param max_concurrency: most concurrent invocations from this source, 2-1,000; not with
            ``provisioned_pollers``. Default: no limit.
        :param report_batch_item_failures: the function reports failed messages so that only
            they are retried. Default: on.
        :param visibility_timeout_factor: at least 1. Default: 6, as AWS recommends.
        :param function_timeout: the function's timeout; required for imported functions,
            aliases and versions, whose timeout the app cannot read. Default: read from the
            function.
        :param enabled: whether the event source polls. Default: on.
        :param filters: event filter patterns (``lambda_.FilterCriteria.filter(...)``); a
            message that matches none is deleted, never dead-lettered, and counted in
            ``FilteredOutEventCount`` (warns). Default: every message.
        :param event_source_metrics: the mapping's ``EventCount`` metrics (CloudFormation
            ``MetricsConfig``) and the failed-messages alarm; off with
            ``report_batch_item_failures`` on warns. Default: on.
        :param provisioned_pollers: ``(minimum, maximum)`` event pollers for provisioned mode
            (CloudFormation ``ProvisionedPollerConfig``; extra cost): minimum 2-200, maximum
            2-2,000, minimum <= maximum; each poller makes up to 10 concurrent invocations; not
            with ``max_concurrency``. Default: none, on-demand polling.
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
            "event_source_metrics": event_source_metrics,
            "provisioned_pollers": provisioned_pollers,
        }
        return self._add_consumer(props.CONSUMER, arguments, dead_letter=False)

    def add_dead_letter_consumer(
        self,
        function: lambda_.IFunction,
        *,
        batch_size: int = limits.BATCH_SIZE_DEFAULT,
        max_batching_window: Duration | None = None,
        max_concurrency: int | None = None,
        report_batch_item_failures: bool = True,
        visibility_timeout_factor: float = limits.VISIBILITY_TIMEOUT_FACTOR,
        function_timeout: Duration | None = None,
        event_source_metrics: bool = True,
        provisioned_pollers: tuple[int, int] | None = None,
    ) -> LambdaConsumer:
        """Attach ``function`` to the dead-letter queue, to archive, repair or report dead
        letters as they arrive.

        The same event source as ``add_lambda_consumer``, with the same checks, on the DLQ; the
        DLQ's visibility timeout is derived from its consumers the same way. Only for the DLQ
        this construct creates: it cannot set the visibility timeout of a ``dead_letter_queue``
        you gave (a ``ConfigurationError``).

        A consumer drains the DLQ, so its depth alarm (``ApproximateNumberOfMessagesVisible``)
        stays at zero while messages keep failing. The first dead-letter consumer therefore
        adds an alarm on the DLQ's ``NumberOfMessagesReceived`` (>= 1 in a minute,
        ``alarms.dead_letter_arrivals``), and each consumer gets its own failed-messages alarm;
        the depth and age alarms stay, for the messages the consumer cannot take. The DLQ has
        no DLQ of its own: a dead letter the consumer keeps failing is retried until the DLQ's
        retention deletes it, and the DLQ age alarm fires half-way there.

        :param function: the consumer: a function, alias or version; at most once per DLQ.
        :param batch_size: records per invocation: 1-10 for FIFO, 1-10,000 for standard (above
            10 needs a batching window of at least 1 s). Default: 10.
        :param max_batching_window: how long Lambda gathers records, 0-300 s; not for FIFO.
            Default: none.
        :param max_concurrency: most concurrent invocations from the DLQ, 2-1,000; not with
            ``provisioned_pollers``. Default: no limit.
        :param report_batch_item_failures: the function reports failed messages so that only
            they are retried. Default: on.
        :param visibility_timeout_factor: at least 1. Default: 6, as AWS recommends.
        :param function_timeout: the function's timeout; required for imported functions,
            aliases and versions. Default: read from the function.
        :param event_source_metrics: the mapping's ``EventCount`` metrics and the
            failed-messages alarm. Default: on.
        :param provisioned_pollers: ``(minimum, maximum)`` event pollers for provisioned mode,
            as for ``add_lambda_consumer``. Default: none, on-demand polling.
        """
        arguments = {
            "function": function,
            "batch_size": batch_size,
            "max_batching_window": max_batching_window,
            "max_concurrency": max_concurrency,
            "report_batch_item_failures": report_batch_item_failures,
            "visibility_timeout_factor": visibility_timeout_factor,
            "function_timeout": function_timeout,
            "event_source_metrics": event_source_metrics,
            "provisioned_pollers": provisioned_pollers,
        }
        return self._add_consumer(props.DEAD_LETTER_CONSUMER, arguments, dead_letter=True)

    @property
    def visibility_timeout(self) -> int:
        """The source queue's visibility timeout in seconds, as it will be deployed."""
        if self._explicit_visibility is not None:
            return self._explicit_visibility
        if not self.consumers:
            return limits.VISIBILITY_TIMEOUT_DEFAULT
        return max(c.visibility_timeout for c in self.consumers)

    @property
    def dead_letter_visibility_timeout(self) -> int | None:
        """The DLQ's visibility timeout in seconds when this construct sets it (with a
        dead-letter consumer); None otherwise (SQS's default, or your DLQ's own)."""
        if not self.dead_letter_consumers:
            return None
        return max(c.visibility_timeout for c in self.dead_letter_consumers)

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

    # --- what sends into the queue -----------------------------------------------------------

    def grant_redrive(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` move dead letters back to the source with ``StartMessageMoveTask``,
        and list and cancel move tasks.

        On the DLQ: start, list and cancel move tasks, receive, delete and get attributes; on
        the source: send and get attributes; with customer KMS keys, ``kms:Decrypt`` on the
        DLQ's key and ``kms:GenerateDataKey`` and ``kms:Decrypt`` on the source's (one
        statement when they are the same key), each bound to SQS with ``kms:ViaService``
        (``sqs.<region>.amazonaws.com``): the grantee cannot use the key outside SQS. Every
        statement names exactly these queues and keys; a principal of another account is also
        named in the key policy, with the same condition. A ``dead_letter_queue`` you gave
        contributes its ``encryption_master_key``; if it was imported without one, a warning
        gives the key statement to add. The AWS managed key ``alias/aws/sqs`` needs no grant:
        its policy admits the account's principals.

        A statement this app cannot attach (an imported queue's or key's policy, for a
        principal of another account) is a warning that holds the statement as JSON, and the
        returned grant's ``success`` is then False.

        :param grantee: a role, user, group or function (``iam.IGrantable``), usually the
            operator's role or the redrive tool's.
        :returns: the combined grant (``iam.Grant``), for dependencies; ``success`` False when a
            statement could not be attached (see the warnings).
        """
        props.REDRIVE.check_kinds(lambda: self.node.path, {"grantee": grantee})
        return producers.grant_redrive(self, grantee)

    def add_producer(
        self,
        source: sns.ITopic | events.IRule | s3.IBucket,
        *,
        s3_events: Sequence[s3.EventType] = producers.DEFAULT_S3_EVENTS,
        s3_filters: Sequence[s3.NotificationKeyFilter] = (),
        raw_message_delivery: bool = False,
        message_group_id: str | None = None,
    ) -> sns.Subscription | events.IRuleTarget | None:
        """Let an SNS topic, an EventBridge rule or an S3 bucket send to the source queue.

        Wires the subscription, rule target or bucket notifications, with a queue policy
        statement for the service that only this source satisfies (``aws:SourceArn``) and, with
        a customer KMS key, a key policy statement for ``kms:GenerateDataKey`` and
        ``kms:Decrypt`` bound to the source (``aws:SourceArn``, and ``aws:SourceAccount`` for a
        bucket or rule). The first topic also creates the queue that holds what SNS cannot
        deliver (``sns_delivery_failures``: the source's type, key and message size, the DLQ's
        retention, and a depth alarm), kept apart from the DLQ. See docs/kms.md for what CDK
        writes and what this adds or narrows.

        Errors (``ConfigurationError``): a queue encrypted with the AWS managed key
        ``alias/aws/sqs`` (those services could never encrypt for it); a FIFO queue with a
        bucket (S3 cannot notify FIFO queues), with a standard topic, or with a rule but no
        ``message_group_id`` or no content-based deduplication; an imported rule; a rule or
        bucket in another stack; a topic or rule added twice; an argument for another kind of
        source. Warnings: a customer key whose policy this app cannot change (imported; the
        warning holds the statement to add, as JSON), and an
        SNS key statement left unscoped because the app's feature flag
        ``@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption`` is off.

        :param source: the producer: an ``sns.ITopic``, an ``events.Rule`` defined in this app,
            or an ``s3.IBucket``.
        :param s3_events: S3 only: the events to notify, one notification each. Default:
            ``s3.EventType.OBJECT_CREATED``.
        :param s3_filters: S3 only: key filters (``s3.NotificationKeyFilter``) for every event.
            Default: every object.
        :param raw_message_delivery: SNS only: deliver the message body without SNS's JSON
            envelope. Default: off.
        :param message_group_id: EventBridge only: the message group of the events; required
            for a FIFO queue. Default: none.
        :returns: the ``sns.Subscription`` for a topic, the ``events.IRuleTarget`` added to
            the rule, ``None`` for a bucket.
        """
        arguments: dict[str, Any] = {
            "source": source,
            "s3_events": s3_events,
            "s3_filters": s3_filters,
            "raw_message_delivery": raw_message_delivery,
            "message_group_id": message_group_id,
        }
        props.PRODUCER.check_kinds(lambda: self.node.path, arguments)
        self._report([], producers.producer_problems(self, **arguments))
        return producers.add_producer(self, **arguments)

    # --- internals ---------------------------------------------------------------------------

    def _add_consumer(
        self, table: props.Table, arguments: dict[str, Any], *, dead_letter: bool
    ) -> LambdaConsumer:
        """One code path for the consumers of both queues: check, derive, wire, alarm."""
        function: lambda_.IFunction = arguments["function"]
        table.check_kinds(lambda: self.node.path, arguments)
        given = table.read(arguments, self.fifo)
        unresolved = list(given.unresolved)
        queue = self.dead_letter_queue if dead_letter else self.queue
        consumers = self.dead_letter_consumers if dead_letter else self.consumers
        problems: list[Problem] = []
        if dead_letter and self._dead_letter_queue_given:
            problems.append(
                Problem(
                    "add_dead_letter_consumer",
                    naming.display(self.dead_letter_queue),
                    "needs the dead-letter queue this construct creates: it cannot set the "
                    "visibility timeout of a dead_letter_queue you gave, which its consumer needs",
                    "leave dead_letter_queue unset, or attach the consumer to your DLQ yourself "
                    "(visibility timeout at least 6 x function timeout + batching window, and an "
                    f"alarm on its {limits.METRIC_RECEIVED})",
                )
            )
        consumed = f"the dead-letter queue of {self.node.path}" if dead_letter else None
        problems += props.consumer_misuse_problems(self, self._stack, function, consumers, consumed)
        problems += given.problems
        timeout, timeout_problems = function_timeout_seconds(
            function, given["function_timeout"], "function_timeout" in given.unresolved
        )
        problems += timeout_problems
        window: int | None = given["max_batching_window"]
        factor: float | None = given["visibility_timeout_factor"]
        problems += policy.batching_problems(self.fifo, given["batch_size"], window)
        if factor is not None:
            problems += policy.visibility_factor_problems(factor)
        receives = self.max_receive_count if isinstance(self.max_receive_count, int) else None
        if not dead_letter:
            # The DLQ has no redrive policy: its receives lead nowhere.
            problems += policy.lambda_receive_count_problems(receives)
        pollers = arguments["provisioned_pollers"]
        if pollers is not None:
            known = [p if isinstance(p, int) else None for p in pollers]
            if None in known:
                unresolved.append("provisioned_pollers")
            problems += policy.provisioned_poller_problems(
                known[0], known[1], arguments["max_concurrency"]
            )
        derived = 0
        if (
            timeout is not None
            and factor is not None
            and not any(p.severity == "error" for p in problems)
        ):
            derived = policy.derived_visibility_timeout(timeout, window or 0, factor)
            largest = max([derived, *(c.visibility_timeout for c in consumers)])
            explicit = None if dead_letter else self._explicit_visibility
            problems += policy.visibility_problems(largest, explicit)
            if not dead_letter and not self._visibility_unknown:
                problems += policy.expiry_before_dead_letter_problems(
                    receives, explicit if explicit is not None else largest, self.source_retention
                )
        problems += policy.batch_payload_problems(given["batch_size"], self.max_message_size)
        problems += _event_source_warnings(arguments)
        mapping_id = f"SqsEventSource:{Names.node_unique_id(queue.node)}"
        self._report(unresolved, problems, lambda: function.node.try_find_child(mapping_id))
        assert timeout is not None  # a missing timeout is one of the problems raised above

        settings = ConsumerSettings(
            batch_size=arguments["batch_size"],
            batching_window=window,
            max_concurrency=arguments["max_concurrency"],
            report_batch_item_failures=arguments["report_batch_item_failures"],
            visibility_timeout_factor=arguments["visibility_timeout_factor"],
            enabled=arguments.get("enabled", True),
            filters=arguments.get("filters"),
            event_source_metrics=arguments["event_source_metrics"],
            provisioned_pollers=pollers,
        )
        event_source = make_event_source(queue, settings)
        function.add_event_source(event_source)
        mapping = function.node.try_find_child(mapping_id)
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
        failed_messages_alarm = (
            self._failed_messages_alarm(function, event_source, mapping, consumers, dead_letter)
            if settings.event_source_metrics
            else None
        )
        consumer = LambdaConsumer(
            function, event_source, timeout, derived, settings, queue, failed_messages_alarm
        )
        consumers.append(consumer)
        if dead_letter:
            dead_letter_cfn = self.dead_letter_queue.node.default_child
            assert isinstance(dead_letter_cfn, sqs.CfnQueue)
            dead_letter_cfn.visibility_timeout = self.dead_letter_visibility_timeout
            if self.alarms.dead_letter_arrivals is None:
                self.alarms = dataclasses.replace(
                    self.alarms, dead_letter_arrivals=self._dead_letter_arrivals_alarm()
                )
        else:
            if self._explicit_visibility is None and not self._visibility_unknown:
                self._cfn_queue.visibility_timeout = self.visibility_timeout
            self._update_in_flight_threshold()
        _FunctionChecks.watch(function, self)
        return consumer

    def _failed_messages_alarm(
        self,
        function: lambda_.IFunction,
        event_source: event_sources.SqsEventSource,
        mapping: IConstruct | None,
        consumers: Sequence[LambdaConsumer],
        dead_letter: bool,
    ) -> cloudwatch.Alarm:
        """An alarm on the mapping's FailedInvokeEventCount, next to the mapping: in the
        function's stack, which already depends on the queue's (an alarm in the queue's stack
        would make the two stacks depend on each other)."""
        queue_name = (
            policy.dead_letter_queue_name(self.queue_name, self.fifo)
            if dead_letter
            else self.queue_name
        )
        consumer_name = function.node.id
        namesakes = sum(1 for c in consumers if c.function.node.id == consumer_name)
        if namesakes:
            consumer_name += f"-{namesakes + 1}"
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
            "FailedMessagesAlarm"
            if mapping is not None
            else f"FailedMessagesAlarm{Names.node_unique_id(function.node)}",
            event_source_metric(event_source, limits.METRIC_ESM_FAILED),
            1,
            1,
            f"{queue_name}-{consumer_name}-failed-messages"[:ALARM_NAME_MAX_LENGTH],
            description,
        )
        scope = mapping if isinstance(mapping, Construct) else self
        return create_alarm(scope, spec, self._alarm_actions, self._ok_actions)

    def _dead_letter_arrivals_alarm(self) -> cloudwatch.Alarm:
        name = self.queue_name
        spec = AlarmSpec(
            "DeadLetterArrivalsAlarm",
            # Never NumberOfMessagesSent: messages moved by the redrive policy are not counted.
            queue_count_metric(self.dead_letter_queue, limits.METRIC_RECEIVED),
            1,
            1,
            f"{name}-dead-letter-arrivals",
            f"The consumer of the dead-letter queue of {name} received messages "
            f"(NumberOfMessagesReceived >= 1 in a minute): messages failed {self.max_receive_count} "
            "receives on the source, or the consumer is retrying dead letters it failed. It drains "
            "the DLQ, so the dead-letters alarm stays quiet: find why the source's consumer fails.",
        )
        return create_alarm(self, spec, self._alarm_actions, self._ok_actions)

    def _update_in_flight_threshold(self) -> None:
        """Keep the in-flight alarm above what the capped consumers hold at full speed."""
        if self._explicit_in_flight is not None:
            return
        loads = [
            ceiling * consumer.settings.batch_size
            for consumer in self.consumers
            if (ceiling := consumer.settings.concurrency_ceiling) is not None
            and isinstance(consumer.settings.batch_size, int)
        ]
        threshold = policy.in_flight_threshold(self.fifo, sum(loads) if loads else None)
        if threshold == self.in_flight_threshold:
            return
        self.in_flight_threshold = threshold
        cfn = self.alarms.in_flight.node.default_child
        assert isinstance(cfn, cloudwatch.CfnAlarm)
        cfn.threshold = threshold
        cfn.alarm_description = f"{self._in_flight_description(threshold)} {RUNBOOK}"

    def _in_flight_description(self, threshold: int) -> str:
        name = self.queue_name
        return (
            f"{threshold} or more messages of {name} have been received but not deleted "
            "for 5 minutes: consumers are stuck, failing without reporting, or too slow. At the "
            "in-flight quota receives stop. Check the consumer's errors, duration and throttles."
        )

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
        max_message_size: int | None,
    ) -> sqs.Queue:
        dead_letter_queue = grants.KeyViaSqsQueue(
            self,
            "DeadLetterQueue",
            queue_name=policy.dead_letter_queue_name(self.queue_name, self.fifo),
            fifo=self.fifo or None,
            retention_period=retention_period,
            # The source's size: a message that fits the source must fit the DLQ.
            max_message_size_bytes=max_message_size,
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
        source_retention = self.source_retention or limits.RETENTION_DEFAULT
        # None: an imported DLQ whose retention nobody stated; no threshold can be derived.
        dead_letter_retention = self.dead_letter_retention
        source_age, dead_letter_age = policy.expiry_alarm_thresholds(
            source_retention,
            dead_letter_retention or limits.RETENTION_DEFAULT,
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
                self._in_flight_description(in_flight_threshold),
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
        }
        if dead_letter_retention is not None:
            specs["dead_letter_expiry_risk"] = AlarmSpec(
                "DeadLetterExpiryRiskAlarm",
                queue_metric(dlq, limits.METRIC_OLDEST_AGE),
                dead_letter_age,
                1,
                f"{name}-dead-letter-age",
                self._dead_letter_age_description(
                    dead_letter_age, source_retention, dead_letter_retention
                ),
            )
        alarms: dict[str, cloudwatch.Alarm | None] = {
            key: create_alarm(self, spec, alarm_actions, ok_actions) for key, spec in specs.items()
        }
        alarms.setdefault("dead_letter_expiry_risk", None)
        return QueueAlarms(**alarms)  # type: ignore[arg-type]

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

    def _warn(self, warning_id: str, message: str) -> None:
        Annotations.of(self).add_warning_v2(f"{WARNING_PREFIX}:{warning_id}", message)

    def _report(
        self,
        unresolved: Sequence[str],
        problems: Sequence[Problem],
        mapping: Callable[[], IConstruct | None] | None = None,
    ) -> None:
        """Warn about the tokens not judged; raise the errors at once, else warn the rest.
        A warning that is an audit finding waits for synth, when suppressions are known;
        ``mapping`` finds the consumer's event source mapping, which its findings name."""
        for prop in unresolved:
            self._warn(*props.unresolved_warning(prop))
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            raise ConfigurationError(self.node.path, errors)
        for problem in problems:
            rule_id = AUDIT_RULE_OF_WARNING.get(problem.prop)
            if rule_id is None or problem.severity != "warning":
                self._warn(problem.prop, problem.describe())
                continue
            pending = _SuppressibleWarning(
                self,
                problem.prop,
                problem.describe(),
                rule_id,
                self._judged_resources(rule_id, mapping),
            )
            if self._warnings_decided:  # reported after the synth's aspects ran
                pending.decide()
            elif pending not in self._suppressible:
                self._suppressible.append(pending)

    def _judged_resources(
        self, rule_id: str, mapping: Callable[[], IConstruct | None] | None
    ) -> Callable[[], list[IConstruct]]:
        """The resources the audit's finding of ``rule_id`` names, as the app has them at synth."""
        if rule_id == "QR024":  # each alarm on the queues' metrics
            return lambda: list(self.alarms)
        if rule_id in _MAPPING_RULES and mapping is not None:
            return lambda: [found] if (found := mapping()) is not None else [self]
        return lambda: [self.queue]  # QR008

    def _decide_warnings(self) -> None:
        self._warnings_decided = True
        for pending in self._suppressible:
            pending.decide()
        self._suppressible.clear()


def _silent_alarm_problems(alarm_actions: Sequence[cloudwatch.IAlarmAction]) -> list[Problem]:
    """An alarm without actions changes state in the console and tells nobody."""
    if alarm_actions:
        return []
    return [
        Problem(
            "alarm_actions",
            list(alarm_actions),
            "is empty, so the alarms notify nobody: a stuck consumer or a dead letter shows only "
            "to someone who opens the CloudWatch console",
            "pass alarm_actions=[cloudwatch_actions.SnsAction(topic)] (and ok_actions, to hear "
            "when an alarm recovers)",
            severity="warning",
        )
    ]


def _event_source_warnings(arguments: Mapping[str, Any]) -> list[Problem]:
    """What an event source's settings quietly do to failing or unwanted messages."""
    problems: list[Problem] = []
    if arguments.get("filters"):
        problems.append(
            Problem(
                "filters",
                arguments["filters"],
                "drop every message that matches no filter: Lambda deletes it from the queue, "
                "it is never dead-lettered, and only FilteredOutEventCount counts it",
                "make sure every message this consumer must not see is meant to be deleted, or "
                "filter inside the function and report the rest as batch item failures",
                severity="warning",
            )
        )
    if not arguments["event_source_metrics"] and arguments["report_batch_item_failures"]:
        problems.append(
            Problem(
                "event_source_metrics",
                False,
                "is off while report_batch_item_failures is on: invocations succeed whatever "
                "happened to the messages, so the first sign of failing messages is the DLQ "
                "alarm, max_receive_count x the visibility timeout later",
                "leave event_source_metrics on: FailedInvokeEventCount then counts the failed "
                "messages and the consumer gets an alarm on it",
                severity="warning",
            )
        )
    return problems


def _underlying_function(function: object) -> lambda_.Function | None:
    """The function defined in this app behind a function, alias or version; None when the app
    only imports it (its settings cannot be read)."""
    if isinstance(function, lambda_.Function):
        return function
    if isinstance(function, lambda_.Alias):
        return _underlying_function(function.version)
    if isinstance(function, lambda_.Version):
        return _underlying_function(function.lambda_)
    return None


@jsii.implements(IAspect)
class _FunctionChecks:
    """Checks of one consumer function that depend on the whole app, run at synth so that the
    order of the calls does not matter: its reserved concurrency against every ResilientQueue
    feeding it (several queues can feed one function), and its RecursiveLoop setting."""

    def __init__(self, function: lambda_.Function) -> None:
        self.function = function
        self.queues: list[ResilientQueue] = []

    @classmethod
    def watch(cls, consumer: lambda_.IFunction, queue: ResilientQueue) -> None:
        function = _underlying_function(consumer)
        if function is None:
            return
        check = next((a for a in Aspects.of(function).all if isinstance(a, _FunctionChecks)), None)
        if check is None:
            check = cls(function)
            Aspects.of(function).add(check)
        if queue not in check.queues:
            check.queues.append(queue)

    def visit(self, node: IConstruct) -> None:
        if node is not self.function:
            return
        cfn = self.function.node.default_child
        if not isinstance(cfn, lambda_.CfnFunction):
            return
        problems: list[Problem] = []
        if cfn.recursive_loop == limits.RECURSIVE_LOOP_ALLOW:
            problems.append(
                Problem(
                    "recursive_loop",
                    cfn.recursive_loop,
                    "lets the function run in a loop without end when it sends to a queue that "
                    "invokes it again; Lambda's default, Terminate, stops such loops",
                    "remove recursive_loop (or set lambda_.RecursiveLoop.TERMINATE) unless the "
                    "loop is intended and bounded",
                    severity="warning",
                )
            )
        reserved = cfn.reserved_concurrent_executions
        if isinstance(reserved, (int, float)) and not Token.is_unresolved(reserved):
            problems += policy.reserved_concurrency_problems(int(reserved), self._ceilings())
        for problem in problems:
            rule_id = AUDIT_RULE_OF_WARNING.get(problem.prop)
            if rule_id is None:
                Annotations.of(self.function).add_warning_v2(
                    f"{WARNING_PREFIX}:{problem.prop}", problem.describe()
                )
            else:
                _SuppressibleWarning(
                    self.function, problem.prop, problem.describe(), rule_id, self._judged
                ).decide()

    def _judged(self) -> list[IConstruct]:
        """What QR017 and QR028 name: the function."""
        return [self.function]

    def _ceilings(self) -> dict[str, int | None]:
        """Each queue feeding the function, by physical name, with its concurrency cap (None:
        uncapped, so it scales up to Lambda's on-demand limit)."""
        ceilings: dict[str, int | None] = {}
        for queue in self.queues:
            dead_letter_name = policy.dead_letter_queue_name(queue.queue_name, queue.fifo)
            for name, consumers in (
                (queue.queue_name, queue.consumers),
                (dead_letter_name, queue.dead_letter_consumers),
            ):
                for consumer in consumers:
                    if _underlying_function(consumer.function) is not self.function:
                        continue
                    ceiling = consumer.settings.concurrency_ceiling
                    known = ceilings.get(name, 0)
                    if ceiling is None or known is None:
                        ceilings[name] = None
                    else:
                        ceilings[name] = known + ceiling
        return ceilings


@dataclasses.dataclass(frozen=True)
class _SuppressibleWarning:
    """A warning that is the audit's finding ``rule_id`` on the resources ``judged`` returns:
    at synth it becomes an info when the rule is suppressed there (``acknowledgments.find``)."""

    scope: IConstruct  # where the annotation goes
    prop: str
    message: str
    rule_id: str
    judged: Callable[[], list[IConstruct]] = dataclasses.field(compare=False)

    def decide(self) -> None:
        verdict = acknowledgments.find(self.rule_id, self.judged())
        warning_id = f"{WARNING_PREFIX}:{self.prop}"
        annotations = Annotations.of(self.scope)
        for why in verdict.ignored:
            annotations.add_warning_v2(
                f"{WARNING_PREFIX}:suppression",
                f"{why}: not honoured, so the warning {warning_id} stands. Fix: give the "
                f"suppression a reason of at least {MIN_REASON_LENGTH} characters",
            )
        accepted = verdict.honoured
        if accepted is None:
            annotations.add_warning_v2(warning_id, self.message)
        else:
            annotations.add_info_v2(
                warning_id,
                f"{self.prop}: warning suppressed, {accepted.rule_id} {accepted.where}: "
                f"{accepted.reason} (the warning: {self.message})",
            )


@jsii.implements(IAspect)
class _DecideWarnings:
    """At synth, after the app has added its suppressions: a ResilientQueue's warnings that
    are audit findings, each a warning or, suppressed, an info."""

    def __init__(self, queue: ResilientQueue) -> None:
        self.queue = queue

    def visit(self, node: IConstruct) -> None:
        if node is self.queue:
            self.queue._decide_warnings()


@jsii.implements(IValidation)
class _DeliveryBeforeExpiry:
    """At synth: a failing message must reach the DLQ before the source's retention deletes it,
    with the visibility timeout as deployed (SQS's default of 30 s when no consumer came)."""

    def __init__(self, queue: ResilientQueue) -> None:
        self.queue = queue

    def validate(self) -> list[str]:
        queue = self.queue
        if queue._visibility_unknown or not isinstance(queue.max_receive_count, int):
            return []
        problems = policy.expiry_before_dead_letter_problems(
            queue.max_receive_count, queue.visibility_timeout, queue.source_retention
        )
        return [problem.describe() for problem in problems]
