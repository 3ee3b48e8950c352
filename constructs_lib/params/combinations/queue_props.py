"""The rules between the props of one ``ResilientQueue(...)`` call: the queue's type from its name,
the order of the source's and the DLQ's retention, the DLQ's message size, messages that would
expire before they are dead-lettered, FIFO-only props on a standard queue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs

from constructs_lib import limits
from constructs_lib.alarms.signals import signal_problems
from constructs_lib.errors import Problem
from constructs_lib.params.combinations._dead_letter_retention import (
    dead_letter_retention_and_problems,
)
from constructs_lib.params.prop_tables import QUEUE
from constructs_lib.params.table import Given
from constructs_lib.policy.dead_letters import (
    expiry_before_dead_letter_problems,
    message_size_problems,
)
from constructs_lib.policy.queue_names import queue_name_problems
from constructs_lib.queue import naming

_RETENTIONS = ("retention_period", "dead_letter_retention_period")


_QUEUE_PARAMS = {param.name: param for param in QUEUE.params}


FIFO_ONLY = ("content_based_deduplication", "deduplication_scope", "fifo_throughput_limit")
"""The props that apply only to FIFO queues."""


_ORDER_PROPS = ("retention_period", "dead_letter_queue")


@dataclass(frozen=True)
class QueueGiven(Given):
    fifo: bool = False
    source_retention: int | None = None
    dead_letter_retention: int | None = None


def check_queue(arguments: Mapping[str, Any]) -> QueueGiven:
    """Every problem of a ``ResilientQueue(...)`` call: the table's ranges, then the rules
    between props. Call after ``check_new_construct``."""
    queue_name: str | None = arguments["queue_name"]
    dead_letter_queue: sqs.IQueue | None = arguments["dead_letter_queue"]
    name_known = queue_name is not None and not Token.is_unresolved(queue_name)
    fifo, problems = _resolve_fifo(arguments["fifo"], queue_name if name_known else None)
    given = QUEUE.read(arguments, fifo)
    unresolved = list(given.unresolved)
    if queue_name is not None and not name_known:
        unresolved.insert(0, "queue_name")
    problems = given.problems + problems
    problems += queue_name_problems(
        "queue_name", queue_name if name_known else None, fifo, dead_letter_queue is None
    )
    source_retention = given["retention_period"]
    source_set = arguments["retention_period"] is not None
    if not source_set:
        source_retention = limits.RETENTION_DEFAULT
    retention_problems, dead_letter_retention = dead_letter_retention_and_problems(
        fifo,
        source_retention,
        source_set,
        dead_letter_queue,
        arguments["dead_letter_retention_period"],
        given["dead_letter_retention_period"],
    )
    if any(
        given[name] is not None and not _QUEUE_PARAMS[name].in_range(given[name])
        for name in _RETENTIONS
    ):
        # A retention out of range is one problem; its order against the other would repeat it.
        # (A fraction of a second is judged as the whole seconds its fix offers: the order then
        # tells whether that value would do.)
        retention_problems = [p for p in retention_problems if p.prop not in _ORDER_PROPS]
    problems += retention_problems
    problems += _message_size_problems(given, problems, dead_letter_queue)
    problems += _expiry_problems(given, problems, source_retention)
    problems += _silent_tier_problems(arguments)
    if not fifo:
        problems += [
            Problem(
                prop, arguments[prop], "applies only to FIFO queues", "remove it, or set fifo=True"
            )
            for prop in FIFO_ONLY
            if arguments[prop] is not None
        ]
    problems += signal_problems(fifo, given["expected_traffic"], arguments["fair"])
    if dead_letter_queue is not None and dead_letter_queue.fifo != fifo:
        problems.append(
            Problem(
                "dead_letter_queue",
                naming.display(dead_letter_queue),
                f"is a {'FIFO' if dead_letter_queue.fifo else 'standard'} queue, but the source is "
                f"{'FIFO' if fifo else 'standard'}; SQS requires the same type and rejects the deploy",
                "pass a DLQ of the source's type, or leave dead_letter_queue unset to get one",
            )
        )
    return QueueGiven(
        given.values, problems, unresolved, fifo, source_retention, dead_letter_retention
    )


def _message_size_problems(
    given: Given, problems: list[Problem], dead_letter_queue: sqs.IQueue | None
) -> list[Problem]:
    """A given DLQ must take every message the source takes (a created one gets the source's
    size). An unset size is SQS's default, 1 MiB, on either queue."""
    if (
        dead_letter_queue is None
        or "max_message_size" in given.unresolved
        or any(p.prop == "max_message_size" for p in problems)
    ):
        return []
    source = given["max_message_size"]
    if source is None:
        source = limits.MESSAGE_SIZE_DEFAULT
    return message_size_problems(source, _own_message_size(dead_letter_queue))


def _own_message_size(queue: sqs.IQueue) -> int | None:
    """The maximum message size of a queue defined in this app; None when it cannot be read."""
    cfn = queue.node.default_child
    if not isinstance(cfn, sqs.CfnQueue):
        return None
    value = cfn.maximum_message_size
    if value is None:
        return limits.MESSAGE_SIZE_DEFAULT
    return None if Token.is_unresolved(value) else int(value)


def _expiry_problems(
    given: Given, problems: list[Problem], source_retention: int | None
) -> list[Problem]:
    """An explicit visibility timeout that lets messages expire before they are dead-lettered.
    Without one the consumers set it: ``add_lambda_consumer`` checks then, and the construct
    checks SQS's default at synth when no consumer came."""
    judged = ("max_receive_count", "retention_period", "visibility_timeout")
    if given["visibility_timeout"] is None or any(p.prop in judged for p in problems):
        return []
    return expiry_before_dead_letter_problems(
        given["max_receive_count"], given["visibility_timeout"], source_retention
    )


def _resolve_fifo(fifo: bool | None, known_name: str | None) -> tuple[bool, list[Problem]]:
    name_says_fifo = known_name is not None and known_name.endswith(limits.FIFO_SUFFIX)
    if fifo is False and name_says_fifo:
        return False, [
            Problem(
                "queue_name",
                known_name,
                "ends with '.fifo', which only FIFO queues may, but fifo=False",
                "remove '.fifo' from the name, or set fifo=True",
            )
        ]
    return (fifo if fifo is not None else name_says_fifo), []


def unresolved_warning(prop: str) -> tuple[str, str]:
    """The warning id and text for a prop whose value is an unresolved token."""
    if prop == "queue_name":
        return (
            "unresolvedQueueName",
            "queue_name is a token: its length and characters are not checked.",
        )
    return f"unresolved_{prop}", f"{prop} is a token: the rules that use it are not checked."


def _silent_tier_problems(arguments: Mapping[str, Any]) -> list[Problem]:
    """An alarm without actions changes state in the console and tells nobody: a tier whose
    alarms notify nobody warns (with ``composite_alarm``, the composite carries the critical
    actions, so its members are not silent). ``arguments``: a ``ResilientQueue(...)`` call's."""
    alarm_actions: Sequence[cloudwatch.IAlarmAction] = arguments["alarm_actions"]
    critical_actions = arguments["critical_actions"]
    warning_actions = arguments["warning_actions"]
    if not alarm_actions and critical_actions is None and warning_actions is None:
        return [
            Problem(
                "alarm_actions",
                list(alarm_actions),
                "is empty, so the alarms notify nobody: a stuck consumer or a dead letter shows "
                "only to someone who opens the CloudWatch console",
                "pass alarm_actions=[cloudwatch_actions.SnsAction(topic)] (and ok_actions, to hear "
                "when an alarm recovers)",
                severity="warning",
            )
        ]
    problems = []
    for prop, given in (
        ("critical_actions", critical_actions),
        ("warning_actions", warning_actions),
    ):
        actions = alarm_actions if given is None else given
        if actions:
            continue
        problems.append(
            Problem(
                prop,
                list(actions),
                f"is empty{' (alarm_actions, its default, is empty)' if given is None else ''}, "
                f"so {_SILENT_TIER[prop]}",
                f"pass {prop}=[cloudwatch_actions.SnsAction(topic)], or alarm_actions for both "
                "tiers",
                severity="warning",
            )
        )
    return problems


# What a tier without actions fails to do, by the parameter that gives its actions.
_SILENT_TIER = {
    "critical_actions": "the critical alarms (dead letters, messages about to expire, SNS "
    "delivery failures, a consumer failing every message) page nobody",
    "warning_actions": "the warning alarms (in flight near the limit, a consumer failing "
    "messages) file no ticket",
}
