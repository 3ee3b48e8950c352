"""The Lambda consumers of one queue of a ResilientQueue (its source queue, or its dead-letter
queue): each call's checks, the visibility timeout the consumer needs of the queue, the SQS event
source that attaches it, and its alarms (failed messages; failing every message)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Names, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import adoption, policy
from constructs_lib.alarms.factory import AlarmFactory
from constructs_lib.consumer import backoff_layer, bypass, payload_access
from constructs_lib.consumer.event_source import (
    ConsumerSettings,
    LambdaConsumer,
    function_timeout_seconds,
    make_event_source,
)
from constructs_lib.errors import Problem
from constructs_lib.params import combinations
from constructs_lib.queue.payloads import PayloadStore
from constructs_lib.retry_backoff import RetryBackoff
from constructs_lib.synth.deferred import FunctionChecks, QueueFeeds, WarningReporter

if TYPE_CHECKING:
    from constructs_lib.params.settings import ConsumerCall


@dataclass(frozen=True)
class ConsumedQueue:
    """What the checks of a consumer need to know of the queue it reads."""

    queue: sqs.IQueue
    dead_letter: bool
    fifo: bool
    max_receive_count: int | None
    """None when it is a token."""
    max_message_size: int | None
    explicit_visibility: int | None
    """The visibility timeout given to the ResilientQueue (the source only)."""
    visibility_known: bool
    source_retention: int | None
    refusal: Problem | None = None
    """Why no consumer may be added (a dead_letter_queue the app gave), or None."""
    mapping_logical_ids: Mapping[str, str] = field(default_factory=dict)
    """The deployed event source mappings' logical ids, by consumer function construct id
    (``ExistingQueues.event_source_logical_ids``)."""
    payloads: PayloadStore | None = None
    """Where the queue's payloads live (``large_payloads``), or None."""


class QueueConsumers:
    """The consumers of one queue, in the order they were added (``consumers``, the list the
    ResilientQueue shows). ``on_added`` lets the queue follow each new consumer (its visibility
    timeout, its alarms); ``feeds`` are every consumer of the ResilientQueue, by queue name, for
    the checks of the function at synth; ``stack`` is ``scope``'s."""

    def __init__(
        self,
        scope: Construct,
        consumed: ConsumedQueue,
        consumers: list[LambdaConsumer],
        *,
        stack: Stack,
        reporter: WarningReporter,
        alarms: AlarmFactory,
        feeds: QueueFeeds,
        on_added: Callable[[], None],
    ) -> None:
        self.scope = scope
        self.consumed = consumed
        self.consumers = consumers
        self._stack = stack
        self._reporter = reporter
        self._alarms = alarms
        self._feeds = feeds
        self._on_added = on_added
        self._mapping_references: set[str] = set()

    @property
    def visibility_timeout(self) -> int | None:
        """The largest visibility timeout the consumers need (seconds); None without one."""
        if not self.consumers:
            return None
        return max(c.visibility_timeout for c in self.consumers)

    def mapping_references(self) -> frozenset[str]:
        """The consumers' event source mappings (CloudFormation resources, by jsii reference),
        to tell them from mappings added without the construct."""
        return frozenset(self._mapping_references)

    def add(self, call: ConsumerCall) -> LambdaConsumer:
        """One code path for the consumers of both queues: check, derive, wire, alarm."""
        function = call.function
        problems = self._queue_problems(function)
        problems += call.problems
        timeout, timeout_problems = function_timeout_seconds(
            function, call.timeout_seconds, "function_timeout" in call.unresolved
        )
        problems += timeout_problems
        window, factor = call.window_seconds, call.known_factor
        problems += policy.batching_problems(self.consumed.fifo, call.known_batch_size, window)
        if factor is not None:
            problems += policy.visibility_factor_problems(factor, timeout, window)
        problems += self._receive_problems()
        backoff_plan, backoff_problems = self._backoff_plan(
            call.retry_backoff, function, call.report_batch_item_failures
        )
        problems += backoff_problems
        access, access_problems = payload_access.plan(self.consumed.payloads, function)
        problems += access_problems
        unresolved_pollers, poller_problems = _poller_problems(call)
        problems += poller_problems
        derived = 0
        if (
            timeout is not None
            and factor is not None
            and not any(p.severity == "error" for p in problems)
        ):
            derived = policy.derived_visibility_timeout(timeout, window or 0, factor)
            problems += self._visibility_problems(derived, timeout, backoff_plan)
        problems += policy.batch_payload_problems(
            call.known_batch_size, self.consumed.max_message_size
        )
        problems += _event_source_warnings(call)
        mapping_id = f"SqsEventSource:{Names.node_unique_id(self.consumed.queue.node)}"
        self._reporter.report(
            [*call.unresolved, *unresolved_pollers],
            problems,
            lambda: function.node.try_find_child(mapping_id),
        )
        assert timeout is not None  # a missing timeout is one of the problems raised above
        settings = _consumer_settings(call, backoff_plan)
        consumer = self._attach(function, mapping_id, timeout, derived, settings)
        _apply(backoff_plan, access)
        self.consumers.append(consumer)
        self._on_added()
        FunctionChecks.watch(function, self._feeds)
        return consumer

    def _queue_problems(self, function: lambda_.IFunction) -> list[Problem]:
        """What this queue says against any consumer, or against this function."""
        consumed = self.consumed
        problems = [consumed.refusal] if consumed.refusal is not None else []
        consumed_text = (
            f"the dead-letter queue of {self.scope.node.path}" if consumed.dead_letter else None
        )
        problems += combinations.consumer_misuse_problems(
            self.scope, self._stack, function, self.consumers, consumed_text
        )
        return problems

    def _receive_problems(self) -> list[Problem]:
        # The DLQ has no redrive policy: its receives lead nowhere.
        if self.consumed.dead_letter:
            return []
        return policy.lambda_receive_count_problems(self.consumed.max_receive_count)

    def _backoff_plan(
        self,
        retry: RetryBackoff | None,
        function: lambda_.IFunction,
        report_batch_item_failures: bool,
    ) -> tuple[backoff_layer.BackoffPlan | None, list[Problem]]:
        """What ``retry_backoff`` (source consumers only) does to the function, or why not."""
        if retry is None:
            return None, []
        consumed = self.consumed
        return backoff_layer.plan(
            retry,
            function,
            fifo=consumed.fifo,
            max_receive_count=consumed.max_receive_count,
            retention=consumed.source_retention,
            report_batch_item_failures=report_batch_item_failures,
        )

    def _visibility_problems(
        self, derived: int, timeout: int, backoff_plan: backoff_layer.BackoffPlan | None
    ) -> list[Problem]:
        """The queue's visibility timeout with this consumer: not below what any consumer
        needs, and short enough that a failing message is dead-lettered before it expires
        (with ``retry_backoff``, the schedules' worst case with the largest timeout: every
        later consumer checks again, with its own)."""
        consumed = self.consumed
        largest = max([derived, *(c.visibility_timeout for c in self.consumers)])
        explicit = None if consumed.dead_letter else consumed.explicit_visibility
        problems = policy.visibility_problems(largest, explicit)
        backoffs = [
            (c.settings.retry_backoff, c.function_timeout)
            for c in self.consumers
            if c.settings.retry_backoff is not None
        ]
        if backoff_plan is not None:
            backoffs.append((backoff_plan.schedule, timeout))
        if not consumed.dead_letter and consumed.visibility_known:
            problems += policy.expiry_before_dead_letter_problems(
                consumed.max_receive_count,
                explicit if explicit is not None else largest,
                consumed.source_retention,
                backoffs,
            )
        return problems

    def _attach(
        self,
        function: lambda_.IFunction,
        mapping_id: str,
        timeout: int,
        derived: int,
        settings: ConsumerSettings,
    ) -> LambdaConsumer:
        """The event source on the function, and the failed-messages alarm next to it."""
        queue = self.consumed.queue
        event_source = make_event_source(queue, settings)
        function.add_event_source(event_source)
        mapping = function.node.try_find_child(mapping_id)
        if mapping is not None:
            cfn_mapping = mapping.node.default_child
            if cfn_mapping is not None:
                self._mapping_references.add(bypass.jsii_reference(cfn_mapping))
            adoption.keep_logical_id(
                mapping, self.consumed.mapping_logical_ids.get(function.node.id)
            )
            # AWS offers no on-failure destination for SQS event sources: failed messages go to
            # the queue's redrive policy, which this construct always sets (Lambda guide).
            Validations.of(mapping).acknowledge(
                Acknowledgment(
                    id="Serverless::Serverless-LambdaEventSourceMappingDestination",
                    reason="SQS event sources have no on-failure destination; failed messages "
                    "move to the source queue's dead-letter queue through its redrive policy.",
                )
            )
        alarms: tuple[cloudwatch.Alarm | None, cloudwatch.Alarm | None] = (None, None)
        if settings.event_source_metrics:
            namesakes = sum(1 for c in self.consumers if c.function.node.id == function.node.id)
            alarms = (
                self._alarms.failed_messages(
                    function, event_source, mapping, namesakes, self.consumed.dead_letter
                ),
                self._alarms.failing_every_message(
                    function, event_source, mapping, namesakes, self.consumed.dead_letter
                ),
            )
        return LambdaConsumer(function, event_source, timeout, derived, settings, queue, *alarms)


def _apply(
    backoff_plan: backoff_layer.BackoffPlan | None, access: payload_access.PayloadAccess | None
) -> None:
    """The backoff schedule and the payload access on the function; one layer for both, the
    payloads layer (it holds ``constructs_lib.backoff`` too)."""
    if backoff_plan is not None:
        if access is not None and (access.layer or access.holds_layer):
            backoff_plan = dataclasses.replace(backoff_plan, layer=False)
        backoff_plan.apply()
    if access is not None:
        access.apply()


def _consumer_settings(
    call: ConsumerCall, backoff_plan: backoff_layer.BackoffPlan | None
) -> ConsumerSettings:
    """What the consumer is set up with: the call's values, the window in seconds, and the
    schedule ``retry_backoff`` puts in the function's environment."""
    return ConsumerSettings(
        batch_size=call.batch_size,
        batching_window=call.window_seconds,
        max_concurrency=call.max_concurrency,
        report_batch_item_failures=call.report_batch_item_failures,
        visibility_timeout_factor=call.visibility_timeout_factor,
        enabled=call.enabled,
        filters=call.filters,
        event_source_metrics=call.event_source_metrics,
        provisioned_pollers=call.provisioned_pollers,
        retry_backoff=backoff_plan.schedule if backoff_plan else None,
    )


def _poller_problems(call: ConsumerCall) -> tuple[list[str], list[Problem]]:
    """``provisioned_pollers`` against ``max_concurrency``; ``["provisioned_pollers"]`` as
    unresolved when either bound is a token."""
    pollers = call.provisioned_pollers
    if pollers is None:
        return [], []
    known = [p if isinstance(p, int) else None for p in pollers]
    unresolved = ["provisioned_pollers"] if None in known else []
    return unresolved, policy.provisioned_poller_problems(known[0], known[1], call.max_concurrency)


def _event_source_warnings(call: ConsumerCall) -> list[Problem]:
    """What an event source's settings quietly do to failing or unwanted messages."""
    problems: list[Problem] = []
    if call.filters:
        problems.append(
            Problem(
                "filters",
                call.filters,
                "drop every message that matches no filter: Lambda deletes it from the queue, "
                "it is never dead-lettered, and only FilteredOutEventCount counts it",
                "make sure every message this consumer must not see is meant to be deleted, or "
                "filter inside the function and report the rest as batch item failures",
                severity="warning",
            )
        )
    if not call.event_source_metrics and call.report_batch_item_failures:
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
