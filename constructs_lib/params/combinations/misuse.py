"""Misuse of the API that the tables cannot see: a construct placed outside a stack or under a
taken id, a consumer added twice or out of reach, a second dashboard or one that would tie two
stacks together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from constructs_lib import limits
from constructs_lib.errors import ConfigurationError, ParameterTypeError, Problem
from constructs_lib.params.combinations.queue_props import FIFO_ONLY, check_queue
from constructs_lib.params.kinds import kind_of
from constructs_lib.params.prop_tables import QUEUE
from constructs_lib.params.table import Table
from constructs_lib.queue import naming


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
