"""Group-by over Arrow tables for the local engine's fold: DuckDB when it is installed (several
times faster than pyarrow's on the fleet's hundreds of thousands of series, in a measurement
on the bench corpus: ``bench/metrics_bench.py``), pyarrow's otherwise, with the same result:
one row per distinct key, the keys first, then ``{column}_{function}`` per aggregate. The order
of the rows is not part of the result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa

from constructs_lib.audit.metrics import fast_json

# Below this many rows pyarrow's group-by is faster: a DuckDB query costs milliseconds whatever
# its size (measured: 280 rows, 5 ms against pyarrow's 2; 70,000 rows, 0.1 s against 0.14).
MIN_ROWS: Final = 50_000


def group(table: pa.Table, keys: Sequence[str], figures: Sequence[tuple[str, str]]) -> pa.Table:
    """``table`` grouped by ``keys`` with ``figures`` ((column, function) with function one of
    ``min``, ``max``, ``sum``)."""
    if table.num_rows < MIN_ROWS or not fast_json.available():
        return table.group_by(list(keys)).aggregate(list(figures))
    selected = ", ".join(
        [*(f'"{k}"' for k in keys), *(f'{f}("{c}") AS "{c}_{f}"' for c, f in figures)]
    )
    key_list = ", ".join(f'"{k}"' for k in keys)
    query = f"SELECT {selected} FROM grouped_points GROUP BY {key_list}"
    return query_table(table, "grouped_points", query).cast(
        pa.schema(
            [
                *(table.schema.field(k) for k in keys),
                *(pa.field(f"{c}_{f}", table.schema.field(c).type) for c, f in figures),
            ]
        )
    )


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
