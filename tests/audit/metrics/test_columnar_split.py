"""Which local Parquet objects go to DuckDB's one scan (``columnar.split``): each object judged on
its own, even when the judgement of a schema is shared among the objects that have it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from constructs_lib.audit.metrics import columnar
from constructs_lib.audit.metrics.decode import DEFAULT_STREAM_LIMITS
from constructs_lib.audit.metrics.stream import StreamObject
from tests.audit.metrics.test_metrics_input import START, _parquet, _point

pytest.importorskip("duckdb")

POINTS = [
    _point("111111111111", "us-east-1", "AWS/SQS", "NumberOfMessagesSent", {"QueueName": "q"}, t)
    for t in range(START, START + 10 * 60_000, 60_000)
]


def _write(folder: Path, name: str, data: bytes) -> StreamObject:
    path = folder / name
    path.write_bytes(data)
    return StreamObject(str(path), len(data), None)


def _large_strings(data: bytes) -> bytes:
    """The same data points, with the text columns as Arrow ``large_string``: the Parquet schema
    is the same (UTF-8 byte arrays) and only the Arrow schema pyarrow stores beside it
    (``ARROW:schema``) differs, which makes the columns ``large_string`` when read."""
    table = pq.read_table(pa.BufferReader(data))
    text = {"metric_stream_name", "account_id", "region", "namespace", "metric_name", "unit"}
    schema = pa.schema(
        [pa.field(f.name, pa.large_string()) if f.name in text else f for f in table.schema]
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table.cast(schema), sink)
    return bytes(sink.getvalue().to_pybytes())


def _split(items: list[StreamObject]) -> tuple[list[str], list[str]]:
    direct, rest = columnar.split(
        items, DEFAULT_STREAM_LIMITS.max_object_bytes, DEFAULT_STREAM_LIMITS.max_object_points
    )
    return [Path(o.location).name for o in direct], [Path(o.location).name for o in rest]


@pytest.mark.parametrize("large_first", [False, True])
def test_a_stored_arrow_schema_that_changes_the_types_keeps_its_object_out_of_the_scan(
    tmp_path: Path, large_first: bool
) -> None:
    exact = _parquet(POINTS)
    large = _large_strings(exact)
    assert pq.read_metadata(pa.BufferReader(large)).schema.equals(
        pq.read_metadata(pa.BufferReader(exact)).schema
    )  # the same Parquet schema: only the stored Arrow schema tells them apart
    pairs = [("b-exact.parquet", exact), ("c-exact.parquet", exact), ("d-large.parquet", large)]
    if large_first:
        pairs.reverse()
    direct, rest = _split([_write(tmp_path, name, data) for name, data in pairs])
    assert sorted(direct) == ["b-exact.parquet", "c-exact.parquet"]
    assert rest == ["d-large.parquet"]


def test_every_object_is_opened_even_when_its_schema_was_judged(tmp_path: Path) -> None:
    exact = _parquet(POINTS)
    items = [
        _write(tmp_path, "a.parquet", exact),
        _write(tmp_path, "b-truncated.parquet", exact[:-40]),  # footer cut off
        _write(tmp_path, "c-not-parquet.parquet", b"{}" + exact[4:]),  # no magic
        _write(tmp_path, "d.parquet", exact),
    ]
    direct, rest = _split(items)
    assert direct == ["a.parquet", "d.parquet"]
    assert rest == ["b-truncated.parquet", "c-not-parquet.parquet"]
