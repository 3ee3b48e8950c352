"""Report formats: JSON order and shape, SARIF 2.1.0 structure, Markdown, HTML, table."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from constructs_lib.audit import report
from constructs_lib.audit.engine import AuditResult
from constructs_lib.audit.model import FileRow, Finding

# The parts of the SARIF 2.1.0 schema (OASIS, sarif-schema-2.1.0.json) that code-scanning UIs
# require, written out from the specification: log -> runs -> tool.driver (name, rules with
# ids) -> results (ruleId, level enum, message.text, locations[].physicalLocation.artifactLocation.uri).
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs", "$schema"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {
                                                    "type": "object",
                                                    "required": ["text"],
                                                },
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {
                                                        "level": {
                                                            "enum": [
                                                                "none",
                                                                "note",
                                                                "warning",
                                                                "error",
                                                            ]
                                                        }
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "level", "message", "locations"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {"type": "object", "required": ["text"]},
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {
                                                            "uri": {
                                                                "type": "string",
                                                                "minLength": 1,
                                                            }
                                                        },
                                                    }
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def _finding(rule: str, severity: str, template: str, resource: str, message: str) -> Finding:
    return Finding(rule, severity, template, "stack", resource, "Q", message, "fix it")  # type: ignore[arg-type]


@pytest.fixture
def result() -> AuditResult:
    # deliberately out of order
    findings = [
        _finding("QR009", "warning", "b.template.json", "Source", "no alarm | pipe"),
        _finding("QR001", "error", "b.template.json", "Source", "no dlq"),
        _finding("QR901", "error", "a/broken.json", "", "could not read"),
        _finding("QR900", "info", "a/ok.template.json", "Esm", "not resolved <x>"),
    ]
    files = [
        FileRow("a/broken.json", "broken", "unparseable", "bad", 0),
        FileRow("a/ok.template.json", "ok", "ok", "", 3),
        FileRow("b.template.json", "b", "ok", "", 4),
        FileRow("c.template.json", "c", "ok", "", 2),
    ]
    return AuditResult(findings, files, queues=3)


def test_json_is_sorted_and_complete(result: AuditResult) -> None:
    document = json.loads(report.render_json(result))
    keys = [(f["template"], f["resource"], f["rule_id"]) for f in document["findings"]]
    assert keys == [
        ("a/broken.json", "", "QR901"),
        ("a/ok.template.json", "Esm", "QR900"),
        ("b.template.json", "Source", "QR001"),
        ("b.template.json", "Source", "QR009"),
    ]
    assert set(document["findings"][0]) == {
        "rule_id",
        "severity",
        "template",
        "stack",
        "resource",
        "queue",
        "message",
        "fix",
    }
    summary = document["summary"]
    assert (
        summary["files_read"],
        summary["files_clean"],
        summary["files_with_findings"],
        summary["files_unparseable"],
    ) == (4, 1, 2, 1)
    assert summary["by_severity"] == {"error": 2, "warning": 1, "info": 1}
    # the same input in another order renders identically
    result.findings.reverse()
    assert report.render_json(result) == json.dumps(document, indent=2) + "\n"


def test_sarif_structure(result: AuditResult) -> None:
    document = json.loads(report.render_sarif(result))
    jsonschema.validate(document, SARIF_SUBSET)
    run = document["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) == 31  # QR001-QR029, QR900, QR901
    for item in run["results"]:
        assert rule_ids[item["ruleIndex"]] == item["ruleId"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"QR001": "error", "QR009": "warning", "QR900": "note", "QR901": "error"}
    uris = {
        r["physicalLocation"]["artifactLocation"]["uri"]
        for item in run["results"]
        for r in item["locations"]
    }
    assert uris == {"a/broken.json", "a/ok.template.json", "b.template.json"}


def test_markdown_table(result: AuditResult) -> None:
    text = report.render_markdown(result)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "QR" in line]
    assert len(rows) == 4
    assert "no alarm \\| pipe" in text  # a pipe in a message does not break the table
    assert "**2 errors**" in text


def test_html_is_self_contained(result: AuditResult, tmp_path: Path) -> None:
    page = report.render_html(result)
    assert page.count("<svg") == 2
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert "not resolved &lt;x&gt;" in page  # escaped
    # one bar per rule in the by-rule chart
    by_rule = page.split('aria-label="Findings by rule"')[1].split("</svg>")[0]
    assert by_rule.count("<rect") == 4


def test_table_lists_each_finding(result: AuditResult) -> None:
    lines = report.render_table(result).splitlines()
    assert lines[0].split() == ["SEVERITY", "RULE", "TEMPLATE", "RESOURCE", "MESSAGE"]
    assert sum("QR" in line for line in lines[1:-1]) == 4
    assert lines[-1].startswith("4 findings (2 errors, 1 warnings, 1 info) in 4 files")


@pytest.mark.parametrize(
    ("fail_on", "expected"),
    [("error", 1), ("warning", 1), ("never", 0)],
)
def test_exit_code(result: AuditResult, fail_on: str, expected: int) -> None:
    assert report.exit_code(result.findings, fail_on) == expected


def test_exit_code_warning_threshold() -> None:
    warnings_only = [_finding("QR009", "warning", "t", "Q", "m")]
    assert report.exit_code(warnings_only, "error") == 0
    assert report.exit_code(warnings_only, "warning") == 1
    assert report.exit_code([], "info") == 0


class _Streamed:
    """Findings as a Spark run hands them over: sorted, iterable more than once, not a list."""

    def __init__(self, findings: list[Finding]) -> None:
        self._findings = sorted(findings, key=Finding.sort_key)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._findings)

    def __len__(self) -> int:
        return len(self._findings)


@pytest.mark.parametrize("fmt", report.FORMATS)
def test_streamed_findings_with_given_counts_render_as_gathered_ones(
    result: AuditResult, fmt: str
) -> None:
    streamed = AuditResult(
        _Streamed(list(result.findings)), [], result.queues, summary=report.summarize(result)
    )
    assert "".join(report.STREAMS[fmt](streamed)) == report.RENDERERS[fmt](result)


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_human_formats_list_the_first_rows_and_count_the_rest(
    result: AuditResult, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "REPORT_ROWS", 3)
    text = report.RENDERERS[fmt](result)
    assert "and 1 more findings" in text
    assert "not resolved" in text and "no alarm" not in text  # the last in report order is cut
    assert len(json.loads(report.render_json(result))["findings"]) == 4  # JSON keeps them all


@pytest.mark.parametrize(
    ("counts", "fail_on", "expected"),
    [
        ({"error": 0, "warning": 1, "info": 0}, "error", 0),
        ({"error": 0, "warning": 1, "info": 0}, "warning", 1),
        ({"error": 2, "warning": 0, "info": 0}, "never", 0),
        ({"error": 0, "warning": 0, "info": 1}, "info", 1),
    ],
)
def test_exit_status_from_counts(counts: dict[str, int], fail_on: str, expected: int) -> None:
    assert report.exit_status({"by_severity": counts}, fail_on) == expected
