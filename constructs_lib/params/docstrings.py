"""Docstrings and signatures for the public calls, from the parameter tables in ``prop_tables``.

``help(ResilientQueue)`` and IDEs read what Python gives them. Two things jsii hides:

- a construct's ``__init__`` without a docstring inherits ``Construct.__init__``'s ("Creates a
  new construct node."), so the constructor needs its own;
- a jsii class's metaclass defines ``__call__(*args, **kwargs)``, which ``inspect.signature``
  reads before ``__init__``: the class shows ``(*args, **kwargs)`` unless it states its own.

``with_params`` appends the table's parameters (what each accepts, its default, its range and
rule) to a function's docstring, the same words as the README and docs/api.md tables, so each
parameter is described once, in its table. ``signed`` gives a class its ``__init__``'s
signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from constructs_lib.params.table import Table

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def _plain(text: str) -> str:
    return text.replace("`", "``")


def render_params(table: Table) -> str:
    """One reST ``:param:`` entry per documented parameter, in signature order."""
    entries = []
    for param in table.params:
        if not param.documented:
            continue
        rule = "; ".join(
            part for part in (param.range.render() if param.range else "", param.rule) if part
        )
        text = f"{_plain(param.accepts())}. Default: {_plain(param.default)}."
        if rule:
            text += f" {_plain(rule[0].upper() + rule[1:])}."
        entries.append(f":param {param.name}: {text}")
    return "\n".join(entries)


def with_params(table: Table) -> Callable[[F], F]:
    """Append ``table``'s parameters to the decorated function's own docstring."""

    def decorate(function: F) -> F:
        summary = inspect.cleandoc(function.__doc__ or "")
        if not summary:
            raise TypeError(f"{function.__qualname__} needs a summary docstring of its own")
        function.__doc__ = f"{summary}\n\n{render_params(table)}\n"
        return function

    return decorate


def signed(cls: C) -> C:
    """Give ``cls`` the signature of its ``__init__`` (without ``self``)."""
    signature = inspect.signature(cls.__dict__["__init__"])  # its own, as the class defines it
    parameters = list(signature.parameters.values())[1:]
    cls.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return cls
