"""The join stage's steps (``engines/spark/evaluate.py``), each on a few rows.

Every expected frame is written from what the step means: which templates the join stage
reads, which queues judged where they were parsed are judged again, and which findings stay.
"""

from __future__ import annotations

import json
from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.engines.spark import evaluate
from constructs_lib.audit.engines.spark.schemas import (
    EDGE_SCHEMA,
    EVALUATION_SCHEMA,
    EXPOSURE_SCHEMA,
    FINDING_SCHEMA,
    JUDGED_SCHEMA,
    LEDGER_SCHEMA,
    MEMBER_SCHEMA,
    PENDING_SCHEMA,
    RESOLVED_SCHEMA,
    RESOURCE_SCHEMA,
    SHARED_SCHEMA,
    TOUCH_SCHEMA,
    UNRESOLVED,
    ledger_of,
    with_src,
)
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.model import SeriesRow
from tests.support.frames import assert_same_rows, finding, frame, text_schema

QUEUE = ("a.json/Orders", "a.json", "a", "Orders", model.QUEUE, "{}")
DLQ = ("b.json/Dlq", "b.json", "b", "Dlq", model.QUEUE, "{}")


def _queues(spark: Any, *uids: str) -> Any:
    return frame(spark, PENDING_SCHEMA, [(uid,) for uid in uids])


def test_the_join_reads_templates_with_crossing_edges_or_shared_keys(spark: Any) -> None:
    edges = frame(
        spark,
        with_src(EDGE_SCHEMA),
        [("a.json/Esm", model.ROLE_EVENT_SOURCE, "", "queue", "queue:jobs", "jobs", "a.json")],
    )
    touches = frame(
        spark,
        with_src(TOUCH_SCHEMA),
        [
            ("queue:orders", "owns", "b.json"),
            ("queue:orders", "names", "c.json"),
            ("queue:alone", "owns", "d.json"),
        ],
    )
    shared = frame(
        spark,
        SHARED_SCHEMA,
        [
            ("queue:orders", "owns", "b.json", "b.json"),
            ("queue:orders", "names", "c.json", "c.json"),
        ],
    )
    expected = frame(spark, text_schema("src"), [("a.json",), ("b.json",), ("c.json",)])
    assert_same_rows(evaluate.involved_templates(edges, touches, shared), expected)


def test_a_queue_is_judged_again_when_another_template_touches_its_keys_the_other_way(
    spark: Any,
) -> None:
    exposures = frame(
        spark,
        with_src(EXPOSURE_SCHEMA),
        [
            # b.json names the key a.json's queue owns: judged again
            ("a.json/Orders", "queue:orders", "owns", "a.json"),
            # every other template that touches it names it too: the same way, not crossed
            ("a.json/Jobs", "queue:shared", "names", "a.json"),
            # another template owns it too, and only a.json names it: not crossed
            ("a.json/Mail", "queue:mail", "owns", "a.json"),
        ],
    )
    shared = frame(
        spark,
        SHARED_SCHEMA,
        [
            ("queue:orders", "names", "b.json", "b.json"),
            ("queue:orders", "owns", "a.json", "a.json"),
            ("queue:shared", "names", "a.json", "c.json"),
            ("queue:mail", "owns", "a.json", "b.json"),
            ("queue:mail", "names", "a.json", "a.json"),
        ],
    )
    expected = frame(spark, PENDING_SCHEMA, [("a.json/Orders",)])
    assert_same_rows(exposures.transform(evaluate.crossed_queues, shared), expected)


def test_the_queues_left_are_the_pending_and_the_crossed_once_each(spark: Any) -> None:
    pending = frame(spark, with_src(PENDING_SCHEMA), [("q1", "a.json"), ("q2", "a.json")])
    left = pending.transform(evaluate.queues_left, _queues(spark, "q2", "q3"))
    assert_same_rows(left, _queues(spark, "q1", "q2", "q3"))


def test_of_templates_keeps_the_rows_of_the_templates_named(spark: Any) -> None:
    rows = frame(
        spark,
        text_schema("tag", "src"),
        [("resource", "a.json"), ("key", "a.json"), ("resource", "b.json")],
    )
    templates = frame(spark, text_schema("src"), [("a.json",)])
    # a semi join on ``src`` puts it first
    expected = frame(spark, text_schema("src", "tag"), [("a.json", "resource"), ("a.json", "key")])
    assert_same_rows(rows.transform(evaluate.of_templates, templates), expected)


def test_the_queues_judged_here_are_those_left(spark: Any) -> None:
    resources = frame(spark, RESOURCE_SCHEMA, [QUEUE, DLQ])
    expected = frame(spark, RESOURCE_SCHEMA, [QUEUE])
    assert_same_rows(
        resources.transform(evaluate.queues_of, _queues(spark, "a.json/Orders")), expected
    )


def test_contexts_are_the_members_of_the_queues_left_only(spark: Any) -> None:
    queues = frame(spark, RESOURCE_SCHEMA, [QUEUE])
    resolved = frame(spark, RESOLVED_SCHEMA, [("a.json/Orders", model.ROLE_DLQ, "", "b.json/Dlq")])
    expected = frame(
        spark,
        MEMBER_SCHEMA,
        [
            ("a.json/Orders", model.MEMBER_QUEUE, "", "a.json/Orders"),
            ("a.json/Orders", model.MEMBER_DLQ, "", "b.json/Dlq"),
        ],
    )
    remainder = _queues(spark, "a.json/Orders")
    assert_same_rows(queues.transform(evaluate.contexts, resolved, remainder), expected)


def test_an_unresolved_row_is_judged_as_a_reference_that_matches_nothing(spark: Any) -> None:
    edge = ("a.json/Orders", model.ROLE_ALLOW_SOURCE, "", "queue", "queue:gone", "gone")
    rows = frame(spark, EVALUATION_SCHEMA, [("a.json/Orders", UNRESOLVED, "", *QUEUE, *edge)])
    judged = rows.transform(evaluate.judged_contexts)
    assert judged.schema.names == FINDING_SCHEMA.names
    shown = ("rule_id", "template", "stack", "resource", "queue", "message")
    message = (
        "AWS::SQS::Queue Orders: RedriveAllowPolicy.sourceQueueArns entry gone not resolved: "
        "no audited template defines that queue"
    )
    expected = frame(
        spark, text_schema(*shown), [("QR900", "a.json", "a", "Orders", "Orders", message)]
    )
    assert_same_rows(judged.select(*shown), expected)


def test_findings_judged_where_parsed_stay_unless_their_queue_is_judged_again(
    spark: Any,
) -> None:
    kept = finding("QR001", "Orders", queue="Orders")
    dropped = finding("QR002", "Jobs", queue="Jobs")
    judged = frame(spark, JUDGED_SCHEMA, [("a.json/Orders", *kept), ("a.json/Jobs", *dropped)])
    stayed = judged.transform(evaluate.judged_where_parsed, _queues(spark, "a.json/Jobs"))
    assert_same_rows(stayed, frame(spark, FINDING_SCHEMA, [kept]))


def test_ledgers_judged_where_parsed_stay_unless_their_queue_is_judged_again(spark: Any) -> None:
    rows = [("a.json/Orders", '{"uid": "a.json/Orders"}'), ("a.json/Jobs", '{"uid": "x"}')]
    ledgers = frame(spark, with_src(LEDGER_SCHEMA), [(*row, "a.json") for row in rows])
    stayed = ledgers.transform(evaluate.ledgers_where_parsed, _queues(spark, "a.json/Jobs"))
    assert_same_rows(stayed, frame(spark, LEDGER_SCHEMA, rows[:1]))


def test_the_ledger_pass_gives_a_row_per_queue_with_series_of_its_own(spark: Any) -> None:
    arn = "arn:aws:sqs:eu-west-1:111122223333:orders"
    observed = json.dumps({model.PHYSICAL: arn})
    orders = ("a.json/Orders", "a.json", "a", "Orders", model.QUEUE, observed)
    unseen = ("a.json/Jobs", "a.json", "a", "Jobs", model.QUEUE, "{}")
    no_edge = (None,) * len(EDGE_SCHEMA.names)
    rows = frame(
        spark,
        EVALUATION_SCHEMA,
        [
            ("a.json/Jobs", model.MEMBER_QUEUE, "", *unseen, *no_edge),
            ("a.json/Orders", model.MEMBER_QUEUE, "", *orders, *no_edge),
        ],
    )
    sent = SeriesRow(
        "111122223333",
        "eu-west-1",
        "AWS/SQS",
        "NumberOfMessagesSent",
        "orders",
        4.0,
        7.5,
        3.0,
        1,
        2,
    )
    ledgers = rows.transform(evaluate.judged_ledgers, observations.Metrics.of([sent], []))
    assert ledgers.schema.names == LEDGER_SCHEMA.names
    (row,) = ledgers.collect()
    found = ledger_of(row["ledger"])
    assert (row["queue_uid"], found.uid, found.name) == ("a.json/Orders", "a.json/Orders", "orders")
    # the one series it has: 7.5 sent; no redrive policy, so nothing dead-lettered
    assert (found.sent, found.deleted, found.dead_lettered, found.explained_by) == (
        7.5,
        None,
        0.0,
        (),
    )
