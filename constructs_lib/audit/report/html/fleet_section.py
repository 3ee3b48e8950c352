"""The fleet section that leads the HTML report: each rule across the fleet, then the worst
stacks, each linking to its group further down the page."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.report import fleet
from constructs_lib.audit.report.html.findings import (
    SEVERITIES,
    SEVERITY_COLOURS,
    UNREADABLE,
    badge,
)
from constructs_lib.audit.report.human import (
    FLEET_RULE_HEADER,
    FLEET_STACK_HEADER,
    cleared,
    fleet_best,
    fleet_lead,
    queues_cell,
    stack_name,
    worst_title,
)
from constructs_lib.audit.report.summary import DEFAULT_GATE, Gate


def stack_key(stack: fleet.StackTally) -> tuple[str, str]:
    """The key of ``stack``'s group on the page (``stack_groups``)."""
    if stack.rules == (rules.UNPARSEABLE_RULE,):
        return ("", UNREADABLE)
    return (stack.template, stack.stack)


def _share(part: int, whole: int, severity: str) -> str:
    """A share as a bar in the severity's colour (inline SVG) and in words."""
    width = 80
    filled = round(width * part / whole) if whole else 0
    if part and not filled:
        filled = 1
    colour = SEVERITY_COLOURS.get(severity, ("#888888", ""))[0]
    return (
        f'<svg class="bar" width="{width}" height="10" aria-hidden="true">'
        f'<rect width="{width}" height="10" fill="#e4e4e4"/>'
        f'<rect width="{filled}" height="10" fill="{colour}"/></svg> '
        f"{fleet.share(part, whole)}"
    )


def _rule_rows(view: fleet.Fleet, titles: Mapping[str, str], queues: int) -> str:
    """A row per rule: its severity, the queues and stacks it touches, what fixing it clears."""
    rows = []
    for tally in view.rules:
        title = titles.get(tally.rule_id, "")
        rows.append(
            f'<tr class="sev-{html.escape(tally.severity)}">'
            f'<td><a href="#{html.escape(tally.rule_id.lower())}">{html.escape(tally.rule_id)}</a>'
            + (f' <span class="rule-title">{html.escape(title)}</span>' if title else "")
            + f"</td><td>{badge(tally.severity)}</td>"
            f'<td class="num">{queues_cell(tally)}</td>'
            f'<td class="share">{_share(tally.queues, queues, tally.severity) if tally.queues else "-"}</td>'
            f'<td class="num">{tally.stacks:,}</td><td class="num">{tally.findings:,}</td>'
            f"<td>{html.escape(cleared(tally))}</td></tr>"
        )
    return "".join(rows)


def _stack_rows(view: fleet.Fleet, anchors: Mapping[tuple[str, str], int]) -> str:
    """A row per worst stack, its name linking to its group on the page when it has one."""
    stack_rows = []
    for stack in view.worst:
        number = anchors.get(stack_key(stack))
        name = html.escape(stack_name(stack))
        link = f'<a href="#stack-{number}">{name}</a>' if number else name
        counts = "".join(
            f'<td class="num">{stack.by_severity.get(s, 0):,}</td>' for s in SEVERITIES
        )
        stack_rows.append(
            f'<tr><td class="name">{link} <br><code>{html.escape(stack.template)}</code></td>'
            f'{counts}<td class="num">{stack.queues:,}</td>'
            f"<td>{html.escape(' '.join(stack.rules))}</td></tr>"
        )
    return "".join(stack_rows)


def fleet_section(
    summary: Mapping[str, Any],
    view: fleet.Fleet,
    titles: Mapping[str, str],
    anchors: Mapping[tuple[str, str], int],
    gate: Gate = DEFAULT_GATE,
) -> str:
    """What leads the page: each rule across the fleet (queues it touches, their share of the
    fleet's queues, its severity, what fixing it alone leaves clean), then the worst stacks."""
    if view.empty:
        return ""
    numeric = ' class="num"'
    head = "".join(
        f"<th{numeric if i in (2, 4, 5) else ''}>{html.escape(h)}</th>"
        for i, h in enumerate(FLEET_RULE_HEADER)
    )
    # the template goes under the stack's name, in the first column
    stack_head = "".join(
        f"<th{numeric if 2 <= i < 6 else ''}>{html.escape(h)}</th>"
        for i, h in enumerate(FLEET_STACK_HEADER)
        if i != 1
    )
    best = fleet_best(view, titles, gate)
    return (
        '<section id="fleet"><h2>Fleet</h2>'
        f'<p class="lead">{html.escape(fleet_lead(summary, view))}</p>'
        + (f'<p class="lead">{html.escape(best)}</p>' if best else "")
        + '<h3>Findings by rule</h3><table class="rules">'
        f"<thead><tr>{head}</tr></thead>"
        f"<tbody>{_rule_rows(view, titles, summary['queues'])}</tbody></table>"
        f"<h3>{html.escape(worst_title(view))}</h3>"
        '<table class="stacks">'
        f"<thead><tr>{stack_head}</tr></thead><tbody>{_stack_rows(view, anchors)}</tbody></table>"
        "</section>"
    )
