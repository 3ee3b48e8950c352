"""The parse on Spark (``engines/spark/parse.py``) and the row kinds it yields, read back from the
wide schema with ``narrow`` (``engines/spark/schemas.py``).

A wide row holds a row of any kind: its text values in ``t0, t1, ...`` and its numbers in
``n0, n1, ...``, in the order of the kind's declared schema, the rest empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.engines.spark import parse
from constructs_lib.audit.engines.spark.schemas import (
    FILE_SCHEMA,
    JUDGED_SCHEMA,
    PATH_SCHEMA,
    TOUCH_SCHEMA,
    WIDE_INTS,
    WIDE_SCHEMA,
    WIDE_TEXT,
    RowKind,
    narrow,
    with_src,
)
from tests.support.frames import assert_same_rows, finding, frame, text_schema


def _wide(kind: str, texts: tuple[str, ...], ints: tuple[int, ...], src: str) -> tuple[Any, ...]:
    text = [*texts, *[""] * (len(WIDE_TEXT) - len(texts))]
    numbers = [*ints, *[0] * (len(WIDE_INTS) - len(ints))]
    return (kind, *text, *numbers, src)


def test_narrow_reads_one_kind_back_with_its_declared_columns(spark: Any) -> None:
    judged = finding("QR001", "Orders", queue="Orders", line=12, column=3)
    judged_text = tuple(v for v in judged if isinstance(v, str))
    wide = frame(
        spark,
        WIDE_SCHEMA,
        [
            _wide(RowKind.TOUCH, ("queue:orders", "owns"), (), "a.json"),
            _wide(RowKind.TOUCH, ("queue:jobs", "names"), (), "b.json"),
            _wide(RowKind.JUDGED, ("a.json/Orders", *judged_text), (12, 3), "a.json"),
        ],
    )
    touches = [("queue:orders", "owns"), ("queue:jobs", "names")]
    assert_same_rows(narrow(wide, RowKind.TOUCH), frame(spark, TOUCH_SCHEMA, touches))
    assert_same_rows(
        narrow(wide, RowKind.TOUCH, with_src=True),
        frame(
            spark,
            with_src(TOUCH_SCHEMA),
            [("queue:orders", "owns", "a.json"), ("queue:jobs", "names", "b.json")],
        ),
    )
    assert_same_rows(
        narrow(wide, RowKind.JUDGED), frame(spark, JUDGED_SCHEMA, [("a.json/Orders", *judged)])
    )


def test_parsing_a_path_yields_its_file_row_and_its_resources(spark: Any, tmp_path: Path) -> None:
    template = tmp_path / "a.json"
    queue = {"Type": model.QUEUE, "Properties": {"QueueName": "orders"}}
    template.write_text(json.dumps({"Resources": {"Orders": queue}}))
    paths = frame(spark, PATH_SCHEMA, [(str(template).encode(), "a")])
    wide = paths.transform(parse.parse_paths)
    assert_same_rows(
        narrow(wide, RowKind.FILE),
        frame(spark, FILE_SCHEMA, [(str(template), "a", "ok", "", 1)]),
    )
    shown = ("file", "stack", "logical_id", "type")
    assert_same_rows(
        narrow(wide, RowKind.RESOURCE).select(*shown),
        frame(spark, text_schema(*shown), [(str(template), "a", "Orders", model.QUEUE)]),
    )
