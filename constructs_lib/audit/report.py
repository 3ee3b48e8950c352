"""Audit results -> JSON, SARIF 2.1.0, Markdown, HTML (inline SVG chart) and a terminal table."""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.engine import AuditResult
from constructs_lib.audit.model import SEVERITY_RANK, Finding

FORMATS = ("json", "sarif", "markdown", "html", "table")
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


def summarize(result: AuditResult) -> dict[str, Any]:
    """Counts that reconcile: every file read is clean, has findings, or could not be parsed."""
    unparseable = {f.file for f in result.files if f.status != "ok"}
    with_findings = {
        f.template for f in result.findings if f.rule_id != rules.UNPARSEABLE_RULE
    } - unparseable
    read = len(result.files)
    clean = read - len(with_findings) - len(unparseable)
    by_severity = Counter(f.severity for f in result.findings)
    return {
        "files_read": read,
        "files_clean": clean,
        "files_with_findings": len(with_findings),
        "files_unparseable": len(unparseable),
        # of which not read on purpose (not a regular file, over the size cap); each has a QR901
        "files_skipped": sum(1 for f in result.files if f.status == "skipped"),
        "reconciled": read == clean + len(with_findings) + len(unparseable) and clean >= 0,
        "queues": result.queues,
        "findings": len(result.findings),
        "by_severity": {s: by_severity.get(s, 0) for s in ("error", "warning", "info")},
        "by_rule": dict(sorted(Counter(f.rule_id for f in result.findings).items())),
    }


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when any finding is at least as severe as ``fail_on``; ``never`` always gives 0."""
    if fail_on == "never":
        return 0
    threshold = SEVERITY_RANK[fail_on]
    return int(any(SEVERITY_RANK[f.severity] >= threshold for f in findings))


def render_json(result: AuditResult) -> str:
    document = {
        "findings": [f.as_dict() for f in sorted_findings(result.findings)],
        "summary": summarize(result),
    }
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def render_sarif(result: AuditResult) -> str:
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
    results = []
    for finding in sorted_findings(result.findings):
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
        results.append(
            {
                "ruleId": finding.rule_id,
                "ruleIndex": index[finding.rule_id],
                "level": _SARIF_LEVEL[finding.severity],
                "message": {"text": f"{finding.message}. Fix: {finding.fix}"},
                "locations": [location],
            }
        )
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
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"


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
    findings = sorted_findings(result.findings)
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
    return "\n".join(lines) + "\n"


def render_table(result: AuditResult) -> str:
    findings = sorted_findings(result.findings)
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
    findings = sorted_findings(result.findings)
    by_rule = sorted(Counter(f.rule_id for f in findings).items())
    by_template = Counter(f.template for f in findings).most_common(25)
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
<figure>{_bar_chart("Findings by template (top 25)", by_template)}</figure>
<table><thead><tr><th>Severity</th><th>Rule</th><th>Template</th><th>Stack</th><th>Resource</th>
<th>Message</th><th>Fix</th></tr></thead><tbody>
{rows}
</tbody></table></body></html>
"""


RENDERERS: dict[str, Callable[[AuditResult], str]] = {
    "json": render_json,
    "sarif": render_sarif,
    "markdown": render_markdown,
    "html": render_html,
    "table": render_table,
}
