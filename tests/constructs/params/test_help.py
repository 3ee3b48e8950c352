"""``help(ResilientQueue)`` shows the library's own constructor and methods, every parameter of
each with its default: not CDK's "Creates a new construct node." nor jsii's ``(*args, **kwargs)``.
"""

from __future__ import annotations

import inspect
import pydoc
import re

import pytest

from constructs_lib import ResilientQueue
from constructs_lib.params import prop_tables
from constructs_lib.params import table as param_table

HELP = pydoc.render_doc(ResilientQueue, renderer=pydoc.plaintext)
CDK_INIT_DOC = "Creates a new construct node."
# The public calls on ResilientQueue and their parameter tables.
METHODS = {
    "__init__": prop_tables.QUEUE,
    "add_lambda_consumer": prop_tables.CONSUMER,
    "add_dead_letter_consumer": prop_tables.DEAD_LETTER_CONSUMER,
    "add_dashboard": prop_tables.DASHBOARD,
    "grant_redrive": prop_tables.REDRIVE,
    "add_producer": prop_tables.PRODUCER,
}


def documented(table: param_table.Table) -> list[param_table.Param]:
    return [param for param in table.params if param.documented]


def param_entries(doc: str) -> dict[str, str]:
    """``:param name: text`` entries of a docstring, each with its continuation lines."""
    entries: dict[str, str] = {}
    for match in re.finditer(r":param (\w+): (.*?)(?=\n\s*:param |\n\s*\n|\Z)", doc, re.S):
        entries[match[1]] = " ".join(match[2].split())
    return entries


def test_help_does_not_show_cdks_constructor_doc() -> None:
    assert CDK_INIT_DOC not in HELP


def test_class_signature_is_the_constructors() -> None:
    signature = inspect.signature(ResilientQueue)
    assert list(signature.parameters)[:3] == ["scope", "construct_id", "fifo"]
    assert "ResilientQueue(*args" not in HELP
    assert "ResilientQueue(scope: 'Construct', construct_id: 'str', *, fifo:" in HELP


def test_constructor_lists_every_prop_with_its_default() -> None:
    doc = inspect.getdoc(ResilientQueue.__init__) or ""
    entries = param_entries(doc)
    assert list(entries) == [param.name for param in documented(prop_tables.QUEUE)]
    for param in documented(prop_tables.QUEUE):
        default = " ".join(param.default.replace("`", "``").split())
        assert f"Default: {default}." in entries[param.name], param.name
    # and pydoc shows it under __init__, in help()
    init = HELP[HELP.index(" |  __init__(") :]
    assert ":param max_receive_count: an ``int``. Default: 5. 1-1,000;" in init


@pytest.mark.parametrize("name", sorted(METHODS), ids=sorted(METHODS))
def test_every_public_call_documents_every_parameter(name: str) -> None:
    doc = inspect.getdoc(getattr(ResilientQueue, name)) or ""
    assert doc and doc != CDK_INIT_DOC
    entries = param_entries(doc)
    missing = [p.name for p in documented(METHODS[name]) if p.name not in entries]
    assert missing == []
