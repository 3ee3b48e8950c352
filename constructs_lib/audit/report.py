"""Audit results -> JSON, SARIF 2.1.0, GitLab Code Quality, Markdown, HTML (inline SVG chart) and
a terminal table."""

from __future__ import annotations

import hashlib
import heapq
import html
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from constructs_lib.audit import profiles, rules, templates
from constructs_lib.audit.engine import AuditResult
from constructs_lib.audit.model import SEVERITY_RANK, Finding

FORMATS = ("json", "sarif", "codequality", "markdown", "html", "table")
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
# GitLab Code Quality severities are info, minor, major, critical and blocker. An error is what
# fails the pipeline under the default --fail-on (messages lost or looping, a deploy that fails,
# an unencrypted or public queue, an unreadable template): worse than the code smells GitLab
# calls major, so critical. Blocker is left unused: the job's exit status already blocks.
_CODEQUALITY_SEVERITY = {"error": "critical", "warning": "minor", "info": "info"}
# The partialFingerprints key code scanning matches results by across runs. Namespaced so it
# cannot pose as a value GitHub computes itself; bump the version only if the hash changes
# (doing so reopens every existing alert once).
SARIF_FINGERPRINT_KEY = "queueAuditFinding/v1"


# The human formats (table, Markdown, HTML) list at most this many findings, then say how many
# more there are: a person reads the first screens, and a fleet's full list belongs in JSON,
# SARIF or the --output-dir datasets, which always hold every finding.
REPORT_ROWS = 10_000


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


def _ordered(result: AuditResult) -> Iterable[Finding]:
    """The findings in report order; a list is sorted here, a streamed view comes sorted."""
    return (
        sorted_findings(result.findings) if isinstance(result.findings, list) else result.findings
    )


# What a person reads first: the findings that decide, then those that changed against the
# baseline, then the known and the accepted ones.
_STATE_RANK = {"open": 0, "new": 0, "changed": 1, "unchanged": 2, "suppressed": 3}


def lead_key(finding: Finding) -> tuple[int, int, int, tuple[str, ...]]:
    """The human formats' order: state (deciding first), severity (worst first), the rule's
    impact (``profiles.IMPACT_ORDER``: lost messages first), then report order."""
    return (
        _STATE_RANK.get(finding.state, 0),
        -SEVERITY_RANK.get(finding.severity, 0),
        profiles.impact(finding.rule_id),
        finding.sort_key(),
    )


def _listed(result: AuditResult) -> tuple[list[Finding], int]:
    """(the findings a human format lists, what matters most first, and how many more there
    are). A streamed result is read once, holding at most ``REPORT_ROWS`` findings."""
    listed = heapq.nsmallest(REPORT_ROWS, _ordered(result), key=lead_key)
    return listed, len(result.findings) - len(listed)


def _more(count: int) -> str:
    return (
        f"... and {count:,} more findings: --format json or sarif, or --output-dir, list them all"
        if count
        else ""
    )


def summarize(result: AuditResult) -> dict[str, Any]:
    """Counts that reconcile: every file read is clean, has findings, or could not be parsed.
    A Spark run counts where the findings are and hands the counts over (``result.summary``)."""
    if result.summary is not None:
        return result.summary
    # a finding about another file (an expired entry of a suppressions file) is no template's
    read_ok = {f.file for f in result.files if f.status == "ok"}
    with_findings = {
        f.template for f in result.findings if f.rule_id != rules.UNPARSEABLE_RULE
    } & read_ok
    return summary_of(
        Counter(f.status for f in result.files),
        len(with_findings),
        result.queues,
        Counter((f.rule_id, f.severity, f.state) for f in result.findings),
        None if result.fixed is None else len(result.fixed),
    )


def summary_of(
    files_by_status: Mapping[str, int],
    files_with_findings: int,
    queues: int,
    findings_by_rule_severity_state: Mapping[tuple[str, str, str], int],
    fixed: int | None = None,
) -> dict[str, Any]:
    """The summary from its counts, however they were counted (in memory, or by Spark).

    ``findings``, ``by_severity`` and ``by_rule`` count the findings that decide the exit
    status: neither suppressed nor already in the baseline. ``suppressed`` counts the accepted
    ones; ``baseline`` (None without one) the new, unchanged and fixed ones. A file whose
    findings are all suppressed is not clean: it is one of ``files_with_findings``."""
    read = sum(files_by_status.values())
    unparseable = read - files_by_status.get("ok", 0)
    clean = read - files_with_findings - unparseable
    by_severity: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    by_state: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    catalog = {rule_id: sev for rule_id, sev, _title, _fix in rules.describe_rules()}
    regraded: dict[str, dict[str, Any]] = {}
    for (rule_id, severity, state), count in sorted(findings_by_rule_severity_state.items()):
        by_state[state] += count
        if state in ("open", "new"):
            by_severity[severity] += count
            by_rule[rule_id] += count
        if state == "changed":
            changed[severity] += count
        if catalog.get(rule_id, severity) != severity:
            shown = regraded.setdefault(
                rule_id, {"catalog": catalog[rule_id], "reported": severity, "findings": 0}
            )
            shown["findings"] += count
    return {
        "files_read": read,
        "files_clean": clean,
        "files_with_findings": files_with_findings,
        "files_unparseable": unparseable,
        # of which not read on purpose (not a regular file, over the size cap); each has a QR901
        "files_skipped": files_by_status.get(templates.SKIPPED, 0),
        "reconciled": read == clean + files_with_findings + unparseable and clean >= 0,
        "queues": queues,
        "findings": sum(by_rule.values()),
        "by_severity": {s: by_severity.get(s, 0) for s in ("error", "warning", "info")},
        "by_rule": dict(sorted(by_rule.items())),
        "suppressed": by_state["suppressed"],
        # findings reported at another severity than the catalog's, by the profile or the
        # suppressions file's rule levels (--profile all reports the catalog's)
        "regraded": regraded,
        "baseline": None
        if fixed is None
        else {
            "new": by_state["new"],
            "unchanged": by_state["unchanged"],
            "changed": by_state["changed"],
            "fixed": fixed,
        },
        # known findings whose values changed, by severity (what --fail-on-changed judges)
        "changed_by_severity": None
        if fixed is None
        else {s: changed.get(s, 0) for s in ("error", "warning", "info")},
    }


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when any finding that decides (not suppressed, not in the baseline) is at least as
    severe as ``fail_on``; ``never`` always gives 0."""
    counts = Counter(f.severity for f in findings if f.decides)
    return exit_status({"by_severity": counts}, fail_on)


def exit_status(summary: dict[str, Any], fail_on: str, fail_on_changed: bool = False) -> int:
    """1 when the summary counts a finding at least as severe as ``fail_on`` (with
    ``fail_on_changed``, a known finding whose values changed counts too): the exit status of a
    run whose findings are not all in memory."""
    if fail_on == "never":
        return 0
    threshold = SEVERITY_RANK[fail_on]
    counts: dict[str, int] = dict(summary["by_severity"])
    if fail_on_changed:
        for severity, n in (summary.get("changed_by_severity") or {}).items():
            counts[severity] = counts.get(severity, 0) + n
    return int(any(n and SEVERITY_RANK[s] >= threshold for s, n in counts.items()))


def _indented(value: Any, level: int) -> str:
    return json.dumps(value, indent=2).replace("\n", "\n" + " " * level)


def stream_json(result: AuditResult) -> Iterator[str]:
    """The JSON report in pieces, one finding at a time (``render_json`` joins them)."""
    yield '{\n  "findings": ['
    for i, finding in enumerate(_ordered(result)):
        yield ("," if i else "") + "\n    " + _indented(finding.as_dict(), 4)
    yield "\n  ],"
    if result.fixed is not None:  # with a baseline: its findings no longer reported
        yield f'\n  "fixed": {_indented([f.as_dict() for f in result.fixed], 2)},'
    yield f'\n  "summary": {_indented(summarize(result), 2)}\n}}\n'


def render_json(result: AuditResult) -> str:
    return "".join(stream_json(result))


def stream_sarif(result: AuditResult) -> Iterator[str]:
    catalog = rules.describe_rules()
    index = {rule_id: i for i, (rule_id, *_rest) in enumerate(catalog)}
    driver_rules = [
        {
            "id": rule_id,
            "name": title.title().replace(" ", "").replace("-", ""),
            "shortDescription": {"text": title},
            "help": {"text": fix},
            "defaultConfiguration": {"level": _SARIF_LEVEL[severity]},
        }
        for rule_id, severity, title, fix in catalog
    ]
    document: dict[str, Any] = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "queue-audit",
                        "informationUri": "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html",
                        "rules": driver_rules,
                    }
                },
                "results": [],
            }
        ],
    }
    summary = summarize(result)
    if summary["baseline"] is not None:
        # the fixed findings are counted, not listed: a result would open an alert for each
        document["runs"][0]["properties"] = {"baseline": summary["baseline"]}
    # Everything but the results, then the results one at a time, then what closes them.
    head, tail = json.dumps(document, indent=2).split('"results": []')
    yield head + '"results": ['
    for i, (finding, fingerprint) in enumerate(_fingerprinted(result)):
        location: dict[str, Any] = {
            "physicalLocation": {"artifactLocation": {"uri": _uri(finding.template)}}
        }
        if finding.resource:
            location["logicalLocations"] = [
                {
                    "name": finding.resource,
                    "fullyQualifiedName": f"{finding.stack}/{finding.resource}",
                    "kind": "resource",
                }
            ]
        entry = {
            "ruleId": finding.rule_id,
            "ruleIndex": index[finding.rule_id],
            "level": _SARIF_LEVEL[finding.severity],
            "message": {"text": f"{finding.message}. Fix: {finding.fix}"},
            "locations": [location],
            "partialFingerprints": {SARIF_FINGERPRINT_KEY: fingerprint},
        }
        if finding.suppression:
            entry["suppressions"] = [
                {
                    "kind": finding.suppression,
                    "status": "accepted",
                    "justification": finding.justification,
                }
            ]
        if finding.baseline:
            entry["baselineState"] = finding.baseline
        yield ("," if i else "") + "\n        " + _indented(entry, 8)
    yield "\n      ]" + tail + "\n"


def render_sarif(result: AuditResult) -> str:
    return "".join(stream_sarif(result))


def _fingerprinted(result: AuditResult) -> Iterator[tuple[Finding, str]]:
    """Each finding in report order with a fingerprint that survives runs and rewording.

    Findings that share rule, template, stack, resource and queue differ only by message and
    come next to each other in report order: they are numbered (``:1``, ``:2``...), so that code
    scanning and GitLab, which keep one issue per fingerprint, keep each of them."""
    previous, occurrence = "", 0
    for finding in _ordered(result):
        fingerprint = _identity(finding)
        occurrence = occurrence + 1 if fingerprint == previous else 1
        previous = fingerprint
        yield finding, f"{fingerprint}:{occurrence}"


def _identity(finding: Finding) -> str:
    """What identifies a finding from one run to the next: not the message or the fix, whose
    wording (and the values they quote) may change while the problem stays the same."""
    digest = hashlib.sha256()
    for part in (
        finding.rule_id,
        _uri(finding.template),
        finding.stack,
        finding.resource,
        finding.queue,
    ):
        # a file name that is not UTF-8 holds lone surrogates: hash them rather than fail
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()


def stream_codequality(result: AuditResult) -> Iterator[str]:
    """GitLab's Code Quality report (a JSON array of issues), one finding at a time.

    The fingerprint is SARIF's (``_fingerprinted``), so GitLab matches a finding across
    pipelines while its wording changes. Templates carry no line numbers through the audit, so
    every issue points at line 1 of its file.
    """
    yield "["
    i = -1
    for i, (finding, fingerprint) in enumerate(_fingerprinted(result)):
        # Code Quality has no notion of a suppression: an accepted finding is listed as info,
        # its description starting with why, so that a merge request does not flag it.
        accepted = f"suppressed ({finding.justification}): " if finding.suppression else ""
        issue = {
            "type": "issue",
            "check_name": finding.rule_id,
            "description": f"{accepted}{finding.rule_id} {finding.message}. Fix: {finding.fix}",
            "severity": _CODEQUALITY_SEVERITY["info" if accepted else finding.severity],
            "fingerprint": fingerprint,
            "location": {"path": _uri(finding.template), "lines": {"begin": 1}},
        }
        yield ("," if i else "") + "\n  " + _indented(issue, 2)
    yield "\n]\n" if i >= 0 else "]\n"


def render_codequality(result: AuditResult) -> str:
    return "".join(stream_codequality(result))


def _uri(path: str) -> str:
    """A relative URI (what code-scanning UIs resolve against the repository root)."""
    return path.replace("\\", "/").removeprefix("./")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _accepted_text(summary: dict[str, Any]) -> str:
    """What the run accepted, as a sentence ("" when nothing was)."""
    parts = []
    if summary["suppressed"]:
        parts.append(f"{summary['suppressed']:,} suppressed")
    known = summary["baseline"]
    if known is not None:
        parts.append(
            f"against the baseline: {known['new']:,} new, {known['changed']:,} changed, "
            f"{known['unchanged']:,} unchanged, {known['fixed']:,} fixed"
        )
    regraded = sum(r["findings"] for r in summary.get("regraded", {}).values())
    if regraded:
        parts.append(
            f"{regraded:,} reported below or above their rule's catalog severity by the profile "
            "(--profile all reports the catalog's)"
        )
    return "; ".join(parts)


def _with_state(findings: list[Finding]) -> bool:
    """Whether a listing needs a state column: something was suppressed or compared."""
    return any(f.state != "open" for f in findings)


def render_markdown(result: AuditResult) -> str:
    summary = summarize(result)
    severity = summary["by_severity"]
    accepted = _accepted_text(summary)
    lines = [
        "## Queue audit",
        "",
        f"{summary['files_read']} templates, {summary['queues']} queues: "
        f"**{severity['error']} errors**, {severity['warning']} warnings, {severity['info']} info"
        f"{f' ({accepted})' if accepted else ''}.",
        f"{summary['files_clean']} clean, {summary['files_with_findings']} with findings, "
        f"{summary['files_unparseable']} unparseable.",
        "",
    ]
    findings, more = _listed(result)
    if not findings and not result.fixed:
        lines.append("No findings.")
        return "\n".join(lines) + "\n"
    if findings:
        state = _with_state(findings)
        lines += [
            f"| Severity | Rule |{' State |' if state else ''} Template | Resource | Message | Fix |",
            f"|---|---|{'---|' if state else ''}---|---|---|---|",
        ]
        for f in findings:
            shown = f"{f.state}: {f.justification}" if f.suppression else f.state
            lines.append(
                f"| {f.severity} | {f.rule_id} |{f' {_md(shown)} |' if state else ''} "
                f"`{_md(f.template)}` | {_md(f.resource)} | {_md(f.message)} | {_md(f.fix)} |"
            )
    if more:
        lines += ["", _more(more)]
    if result.fixed:
        lines += ["", f"Fixed since the baseline ({len(result.fixed):,}):", ""]
        lines += [
            f"- {f.rule_id} `{_md(f.template)}` {_md(f.resource)}: {_md(f.message)}"
            for f in result.fixed[:REPORT_ROWS]
        ]
    return "\n".join(lines) + "\n"


def render_table(result: AuditResult) -> str:
    findings, more = _listed(result)
    state = _with_state(findings)
    header = ("SEVERITY", "RULE", *(("STATE",) if state else ()), "TEMPLATE", "RESOURCE", "MESSAGE")
    rows = [
        (f.severity, f.rule_id, *((f.state,) if state else ()), f.template, f.resource, f.message)
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
    out = [line(header)] + [line(r) for r in rows]
    if more:
        out.append(_more(more))
    out.append("")
    accepted = _accepted_text(summary)
    out.append(
        f"{summary['findings']} findings ({summary['by_severity']['error']} errors, "
        f"{summary['by_severity']['warning']} warnings, {summary['by_severity']['info']} info) in "
        f"{summary['files_read']} files: {summary['files_clean']} clean, "
        f"{summary['files_with_findings']} with findings, {summary['files_unparseable']} unparseable"
        + (f"; {accepted}" if accepted else "")
    )
    return "\n".join(out) + "\n"


# The HTML report's severity colours: a badge's background and the text on it. Each pair has a
# contrast ratio above 4.5:1 (WCAG AA), and every badge carries the word as well, so colour is
# never the only signal. Amber takes dark text: white on amber is unreadable.
_HTML_SEVERITY_COLOURS: dict[str, tuple[str, str]] = {
    "error": ("#b3261e", "#ffffff"),
    "warning": ("#f2b600", "#1f1f1f"),
    "info": ("#1d5fa8", "#ffffff"),
}
_HTML_SEVERITIES = ("error", "warning", "info")
_HTML_UNREADABLE = "Files that could not be read"
_HTML_NO_STACK = "(no stack name)"
_HTML_NO_QUEUE = "Not about one queue"
_HTML_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f1f1f;
background:#fff;line-height:1.45}
main{max-width:72rem;margin:0 auto;padding:1.2rem 2rem 4rem}
h1{font-size:1.6rem;margin:0 0 .4rem}
h2{font-size:1.3rem;margin:2rem 0 .6rem;border-bottom:2px solid #d0d0d0;padding-bottom:.2rem}
h3{font-size:1.1rem;margin:1.4rem 0 .3rem}
h4{font-size:1rem;margin:.8rem 0 .2rem;color:#333}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em;overflow-wrap:anywhere}
a{color:#0b4f9c}
.verdict{font-size:1.15rem;font-weight:600;padding:.6rem 1rem;border-radius:6px;margin:.4rem 0 .8rem;
border-left:8px solid #2e7d32;background:#eef6ee}
.verdict.sev-error{border-left-color:#b3261e;background:#fbeceb}
.verdict.sev-warning{border-left-color:#f2b600;background:#fdf6e0}
.verdict.sev-info{border-left-color:#1d5fa8;background:#eaf1fa}
.counts{display:flex;flex-wrap:wrap;gap:.5rem;list-style:none;padding:0;margin:.3rem 0 .6rem}
.counts li{border:1px solid #c8c8c8;border-radius:6px;padding:.2rem .7rem;background:#fafafa}
.counts strong{font-size:1.25rem;margin-right:.15rem}
.counts .sev-error{border-left:6px solid #b3261e}
.counts .sev-warning{border-left:6px solid #f2b600}
.counts .sev-info{border-left:6px solid #1d5fa8}
.label{font-size:.8rem;color:#555;margin:.6rem 0 0;text-transform:uppercase;letter-spacing:.05em}
.badge{display:inline-block;font-size:.75rem;font-weight:700;letter-spacing:.04em;
padding:.05rem .45rem;border-radius:4px;text-transform:uppercase;vertical-align:.1em}
.badge.sev-error{background:#b3261e;color:#fff}
.badge.sev-warning{background:#f2b600;color:#1f1f1f}
.badge.sev-info{background:#1d5fa8;color:#fff}
.badge.state{background:#e4e4e4;color:#1f1f1f;font-weight:600}
nav ul{display:grid;grid-template-columns:repeat(auto-fill,minmax(22rem,1fr));gap:.2rem 2rem;
padding-left:1.2rem;margin:.3rem 0}
.tally{color:#444;font-size:.9rem;font-weight:400}
ol.findings{list-style:none;padding:0;margin:0}
.finding{border:1px solid #d6d6d6;border-left:6px solid #888;border-radius:4px;
padding:.4rem .8rem;margin:.3rem 0}
.finding.sev-error{border-left-color:#b3261e}
.finding.sev-warning{border-left-color:#f2b600}
.finding.sev-info{border-left-color:#1d5fa8}
.finding p{margin:.15rem 0}
.finding .rule-title{color:#444;font-weight:400}
.finding .where,.finding .why{color:#444;font-size:.9rem}
.fix-label{font-weight:700}
details{border:1px solid #c8c8c8;border-radius:6px;padding:.3rem .8rem;margin:.6rem 0;
background:#fafafa}
summary{cursor:pointer;font-weight:600;padding:.2rem 0}
.more{font-weight:600;padding:.5rem .8rem;background:#fdf6e0;border-radius:6px}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}
figure{margin:0}
svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#1f1f1f}
.rule{border-top:1px solid #e0e0e0;padding:.3rem 0}
.rule h3{margin:.3rem 0}
.rule p{margin:.2rem 0}
"""


def _html_plural(count: int, word: str) -> str:
    """``1 error``, ``2 errors``; "info" has no plural."""
    return f"{count:,} {word}" if count == 1 or word == "info" else f"{count:,} {word}s"


def _html_badge(severity: str) -> str:
    word = html.escape(severity)
    return f'<span class="badge sev-{word}">{word}</span>'


def _html_tally(findings: Iterable[Finding]) -> str:
    """``2 errors, 1 warning``: the findings of each severity, worst first."""
    return _html_severities(Counter(f.severity for f in findings))


def _html_severities(by_severity: Mapping[str, int]) -> str:
    """``4 errors, 2 warnings``: the summary's counts, worst first, the zeros left out."""
    return ", ".join(
        _html_plural(by_severity[s], s) for s in _HTML_SEVERITIES if by_severity.get(s)
    )


def _html_rank(findings: list[Finding]) -> tuple[int, ...]:
    """Sorts first the group with the most errors, then the most warnings, then the most info."""
    counts: Counter[str] = Counter(f.severity for f in findings)
    return tuple(-counts[s] for s in _HTML_SEVERITIES)


def _html_groups(findings: Iterable[Finding]) -> list[tuple[str, list[tuple[str, list[Finding]]]]]:
    """[(stack, [(queue, findings)])], the worst and busiest first so that the top of the page
    is where to act; within a queue, the most severe first, then in report order. Unreadable
    files (QR901) come first, as one group: a file the audit could not read hides its queues."""
    stacks: dict[str, dict[str, list[Finding]]] = {}
    for f in findings:
        if f.rule_id == rules.UNPARSEABLE_RULE:
            stack, queue = _HTML_UNREADABLE, ""
        else:
            stack, queue = f.stack or _HTML_NO_STACK, f.queue or _HTML_NO_QUEUE
        stacks.setdefault(stack, {}).setdefault(queue, []).append(f)
    groups: list[tuple[str, list[tuple[str, list[Finding]]]]] = []
    for stack, queues in stacks.items():
        for found in queues.values():
            found.sort(key=lambda f: -SEVERITY_RANK.get(f.severity, -1))
        groups.append(
            (
                stack,
                sorted(
                    queues.items(),
                    key=lambda q: (q[0] == _HTML_NO_QUEUE, *_html_rank(q[1]), q[0]),
                ),
            )
        )
    return sorted(
        groups,
        key=lambda g: (
            g[0] != _HTML_UNREADABLE,
            *_html_rank([f for _, found in g[1] for f in found]),
            g[0],
        ),
    )


def _html_finding(f: Finding, titles: Mapping[str, str]) -> str:
    title = titles.get(f.rule_id, "")
    state = f.state
    head = (
        f"{_html_badge(f.severity)} "
        f'<a href="#{html.escape(f.rule_id.lower())}">{html.escape(f.rule_id)}</a>'
        + (f' <span class="rule-title">{html.escape(title)}</span>' if title else "")
        + (f' <span class="badge state">{html.escape(state)}</span>' if not f.decides else "")
    )
    why = ""
    if state == "suppressed":
        where = "in the template" if f.suppression == "inSource" else "by the suppressions file"
        reason = html.escape(f.justification or "no reason given")
        why = f'<p class="why">Suppressed {where}: {reason}</p>'
    resource = f"Resource <code>{html.escape(f.resource)}</code> in " if f.resource else "In "
    return (
        f'<li class="finding sev-{html.escape(f.severity)}" data-state="{html.escape(state)}">'
        f"<p>{head}</p>"
        f"<p>{html.escape(f.message)}</p>"
        f'<p><span class="fix-label">Fix:</span> {html.escape(f.fix)}</p>{why}'
        f'<p class="where">{resource}<code>{html.escape(f.template)}</code></p></li>'
    )


def _html_grouped(
    groups: list[tuple[str, list[tuple[str, list[Finding]]]]],
    titles: Mapping[str, str],
    anchored: bool,
) -> str:
    """Stacks (h3) holding queues (h4) holding findings; ``anchored`` gives each stack the id
    the page's table of contents links to."""
    parts = []
    for number, (stack, queues) in enumerate(groups, 1):
        everything = [f for _, found in queues for f in found]
        heading = (
            html.escape(stack)
            if stack in (_HTML_UNREADABLE, _HTML_NO_STACK)
            else f"Stack <code>{html.escape(stack)}</code>"
        )
        anchor = f' id="stack-{number}"' if anchored else ""
        parts.append(
            f'<section class="stack"{anchor}><h3>{heading} '
            f'<span class="tally">{_html_tally(everything)}</span></h3>'
        )
        for queue, found in queues:
            if queue:
                label = (
                    html.escape(queue)
                    if queue == _HTML_NO_QUEUE
                    else f"Queue <code>{html.escape(queue)}</code>"
                )
                parts.append(f'<h4>{label} <span class="tally">{_html_tally(found)}</span></h4>')
            parts.append('<ol class="findings">')
            parts += [_html_finding(f, titles) for f in found]
            parts.append("</ol>")
        parts.append("</section>")
    return "\n".join(parts)


def _html_folded(title: str, findings: list[Finding], titles: Mapping[str, str]) -> str:
    """A closed <details>: what a person may look at, not what they must act on."""
    if not findings:
        return ""
    return (
        f"<details><summary>{html.escape(title)} ({len(findings):,})</summary>\n"
        f"{_html_grouped(_html_groups(findings), titles, anchored=False)}\n</details>"
    )


def _bar_chart(title: str, rows: list[tuple[str, Mapping[str, int]]]) -> str:
    """A horizontal bar chart as inline SVG (no script, no external resource): one bar per
    label, in one segment per severity, coloured as the severity's badge; each segment's
    title and the label say the severity in words."""
    bar_height, gap, label_width, chart_width = 18, 6, 200, 270
    height = 30 + len(rows) * (bar_height + gap)
    top = max((sum(counts.values()) for _, counts in rows), default=1) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{label_width + chart_width + 50}" '
        f'height="{height}" aria-label="{html.escape(title)}">',
        f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, counts) in enumerate(rows):
        y = 26 + i * (bar_height + gap)
        short = label if len(label) <= 30 else "..." + label[-27:]
        parts.append(f'<text x="0" y="{y + 13}">{html.escape(short)}</text>')
        x = label_width
        for severity in _HTML_SEVERITIES:
            count = counts.get(severity, 0)
            if not count:
                continue
            width = max(2, round(chart_width * count / top))
            parts.append(
                f'<rect x="{x}" y="{y}" width="{width}" height="{bar_height}" '
                f'fill="{_HTML_SEVERITY_COLOURS[severity][0]}">'
                f"<title>{html.escape(label)}: {_html_plural(count, severity)}</title></rect>"
            )
            x += width
        total = sum(counts.values())
        parts.append(f'<text x="{x + 4}" y="{y + 13}">{total:,}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_counts(summary: Mapping[str, Any]) -> str:
    """The counts a person reads first, each tagged with ``data-count`` for machines."""

    def item(key: str, count: int, words: str, css: str = "") -> str:
        style = f' class="{css}"' if css else ""
        return f'<li{style} data-count="{key}"><strong>{count:,}</strong> {words}</li>'

    severity = summary["by_severity"]
    deciding = [
        item(s, severity.get(s, 0), s if s == "info" else f"{s}s", f"sev-{s}")
        for s in _HTML_SEVERITIES
    ]
    deciding.append(item("suppressed", summary.get("suppressed", 0), "suppressed"))
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
        item("files_read", summary["files_read"], "templates read"),
        item("files_clean", summary["files_clean"], "clean"),
        item("files_with_findings", summary["files_with_findings"], "with findings"),
        item("files_unparseable", summary["files_unparseable"], "could not be read"),
        item("queues", summary["queues"], "queues"),
    ]
    return (
        '<p class="label">Findings that decide the exit status</p><ul class="counts">'
        + "".join(deciding)
        + f'</ul>{known}<p class="label">Templates</p><ul class="counts">{"".join(files)}</ul>'
    )


def _html_verdict(summary: Mapping[str, Any], listed: int) -> str:
    """One sentence: what to do, or that there is nothing to do."""
    severity = summary["by_severity"]
    deciding = summary["findings"]
    if deciding:
        worst = next(s for s in _HTML_SEVERITIES if severity.get(s))
        return (
            f'<p class="verdict sev-{worst}">Act on {_html_plural(deciding, "finding")}'
            f": {_html_severities(severity)}.</p>"
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
        f"{_html_plural(summary['files_read'], 'template')} read, every queue passes every rule.</p>"
    )


def render_html(result: AuditResult, docs_url: str | None = None) -> str:
    """A page a person acts on: counts, then the deciding findings grouped by stack and by
    queue (worst first), then what does not decide folded away (suppressed, known from the
    baseline, fixed since), charts, and the rules the page names. Self-contained: inline style,
    no script, nothing fetched; ``docs_url`` (the documentation's base URL) adds a link from
    each rule to its section there."""
    summary = summarize(result)
    listed, more = _listed(result)
    fixed = result.fixed or []
    fixed_more = max(0, len(fixed) - REPORT_ROWS)
    fixed = fixed[:REPORT_ROWS]
    catalog: dict[str, tuple[str, str, str]] = {
        rule_id: (sev, title, fix) for rule_id, sev, title, fix in rules.describe_rules()
    }
    titles = {rule_id: title for rule_id, (_, title, _) in catalog.items()}
    deciding = [f for f in listed if f.decides]
    groups = _html_groups(deciding)

    toc = ""
    if groups:
        toc = (
            "<nav><h2>Where to act</h2><ul>"
            + "".join(
                f'<li><a href="#stack-{n}">{html.escape(stack)}</a> '
                f'<span class="tally">{_html_tally(f for _, fs in queues for f in fs)}</span></li>'
                for n, (stack, queues) in enumerate(groups, 1)
            )
            + "</ul></nav>"
        )
    body = [
        "<h1>Queue audit</h1>",
        _html_verdict(summary, len(listed)),
        _html_counts(summary),
        toc,
    ]
    if deciding:
        body += [
            '<section id="findings"><h2>Findings to act on</h2>',
            _html_grouped(groups, titles, anchored=True),
            "</section>",
        ]
    if more:
        body.append(f'<p class="more">{html.escape(_more(more))}</p>')
    folded = [
        _html_folded(
            "Suppressed: accepted with a reason",
            [f for f in listed if f.state == "suppressed"],
            titles,
        ),
        _html_folded(
            "Changed: in the baseline, with other values",
            [f for f in listed if f.state == "changed"],
            titles,
        ),
        _html_folded(
            "Unchanged: already in the baseline",
            [f for f in listed if f.state == "unchanged"],
            titles,
        ),
        _html_folded("Fixed since the baseline", fixed, titles),
    ]
    if fixed_more:
        folded.append(f'<p class="more">... and {fixed_more:,} more fixed findings</p>')
    if any(folded):
        body += [
            '<section id="not-deciding"><h2>Not deciding</h2>',
            *[part for part in folded if part],
            "</section>",
        ]
    # the by-rule chart counts every deciding finding; the rule's catalog severity colours it
    by_rule: list[tuple[str, Mapping[str, int]]] = []
    for rule_id, count in sorted(summary["by_rule"].items(), key=lambda r: (-r[1], r[0])):
        rule_severity = catalog.get(rule_id, ("info", "", ""))[0]
        by_rule.append((f"{rule_id} ({rule_severity})", {rule_severity: count}))
    by_template: dict[str, Counter[str]] = {}
    for f in deciding:
        by_template.setdefault(f.template, Counter())[f.severity] += 1
    busiest: list[tuple[str, Mapping[str, int]]] = [
        (template, counts)
        for template, counts in sorted(by_template.items(), key=lambda t: (-t[1].total(), t[0]))[
            :25
        ]
    ]
    if by_rule:
        of_listed = f" of the first {len(listed):,} findings" if more else ""
        body += [
            '<section id="charts"><h2>Charts</h2><div class="charts">',
            f"<figure>{_bar_chart('Findings by rule', by_rule)}</figure>",
            f"<figure>{_bar_chart(f'Findings by template (top 25{of_listed})', busiest)}</figure>",
            "</div></section>",
        ]
    named = sorted({f.rule_id for f in listed} | {f.rule_id for f in fixed})
    if named:
        base = docs_url.rstrip("/") if docs_url else ""
        body.append('<section id="rules"><h2>Rules</h2>')
        for rule_id in named:
            rule_severity, rule_title, fix = catalog.get(rule_id, ("", rule_id, ""))
            anchor = html.escape(rule_id.lower())
            docs = (
                f'<p><a href="{html.escape(f"{base}/audit/#{rule_id.lower()}")}">'
                f"{html.escape(rule_id)} in the documentation</a></p>"
                if base
                else ""
            )
            body.append(
                f'<div class="rule" id="{anchor}"><h3>{html.escape(rule_id)} '
                f"{_html_badge(rule_severity) if rule_severity else ''} {html.escape(rule_title)}</h3>"
                f'<p><span class="fix-label">Fix:</span> {html.escape(fix)}</p>{docs}</div>'
            )
        body.append("</section>")
    title = f"Queue audit: {_html_severities(summary['by_severity']) or 'nothing to act on'}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_HTML_STYLE}</style></head>\n"
        "<body><main>\n" + "\n".join(part for part in body if part) + "\n</main></body></html>\n"
    )


def stream(fmt: str, result: AuditResult, docs_url: str | None = None) -> Iterable[str]:
    """The report in ``fmt``, piece by piece; ``docs_url`` is where the HTML report links its
    rules to."""
    if fmt == "html":
        return [render_html(result, docs_url=docs_url)]
    return STREAMS[fmt](result)


RENDERERS: dict[str, Callable[[AuditResult], str]] = {
    "json": render_json,
    "sarif": render_sarif,
    "codequality": render_codequality,
    "markdown": render_markdown,
    "html": render_html,
    "table": render_table,
}
# Each format as pieces to write one after another: JSON, SARIF and Code Quality never hold the
# whole report.
STREAMS: dict[str, Callable[[AuditResult], Iterable[str]]] = {
    "json": stream_json,
    "sarif": stream_sarif,
    "codequality": stream_codequality,
    "markdown": lambda result: [render_markdown(result)],
    "html": lambda result: [render_html(result)],
    "table": lambda result: [render_table(result)],
}
