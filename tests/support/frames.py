"""Small DataFrames for the Spark stages' tests, and their comparison.

``assert_same_rows`` is chispa's ``assert_df_equality`` with ``ignore_row_order`` and
``ignore_nullable``: the same column names and types, in order, and the same rows, whatever
their order. Nullability is not compared: the declared schemas say every column may be null,
while Spark marks a literal or a join key as never null.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from constructs_lib.audit.engines.spark.schemas import FINDING_SCHEMA
from constructs_lib.audit.model import Finding


def frame(spark: SparkSession, schema: StructType, rows: Iterable[tuple[Any, ...]]) -> DataFrame:
    """A DataFrame of ``rows`` (tuples in the schema's column order) with ``schema``."""
    return spark.createDataFrame(list(rows), schema)


def text_schema(*names: str) -> StructType:
    """A schema of text columns: for the frames a stage makes that no row kind declares."""
    return StructType([StructField(name, StringType(), True) for name in names])


def finding(rule_id: str, resource: str, **fields: Any) -> tuple[Any, ...]:
    """A finding as a ``FINDING_SCHEMA`` row: a warning in ``a.json``, stack ``a``, unless
    ``fields`` say otherwise."""
    values = {
        "severity": "warning",
        "template": "a.json",
        "stack": "a",
        "queue": "",
        "message": f"{rule_id} on {resource}",
        "fix": "fix it",
        **fields,
    }
    made = Finding(rule_id=rule_id, resource=resource, **values)
    return tuple(made.as_dict()[name] for name in FINDING_SCHEMA.names)


def _order(row: Row) -> tuple[tuple[bool, Any], ...]:
    return tuple((value is None, "" if value is None else value) for value in row)


def _columns(schema: StructType) -> list[tuple[str, str]]:
    return [(field.name, field.dataType.simpleString()) for field in schema.fields]


def assert_same_rows(actual: DataFrame, expected: DataFrame) -> None:
    """The same columns (names and types, in order) and the same rows, in any order."""
    columns, wanted = _columns(actual.schema), _columns(expected.schema)
    assert columns == wanted, f"columns {columns} instead of {wanted}"
    rows, wanted_rows = sorted(actual.collect(), key=_order), sorted(expected.collect(), key=_order)
    assert rows == wanted_rows, f"rows {rows} instead of {wanted_rows}"
