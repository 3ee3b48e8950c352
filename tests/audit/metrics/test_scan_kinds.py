"""Which local objects go to DuckDB's one scan, and as what (``scan.kinds``): each Parquet object
judged on its own, even when the judgement of a schema is shared among the objects that have it;
a gzip object by its trailer; anything else left to the per-object path, which names it."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from constructs_lib.audit.metrics import scan
from constructs_lib.audit.metrics.decode import DEFAULT_STREAM_LIMITS
from constructs_lib.audit.metrics.stream import StreamObject
from tests.audit.metrics.test_metrics_input import START, _lines, _parquet, _point

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
    """(the Parquet objects the scan reads, the others), by name."""
    direct = {o.location for o in scan.kinds(items, DEFAULT_STREAM_LIMITS).parquet}
    return [Path(o.location).name for o in items if o.location in direct], [
        Path(o.location).name for o in items if o.location not in direct
    ]


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


def test_each_object_is_read_as_its_first_bytes_say_or_left_to_the_per_object_path(
    tmp_path: Path,
) -> None:
    lines = _lines(POINTS)
    packed = gzip.compress(lines)
    limits = dataclasses.replace(DEFAULT_STREAM_LIMITS, max_decoded_bytes=len(lines))
    tighter = dataclasses.replace(limits, max_decoded_bytes=len(lines) - 1)
    items = [
        _write(tmp_path, "a.parquet", _parquet(POINTS)),
        _write(tmp_path, "b-named-json.json", _parquet(POINTS)),  # Parquet whatever its name
        _write(tmp_path, "c.gz", packed),
        _write(tmp_path, "d-plain", lines),
        _write(tmp_path, "e-json.parquet", packed),  # not Parquet, by a Parquet name
        _write(tmp_path, "f-short.gz", packed[:7]),  # no room for a trailer
        _write(tmp_path, "g-cut-parquet", _parquet(POINTS)[:-40]),  # Parquet's magic, no footer
        _write(tmp_path, "h[1].gz", packed),  # a glob to DuckDB
    ]
    (tmp_path / "i-folder").mkdir()
    items.append(StreamObject(str(tmp_path / "i-folder"), 0, None))

    def names(found: list[StreamObject]) -> list[str]:
        return [Path(o.location).name for o in found]

    chosen = scan.kinds(items, limits)
    assert names(chosen.parquet) == ["a.parquet", "b-named-json.json"]
    assert names(chosen.gzip) == ["c.gz"]
    assert names(chosen.plain) == ["d-plain"]
    # One byte over the decompressed cap, as the gzip trailer states it: the per-object path.
    assert names(scan.kinds(items, tighter).gzip) == []
