"""The checks of one public call beyond its parameter table: rules between parameters, and
misuse of the API.

A table (``constructs_lib.params.prop_tables``) judges each argument alone; what takes two of them, or
the construct tree, is here: a free construct id; a ``ResilientQueue(...)``'s type from its
name, the order of the source's and the DLQ's retention, the DLQ's message size, messages that
would expire before they are dead-lettered, FIFO-only props on a standard queue; a consumer
added twice or out of reach; a second dashboard or one that would tie two stacks together.
Each returns or raises its findings as ``Problem`` objects, which the call raises together as one
``ConfigurationError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aws_cdk import Duration, Stack, Token
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.alarms import signals as queue_signals
from constructs_lib.alarms import tiers as alarm_tiers
from constructs_lib.errors import ConfigurationError, ParameterTypeError, Problem
from constructs_lib.params.kinds import kind_of
from constructs_lib.params.prop_tables import QUEUE
from constructs_lib.params.table import Given, Table
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


def check_new_construct(table: Table, arguments: Mapping[str, Any]) -> None:
    """Kinds of every argument, and a free construct id, before the construct joins the tree.

    When an argument is of the wrong kind or the id is taken, the error lists every other
    problem of the call too (values out of range, and for ``ResilientQueue`` the rules between
    its props), judged without the arguments of the wrong kind: a user fixes them all at once.
    """
    scope, construct_id = arguments["scope"], arguments["construct_id"]

    def path() -> str:
        if not isinstance(scope, Construct):
            return f"{table.call} {construct_id!r}"
        return "/".join(part for part in (scope.node.path, str(construct_id)) if part)

    kinds = table.kind_problems(arguments)
    problems = list(kinds) + _placement_problems(scope, construct_id)
    sibling = (
        scope.node.try_find_child(construct_id)
        if isinstance(scope, Construct) and isinstance(construct_id, str)
        else None
    )
    if sibling is not None:
        problems.append(
            Problem(
                "construct_id",
                construct_id,
                f"is already the id of {kind_of(sibling)} in {scope.node.path or 'the app'}; "
                "construct ids must be unique within their scope",
                "choose another id (renaming an existing construct replaces its resources)",
            )
        )
    if not problems:
        return
    judged = table.without(arguments, kinds)
    if table is QUEUE:
        queue = check_queue(judged)
        problems = [_fifo_only_kind(p, queue.fifo) for p in problems] + queue.problems
    else:
        problems += table.read(judged).problems
    errors = table.in_order([p for p in problems if p.severity == "error"])
    raise (ParameterTypeError if kinds else ConfigurationError)(path(), errors)


def _placement_problems(scope: object, construct_id: object) -> list[Problem]:
    """Where the construct would go, as CDK would refuse it (from Node.js, mid-construction)."""
    problems = []
    if isinstance(scope, Construct) and not any(
        isinstance(ancestor, Stack) for ancestor in scope.node.scopes
    ):
        problems.append(
            Problem(
                "scope",
                scope,
                f"is {kind_of(scope)}, outside any Stack; queues, alarms and event sources are "
                "resources of a stack",
                "pass scope=stack, a cdk.Stack or a construct inside one",
            )
        )
    if construct_id == "":
        problems.append(
            Problem(
                "construct_id",
                construct_id,
                "is empty; only the app itself has an empty id",
                "pass a name, e.g. construct_id='Orders'",
            )
        )
    return problems


def _fifo_only_kind(problem: Problem, fifo: bool) -> Problem:
    """A FIFO-only prop of the wrong kind on a standard queue (or ``fair`` on a FIFO queue):
    no value of the right kind would do, so the fix says so rather than offer one."""
    if not problem.wrong_kind:
        return problem
    if not fifo and problem.prop in FIFO_ONLY:
        return replace(problem, fix="remove it: it applies only to FIFO queues (or set fifo=True)")
    if fifo and problem.prop == "fair":
        return replace(problem, fix="remove it: it applies only to standard queues")
    return problem


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
    retention_problems, dead_letter_retention = _dead_letter_retention(
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
    problems += alarm_tiers.silent_tier_problems(arguments)
    if not fifo:
        problems += [
            Problem(
                prop, arguments[prop], "applies only to FIFO queues", "remove it, or set fifo=True"
            )
            for prop in FIFO_ONLY
            if arguments[prop] is not None
        ]
    problems += queue_signals.signal_problems(fifo, given["expected_traffic"], arguments["fair"])
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


def _dead_letter_retention(
    fifo: bool,
    source: int | None,
    source_set: bool,
    dead_letter_queue: sqs.IQueue | None,
    stated: Duration | None,
    stated_seconds: int | None,
) -> tuple[list[Problem], int | None]:
    """The DLQ's retention in seconds (None: not known) and what is wrong with it.

    A created DLQ keeps ``dead_letter_retention_period`` (14 days unset). A DLQ the app
    defines keeps its own retention, read from it: setting ``dead_letter_retention_period``
    too is an error that names where to set it instead. An imported DLQ's retention cannot be
    read: ``dead_letter_retention_period`` then states it (checked against the source's and
    used for the DLQ expiry alarm), and without it there is no DLQ expiry alarm (a warning)."""
    if dead_letter_queue is None:
        retention = limits.RETENTION_MAX if stated is None else stated_seconds
        return _created_order_problems(fifo, source, source_set, retention), retention
    shown = naming.display(dead_letter_queue)
    own = _own_retention(dead_letter_queue)
    imported = not isinstance(dead_letter_queue.node.default_child, sqs.CfnQueue)
    if not imported:
        cfn = dead_letter_queue.node.default_child
        unset = isinstance(cfn, sqs.CfnQueue) and cfn.message_retention_period is None
        problems = _given_order_problems(
            fifo, source, source_set, own, shown, stated=False, dead_letter_unset=unset
        )
        if stated is not None:
            problems.insert(
                0,
                Problem(
                    "dead_letter_retention_period",
                    stated,
                    f"is read from the dead_letter_queue you gave, {shown}"
                    + (f", which keeps messages {own} s" if own is not None else "")
                    + "; it sets the retention only of a DLQ this construct creates",
                    f"remove dead_letter_retention_period, and set retention_period on {shown} "
                    "to change how long it keeps messages",
                ),
            )
        return problems, own
    if stated is None:
        return [
            Problem(
                "dead_letter_retention_period",
                None,
                f"is not set, and the retention of the imported dead_letter_queue {shown} cannot "
                "be read, so no DLQ expiry alarm is made: dead letters could expire unseen",
                "pass the retention that queue has, e.g. dead_letter_retention_period="
                "Duration.days(14) (the alarm then fires at half the time a dead letter has left)",
                severity="warning",
            )
        ], None
    return (
        _given_order_problems(fifo, source, source_set, stated_seconds, shown, stated=True),
        stated_seconds,
    )


def _source_text(source: int, source_set: bool) -> str:
    return f"{source} s" if source_set else f"{source} s, SQS's default, as it is not set"


def _created_order_problems(
    fifo: bool, source: int | None, source_set: bool, dead_letter: int | None
) -> list[Problem]:
    """A standard source must keep messages for less time than the DLQ created for it; each
    fix offered is one the user can apply (a DLQ already at 14 days cannot be lengthened)."""
    if fifo or source is None or dead_letter is None or source < dead_letter:
        return []
    fixes = []
    shorter = _retention_below(dead_letter)
    if shorter is not None:
        fixes.append(
            f"shorten retention_period below {dead_letter} s, e.g. retention_period={shorter}"
        )
    if dead_letter < limits.RETENTION_MAX:
        fixes.append(
            f"lengthen dead_letter_retention_period above {source} s (at most "
            f"{limits.RETENTION_MAX} s, 14 days), e.g. dead_letter_retention_period="
            "Duration.days(14)"
        )
    return [
        Problem(
            "retention_period",
            source if source_set else naming.Named(f"None ({_source_text(source, False)})"),
            f"must be shorter than dead_letter_retention_period ({dead_letter} s): a standard "
            "queue keeps a message's original enqueue time when it moves to the DLQ, so the DLQ "
            "would delete it on arrival or soon after",
            " or ".join(fixes),
        )
    ]


# Retentions a fix may offer, longest first: SQS's default, then shorter round values.
_RETENTION_EXAMPLES = (
    (limits.RETENTION_DEFAULT, "Duration.days(4)"),
    (24 * 3600, "Duration.days(1)"),
    (3600, "Duration.hours(1)"),
    (600, "Duration.minutes(10)"),
)


def _retention_below(seconds: int) -> str | None:
    """The longest example retention shorter than ``seconds``, as the user would write it."""
    return next((text for value, text in _RETENTION_EXAMPLES if value < seconds), None)


def _given_order_problems(
    fifo: bool,
    source: int | None,
    source_set: bool,
    dead_letter: int | None,
    shown: str,
    stated: bool,
    dead_letter_unset: bool = False,
) -> list[Problem]:
    """The same rule for a DLQ the user gave: the fix names that queue's own retention."""
    if fifo or source is None or dead_letter is None or source < dead_letter:
        return []
    where = (
        f"{shown} keeps messages {dead_letter} s (dead_letter_retention_period, as you state it)"
        if stated
        else f"{shown} keeps messages {dead_letter} s"
        + (", SQS's default, as it sets no retention_period" if dead_letter_unset else "")
    )
    longer = f"a retention_period above {source} s (at most {limits.RETENTION_MAX} s, 14 days)"
    fix = (
        f"if that queue keeps messages longer, state it in dead_letter_retention_period; "
        f"otherwise give it {longer}"
        if stated
        else f"give {shown} {longer}, e.g. sqs.Queue(..., retention_period=Duration.days(14))"
    )
    if source > limits.RETENTION_MIN:
        fix += f", or set this queue's retention_period below {dead_letter} s"
    return [
        Problem(
            "dead_letter_queue",
            naming.Named(shown),
            f"keeps messages no longer than this queue's retention_period "
            f"({_source_text(source, source_set)}): {where}. A standard queue keeps a message's "
            "original enqueue time when it moves to the DLQ, so the DLQ would delete it on "
            "arrival or soon after",
            fix,
        )
    ]


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


def _own_retention(queue: sqs.IQueue) -> int | None:
    """The retention of a queue defined in this app, when it can be read; None otherwise."""
    cfn = queue.node.default_child
    if not isinstance(cfn, sqs.CfnQueue):
        return None
    value = cfn.message_retention_period
    if value is None:
        return limits.RETENTION_DEFAULT
    return None if Token.is_unresolved(value) else int(value)


def consumer_misuse_problems(
    queue: Any,
    queue_stack: Stack,
    function: lambda_.IFunction,
    consumers: Sequence[Any] | None = None,
    consumed: str | None = None,
) -> list[Problem]:
    """A function twice on one queue, or one that this queue cannot reach: another app, another
    account or region (``queue`` is a ResilientQueue). A function in another stack of the same
    app and environment works: its stack gets the event source mapping and the grants.

    ``consumers`` are those of the queue being consumed (default: the source's) and
    ``consumed`` names that queue in the message (default: the ResilientQueue's path)."""
    function_stack = Stack.of(function)
    if function_stack is not queue_stack:
        if function.node.root is not queue.node.root:
            return [
                Problem(
                    "function",
                    naming.display(function),
                    f"belongs to another CDK app than {queue.node.path}; one synthesis cannot "
                    "connect constructs of two apps",
                    "define the function in the queue's app (Function.from_function_arn imports "
                    "one deployed elsewhere)",
                )
            ]
        if not _same_environment(function_stack, queue_stack):
            return [
                Problem(
                    "function",
                    naming.display(function),
                    f"is in stack {function_stack.stack_name} ({function_stack.account}/"
                    f"{function_stack.region}), another environment than {queue.node.path} "
                    f"({queue_stack.account}/{queue_stack.region}); this construct wires the event "
                    "source and its grants within one account and region",
                    "define the function in a stack of the queue's account and region",
                )
            ]
    for consumer in queue.consumers if consumers is None else consumers:
        if consumer.function is function or consumer.function.node.path == function.node.path:
            return [
                Problem(
                    "function",
                    naming.display(function),
                    f"already consumes {consumed or queue.node.path}; a second event source "
                    "mapping would "
                    "deliver every message to it twice",
                    "add each function once per queue (raise batch_size or max_concurrency for "
                    "more throughput)",
                )
            ]
    return []


def _same_environment(first: Stack, second: Stack) -> bool:
    return all(
        Token.is_unresolved(a) or Token.is_unresolved(b) or a == b
        for a, b in ((first.account, second.account), (first.region, second.region))
    )


def dashboard_problems(queue: Any, dashboard_name: str | None) -> list[Problem]:
    """One dashboard per queue; a name CloudWatch accepts (``queue`` is a ResilientQueue)."""
    problems: list[Problem] = []
    queue_stack = Stack.of(queue)
    problems += [
        Problem(
            "add_dashboard",
            dashboard_name,
            f"would graph {naming.display(consumer.function)} of stack "
            f"{Stack.of(consumer.function).stack_name}, another stack: that stack "
            f"already depends on {queue_stack.stack_name} (its event source mapping reads the "
            "queue), and the graph would make the two depend on each other, which CloudFormation "
            "rejects",
            "add the dashboard before that consumer, or define the function in the queue's stack",
        )
        for consumer in [*queue.consumers, *queue.dead_letter_consumers]
        if Stack.of(consumer.function) is not queue_stack
    ]
    if queue.node.try_find_child("Dashboard") is not None:
        problems.append(
            Problem(
                "add_dashboard",
                dashboard_name,
                f"was already called for {queue.node.path}, which has one dashboard",
                "call add_dashboard once, after adding every consumer",
            )
        )
    if (
        dashboard_name is not None
        and not Token.is_unresolved(dashboard_name)
        and (
            len(dashboard_name) > limits.DASHBOARD_NAME_MAX_LENGTH
            or not limits.DASHBOARD_NAME_PATTERN.match(dashboard_name)
        )
    ):
        problems.append(
            Problem(
                "dashboard_name",
                dashboard_name,
                f"must be 1 to {limits.DASHBOARD_NAME_MAX_LENGTH} characters of "
                "A-Z a-z 0-9 - _ (CloudWatch PutDashboard)",
                "remove the other characters, or leave it unset for a generated name",
            )
        )
    return problems


def unresolved_warning(prop: str) -> tuple[str, str]:
    """The warning id and text for a prop whose value is an unresolved token."""
    if prop == "queue_name":
        return (
            "unresolvedQueueName",
            "queue_name is a token: its length and characters are not checked.",
        )
    return f"unresolved_{prop}", f"{prop} is a token: the rules that use it are not checked."
