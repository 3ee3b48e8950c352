"""The join stage on the driver (``resolve/crossing.py``), on a few hand-made rows: the same
situations the Spark steps are tested with (``spark_stages/test_evaluate.py``), each expected
value written from what it means."""

from __future__ import annotations

import json

from constructs_lib.audit import model
from constructs_lib.audit.model import EdgeRow, ExportRow, KeyRow, ResourceRow
from constructs_lib.audit.resolve import crossing
from constructs_lib.audit.resolve.crossing import IMPORTING, Crossing
from constructs_lib.audit.resolve.within_template import NAMES, OWNS


def _edge(from_uid: str, key: str, kind: str = "queue") -> EdgeRow:
    return EdgeRow(from_uid, model.ROLE_EVENT_SOURCE, "", kind, key, key)


def test_a_key_is_shared_when_two_templates_touch_it_not_when_one_touches_it_twice() -> None:
    rows = Crossing(
        touches=[
            ("queue:orders", OWNS, "b.json"),
            ("queue:orders", NAMES, "c.json"),
            ("queue:orders", NAMES, "a.json"),
            ("queue:alone", OWNS, "d.json"),
            ("queue:alone", NAMES, "d.json"),
        ]
    )
    assert crossing.shared_keys(rows) == {
        ("queue:orders", OWNS): ("b.json", "b.json"),
        ("queue:orders", NAMES): ("a.json", "c.json"),
    }


def test_an_import_names_what_its_exports_name_from_a_template_of_its_own() -> None:
    # a.json imports "jobs-arn", which b.json exports as its queue; a.json also owns that key
    rows = Crossing(
        edges=[(_edge("a.json/Esm", "export:jobs-arn"), "a.json")],
        touches=[("queue:jobs", OWNS, "a.json")],
        exports=[ExportRow("b.json", "jobs-arn", "queue:jobs", "")],
    )
    assert crossing.shared_keys(rows) == {
        ("queue:jobs", OWNS): ("a.json", "a.json"),
        ("queue:jobs", NAMES): ("a.json" + IMPORTING, "a.json" + IMPORTING),
    }


def test_the_join_reads_templates_with_crossing_edges_or_shared_keys() -> None:
    rows = Crossing(
        edges=[(_edge("a.json/Esm", "queue:jobs"), "a.json")],
        touches=[
            ("queue:orders", OWNS, "b.json"),
            ("queue:orders", NAMES, "c.json"),
            ("queue:alone", OWNS, "d.json"),
        ],
    )
    assert crossing.plan(rows).involved == {"a.json", "b.json", "c.json"}


def test_a_queue_is_judged_again_when_another_template_touches_its_keys_the_other_way() -> None:
    rows = Crossing(
        touches=[
            ("queue:orders", OWNS, "a.json"),
            ("queue:orders", NAMES, "b.json"),
            ("queue:shared", NAMES, "a.json"),
            ("queue:shared", NAMES, "c.json"),
            ("queue:mail", OWNS, "a.json"),
            ("queue:mail", OWNS, "b.json"),
            ("queue:mail", NAMES, "a.json"),
        ],
        exposures=[
            # b.json names the key a.json's queue owns: judged again
            ("a.json/Orders", "queue:orders", OWNS, "a.json"),
            # every other template that touches it names it too: the same way, not crossed
            ("a.json/Jobs", "queue:shared", NAMES, "a.json"),
            # another template owns it too, and only a.json names it: not crossed
            ("a.json/Mail", "queue:mail", OWNS, "a.json"),
        ],
        pending=["c.json/Left"],
    )
    planned = crossing.plan(rows)
    assert planned.crossed == {"a.json/Orders"}
    # every queue the join stage judges: the pending and the crossed, once each, in order
    assert planned.remainder == ("a.json/Orders", "c.json/Left")


def test_nothing_left_plans_nothing() -> None:
    planned = crossing.plan(Crossing())
    assert (planned.involved, planned.crossed, planned.remainder) == (set(), set(), ())


def _queue(uid: str, **properties: object) -> ResourceRow:
    file, logical_id = uid.split("/")
    return ResourceRow(uid, file, file, logical_id, model.QUEUE, json.dumps(properties))


def test_the_remainder_is_judged_with_what_other_templates_hold() -> None:
    # a.json's queue names b.json's DLQ by its name, and that DLQ keeps messages for a minute
    # only, less than the source's default four days (QR003: only the DLQ's template tells);
    # a.json's mapping names a queue no template has.
    source = _queue("a.json/Orders", RedrivePolicy={"maxReceiveCount": 5})
    dlq = _queue("b.json/Dlq", MessageRetentionPeriod=60)
    mapping = ResourceRow(
        "a.json/Esm", "a.json", "a.json", "Esm", "AWS::Lambda::EventSourceMapping", "{}"
    )
    to_dlq = EdgeRow("a.json/Orders", model.ROLE_DLQ, "", "queue", "queue:dlq", "dlq")
    found = crossing.judge_remainder(
        ["a.json/Orders"],
        [source, dlq, mapping],
        [KeyRow("b.json/Dlq", "queue:dlq")],
        [to_dlq, _edge("a.json/Esm", "queue:nowhere")],
        [],
    )
    rules = {(f.rule_id, f.resource) for f in found}
    assert ("QR003", "Orders") in rules
    # the reference that matches nothing is reported once, on the resource it leaves
    assert [f.resource for f in found if f.rule_id == "QR900"] == ["Esm"]
