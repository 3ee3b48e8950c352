"""One metric stream object's bytes -> the data points the audit keeps, as an Arrow table.

A metric stream in the JSON output format writes one data point per line: ``account_id``,
``region``, ``namespace``, ``metric_name``, ``dimensions`` (an object), ``timestamp`` (epoch
milliseconds) and ``value`` (``max``, ``min``, ``sum``, ``count`` and any percentiles asked for)
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-metric-streams-formats-json.html).
Firehose delivers those lines as they are, gzipped, or converted to Parquet with the same
fields (``dimensions`` a map, ``value`` a struct). The format is told by the bytes: Parquet by
its magic ``PAR1`` (or a ``.parquet`` name), gzip by its magic ``1f 8b`` whatever the name,
anything else is read as JSON lines.

Kept: series with exactly one dimension, ``QueueName`` in AWS/SQS or ``FunctionName`` in
AWS/Lambda. Lambda publishes each function's metrics by ``Resource`` and ``ExecutedVersion``
as well, so any other dimension set would count the same invocations twice. Every other AWS/SQS
data point is kept too, without a name (``dimension_name`` empty): it says the stream covered
SQS in its account and region at that time. A line that is not a data point is counted and
named in the object's problem; it never stops the object, and an object never stops the run.
"""

from __future__ import annotations

import io
import json
import zlib
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from constructs_lib.audit.metrics import fast_json
from constructs_lib.audit.safety import size_text

SQS: Final = "AWS/SQS"
LAMBDA: Final = "AWS/Lambda"
# The one dimension a series of each namespace is kept by (AWS/SQS publishes its queue metrics
# by QueueName only; AWS/Lambda by FunctionName, and again by Resource and ExecutedVersion).
SERIES_DIMENSION: Final = {SQS: "QueueName", LAMBDA: "FunctionName"}

POINT_SCHEMA: Final = pa.schema(
    [
        ("account", pa.string()),
        ("region", pa.string()),
        ("namespace", pa.string()),
        ("metric", pa.string()),
        ("dimension_name", pa.string()),  # empty: an AWS/SQS point kept for coverage only
        ("name", pa.string()),
        ("maximum", pa.float64()),
        ("total", pa.float64()),
        ("samples", pa.float64()),
        ("timestamp", pa.int64()),
    ]
)

# Firehose buffers at most 128 MiB before it delivers an object (BufferingHints.SizeInMBs,
# 1-128: https://docs.aws.amazon.com/firehose/latest/APIReference/API_BufferingHints.html), and
# it buffers the records before compressing them: no object it writes is larger, compressed or
# not. Twice that, decompressed, leaves room for Parquet's own encodings.
MAX_OBJECT_BYTES: Final = 128 * 2**20
MAX_DECODED_BYTES: Final = 256 * 2**20
# A data point is a few hundred bytes; a metric has at most 30 dimensions, names of at most 255
# and values of at most 1,024 characters (https://docs.aws.amazon.com/AmazonCloudWatch/latest/
# APIReference/API_Dimension.html, API_MetricDatum.html): under 40 KiB with every field at its
# largest. A longer line is not a data point.
MAX_LINE_BYTES: Final = 64 * 2**10
# Two of the shortest lines per byte of the largest decoded object: a Parquet file that claims
# more rows is not metric stream output.
MAX_OBJECT_POINTS: Final = MAX_DECODED_BYTES // 64


@dataclass(frozen=True)
class StreamLimits:
    """What one metric stream object may cost (the defaults are above, with their reasons)."""

    max_object_bytes: int = MAX_OBJECT_BYTES
    max_decoded_bytes: int = MAX_DECODED_BYTES
    max_line_bytes: int = MAX_LINE_BYTES
    max_object_points: int = MAX_OBJECT_POINTS


DEFAULT_STREAM_LIMITS: Final = StreamLimits()


@dataclass(frozen=True)
class Decoded:
    """One object's data points: those kept (``points``), how many data points it held in all
    (``data_points``, kept or not), and its problem (None when every line was a data point)."""

    points: pa.Table
    data_points: int
    malformed: int = 0
    problem: str | None = None


def empty_points() -> pa.Table:
    return POINT_SCHEMA.empty_table()


class _NotMetricStreamData(ValueError):
    """A line or row that is not a metric stream data point, or an object not readable as metric
    stream data; the message says why."""


def decode(data: bytes, name: str, limits: StreamLimits = DEFAULT_STREAM_LIMITS) -> Decoded:
    """One object's bytes -> its data points; ``name`` is its path or URL (for ``.parquet``)."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = _gunzip(data, limits)
        if data[:4] == b"PAR1" or name.endswith(".parquet"):
            return _parquet_points(data, limits)
        return _json_points(data, limits)
    except _NotMetricStreamData as error:
        return Decoded(empty_points(), 0, 0, str(error))


def _gunzip(data: bytes, limits: StreamLimits) -> bytes:
    """Every gzip member of ``data`` (a file may hold several, one after another), decompressed
    no further than ``max_decoded_bytes``; a truncated or corrupt stream is not read at all."""
    out: list[bytes] = []
    total = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            while rest:
                chunk = inflater.decompress(rest, limits.max_decoded_bytes + 1 - total)
                total += len(chunk)
                out.append(chunk)
                if total > limits.max_decoded_bytes:
                    raise _NotMetricStreamData(
                        f"not read: over {size_text(limits.max_decoded_bytes)} once "
                        "decompressed (no metric stream object is that large)"
                    )
                rest = inflater.unconsumed_tail
                if inflater.eof:
                    break
        except zlib.error as error:
            raise _NotMetricStreamData(f"not read: a corrupt gzip stream ({error})") from None
        if not inflater.eof:
            raise _NotMetricStreamData("not read: the gzip stream ends early (a truncated object)")
        rest = inflater.unused_data
    return b"".join(out)


def _json_points(data: bytes, limits: StreamLimits) -> Decoded:
    """JSON lines -> data points: vectorized when every line is a data point (``fast_json``),
    line by line otherwise, which names the first bad line."""
    fast = fast_json.json_points(
        data, limits.max_line_bytes, limits.max_object_points, dict(SERIES_DIMENSION), SQS
    )
    if fast is not None:
        table, lines = fast
        return Decoded(table.select(POINT_SCHEMA.names).cast(POINT_SCHEMA), lines)
    return _json_lines(data, limits)


def _json_lines(data: bytes, limits: StreamLimits) -> Decoded:
    columns: tuple[list[Any], ...] = tuple([] for _ in POINT_SCHEMA.names)
    data_points = malformed = 0
    first: str | None = None
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            if len(line) > limits.max_line_bytes:
                raise _NotMetricStreamData(f"longer than {size_text(limits.max_line_bytes)}")
            if data_points >= limits.max_object_points:
                raise _NotMetricStreamData(f"more than {limits.max_object_points:,} data points")
            point = _point(_json_line(line))
        except _NotMetricStreamData as error:
            malformed += 1
            first = first or f"line {number}: {error}"
            continue
        data_points += 1
        if point is not None:
            for column, value in zip(columns, point, strict=True):
                column.append(value)
    table = pa.table(list(columns), schema=POINT_SCHEMA)
    problem = None
    if malformed:
        kind = "line is not a metric stream data point"
        if malformed > 1:
            kind = "lines are not metric stream data points"
        problem = f"{malformed:,} {kind} (first: {first})"
    return Decoded(table, data_points, malformed, problem)


def _json_line(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise _NotMetricStreamData(f"not JSON ({str(error)[:80]})") from None


def _text(record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if not isinstance(value, str):
        raise _NotMetricStreamData(f"no text {field!r}")
    return value


def _number(values: dict[str, Any], field: str) -> float:
    value = values.get(field)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _NotMetricStreamData(f"no number 'value.{field}'")
    try:
        return float(value)
    except OverflowError:  # an integer past the largest double
        raise _NotMetricStreamData(f"no number 'value.{field}'") from None


# The range of the ``timestamp`` column (int64): an integer outside it is not epoch milliseconds.
_INT64: Final = -(2**63)


def _point(record: Any) -> tuple[Any, ...] | None:
    """A JSON data point -> its row of ``POINT_SCHEMA``, or None when the audit does not keep
    it (another namespace, another dimension set); _NotMetricStreamData when it is not a data point."""
    if not isinstance(record, dict):
        raise _NotMetricStreamData("not a JSON object")
    account, region = _text(record, "account_id"), _text(record, "region")
    namespace, metric = _text(record, "namespace"), _text(record, "metric_name")
    timestamp, dimensions, values = (
        record.get("timestamp"),
        record.get("dimensions"),
        record.get("value"),
    )
    if (
        isinstance(timestamp, bool)
        or not isinstance(timestamp, int)
        or not _INT64 <= timestamp < -_INT64
    ):
        raise _NotMetricStreamData("no integer 'timestamp' (epoch milliseconds)")
    if not isinstance(dimensions, dict) or not all(isinstance(v, str) for v in dimensions.values()):
        raise _NotMetricStreamData("no 'dimensions' object of text values")
    if not isinstance(values, dict):
        raise _NotMetricStreamData("no 'value' object")
    maximum, total, samples = (_number(values, f) for f in ("max", "sum", "count"))
    wanted = SERIES_DIMENSION.get(namespace)
    if wanted is None:
        return None
    if len(dimensions) == 1 and wanted in dimensions:
        dimension, name = wanted, dimensions[wanted]
    elif namespace == SQS:
        dimension = name = ""  # coverage only
    else:
        return None
    return (account, region, namespace, metric, dimension, name, maximum, total, samples, timestamp)


# The Parquet columns Firehose's format conversion writes (the Glue table of the JSON format),
# as this module reads them.
_PARQUET_TEXT: Final = ("account_id", "region", "namespace", "metric_name")


def _parquet_points(data: bytes, limits: StreamLimits) -> Decoded:
    try:
        source = pq.ParquetFile(io.BytesIO(data))
        rows = source.metadata.num_rows
        if rows > limits.max_object_points:
            raise _NotMetricStreamData(
                f"not read: {rows:,} rows, over {limits.max_object_points:,}"
            )
        columns = [*_PARQUET_TEXT, "dimensions", "timestamp", "value"]
        missing = [c for c in columns if c not in source.schema_arrow.names]
        if missing:
            raise _NotMetricStreamData(f"not metric stream Parquet: no column {', '.join(missing)}")
        table = source.read(columns=columns)
    except (pa.ArrowException, OSError) as error:
        raise _NotMetricStreamData(f"not readable Parquet ({str(error)[:120]})") from None
    try:
        return _parquet_rows(table)
    except (pa.ArrowException, KeyError, TypeError) as error:
        raise _NotMetricStreamData(f"not metric stream Parquet ({str(error)[:120]})") from None


def _parquet_rows(table: pa.Table) -> Decoded:
    """Firehose's Parquet rows -> kept points, vectorized: the same choices as ``_point``."""
    if not table.num_rows:
        return Decoded(empty_points(), 0)
    # One chunk per column, as arrays: the map's offsets are read below.
    column = {name: table.column(name).combine_chunks() for name in table.column_names}
    dimensions = column["dimensions"]
    if not pa.types.is_map(dimensions.type):
        raise _NotMetricStreamData("'dimensions' is not a map")
    fields = {f: pc.struct_field(column["value"], f) for f in ("max", "sum", "count")}
    parts = {
        **{c: column[c].cast(pa.string()) for c in _PARQUET_TEXT},
        "timestamp": column["timestamp"].cast(pa.int64()),
        **{f: v.cast(pa.float64()) for f, v in fields.items()},
    }
    valid = pc.is_valid(dimensions)
    for part in parts.values():
        valid = pc.and_(valid, pc.is_valid(part))
    malformed = table.num_rows - pc.sum(valid).as_py()
    parts = {k: pc.filter(v, valid) for k, v in parts.items()}
    entries = pc.filter(dimensions, valid)
    keys = pa.ListArray.from_arrays(entries.offsets, entries.keys)
    items = pa.ListArray.from_arrays(entries.offsets, entries.items)
    single = pc.equal(pc.list_value_length(keys), 1)
    only_key = pc.if_else(single, pc.list_element(pc.if_else(single, keys, None), 0), None)
    only_value = pc.if_else(single, pc.list_element(pc.if_else(single, items, None), 0), None)
    namespace = parts["namespace"]
    sqs, lam = pc.equal(namespace, SQS), pc.equal(namespace, LAMBDA)
    named = pc.fill_null(
        pc.or_(
            pc.and_(sqs, pc.equal(only_key, "QueueName")),
            pc.and_(lam, pc.equal(only_key, "FunctionName")),
        ),
        False,
    )
    keep = pc.or_(sqs, named)
    dimension = pc.if_else(named, only_key, "")
    name = pc.if_else(named, only_value.cast(pa.string()), "")
    points = pa.table(
        [
            parts["account_id"],
            parts["region"],
            namespace,
            parts["metric_name"],
            dimension,
            name,
            parts["max"],
            parts["sum"],
            parts["count"],
            parts["timestamp"],
        ],
        schema=POINT_SCHEMA,
    ).filter(keep)
    problem = None
    if malformed:
        problem = f"{malformed:,} rows are not metric stream data points (a required field is null)"
    return Decoded(points, table.num_rows - malformed, malformed, problem)
