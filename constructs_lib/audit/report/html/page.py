"""The HTML report's page: the verdict and the counts, the fleet view, the findings to act on,
what does not decide folded away, and the rules the page names. The page's frame and styles are
package data (``page.html``, ``report.css``); every value put into them is HTML-escaped."""

from __future__ import annotations

import functools
import html
import string
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.report import fleet
from constructs_lib.audit.report.html.findings import (
    SEVERITIES,
    Group,
    accounts_html,
    badge,
    folded_html,
    severities_text,
    stack_groups,
)
from constructs_lib.audit.report.html.fleet_section import fleet_section, stack_key
from constructs_lib.audit.report.html.ledger_section import ledger_section
from constructs_lib.audit.report.human import metrics_text, not_templates_text
from constructs_lib.audit.report.ledger import loss_ranks
from constructs_lib.audit.report.summary import (
    DEFAULT_GATE,
    Gate,
    listed,
    listed_fixed,
    more_findings,
    summarize,
)
from constructs_lib.audit.report.words import noun_for, plural

# Where the rules page (docs/audit/rules.md) sits under the published docs' root: mkdocs builds
# it at this directory URL, each rule anchored by its lower-case id (tests/test_docs_site.py).
RULES_PAGE = "audit/rules/"


@functools.cache
def _package_text(name: str) -> str:
    """A file shipped next to this module (the page's frame, its styles)."""
    return (
        resources.files("constructs_lib.audit.report.html")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )


def _counts(summary: Mapping[str, Any], gate: Gate) -> str:
    """The counts a person reads first, each tagged with ``data-count`` for machines. Under
    "Findings that decide the exit status" only the severities at or above ``--fail-on``
    (``gate``); the others, and the suppressed ones, are counted apart."""

    def item(key: str, count: int, words: str, css: str = "") -> str:
        style = f' class="{css}"' if css else ""
        return f'<li{style} data-count="{key}"><strong>{count:,}</strong> {words}</li>'

    severity = summary["by_severity"]
    counted = [
        (s, item(s, severity.get(s, 0), noun_for(severity.get(s, 0), s), f"sev-{s}"))
        for s in SEVERITIES
    ]
    deciding = [shown for s, shown in counted if s in gate.deciding()]
    others = [shown for s, shown in counted if s not in gate.deciding()]
    others.append(item("suppressed", summary.get("suppressed", 0), "suppressed"))
    reason = gate.reason(dict(summary))
    decides = (
        '<p class="label">Findings that decide the exit status '
        f"(--fail-on {html.escape(gate.fail_on)})</p>"
        + (f'<ul class="counts">{"".join(deciding)}</ul>' if deciding else "")
        + (f'<p class="exit">{html.escape(reason.capitalize())}.</p>' if reason else "")
    )
    below = f'<p class="label">Reported, not deciding</p><ul class="counts">{"".join(others)}</ul>'
    baseline = summary.get("baseline")
    known = ""
    if baseline is not None:
        known = (
            '<p class="label">Against the baseline</p><ul class="counts">'
            + item("new", baseline["new"], "new")
            + item("changed", baseline["changed"], "changed")
            + item("unchanged", baseline["unchanged"], "unchanged")
            + item("fixed", baseline["fixed"], "fixed")
            + "</ul>"
        )
    files = [
        item(
            "files_read", summary["files_read"], noun_for(summary["files_read"], "file") + " read"
        ),
        item("files_clean", summary["files_clean"], "clean"),
        item("files_with_findings", summary["files_with_findings"], "with findings"),
        item("files_unparseable", summary["files_unparseable"], "could not be read"),
        item(
            "files_not_templates",
            summary.get("files_not_templates", 0),
            "not templates (skipped)",
        ),
        item("queues", summary["queues"], noun_for(summary["queues"], "queue")),
    ]
    observed = metrics_text(summary)
    skipped = not_templates_text(summary)
    return (
        decides
        + below
        + f'{known}<p class="label">Files</p><ul class="counts">{"".join(files)}</ul>'
        + (f'<p class="skipped">{html.escape(skipped)}.</p>' if skipped else "")
        + (f'<p class="metrics">{html.escape(observed.capitalize())}.</p>' if observed else "")
    )


def _verdict(summary: Mapping[str, Any], listed: int) -> str:
    """One sentence: what to do, or that there is nothing to do."""
    severity = summary["by_severity"]
    deciding = summary["findings"]
    if deciding:
        worst = next(s for s in SEVERITIES if severity.get(s))
        return (
            f'<p class="verdict sev-{worst}">Act on {plural(deciding, "finding")}'
            f": {severities_text(severity)}.</p>"
        )
    if listed:
        return (
            '<p class="verdict">Nothing to act on: no finding decides the exit status. '
            "The suppressed and already known ones are folded below.</p>"
        )
    if not summary["files_read"]:
        return '<p class="verdict sev-warning">No findings: no template was read.</p>'
    return (
        '<p class="verdict">No findings: '
        f"{plural(summary['files_read'], 'template')} read, every queue passes every rule.</p>"
    )


def _stack_anchors(groups: Sequence[Group], view: fleet.Fleet) -> dict[tuple[str, str], int]:
    """Ids for the stacks the fleet view links to: a fleet's thousand others need none."""
    linked = {stack_key(stack) for stack in view.worst}
    return {
        (template, stack): n
        for n, (template, stack, _) in enumerate(groups, 1)
        if (template, stack) in linked
    }


def _not_deciding(
    listed_findings: Sequence[Finding],
    fixed: list[Finding],
    fixed_more: int,
    fixes: Mapping[str, str],
) -> list[str]:
    """What does not decide the exit status, each kind folded away: suppressed, known from the
    baseline (changed or not), fixed since."""
    folded = [
        folded_html(
            "Suppressed: accepted with a reason",
            [f for f in listed_findings if f.state == "suppressed"],
            fixes,
        ),
        folded_html(
            "Changed: in the baseline, with other values",
            [f for f in listed_findings if f.state == "changed"],
            fixes,
        ),
        folded_html(
            "Unchanged: already in the baseline",
            [f for f in listed_findings if f.state == "unchanged"],
            fixes,
        ),
        folded_html("Fixed since the baseline", fixed, fixes),
    ]
    if fixed_more:
        folded.append(f'<p class="more">... and {fixed_more:,} more fixed findings</p>')
    if not any(folded):
        return []
    return [
        '<section id="not-deciding"><h2>Not deciding</h2>',
        *[part for part in folded if part],
        "</section>",
    ]


def _rules_section(
    named: Sequence[str], catalog: Mapping[str, tuple[str, str, str]], docs_url: str | None
) -> list[str]:
    """The rules the page names, each with its severity, title and fix, and with ``docs_url``
    a link to its section of the documentation."""
    if not named:
        return []
    base = docs_url.rstrip("/") if docs_url else ""
    section = ['<section id="rules"><h2>Rules</h2>']
    for rule_id in named:
        rule_severity, rule_title, fix = catalog.get(rule_id, ("", rule_id, ""))
        anchor = html.escape(rule_id.lower())
        docs = (
            f'<p><a href="{html.escape(f"{base}/{RULES_PAGE}#{rule_id.lower()}")}">'
            f"{html.escape(rule_id)} in the documentation</a></p>"
            if base
            else ""
        )
        section.append(
            f'<div class="rule" id="{anchor}"><h3>{html.escape(rule_id)} '
            f"{badge(rule_severity) if rule_severity else ''} {html.escape(rule_title)}</h3>"
            f'<p><span class="fix-label">Fix:</span> {html.escape(fix)}</p>{docs}</div>'
        )
    section.append("</section>")
    return section


def _page(title: str, body: Sequence[str]) -> str:
    """The page's frame around ``body`` (HTML already), its title escaped."""
    frame = string.Template(_package_text("page.html"))
    return frame.substitute(
        title=html.escape(title),
        style=_package_text("report.css"),
        body="\n".join(part for part in body if part),
    )


def render_html(result: AuditResult, docs_url: str | None = None, gate: Gate = DEFAULT_GATE) -> str:
    """A page a person acts on: what to do and the counts, then the fleet view (each rule across
    the fleet, the worst stacks), with ``--metrics`` the ledger, then the deciding findings, one closed section per stack
    (worst first; under their account when deployed) grouped by queue, then what does not
    decide folded away (suppressed, known from the baseline, fixed since), and the rules the
    page names with their fixes.
    Self-contained: inline style, no script, nothing fetched; ``docs_url`` (the documentation's
    base URL) adds a link from each rule to its section there; ``gate`` (``--fail-on``,
    ``--fail-on-changed``) is what the counts and the fleet view's headline follow."""
    summary = summarize(result)
    shown, more, view = listed(result)
    fixed, fixed_more = listed_fixed(result)
    catalog: dict[str, tuple[str, str, str]] = {
        rule_id: (sev, title, fix) for rule_id, sev, title, fix in rules.describe_rules()
    }
    titles = {rule_id: title for rule_id, (_, title, _) in catalog.items()}
    fixes = {rule_id: fix for rule_id, (_, _, fix) in catalog.items()}
    deciding = [f for f in shown if f.decides]
    groups = stack_groups(deciding, loss_ranks(result.ledgers))
    anchors = _stack_anchors(groups, view)

    body = [
        "<h1>Queue audit</h1>",
        _verdict(summary, len(shown)),
        _counts(summary, gate),
        fleet_section(summary, view, titles, anchors, gate),
        ledger_section(result.ledgers),
    ]
    if deciding:
        by = "by account and stack" if any(f.account for f in deciding) else "by stack"
        body += [
            f'<section id="findings"><h2>Findings to act on, {by}</h2>',
            '<p class="hint">The worst stacks first; open one to see its queues and findings.</p>',
            accounts_html(groups, fixes, anchors),
            "</section>",
        ]
    if more:
        body.append(f'<p class="more">{html.escape(more_findings(more))}</p>')
    body += _not_deciding(shown, fixed, fixed_more, fixes)
    named = sorted(
        {f.rule_id for f in shown} | {f.rule_id for f in fixed} | {t.rule_id for t in view.rules}
    )
    body += _rules_section(named, catalog, docs_url)
    title = f"Queue audit: {severities_text(summary['by_severity']) or 'nothing to act on'}"
    return _page(title, body)
