"""Audit results -> JSON, SARIF 2.1.0, GitLab Code Quality, Markdown, HTML (inline SVG chart) and
a terminal table."""

from __future__ import annotations

import hashlib
import html
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from constructs_lib.audit import rules, templates
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


def _listed(result: AuditResult) -> tuple[list[Finding], int]:
    """(the findings a human format lists, how many more there are)."""
    listed = list(itertools.islice(_ordered(result), REPORT_ROWS))
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
    unparseable = {f.file for f in result.files if f.status != "ok"}
    with_findings = {
        f.template for f in result.findings if f.rule_id != rules.UNPARSEABLE_RULE
    } - unparseable
    return summary_of(
        Counter(f.status for f in result.files),
        len(with_findings),
        result.queues,
        Counter((f.rule_id, f.severity) for f in result.findings),
    )


def summary_of(
    files_by_status: Mapping[str, int],
    files_with_findings: int,
    queues: int,
    findings_by_rule_and_severity: Mapping[tuple[str, str], int],
) -> dict[str, Any]:
    """The summary from its counts, however they were counted (in memory, or by Spark)."""
    read = sum(files_by_status.values())
    unparseable = read - files_by_status.get("ok", 0)
    clean = read - files_with_findings - unparseable
    by_severity: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    for (rule_id, severity), count in findings_by_rule_and_severity.items():
        by_severity[severity] += count
        by_rule[rule_id] += count
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
    }


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when any finding is at least as severe as ``fail_on``; ``never`` always gives 0."""
    return exit_status({"by_severity": Counter(f.severity for f in findings)}, fail_on)


def exit_status(summary: dict[str, Any], fail_on: str) -> int:
    """1 when the summary counts a finding at least as severe as ``fail_on``: the exit status
    of a run whose findings are not all in memory."""
    if fail_on == "never":
        return 0
    threshold = SEVERITY_RANK[fail_on]
    counts: dict[str, int] = summary["by_severity"]
    return int(any(n and SEVERITY_RANK[s] >= threshold for s, n in counts.items()))


def _indented(value: Any, level: int) -> str:
    return json.dumps(value, indent=2).replace("\n", "\n" + " " * level)


def stream_json(result: AuditResult) -> Iterator[str]:
    """The JSON report in pieces, one finding at a time (``render_json`` joins them)."""
    yield '{\n  "findings": ['
    for i, finding in enumerate(_ordered(result)):
        yield ("," if i else "") + "\n    " + _indented(finding.as_dict(), 4)
    yield f'\n  ],\n  "summary": {_indented(summarize(result), 2)}\n}}\n'


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
    document = {
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
        issue = {
            "type": "issue",
            "check_name": finding.rule_id,
            "description": f"{finding.rule_id} {finding.message}. Fix: {finding.fix}",
            "severity": _CODEQUALITY_SEVERITY[finding.severity],
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


def render_markdown(result: AuditResult) -> str:
    summary = summarize(result)
    severity = summary["by_severity"]
    lines = [
        "## Queue audit",
        "",
        f"{summary['files_read']} templates, {summary['queues']} queues: "
        f"**{severity['error']} errors**, {severity['warning']} warnings, {severity['info']} info.",
        f"{summary['files_clean']} clean, {summary['files_with_findings']} with findings, "
        f"{summary['files_unparseable']} unparseable.",
        "",
    ]
    findings, more = _listed(result)
    if not findings:
        lines.append("No findings.")
        return "\n".join(lines) + "\n"
    lines += [
        "| Severity | Rule | Template | Resource | Message | Fix |",
        "|---|---|---|---|---|---|",
    ]
    for f in findings:
        lines.append(
            f"| {f.severity} | {f.rule_id} | `{_md(f.template)}` | {_md(f.resource)} | "
            f"{_md(f.message)} | {_md(f.fix)} |"
        )
    if more:
        lines += ["", _more(more)]
    return "\n".join(lines) + "\n"


def render_table(result: AuditResult) -> str:
    findings, more = _listed(result)
    header = ("SEVERITY", "RULE", "TEMPLATE", "RESOURCE", "MESSAGE")
    rows = [(f.severity, f.rule_id, f.template, f.resource, f.message) for f in findings]
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
    out.append(
        f"{summary['findings']} findings ({summary['by_severity']['error']} errors, "
        f"{summary['by_severity']['warning']} warnings, {summary['by_severity']['info']} info) in "
        f"{summary['files_read']} files: {summary['files_clean']} clean, "
        f"{summary['files_with_findings']} with findings, {summary['files_unparseable']} unparseable"
    )
    return "\n".join(out) + "\n"


def _bar_chart(title: str, counts: list[tuple[str, int]]) -> str:
    """A horizontal bar chart as inline SVG: no script, no external resource."""
    bar_height, gap, label_width, chart_width = 18, 6, 260, 360
    height = 30 + len(counts) * (bar_height + gap)
    top = max((c for _, c in counts), default=1) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{label_width + chart_width + 60}" '
        f'height="{height}" aria-label="{html.escape(title)}">',
        f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, count) in enumerate(counts):
        y = 26 + i * (bar_height + gap)
        width = max(1, round(chart_width * count / top))
        short = label if len(label) <= 40 else "..." + label[-37:]
        parts += [
            f'<text x="0" y="{y + 13}" font-size="12">{html.escape(short)}</text>',
            f'<rect x="{label_width}" y="{y}" width="{width}" height="{bar_height}" fill="#c0392b">'
            f"<title>{html.escape(label)}: {count}</title></rect>",
            f'<text x="{label_width + width + 4}" y="{y + 13}" font-size="12">{count}</text>',
        ]
    parts.append("</svg>")
    return "".join(parts)


def render_html(result: AuditResult) -> str:
    summary = summarize(result)
    findings, more = _listed(result)
    by_rule = sorted(summary["by_rule"].items())
    by_template = Counter(f.template for f in findings).most_common(25)
    of_listed = f" of the first {len(findings):,} findings" if more else ""
    rows = "\n".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(v)}</td>"
            for v in (f.severity, f.rule_id, f.template, f.stack, f.resource, f.message, f.fix)
        )
        + "</tr>"
        for f in findings
    )
    severity = summary["by_severity"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Queue audit</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px;text-align:left;vertical-align:top}}</style></head>
<body><h1>Queue audit</h1>
<p>{summary["files_read"]} templates, {summary["queues"]} queues: {severity["error"]} errors,
{severity["warning"]} warnings, {severity["info"]} info. {summary["files_clean"]} clean,
{summary["files_with_findings"]} with findings, {summary["files_unparseable"]} unparseable.</p>
<figure>{_bar_chart("Findings by rule", by_rule)}</figure>
<figure>{_bar_chart(f"Findings by template (top 25{of_listed})", by_template)}</figure>
<table><thead><tr><th>Severity</th><th>Rule</th><th>Template</th><th>Stack</th><th>Resource</th>
<th>Message</th><th>Fix</th></tr></thead><tbody>
{rows}
</tbody></table>{f"<p>{html.escape(_more(more))}</p>" if more else ""}</body></html>
"""


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
