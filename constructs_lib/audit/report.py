"""Audit results -> JSON, SARIF 2.1.0, GitLab Code Quality, Markdown, HTML and a terminal table.

The human formats (table, Markdown, HTML) lead with the fleet view (``fleet.py``), counted in the
same pass over the findings that picks the ones they list."""

from __future__ import annotations

import hashlib
import heapq
import html
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from constructs_lib.audit import fleet, profiles, rules, templates
from constructs_lib.audit.model import SEVERITY_RANK, AuditResult, Finding

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


def _listed(result: AuditResult) -> tuple[list[Finding], int, fleet.Fleet]:
    """(the findings a human format lists, what matters most first; how many more there are;
    the fleet view), from one pass over the findings: a streamed run's are not read twice, and
    at most ``REPORT_ROWS`` findings are held."""
    survey = fleet.Survey()
    total = 0

    def surveyed() -> Iterator[Finding]:
        nonlocal total
        for finding in _ordered(result):
            survey.add(finding)
            total += 1
            yield finding

    listed = heapq.nsmallest(REPORT_ROWS, surveyed(), key=lead_key)
    return listed, total - len(listed), survey.result()


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


def _rule_titles() -> dict[str, str]:
    return {rule_id: title for rule_id, _, title, _ in rules.describe_rules()}


def _fleet_lead(summary: Mapping[str, Any], view: fleet.Fleet) -> str:
    """One sentence: how much of the fleet has something to act on."""
    return (
        f"{view.queues:,} of {summary['queues']:,} queues "
        f"({fleet.share(view.queues, summary['queues'])}) in {view.stacks:,} "
        f"{'stack' if view.stacks == 1 else 'stacks'} have findings to act on."
    )


def _fleet_best(view: fleet.Fleet, titles: Mapping[str, str]) -> str:
    """One sentence: the rule whose fix clears the most findings, and what it leaves clean."""
    best = view.best
    if best is None:
        return ""
    title = titles.get(best.rule_id, "")
    named = f"{best.rule_id} ({title})" if title else best.rule_id
    clean = _cleared(best)
    return (
        f"One fix clears the most: {named}, {best.findings:,} of the {view.findings:,} "
        f"findings ({fleet.share(best.findings, view.findings)}) in {best.stacks:,} "
        f"{'stack' if best.stacks == 1 else 'stacks'}"
        + (f"; it alone leaves {clean} with nothing to act on." if clean != "-" else ".")
    )


def _cleared(tally: fleet.RuleTally) -> str:
    """``3 queues, 2 stacks``: what fixing the rule alone leaves clean; ``-`` for nothing."""
    parts = []
    if tally.queues_cleared:
        parts.append(
            f"{tally.queues_cleared:,} {'queue' if tally.queues_cleared == 1 else 'queues'}"
        )
    if tally.stacks_cleared:
        parts.append(
            f"{tally.stacks_cleared:,} {'stack' if tally.stacks_cleared == 1 else 'stacks'}"
        )
    return ", ".join(parts) or "-"


def _queues_cell(tally: fleet.RuleTally) -> str:
    return f"{tally.queues:,}" if tally.queues else "-"


_FLEET_RULE_HEADER = (
    "Rule",
    "Severity",
    "Queues affected",
    "Share of queues",
    "Stacks",
    "Findings",
    "Fixing it alone leaves clean",
)
_FLEET_STACK_HEADER = ("Stack", "Template", "Errors", "Warnings", "Info", "Queues", "Rules")


def _fleet_rule_cells(
    tally: fleet.RuleTally, queues: int, titles: Mapping[str, str]
) -> tuple[str, ...]:
    title = titles.get(tally.rule_id, "")
    return (
        f"{tally.rule_id} {title}" if title else tally.rule_id,
        tally.severity,
        _queues_cell(tally),
        fleet.share(tally.queues, queues) if tally.queues else "-",
        f"{tally.stacks:,}",
        f"{tally.findings:,}",
        _cleared(tally),
    )


def _stack_name(stack: fleet.StackTally) -> str:
    if stack.rules == (rules.UNPARSEABLE_RULE,):
        return "(could not be read)"
    return stack.stack or "(no stack name)"


def _fleet_stack_cells(stack: fleet.StackTally) -> tuple[str, ...]:
    return (
        _stack_name(stack),
        stack.template,
        f"{stack.by_severity.get('error', 0):,}",
        f"{stack.by_severity.get('warning', 0):,}",
        f"{stack.by_severity.get('info', 0):,}",
        f"{stack.queues:,}",
        " ".join(stack.rules),
    )


def _worst_title(view: fleet.Fleet) -> str:
    shown = len(view.worst)
    return (
        f"Worst stacks ({shown:,} of {view.stacks:,})"
        if view.stacks > shown
        else f"Worst stacks ({shown:,})"
    )


def _text_fleet_shown(view: fleet.Fleet) -> bool:
    """Whether the table and Markdown lead with the fleet view: when the findings to act on
    span more than one stack. For one stack (a pre-commit hook's few files, one app's pull
    request) the list that follows says it all."""
    return view.stacks > 1


def _markdown_fleet(summary: Mapping[str, Any], view: fleet.Fleet) -> list[str]:
    """The fleet view in Markdown: what leads the report."""
    if not _text_fleet_shown(view):
        return []
    titles = _rule_titles()
    lines = ["### Fleet", "", _fleet_lead(summary, view), _fleet_best(view, titles), ""]
    lines += [
        "| " + " | ".join(_FLEET_RULE_HEADER) + " |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    lines += [
        "| " + " | ".join(_md(c) for c in _fleet_rule_cells(t, summary["queues"], titles)) + " |"
        for t in view.rules
    ]
    lines += [
        "",
        f"{_worst_title(view)}:",
        "",
        "| " + " | ".join(_FLEET_STACK_HEADER) + " |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for stack in view.worst:
        cells = _fleet_stack_cells(stack)
        lines.append(
            f"| {_md(cells[0])} | `{_md(cells[1])}` | "
            + " | ".join(_md(c) for c in cells[2:])
            + " |"
        )
    return [*lines, "", "### Findings", ""]


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


def _text_fleet(summary: Mapping[str, Any], view: fleet.Fleet) -> list[str]:
    """The fleet view for a terminal: what leads the table format."""
    if not _text_fleet_shown(view):
        return []
    titles = _rule_titles()
    rule_rows = []
    for tally in view.rules:
        cells = _fleet_rule_cells(tally, summary["queues"], titles)
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
    stack_rows = [_fleet_stack_cells(stack) for stack in view.worst]
    stack_header = ("STACK", "TEMPLATE", "ERRORS", "WARNINGS", "INFO", "QUEUES", "RULES")
    return [
        f"FLEET: {_fleet_lead(summary, view)}",
        _fleet_best(view, titles),
        "",
        *_text_columns(rule_header, rule_rows, right=2),
        "",
        f"{_worst_title(view).upper()}:",
        *_text_columns(stack_header, stack_rows, right=2),
        "",
    ]


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
    findings, more, view = _listed(result)
    lines += _markdown_fleet(summary, view)
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
    findings, more, view = _listed(result)
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
    out = [*_text_fleet(summary, view), line(header)] + [line(r) for r in rows]
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
h4{font-size:1rem;margin:.8rem 0 .2rem;color:#333;overflow-wrap:anywhere}
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
table{border-collapse:collapse;width:100%;margin:.3rem 0 1rem}
th,td{text-align:left;vertical-align:top;padding:.25rem .5rem;border-bottom:1px solid #e0e0e0;
overflow-wrap:anywhere}
th{font-size:.85rem;color:#333;border-bottom:2px solid #c8c8c8}
.num{text-align:right;white-space:nowrap}
table.rules tbody tr{border-left:6px solid #888}
table.rules tr.sev-error{border-left-color:#b3261e}
table.rules tr.sev-warning{border-left-color:#f2b600}
table.rules tr.sev-info{border-left-color:#1d5fa8}
table.rules .rule-title{color:#444}
svg.bar{vertical-align:-.05em}
.lead{margin:.3rem 0;overflow-wrap:anywhere}
.hint{color:#444;margin:.2rem 0 .5rem}
#findings>details,.fold>details{background:#fff;padding:.2rem .8rem;margin:.35rem 0;
content-visibility:auto;contain-intrinsic-size:auto 3rem}
summary .file{color:#444;font-weight:400;font-size:.85rem}
.badge{white-space:nowrap;overflow-wrap:normal}
td.share{white-space:nowrap}
.tally{color:#444;font-size:.9rem;font-weight:400}
details ol{list-style:none;padding:0;margin:0}
details small{color:#444;font-size:.9rem;font-weight:400}
.finding>b{display:inline-block;font-size:.75rem;font-weight:700;letter-spacing:.04em;
padding:.05rem .45rem;border-radius:4px;text-transform:uppercase;vertical-align:.1em;
white-space:nowrap}
.finding.sev-error>b{background:#b3261e;color:#fff}
.finding.sev-warning>b{background:#f2b600;color:#1f1f1f}
.finding.sev-info>b{background:#1d5fa8;color:#fff}
.finding{overflow-wrap:anywhere;border:1px solid #d6d6d6;border-left:6px solid #888;border-radius:4px;
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
summary{cursor:pointer;font-weight:600;padding:.2rem 0;overflow-wrap:anywhere}
.more{font-weight:600;padding:.5rem .8rem;background:#fdf6e0;border-radius:6px}
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


# (template, stack name, [(queue, its findings)]); the unreadable files are one group whose
# template is "" and stack _HTML_UNREADABLE
_HtmlGroup = tuple[str, str, list[tuple[str, list[Finding]]]]


def _html_groups(findings: Iterable[Finding]) -> list[_HtmlGroup]:
    """[(template, stack, [(queue, findings)])], the worst and busiest first so that the top of
    the page is where to act; within a queue, the most severe first, then in report order.
    Unreadable files (QR901) come first, as one group: a file the audit could not read hides
    its queues. A stack is a template and its stack name, as in the fleet view."""
    stacks: dict[tuple[str, str], dict[str, list[Finding]]] = {}
    for f in findings:
        if f.rule_id == rules.UNPARSEABLE_RULE:
            where, queue = ("", _HTML_UNREADABLE), ""
        else:
            where, queue = (f.template, f.stack), f.queue or _HTML_NO_QUEUE
        stacks.setdefault(where, {}).setdefault(queue, []).append(f)
    groups: list[_HtmlGroup] = []
    for (template, stack), queues in stacks.items():
        for found in queues.values():
            found.sort(key=lambda f: -SEVERITY_RANK.get(f.severity, -1))
        ordered = sorted(
            queues.items(), key=lambda q: (q[0] == _HTML_NO_QUEUE, *_html_rank(q[1]), q[0])
        )
        groups.append((template, stack, ordered))
    return sorted(
        groups,
        key=lambda g: (
            g[0] != "",
            *_html_rank([f for _, found in g[2] for f in found]),
            g[1],
            g[0],
        ),
    )


def _html_finding(f: Finding, fixes: Mapping[str, str], queue: str, in_file: bool) -> str:
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
    if in_file:
        place.append(f"in <code>{html.escape(f.template)}</code>")
    if place:
        parts.append(f'<p class="where">{" ".join(place)}</p>')
    parts.append("</li>")
    return "".join(parts)


def _html_grouped(
    groups: list[_HtmlGroup],
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
            name = html.escape(stack) if stack else html.escape(_HTML_NO_STACK)
            heading = f"Stack <code>{name}</code>"
        file = f' <br><code class="file">{html.escape(template)}</code>' if template else ""
        number = (anchors or {}).get((template, stack))
        anchor = f' id="stack-{number}"' if number else ""
        parts.append(
            f"<details{anchor}><summary>{heading} "
            f"<small>{_html_tally(everything)}</small>{file}</summary>"
        )
        for queue, found in queues:
            if queue:
                label = (
                    html.escape(queue)
                    if queue == _HTML_NO_QUEUE
                    else f"Queue <code>{html.escape(queue)}</code>"
                )
                parts.append(f"<h4>{label} <small>{_html_tally(found)}</small></h4>")
            parts.append("<ol>")
            parts += [_html_finding(f, fixes, queue, unreadable) for f in found]
            parts.append("</ol>")
        parts.append("</details>")
    return "\n".join(parts)


def _html_folded(title: str, findings: list[Finding], fixes: Mapping[str, str]) -> str:
    """A closed <details>: what a person may look at, not what they must act on."""
    if not findings:
        return ""
    return (
        f'<details class="fold"><summary>{html.escape(title)} ({len(findings):,})</summary>\n'
        f"{_html_grouped(_html_groups(findings), fixes)}\n</details>"
    )


def _html_key(stack: fleet.StackTally) -> tuple[str, str]:
    """The key of ``stack``'s group on the page (``_html_groups``)."""
    if stack.rules == (rules.UNPARSEABLE_RULE,):
        return ("", _HTML_UNREADABLE)
    return (stack.template, stack.stack)


def _html_share(part: int, whole: int, severity: str) -> str:
    """A share as a bar in the severity's colour (inline SVG) and in words."""
    width = 80
    filled = round(width * part / whole) if whole else 0
    if part and not filled:
        filled = 1
    colour = _HTML_SEVERITY_COLOURS.get(severity, ("#888888", ""))[0]
    return (
        f'<svg class="bar" width="{width}" height="10" aria-hidden="true">'
        f'<rect width="{width}" height="10" fill="#e4e4e4"/>'
        f'<rect width="{filled}" height="10" fill="{colour}"/></svg> '
        f"{fleet.share(part, whole)}"
    )


def _html_fleet(
    summary: Mapping[str, Any],
    view: fleet.Fleet,
    titles: Mapping[str, str],
    anchors: Mapping[tuple[str, str], int],
) -> str:
    """What leads the page: each rule across the fleet (queues it touches, their share of the
    fleet's queues, its severity, what fixing it alone leaves clean), then the worst stacks."""
    if view.empty:
        return ""
    queues = summary["queues"]
    numeric = ' class="num"'
    head = "".join(
        f"<th{numeric if i in (2, 4, 5) else ''}>{html.escape(h)}</th>"
        for i, h in enumerate(_FLEET_RULE_HEADER)
    )
    rows = []
    for tally in view.rules:
        title = titles.get(tally.rule_id, "")
        rows.append(
            f'<tr class="sev-{html.escape(tally.severity)}">'
            f'<td><a href="#{html.escape(tally.rule_id.lower())}">{html.escape(tally.rule_id)}</a>'
            + (f' <span class="rule-title">{html.escape(title)}</span>' if title else "")
            + f"</td><td>{_html_badge(tally.severity)}</td>"
            f'<td class="num">{_queues_cell(tally)}</td>'
            f'<td class="share">{_html_share(tally.queues, queues, tally.severity) if tally.queues else "-"}</td>'
            f'<td class="num">{tally.stacks:,}</td><td class="num">{tally.findings:,}</td>'
            f"<td>{html.escape(_cleared(tally))}</td></tr>"
        )
    # the template goes under the stack's name, in the first column
    stack_head = "".join(
        f"<th{numeric if 2 <= i < 6 else ''}>{html.escape(h)}</th>"
        for i, h in enumerate(_FLEET_STACK_HEADER)
        if i != 1
    )
    stack_rows = []
    for stack in view.worst:
        number = anchors.get(_html_key(stack))
        name = html.escape(_stack_name(stack))
        link = f'<a href="#stack-{number}">{name}</a>' if number else name
        counts = "".join(
            f'<td class="num">{stack.by_severity.get(s, 0):,}</td>' for s in _HTML_SEVERITIES
        )
        stack_rows.append(
            f'<tr><td class="name">{link} <br><code>{html.escape(stack.template)}</code></td>'
            f'{counts}<td class="num">{stack.queues:,}</td>'
            f"<td>{html.escape(' '.join(stack.rules))}</td></tr>"
        )
    best = _fleet_best(view, titles)
    return (
        '<section id="fleet"><h2>Fleet</h2>'
        f'<p class="lead">{html.escape(_fleet_lead(summary, view))}</p>'
        + (f'<p class="lead">{html.escape(best)}</p>' if best else "")
        + '<h3>Findings by rule</h3><table class="rules">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<h3>{html.escape(_worst_title(view))}</h3>"
        '<table class="stacks">'
        f"<thead><tr>{stack_head}</tr></thead><tbody>{''.join(stack_rows)}</tbody></table>"
        "</section>"
    )


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
    """A page a person acts on: what to do and the counts, then the fleet view (each rule across
    the fleet, the worst stacks), then the deciding findings, one closed section per stack
    (worst first) grouped by queue, then what does not decide folded away (suppressed, known
    from the baseline, fixed since), and the rules the page names with their fixes.
    Self-contained: inline style, no script, nothing fetched; ``docs_url`` (the documentation's
    base URL) adds a link from each rule to its section there."""
    summary = summarize(result)
    listed, more, view = _listed(result)
    fixed = result.fixed or []
    fixed_more = max(0, len(fixed) - REPORT_ROWS)
    fixed = fixed[:REPORT_ROWS]
    catalog: dict[str, tuple[str, str, str]] = {
        rule_id: (sev, title, fix) for rule_id, sev, title, fix in rules.describe_rules()
    }
    titles = {rule_id: title for rule_id, (_, title, _) in catalog.items()}
    fixes = {rule_id: fix for rule_id, (_, _, fix) in catalog.items()}
    deciding = [f for f in listed if f.decides]
    groups = _html_groups(deciding)
    # ids for the stacks the fleet view links to: a fleet's thousand others need none
    linked = {_html_key(stack) for stack in view.worst}
    anchors = {
        (template, stack): n
        for n, (template, stack, _) in enumerate(groups, 1)
        if (template, stack) in linked
    }

    body = [
        "<h1>Queue audit</h1>",
        _html_verdict(summary, len(listed)),
        _html_counts(summary),
        _html_fleet(summary, view, titles, anchors),
    ]
    if deciding:
        body += [
            '<section id="findings"><h2>Findings to act on, by stack</h2>',
            '<p class="hint">The worst stacks first; open one to see its queues and findings.</p>',
            _html_grouped(groups, fixes, anchors),
            "</section>",
        ]
    if more:
        body.append(f'<p class="more">{html.escape(_more(more))}</p>')
    folded = [
        _html_folded(
            "Suppressed: accepted with a reason",
            [f for f in listed if f.state == "suppressed"],
            fixes,
        ),
        _html_folded(
            "Changed: in the baseline, with other values",
            [f for f in listed if f.state == "changed"],
            fixes,
        ),
        _html_folded(
            "Unchanged: already in the baseline",
            [f for f in listed if f.state == "unchanged"],
            fixes,
        ),
        _html_folded("Fixed since the baseline", fixed, fixes),
    ]
    if fixed_more:
        folded.append(f'<p class="more">... and {fixed_more:,} more fixed findings</p>')
    if any(folded):
        body += [
            '<section id="not-deciding"><h2>Not deciding</h2>',
            *[part for part in folded if part],
            "</section>",
        ]
    named = sorted(
        {f.rule_id for f in listed} | {f.rule_id for f in fixed} | {t.rule_id for t in view.rules}
    )
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
