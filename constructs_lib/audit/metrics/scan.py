"""Local objects read by DuckDB in one scan per format: the local engine's fast path.

One query reads every listed local JSON object (gzip or plain) or every eligible Parquet object
(``columnar``), checks each row as the per-object path would (``fast_json``'s typed checks for
JSON), and groups in the same pass, by GROUPING SETS: per file (rows, rows that are not data
points, the newest kept data point) and per series, dimension set and day (max, sums, first and
last timestamp of the kept data points). No window in the scan: once the newest data point is
known, days wholly inside the window are kept, days wholly before it dropped, and only the day
holding the window's start, when a series straddles it, is counted again, over the objects
whose kept points reach into that day after the start. Memory follows the series times the
days, never the data points.

What goes to the per-object path instead (``stream.read_points``), which names its problem:
an object over the size cap, a gzip whose trailer (ISIZE, the last member's size modulo 4 GiB)
states more than the decompressed cap, a name DuckDB would expand as a glob, a URL, anything
but a regular file; every file a query fails on (DuckDB names it: a line that is not JSON, a
truncated gzip, a line over the line cap), up to ``MAX_RETRIES`` times, then every file left; a
file with more rows than an object may have. A JSON file with bad lines keeps its good points
in the figures; the per-object path is run on it for its problem text and counts, and when its
count of bad lines differs from the scan's, the file leaves the scan. DuckDB streams the
decompression: a gzip bomb whose trailer lies costs the scan time, not memory (its lines are
still bounded by the line cap).

Known differences from the per-object path, not yet closed (tests mark them): the scan ignores
fields it was not asked for however deeply nested (``json.loads`` gives up past Python's
recursion limit), DuckDB's ``maximum_object_size`` does not hold for a line inside its read
buffer (a line just over the line cap is read), and a NaN ``max`` gives another series maximum.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from constructs_lib.audit.metrics import columnar, fast_json, grouping
from constructs_lib.audit.metrics.decode import SERIES_DIMENSION, SQS, StreamLimits
from constructs_lib.audit.metrics.request import DAY_MS
from constructs_lib.audit.metrics.stream import StreamObject, read_points

# Queries rerun without the file DuckDB named in its error, at most this many times: a fleet
# has a handful of broken objects; past that, every file left is read one at a time.
MAX_RETRIES: Final = 4
_GZIP: Final = b"\x1f\x8b"
_ISIZE: Final = 4  # gzip's trailer ends with the member's size modulo 2**32 (RFC 1952)
_KEYS: Final = ("account", "region", "namespace", "metric", "dimension_name", "name")
_OPENING, _CLOSING = grouping.POINT_READINGS
_FIGURES: Final = f"""max(maximum) AS maximum_max, sum(total) AS total_sum,
    sum(samples) AS samples_sum, min(timestamp) AS timestamp_min, max(timestamp) AS timestamp_max,
    {grouping.edge_sql(_OPENING)} AS opening, {grouping.edge_sql(_CLOSING)} AS closing"""
# Whether a row is a data point (``ok``) and one the audit keeps (``keep``) are keys of both
# sets, not filters: per file, up to four groups to add up; per series, the kept groups are the
# series' figures. Nulling the other rows' keys and a FILTER on each aggregate cost a third of
# the Parquet scan (docs/performance.md); the other rows' groups follow their series too.
_SCAN: Final = f"""
SELECT *{{decode}} FROM (
    SELECT grouping(file_index) AS per_series, file_index, ok, keep, count(*) AS rows,
        {", ".join(_KEYS)}, timestamp // {DAY_MS} AS day, {_FIGURES}
    FROM ({{rows}})
    GROUP BY GROUPING SETS ((file_index, ok, keep), (ok, keep, {", ".join(_KEYS)}, day))
)
"""
_RECOUNT: Final = f"""
SELECT *{{decode}} FROM (
    SELECT {", ".join(_KEYS)}, {_FIGURES} FROM ({{rows}})
    WHERE ok AND keep AND timestamp > $start AND timestamp // {DAY_MS} = $day GROUP BY ALL
)
"""


class _Rows(NamedTuple):
    """A query of the checked rows of the files ``$files``; ``json``: JSON lines, whose text
    keys are grouped as their JSON and decoded in the grouped result."""

    sql: str
    json: bool

    def query(self, template: str) -> str:
        return template.format(rows=self.sql, decode=fast_json.decoding() if self.json else "")


@dataclass
class Scan:
    """What the scans found: per file its data points, problem and first and last kept data
    point (None without one), the newest kept data point, the figures per series and day, and
    the files each query scanned."""

    data_points: dict[str, int] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    spans: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    days: list[pa.Table] = field(default_factory=list)
    scanned: dict[_Rows, list[StreamObject]] = field(default_factory=dict)

    @property
    def newest(self) -> int | None:
        return max((last for _first, last in self.spans.values() if last is not None), default=None)


class Kinds(NamedTuple):
    """The objects the scan reads, by how DuckDB reads them, each in the listing's order."""

    parquet: list[StreamObject]
    gzip: list[StreamObject]
    plain: list[StreamObject]


def kinds(ordered: list[StreamObject], limits: StreamLimits) -> Kinds:
    """Which objects the scan reads, and as what, from one open of each: its first bytes, then
    a Parquet object's footer (``columnar.footer_eligible``) or a gzip object's trailer. The
    others (and all of them without DuckDB) are left to the per-object path."""
    found = Kinds([], [], [])
    if not fast_json.available():
        return found
    verdicts = columnar.Verdicts()
    for item in ordered:
        kind = _kind(item, limits, verdicts)
        if kind is not None:
            getattr(found, kind).append(item)
    return found


def _kind(item: StreamObject, limits: StreamLimits, verdicts: columnar.Verdicts) -> str | None:
    path = item.location
    if "://" in path or columnar.GLOB & set(path) or item.size > limits.max_object_bytes:
        return None
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limits.max_object_bytes:
            return None
        with pa.OSFile(path) as source:
            head = source.read(len(columnar.MAGIC))
            if head == columnar.MAGIC:
                eligible = columnar.footer_eligible(source, limits.max_object_points, verdicts)
                return "parquet" if eligible else None
            if path.endswith(".parquet"):
                return None
            if head[: len(_GZIP)] != _GZIP:
                return "plain"
            if status.st_size < 2 * len(_GZIP) + _ISIZE:
                return None
            source.seek(status.st_size - _ISIZE)
            decoded = int.from_bytes(source.read(_ISIZE), "little")
            return "gzip" if decoded <= limits.max_decoded_bytes else None
    except (OSError, pa.ArrowException):
        return None


def _json_rows(gzip: bool, limits: StreamLimits) -> _Rows:
    """``fast_json``'s checked rows over the files ``$files``, each with its ``file_index``."""
    options = (
        f", compression = '{'gzip' if gzip else 'none'}', "
        f"maximum_object_size = {limits.max_line_bytes}"
    )
    series = dict(SERIES_DIMENSION)
    sql = fast_json._query("$files", series, SQS, options, per_file=True, encoded=True)
    return _Rows(sql, json=True)


_PARQUET_ROWS: Final = _Rows(f"SELECT *, valid AS ok FROM ({columnar._ROWS})", json=False)


def _connection(workers: int) -> Any:
    import duckdb

    return fast_json.quiet(duckdb.connect(config={"threads": max(1, workers)}))


def _run(rows: _Rows, files: list[str], workers: int) -> pa.Table:
    result = _connection(workers).sql(rows.query(_SCAN), params={"files": files}).arrow()
    table: pa.Table = result.read_all() if hasattr(result, "read_all") else result
    return table


def _named(error: Exception, files: list[str]) -> list[str]:
    text = str(error)
    return [f for f in files if f in text]


def _scan_group(
    rows: _Rows, items: list[StreamObject], workers: int, found: Scan, max_rows: int
) -> list[StreamObject]:
    """Scan ``items`` into ``found``; the objects the scan leaves to the per-object path."""
    import duckdb

    left: list[StreamObject] = []
    for _ in range(MAX_RETRIES + 1):
        if not items:
            return left
        files = [o.location for o in items]
        try:
            table = _run(rows, files, workers)
        except duckdb.Error as error:
            named = set(_named(error, files))
            if not named:
                break
            left += [o for o in items if o.location in named]
            items = [o for o in items if o.location not in named]
            continue
        per_file = _per_file(table, files)
        over = {
            f
            for f, n in zip(*grouping.columns(per_file, ("filename", "rows_sum")), strict=True)
            if n > max_rows
        }
        if over:
            left += [o for o in items if o.location in over]
            items = [o for o in items if o.location not in over]
            continue
        _record(found, table, per_file, rows, items)
        return left
    return left + items


def _per_file(table: pa.Table, files: list[str]) -> pa.Table:
    """The scan's groups per file (its place in ``files``), ``ok`` and ``keep`` -> per file
    its name, rows, the rows that are not data points, and the first and last timestamp of the
    data points it keeps (null without one)."""
    groups = table.filter(pc.equal(table.column("per_series"), 0))
    ok, rows = groups.column("ok"), groups.column("rows")
    kept = pc.and_(ok, groups.column("keep"))
    no_time = pa.scalar(None, pa.int64())
    columns = {
        "filename": pa.array(files).take(groups.column("file_index")),
        "rows": rows,
        "malformed": pc.if_else(ok, 0, rows),
        "low": pc.if_else(kept, groups.column("timestamp_min"), no_time),
        "top": pc.if_else(kept, groups.column("timestamp_max"), no_time),
    }
    functions = (("rows", "sum"), ("malformed", "sum"), ("low", "min"), ("top", "max"))
    return pa.table(columns).group_by("filename").aggregate(list(functions))


def _record(
    found: Scan, table: pa.Table, per_file: pa.Table, rows: _Rows, items: list[Any]
) -> None:
    names = ("filename", "rows_sum", "malformed_sum", "low_min", "top_max")
    for name, count, malformed, low, top in zip(*grouping.columns(per_file, names), strict=True):
        found.data_points[name] = count - malformed
        found.spans[name] = (low, top)
        if malformed:
            found.problems[name] = columnar.MALFORMED_ROWS.format(malformed)
    kept = pc.and_(table.column("ok"), table.column("keep"))
    days = table.filter(pc.and_(pc.equal(table.column("per_series"), 1), kept))
    found.days.append(days.select([*_KEYS, "day", *_FIGURE_NAMES]))
    found.scanned[rows] = items


_FIGURE_NAMES: Final = grouping.FIGURES


def _settle_json_problems(found: Scan, limits: StreamLimits) -> list[StreamObject]:
    """The per-object path's problem and counts for JSON files with bad lines; the files whose
    count of bad lines is not the scan's (they leave the scan)."""
    disagree: list[StreamObject] = []
    for rows, items in found.scanned.items():
        if not rows.json:
            continue
        for item in items:
            if item.location not in found.problems:
                continue
            decoded = read_points(item.location, item.size, limits)
            expected = found.data_points[item.location]
            if decoded.data_points != expected or decoded.problem is None:
                disagree.append(item)
                continue
            found.problems[item.location] = decoded.problem
    return disagree


def scan(
    ordered: list[StreamObject], limits: StreamLimits, workers: int
) -> tuple[Scan, list[StreamObject]]:
    """(what the scans found, the objects left to the per-object path, in ``ordered``'s
    order). Nothing is scanned without DuckDB installed."""
    found = Scan()
    if not fast_json.available():
        return found, list(ordered)
    chosen = kinds(ordered, limits)
    left: list[StreamObject] = []
    for rows, items in (
        (_PARQUET_ROWS, chosen.parquet),
        (_json_rows(True, limits), chosen.gzip),
        (_json_rows(False, limits), chosen.plain),
    ):
        left += _scan_group(rows, items, workers, found, limits.max_object_points)
    disagree = _settle_json_problems(found, limits)
    if disagree:
        return scan_without(ordered, disagree, limits, workers)
    done = {o.location for items in found.scanned.values() for o in items}
    return found, [o for o in ordered if o.location not in done]


def scan_without(
    ordered: list[StreamObject], out: list[StreamObject], limits: StreamLimits, workers: int
) -> tuple[Scan, list[StreamObject]]:
    """``scan`` of all but ``out``, which go to the per-object path."""
    removed = {o.location for o in out}
    found, left = scan([o for o in ordered if o.location not in removed], limits, workers)
    leave = {o.location for o in [*left, *out]}
    return found, [o for o in ordered if o.location in leave]


def figures(found: Scan, start: int | None, workers: int) -> pa.Table:
    """The figures per series and dimension set of the scanned points after ``start``: days
    wholly after it kept, days at or before it dropped, the day holding it counted again."""
    days = pa.concat_tables(found.days) if found.days else None
    if days is None or not days.num_rows:
        return _empty()
    if start is not None:
        low, high = days.column("timestamp_min"), days.column("timestamp_max")
        straddle = pc.and_(pc.less_equal(low, start), pc.greater(high, start))
        if pc.any(straddle).as_py():
            day = pc.min(pc.filter(days.column("day"), straddle)).as_py()
            inside = pc.and_(pc.greater(low, start), pc.not_equal(days.column("day"), day))
            kept = days.filter(inside).select([*_KEYS, *_FIGURE_NAMES])
            return _merge([kept, *_recount(found, start, day, workers)])
        days = days.filter(pc.greater(low, start))
    return _merge([days.select([*_KEYS, *_FIGURE_NAMES])])


def _recount(found: Scan, start: int, day: int, workers: int) -> list[pa.Table]:
    """The figures of the points after ``start`` in ``day``, from the objects whose kept points
    span a moment of it after ``start`` (the scan's spans: exact, where a delivery hour is only
    near its points)."""
    day_end = (day + 1) * DAY_MS
    parts: list[pa.Table] = []
    for rows, items in found.scanned.items():
        holding = [o.location for o in items if _holds(found.spans.get(o.location), start, day_end)]
        if not holding:
            continue
        query = rows.query(_RECOUNT)
        params = {"files": holding, "start": start, "day": day}
        result = _connection(workers).sql(query, params=params).arrow()
        parts.append(result.read_all() if hasattr(result, "read_all") else result)
    return parts


def _holds(span: tuple[int | None, int | None] | None, start: int, day_end: int) -> bool:
    first, last = span or (None, None)  # an object without rows has no span
    return first is not None and last is not None and first < day_end and last > start


def _empty() -> pa.Table:
    text = [pa.field(k, pa.string()) for k in _KEYS]
    numbers = [pa.field(n, pa.float64()) for n in _FIGURE_NAMES[:3]]
    times = [pa.field(n, pa.int64()) for n in _FIGURE_NAMES[3:5]]
    readings = [pa.field(n, pa.float64()) for n in _FIGURE_NAMES[5:]]
    return pa.schema([*text, *numbers, *times, *readings]).empty_table()


def _merge(parts: list[pa.Table]) -> pa.Table:
    """Day figures -> series figures, by DuckDB as the scan made them (its ``max`` takes a NaN
    as the largest number, as the per-object path's DuckDB group-by does)."""
    schema = _empty().schema
    table = pa.concat_tables([p.select(schema.names).cast(schema) for p in parts])
    functions = ("max", "sum", "sum", "min", "max")
    figures = ", ".join(
        [
            *(f"{f}({n}) AS {n}" for n, f in zip(_FIGURE_NAMES[:5], functions, strict=True)),
            *(f"{grouping.edge_sql(e)} AS {e.name}" for e in grouping.FIGURE_READINGS),
        ]
    )
    query = f"SELECT {', '.join(_KEYS)}, {figures} FROM day_figures GROUP BY ALL"
    merged = grouping.query_table(table, "day_figures", query)
    return merged.select(schema.names).cast(schema)
