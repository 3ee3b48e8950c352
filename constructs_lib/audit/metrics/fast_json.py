"""JSON lines decoded by DuckDB, vectorized: the fast path of ``decode._json_points``.

The line-by-line path (``json.loads`` per line) is exact and names the first bad line, but it
costs about 10 microseconds a data point. Here DuckDB (embedded, one wheel; imported lazily)
reads the decompressed lines, and every value is checked against what the line path accepts
(text fields are JSON strings, ``timestamp`` an integer, ``value.max/sum/count`` numbers,
``dimensions`` an object of strings). The answer is all or nothing: when every line passes,
the object's points are returned; when any line, any byte or DuckDB itself disagrees (a bad
line, a line over the cap, bytes this path does not judge exactly), ``None`` sends the whole
object to the line path, which gives the same points and today's problem text. So the fast
path can only ever be slower to give an answer, never give another one.

What this path leaves to the line path, before DuckDB sees the bytes: a carriage return, a
control character, a blank line, a line that does not start with ``{`` and end with ``}``, and
more brackets than the objects' own (``json.loads`` stops at Python's recursion limit; DuckDB
does not).
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

# Bytes that a data point's line never holds raw (JSON escapes them inside strings): every
# control character but the newline that ends a line.
_CONTROL: Final = bytes(b for b in range(0x20) if b != ord("\n"))
# A data point has three objects (the line, "dimensions", "value"). Brackets beyond those, over
# the whole object, bound the nesting any one line can have: far under Python's recursion limit
# (1,000), where ``json.loads`` gives up and DuckDB would not.
_BRACKETS_PER_POINT: Final = 3
_BRACKET_SLACK: Final = 200
# Below this many decompressed bytes the line path is faster: a DuckDB query costs about 50 ms
# whatever its size, the line path about 120 ns a byte, this path about 30 (measured on the
# bench corpus, an object of 400 points (120 KB) and of 100,000 (33 MB), 2 cores): they meet
# near half a MiB.
MIN_BYTES: Final = 2**20

_COLUMNS: Final = (
    "{'account_id': 'JSON', 'region': 'JSON', 'namespace': 'JSON', 'metric_name': 'JSON', "
    "'dimensions': 'MAP(VARCHAR, JSON)', 'timestamp': 'JSON', "
    "'value': 'STRUCT(max JSON, sum JSON, count JSON)'}"
)
_TEXT: Final = ("account_id", "region", "namespace", "metric_name")
_QUERY: Final = """
WITH raw AS (
    SELECT {per_file}* FROM read_json({path}, format = 'newline_delimited', columns = {columns},
        records = true{options})
), typed AS (
    -- Numbers cast from their JSON text: a cast of text takes only a number's spelling, where
    -- a cast of JSON takes "5" and true as numbers too. Only an integer's text is digits.
    SELECT {per_file}account_id, region, namespace, metric_name, dimensions AS dims,
        TRY_CAST(timestamp::VARCHAR AS BIGINT) AS timestamp,
        TRY_CAST(value.max::VARCHAR AS DOUBLE) AS maximum,
        TRY_CAST(value.sum::VARCHAR AS DOUBLE) AS total,
        TRY_CAST(value.count::VARCHAR AS DOUBLE) AS samples,
        {text_checks} AND regexp_full_match(timestamp, '-?[0-9]+')
        AND CASE WHEN cardinality(dimensions) = 1
            THEN coalesce(left(map_values(dimensions)[1], 1) = '"', false)
            ELSE coalesce(list_bool_and(list_transform(map_values(dimensions),
                lambda v: coalesce(left(v, 1) = '"', false))), true) END AS ok
    FROM raw
), named AS (
    SELECT *, coalesce(cardinality(dims) = 1 AND ({named}), false) AS named FROM typed
)
SELECT {per_file}{account} AS account, {region} AS region, {namespace} AS namespace,
    {metric} AS metric, CASE WHEN named THEN map_keys(dims)[1] ELSE '' END AS dimension_name,
    CASE WHEN named THEN {name} ELSE {empty} END AS name,
    maximum, total, samples, timestamp,
    coalesce(ok AND dims IS NOT NULL AND timestamp IS NOT NULL AND maximum IS NOT NULL
        AND total IS NOT NULL AND samples IS NOT NULL, false) AS ok,
    coalesce(named OR namespace = '"{coverage}"', false) AS keep
FROM named
"""
# DuckDB's reader writes a JSON-typed value back in one spelling (its own, minified, escapes
# only where JSON needs them: ``"AWS\/SQS"`` and ``"\u0041WS/SQS"`` both read as
# ``"AWS/SQS"``), so a text field's JSON is compared and grouped as its text would be, and
# decoding it (``->> '$'``) can wait until after a grouping, once per group instead of per row.
_DECODE: Final = "{0} ->> '$'"
_KEEP_ENCODED: Final = "{0}::VARCHAR"
_TEXT_FIELDS: Final = (
    ("account", "account_id"),
    ("region", "region"),
    ("namespace", "namespace"),
    ("metric", "metric_name"),
    ("name", "map_values(dims)[1]"),
)


def decoding() -> str:
    """The ``SELECT *`` modifier that decodes the text fields of ``_query(..., encoded=True)``'s
    rows, in a query over them that has grouped them."""
    decoded = ", ".join(f"{_DECODE.format(column)} AS {column}" for column, _ in _TEXT_FIELDS)
    return f" REPLACE ({decoded})"


_local = threading.local()


def quiet(connection: Any) -> Any:
    """``connection`` without the progress bar DuckDB draws on stderr for a query longer than
    2 s: queue-audit's stderr says only what the audit found and why. (A setting of the
    connection, which ``duckdb.connect``'s config does not take.)"""
    connection.execute("SET enable_progress_bar = false")
    return connection


def available() -> bool:
    """Whether DuckDB can be imported (the ``audit`` extra installs it)."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def connection() -> Any:
    """One DuckDB connection per thread, one DuckDB thread each: the caller's workers are the
    parallelism, so two workers are two cores, as they are for the line path."""
    connection = getattr(_local, "connection", None)
    if connection is None:
        import duckdb

        connection = quiet(duckdb.connect(config={"threads": 1}))
        _local.connection = connection
    return connection


def _lines_judged_here(data: bytes, max_line_bytes: int, max_points: int) -> int | None:
    """The number of lines when every line is one this path judges exactly, else None (a line
    over the cap too: DuckDB's own object size cap does not hold under its read buffer)."""
    text = data[:-1] if data.endswith(b"\n") else data
    if not text or not (text.startswith(b"{") and text.endswith(b"}")):
        return None
    breaks = text.count(b"\n")
    if text.count(b"}\n{") != breaks or len(text.translate(None, _CONTROL)) != len(text):
        return None  # a blank line, a line that is not one object, a raw control character
    lines = breaks + 1
    if lines > max_points or max(map(len, text.split(b"\n"))) > max_line_bytes:
        return None
    if text.count(b"{") + text.count(b"[") > lines * _BRACKETS_PER_POINT + _BRACKET_SLACK:
        return None
    return lines


def _query(
    path: str,
    series: dict[str, str],
    coverage: str,
    options: str = "",
    per_file: bool = False,
    encoded: bool = False,
) -> str:
    """The checked rows of ``path`` (a quoted path, or a list parameter with ``options``
    giving ``read_json`` the file names: then each row has its ``file_index``, the file's place
    in that list). ``encoded``: the text fields (``account``, ``region``, ``namespace``,
    ``metric``, ``name``) as their JSON, for a query that groups them before it decodes them
    (``decoding``)."""
    named = " OR ".join(
        f"(namespace = '\"{ns}\"' AND map_contains(dims, '{dim}'))" for ns, dim in series.items()
    )
    text = _KEEP_ENCODED if encoded else _DECODE
    return _QUERY.format(
        path=path,
        options=options,
        per_file="file_index, " if per_file else "",
        columns=_COLUMNS,
        text_checks=" AND ".join(f"left({f}, 1) = '\"'" for f in _TEXT),
        named=named,
        coverage=coverage,
        empty="'\"\"'" if encoded else "''",
        **{column: text.format(field) for column, field in _TEXT_FIELDS},
    )


def json_points(
    data: bytes, max_line_bytes: int, max_points: int, series: dict[str, str], coverage: str
) -> tuple[pa.Table, int] | None:
    """Decompressed JSON lines -> (the kept data points, the number of data points), or None
    for the line path to decide. Kept: a series of one dimension, the one ``series`` names for
    its namespace (its name and value in ``dimension_name`` and ``name``), and any other point
    of the ``coverage`` namespace (both empty). None too for an object under ``MIN_BYTES``."""
    if len(data) < MIN_BYTES:
        return None
    lines = _lines_judged_here(data, max_line_bytes, max_points)
    if lines is None or not available():
        return None
    descriptor, path = tempfile.mkstemp(suffix=".json")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        table = _read(_query("'" + path.replace("'", "''") + "'", series, coverage))
    finally:
        os.unlink(path)
    if table is None or table.num_rows != lines:
        return None
    if not pc.all(table.column("ok"), skip_nulls=False, min_count=0).as_py():
        return None
    return table.filter(table.column("keep")), lines


def _read(query: str) -> pa.Table | None:
    import duckdb

    try:
        result = connection().sql(query).arrow()
        table: pa.Table = result.read_all() if hasattr(result, "read_all") else result
    except duckdb.Error:
        return None
    return table
