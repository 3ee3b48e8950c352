"""Checking the arguments of a public call, in one name the constructs import.

The work is done in three modules, one concern each: ``constructs_lib.param_table`` (what a
parameter table is, how it checks kinds and reads values in AWS's units),
``constructs_lib.prop_tables`` (every public parameter, declared once: the table of each call)
and ``constructs_lib.call_checks`` (the rules of one call beyond its table: between parameters,
and misuse of the API). The kinds of value a parameter accepts are in ``constructs_lib.kinds``.
"""

from __future__ import annotations

# The constructs (queue.py) use these as ``props.<name>``: the tables of their calls, the checks
# beyond them, and the types those take and give. They stay importable from here so the
# constructs need not know which of the modules above holds each.
from constructs_lib.call_checks import (
    QueueGiven,
    check_new_construct,
    check_queue,
    consumer_misuse_problems,
    dashboard_problems,
    unresolved_warning,
)
from constructs_lib.param_table import Param, Table
from constructs_lib.prop_tables import (
    CHECKS,
    CONSUMER,
    DASHBOARD,
    DEAD_LETTER_CONSUMER,
    PRODUCER,
    QUEUE,
    REDRIVE,
    TABLES,
)

__all__ = [
    "CHECKS",
    "CONSUMER",
    "DASHBOARD",
    "DEAD_LETTER_CONSUMER",
    "PRODUCER",
    "QUEUE",
    "REDRIVE",
    "TABLES",
    "Param",
    "QueueGiven",
    "Table",
    "check_new_construct",
    "check_queue",
    "consumer_misuse_problems",
    "dashboard_problems",
    "unresolved_warning",
]
