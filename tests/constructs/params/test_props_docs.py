"""The parameter tables of the README and docs/api.md are the declared table, rendered: they
cannot drift from what the library checks. Each parameter also has its docstring line."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from constructs_lib import LargePayloads, ResilientQueue, RetryBackoff, limits
from constructs_lib.checks import QueueResilienceChecks
from constructs_lib.params import prop_tables
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()
API = (REPO_ROOT / "docs" / "api.md").read_text()
CALLS: dict[str, tuple[Callable[..., Any], Any]] = {
    "ResilientQueue": (ResilientQueue.__init__, ResilientQueue.__init__),
    "add_lambda_consumer": (ResilientQueue.add_lambda_consumer, ResilientQueue.add_lambda_consumer),
    "RetryBackoff": (RetryBackoff.__init__, RetryBackoff),
    "LargePayloads": (LargePayloads.__init__, LargePayloads),
    "add_dead_letter_consumer": (
        ResilientQueue.add_dead_letter_consumer,
        ResilientQueue.add_dead_letter_consumer,
    ),
    "add_dashboard": (ResilientQueue.add_dashboard, ResilientQueue.add_dashboard),
    "grant_redrive": (ResilientQueue.grant_redrive, ResilientQueue.grant_redrive),
    "add_producer": (ResilientQueue.add_producer, ResilientQueue.add_producer),
    "QueueResilienceChecks": (QueueResilienceChecks.__init__, QueueResilienceChecks),
}
TABLES = {table.call: table for table in prop_tables.TABLES}


def markdown_tables(text: str) -> list[list[str]]:
    """Every markdown table of ``text``, as its lines."""
    return [block.splitlines() for block in re.findall(r"(?:^\|.*\|\n)+", text, flags=re.M)]


def test_every_declared_table_is_checked_here() -> None:
    assert set(CALLS) == set(TABLES)


@pytest.mark.parametrize("call", list(CALLS))
def test_each_table_names_exactly_the_parameters_of_its_call(call: str) -> None:
    signature = inspect.signature(CALLS[call][0])
    assert tuple(signature.parameters)[1:] == TABLES[call].names


@pytest.mark.parametrize("call", ["ResilientQueue", "add_lambda_consumer"])
def test_the_readme_shows_the_declared_table(call: str) -> None:
    rendered = TABLES[call].render_markdown().splitlines()
    assert rendered in markdown_tables(README)


@pytest.mark.parametrize("call", list(CALLS))
def test_the_api_reference_shows_the_declared_table(call: str) -> None:
    rendered = TABLES[call].render_markdown().splitlines()
    assert rendered in markdown_tables(API)
    assert f"### `{call}`" in API


@pytest.mark.parametrize("call", list(CALLS))
def test_every_documented_parameter_has_its_docstring_line(call: str) -> None:
    docstring = inspect.getdoc(CALLS[call][1]) or ""
    for param in TABLES[call].params:
        if param.documented:
            assert f":param {param.name}:" in docstring, param.name


def test_the_rendered_ranges_are_the_limits() -> None:
    # A spot check that the table reads limits.py rather than numbers of its own.
    queue = {p.name: p for p in prop_tables.QUEUE.params}
    consumer = {p.name: p for p in prop_tables.CONSUMER.params}
    assert queue["max_receive_count"].range is not None
    assert queue["max_receive_count"].range.render() == (
        f"{limits.MAX_RECEIVE_COUNT_MIN:,}-{limits.MAX_RECEIVE_COUNT_MAX:,}"
    )
    assert consumer["batch_size"].range is not None
    assert consumer["batch_size"].range.bounds(fifo=True) == (1, limits.BATCH_SIZE_MAX_FIFO)
    assert consumer["batch_size"].range.bounds(fifo=False) == (1, limits.BATCH_SIZE_MAX_STANDARD)
