"""A template judged on its own where it is parsed (``within_template.py``), without Spark.

The Spark job's findings equal the local engine's on every corpus (test_cross_fleets.py,
test_corpus.py, test_real_shapes.py); these tests pin what one template decides alone: which
queues it can judge, which it must leave to the join stage, and the keys by which the fleet
tells whether another template shares its context.
"""

from __future__ import annotations

import json
from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.engines.judging import template_findings
from constructs_lib.audit.parse import pipeline as templates
from constructs_lib.audit.resolve.within_template import NAMES, OWNS, judge
from tests.audit.conftest import healthy, props

FILE = "fleet/app.template.json"


def _parsed(template: dict[str, Any]) -> model.ParsedTemplate:
    parsed = templates.parse_template(FILE, "app", json.dumps(template).encode())
    assert parsed.file.status == "ok", parsed.file.error
    return parsed


def _uid(logical_id: str) -> str:
    return model.uid(FILE, logical_id)


def test_a_template_that_names_its_own_queues_is_judged_whole_as_the_engine_judges_it() -> None:
    template = healthy("orders")
    props(template, "Source")["VisibilityTimeout"] = 5  # shorter than the function's 10 s: QR006
    parsed = _parsed(template)
    within = judge(parsed)
    assert within.pending == [] and within.crossing == []
    alone = engine.audit_parsed([parsed]).findings
    judged = [finding for _queue, finding in within.judged]
    assert sorted(judged, key=model.Finding.sort_key) == [
        f for f in alone if f not in template_findings(parsed)
    ]
    assert ("QR006", "Esm") in {(f.rule_id, f.resource) for f in judged}
    assert {queue for queue, _f in within.judged} == {_uid("Source")}


def test_the_names_a_template_carries_and_references_are_its_touched_keys() -> None:
    within = judge(_parsed(healthy("orders")))
    touched = set(within.touched)
    assert {(model.queue_key("orders"), OWNS), (model.queue_key("orders-dlq"), OWNS)} <= touched
    # the DLQ's allow list names its source by name; the alarms name the queues by GetAtt
    assert (model.queue_key("orders"), NAMES) in touched
    assert (model.queue_key("orders-dlq"), NAMES) not in touched
    assert not any(key.startswith("local:") for key, _how in touched)
    exposed = {(key, how) for queue, key, how in within.exposure if queue == _uid("Source")}
    assert (model.queue_key("orders"), OWNS) in exposed


def test_an_exported_queue_is_touched_by_its_local_key() -> None:
    template = healthy("orders")
    template["Outputs"] = {
        "DlqArn": {"Value": {"Fn::GetAtt": ["Dlq", "Arn"]}, "Export": {"Name": "orders-dlq"}}
    }
    within = judge(_parsed(template))
    assert (model.local_key(_uid("Dlq")), OWNS) in within.touched


def test_a_dead_letter_queue_imported_from_another_stack_leaves_the_queue_to_the_join() -> None:
    template = healthy("orders")
    props(template, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = {
        "Fn::ImportValue": "shared-dlq-arn"
    }
    within = judge(_parsed(template))
    assert _uid("Source") in within.pending
    assert [e.key for e in within.crossing] == [model.export_key("shared-dlq-arn")]
    assert _uid("Source") not in {queue for queue, _f in within.judged}
    # the template's own DLQ does not depend on the source's reference: judged here
    assert _uid("Dlq") not in within.pending


def test_a_function_that_also_reads_another_stacks_queue_takes_its_own_queue_along() -> None:
    template = healthy("orders")
    template["Resources"]["RemoteEsm"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "EventSourceArn": "arn:aws:sqs:us-east-1:123456789012:billing",
            "FunctionName": {"Ref": "Fn"},
        },
    }
    within = judge(_parsed(template))
    # The function's mappings are in its queue's context (concurrency, QR017): one of them reads
    # a queue only the fleet can find.
    assert within.pending == [_uid("Source")]
    assert [e.key for e in within.crossing] == [model.queue_key("billing")]
    assert (model.queue_key("billing"), NAMES) in within.touched


def test_a_reference_known_only_at_deployment_is_reported_here_not_joined() -> None:
    template = healthy("orders")
    props(template, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = {
        "Fn::Select": [0, {"Fn::GetAZs": ""}]
    }
    parsed = _parsed(template)
    dead = [e for e in parsed.edges if e.key.startswith("unresolved:")]
    assert dead, "a value only known at deployment must be a reference that never resolves"
    within = judge(parsed)
    assert within.crossing == []
    assert [(f.rule_id, f.resource) for f in within.unresolved] == [("QR900", "Source")]
    assert not any(key.startswith("unresolved:") for key, _how in within.touched)
    # the local engine reports the same reference the same way
    alone = engine.audit_parsed([parsed]).findings
    assert [f for f in alone if f.rule_id == "QR900"] == within.unresolved
