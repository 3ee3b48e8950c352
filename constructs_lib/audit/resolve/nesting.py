"""Nested stacks whose parent passes plain values: the children are parsed again with them.

References a parent passes (a DLQ's ARN) need no second parse: they travel as exports (see
``model.NESTED_PARAMETER``). Plain values (a timeout, a flag a condition reads) change what the
child's rows are, so each engine parses those children once more, with the parent's values as
overrides of the child's stack, beneath any override given for that stack by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from constructs_lib.audit.model import NestedRow
from constructs_lib.audit.parse.parameters import Overrides


def children(
    rows: Iterable[NestedRow], files: Iterable[tuple[str, str]], overrides: Overrides | None
) -> tuple[list[tuple[str, str]], dict[str, dict[str, str]]]:
    """(the audited child files to parse again, the overrides to parse them with)."""
    stack_of = {os.path.normpath(file): (file, stack) for file, stack in files}
    result: dict[str, dict[str, str]] = {}
    again: dict[str, tuple[str, str]] = {}
    for row in sorted(rows):  # a child nested by two parents takes the first parent's values
        found = stack_of.get(os.path.normpath(row.child_file))
        if found is None or found[0] in again:
            continue
        again[found[0]] = found
        result[found[1]] = json.loads(row.values)
    merged: dict[str, dict[str, str]] = {k: dict(v) for k, v in (overrides or {}).items()}
    for stack, values in result.items():
        merged[stack] = {**values, **merged.get(stack, {})}
    return sorted(again.values()), merged
