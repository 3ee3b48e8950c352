"""The JSON report: every finding in report order, the fixed ones with a baseline, with
``--metrics`` the ledger (each queue's, in its rank, and the fleet's totals), the summary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.report import ledger
from constructs_lib.audit.report.summary import ordered, summarize


def indented(value: Any, level: int) -> str:
    """``value`` as indented JSON, to sit ``level`` spaces deep in a document written in pieces."""
    return json.dumps(value, indent=2).replace("\n", "\n" + " " * level)


def stream_json(result: AuditResult) -> Iterator[str]:
    """The JSON report in pieces, one finding at a time (``render_json`` joins them)."""
    yield '{\n  "findings": ['
    for i, finding in enumerate(ordered(result)):
        yield ("," if i else "") + "\n    " + indented(finding.as_dict(), 4)
    yield "\n  ],"
    if result.fixed is not None:  # with a baseline: its findings no longer reported
        yield f'\n  "fixed": {indented([f.as_dict() for f in result.fixed], 2)},'
    if result.metrics is not None or result.ledgers:
        # with --metrics even when no queue had series (an empty list), so that a reader tells
        # "nothing was lost" from "not measured"; a run without it reports as it always has
        yield f'\n  "ledger": {indented(ledger.as_dicts(result.ledgers), 2)},'
        yield f'\n  "ledger_totals": {indented(ledger.totals(result.ledgers), 2)},'
    yield f'\n  "summary": {indented(summarize(result), 2)}\n}}\n'


def render_json(result: AuditResult) -> str:
    return "".join(stream_json(result))
