"""How a ResilientQueue's parts are put together and kept in step: its alarms as constructed,
the consumers of each of its queues (``QueueConsumers``) and what the queues do as consumers
come (the source's visibility timeout and in-flight threshold follow its consumers, the DLQ's
visibility timeout its own, the first dead-letter consumer adds the arrivals alarm), and the
synth-time checks of the source's visibility timeout.

These read and set the construct's state: they are its internals, kept here so that
``constructs_lib.queue.construct`` shows the public calls."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from aws_cdk import Stack
from aws_cdk import aws_sqs as sqs

from constructs_lib import adoption, limits, policy
from constructs_lib.alarms import QueueAlarms, signals
from constructs_lib.alarms.factory import AlarmFactory
from constructs_lib.consumer import LambdaConsumer
from constructs_lib.consumer.bypass import BypassingConsumers
from constructs_lib.consumer.consumers import ConsumedQueue, QueueConsumers
from constructs_lib.errors import Problem
from constructs_lib.queue import grants, naming, payload_grants, payloads
from constructs_lib.queue.pair import QueuePair, create_queue_pair
from constructs_lib.synth.deferred import DeliveryBeforeExpiry, WarningReporter

if TYPE_CHECKING:
    from constructs_lib.params.settings import QueueSettings
    from constructs_lib.queue.construct import ResilientQueue


def create_pair(
    queue: ResilientQueue, settings: QueueSettings, reporter: WarningReporter
) -> QueuePair:
    """The queue pair under its physical name (``queue.queue_name``), its warnings decided at
    synth, and the deployed queues taken over (``existing``)."""
    pair = create_queue_pair(queue, settings, queue.queue_name)
    reporter.decide_at_synth(pair.cfn_queue)
    adoption.adopt(settings.existing, pair, queue.queue_name, queue.fifo, reporter.warn)
    _create_payloads(queue, pair, settings)
    return pair


def _create_payloads(queue: ResilientQueue, pair: QueuePair, settings: QueueSettings) -> None:
    """The store of the queue's payloads (``large_payloads``) on ``pair``; producers given
    ``queue.grant_send_messages`` are granted its prefix from now on."""
    if settings.large_payloads is None:
        return
    store = payloads.create_store(
        queue,
        settings.large_payloads,
        queue.queue_name,
        queue.fifo,
        settings.retentions,
        settings.encryption_key,
        settings.removal_policy,
    )
    pair.payloads = store
    source = pair.queue
    assert isinstance(source, grants.KeyViaSqsQueue)  # create_queue_pair's source queue
    source.on_grant_send = lambda grantee: payload_grants.grant_producer(store, grantee, queue)


def initial_in_flight_threshold(settings: QueueSettings) -> int:
    """The in-flight alarm's threshold before any consumer: the one given, or the default."""
    return settings.in_flight_alarm_threshold or policy.in_flight_threshold(settings.fifo, None)


def create_alarms(
    queue: ResilientQueue, settings: QueueSettings
) -> tuple[AlarmFactory, QueueAlarms]:
    """The queue's alarm factory and the alarms of its two queues, as constructed."""
    factory = AlarmFactory.of_queue(queue, queue.queue_name, queue.fifo, settings)
    alarms = factory.queue_alarms(
        queue.queue,
        queue.dead_letter_queue,
        queue.in_flight_threshold,
        queue.source_retention,
        queue.dead_letter_retention,
    )
    return factory, signals.with_signal_alarms(
        factory,
        alarms,
        queue.queue,
        settings.expected_traffic_seconds,
        queue.fair,
        queue.source_retention,
    )


def watch_visibility(queue: ResilientQueue, max_receive_count: object) -> BypassingConsumers:
    """The synth-time checks of the source's visibility timeout, unless it is a token."""
    # Mappings on the source added without add_lambda_consumer are consumers too, at synth.
    bypassing = BypassingConsumers(
        queue.node.path,
        queue.queue,
        queue._pair.cfn_queue,
        queue._source_consumers.mapping_references,
        lambda: queue.visibility_timeout,
        queue._settings.visibility_seconds,
    )
    if queue._settings.visibility_unresolved:
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


def queue_consumers(queue: ResilientQueue) -> tuple[QueueConsumers, QueueConsumers]:
    """The consumers of the source queue and of the DLQ, each following its queue."""
    pair = queue._pair
    receives = queue.max_receive_count if isinstance(queue.max_receive_count, int) else None
    source = ConsumedQueue(
        queue.queue,
        dead_letter=False,
        fifo=queue.fifo,
        max_receive_count=receives,
        max_message_size=queue.max_message_size,
        explicit_visibility=queue._settings.visibility_seconds,
        visibility_known=not queue._settings.visibility_unresolved,
        source_retention=queue.source_retention,
        mapping_logical_ids=dict(queue.existing.event_source_logical_ids) if queue.existing else {},
        payloads=pair.payloads,
    )
    dead_letter = dataclasses.replace(
        source,
        mapping_logical_ids={},
        queue=queue.dead_letter_queue,
        dead_letter=True,
        explicit_visibility=None,
        refusal=_given_dead_letter_queue_refusal(queue.dead_letter_queue)
        if pair.dead_letter_queue_given
        else None,
    )
    feeds = (
        (queue.queue_name, queue.consumers),
        (pair.dead_letter_name, queue.dead_letter_consumers),
    )

    stack = Stack.of(queue)

    def consumers_of(
        consumed: ConsumedQueue, consumers: list[LambdaConsumer], on_added: Callable[[], None]
    ) -> QueueConsumers:
        return QueueConsumers(
            queue,
            consumed,
            consumers,
            stack=stack,
            reporter=queue._reporter,
            alarms=queue._alarm_factory,
            feeds=feeds,
            on_added=on_added,
        )

    return (
        consumers_of(source, queue.consumers, lambda: _source_consumer_added(queue)),
        consumers_of(
            dead_letter, queue.dead_letter_consumers, lambda: _dead_letter_consumer_added(queue)
        ),
    )


def _source_consumer_added(queue: ResilientQueue) -> None:
    """The source's visibility timeout and in-flight threshold follow its consumers."""
    if queue._settings.visibility_seconds is None and not queue._settings.visibility_unresolved:
        queue._pair.cfn_queue.visibility_timeout = queue.visibility_timeout
    _update_in_flight_threshold(queue)


def _dead_letter_consumer_added(queue: ResilientQueue) -> None:
    """The DLQ's visibility timeout follows its consumers; the first adds the arrivals alarm."""
    dead_letter_cfn = queue.dead_letter_queue.node.default_child
    assert isinstance(dead_letter_cfn, sqs.CfnQueue)
    dead_letter_cfn.visibility_timeout = queue.dead_letter_visibility_timeout
    if queue.alarms.dead_letter_arrivals is None:
        queue.alarms = dataclasses.replace(
            queue.alarms,
            dead_letter_arrivals=queue._alarm_factory.dead_letter_arrivals(queue.dead_letter_queue),
        )


def _update_in_flight_threshold(queue: ResilientQueue) -> None:
    """Keep the in-flight alarm above what the capped consumers hold at full speed."""
    if queue._settings.in_flight_alarm_threshold is not None:
        return
    loads = [
        ceiling * consumer.settings.batch_size
        for consumer in queue.consumers
        if (ceiling := consumer.settings.concurrency_ceiling) is not None
        and isinstance(consumer.settings.batch_size, int)
    ]
    threshold = policy.in_flight_threshold(queue.fifo, sum(loads) if loads else None)
    if threshold == queue.in_flight_threshold:
        return
    queue.in_flight_threshold = threshold
    queue._alarm_factory.retune_in_flight(queue.alarms.in_flight, threshold)


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
