"""A ``ResilientQueue``'s ``large_payloads`` fields, judged with its call: their kinds before
the construct joins the tree, their values with the rules between the call's arguments. Their
problems name the field as ``large_payloads.<field>``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from constructs_lib.errors import ParameterTypeError, Problem
from constructs_lib.params.prop_tables import LARGE_PAYLOADS
from constructs_lib.queue.payloads import LargePayloads


def check_kinds(path: str, arguments: Mapping[str, object]) -> None:
    """A ``ParameterTypeError`` listing every field of the wrong kind, with the other fields'
    values out of range, when any is of the wrong kind."""
    given = arguments.get("large_payloads")
    if not isinstance(given, LargePayloads):
        return
    fields = _field_values(given)
    kinds = LARGE_PAYLOADS.kind_problems(fields)
    if not kinds:
        return
    ranges = LARGE_PAYLOADS.read(LARGE_PAYLOADS.without(fields, kinds)).problems
    raise ParameterTypeError(path, _prefixed(LARGE_PAYLOADS.in_order(kinds + ranges)))


def field_problems(given: LargePayloads | None) -> list[Problem]:
    """The fields' values out of range (their kinds passed ``check_kinds``)."""
    if given is None:
        return []
    return _prefixed(LARGE_PAYLOADS.read(_field_values(given)).problems)


def _field_values(given: LargePayloads) -> dict[str, object]:
    return {name: getattr(given, name) for name in LARGE_PAYLOADS.names}


def _prefixed(problems: list[Problem]) -> list[Problem]:
    return [dataclasses.replace(p, prop=f"large_payloads.{p.prop}") for p in problems]
