"""The CloudFormation and SAM dialects' steps on a few hand-made values: the key a reference
resolves by (``edges``), the nested stacks whose templates are local files (``cross_stack``), and
the ids and positions the author wrote for what the SAM translator generates (``sam_origins``)."""

from __future__ import annotations

from typing import Any

import pytest

from constructs_lib.audit.parse.dialects import cross_stack, edges, sam_origins
from constructs_lib.audit.parse.intrinsics import Scope
from constructs_lib.audit.parse.positions import Spot

SCOPE = Scope(
    file="stacks/a.json",
    stack="a",
    types={
        "Jobs": "AWS::SQS::Queue",
        "Worker": "AWS::Lambda::Function",
        "Feed": "AWS::Kinesis::Stream",
    },
)


@pytest.mark.parametrize(
    ("kind", "value", "only_sqs", "key"),
    [
        ("queue", {"$ref": "local:stacks/a.json#Jobs"}, False, "local:stacks/a.json#Jobs"),
        ("queue", {"$ref": "local:stacks/a.json#Feed"}, False, None),  # not a queue
        ("function", {"$ref": "local:stacks/a.json#Worker"}, False, "local:stacks/a.json#Worker"),
        ("queue", {"$ref": "export:shared-jobs"}, False, "export:shared-jobs"),
        ("queue", "arn:aws:sqs:us-east-1:123456789012:jobs", True, "queue:jobs"),
        ("queue", "arn:aws:kinesis:us-east-1:123456789012:stream/feed", True, None),
        ("queue", None, False, None),
    ],
)
def test_a_reference_resolves_by_one_key(
    kind: str, value: Any, only_sqs: bool, key: str | None
) -> None:
    assert edges.target_key(SCOPE, kind, value, only_sqs) == key


def test_an_unknowable_reference_resolves_by_an_unresolved_key() -> None:
    key = edges.target_key(SCOPE, "queue", {"$unresolved": "Fn::Whatever"})
    assert key is not None and key.startswith("unresolved:")


def test_only_nested_stacks_with_local_templates_are_children() -> None:
    resources = {
        "Local": {"Type": cross_stack.NESTED_STACK, "Properties": {"TemplateURL": "child.yaml"}},
        "Uploaded": {
            "Type": cross_stack.NESTED_STACK,
            "Properties": {"TemplateURL": "https://bucket.s3.amazonaws.com/child.yaml"},
        },
        "Assembly": {
            "Type": cross_stack.NESTED_STACK,
            "Metadata": {"aws:asset:path": "nested.template.json"},
        },
        "Jobs": {"Type": "AWS::SQS::Queue"},
    }
    assert cross_stack.nested_children("stacks/a.json", resources) == {
        "Local": "stacks/child.yaml",
        "Assembly": "stacks/nested.template.json",
    }


SAM_DOCUMENT = {
    "Resources": {
        "Worker": {
            "Type": "AWS::Serverless::Function",
            "Properties": {"Events": {"Orders": {"Type": "SQS"}}, "EventInvokeConfig": {}},
        },
        "Jobs": {"Type": "AWS::SQS::Queue"},
    }
}


def test_generated_resources_are_named_by_what_the_author_wrote() -> None:
    assert sam_origins.event_origins(SAM_DOCUMENT) == {"WorkerOrders": "Worker.Orders"}
    expanded: dict[str, Any] = {
        "Worker": {},
        "Jobs": {},
        "WorkerOrders": {},
        "WorkerRole": {},
        "WorkerEventInvokeConfigOnFailureQueue": {},
        "Unrelated": {},
    }
    assert sam_origins.generated_origins(SAM_DOCUMENT, expanded) == {
        "WorkerRole": "Worker",
        "WorkerEventInvokeConfigOnFailureQueue": "Worker.EventInvokeConfig",
    }


def test_generated_resources_sit_where_their_origin_is_written() -> None:
    spots = {"Worker": Spot(3, 3, {"Timeout": (5, 7)}), "Jobs": Spot(9, 3, {})}
    expanded: dict[str, Any] = {
        "Resources": {"Worker": {}, "Jobs": {}, "WorkerOrders": {}, "Elsewhere": {}}
    }
    written = sam_origins.written_spots(spots, expanded, {"WorkerOrders": "Worker.Orders"})
    assert written == {
        "Worker": Spot(3, 3, {"Timeout": (5, 7)}),
        "Jobs": Spot(9, 3, {}),
        "WorkerOrders": Spot(3, 3, {}),
    }
