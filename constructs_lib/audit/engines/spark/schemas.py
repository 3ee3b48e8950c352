"""The Spark engine's row kinds and schemas, and the Arrow batches its Python passes exchange
with the JVM.

Spark never infers a schema from a template: every kind of row the parser yields (``RowKind``)
has its declared ``StructType`` here, and all of them travel in one wide schema out of the parse. The
frames the join stage makes between its steps (shared keys, resolved edges, members, evaluation
rows) are declared here too, so that a reader sees which columns each one carries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from constructs_lib.audit import model
from constructs_lib.audit.model import EdgeRow, FileRow, Finding, QueueLedger, ResourceRow


class RowKind:
    """The kinds of row the parse yields, as the wide schema's ``tag`` column names them."""

    FILE: Final = "file"
    RESOURCE: Final = "resource"
    KEY: Final = "key"
    EDGE: Final = "edge"
    EXPORT: Final = "export"
    NESTED: Final = "nested"
    FINDING: Final = "finding"
    INNER: Final = "inner"
    TOUCH: Final = "touch"
    JUDGED: Final = "judged"
    EXPOSURE: Final = "exposure"
    PENDING: Final = "pending"
    LEDGER: Final = "ledger"


# Rows per Arrow batch the Python stages send back to the JVM.
BATCH_ROWS = 20_000


def _schema(*names: str, ints: Iterable[str] = (), binary: Iterable[str] = ()) -> StructType:
    integer, raw = set(ints), set(binary)

    def kind(name: str) -> Any:
        return IntegerType() if name in integer else BinaryType() if name in raw else StringType()

    return StructType([StructField(n, kind(n), True) for n in names])


FINDING_FIELDS = tuple(Finding.__dataclass_fields__)
# A finding's position in its file (line, column) is its only numbers.
FINDING_INTS = tuple(n for n, f in Finding.__dataclass_fields__.items() if f.type == "int")
FINDING_TEXT = tuple(n for n in FINDING_FIELDS if n not in FINDING_INTS)
FINDING_SCHEMA = _schema(*FINDING_FIELDS, ints=FINDING_INTS)
# The driver's list of inputs: the path as bytes (a file name need not be UTF-8) and its stack.
PATH_SCHEMA = _schema("path", "stack", binary=["path"])
# The schema of each kind of row.
FILE_SCHEMA = _schema(*FileRow._fields, ints=["resources"])
RESOURCE_SCHEMA = _schema(*ResourceRow._fields)
KEY_SCHEMA = _schema(*model.KeyRow._fields)
EDGE_SCHEMA = _schema(*EdgeRow._fields)
EXPORT_SCHEMA = _schema(*model.ExportRow._fields)
NESTED_SCHEMA = _schema(*model.NestedRow._fields)
# What judging each template where it is parsed yields (``resolve/within_template.py``): the
# references it resolved itself ("edge" rows are those it could not), the keys another template
# could share with it (``how``: it owns or names the key), the queues judged there (each finding
# with its queue) and the keys their contexts depend on, and the queues left to the join stage.
TOUCH_SCHEMA = _schema("key", "how")
JUDGED_SCHEMA = _schema("queue_uid", *FINDING_FIELDS, ints=FINDING_INTS)
EXPOSURE_SCHEMA = _schema("queue_uid", "key", "how")
PENDING_SCHEMA = _schema("queue_uid")
# With metrics, a judged queue's ledger (``metrics/ledger.py``), one row per queue with series of
# its own: its fields as JSON, whose numbers give back the very floats (``ledger_text``).
LEDGER_SCHEMA = _schema("queue_uid", "ledger")
ROW_SCHEMAS = {
    RowKind.FILE: FILE_SCHEMA,
    RowKind.RESOURCE: RESOURCE_SCHEMA,
    RowKind.KEY: KEY_SCHEMA,
    RowKind.EDGE: EDGE_SCHEMA,
    RowKind.EXPORT: EXPORT_SCHEMA,
    RowKind.NESTED: NESTED_SCHEMA,
    # Notes, unreadable files, references that never resolve: findings of a template on its own.
    RowKind.FINDING: FINDING_SCHEMA,
    RowKind.INNER: EDGE_SCHEMA,
    RowKind.TOUCH: TOUCH_SCHEMA,
    RowKind.JUDGED: JUDGED_SCHEMA,
    RowKind.EXPOSURE: EXPOSURE_SCHEMA,
    RowKind.PENDING: PENDING_SCHEMA,
    RowKind.LEDGER: LEDGER_SCHEMA,
}
# Parsing yields every row kind in one pass, into one wide schema: a tag, as many text columns as
# the widest kind (a judged finding) and as many integers (a finding's line and column); each
# kind is then a JVM-side select of it. "src" is the file a row came from, so a nested child
# parsed again replaces all of its rows.
WIDE_TEXT = [f"t{i}" for i in range(len(FINDING_TEXT) + 1)]
WIDE_INTS = [f"n{i}" for i in range(max(1, len(FINDING_INTS)))]
WIDE_SCHEMA = _schema("tag", *WIDE_TEXT, *WIDE_INTS, "src", ints=WIDE_INTS)
# The join stage's own frames. A key more than one template touches: for each way of touching
# it, the first and last template that does.
SHARED_SCHEMA = _schema("key", "how", "first", "last")
# A reference resolved to the resource it names.
RESOLVED_SCHEMA = _schema("from_uid", "role", "detail", "to_uid")
# Who stands around a queue (``model.MemberRow``).
MEMBER_SCHEMA = _schema(*model.MemberRow._fields)
# The evaluation pass reads one row per member of a queue's context (see ``resolve.members``) with
# its resource's columns, or one row per unresolved reference: member UNRESOLVED, with the edge's.
EDGE_COLUMNS = [f"edge_{c}" for c in EdgeRow._fields]
UNRESOLVED = "unresolved"
EVALUATION_SCHEMA = _schema("queue_uid", "member", "detail", *ResourceRow._fields, *EDGE_COLUMNS)


def ledger_text(ledger: QueueLedger) -> str:
    """A ledger as its ``LEDGER_SCHEMA`` text: JSON writes a float's shortest exact digits."""
    return json.dumps(ledger._asdict())


def ledger_of(text: str) -> QueueLedger:
    fields = json.loads(text)
    return QueueLedger(**{**fields, "explained_by": tuple(fields["explained_by"])})


def ledger_frame(spark: SparkSession, ledgers: list[QueueLedger]) -> DataFrame:
    """Ledgers made on the driver, as a frame of ``LEDGER_SCHEMA``."""
    import pyarrow as pa

    columns = {"queue_uid": [x.uid for x in ledgers], "ledger": [ledger_text(x) for x in ledgers]}
    table = pa.Table.from_batches([arrow_batch(columns, LEDGER_SCHEMA)])
    return spark.createDataFrame(table, LEDGER_SCHEMA)


def with_src(schema: StructType) -> StructType:
    """``schema`` and the ``src`` column: the file a row of the wide schema came from."""
    return StructType([*schema.fields, StructField("src", StringType(), True)])


def arrow_text(values: list[Any]) -> Any:
    """A string column. A file name that is not UTF-8 holds lone surrogates, which Arrow cannot
    encode: such values travel as the ``\\udcff``-style escapes the reports print anyway."""
    import pyarrow as pa

    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:
        return pa.array(
            [v if v is None else v.encode("utf-8", "backslashreplace").decode() for v in values],
            pa.string(),
        )


def arrow_batch(columns: dict[str, list[Any]], schema: StructType) -> Any:
    import pyarrow as pa

    arrays = [
        pa.array(columns[f.name], pa.int32())
        if isinstance(f.dataType, IntegerType)
        else arrow_text(columns[f.name])
        for f in schema.fields
    ]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


def findings_batch(findings: list[Finding]) -> Any:
    columns: dict[str, list[Any]] = {name: [] for name in FINDING_FIELDS}
    for finding in findings:
        for name, value in finding.as_dict().items():
            columns[name].append(value)
    return arrow_batch(columns, FINDING_SCHEMA)


def findings_frame(spark: SparkSession, findings: list[Finding]) -> DataFrame:
    import pyarrow as pa

    table = pa.Table.from_batches([findings_batch(findings)])
    return spark.createDataFrame(table, FINDING_SCHEMA)


def _fields_in_wide(tag: str) -> list[str]:
    """The wide schema's column that holds each field of a kind of row, in the kind's order."""
    texts, ints = iter(WIDE_TEXT), iter(WIDE_INTS)
    return [
        next(ints) if isinstance(f.dataType, IntegerType) else next(texts)
        for f in ROW_SCHEMAS[tag].fields
    ]


def collected(wide: DataFrame, tags: Iterable[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of the kinds ``tags`` on the driver, in one job: each kind's rows as tuples of its
    schema's fields, then the file they came from."""
    wanted = list(tags)
    table = wide.filter(F.col("tag").isin(wanted)).toArrow().to_pydict()
    rows: dict[str, list[tuple[Any, ...]]] = {tag: [] for tag in wanted}
    places = {tag: [table[name] for name in (*_fields_in_wide(tag), "src")] for tag in wanted}
    for i, tag in enumerate(table["tag"]):
        rows[tag].append(tuple(column[i] for column in places[tag]))
    return rows


def narrow(wide: DataFrame, tag: str, with_src: bool = False) -> DataFrame:
    """The rows of one kind (a ``RowKind``), with its schema's columns (and the file they came
    from)."""
    places = zip(_fields_in_wide(tag), ROW_SCHEMAS[tag].names, strict=True)
    columns = [F.col(place).alias(name) for place, name in places]
    return wide.filter(F.col("tag") == tag).select(*columns, *(["src"] if with_src else []))


def arrow_schema(schema: StructType) -> Any:
    """The Arrow schema of a Spark schema of text, double and bigint columns."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "double": pa.float64(), "bigint": pa.int64()}
    return pa.schema([(f.name, kinds[f.dataType.simpleString()]) for f in schema.fields])
