"""The terminal table: the fleet view when the findings span stacks, with ``--metrics`` the
ledger's first ``LEDGER_ROWS`` queues, a row per finding, then the counts in a sentence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.report import fleet, ledger
from constructs_lib.audit.report.human import (
    accepted_text,
    counts_text,
    deployed,
    fleet_best,
    fleet_lead,
    fleet_rule_cells,
    fleet_stack_cells,
    metrics_text,
    not_templates_text,
    physical_name,
    resource_text,
    rule_titles,
    text_fleet_shown,
    where_text,
    with_state,
    worst_title,
)
from constructs_lib.audit.report.summary import DEFAULT_GATE, Gate, listed, more_findings, summarize
from constructs_lib.audit.report.words import plural


def _text_columns(header: tuple[str, ...], rows: list[tuple[str, ...]], right: int) -> list[str]:
    """A terminal table: columns padded to their widest cell (at most 60 characters, a longer
    one cut with ``~``), the columns from ``right`` on aligned right, except the last."""
    widths = [
        min(max([len(header[i])] + [len(r[i]) for r in rows]), 60) for i in range(len(header) - 1)
    ]

    def line(cells: tuple[str, ...]) -> str:
        out = []
        for i, (cell, width) in enumerate(zip(cells[:-1], widths, strict=True)):
            if len(cell) > width:
                cell = cell[: width - 1] + "~"
            out.append(cell.rjust(width) if i >= right else cell.ljust(width))
        return "  ".join([*out, cells[-1]]).rstrip()

    return [line(header)] + [line(r) for r in rows]


def _text_fleet(summary: Mapping[str, Any], view: fleet.Fleet, gate: Gate) -> list[str]:
    """The fleet view for a terminal: what leads the table format."""
    if not text_fleet_shown(view):
        return []
    titles = rule_titles()
    rule_rows = []
    for tally in view.rules:
        cells = fleet_rule_cells(tally, summary["queues"], titles)
        # the rule's title last, where a long one can run on
        rule_rows.append((tally.rule_id, *cells[1:], titles.get(tally.rule_id, "")))
    rule_header = (
        "RULE",
        "SEVERITY",
        "QUEUES",
        "SHARE",
        "STACKS",
        "FINDINGS",
        "ALONE CLEARS",
        "TITLE",
    )
    stack_rows = [fleet_stack_cells(stack) for stack in view.worst]
    stack_header = ("STACK", "TEMPLATE", "ERRORS", "WARNINGS", "INFO", "QUEUES", "RULES")
    return [
        f"FLEET: {fleet_lead(summary, view)}",
        fleet_best(view, titles, gate),
        "",
        *_text_columns(rule_header, rule_rows, right=2),
        "",
        f"{worst_title(view).upper()}:",
        *_text_columns(stack_header, stack_rows, right=2),
        "",
    ]


def _text_ledger(result: AuditResult) -> list[str]:
    """The ledger for a terminal: its first ``ledger.LEDGER_ROWS`` queues, the most messages
    lost first, the fleet's total, how many queues are left out; nothing without a ledger."""
    if not result.ledgers:
        return []
    shown = result.ledgers[: ledger.LEDGER_ROWS]
    rows = [ledger.cells(row) for row in shown]
    rows.append(ledger.total_cells(ledger.totals(result.ledgers)))
    header = tuple(h.upper() for h in ledger.LEDGER_HEADER)
    left = len(result.ledgers) - len(shown)
    return [
        f"LEDGER: {ledger.lead_text(result.ledgers)}",
        *_text_columns(header, rows, right=ledger.FIGURES_FROM),
        *(
            [f"... and {plural(left, 'more queue')}: --format json, markdown or html list them all"]
            if left
            else []
        ),
        ledger.notes_text(),
        "",
    ]


def render_table(result: AuditResult, gate: Gate = DEFAULT_GATE) -> str:
    """The table; ``gate`` (``--fail-on``, ``--fail-on-changed``) is what the headline ranks
    and what the last line says the exit status follows."""
    findings, more, view = listed(result)
    state = with_state(findings)
    # a deployed stack's findings say account/region/stack and the resource's physical name
    where = "WHERE" if deployed(findings) else "TEMPLATE"
    header = ("SEVERITY", "RULE", *(("STATE",) if state else ()), where, "RESOURCE", "MESSAGE")
    rows = [
        (
            f.severity,
            f.rule_id,
            *((f.state,) if state else ()),
            where_text(f),
            resource_text(f, physical_name(f.physical)),
            f.message,
        )
        for f in findings
    ]
    widths = [
        min(max([len(header[i])] + [len(r[i]) for r in rows]), 60) for i in range(len(header) - 1)
    ]

    def line(cells: tuple[str, ...]) -> str:
        fixed = [
            c.ljust(w)[: max(w, 1)] if len(c) <= w else c[: w - 1] + "~"
            for c, w in zip(cells[:-1], widths, strict=True)
        ]
        return "  ".join([*fixed, cells[-1]]).rstrip()

    summary = summarize(result)
    out = [*_text_fleet(summary, view, gate), *_text_ledger(result), line(header)]
    out += [line(r) for r in rows]
    if more:
        out.append(more_findings(more))
    out.append("")
    accepted = accepted_text(summary)
    reason = gate.reason(summary)
    out.append(
        counts_text(summary)
        + (f"; {accepted}" if accepted else "")
        + (f"; {reason}" if reason else "")
    )
    if skipped := not_templates_text(summary):
        out.append(skipped)
    if observed := metrics_text(summary):
        out.append(observed)
    return "\n".join(out) + "\n"
