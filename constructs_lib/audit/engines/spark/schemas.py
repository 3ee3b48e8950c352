"""The Spark engine's schemas, and the Arrow batches its Python passes exchange with the JVM.

Spark never infers a schema from a template: every row kind the parser yields has its declared
``StructType`` here, and all of them travel in one wide schema out of the parse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from constructs_lib.audit import model
from constructs_lib.audit.model import EdgeRow, FileRow, Finding, ResourceRow

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
ROW_SCHEMAS = {
    "file": _schema(*FileRow._fields, ints=["resources"]),
    "resource": _schema(*ResourceRow._fields),
    "key": _schema(*model.KeyRow._fields),
    "edge": _schema(*EdgeRow._fields),
    "export": _schema(*model.ExportRow._fields),
    "nested": _schema(*model.NestedRow._fields),
    # Notes, unreadable files, references that never resolve: findings of a template on its own.
    "finding": FINDING_SCHEMA,
    # What judging each template where it is parsed yields (``within_template.py``): the
    # references it resolved itself ("edge" rows are those it could not), the keys another
    # template could share with it, the queues judged there (each finding with its queue) and
    # the keys their contexts depend on, and the queues left to the join stage.
    "inner": _schema(*EdgeRow._fields),
    "touch": _schema("key", "how"),
    "judged": _schema("queue_uid", *FINDING_FIELDS, ints=FINDING_INTS),
    "exposure": _schema("queue_uid", "key", "how"),
    "pending": _schema("queue_uid"),
}
# Parsing yields every row kind in one pass, into one wide schema: a tag, as many text columns as
# the widest kind (a judged finding) and as many integers (a finding's line and column); each
# kind is then a JVM-side select of it. "src" is the file a row came from, so a nested child
# parsed again replaces all of its rows.
WIDE_TEXT = [f"t{i}" for i in range(len(FINDING_TEXT) + 1)]
WIDE_INTS = [f"n{i}" for i in range(max(1, len(FINDING_INTS)))]
WIDE_SCHEMA = _schema("tag", *WIDE_TEXT, *WIDE_INTS, "src", ints=WIDE_INTS)
# The evaluation pass reads one row per member of a queue's context (see ``resolve.members``) with its
# resource's columns, or one row per unresolved reference: member UNRESOLVED, with the edge's.
EDGE_COLUMNS = [f"edge_{c}" for c in EdgeRow._fields]
UNRESOLVED = "unresolved"


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


def narrow(wide: DataFrame, tag: str, with_src: bool = False) -> DataFrame:
    """The rows of one kind, with its schema's columns (and the file they came from)."""
    texts, ints = iter(WIDE_TEXT), iter(WIDE_INTS)
    columns = [
        F.col(next(ints)).alias(f.name)
        if isinstance(f.dataType, IntegerType)
        else F.col(next(texts)).alias(f.name)
        for f in ROW_SCHEMAS[tag].fields
    ]
    return wide.filter(F.col("tag") == tag).select(*columns, *(["src"] if with_src else []))
