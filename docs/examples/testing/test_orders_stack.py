"""Tests of an app that uses ResilientQueue: what it synthesizes, a snapshot, its synth warnings
and the audit's rules, all with pytest (and syrupy for the snapshot)."""

import json
import re
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Annotations, Match, Template
from orders_stack import OrdersStack
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from constructs_lib.checks import QueueResilienceChecks

# Asset hashes change with every edit of a handler's code: replaced in the snapshot, so it
# changes only when the infrastructure does.
ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def normalized(template: dict[str, Any]) -> Any:
    return json.loads(ASSET_HASH.sub("<asset-hash>", json.dumps(template)))


def test_the_queue_has_a_dead_letter_queue_and_a_derived_visibility_timeout() -> None:
    template = Template.from_stack(OrdersStack(cdk.App(), "Orders"))
    template.resource_count_is("AWS::SQS::Queue", 2)
    # 6 x the 30 s function timeout
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "VisibilityTimeout": 180,
            "RedrivePolicy": Match.object_like({"maxReceiveCount": 5}),
        },
    )
    # the queue pair's four alarms and the consumer's two
    template.resource_count_is("AWS::CloudWatch::Alarm", 6)


def test_template_snapshot(snapshot: SnapshotAssertion) -> None:
    template = Template.from_stack(OrdersStack(cdk.App(), "Orders")).to_json()
    assert normalized(template) == snapshot(extension_class=JSONSnapshotExtension)


def test_fewer_than_five_receives_is_a_synth_warning() -> None:
    stack = OrdersStack(cdk.App(), "Orders", max_receive_count=3)
    annotations = Annotations.from_stack(stack)
    annotations.has_warning("*", Match.string_like_regexp("constructs_lib:max_receive_count"))
    # and the default of 5 has none
    defaults = Annotations.from_stack(OrdersStack(cdk.App(), "Defaults"))
    assert defaults.find_warning("*", Match.string_like_regexp("constructs_lib:")) == []


def test_the_audit_rules_find_nothing_to_fix() -> None:
    app = cdk.App()
    OrdersStack(app, "Orders")
    checks = QueueResilienceChecks(fail_on="never")
    cdk.Validations.of(app).add_plugins(checks)
    app.synth()
    assert [(f.rule_id, f.severity) for f in checks.findings if f.severity != "info"] == []
