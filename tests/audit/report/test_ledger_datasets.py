"""The ledger dataset beside the findings (``--output-dir``): its declared schema, one part per
run in Parquet and in JSON Lines holding the JSON report's rows, nothing without a ledger."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from constructs_lib.audit import report
from constructs_lib.audit.model import QueueLedger
from constructs_lib.audit.report import datasets, ledger
from tests.audit.report.ledger_rows import fleet

# How each kind of field of QueueLedger is stored, by hand.
STORED_AS = {
    str: "string",
    bool: "bool",
    int: "int64",
    float | None: "float64",
    tuple[str, ...]: "list<string>",
}
# The columns of the ledger as it was first written, by hand; fields added later follow them.
FIRST_COLUMNS = [
    ("rank", "int32"),
    ("uid", "string"),
    ("file", "string"),
    ("stack", "string"),
    ("logical_id", "string"),
    ("account", "string"),
    ("region", "string"),
    ("name", "string"),
    ("fifo", "bool"),
    ("sent", "float64"),
    ("deleted", "float64"),
    ("received", "float64"),
    ("empty_receives", "float64"),
    ("backlog_change", "float64"),
    ("unprocessed", "float64"),
    ("dead_lettered", "float64"),
    ("expired", "float64"),
    ("split_estimated", "bool"),
    ("extra_deliveries", "float64"),
    ("empty_receive_cost", "float64"),
    ("explained_by", "list<string>"),
]


def test_the_declared_schema_is_the_rank_then_every_ledger_field_in_order() -> None:
    columns = list(datasets.ledger_columns())
    assert columns[: len(FIRST_COLUMNS)] == FIRST_COLUMNS
    hints = typing.get_type_hints(QueueLedger)
    later = QueueLedger._fields[len(FIRST_COLUMNS) - 1 :]
    assert columns[len(FIRST_COLUMNS) :] == [(name, STORED_AS[hints[name]]) for name in later]


def test_fails_on_a_ledger_field_of_a_type_the_dataset_does_not_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hints = typing.get_type_hints(QueueLedger)
    monkeypatch.setattr(
        datasets.typing, "get_type_hints", lambda _cls: {**hints, "fifo": dict[str, int]}
    )
    with pytest.raises(TypeError, match=r"\['fifo'\].*dict\[str, int\].*_LEDGER_TYPES"):
        datasets.ledger_columns()


def test_every_figure_the_fleet_totals_add_is_a_ledger_figure() -> None:
    hints = typing.get_type_hints(QueueLedger)
    figures = [name for name in QueueLedger._fields if hints[name] == float | None]
    assert list(ledger.FIGURES) == figures


def _one(folder: Path) -> Path:
    (run,) = folder.iterdir()
    (part,) = run.iterdir()
    return part


def test_the_ledger_is_written_beside_the_findings_in_each_format(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    result = fleet()
    root = Path(datasets.write(result, str(tmp_path / "history")))
    document = json.loads(report.render_json(result))
    parquet = _one(root / "ledger")
    table = pq.read_table(parquet)
    # the declared types, also for a column whose every value is null in some run
    assert table.schema == datasets.ledger_schema()
    assert str(table.schema.field("unprocessed").type) == "double"
    explained = table.schema.field("explained_by").type
    assert str(explained.value_type) == "string" and "list" in str(explained)
    assert table.to_pylist() == document["ledger"]
    jsonl = _one(root / "ledger-jsonl")
    assert [json.loads(line) for line in jsonl.read_text().splitlines()] == document["ledger"]
    # the same run as the findings, and the same name for the same rows in both formats
    assert parquet.parent.name == _one(root / "findings").parent.name
    assert parquet.stem == jsonl.stem and parquet.stem.startswith("part-")


def test_a_ledger_of_unknown_figures_keeps_its_types(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from tests.audit.report.ledger_rows import DARK

    root = Path(datasets.write(fleet((DARK,)), str(tmp_path)))
    table = pq.read_table(_one(root / "ledger"))
    assert table.schema == datasets.ledger_schema()
    assert table.column("unprocessed").to_pylist() == [None]


def test_no_ledger_dataset_without_a_ledger(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    root = Path(datasets.write(fleet(()), str(tmp_path)))
    assert sorted(p.name for p in root.iterdir()) == ["findings", "findings-jsonl", "summary"]
