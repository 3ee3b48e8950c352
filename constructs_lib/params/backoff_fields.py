"""A consumer call's arguments and its ``retry_backoff``'s fields, judged as one call: the kinds
of both at once, with every other problem of the call, and the fields' values as the
``RetryBackoff`` table reads them. Their problems name the field as ``retry_backoff.<field>``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from constructs_lib import policy
from constructs_lib.errors import ParameterTypeError, Problem
from constructs_lib.params import prop_tables
from constructs_lib.params.table import Table
from constructs_lib.retry_backoff import RetryBackoff


def check_consumer_kinds(
    table: Table, path: Callable[[], str], arguments: Mapping[str, object], fifo: bool = False
) -> None:
    """The kinds of a consumer call's arguments and of its ``retry_backoff``'s fields
    (``retry_backoff.base`` ...). When any is of the wrong kind, one ``ParameterTypeError``
    lists them with every other value out of range and the batching rules, judged without
    them: every problem of the call at once."""
    kinds = table.kind_problems(arguments)
    if fifo:
        # No window of the right kind would do on a FIFO queue: say so rather than offer one.
        kinds = [
            dataclasses.replace(p, fix="remove it: FIFO queues take no batching window")
            if p.prop == "max_batching_window"
            else p
            for p in kinds
        ]
    retry = arguments.get("retry_backoff")
    field_kinds: list[Problem] = []
    if isinstance(retry, RetryBackoff):
        field_kinds = prop_tables.RETRY_BACKOFF.kind_problems(_field_values(retry))
    if not kinds and not field_kinds:
        return
    given = table.read(table.without(arguments, kinds), fifo)
    problems = kinds + given.problems
    if not any(p.prop in ("batch_size", "max_batching_window") for p in problems):
        problems += policy.batching_problems(
            fifo, given["batch_size"], given["max_batching_window"]
        )
    if isinstance(retry, RetryBackoff):
        fields = _field_values(retry)
        problems += _prefixed(
            field_kinds
            + prop_tables.RETRY_BACKOFF.read(
                prop_tables.RETRY_BACKOFF.without(fields, field_kinds)
            ).problems
        )
    raise ParameterTypeError(path(), table.in_order(problems))


def _field_values(retry: RetryBackoff) -> dict[str, object]:
    return {name: getattr(retry, name) for name in prop_tables.RETRY_BACKOFF.names}


def field_problems(retry: RetryBackoff) -> list[Problem]:
    """The fields' values (their kinds were checked with the call's arguments)."""
    table = prop_tables.RETRY_BACKOFF
    fields = _field_values(retry)
    given = table.read(fields)
    problems = list(given.problems)
    problems += [
        Problem(
            name,
            fields[name],
            "is an unresolved token, but the schedule must be known at synth (it is checked "
            "against the queue's retention and written into the function's environment)",
            f"pass {name}=Duration.seconds(N)",
        )
        for name in given.unresolved
    ]
    base, cap = given["base"], given["cap"]
    if not problems and cap < base:
        problems.append(
            Problem(
                "cap",
                fields["cap"],
                f"is {cap} s, below base ({base} s): the longest wait cannot be shorter than "
                "the first",
                "raise cap or lower base",
            )
        )
    return _prefixed(problems)


def _prefixed(problems: tuple[Problem, ...] | list[Problem]) -> list[Problem]:
    return [dataclasses.replace(p, prop=f"retry_backoff.{p.prop}") for p in problems]
