"""ResilientQueue: an SQS source queue, its dead-letter queue, their alarms and Lambda consumers.

The construct composes its collaborators: the queue pair (``queue_pair``), the alarm factory
(``queue_alarms``), the consumers of each queue (``queue_consumers``), the producers
(``producers``, through ``producer_calls``) and the checks decided at synth (``deferred_checks``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import adoption, limits, policy
from constructs_lib.adoption import ExistingQueues
from constructs_lib.alarms import QueueAlarms
from constructs_lib.alarms import signals as queue_signals
from constructs_lib.alarms import tiers as alarm_tiers
from constructs_lib.alarms.factory import AlarmFactory
from constructs_lib.consumer import LambdaConsumer
from constructs_lib.consumer.bypass import BypassingConsumers
from constructs_lib.consumer.consumers import ConsumedQueue, QueueConsumers
from constructs_lib.errors import Problem
from constructs_lib.params import combinations as call_checks
from constructs_lib.params import docstrings, prop_tables
from constructs_lib.producers import services as producers
from constructs_lib.producers.calls import ProducerCalls
from constructs_lib.queue import naming
from constructs_lib.queue.pair import create_queue_pair, physical_name
from constructs_lib.retry_backoff import RetryBackoff
from constructs_lib.synth.deferred import DeliveryBeforeExpiry, WarningReporter


@docstrings.signed
class ResilientQueue(ProducerCalls, Construct):
    """An SQS queue built for Lambda consumers, with a dead-letter queue and alarms.

    Creates a source queue and a dead-letter queue (DLQ) of the same type, both encrypted and
    refusing requests without TLS; a redrive policy from source to DLQ and a redrive-allow policy
    on the DLQ that admits only this source; and alarms on in-flight messages, DLQ depth and the
    age of the oldest message in each queue. ``add_lambda_consumer`` attaches functions and
    derives the source's visibility timeout from their timeouts. Each alarm is critical (pages:
    ``critical_actions``) or a warning (files a ticket: ``warning_actions``), optionally behind
    one composite alarm (``composite_alarm``; ``alarm_tiers``, docs/alarms.md). Opt-in:
    an alarm on producers falling silent (``expected_traffic``), and a fair queue's quiet tenants
    watched instead of the whole queue (``fair``; ``queue_signals``, docs/traffic.md).

    Both queues get deterministic physical names (the DLQ's redrive-allow policy must name the
    source's ARN without referring to the source resource, which would be a circular
    dependency). Changing a property that forces replacement, such as ``fifo``, therefore needs
    a new ``queue_name`` or construct id. Deployed queues are taken over in place with
    ``existing`` (``ExistingQueues``): their logical ids are kept, CloudFormation-generated
    names stay generated, and every change that would still replace one warns at synth.

    Every argument is checked for its kind and range before any value reaches CDK: a value of
    the wrong kind raises ``TypeError``, a value out of range ``ConfigurationError`` (see the
    parameter tables in the docs).

    The warnings that are the audit's findings (``deferred_checks.AUDIT_RULE_OF_WARNING``: empty
    ``alarm_actions`` is QR024, for example) are decided at synth: a suppression of that rule
    which the audit would honour for the resources the finding names turns the warning into an
    info naming the rule and the reason. That is an acknowledgment on the construct or any
    ancestor, ``Validations.of(scope).acknowledge(Acknowledgment(id="QR024", reason=...))`` (or
    the id ``constructs-lib-queue-resilience::QR024``), or ``cdk_nag: rules_to_suppress``
    Metadata on those resources (the alarms for QR024, the source queue for QR008, the event
    source mapping for QR015, QR019 and QR022, the function for QR017 and QR028) or on their
    template. A suppression whose reason is shorter than 10 characters is not honoured: the
    warning stays, with another saying why.

    Each parameter, with its kind, range and default, is documented on ``__init__`` (rendered
    from ``prop_tables.QUEUE``, like the README and docs/api.md tables).
    """

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
    ) -> None:
        """Build the source queue, its dead-letter queue, their policies and alarms in ``scope``
        under ``construct_id``; add consumers with ``add_lambda_consumer``.

        Every argument is checked before any value reaches CDK: a value of the wrong kind
        raises ``TypeError``, a value out of range ``ConfigurationError`` listing every
        problem at once.
        """
        arguments = _call_arguments(locals())
        call_checks.check_new_construct(prop_tables.QUEUE, arguments)
        super().__init__(scope, construct_id)
        adoption_problems = adoption.take_defaults(existing, arguments)
        queue_name = arguments["queue_name"]
        # Warnings that a suppression of an audit rule may turn into infos, decided at synth.
        self._reporter = WarningReporter(self, lambda: list(self.alarms), lambda: self.queue)
        given = call_checks.check_queue(arguments)
        self._reporter.report(given.unresolved, given.problems + adoption_problems)
        self.existing = existing
        """The deployed queues this construct takes over (``existing``), or None."""

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
        self.queue_name = physical_name(self, queue_name, self.fifo)
        """Physical name of the source queue."""
        pair_arguments = {k: v for k, v in arguments.items() if k in _PAIR_ARGUMENTS}
        pair_arguments |= adoption.pair_arguments(existing)  # keeps generated names
        self._pair = create_queue_pair(
            self, **pair_arguments, queue_name=self.queue_name, fifo=self.fifo
        )
        self.dead_letter_queue: sqs.IQueue = self._pair.dead_letter_queue
        """The dead-letter queue (created, or the one given)."""
        self.queue: sqs.Queue = self._pair.queue
        """The source queue."""
        self._reporter.decide_at_synth(self._pair.cfn_queue)
        adoption.adopt(existing, self._pair, self.queue_name, self.fifo, self._reporter.warn)
        self.consumers: list[LambdaConsumer] = []
        """The consumers of the source queue (``add_lambda_consumer``)."""
        self.dead_letter_consumers: list[LambdaConsumer] = []
        """The consumers of the dead-letter queue (``add_dead_letter_consumer``)."""
        self.in_flight_threshold: int = in_flight_alarm_threshold or policy.in_flight_threshold(
            self.fifo, None
        )
        """The in-flight alarm's threshold, as it will be deployed."""
        self.fair = fair
        """Whether the source is a fair queue (``fair``)."""
        self._alarm_factory, self.alarms = _create_alarms(
            self, given["expected_traffic"], arguments
        )
        self._producers = producers.Producers(
            self, self._pair, self._alarm_factory, self.dead_letter_retention, self.max_message_size
        )
        self._source_consumers, self._dead_letter_consumers = self._queue_consumers()
        self._bypassing = _watch_visibility(self, max_receive_count)

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
        arguments = _call_arguments(locals())
        return self._source_consumers.add(prop_tables.CONSUMER, arguments)

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
        arguments = _call_arguments(locals())
        return self._dead_letter_consumers.add(prop_tables.DEAD_LETTER_CONSUMER, arguments)

    @property
    def visibility_timeout(self) -> int:
        """The source queue's visibility timeout in seconds, as it will be deployed."""
        if self._explicit_visibility is not None:
            return self._explicit_visibility
        return self._source_consumers.visibility_timeout or limits.VISIBILITY_TIMEOUT_DEFAULT

    @property
    def dead_letter_visibility_timeout(self) -> int | None:
        """The DLQ's visibility timeout in seconds when this construct sets it (with a
        dead-letter consumer); None otherwise (SQS's default, or your DLQ's own)."""
        return self._dead_letter_consumers.visibility_timeout

    @property
    def alarm_tiers(self) -> alarm_tiers.AlarmTiers:
        """Every alarm by tier (``by_tier()``), and the ``composite_alarm`` (None without one)."""
        return self._alarm_factory.tiers

    def add_dashboard(self, dashboard_name: str | None = None) -> cloudwatch.Dashboard:
        """A CloudWatch dashboard of this queue, its DLQ, its alarms and its consumers.

        Call it once, after adding the consumers.

        :param dashboard_name: at most 255 characters of letters, digits, ``-`` and ``_``.
            Default: generated by CloudFormation.
        """
        from constructs_lib.queue.dashboard import build_dashboard

        arguments = {"dashboard_name": dashboard_name}
        prop_tables.DASHBOARD.check_kinds(lambda: self.node.path, arguments)
        self._reporter.report([], call_checks.dashboard_problems(self, dashboard_name))
        return build_dashboard(self, dashboard_name)

    # --- internals ---------------------------------------------------------------------------

    def _queue_consumers(self) -> tuple[QueueConsumers, QueueConsumers]:
        """The consumers of the source queue and of the DLQ, each following its queue."""
        pair = self._pair
        receives = self.max_receive_count if isinstance(self.max_receive_count, int) else None
        source = ConsumedQueue(
            self.queue,
            dead_letter=False,
            fifo=self.fifo,
            max_receive_count=receives,
            max_message_size=self.max_message_size,
            explicit_visibility=self._explicit_visibility,
            visibility_known=not self._visibility_unknown,
            source_retention=self.source_retention,
            mapping_logical_ids=dict(self.existing.event_source_logical_ids)
            if self.existing
            else {},
        )
        dead_letter = dataclasses.replace(
            source,
            mapping_logical_ids={},
            queue=self.dead_letter_queue,
            dead_letter=True,
            explicit_visibility=None,
            refusal=_given_dead_letter_queue_refusal(self.dead_letter_queue)
            if pair.dead_letter_queue_given
            else None,
        )
        feeds = (
            (self.queue_name, self.consumers),
            (pair.dead_letter_name, self.dead_letter_consumers),
        )

        stack = Stack.of(self)

        def consumers_of(
            consumed: ConsumedQueue, consumers: list[LambdaConsumer], on_added: Callable[[], None]
        ) -> QueueConsumers:
            return QueueConsumers(
                self,
                consumed,
                consumers,
                stack=stack,
                reporter=self._reporter,
                alarms=self._alarm_factory,
                feeds=feeds,
                on_added=on_added,
            )

        return (
            consumers_of(source, self.consumers, self._source_consumer_added),
            consumers_of(dead_letter, self.dead_letter_consumers, self._dead_letter_consumer_added),
        )

    def _source_consumer_added(self) -> None:
        """The source's visibility timeout and in-flight threshold follow its consumers."""
        if self._explicit_visibility is None and not self._visibility_unknown:
            self._pair.cfn_queue.visibility_timeout = self.visibility_timeout
        self._update_in_flight_threshold()

    def _dead_letter_consumer_added(self) -> None:
        """The DLQ's visibility timeout follows its consumers; the first adds the arrivals alarm."""
        dead_letter_cfn = self.dead_letter_queue.node.default_child
        assert isinstance(dead_letter_cfn, sqs.CfnQueue)
        dead_letter_cfn.visibility_timeout = self.dead_letter_visibility_timeout
        if self.alarms.dead_letter_arrivals is None:
            self.alarms = dataclasses.replace(
                self.alarms,
                dead_letter_arrivals=self._alarm_factory.dead_letter_arrivals(
                    self.dead_letter_queue
                ),
            )

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
        self._alarm_factory.retune_in_flight(self.alarms.in_flight, threshold)


# The arguments of ResilientQueue that shape its two queues (constructs_lib.queue.pair).
_PAIR_ARGUMENTS = frozenset(
    {
        "max_receive_count",
        "retention_period",
        "dead_letter_retention_period",
        "visibility_timeout",
        "max_message_size",
        "encryption_key",
        "content_based_deduplication",
        "deduplication_scope",
        "fifo_throughput_limit",
        "dead_letter_queue",
        "removal_policy",
        "fair",
    }
)


def _create_alarms(
    queue: ResilientQueue, expected_traffic: int | None, arguments: Mapping[str, Any]
) -> tuple[AlarmFactory, QueueAlarms]:
    """The queue's alarm factory and the alarms of its two queues, as constructed."""
    factory = AlarmFactory.of_queue(queue, queue.queue_name, queue.fifo, arguments)
    alarms = factory.queue_alarms(
        queue.queue,
        queue.dead_letter_queue,
        queue.in_flight_threshold,
        queue.source_retention,
        queue.dead_letter_retention,
    )
    return factory, queue_signals.with_signal_alarms(
        factory, alarms, queue.queue, expected_traffic, queue.fair, queue.source_retention
    )


def _watch_visibility(queue: ResilientQueue, max_receive_count: object) -> BypassingConsumers:
    """The synth-time checks of the source's visibility timeout, unless it is a token."""
    # Mappings on the source added without add_lambda_consumer are consumers too, at synth.
    bypassing = BypassingConsumers(
        queue.node.path,
        queue.queue,
        queue._pair.cfn_queue,
        queue._source_consumers.mapping_paths,
        lambda: queue.visibility_timeout,
        queue._explicit_visibility,
    )
    if queue._visibility_unknown:
        return bypassing
    BypassingConsumers.watch(queue._pair.cfn_queue, bypassing)
    # Without a consumer nothing else sets the visibility timeout; SQS's default must still
    # let a failing message reach the DLQ before it expires. Judged at synth, when it is
    # known whether a consumer came.
    if isinstance(max_receive_count, int):
        queue.node.add_validation(
            DeliveryBeforeExpiry(
                max_receive_count, queue.source_retention, lambda: queue.visibility_timeout
            )
        )
    return bypassing


def _call_arguments(names: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments by name, in signature order, from its ``locals()`` at its start."""
    return {k: v for k, v in names.items() if k not in ("self", "__class__")}


def _given_dead_letter_queue_refusal(dead_letter_queue: sqs.IQueue) -> Problem:
    return Problem(
        "add_dead_letter_consumer",
        naming.display(dead_letter_queue),
        "needs the dead-letter queue this construct creates: it cannot set the "
        "visibility timeout of a dead_letter_queue you gave, which its consumer needs",
        "leave dead_letter_queue unset, or attach the consumer to your DLQ yourself "
        "(visibility timeout at least 6 x function timeout + batching window, and an "
        f"alarm on its {limits.METRIC_RECEIVED})",
    )
