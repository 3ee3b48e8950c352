"""Findings ordered by their queue's loss where the ledger knows it: the machine formats' report
order, the human formats' listing (inside a severity), fingerprints that do not move, and a
Spark run's streamed findings in the local engine's order, byte for byte."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import report
from constructs_lib.audit.model import AuditResult, Finding, QueueLedger
from constructs_lib.audit.report import sarif
from tests.audit.report.ledger_rows import finding, fleet, row
from tests.audit.report.test_html_report import _section, parse, squash
from tests.audit.report.test_report import _Once, _Streamed

# ledger_rows.fleet()'s findings in report order, by hand: Lost (first in the ledger) and Small
# (second) lead, each in template order; Dark's loss is not known, so it stays with the queue
# without a ledger (Plain) in template order.
REPORT_ORDER = [
    ("b.json", "QR009"),
    ("b.json", "QR013"),
    ("c.json", "QR008"),
    ("a.json", "QR001"),
    ("a.json", "QR009"),
    ("d.json", "QR009"),
]
# The human formats: the error first, whatever the loss; among the warnings Lost, then Small,
# then the queues whose loss is not known (Plain, Dark: the same rule, so template order); the
# info on Lost last, below every warning.
LISTING_ORDER = [
    ("a.json", "QR001"),
    ("b.json", "QR009"),
    ("c.json", "QR008"),
    ("a.json", "QR009"),
    ("d.json", "QR009"),
    ("b.json", "QR013"),
]


def _keys(findings: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f["template"], f["rule_id"]) for f in findings]


def test_json_lists_the_findings_of_the_queues_that_lost_most_first() -> None:
    document = json.loads(report.render_json(fleet()))
    assert _keys(document["findings"]) == REPORT_ORDER


def test_without_a_ledger_json_keeps_template_order() -> None:
    document = json.loads(report.render_json(fleet(())))
    assert _keys(document["findings"]) == sorted(REPORT_ORDER)


def test_sarif_and_codequality_follow_the_report_order() -> None:
    result = fleet()
    results = json.loads(report.render_sarif(result))["runs"][0]["results"]
    uris = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]) for r in results]  # fmt: skip
    assert uris == REPORT_ORDER
    issues = json.loads(report.render_codequality(result))
    assert [(i["location"]["path"], i["check_name"]) for i in issues] == REPORT_ORDER


def test_a_finding_in_another_template_ranks_with_the_queue_it_is_about() -> None:
    # a consumer in e.json of the queue Small of c.json (queue_template), and a queue of the same
    # logical id in e.json itself, which has no ledger
    result = fleet()
    consumer = finding("QR006", "error", "e.json", "Small", resource="Fn", queue_template="c.json")
    namesake = finding("QR006", "error", "e.json", "Small", resource="Other")
    result.findings = [*result.findings, namesake, consumer]
    keys = [(f["template"], f["resource"]) for f in json.loads(report.render_json(result))["findings"]]  # fmt: skip
    assert keys.index(("c.json", "Small")) + 1 == keys.index(("e.json", "Fn"))
    assert keys.index(("e.json", "Fn")) < keys.index(("a.json", "Plain"))
    assert keys[-1] == ("e.json", "Other")  # template order, after d.json


def _listed(text: str, fmt: str) -> list[tuple[str, str]]:
    """(template, rule) of each finding a human format lists, in its order."""
    if fmt == "table":
        header, *lines = text.split("SEVERITY  RULE")[1].splitlines()
        at = 3 if "STATE" in header else 2  # the template's column
        words = [line.split() for line in lines]
        return [(w[at], w[1]) for w in words if w[:1] in (["error"], ["warning"], ["info"])]
    rows = text.split("### Findings")[1].splitlines()
    cells = [r.strip("|").split(" | ") for r in rows if r.startswith("| ") and "`" in r]
    return [(c[2].strip().strip("`"), c[1].strip()) for c in cells]


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_human_formats_rank_by_loss_inside_a_severity(fmt: str) -> None:
    text = report.RENDERERS[fmt](fleet())
    assert _listed(text, fmt) == LISTING_ORDER


def test_loss_ranks_after_the_state() -> None:
    # a suppressed finding on the queue that lost most stays below every deciding one
    result = fleet()
    result.findings = [
        dataclasses.replace(f, suppression="inSource", justification="known")
        if f.template == "b.json" and f.rule_id == "QR009"
        else f
        for f in result.findings
    ]
    listed = _listed(report.render_table(result), "table")
    assert listed[-1] == ("b.json", "QR009")


def test_html_orders_a_stacks_queues_by_loss_inside_their_worst_severity() -> None:
    # one stack: Quiet (warning, no ledger), Losing (warning, lost 9), Broken (error, no ledger)
    findings = [
        finding("QR009", "warning", "s.json", "Quiet"),
        finding("QR009", "warning", "s.json", "Losing"),
        finding("QR001", "error", "s.json", "Broken"),
    ]
    losing = row("s.json", "Losing", 9.0, 0.0)
    result = AuditResult(findings, [], queues=3, ledgers=(losing,))
    section = _section(parse(report.render_html(result)), "findings")
    queues = [squash(h.text()) for h in section.find_all("h4")]
    assert queues == [
        "Queue Broken 1 error",
        "Queue Losing 1 warning",
        "Queue Quiet 1 warning",
    ]
    # without the ledger, the same two warnings in name order
    plain = _section(parse(report.render_html(AuditResult(findings, [], queues=3))), "findings")
    assert [squash(h.text()) for h in plain.find_all("h4")][1:] == [
        "Queue Losing 1 warning",
        "Queue Quiet 1 warning",
    ]
    result.ledgers = (row("s.json", "Quiet", 9.0, 0.0),)
    reranked = _section(parse(report.render_html(result)), "findings")
    assert [squash(h.text()) for h in reranked.find_all("h4")][1:] == [
        "Queue Quiet 1 warning",
        "Queue Losing 1 warning",
    ]


def test_fingerprints_are_the_same_with_a_ledger_or_without() -> None:
    # two findings that differ only by message: numbered :1 and :2 in template order
    result = fleet()
    twin = dataclasses.replace(result.findings[3], message="QR009 on Lost, again")
    result.findings = [*result.findings, twin]
    with_ledger = dict(sarif.fingerprinted(result))
    without = dict(sarif.fingerprinted(dataclasses.replace(result, ledgers=())))
    assert with_ledger == without
    assert sorted(p.rsplit(":", 1)[1] for f, p in with_ledger.items() if f.queue == "Lost") == [
        "1",
        "1",
        "2",
    ]


@pytest.mark.parametrize("fmt", report.FORMATS)
def test_streamed_findings_with_a_ledger_render_as_gathered_ones(fmt: str) -> None:
    result = fleet()
    streamed = dataclasses.replace(
        result, findings=_Streamed(list(result.findings)), summary=report.summarize(result)
    )
    assert "".join(report.STREAMS[fmt](streamed)) == report.RENDERERS[fmt](result)


@pytest.mark.parametrize(
    ("fmt", "reads"),
    [("json", 2), ("sarif", 2), ("codequality", 2), ("table", 1), ("markdown", 1), ("html", 1)],
)
def test_only_the_machine_formats_read_a_streamed_view_twice(fmt: str, reads: int) -> None:
    # twice: the findings of the queues in the ledger, then the rest; a person's formats rank
    # inside the one pass that keeps their first rows
    result = fleet()
    view = _Once(list(result.findings))
    streamed = dataclasses.replace(result, findings=view, summary=report.summarize(result))
    "".join(report.STREAMS[fmt](streamed))
    assert view.reads == reads
    # without a ledger, once
    view = _Once(list(result.findings))
    plain = dataclasses.replace(streamed, findings=view, ledgers=())
    "".join(report.STREAMS[fmt](plain))
    assert view.reads == 1


def _planted(seed: int) -> tuple[list[Finding], tuple[QueueLedger, ...]]:
    """Eight templates of eight queues with two or three findings each, and a ledger for a
    third of the queues (some with no known loss), ranked as the engines rank: the most lost
    first, then the most money, then uid."""
    chance = random.Random(seed)
    findings: list[Finding] = []
    rows: list[QueueLedger] = []
    for t in range(8):
        template = f"t{t}.json"
        for q in range(8):
            queue = f"Queue{q}"
            for rule, severity in chance.sample([("QR009", "warning"), ("QR001", "error"), ("QR013", "info"), ("QR008", "warning")], chance.choice([2, 3])):  # fmt: skip
                findings.append(finding(rule, severity, template, queue))
            if chance.random() < 0.35:
                lost = chance.choice([None, 0.0, 3.0, 50.0, 50.0, 700.0])
                rows.append(row(template, queue, lost, chance.choice([0.0, 0.0004, 0.25])))
    rows.sort(
        key=lambda r: (
            r.unprocessed is None,
            -(r.unprocessed or 0),
            -(r.empty_receive_cost or 0),
            r.uid,
        )
    )
    chance.shuffle(findings)
    return findings, tuple(rows)


@pytest.mark.spark
def test_spark_streamed_view_reports_as_the_local_engine_byte_for_byte(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from constructs_lib.audit.engines.spark import schemas, streaming

    # GIVEN findings sorted by Spark into many small partitions, as a report run keeps them
    findings, ledgers = _planted(seed=7)
    assert any(r.unprocessed is None for r in ledgers)  # queues whose loss is not known too
    monkeypatch.setattr(streaming, "REPORT_PARTITION_BYTES", 2048)
    frame = spark.createDataFrame(
        [tuple(f.as_dict().values()) for f in findings], schemas.FINDING_SCHEMA
    )
    count, size = streaming.measure(frame)
    view = streaming.report_view(frame, count, size)
    try:
        assert streaming.report_partitions(size) > 4
        metrics = {"queues_with_metrics": len(ledgers), "queues_without_metrics": 0, "covered": []}
        local = AuditResult(findings, [], 64, metrics=metrics, ledgers=ledgers)
        streamed = AuditResult(
            view, [], 64, summary=report.summarize(local), metrics=metrics, ledgers=ledgers
        )
        # WHEN each format is written from the streamed view THEN it is the local engine's
        for fmt in report.FORMATS:
            assert "".join(report.STREAMS[fmt](streamed)) == report.RENDERERS[fmt](local), fmt
        # and the order is the ledger's: the first findings are the top queue's
        top = ledgers[0]
        first = json.loads(report.render_json(local))["findings"][0]
        assert (first["template"], first["queue"]) == (top.file, top.logical_id)
    finally:
        for stored in (view.frame, *view.sources):
            stored.unpersist()


def test_reports_keep_the_ledgers_rank_as_the_engines_give_it() -> None:
    # the rank is the engines' (metrics/ledger.py): the reports neither sort nor drop a queue
    _findings, ledgers = _planted(seed=7)
    document = json.loads(report.render_json(fleet(ledgers)))
    assert [q["uid"] for q in document["ledger"]] == [r.uid for r in ledgers]
    assert [q["rank"] for q in document["ledger"]] == list(range(1, len(ledgers) + 1))
