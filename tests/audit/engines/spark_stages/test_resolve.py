"""The join stage's resolution steps (``engines/spark/resolve.py``), each on a few rows.

Every expected frame is written from what the step means: the keys several templates touch,
each reference's target and what it matches, and who stands around each queue.
"""

from __future__ import annotations

from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.engines.spark import resolve
from constructs_lib.audit.engines.spark.schemas import (
    EDGE_SCHEMA,
    EVALUATION_SCHEMA,
    EXPORT_SCHEMA,
    KEY_SCHEMA,
    MEMBER_SCHEMA,
    RESOLVED_SCHEMA,
    RESOURCE_SCHEMA,
    SHARED_SCHEMA,
    TOUCH_SCHEMA,
    UNRESOLVED,
    with_src,
)
from tests.support.frames import assert_same_rows, frame, text_schema

IMPORTED = "a.json\u0000import"
EXPORTS = [
    ("b.json", "orders-arn", "queue:orders", ""),
    ("b.json", "handler-arn", "", "function:handler"),
]
QUEUE = ("a.json/Orders", "a.json", "a", "Orders", model.QUEUE, "{}")
DLQ = ("a.json/Dlq", "a.json", "a", "Dlq", model.QUEUE, "{}")


def _edge(role: str, key: str, kind: str = "queue", detail: str = "") -> tuple[str, ...]:
    return ("a.json/Esm", role, detail, kind, key, key)


def test_an_import_names_what_its_export_names_from_apart_from_its_template(spark: Any) -> None:
    edges = frame(
        spark,
        with_src(EDGE_SCHEMA),
        [
            (*_edge(model.ROLE_EVENT_SOURCE, "export:orders-arn"), "a.json"),
            (*_edge(model.ROLE_FUNCTION, "function:handler", "function"), "a.json"),
        ],
    )
    exports = frame(spark, EXPORT_SCHEMA, EXPORTS)
    expected = frame(spark, text_schema("key", "how", "src"), [("queue:orders", "names", IMPORTED)])
    assert_same_rows(edges.transform(resolve.imports_as_touches, exports), expected)


def test_a_key_is_shared_when_two_templates_touch_it(spark: Any) -> None:
    touches = frame(
        spark,
        text_schema("key", "how", "src"),
        [
            ("queue:orders", "owns", "a.json"),
            ("queue:orders", "names", "b.json"),
            ("queue:orders", "names", "c.json"),
            ("queue:alone", "owns", "a.json"),
            ("queue:alone", "names", "a.json"),
        ],
    )
    expected = frame(
        spark,
        SHARED_SCHEMA,
        [
            ("queue:orders", "owns", "a.json", "a.json"),
            ("queue:orders", "names", "b.json", "c.json"),
        ],
    )
    assert_same_rows(touches.transform(resolve.touched_by_several), expected)


def test_an_import_shares_the_key_its_export_names(spark: Any) -> None:
    touches = frame(spark, with_src(TOUCH_SCHEMA), [("queue:orders", "owns", "b.json")])
    edges = frame(
        spark,
        with_src(EDGE_SCHEMA),
        [(*_edge(model.ROLE_EVENT_SOURCE, "export:orders-arn"), "a.json")],
    )
    exports = frame(spark, EXPORT_SCHEMA, EXPORTS)
    expected = frame(
        spark,
        SHARED_SCHEMA,
        [
            ("queue:orders", "owns", "b.json", "b.json"),
            ("queue:orders", "names", IMPORTED, IMPORTED),
        ],
    )
    assert_same_rows(resolve.shared_keys(touches, edges, exports), expected)


def test_an_import_targets_what_its_export_names_as_its_kind(spark: Any) -> None:
    edges = frame(
        spark,
        EDGE_SCHEMA,
        [
            _edge(model.ROLE_EVENT_SOURCE, "export:orders-arn"),
            _edge(model.ROLE_FUNCTION, "export:handler-arn", "function"),
            _edge(model.ROLE_EVENT_SOURCE, "export:nobody"),
            _edge(model.ROLE_DLQ, "local:Dlq"),
        ],
    )
    exports = frame(spark, EXPORT_SCHEMA, EXPORTS)
    expected = frame(
        spark,
        text_schema(*EDGE_SCHEMA.names, "target"),
        [
            (*_edge(model.ROLE_EVENT_SOURCE, "export:orders-arn"), "queue:orders"),
            (*_edge(model.ROLE_FUNCTION, "export:handler-arn", "function"), "function:handler"),
            (*_edge(model.ROLE_EVENT_SOURCE, "export:nobody"), None),
            (*_edge(model.ROLE_DLQ, "local:Dlq"), "local:Dlq"),
        ],
    )
    assert_same_rows(edges.transform(resolve.with_targets, exports), expected)


def test_a_target_matches_every_resource_carrying_it_or_nothing(spark: Any) -> None:
    targeted = frame(
        spark,
        text_schema(*EDGE_SCHEMA.names, "target"),
        [
            (*_edge(model.ROLE_EVENT_SOURCE, "queue:orders"), "queue:orders"),
            (*_edge(model.ROLE_DLQ, "queue:gone"), "queue:gone"),
        ],
    )
    keys = frame(
        spark, KEY_SCHEMA, [("a.json/Orders", "queue:orders"), ("b.json/Orders", "queue:orders")]
    )
    expected = frame(
        spark,
        text_schema("target", *EDGE_SCHEMA.names, "to_uid"),
        [
            ("queue:orders", *_edge(model.ROLE_EVENT_SOURCE, "queue:orders"), "a.json/Orders"),
            ("queue:orders", *_edge(model.ROLE_EVENT_SOURCE, "queue:orders"), "b.json/Orders"),
            ("queue:gone", *_edge(model.ROLE_DLQ, "queue:gone"), None),
        ],
    )
    assert_same_rows(targeted.transform(resolve.matched_to, keys), expected)


def test_resolve_splits_the_edges_into_resolved_once_and_unresolved(spark: Any) -> None:
    edges = frame(
        spark,
        EDGE_SCHEMA,
        [
            _edge(model.ROLE_EVENT_SOURCE, "export:orders-arn"),
            _edge(model.ROLE_EVENT_SOURCE, "queue:orders"),
            _edge(model.ROLE_DLQ, "queue:gone"),
        ],
    )
    keys = frame(spark, KEY_SCHEMA, [("b.json/Orders", "queue:orders")])
    resolved, unresolved = resolve.resolve(edges, keys, frame(spark, EXPORT_SCHEMA, EXPORTS))
    assert_same_rows(
        resolved,
        frame(
            spark, RESOLVED_SCHEMA, [("a.json/Esm", model.ROLE_EVENT_SOURCE, "", "b.json/Orders")]
        ),
    )
    assert_same_rows(unresolved, frame(spark, EDGE_SCHEMA, [_edge(model.ROLE_DLQ, "queue:gone")]))


RESOLVED = [
    ("a.json/Orders", model.ROLE_DLQ, "", "a.json/Dlq"),
    ("a.json/Alarm", model.ROLE_ALARM, "ApproximateAgeOfOldestMessage", "a.json/Orders"),
    ("a.json/Esm", model.ROLE_EVENT_SOURCE, "", "a.json/Orders"),
    ("a.json/Esm", model.ROLE_FUNCTION, "", "a.json/Fn"),
    ("b.json/Esm", model.ROLE_EVENT_SOURCE, "", "b.json/Jobs"),
    ("b.json/Esm", model.ROLE_FUNCTION, "", "a.json/Fn"),
]


def test_each_edge_makes_its_members_and_a_dlq_edge_two(spark: Any) -> None:
    expected = frame(
        spark,
        MEMBER_SCHEMA,
        [
            ("a.json/Orders", model.MEMBER_DLQ, "", "a.json/Dlq"),
            ("a.json/Dlq", model.MEMBER_SOURCE, "", "a.json/Orders"),
            ("a.json/Orders", model.MEMBER_ALARM, "ApproximateAgeOfOldestMessage", "a.json/Alarm"),
            ("a.json/Orders", model.MEMBER_ESM, "", "a.json/Esm"),
            ("b.json/Jobs", model.MEMBER_ESM, "", "b.json/Esm"),
        ],
    )
    assert_same_rows(
        frame(spark, RESOLVED_SCHEMA, RESOLVED).transform(resolve.edge_members), expected
    )


def test_a_consumer_is_a_mapping_with_its_queue_and_function(spark: Any) -> None:
    expected = frame(
        spark,
        text_schema("mapping_uid", "queue_uid", "uid"),
        [("a.json/Esm", "a.json/Orders", "a.json/Fn"), ("b.json/Esm", "b.json/Jobs", "a.json/Fn")],
    )
    assert_same_rows(frame(spark, RESOLVED_SCHEMA, RESOLVED).transform(resolve.consumers), expected)


def test_a_consumer_function_brings_all_its_mappings_to_each_queue(spark: Any) -> None:
    consumers = frame(spark, RESOLVED_SCHEMA, RESOLVED).transform(resolve.consumers)
    functions = frame(
        spark,
        MEMBER_SCHEMA,
        [
            ("a.json/Orders", model.MEMBER_FUNCTION, "a.json/Esm", "a.json/Fn"),
            ("b.json/Jobs", model.MEMBER_FUNCTION, "b.json/Esm", "a.json/Fn"),
        ],
    )
    mappings = frame(
        spark,
        MEMBER_SCHEMA,
        [
            (queue, model.MEMBER_FUNCTION_MAPPING, "a.json/Fn", mapping)
            for queue in ("a.json/Orders", "b.json/Jobs")
            for mapping in ("a.json/Esm", "b.json/Esm")
        ],
    )
    assert_same_rows(consumers.transform(resolve.consumer_functions), functions)
    assert_same_rows(consumers.transform(resolve.function_mappings), mappings)


def test_members_start_with_each_queue_itself(spark: Any) -> None:
    queues = frame(spark, RESOURCE_SCHEMA, [QUEUE])
    resolved = frame(spark, RESOLVED_SCHEMA, [RESOLVED[0]])
    itself = ("a.json/Orders", model.MEMBER_QUEUE, "", "a.json/Orders")
    expected = frame(
        spark,
        MEMBER_SCHEMA,
        [
            itself,
            ("a.json/Orders", model.MEMBER_DLQ, "", "a.json/Dlq"),
            ("a.json/Dlq", model.MEMBER_SOURCE, "", "a.json/Orders"),
        ],
    )
    assert_same_rows(queues.transform(resolve.own_members), frame(spark, MEMBER_SCHEMA, [itself]))
    assert_same_rows(resolve.members(queues, resolved), expected)


def test_evaluation_rows_carry_the_member_or_the_unresolved_edge(spark: Any) -> None:
    resources = frame(spark, RESOURCE_SCHEMA, [QUEUE, DLQ])
    members = frame(spark, MEMBER_SCHEMA, [("a.json/Orders", model.MEMBER_DLQ, "", "a.json/Dlq")])
    unresolved_edge = ("a.json/Orders", model.ROLE_ALLOW_SOURCE, "", "queue", "queue:gone", "gone")
    unresolved = frame(spark, EDGE_SCHEMA, [unresolved_edge])
    no_edge = (None,) * len(EDGE_SCHEMA.names)
    assert_same_rows(
        members.transform(resolve.member_rows, resources),
        frame(spark, EVALUATION_SCHEMA, [("a.json/Orders", model.MEMBER_DLQ, "", *DLQ, *no_edge)]),
    )
    assert_same_rows(
        unresolved.transform(resolve.unresolved_rows, resources),
        frame(
            spark,
            EVALUATION_SCHEMA,
            [("a.json/Orders", UNRESOLVED, "", *QUEUE, *unresolved_edge)],
        ),
    )


def test_by_queue_puts_each_queue_s_rows_together_in_order(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows = frame(
        spark,
        MEMBER_SCHEMA,
        [(f"q{n % 5}", model.MEMBER_ALARM, str(n), f"alarm{n}") for n in range(20)],
    )
    placed = rows.transform(resolve.by_queue, 2).select(
        F.spark_partition_id().alias("partition"), "queue_uid"
    )
    seen = [(row["partition"], row["queue_uid"]) for row in placed.collect()]
    assert {queue for _p, queue in seen} == {f"q{n}" for n in range(5)}
    assert all(len({p for p, q in seen if q == queue}) == 1 for _p, queue in seen)
    for partition in {p for p, _q in seen}:
        queues = [q for p, q in seen if p == partition]
        assert queues == sorted(queues)
