"""Audit results -> JSON, SARIF 2.1.0, GitLab Code Quality, Markdown, HTML and a terminal table.

One module per format; ``summary`` holds what they share (report order, the listing the human
formats show, the counts, the exit status). The human formats (table, Markdown, HTML) lead with
the fleet view (``fleet``), counted in the same pass over the findings that picks the ones they
list. With ``--metrics`` every format carries the ledger (``ledger``: what each queue lost and
spent), and the findings of the queues that lost most come first."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.report.codequality import render_codequality, stream_codequality
from constructs_lib.audit.report.html import render_html
from constructs_lib.audit.report.json import render_json, stream_json
from constructs_lib.audit.report.markdown import render_markdown
from constructs_lib.audit.report.sarif import (
    SARIF_FINGERPRINT_KEY,
    SARIF_SCHEMA,
    render_sarif,
    stream_sarif,
)
from constructs_lib.audit.report.summary import (
    DEFAULT_GATE,
    NOT_TEMPLATES_LISTED,
    Gate,
    exit_code,
    exit_status,
    summarize,
    summary_of,
)
from constructs_lib.audit.report.table import render_table

__all__ = [
    "DEFAULT_GATE",
    "FORMATS",
    "NOT_TEMPLATES_LISTED",
    "RENDERERS",
    "SARIF_FINGERPRINT_KEY",
    "SARIF_SCHEMA",
    "STREAMS",
    "Gate",
    "exit_code",
    "exit_status",
    "render_codequality",
    "render_html",
    "render_json",
    "render_markdown",
    "render_sarif",
    "render_table",
    "stream",
    "stream_codequality",
    "stream_json",
    "stream_sarif",
    "summarize",
    "summary_of",
]

FORMATS = ("json", "sarif", "codequality", "markdown", "html", "table")


def stream(
    fmt: str, result: AuditResult, docs_url: str | None = None, gate: Gate = DEFAULT_GATE
) -> Iterable[str]:
    """The report in ``fmt``, piece by piece; ``docs_url`` is where the HTML report links its
    rules to; ``gate`` (``--fail-on``, ``--fail-on-changed``) what the human formats say decides
    the exit status (default: errors decide)."""
    if fmt == "html":
        return [render_html(result, docs_url=docs_url, gate=gate)]
    if fmt == "table":
        return [render_table(result, gate)]
    if fmt == "markdown":
        return [render_markdown(result, gate)]
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
