"""Which local Parquet objects DuckDB reads in one scan (``scan.kinds``), and the rows it reads.

Per object (``decode._parquet_points``) the audit pays pyarrow's compute and group-by once per
object; DuckDB reads every file of the run in one query on ``workers`` threads. Only objects it
judges exactly as the per-object path does are given to it: a regular local file within the
size cap, whose first bytes are Parquet's magic, whose footer reads, with the row count within
the cap and the column types Firehose writes (text, a map of text, int64, a struct of doubles).
Anything else, and every object of a query DuckDB fails on, takes the per-object path, which
names the object's problem. Per object, a row with a required field null is counted and named
as the per-object path names it.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa
import pyarrow.parquet as pq

MAGIC: Final = b"PAR1"
# Characters DuckDB expands as a glob in a file name: such a path is read one object at a time.
GLOB: Final = frozenset("*?[{")
_TEXT: Final = ("account_id", "region", "namespace", "metric_name")
MALFORMED_ROWS: Final = "{:,} rows are not metric stream data points (a required field is null)"

_ROWS: Final = """
    SELECT file_index, account_id AS account, region, namespace, metric_name AS metric,
        value.max AS maximum, value.sum AS total, value.count AS samples, timestamp,
        coalesce(account_id IS NOT NULL AND region IS NOT NULL AND namespace IS NOT NULL
            AND metric_name IS NOT NULL AND dimensions IS NOT NULL AND timestamp IS NOT NULL
            AND value.max IS NOT NULL AND value.sum IS NOT NULL AND value.count IS NOT NULL,
            false) AS valid,
        coalesce(cardinality(dimensions) = 1 AND (
            (namespace = 'AWS/SQS' AND map_keys(dimensions)[1] = 'QueueName')
            OR (namespace = 'AWS/Lambda' AND map_keys(dimensions)[1] = 'FunctionName')),
            false) AS named,
        CASE WHEN named THEN map_keys(dimensions)[1] ELSE '' END AS dimension_name,
        CASE WHEN named THEN map_values(dimensions)[1] ELSE '' END AS name,
        coalesce(named OR namespace = 'AWS/SQS', false) AS keep
    FROM read_parquet($files)
"""


def _exact_types(schema: pa.Schema) -> bool:
    """The columns the audit reads, with the types Firehose's conversion writes."""
    if not {*_TEXT, "dimensions", "timestamp", "value"} <= set(schema.names):
        return False
    value = schema.field("value").type
    if not pa.types.is_struct(value):
        return False
    fields = {value.field(i).name: value.field(i).type for i in range(value.num_fields)}
    return (
        all(schema.field(n).type == pa.string() for n in _TEXT)
        and schema.field("dimensions").type == pa.map_(pa.string(), pa.string())
        and schema.field("timestamp").type == pa.int64()
        and all(fields.get(f) == pa.float64() for f in ("max", "sum", "count"))
    )


class Verdicts:
    """``_exact_types`` once per distinct schema: a fleet's objects share one or a few, and the
    conversion to an Arrow schema cost a fifth of the check of each object. The key is the
    Parquet schema with the Arrow schema a writer may store beside it (``ARROW:schema``), which
    the conversion reads too."""

    _KEPT: Final = 16

    def __init__(self) -> None:
        self._seen: list[tuple[pq.ParquetSchema, bytes | None, bool]] = []

    def exact(self, metadata: pq.FileMetaData) -> bool:
        schema = metadata.schema
        stored = (metadata.metadata or {}).get(b"ARROW:schema")
        for known, known_stored, verdict in self._seen:
            if known_stored == stored and known.equals(schema):
                return verdict
        verdict = _exact_types(schema.to_arrow_schema())
        if len(self._seen) < self._KEPT:
            self._seen.append((schema, stored, verdict))
        return verdict


def footer_eligible(source: pa.NativeFile, max_rows: int, verdicts: Verdicts) -> bool:
    """Whether the footer of an open Parquet object reads, with the row count within
    ``max_rows`` and the column types Firehose writes. ``pa.ArrowException`` or ``OSError``
    when it does not read."""
    metadata = pq.read_metadata(source)
    return metadata.num_rows <= max_rows and verdicts.exact(metadata)
