"""The ledger in each report format (``--metrics``): the fleet table ranked by messages lost,
then by money, its rounding, its total, long fleets, and a run without it unchanged.

Every ledger here is made by hand (``ledger_rows``) and every expected cell is written out: the
figures are the engines' (``metrics/ledger.py``), the reports only round, add and place them."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from constructs_lib.audit import report
from constructs_lib.audit.model import QueueLedger
from constructs_lib.audit.report import ledger
from tests.audit.report import ledger_rows
from tests.audit.report.ledger_rows import ACCOUNT, REGION, fleet, row
from tests.audit.report.test_html_report import _section, _table, parse
from tests.audit.report.test_report import _assert_valid_sarif, sarif_validator

__all__ = ["sarif_validator"]  # the fixture, shared with the report tests

WHERE = f"{ACCOUNT}/{REGION}"
# The three queues' rows and the fleet's, by hand from ledger_rows: Lost, Small, Dark.
LOST_CELLS = ("b/Lost", "lost", WHERE, "standard", "500", "480", "20", "0", "1,250,000", "$0.50")
SMALL_CELLS = (
    "c/Small",
    "small",
    WHERE,
    "standard",
    "40",
    "30 (estimate)",
    "10 (estimate)",
    "12 (QR030)",
    "4,000",
    "$0.0016",
)
DARK_CELLS = ("d/Dark", "dark.fifo", WHERE, "FIFO", "-", "-", "-", "-", "-", "-")
# 500 + 40 lost; 480 + 30 dead-lettered and 20 + 10 expired, one split estimated; 0 + 12 extra
# deliveries; 1,250,000 + 4,000 empty receives costing $0.5016, shown in cents
TOTAL_CELLS = (
    "Fleet total",
    "3 queues",
    "",
    "",
    "540",
    "510 (estimate)",
    "30 (estimate)",
    "12",
    "1,254,000",
    "$0.50",
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "-"),
        (0.0, "0"),
        (1234.4, "1,234"),  # just below a half
        (1234.5, "1,235"),  # at it: halves away from zero, not to even
        (1234.6, "1,235"),  # just above
        (2.5, "3"),
        (-2.5, "-3"),  # a backlog that grew less than it shrank
        (1_000_000.0, "1,000,000"),
    ],
)
def test_messages_are_whole_numbers(value: float | None, expected: str) -> None:
    assert ledger.messages_text(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "-"),
        (0.0, "$0.00"),
        (0.011, "$0.01"),  # just above a cent: cents
        (0.01, "$0.01"),  # at a cent
        (0.0099, "$0.0099"),  # just below: four decimals, not $0.01 or $0.00
        (0.00995, "$0.01"),  # rounds to a cent in four decimals: cents
        (0.0016, "$0.0016"),
        (0.00005, "$0.0001"),  # the smallest that four decimals show
        (0.00004, "<$0.0001"),  # below: not zero, so never "$0.0000"
        (12.5, "$12.50"),
        (1234.565, "$1,234.57"),  # as written, not as its binary value rounds
    ],
)
def test_money_is_in_cents_and_in_four_decimals_below_a_cent(
    value: float | None, expected: str
) -> None:
    assert ledger.usd_text(value) == expected


def _text_table(text: str) -> list[tuple[str, ...]]:
    """The terminal ledger's rows under its header, split where columns are padded apart."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("QUEUE "))
    rows = []
    for line in lines[start + 1 :]:
        if not line or line.startswith(("...", "-:")):
            break
        rows.append(tuple(re.split(r"\s{2,}", line.strip())))
    return rows


def test_table_ranks_the_queues_and_totals_the_fleet() -> None:
    text = report.render_table(fleet())
    assert "LEDGER: What 3 queues lost and spent over the metrics window" in text
    # the empty cells of the total row (account/region, type) are padding
    total = tuple(c for c in TOTAL_CELLS if c)
    assert _text_table(text) == [LOST_CELLS, SMALL_CELLS, DARK_CELLS, total]
    assert "-: no data point in the window for a metric the figure needs" in text
    assert "docs/audit/ledger.md" in text
    # the ledger goes before the findings' listing
    assert text.index("LEDGER:") < text.index("SEVERITY  RULE")


def _many(count: int) -> tuple[QueueLedger, ...]:
    # ranked as an engine ranks them: the most lost first
    return tuple(row("f.json", f"Q{i:02}", float(count - i), 0.001) for i in range(count))


@pytest.mark.parametrize(
    ("count", "shown", "more"),
    [
        (ledger.LEDGER_ROWS - 1, ledger.LEDGER_ROWS - 1, ""),
        (ledger.LEDGER_ROWS, ledger.LEDGER_ROWS, ""),
        (ledger.LEDGER_ROWS + 1, ledger.LEDGER_ROWS, "... and 1 more queue:"),
        (ledger.LEDGER_ROWS + 5, ledger.LEDGER_ROWS, "... and 5 more queues:"),
    ],
)
def test_table_lists_the_first_queues_and_counts_the_rest(
    count: int, shown: int, more: str
) -> None:
    result = fleet(_many(count))
    text = report.render_table(result)
    rows = _text_table(text)
    assert [r[0] for r in rows[:-1]] == [f"f/Q{i:02}" for i in range(shown)]
    # the total counts every queue, those left out too: count + (count - 1) + ... + 1 lost
    assert rows[-1][:3] == ("Fleet total", f"{count} queues", f"{count * (count + 1) // 2:,}")
    assert (more in text) if more else ("more queue" not in text)
    # Markdown, HTML and JSON list every queue
    markdown = report.render_markdown(result)
    assert all(f"| `f/Q{i:02}` |" in markdown for i in range(count))
    html_rows = _table(parse(report.render_html(result)), "ledger")
    assert len(html_rows) == count + 2  # the header, every queue, the total
    assert len(json.loads(report.render_json(result))["ledger"]) == count


def test_default_rows_of_the_terminal_ledger() -> None:
    assert ledger.LEDGER_ROWS == 20  # docs/audit/index.md says so


def _markdown_rows(text: str) -> list[tuple[str, ...]]:
    part = text.split("### Ledger")[1].split("### Findings")[0]
    lines = [line for line in part.splitlines() if line.startswith("| ")][1:]  # no header
    return [tuple(c.strip().strip("`*") for c in line.strip("|").split(" | ")) for line in lines]


def test_markdown_ledger_sits_between_the_fleet_view_and_the_findings() -> None:
    text = report.render_markdown(fleet())
    assert text.index("### Fleet") < text.index("### Ledger") < text.index("### Findings")
    assert _markdown_rows(text) == [LOST_CELLS, SMALL_CELLS, DARK_CELLS, TOTAL_CELLS]
    assert "|---|---|---|---|---:|---:|---:|---:|---:|---:|" in text


def test_markdown_ledger_without_a_fleet_view_still_heads_the_findings() -> None:
    # one stack of findings: no fleet view, the ledger alone leads
    result = fleet()
    result.findings = [f for f in result.findings if f.template == "b.json"]
    text = report.render_markdown(result)
    assert "### Fleet" not in text
    assert text.index("### Ledger") < text.index("### Findings") < text.index("QR009 on Lost")


def test_html_ledger_follows_the_fleet_view() -> None:
    root = parse(report.render_html(fleet()))
    sections = [s.attrs.get("id") for s in root.find_all("section")]
    assert sections.index("fleet") + 1 == sections.index("ledger") < sections.index("findings")
    header, *rows = _table(_section(root, "ledger"), "ledger")
    assert tuple(header) == ledger.LEDGER_HEADER
    assert [tuple(r) for r in rows] == [LOST_CELLS, SMALL_CELLS, DARK_CELLS, TOTAL_CELLS]
    (foot,) = _section(root, "ledger").find_all("tfoot")
    assert foot.find_all("th")[0].text() == "Fleet total"


def test_html_ledger_escapes_names() -> None:
    odd = row("<x>.json", "Q", 1.0, 0.0, stack="<b>&")
    page = report.render_html(fleet((odd,)))
    assert "<b>&" not in page and "&lt;b&gt;&amp;/Q" in page


def test_json_ledger_has_every_field_in_rank_and_fleet_totals() -> None:
    document = json.loads(report.render_json(fleet()))
    assert list(document) == ["findings", "ledger", "ledger_totals", "summary"]
    queues = document["ledger"]
    assert [q["rank"] for q in queues] == [1, 2, 3]
    assert [q["uid"] for q in queues] == ["b.json#Lost", "c.json#Small", "d.json#Dark"]
    assert list(queues[0]) == ["rank", *QueueLedger._fields]
    assert queues[1]["explained_by"] == ["QR030"] and queues[0]["explained_by"] == []
    assert queues[1]["split_estimated"] is True
    # None is null, every figure of the dark queue
    assert queues[2]["unprocessed"] is None and queues[2]["empty_receive_cost"] is None
    assert queues[2]["fifo"] is True
    totals = document["ledger_totals"]
    assert totals["queues"] == 3
    assert totals["unprocessed"] == 540.0
    assert totals["dead_lettered"] == 510.0 and totals["expired"] == 30.0
    assert totals["empty_receives"] == 1_254_000.0
    assert totals["empty_receive_cost"] == pytest.approx(0.5016, abs=1e-12)
    assert totals["sent"] == 2000.0  # 1,000 each for the two queues that know it
    assert totals["split_estimated"] is True
    # each figure of the dark queue is unknown; Lost and Small know them all
    assert totals["queues_without"] == dict.fromkeys(ledger.FIGURES, 1)


def test_json_totals_of_a_figure_no_queue_knows_is_null() -> None:
    document = json.loads(report.render_json(fleet((ledger_rows.DARK,))))
    totals = document["ledger_totals"]
    assert totals["unprocessed"] is None and totals["empty_receive_cost"] is None
    assert totals["split_estimated"] is False


def test_fifo_and_standard_queues_keep_their_own_price() -> None:
    # a million empty receives each, priced by the engine as standard and as FIFO queues are
    standard = row("s.json", "Std", 0.0, 0.40, empty=1_000_000.0)
    fifo = row("s.json", "Ordered", 0.0, 0.50, empty=1_000_000.0, fifo=True)
    result = fleet((fifo, standard))  # equal loss: the more money first
    *queues, total = _text_table(report.render_table(result))
    assert [(r[0], r[3], r[-2], r[-1]) for r in queues] == [
        ("s/Ordered", "FIFO", "1,000,000", "$0.50"),
        ("s/Std", "standard", "1,000,000", "$0.40"),
    ]
    assert (total[0], total[-2], total[-1]) == ("Fleet total", "2,000,000", "$0.90")
    (first, second) = json.loads(report.render_json(result))["ledger"]
    assert (first["fifo"], first["empty_receive_cost"]) == (True, 0.50)
    assert (second["fifo"], second["empty_receive_cost"]) == (False, 0.40)


def test_metrics_without_a_ledger_say_so_in_json_and_show_no_table() -> None:
    # --metrics was given and no queue had series: an empty ledger, no table
    result = fleet(())
    document = json.loads(report.render_json(result))
    assert document["ledger"] == []
    assert document["ledger_totals"]["queues"] == 0
    assert document["ledger_totals"]["unprocessed"] is None
    assert "LEDGER" not in report.render_table(result)
    assert "### Ledger" not in report.render_markdown(result)
    assert 'id="ledger"' not in report.render_html(result)


@pytest.mark.parametrize("fmt", report.FORMATS)
def test_a_run_without_metrics_has_no_ledger_in_any_format(fmt: str) -> None:
    result = fleet(())
    result.metrics = None
    text = report.RENDERERS[fmt](result)
    # the page's inline styles name the ledger's table whether there is one or not
    assert "ledger" not in text.lower().replace("table.ledger", "")
    if fmt == "json":
        assert list(json.loads(text)) == ["findings", "summary"]
    if fmt == "sarif":
        assert "properties" not in json.loads(text)["runs"][0]


def test_sarif_carries_the_ledger_in_the_run_and_each_result_its_queue_figures(
    sarif_validator: jsonschema.Draft4Validator,
) -> None:
    result = fleet()
    document = _assert_valid_sarif(report.render_sarif(result), sarif_validator)
    (run,) = document["runs"]
    json_document = json.loads(report.render_json(result))
    assert run["properties"]["ledger"] == json_document["ledger"]
    assert run["properties"]["ledgerTotals"] == json_document["ledger_totals"]
    carried: dict[str, dict[str, Any]] = {}
    for item in run["results"]:
        name = item["locations"][0]["logicalLocations"][0]["name"]
        carried.setdefault(name, item.get("properties", {}))
    # Lost and Small know both figures; Dark knows neither; Plain has no ledger
    assert carried["Lost"] == {"queueUnprocessed": 500.0, "queueEmptyReceiveCost": 0.5}
    assert carried["Small"] == {"queueUnprocessed": 40.0, "queueEmptyReceiveCost": 0.0016}
    assert carried["Dark"] == {} and carried["Plain"] == {}


def test_sarif_result_keeps_where_a_deployed_resource_lives_beside_its_queue_figures() -> None:
    result = fleet((ledger_rows.LOST,))
    deployed = ledger_rows.finding(
        "QR009", "warning", "b.json", "Lost", account=ACCOUNT, region=REGION, physical="arn:x"
    )
    result.findings = [deployed]
    (item,) = json.loads(report.render_sarif(result))["runs"][0]["results"]
    assert item["properties"] == {
        "account": ACCOUNT,
        "region": REGION,
        "physical": "arn:x",
        "queueUnprocessed": 500.0,
        "queueEmptyReceiveCost": 0.5,
    }


def test_ledger_lines_are_what_the_docs_show() -> None:
    from tests.conftest import REPO_ROOT

    # the ledger of docs/audit/index.md, "The ledger in each report": Lost and Small
    page = (REPO_ROOT / "docs" / "audit" / "index.md").read_text()
    text = report.render_table(fleet((ledger_rows.LOST, ledger_rows.SMALL)))
    start = text.index("LEDGER:")
    block = text[start : text.index("\n\n", start)]
    assert f"```\n{block}\n```" in page


def test_json_shape_is_what_the_docs_show() -> None:
    from tests.conftest import REPO_ROOT

    page = (REPO_ROOT / "docs" / "audit" / "index.md").read_text()
    section = page.split("## The ledger in each report")[1].split("\n## ")[0]
    (shown,) = re.findall(r"```json\n(.*?)```", section, flags=re.DOTALL)
    document = json.loads(report.render_json(fleet((ledger_rows.SMALL,))))
    shown_document = json.loads(shown)
    assert shown_document["ledger_totals"] == document["ledger_totals"]
    # the queue's object as the docs show it, the fields added to the ledger since after it
    ((queue,), (rendered,)) = shown_document["ledger"], document["ledger"]
    assert list(rendered)[: len(queue)] == list(queue)
    assert {key: rendered[key] for key in queue} == queue
