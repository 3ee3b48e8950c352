"""Findings datasets, written where the work is: ``--output-dir DIR`` or ``s3://bucket/prefix``.

Each run adds a partition ``run=<UTC time>`` to two datasets, a fleet's history that Spark,
pyarrow or any Hive-style reader takes whole (``spark.read.parquet("DIR/findings")``):

    DIR/findings/run=20261124T101500Z/part-<digest>.parquet        the findings
    DIR/findings-jsonl/run=20261124T101500Z/part-<digest>.jsonl    the same rows as JSON Lines
    DIR/ledger/run=20261124T101500Z/part-<digest>.parquet          with --metrics: the ledger
    DIR/ledger-jsonl/run=20261124T101500Z/part-<digest>.jsonl      the same rows as JSON Lines
    DIR/summary/run=20261124T101500Z.json                          the counts (from the driver)

Both engines write them through ``write``, once their findings are judged and accepted. The
ledger (``AuditResult.ledgers``, one row per queue, ``ledger_columns``) is small and on the
driver: it is written from there, as one part. On
Spark the executors write the parts themselves (``write_part`` runs inside ``mapInArrow``), with
pyarrow for Parquet and boto3 for ``s3://`` (pyspark ships no S3 connector), so the findings
never pass through the driver; the local engine writes its findings as one part. A part is named by a digest of its rows: a task that Spark runs
again after a lost executor writes the same name, never a duplicate.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import typing
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from constructs_lib.audit import optional
from constructs_lib.audit.inputs import objects
from constructs_lib.audit.model import Finding, QueueLedger
from constructs_lib.audit.report import ledger

if TYPE_CHECKING:
    from collections.abc import Callable

    from constructs_lib.audit.model import AuditResult

# What each part write reports back to the driver.
PART_SCHEMA_DDL = "path string, rows long"
_PARQUET = "--output-dir (Parquet)"

# How the ledger dataset stores each kind of field of ``QueueLedger``: its columns are declared
# by the row type, never inferred from the rows (a column whose every value is null in a run
# would have no type). Figures are doubles, null where a metric they need had no data point;
# ``empty_receive_cost`` is US dollars.
_LEDGER_TYPES: dict[Any, str] = {
    str: "string",
    bool: "bool",
    int: "int64",
    float | None: "float64",
    tuple[str, ...]: "list<string>",
}


def ledger_columns() -> tuple[tuple[str, str], ...]:
    """The ledger dataset's columns and their types: ``rank`` (1 first, the most messages
    lost), then every field of ``QueueLedger`` in its order."""
    hints = typing.get_type_hints(QueueLedger)
    unknown = [name for name in QueueLedger._fields if hints[name] not in _LEDGER_TYPES]
    if unknown:
        raise TypeError(
            f"QueueLedger fields {unknown} have types the ledger dataset does not store "
            f"({[str(hints[name]) for name in unknown]}); add them to _LEDGER_TYPES"
        )
    return (
        ("rank", "int32"),
        *((name, _LEDGER_TYPES[hints[name]]) for name in QueueLedger._fields),
    )


def run_id(now: datetime | None = None) -> str:
    return f"run={(now or datetime.now(UTC)).strftime('%Y%m%dT%H%M%SZ')}"


def output_root(base: str) -> str:
    """An absolute path (executors do not share the driver's working directory), or the URL."""
    return base.rstrip("/") if objects.is_object_url(base) else os.path.abspath(base)


def _put(target: str, data: bytes) -> None:
    if objects.is_object_url(target):
        objects.put_object(target, data)
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = f"{target}.{os.getpid()}.tmp"
    with open(partial, "wb") as handle:
        handle.write(data)
    os.replace(partial, target)  # readers never see half a part


def write_part(batches: Iterable[Any], root: str, run: str) -> Iterator[Any]:
    """One partition of findings -> a Parquet part and a JSON Lines part of run ``run``."""
    pa = optional.require("pyarrow", _PARQUET)
    pq = optional.require("pyarrow.parquet", _PARQUET)

    received = [batch for batch in batches if batch.num_rows]
    if not received:
        return
    table = pa.Table.from_batches(received)
    rows = table.to_pylist()
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    name = f"part-{hashlib.sha256(lines).hexdigest()[:20]}"
    parquet = io.BytesIO()
    pq.write_table(table, parquet)
    _put(f"{root}/findings/{run}/{name}.parquet", parquet.getvalue())
    _put(f"{root}/findings-jsonl/{run}/{name}.jsonl", lines)
    yield pa.RecordBatch.from_pydict(
        {"path": [f"{root}/findings/{run}/{name}.parquet"], "rows": [table.num_rows]},
        schema=pa.schema([("path", pa.string()), ("rows", pa.int64())]),
    )


def write(result: AuditResult, base: str, parts: PartsWriter | None = None) -> str:
    """A run's datasets under ``base`` (``output_root``), as a new run, for either engine: the
    findings' parts, then the summary from the driver. The root written is returned.

    ``parts`` writes the findings where they are (the Spark engine: on the executors, one part
    per partition, ``write_part`` inside ``mapInArrow``); without it, the findings in
    ``result`` are written here as one part (the local engine)."""
    root, run = output_root(base), run_id()
    if parts is None:
        _write_one_part(result, root, run)
    else:
        parts(root, run)
    _write_ledger(result, root, run)
    _write_summary(root, run, result)
    return root


def ledger_schema() -> Any:
    """``ledger_columns`` as a pyarrow schema."""
    pa = optional.require("pyarrow", _PARQUET)
    types = {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "float64": pa.float64(),
        "list<string>": pa.list_(pa.string()),
    }
    return pa.schema([(name, types[kind]) for name, kind in ledger_columns()])


def _write_ledger(result: AuditResult, root: str, run: str) -> None:
    """The ledger of run ``run`` as one Parquet part and one JSON Lines part of the same rows,
    named by their digest as the findings' parts are; nothing without a ledger."""
    if not result.ledgers:
        return
    pa = optional.require("pyarrow", _PARQUET)
    pq = optional.require("pyarrow.parquet", _PARQUET)

    rows = ledger.as_dicts(result.ledgers)
    table = pa.Table.from_pylist(rows, schema=ledger_schema())
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    name = f"part-{hashlib.sha256(lines).hexdigest()[:20]}"
    parquet = io.BytesIO()
    pq.write_table(table, parquet)
    _put(f"{root}/ledger/{run}/{name}.parquet", parquet.getvalue())
    _put(f"{root}/ledger-jsonl/{run}/{name}.jsonl", lines)


# Writes a run's findings parts under (root, run), where the findings are.
PartsWriter: TypeAlias = "Callable[[str, str], None]"


def _write_summary(root: str, run: str, result: AuditResult) -> None:
    from constructs_lib.audit.report.summary import summarize

    document = {"summary": summarize(result), "timings_s": result.timings}
    _put(f"{root}/summary/{run}.json", (json.dumps(document, indent=2) + "\n").encode())


def _write_one_part(result: AuditResult, root: str, run: str) -> None:
    """The findings held in ``result`` as one part, written from this process."""
    pa = optional.require("pyarrow", _PARQUET)

    if result.findings:
        schema = pa.schema(
            [
                (name, pa.int32() if spec.type == "int" else pa.string())
                for name, spec in Finding.__dataclass_fields__.items()
            ]
        )
        batch = pa.RecordBatch.from_pylist([f.as_dict() for f in result.findings], schema=schema)
        for _part in write_part([batch], root, run):
            pass
