"""Adopting deployed queues, at synth: the warnings for each change that would replace or
delete a deployed queue (and none when the adoption is exact), the ConfigurationErrors for an
``ExistingQueues`` that cannot describe a deployed stack, and the DLQ's redrive-allow policy
when the queue names are generated."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Validations
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template

from constructs_lib import ConfigurationError, ExistingQueues, ParameterTypeError, ResilientQueue
from constructs_lib.checks import QueueResilienceChecks
from tests.constructs.conftest import FunctionFactory, resources_of_type

WARNING_ID = "constructs_lib:existing"
# A name CloudFormation generates: <stack>-<logical id>-<suffix>.
GENERATED_NAME = "TestStack-OrdersQueue3DFA1D51-1A2B3C4D5E6F"
QUEUE_URL = f"https://sqs.eu-west-1.amazonaws.com/111111111111/{GENERATED_NAME}"


def named(**overrides: Any) -> ExistingQueues:
    """A deployed named pair, described exactly as a ResilientQueue("Orders", queue_name=
    "orders") builds it."""
    fields: dict[str, Any] = {
        "queue_logical_id": "OrdersQueue3DFA1D51",
        "queue_name": "orders",
        "dead_letter_queue_name": "orders-dlq",
        "dead_letter_logical_id": "OrdersDlq16CD0DA3",
    }
    return ExistingQueues(**{**fields, **overrides})


def generated(**overrides: Any) -> ExistingQueues:
    fields: dict[str, Any] = {
        "queue_logical_id": "OrdersQueue3DFA1D51",
        "dead_letter_logical_id": "OrdersDlq16CD0DA3",
        "names_generated": True,
    }
    return ExistingQueues(**{**fields, **overrides})


def adoption_warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(m.entry.data) for m in found if f"[ack: {WARNING_ID}]" in str(m.entry.data)]


def queues(stack: cdk.Stack) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties", {})  # type: ignore[misc]
        for logical_id, resource in resources_of_type(stack, "AWS::SQS::Queue").items()
    }


# --- replacement warnings ---------------------------------------------------------------------


def test_an_exact_named_adoption_warns_nothing_and_keeps_the_logical_ids(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    orders = ResilientQueue(stack, "Orders", existing=named())
    orders.add_lambda_consumer(make_function(30))
    assert adoption_warnings(stack) == []
    found = queues(stack)
    assert found["OrdersQueue3DFA1D51"]["QueueName"] == "orders"
    assert found["OrdersDlq16CD0DA3"]["QueueName"] == "orders-dlq"


def test_an_exact_generated_name_adoption_warns_nothing_and_sets_no_name(
    stack: cdk.Stack,
) -> None:
    ResilientQueue(stack, "Orders", existing=generated(queue_name=GENERATED_NAME))
    assert adoption_warnings(stack) == []
    found = queues(stack)
    assert set(found) == {"OrdersQueue3DFA1D51", "OrdersDlq16CD0DA3"}
    assert all("QueueName" not in properties for properties in found.values())


def test_warns_that_a_new_queue_name_replaces_the_source(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders-v2", existing=named())
    # The DLQ's name follows the source's, so it changes too: one warning for each queue.
    source, dead_letter = sorted(adoption_warnings(stack), key=lambda w: "DLQ " in w)
    assert "source queue OrdersQueue3DFA1D51 ('orders')" in source
    assert "from 'orders' to 'orders-v2'" in source
    assert "needs replacement" in source
    assert "from 'orders-dlq' to 'orders-v2-dlq'" in dead_letter


def test_warns_that_a_different_dlq_name_replaces_the_dlq(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", existing=named(dead_letter_queue_name="orders-deadletter"))
    (warning,) = adoption_warnings(stack)
    assert "DLQ OrdersDlq16CD0DA3 ('orders-deadletter')" in warning
    assert "from 'orders-deadletter' to 'orders-dlq'" in warning
    assert "dead_letter_queue" in warning  # the way to keep it


def test_warns_that_a_changed_queue_type_replaces_both(stack: cdk.Stack) -> None:
    ResilientQueue(
        stack,
        "Orders",
        fifo=True,
        existing=named(queue_name="orders.fifo", dead_letter_queue_name=None),
    )
    (warning,) = [w for w in adoption_warnings(stack) if "FifoQueue" in w]
    assert "source queue OrdersQueue3DFA1D51 ('orders.fifo')" in warning
    assert "are standard and would become FIFO" in warning


def test_warns_that_a_dlq_without_its_logical_id_is_deleted(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", existing=named(dead_letter_logical_id=None))
    (warning,) = adoption_warnings(stack)
    assert "no existing.dead_letter_logical_id" in warning
    assert "deletes the deployed one" in warning


def test_a_queue_url_counts_as_the_deployed_name(stack: cdk.Stack) -> None:
    ResilientQueue(
        stack,
        "Orders",
        existing=named(queue_name="https://sqs.eu-west-1.amazonaws.com/111111111111/orders"),
    )
    assert adoption_warnings(stack) == []
    assert queues(stack)["OrdersQueue3DFA1D51"]["QueueName"] == "orders"


# --- redrive-allow with generated names -------------------------------------------------------


def test_generated_names_with_the_deployed_name_allow_exactly_that_source(
    stack: cdk.Stack,
) -> None:
    ResilientQueue(stack, "Orders", existing=generated(queue_name=QUEUE_URL))
    allow = queues(stack)["OrdersDlq16CD0DA3"]["RedriveAllowPolicy"]
    assert allow == {
        "redrivePermission": "byQueue",
        "sourceQueueArns": [
            {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":sqs:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        f":{GENERATED_NAME}",
                    ],
                ]
            }
        ],
    }


def test_generated_names_without_the_deployed_name_allow_any_source_and_warn(
    stack: cdk.Stack,
) -> None:
    ResilientQueue(stack, "Orders", existing=generated())
    assert "RedriveAllowPolicy" not in queues(stack)["OrdersDlq16CD0DA3"]
    (warning,) = adoption_warnings(stack)
    assert "source queue OrdersQueue3DFA1D51" in warning
    assert "QR004" in warning
    assert "existing.queue_name" in warning and "describe-stack-resources" in warning


# --- ExistingQueues errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "given", "shown"),
    [
        ("queue_logical_id", "Orders-Queue", "existing.queue_logical_id='Orders-Queue'"),
        ("dead_letter_logical_id", "", "existing.dead_letter_logical_id=''"),
        ("queue_policy_logical_id", "Policy_1", "existing.queue_policy_logical_id='Policy_1'"),
        ("dead_letter_policy_logical_id", "A" * 256, "existing.dead_letter_policy_logical_id='AAA"),
        (
            "event_source_logical_ids",
            {"Worker": "Worker/Mapping"},
            "existing.event_source_logical_ids['Worker']='Worker/Mapping'",
        ),
    ],
)
def test_a_malformed_logical_id_is_refused(
    stack: cdk.Stack, field: str, given: object, shown: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", existing=named(**{field: given}))
    message = str(raised.value)
    assert shown in message
    assert "is not a CloudFormation logical id (1-255 letters and digits)" in message
    assert "Fix: copy the logical id from the deployed template's Resources section" in message


def test_a_name_for_generated_names_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", queue_name="orders", existing=generated())
    message = str(raised.value)
    assert "queue_name='orders'" in message
    assert "adding a name replaces the queue" in message
    assert "Fix: remove queue_name" in message


def test_named_queues_without_a_name_are_refused(stack: cdk.Stack) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", existing=named(queue_name=None))
    message = str(raised.value)
    assert "existing.queue_name=None" in message
    assert "replaces the deployed queue" in message
    assert "names_generated=True" in message


def test_a_dlq_to_keep_with_a_given_dlq_is_refused(stack: cdk.Stack) -> None:
    given = sqs.Queue(stack, "Given", queue_name="given-dlq")
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", dead_letter_queue=given, existing=named())
    message = str(raised.value)
    assert "existing.dead_letter_logical_id='OrdersDlq16CD0DA3'" in message
    assert "dead_letter_queue gives another" in message
    assert "Fix: remove dead_letter_queue, or remove dead_letter_logical_id" in message


def test_fields_of_the_wrong_kind_are_refused_together() -> None:
    with pytest.raises(ParameterTypeError) as raised:
        named(queue_name=5, fifo="yes", event_source_logical_ids={1: "Mapping"})
    message = str(raised.value)
    assert message.startswith("ExistingQueues: 3 arguments of the wrong type")
    assert "queue_name=5: is not a str or None. Fix: pass a str or None" in message
    assert "fifo='yes': is not a bool" in message
    assert "event_source_logical_ids={1: 'Mapping'}: has a key that is not a str" in message


# --- the audit of the adopting construct's own output -----------------------------------------


@pytest.mark.parametrize(
    "existing",
    [named(), generated(queue_name=GENERATED_NAME), generated()],
    ids=["named", "generated-with-name", "generated-without-name"],
)
def test_the_adopting_output_has_no_error_finding(tmp_path: Any, existing: ExistingQueues) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Orders")
    plugin = QueueResilienceChecks(fail_on="never")
    Validations.of(app).add_plugins(plugin)
    orders = ResilientQueue(stack, "Orders", existing=existing)
    worker = cdk.aws_lambda.Function(
        stack,
        "Worker",
        runtime=cdk.aws_lambda.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=cdk.aws_lambda.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
    )
    orders.add_lambda_consumer(worker)
    app.synth()
    assert Template.from_stack(stack).find_resources("AWS::SQS::Queue")  # the audit had queues
    assert [(f.rule_id, f.message) for f in plugin.findings if f.severity == "error"] == []
