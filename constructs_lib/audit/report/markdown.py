"""The Markdown report (a merge request comment, a job summary): the counts, the fleet view when
the findings span stacks, with ``--metrics`` the ledger of every queue, then the findings as a
table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.report import fleet, ledger
from constructs_lib.audit.report.human import (
    FLEET_RULE_HEADER,
    FLEET_STACK_HEADER,
    accepted_text,
    deployed,
    fleet_best,
    fleet_lead,
    fleet_rule_cells,
    fleet_stack_cells,
    metrics_text,
    not_templates_text,
    resource_text,
    rule_titles,
    text_fleet_shown,
    where_text,
    with_state,
    worst_title,
)
from constructs_lib.audit.report.summary import (
    DEFAULT_GATE,
    Gate,
    listed,
    listed_fixed,
    more_findings,
    summarize,
)
from constructs_lib.audit.report.words import plural


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _resource(finding: Finding) -> str:
    """The resource, and its ARN when it is deployed."""
    return resource_text(finding, f"`{finding.physical}`" if finding.physical else "")


def _markdown_fleet(summary: Mapping[str, Any], view: fleet.Fleet, gate: Gate) -> list[str]:
    """The fleet view in Markdown: what leads the report."""
    if not text_fleet_shown(view):
        return []
    titles = rule_titles()
    lines = ["### Fleet", "", fleet_lead(summary, view), fleet_best(view, titles, gate), ""]
    lines += [
        "| " + " | ".join(FLEET_RULE_HEADER) + " |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    lines += [
        "| " + " | ".join(_md(c) for c in fleet_rule_cells(t, summary["queues"], titles)) + " |"
        for t in view.rules
    ]
    lines += [
        "",
        f"{worst_title(view)}:",
        "",
        "| " + " | ".join(FLEET_STACK_HEADER) + " |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for stack in view.worst:
        cells = fleet_stack_cells(stack)
        lines.append(
            f"| {_md(cells[0])} | `{_md(cells[1])}` | "
            + " | ".join(_md(c) for c in cells[2:])
            + " |"
        )
    return [*lines, "", "### Findings", ""]


def _markdown_ledger(result: AuditResult) -> list[str]:
    """The ledger in Markdown: every queue, the most messages lost first, then the fleet's
    total; nothing without a ledger."""
    if not result.ledgers:
        return []
    figures = len(ledger.LEDGER_HEADER) - ledger.FIGURES_FROM
    lines = [
        "### Ledger",
        "",
        ledger.lead_text(result.ledgers),
        "",
        "| " + " | ".join(ledger.LEDGER_HEADER) + " |",
        "|" + "---|" * ledger.FIGURES_FROM + "---:|" * figures,
    ]
    for row in result.ledgers:
        cells = ledger.cells(row)
        lines.append(f"| `{_md(cells[0])}` | " + " | ".join(_md(c) for c in cells[1:]) + " |")
    total = ledger.total_cells(ledger.totals(result.ledgers))
    lines.append("| " + " | ".join(f"**{_md(c)}**" if c else "" for c in total) + " |")
    return [*lines, "", ledger.notes_text(), ""]


def render_markdown(result: AuditResult, gate: Gate = DEFAULT_GATE) -> str:
    """The Markdown report; ``gate`` (``--fail-on``, ``--fail-on-changed``) is what the headline
    ranks and what the counts say the exit status follows."""
    summary = summarize(result)
    severity = summary["by_severity"]
    accepted = accepted_text(summary)
    reason = gate.reason(summary)
    files = [
        f"{summary['files_clean']:,} clean",
        f"{summary['files_with_findings']:,} with findings",
        f"{summary['files_unparseable']:,} unparseable",
    ]
    if summary.get("files_not_templates"):
        files.append(plural(summary["files_not_templates"], "not a template", "not templates"))
    lines = [
        "## Queue audit",
        "",
        f"{plural(summary['files_read'], 'file')}, {plural(summary['queues'], 'queue')}: "
        f"**{plural(severity['error'], 'error')}**, {plural(severity['warning'], 'warning')}, "
        f"{plural(severity['info'], 'info')}"
        f"{f' ({accepted})' if accepted else ''}.",
        f"{', '.join(files)}.",
        *([f"Exit {reason.removeprefix('exit ')}."] if reason else []),
        *([not_templates_text(summary) + "."] if summary.get("files_not_templates") else []),
        *([metrics_text(summary).capitalize() + "."] if summary.get("metrics") else []),
        "",
    ]
    findings, more, view = listed(result)
    fleet_lines = _markdown_fleet(summary, view, gate)
    ledger_lines = _markdown_ledger(result)
    if ledger_lines and fleet_lines:  # the ledger goes between the fleet view and the findings
        lines += [*fleet_lines[:-2], *ledger_lines, *fleet_lines[-2:]]
    elif ledger_lines:
        lines += [*ledger_lines, "### Findings", ""]
    else:
        lines += fleet_lines
    if not findings and not result.fixed:
        lines.append("No findings.")
        return "\n".join(lines) + "\n"
    if findings:
        state = with_state(findings)
        # a deployed stack's findings say account/region/stack and the resource's ARN
        where = "Where" if deployed(findings) else "Template"
        lines += [
            f"| Severity | Rule |{' State |' if state else ''} {where} | Resource | Message | Fix |",
            f"|---|---|{'---|' if state else ''}---|---|---|---|",
        ]
        for f in findings:
            shown = f"{f.state}: {f.justification}" if f.suppression else f.state
            lines.append(
                f"| {f.severity} | {f.rule_id} |{f' {_md(shown)} |' if state else ''} "
                f"`{_md(where_text(f))}` | {_md(_resource(f))} | {_md(f.message)} | {_md(f.fix)} |"
            )
    if more:
        lines += ["", more_findings(more)]
    if result.fixed:
        lines += ["", f"Fixed since the baseline ({len(result.fixed):,}):", ""]
        lines += [
            f"- {f.rule_id} `{_md(where_text(f))}` {_md(_resource(f))}: {_md(f.message)}"
            for f in listed_fixed(result)[0]
        ]
    return "\n".join(lines) + "\n"
