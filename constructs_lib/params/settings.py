"""The typed settings of the public calls of a ResilientQueue: each call's arguments, checked by
its parameter table (``table``, ``prop_tables``) and the rules between them (``combinations``),
converted once into a frozen dataclass that the construct and its collaborators read by
attribute: ``QueueSettings`` (``ResilientQueue(...)``), ``ConsumerCall``
(``add_lambda_consumer`` and ``add_dead_letter_consumer``) and ``ProducerCall``
(``add_producer``).

The checks read a call's arguments by name, in the order of its signature, as the tables
declare them; nothing past this module does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs

from constructs_lib import adoption
from constructs_lib.adoption import ExistingQueues
from constructs_lib.errors import Problem
from constructs_lib.params import backoff_fields, combinations, payload_fields, prop_tables
from constructs_lib.params.table import Table
from constructs_lib.queue.payloads import LargePayloads
from constructs_lib.retry_backoff import RetryBackoff


@dataclass(frozen=True)
class QueueSettings:
    """A ``ResilientQueue(...)`` call, checked: its arguments as given (with the deployed
    queues' name and type as defaults, ``existing``), then the values its checks read."""

    queue_name: str | None
    max_receive_count: int
    retention_period: Duration | None
    dead_letter_retention_period: Duration | None
    visibility_timeout: Duration | None
    max_message_size: int | None
    encryption_key: kms.IKey | None
    content_based_deduplication: bool | None
    deduplication_scope: sqs.DeduplicationScope | None
    fifo_throughput_limit: sqs.FifoThroughputLimit | None
    dead_letter_queue: sqs.IQueue | None
    alarm_actions: Sequence[cloudwatch.IAlarmAction]
    ok_actions: Sequence[cloudwatch.IAlarmAction]
    critical_actions: Sequence[cloudwatch.IAlarmAction] | None
    warning_actions: Sequence[cloudwatch.IAlarmAction] | None
    composite_alarm: bool
    in_flight_alarm_threshold: int | None
    removal_policy: RemovalPolicy | None
    fair: bool
    existing: ExistingQueues | None
    large_payloads: LargePayloads | None
    fifo: bool
    """Whether both queues are FIFO: ``fifo``, or read from ``queue_name``."""
    source_retention: int | None
    """The source's retention in seconds (SQS's default when not given); None for a token."""
    dead_letter_retention: int | None
    """The DLQ's retention in seconds; None when unknown (a token, or a DLQ given)."""
    visibility_seconds: int | None
    """``visibility_timeout`` in seconds; None when not given or a token."""
    visibility_unresolved: bool
    """``visibility_timeout`` is a token: nothing derived may replace it, nothing judges it."""
    message_size_bytes: int | None
    """``max_message_size``; None when not given (SQS's default of 1 MiB) or a token."""
    expected_traffic_seconds: int | None
    """``expected_traffic`` in seconds; None when not given or a token."""

    @property
    def retentions(self) -> tuple[int | None, int | None]:
        """``(source_retention, dead_letter_retention)``."""
        return self.source_retention, self.dead_letter_retention


def new_queue_arguments(names: Mapping[str, Any]) -> dict[str, Any]:
    """A ``ResilientQueue(...)`` call's arguments (``call_arguments``), every kind checked and
    its construct id free (``check_new_construct``), before the construct joins the tree."""
    arguments = call_arguments(names)
    combinations.check_new_construct(prop_tables.QUEUE, arguments)
    scope = arguments["scope"]
    path = "/".join(p for p in (scope.node.path, str(arguments["construct_id"])) if p)
    payload_fields.check_kinds(path, arguments)
    return arguments


def queue_settings(
    arguments: Mapping[str, Any], report: Callable[[Sequence[str], Sequence[Problem]], None]
) -> QueueSettings:
    """The settings of a ``ResilientQueue(...)`` call whose kinds ``check_new_construct``
    passed: every rule between its arguments judged, and ``report``-ed (errors raise)."""
    existing: ExistingQueues | None = arguments["existing"]
    queue_name, fifo, adoption_problems = adoption.take_defaults(
        existing,
        arguments["queue_name"],
        arguments["fifo"],
        arguments["dead_letter_queue"] is not None,
    )
    # The deployed queues' name and type are what the user means unless said otherwise.
    arguments = {**arguments, "queue_name": queue_name, "fifo": fifo}
    given = combinations.check_queue(arguments)
    payload_problems = payload_fields.field_problems(arguments["large_payloads"])
    report(given.unresolved, given.problems + adoption_problems + payload_problems)
    return QueueSettings(
        queue_name=queue_name,
        max_receive_count=arguments["max_receive_count"],
        retention_period=arguments["retention_period"],
        dead_letter_retention_period=arguments["dead_letter_retention_period"],
        visibility_timeout=arguments["visibility_timeout"],
        max_message_size=arguments["max_message_size"],
        encryption_key=arguments["encryption_key"],
        content_based_deduplication=arguments["content_based_deduplication"],
        deduplication_scope=arguments["deduplication_scope"],
        fifo_throughput_limit=arguments["fifo_throughput_limit"],
        dead_letter_queue=arguments["dead_letter_queue"],
        alarm_actions=arguments["alarm_actions"],
        ok_actions=arguments["ok_actions"],
        critical_actions=arguments["critical_actions"],
        warning_actions=arguments["warning_actions"],
        composite_alarm=arguments["composite_alarm"],
        in_flight_alarm_threshold=arguments["in_flight_alarm_threshold"],
        removal_policy=arguments["removal_policy"],
        fair=arguments["fair"],
        existing=existing,
        large_payloads=arguments["large_payloads"],
        fifo=given.fifo,
        source_retention=given.source_retention,
        dead_letter_retention=given.dead_letter_retention,
        visibility_seconds=given["visibility_timeout"],
        visibility_unresolved="visibility_timeout" in given.unresolved,
        message_size_bytes=given["max_message_size"],
        expected_traffic_seconds=given["expected_traffic"],
    )


@dataclass(frozen=True)
class ConsumerCall:
    """An ``add_lambda_consumer`` (or ``add_dead_letter_consumer``) call whose kinds are
    checked: its arguments as given, then the values its table read and what it found.
    (``ConsumerSettings`` is what the consumer was set up with, once attached.)"""

    function: lambda_.IFunction
    batch_size: int
    max_batching_window: Duration | None
    max_concurrency: int | None
    report_batch_item_failures: bool
    visibility_timeout_factor: float
    function_timeout: Duration | None
    enabled: bool
    filters: Sequence[Mapping[str, Any]] | None
    event_source_metrics: bool
    provisioned_pollers: tuple[int, int] | None
    retry_backoff: RetryBackoff | None
    known_batch_size: int | None
    """``batch_size``; None for a token."""
    window_seconds: int | None
    """``max_batching_window`` in seconds; None when not given or a token."""
    known_factor: float | None
    """``visibility_timeout_factor``; None for a token."""
    timeout_seconds: int | None
    """``function_timeout`` in seconds; None when not given or a token."""
    problems: tuple[Problem, ...]
    """Every value out of its range."""
    unresolved: tuple[str, ...]
    """The arguments that are tokens, not judged."""


def consumer_call(
    table: Table, path: Callable[[], str], arguments: Mapping[str, Any], fifo: bool
) -> ConsumerCall:
    """The checked call of a consumer of a queue (``fifo`` or not): a ``ParameterTypeError``
    for arguments of the wrong kind, else every value read as ``table`` reads it."""
    backoff_fields.check_consumer_kinds(table, path, arguments, fifo)
    given = table.read(arguments, fifo)
    return ConsumerCall(
        function=arguments["function"],
        batch_size=arguments["batch_size"],
        max_batching_window=arguments["max_batching_window"],
        max_concurrency=arguments["max_concurrency"],
        report_batch_item_failures=arguments["report_batch_item_failures"],
        visibility_timeout_factor=arguments["visibility_timeout_factor"],
        function_timeout=arguments["function_timeout"],
        # The dead-letter consumer's call has no filters, no switch and no backoff.
        enabled=arguments.get("enabled", True),
        filters=arguments.get("filters"),
        event_source_metrics=arguments["event_source_metrics"],
        provisioned_pollers=arguments["provisioned_pollers"],
        retry_backoff=arguments.get("retry_backoff"),
        known_batch_size=given["batch_size"],
        window_seconds=given["max_batching_window"],
        known_factor=given["visibility_timeout_factor"],
        timeout_seconds=given["function_timeout"],
        problems=tuple(given.problems),
        unresolved=tuple(given.unresolved),
    )


@dataclass(frozen=True)
class ProducerCall:
    """An ``add_producer`` call whose kinds are checked."""

    source: sns.ITopic | events.IRule | s3.IBucket
    s3_events: Sequence[s3.EventType]
    s3_filters: Sequence[s3.NotificationKeyFilter]
    raw_message_delivery: bool
    message_group_id: str | None


def producer_call(
    table: Table, path: Callable[[], str], arguments: Mapping[str, Any]
) -> ProducerCall:
    """The checked call of a producer: a ``ParameterTypeError`` for arguments of the wrong
    kind."""
    table.check_kinds(path, arguments)
    return ProducerCall(
        source=arguments["source"],
        s3_events=arguments["s3_events"],
        s3_filters=arguments["s3_filters"],
        raw_message_delivery=arguments["raw_message_delivery"],
        message_group_id=arguments["message_group_id"],
    )


def call_arguments(names: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments by name, in signature order, from its ``locals()`` at its start."""
    return {k: v for k, v in names.items() if k not in ("self", "__class__")}
