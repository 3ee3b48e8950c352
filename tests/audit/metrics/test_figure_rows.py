"""The series rows the rules read come in Python's order of their keys, whichever library sorted
them (pyarrow below ``grouping.MIN_ROWS`` rows, DuckDB from there on): names in several scripts
and cases, whose byte order and code-point order agree and whose case order is not alphabetic."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from constructs_lib.audit.metrics import aggregate, fast_json, grouping

NAMES = ("orders", "Orders", "orders-dlq", "zebra", "Ärger", "été", "日本", "queue-😀", "q~", "q_")


def _figures(count: int) -> pa.Table:
    """``count`` series of a fleet in shuffled order (two accounts, two namespaces), figures
    equal to their position, and one coverage-only row without a dimension."""
    keys = [
        (account, "eu-west-1", namespace, metric, f"{name}-{i}")
        for account in ("222222222222", "111111111111")
        for namespace, metric in (("AWS/SQS", "NumberOfMessagesSent"), ("AWS/Lambda", "Errors"))
        for i in range(count // 40 + 1)
        for name in NAMES
    ][:count]
    random.Random(7).shuffle(keys)
    dimension = {"AWS/SQS": "QueueName", "AWS/Lambda": "FunctionName"}
    rows = [
        {
            "account": a,
            "region": r,
            "namespace": ns,
            "metric": m,
            "dimension_name": dimension[ns],
            "name": n,
            "maximum_max": float(i),
            "total_sum": float(i),
            "samples_sum": 1.0,
            "timestamp_min": i,
            "timestamp_max": i + 1,
            "opening": 0.0,
            "closing": float(i),
        }
        for i, (a, r, ns, m, n) in enumerate(keys)
    ]
    rows.append({**rows[0], "dimension_name": "", "name": "", "metric": "Other"})
    return pa.Table.from_pylist(rows)


@pytest.mark.parametrize("count", [40, grouping.MIN_ROWS + 40], ids=["pyarrow", "duckdb"])
def test_series_rows_are_in_pythons_order_of_their_keys(count: int) -> None:
    if count >= grouping.MIN_ROWS and not fast_json.available():
        pytest.skip("DuckDB is not installed")
    table = _figures(count)
    series, coverage = aggregate.figure_rows(table)
    keys = [row[:5] for row in series]
    assert len(series) == count  # the row without a dimension is not a series
    assert keys == sorted(keys)
    # Each row keeps its own figures: the closing reading was its position before the sort.
    by_key = {tuple(r[k] for k in aggregate.SERIES_KEYS): r["closing"] for r in table.to_pylist()}
    assert all(row.closing == by_key[row[:5]] for row in series)
    sqs = {(r["account"], r["region"]) for r in table.to_pylist() if r["namespace"] == "AWS/SQS"}
    assert [c[:2] for c in coverage] == sorted(sqs)
