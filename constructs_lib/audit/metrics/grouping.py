"""Group-by over Arrow tables for the local engine's fold: DuckDB when it is installed (several
times faster than pyarrow's on the fleet's hundreds of thousands of series, in a measurement
on the bench corpus: ``bench/metrics_bench.py``), pyarrow's otherwise, with the same result:
one row per distinct key, the keys first, then ``{column}_{function}`` per aggregate, then each
edge (``Edge``) by its name. The order of the rows is not part of the result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import pyarrow as pa

from constructs_lib.audit.metrics import fast_json

# Below this many rows pyarrow's group-by is faster: a DuckDB query costs milliseconds whatever
# its size (measured: 280 rows, 5 ms against pyarrow's 2; 70,000 rows, 0.1 s against 0.14).
MIN_ROWS: Final = 50_000


class Edge(NamedTuple):
    """A group's ``value`` at its earliest ``time`` (``earliest``) or at its latest, the larger
    value where several rows share that time: a gauge's reading at the start or end of a window
    (``SeriesRow.opening``, ``closing``). Mergeable: the edge of parts' edges, by the parts'
    earliest or latest time, is the edge of the whole."""

    name: str
    value: str
    time: str
    earliest: bool


# The figures of a group of data points, from which column of the points, by which function,
# then the gauge's reading at the first and at the last data point (``SeriesRow.opening``).
FIGURES: Final = (
    "maximum_max",
    "total_sum",
    "samples_sum",
    "timestamp_min",
    "timestamp_max",
    "opening",
    "closing",
)

# A series' readings (``SeriesRow.opening``, ``closing``): of its data points, and of figures
# of parts of them (each part's readings at its first and last timestamp).
POINT_READINGS: Final = (
    Edge("opening", "maximum", "timestamp", earliest=True),
    Edge("closing", "maximum", "timestamp", earliest=False),
)
FIGURE_READINGS: Final = (
    Edge("opening", "opening", "timestamp_min", earliest=True),
    Edge("closing", "closing", "timestamp_max", earliest=False),
)


def group(
    table: pa.Table,
    keys: Sequence[str],
    figures: Sequence[tuple[str, str]],
    edges: Sequence[Edge] = (),
) -> pa.Table:
    """``table`` grouped by ``keys`` with ``figures`` ((column, function) with function one of
    ``min``, ``max``, ``sum``) and ``edges``, in the same pass over the rows."""
    if table.num_rows < MIN_ROWS or not fast_json.available():
        return _arrow_group(table, keys, figures, edges)
    selected = ", ".join(
        [
            *(f'"{k}"' for k in keys),
            *(f'{f}("{c}") AS "{c}_{f}"' for c, f in figures),
            *(f'{edge_sql(e)} AS "{e.name}"' for e in edges),
        ]
    )
    key_list = ", ".join(f'"{k}"' for k in keys)
    query = f"SELECT {selected} FROM grouped_points GROUP BY {key_list}"
    return query_table(table, "grouped_points", query).cast(
        pa.schema(
            [
                *(table.schema.field(k) for k in keys),
                *(pa.field(f"{c}_{f}", table.schema.field(c).type) for c, f in figures),
                *(pa.field(e.name, table.schema.field(e.value).type) for e in edges),
            ]
        )
    )


def edge_sql(edge: Edge, where: str = "") -> str:
    """DuckDB's ``edge``: the value whose (time, value) is the largest, the time reversed for the
    earliest, so a tie on the time goes to the larger value, in one pass."""
    # -1 - t reverses the order of int64 times as -t does, without overflow at the smallest.
    time = f'-1 - "{edge.time}"' if edge.earliest else f'"{edge.time}"'
    value = f'"{edge.value}"'
    key = _PAIR_KEY.format(time=time, value=value, bits=f"({value})::BIT::BIGINT::HUGEINT")
    return f"arg_max({value}, {key}){where}"


# (int64 time, double value) as one HUGEINT that orders as the pair does: the time times 2**64,
# plus the value's IEEE 754 bits moved into [0, 2**64) so that they order as the numbers do
# (a negative number's bits reversed below a positive one's; -0.0 equal to 0.0; every NaN above
# infinity, as DuckDB orders them). arg_max by a HUGEINT takes DuckDB's fixed-size path, where a
# struct key goes through generic sort keys (the readings, docs/performance.md).
_PAIR_KEY: Final = (
    "({time})::HUGEINT * 18446744073709551616 + CASE WHEN isnan({value}) THEN "
    "18446744073709551615 WHEN {bits} >= 0 THEN {bits} + 9223372036854775808 ELSE -{bits} END"
)


def _arrow_group(
    table: pa.Table, keys: Sequence[str], figures: Sequence[tuple[str, str]], edges: Sequence[Edge]
) -> pa.Table:
    """pyarrow's group-by (small tables, or no DuckDB): it has no arg-max, so each edge is the
    first value per group of the rows sorted by its time and then by value, largest first; the
    groups of each are aligned by their keys, which are distinct."""
    grouped = table.group_by(list(keys)).aggregate(list(figures))
    if not edges:
        return grouped
    order = [(k, "ascending") for k in keys]
    grouped = grouped.sort_by(order)
    for edge in edges:
        ordered = table.sort_by(
            [
                (edge.time, "ascending" if edge.earliest else "descending"),
                (edge.value, "descending"),
            ]
        )
        firsts = ordered.group_by(list(keys), use_threads=False).aggregate([(edge.value, "first")])
        value = firsts.sort_by(order).column(f"{edge.value}_first")
        grouped = grouped.append_column(edge.name, value)
    return grouped


def sort(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """``table`` sorted by ``keys``, text by its bytes: by DuckDB when it is installed (faster
    than pyarrow's on a fleet's series by five text keys), pyarrow's otherwise."""
    if table.num_rows < MIN_ROWS or not fast_json.available():
        return table.sort_by([(k, "ascending") for k in keys])
    # DuckDB's default collation compares text by its bytes, as pyarrow does.
    order = ", ".join(f'"{k}"' for k in keys)
    return query_table(table, "unsorted", f"SELECT * FROM unsorted ORDER BY {order}")


def query_table(table: pa.Table, name: str, query: str) -> pa.Table:
    """``query``'s result as an Arrow table; DuckDB reads ``table`` in place, by ``name``."""
    connection = fast_json.connection()
    connection.register(name, table)
    try:
        result = connection.sql(query).arrow()
        answer: pa.Table = result.read_all() if hasattr(result, "read_all") else result
    finally:
        connection.unregister(name)
    return answer


def columns(table: pa.Table, names: tuple[str, ...]) -> list[list[Any]]:
    """Columns as Python lists: a column at a time, several times faster than row dicts."""
    return [table.column(name).to_pylist() for name in names]
