"""The HTML report's findings: grouped by account when stacks are deployed, then by stack and
queue (the worst first), each on a line or two, and the small pieces (badges, tallies) the rest
of the page uses too."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping

from constructs_lib.audit import rules
from constructs_lib.audit.model import SEVERITY_RANK, Finding
from constructs_lib.audit.report import summary
from constructs_lib.audit.report.words import plural

# The HTML report's severity colours: a badge's background and the text on it. Each pair has a
# contrast ratio above 4.5:1 (WCAG AA), and every badge carries the word as well, so colour is
# never the only signal. Amber takes dark text: white on amber is unreadable.
SEVERITY_COLOURS: dict[str, tuple[str, str]] = {
    "error": ("#b3261e", "#ffffff"),
    "warning": ("#f2b600", "#1f1f1f"),
    "info": ("#1d5fa8", "#ffffff"),
}
SEVERITIES = ("error", "warning", "info")
UNREADABLE = "Files that could not be read"
NO_STACK = "(no stack name)"
NO_QUEUE = "Not about one queue"


def badge(severity: str) -> str:
    word = html.escape(severity)
    return f'<span class="badge sev-{word}">{word}</span>'


def tally_text(findings: Iterable[Finding]) -> str:
    """``2 errors, 1 warning``: the findings of each severity, worst first."""
    return severities_text(Counter(f.severity for f in findings))


def severities_text(by_severity: Mapping[str, int]) -> str:
    """``4 errors, 2 warnings``: the summary's counts, worst first, the zeros left out."""
    return ", ".join(plural(by_severity[s], s) for s in SEVERITIES if by_severity.get(s))


def _rank(findings: list[Finding]) -> tuple[int, ...]:
    """Sorts first the group with the most errors, then the most warnings, then the most info."""
    counts: Counter[str] = Counter(f.severity for f in findings)
    return tuple(-counts[s] for s in SEVERITIES)


# (template, stack name, [(queue, its findings)]); the unreadable files are one group whose
# template is "" and stack UNREADABLE
Group = tuple[str, str, list[tuple[str, list[Finding]]]]


def _worst(findings: list[Finding]) -> int:
    return max(SEVERITY_RANK.get(f.severity, -1) for f in findings)


def stack_groups(
    findings: Iterable[Finding], ranks: Mapping[str, int] | None = None
) -> list[Group]:
    """[(template, stack, [(queue, findings)])], the worst and busiest first so that the top of
    the page is where to act; within a queue, the most severe first, then in report order.
    Unreadable files (QR901) come first, as one group: a file the audit could not read hides
    its queues. A stack is a template and its stack name, as in the fleet view.

    Within a stack, among the queues whose worst finding is as severe, those whose loss is
    known come first, by ``ranks`` (``ledger.loss_ranks``): inside a severity, as the listing
    of the other human formats (``summary.lead_key`` says why)."""
    rank = summary.loss_rank(ranks or {})
    stacks: dict[tuple[str, str], dict[str, list[Finding]]] = {}
    for f in findings:
        if f.rule_id == rules.UNPARSEABLE_RULE:
            where, queue = ("", UNREADABLE), ""
        else:
            where, queue = (f.template, f.stack), f.queue or NO_QUEUE
        stacks.setdefault(where, {}).setdefault(queue, []).append(f)
    groups: list[Group] = []
    for (template, stack), queues in stacks.items():
        for found in queues.values():
            found.sort(key=lambda f: -SEVERITY_RANK.get(f.severity, -1))
        ordered = sorted(
            queues.items(),
            key=lambda q: (
                q[0] == NO_QUEUE,
                -_worst(q[1]),
                min(map(rank, q[1])),
                *_rank(q[1]),
                q[0],
            ),
        )
        groups.append((template, stack, ordered))
    return sorted(
        groups,
        key=lambda g: (
            g[0] != "",
            *_rank([f for _, found in g[2] for f in found]),
            g[1],
            g[0],
        ),
    )


def _finding_item(f: Finding, fixes: Mapping[str, str], queue: str, in_file: bool) -> str:
    """One finding, on a line or two: its severity, its rule (linking to the rule's title and
    fix at the end of the page), its message, and its resource unless it is the ``queue`` the
    finding is listed under. Every finding's fix is its rule's, shown once there; one worded
    otherwise (a fixed finding from an older baseline) is shown here. ``in_file`` names the
    template too (the group of unreadable files spans many). Kept short: a fleet's page lists
    thousands."""
    state = f.state
    rule = html.escape(f.rule_id)
    parts = [
        f'<li class="finding sev-{html.escape(f.severity)}" data-state="{html.escape(state)}">'
        f'<b>{html.escape(f.severity)}</b> <a href="#{rule.lower()}">{rule}</a>'
    ]
    if not f.decides:
        parts.append(f' <span class="badge state">{html.escape(state)}</span>')
    parts.append(f" {html.escape(f.message)}")
    if f.fix != fixes.get(f.rule_id):
        parts.append(f'<p><span class="fix-label">Fix:</span> {html.escape(f.fix)}</p>')
    if state == "suppressed":
        where = "in the template" if f.suppression == "inSource" else "by the suppressions file"
        reason = html.escape(f.justification or "no reason given")
        parts.append(f'<p class="why">Suppressed {where}: {reason}</p>')
    place = []
    if f.resource and f.resource != queue:
        place.append(f"Resource <code>{html.escape(f.resource)}</code>")
    if f.physical:  # a deployed resource: its ARN, whatever the finding is listed under
        place.append(f'<code class="physical">{html.escape(f.physical)}</code>')
    elif f.construct_path:  # what a CDK user finds the resource by
        place.append(f'<code class="path">{html.escape(f.construct_path)}</code>')
    if in_file:
        place.append(f"in <code>{html.escape(f.template)}</code>")
    if f.line:
        place.append(f"line {f.line}")
    if place:
        parts.append(f'<p class="where">{" ".join(place)}</p>')
    parts.append("</li>")
    return "".join(parts)


def stacks_html(
    groups: list[Group],
    fixes: Mapping[str, str],
    anchors: Mapping[tuple[str, str], int] | None = None,
) -> str:
    """One closed <details> per stack, holding its queues (h4) holding findings: the summary
    line says the stack, its template and its tally, the findings wait until opened. ``anchors``
    gives a stack the id the fleet view links to."""
    parts = []
    for template, stack, queues in groups:
        everything = [f for _, found in queues for f in found]
        unreadable = not template
        if unreadable:
            heading = html.escape(stack)
        else:
            name = html.escape(stack) if stack else html.escape(NO_STACK)
            heading = f"Stack <code>{name}</code>"
        file = f' <br><code class="file">{html.escape(template)}</code>' if template else ""
        number = (anchors or {}).get((template, stack))
        anchor = f' id="stack-{number}"' if number else ""
        parts.append(
            f"<details{anchor}><summary>{heading} "
            f"<small>{tally_text(everything)}</small>{file}</summary>"
        )
        for queue, found in queues:
            if queue:
                label = (
                    html.escape(queue)
                    if queue == NO_QUEUE
                    else f"Queue <code>{html.escape(queue)}</code>"
                )
                parts.append(f"<h4>{label} <small>{tally_text(found)}</small></h4>")
            parts.append("<ol>")
            parts += [_finding_item(f, fixes, queue, unreadable) for f in found]
            parts.append("</ol>")
        parts.append("</details>")
    return "\n".join(parts)


def _account(group: Group) -> str:
    """The account a group's stack is deployed in ("" for template files and unreadable ones)."""
    template, _stack, queues = group
    return queues[0][1][0].account if template else ""


def accounts_html(
    groups: list[Group],
    fixes: Mapping[str, str],
    anchors: Mapping[tuple[str, str], int] | None = None,
) -> str:
    """``stacks_html`` under a heading per account when some stack is deployed (an account's
    stacks in the order given, the account of the worst stack first); as ``stacks_html`` when
    none is, so that a run over template files reads as it always has."""
    by_account: dict[str, list[Group]] = {}
    for group in groups:
        by_account.setdefault(_account(group), []).append(group)
    if not any(by_account):
        return stacks_html(groups, fixes, anchors)
    parts = []
    for account, stacks in by_account.items():
        files = [g for g in stacks if g[0]]
        everything = [f for _, _, queues in stacks for _, found in queues for f in found]
        tally = f"<small>{plural(len(files), 'stack')}: {tally_text(everything)}</small>"
        if account:
            parts.append(
                f'<h3 class="account">Account <code>{html.escape(account)}</code> {tally}</h3>'
            )
        elif files:  # template files beside deployed stacks
            parts.append(f'<h3 class="account">Template files {tally}</h3>')
        parts.append(stacks_html(stacks, fixes, anchors))
    return "\n".join(parts)


def folded_html(title: str, findings: list[Finding], fixes: Mapping[str, str]) -> str:
    """A closed <details>: what a person may look at, not what they must act on."""
    if not findings:
        return ""
    return (
        f'<details class="fold"><summary>{html.escape(title)} ({len(findings):,})</summary>\n'
        f"{accounts_html(stack_groups(findings), fixes)}\n</details>"
    )
