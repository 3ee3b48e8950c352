"""ResilientQueue: an SQS source queue, its dead-letter queue, their alarms and Lambda consumers.

Each call's arguments are checked once into typed settings (``params.settings``); the construct
composes the queue pair, alarms, consumers (``assembly``), producers and synth-time checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.adoption import ExistingQueues
from constructs_lib.alarms import tiers as alarm_tiers
from constructs_lib.consumer import LambdaConsumer
from constructs_lib.params import docstrings, prop_tables
from constructs_lib.params import settings as call_settings
from constructs_lib.producers.calls import Producers
from constructs_lib.producers.problems import DEFAULT_S3_EVENTS
from constructs_lib.producers.sns_delivery_failures import SnsDeliveryFailures
from constructs_lib.queue import assembly, dashboard
from constructs_lib.queue.pair import physical_name
from constructs_lib.queue.payloads import LargePayloads, PayloadStore
from constructs_lib.retry_backoff import RetryBackoff
from constructs_lib.synth.deferred import WarningReporter


@docstrings.signed
class ResilientQueue(Construct):
    """An SQS queue built for Lambda consumers, with a dead-letter queue and alarms.

    Creates a source queue and a dead-letter queue (DLQ) of the same type, both encrypted and
    refusing requests without TLS; a redrive policy from source to DLQ and a redrive-allow policy
    on the DLQ that admits only this source; and alarms on in-flight messages, DLQ depth and the
    age of the oldest message in each queue. ``add_lambda_consumer`` attaches functions and
    derives the source's visibility timeout from their timeouts. Each alarm is critical (pages:
    ``critical_actions``) or a warning (files a ticket: ``warning_actions``), optionally behind
    one composite alarm (``composite_alarm``; ``alarm_tiers``, docs/alarms.md). Opt-in:
    an alarm on producers falling silent (``expected_traffic``), and a fair queue's quiet tenants
    watched instead of the whole queue (``fair``; ``alarms.signals``, docs/traffic.md).

    Both queues get deterministic physical names (the DLQ's redrive-allow policy must name the
    source's ARN without referring to the source resource, which would be a circular
    dependency). Changing a property that forces replacement, such as ``fifo``, therefore needs
    a new ``queue_name`` or construct id. Deployed queues are taken over in place with
    ``existing`` (``ExistingQueues``): their logical ids are kept, CloudFormation-generated
    names stay generated, and every change that would still replace one warns at synth.

    Every argument is checked for its kind and range before any value reaches CDK: a value of
    the wrong kind raises ``TypeError``, a value out of range ``ConfigurationError`` (see the
    parameter tables in the docs).

    The warnings that are the audit's findings (``synth.deferred.AUDIT_RULE_OF_WARNING``: empty
    ``alarm_actions`` is QR024, for example) are decided at synth: a suppression of that rule
    which the audit would honour for the resources the finding names turns the warning into an
    info naming the rule and the reason. That is an acknowledgment on the construct or any
    ancestor, ``Validations.of(scope).acknowledge(Acknowledgment(id="QR024", reason=...))`` (or
    the id ``constructs-lib-queue-resilience::QR024``), or ``cdk_nag: rules_to_suppress``
    Metadata on those resources (the alarms for QR024, the source queue for QR008, the event
    source mapping for QR015, QR019 and QR022, the function for QR017 and QR028) or on their
    template. A suppression whose reason is shorter than 10 characters is not honoured: the
    warning stays, with another saying why.

    Each parameter's kind, range and default is on ``__init__`` (from ``prop_tables.QUEUE``).
    """

    # Where messages and help() name the class: its public path, as before the package split.
    __module__ = "constructs_lib.queue"

    @docstrings.with_params(prop_tables.QUEUE)
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
        critical_actions: Sequence[cloudwatch.IAlarmAction] | None = None,
        warning_actions: Sequence[cloudwatch.IAlarmAction] | None = None,
        composite_alarm: bool = False,
        in_flight_alarm_threshold: int | None = None,
        removal_policy: RemovalPolicy | None = None,
        expected_traffic: Duration | None = None,
        fair: bool = False,
        existing: ExistingQueues | None = None,
        large_payloads: LargePayloads | None = None,
    ) -> None:
        """Build the source queue, its dead-letter queue, their policies and alarms in ``scope``
        under ``construct_id``; add consumers with ``add_lambda_consumer``.

        Every argument is checked before any value reaches CDK: a value of the wrong kind
        raises ``TypeError``, a value out of range ``ConfigurationError`` listing every
        problem at once.
        """
        arguments = call_settings.new_queue_arguments(locals())
        super().__init__(scope, construct_id)
        # Warnings that a suppression of an audit rule may turn into infos, decided at synth.
        self._reporter = WarningReporter(self, lambda: list(self.alarms), lambda: self.queue)
        self._settings = settings = call_settings.queue_settings(arguments, self._reporter.report)
        self.existing = existing
        """The deployed queues this construct takes over (``existing``), or None."""
        self.fifo = settings.fifo
        """Whether both queues are FIFO."""
        self.max_receive_count = max_receive_count
        self.source_retention, self.dead_letter_retention = settings.retentions
        self.max_message_size: int | None = settings.message_size_bytes
        """The maximum message size given (bytes), or None: SQS's default of 1 MiB."""
        self.queue_name = physical_name(self, settings.queue_name, self.fifo)
        """Physical name of the source queue."""
        self._pair = assembly.create_pair(self, settings, self._reporter)
        self.dead_letter_queue: sqs.IQueue = self._pair.dead_letter_queue
        """The dead-letter queue (created, or the one given)."""
        self.queue: sqs.Queue = self._pair.queue
        """The source queue."""
        self.consumers: list[LambdaConsumer] = []
        """The consumers of the source queue (``add_lambda_consumer``)."""
        self.dead_letter_consumers: list[LambdaConsumer] = []
        """The consumers of the dead-letter queue (``add_dead_letter_consumer``)."""
        self.in_flight_threshold: int = assembly.initial_in_flight_threshold(settings)
        """The in-flight alarm's threshold, as it will be deployed."""
        self.fair = fair
        """Whether the source is a fair queue (``fair``)."""
        self._alarm_factory, self.alarms = assembly.create_alarms(self, settings)
        self._producers = Producers(self, self._pair, self._alarm_factory, self._reporter, settings)
        self._source_consumers, self._dead_letter_consumers = assembly.queue_consumers(self)
        self._bypassing = assembly.watch_visibility(self, max_receive_count)

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
        retry_backoff: RetryBackoff | None = None,
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
        before they reach the DLQ; and a critical alarm when it fails every message for 5
        minutes (``failing_every_message_alarm``).

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
        :param retry_backoff: retries with exponential backoff (``RetryBackoff``): the schedule
            goes into the function's environment (``constructs_lib.backoff`` variables) and, for
            a Python function, a layer with ``constructs_lib.backoff`` (one per stack); the
            handler sets each failed message's visibility before reporting it. A message failing
            every receive must then reach the DLQ within the retention at the schedule's worst
            case (``Backoff.worst_case_seconds``). The derived visibility timeout stays: it
            protects messages being processed. Messages waiting in backoff count as in flight.
            An imported function, or a version other than ``current_version``, is an error (its
            environment cannot be set); FIFO warns (a waiting message holds its group). Not for
            ``add_dead_letter_consumer``: the DLQ has no DLQ, so no receive is the last. Default:
            none, failed messages come back after the visibility timeout.
        """
        arguments = call_settings.call_arguments(locals())
        call = call_settings.consumer_call(
            prop_tables.CONSUMER, lambda: self.node.path, arguments, self.fifo
        )
        return self._source_consumers.add(call)

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
        retention deletes it, and the DLQ age alarm fires half-way there. There is therefore no
        ``retry_backoff`` here: no receive is the last, and the schedule's receive limit is the
        source's.

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
        arguments = call_settings.call_arguments(locals())
        call = call_settings.consumer_call(
            prop_tables.DEAD_LETTER_CONSUMER, lambda: self.node.path, arguments, self.fifo
        )
        return self._dead_letter_consumers.add(call)

    @property
    def visibility_timeout(self) -> int:
        """The source queue's visibility timeout in seconds, as it will be deployed."""
        if self._settings.visibility_seconds is not None:
            return self._settings.visibility_seconds
        return self._source_consumers.visibility_timeout or limits.VISIBILITY_TIMEOUT_DEFAULT

    @property
    def payloads(self) -> PayloadStore | None:
        """Where the source's payloads live (``large_payloads``: ``.bucket``, ``.prefix``)."""
        return self._pair.payloads

    @property
    def dead_letter_visibility_timeout(self) -> int | None:
        """The DLQ's visibility timeout in seconds when this construct sets it (with a
        dead-letter consumer); None otherwise (SQS's default, or your DLQ's own)."""
        return self._dead_letter_consumers.visibility_timeout

    @property
    def alarm_tiers(self) -> alarm_tiers.AlarmTiers:
        """Every alarm by tier (``by_tier()``), and the ``composite_alarm`` (None without one)."""
        return self._alarm_factory.tiers

    @property
    def sns_delivery_failures(self) -> SnsDeliveryFailures | None:
        """What SNS could not deliver to the source queue: a queue and its depth alarm, created
        by the first ``add_producer`` of a topic (docs/kms.md). None without a topic."""
        return self._producers.sns_delivery_failures

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
        return self._producers.grant_redrive(grantee)

    def add_producer(
        self,
        source: sns.ITopic | events.IRule | s3.IBucket,
        *,
        s3_events: Sequence[s3.EventType] = DEFAULT_S3_EVENTS,
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
        arguments = call_settings.call_arguments(locals())
        call = call_settings.producer_call(prop_tables.PRODUCER, lambda: self.node.path, arguments)
        return self._producers.add(call)

    def add_dashboard(self, dashboard_name: str | None = None) -> cloudwatch.Dashboard:
        """A CloudWatch dashboard of this queue, its DLQ, its alarms and its consumers; call it
        once, after adding the consumers.

        :param dashboard_name: at most 255 characters of letters, digits, ``-`` and ``_``.
            Default: generated by CloudFormation.
        """
        return dashboard.add_dashboard(self, self._reporter, dashboard_name)
