"""A construct warning that is an audit finding gives way to a suppression of that rule.

Suppressed where the audit would honour the suppression (an acknowledgment on the resource or an
ancestor, cdk_nag Metadata on the resource the finding names), the warning becomes an info that
names the rule and the reason; a suppression without a reason leaves the warning and adds one.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match

from constructs_lib import ResilientQueue
from constructs_lib.audit.engines import local as engine
from tests.constructs.conftest import FunctionFactory, warnings_matching

REASON = "Alarms are read on the team's wall dashboard."
PLUGIN_ID = "constructs-lib-queue-resilience"


def construct_warnings(stack: cdk.Stack, prop: str) -> list[str]:
    return warnings_matching(stack, f"[ack: constructs_lib:{prop}]")


def construct_infos(stack: cdk.Stack, prop: str) -> list[str]:
    messages = Annotations.from_stack(stack).find_info("*", Match.any_value())
    return [
        str(m.entry.data) for m in messages if f"[ack: constructs_lib:{prop}]" in str(m.entry.data)
    ]


def ignored_suppressions(stack: cdk.Stack) -> list[str]:
    return construct_warnings(stack, "suppression")


def suppress_in_metadata(construct: Any, rule_id: str, reason: str) -> None:
    construct.node.default_child.add_metadata(
        "cdk_nag", {"rules_to_suppress": [{"id": rule_id, "reason": reason}]}
    )


def audit_findings(stack: cdk.Stack, rule_id: str) -> list[Any]:
    assembly = cdk.Stage.of(stack).synth(force=True)  # type: ignore[union-attr]
    return [f for f in engine.audit_paths([assembly.directory]).findings if f.rule_id == rule_id]


# --- QR024: alarms without actions (a queue warning; the audit names each alarm) -------------


def test_silent_alarms_warn_without_a_suppression(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")

    [message] = construct_warnings(stack, "alarm_actions")
    assert "alarm_actions=[]: is empty, so the alarms notify nobody" in message
    assert construct_infos(stack, "alarm_actions") == []
    assert ignored_suppressions(stack) == []


def test_metadata_on_the_alarms_turns_the_warning_into_an_info(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders")
    for alarm in queue.alarms:
        suppress_in_metadata(alarm, "QR024", REASON)

    assert construct_warnings(stack, "alarm_actions") == []
    [info] = construct_infos(stack, "alarm_actions")
    assert "QR024 suppressed in the Metadata of TestStack/Orders/" in info
    assert REASON in info
    # The audit honours the same suppressions: one suppression serves both.
    findings = audit_findings(stack, "QR024")
    assert findings and all(f.suppression == "inSource" for f in findings)


def test_template_metadata_suppresses_for_every_resource_of_the_stack(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")
    stack.add_metadata("cdk_nag", {"rules_to_suppress": [{"id": "QR024", "reason": REASON}]})

    assert construct_warnings(stack, "alarm_actions") == []
    [info] = construct_infos(stack, "alarm_actions")
    assert f"QR024 suppressed in the template Metadata of TestStack: {REASON}" in info
    findings = audit_findings(stack, "QR024")
    assert findings and all(f.suppression == "inSource" for f in findings)


def test_metadata_on_the_queue_alone_does_not_suppress_findings_on_the_alarms(
    stack: cdk.Stack,
) -> None:
    queue = ResilientQueue(stack, "Orders")
    suppress_in_metadata(queue.queue, "QR024", REASON)

    assert construct_warnings(stack, "alarm_actions")
    assert construct_infos(stack, "alarm_actions") == []
    assert all(f.suppression == "" for f in audit_findings(stack, "QR024"))


@pytest.mark.parametrize("rule_id", ["QR024", f"{PLUGIN_ID}::QR024"])
def test_an_acknowledgment_on_the_stack_turns_the_warning_into_an_info(
    stack: cdk.Stack, rule_id: str
) -> None:
    ResilientQueue(stack, "Orders")
    # Added after the construct, as an app does: the warning is decided at synth.
    Validations.of(stack).acknowledge(Acknowledgment(id=rule_id, reason=REASON))

    assert construct_warnings(stack, "alarm_actions") == []
    [info] = construct_infos(stack, "alarm_actions")
    assert f"QR024 acknowledged on TestStack: {REASON}" in info
    assert "alarm_actions=[]: is empty" in info


def test_an_acknowledgment_of_another_rule_leaves_the_warning(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")
    Validations.of(stack).acknowledge(Acknowledgment(id="QR009", reason=REASON))

    assert construct_warnings(stack, "alarm_actions")
    assert construct_infos(stack, "alarm_actions") == []


def test_an_acknowledgment_with_a_short_reason_is_not_honoured(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")
    Validations.of(stack).acknowledge(Acknowledgment(id="QR024", reason="ok"))

    assert construct_warnings(stack, "alarm_actions")
    assert construct_infos(stack, "alarm_actions") == []
    [why] = ignored_suppressions(stack)
    assert "QR024 acknowledged on TestStack gives the reason 'ok', shorter than 10" in why
    assert "the warning constructs_lib:alarm_actions stands" in why


# --- QR028: a consumer allowing recursive loops (a function warning, decided at synth) --------


def looping_function(stack: cdk.Stack) -> lambda_.Function:
    return lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
        recursive_loop=lambda_.RecursiveLoop.ALLOW,
    )


def consumed_by(stack: cdk.Stack, function: lambda_.IFunction) -> ResilientQueue:
    queue = ResilientQueue(stack, "Orders")
    Validations.of(queue).acknowledge(Acknowledgment(id="QR024", reason=REASON))
    queue.add_lambda_consumer(function)
    return queue


def test_a_recursive_loop_warns_without_a_suppression(stack: cdk.Stack) -> None:
    consumed_by(stack, looping_function(stack))

    [message] = construct_warnings(stack, "recursive_loop")
    assert "recursive_loop='Allow'" in message
    assert construct_infos(stack, "recursive_loop") == []


def test_metadata_on_the_function_turns_the_loop_warning_into_an_info(stack: cdk.Stack) -> None:
    function = looping_function(stack)
    consumed_by(stack, function)
    suppress_in_metadata(function, "QR028", "The loop ends after three hops by design.")

    assert construct_warnings(stack, "recursive_loop") == []
    [info] = construct_infos(stack, "recursive_loop")
    assert "QR028 suppressed in the Metadata of TestStack/Worker/Resource" in info
    assert "The loop ends after three hops by design." in info
    [finding] = audit_findings(stack, "QR028")
    assert finding.suppression == "inSource"


def test_an_acknowledgment_on_the_stack_turns_the_loop_warning_into_an_info(
    stack: cdk.Stack,
) -> None:
    consumed_by(stack, looping_function(stack))
    Validations.of(stack).acknowledge(Acknowledgment(id=f"{PLUGIN_ID}::QR028", reason=REASON))

    assert construct_warnings(stack, "recursive_loop") == []
    [info] = construct_infos(stack, "recursive_loop")
    assert f"QR028 acknowledged on TestStack: {REASON}" in info


def test_metadata_with_a_short_reason_leaves_the_loop_warning(stack: cdk.Stack) -> None:
    function = looping_function(stack)
    consumed_by(stack, function)
    suppress_in_metadata(function, "QR028", "n/a")

    assert construct_warnings(stack, "recursive_loop")
    assert construct_infos(stack, "recursive_loop") == []
    [why] = ignored_suppressions(stack)
    assert "QR028 suppressed in the Metadata of TestStack/Worker/Resource gives the reason" in why


# --- warnings on an event source mapping (QR019, QR015): the audit names the mapping ---------


def test_an_acknowledgment_on_the_consumer_function_covers_its_mapping(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    queue = consumed_by(stack, make_function())
    queue.add_lambda_consumer(
        function,
        filters=[
            lambda_.FilterCriteria.filter({"body": {"kind": lambda_.FilterRule.is_equal("a")}})
        ],
        event_source_metrics=False,
    )
    Validations.of(function).acknowledge(
        Acknowledgment(id="QR019", reason="Only orders of kind a belong to this consumer.")
    )

    assert construct_warnings(stack, "filters") == []
    [info] = construct_infos(stack, "filters")
    assert f"QR019 acknowledged on {function.node.path}" in info
    # Not acknowledged: still a warning.
    assert construct_warnings(stack, "event_source_metrics")


def test_an_acknowledgment_on_the_queue_does_not_reach_the_mapping(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = consumed_by(stack, make_function())
    queue.add_lambda_consumer(make_function(), event_source_metrics=False)
    # The mapping lives under the function, not under the queue: the audit would still
    # report QR015 there, so the warning stays.
    Validations.of(queue).acknowledge(Acknowledgment(id="QR015", reason=REASON))

    assert construct_warnings(stack, "event_source_metrics")
    assert construct_infos(stack, "event_source_metrics") == []


# --- every paired warning: the construct goes quiet where the audit does -------------------

ONE_FILTER = [lambda_.FilterCriteria.filter({"body": {"kind": lambda_.FilterRule.is_equal("a")}})]


def build_scenario(stack: cdk.Stack, rule_id: str) -> None:
    """The smallest app whose construct warning is the audit finding ``rule_id``."""
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
        recursive_loop=lambda_.RecursiveLoop.ALLOW if rule_id == "QR028" else None,
        reserved_concurrent_executions=10 if rule_id == "QR017" else None,
    )
    queue = ResilientQueue(
        stack,
        "Orders",
        max_receive_count=3 if rule_id == "QR008" else 5,
        max_message_size=1_048_576 if rule_id == "QR022" else None,
    )
    queue.add_lambda_consumer(
        function,
        max_concurrency=20 if rule_id == "QR017" else None,
        filters=ONE_FILTER if rule_id == "QR019" else None,
        event_source_metrics=rule_id != "QR015",
    )


PAIRED = {
    "QR024": "alarm_actions",
    "QR008": "max_receive_count",
    "QR015": "event_source_metrics",
    "QR017": "reserved_concurrent_executions",
    "QR019": "filters",
    "QR022": "batch_size",
    "QR028": "recursive_loop",
}


@pytest.mark.parametrize("route", ["acknowledgment", "metadata"])
@pytest.mark.parametrize(("rule_id", "prop"), PAIRED.items(), ids=PAIRED)
def test_each_paired_warning_gives_way_where_the_audit_accepts_the_finding(
    stack: cdk.Stack, rule_id: str, prop: str, route: str
) -> None:
    import cdk_nag

    build_scenario(stack, rule_id)
    assert construct_warnings(stack, prop), "the scenario must raise the warning"
    named = {f.resource for f in audit_findings(stack, rule_id)}
    assert named, "the scenario must raise the finding"

    # The same app again (a synthesized app is final), with the finding accepted: by an
    # acknowledgment on the stack that cdk-nag writes into the template, or by Metadata on
    # exactly the resources the audit's findings name.
    accepted = cdk.Stack(cdk.App(), "TestStack")
    build_scenario(accepted, rule_id)
    if route == "acknowledgment":
        Validations.of(accepted).acknowledge(Acknowledgment(id=rule_id, reason=REASON))
        cdk.Aspects.of(accepted).add(cdk_nag.WriteNagSuppressionsToCloudFormationAspect())
        where = "acknowledged on TestStack"
    else:
        for construct in accepted.node.find_all():
            if isinstance(construct, cdk.CfnResource) and (
                accepted.resolve(accepted.get_logical_id(construct)) in named
            ):
                construct.add_metadata(
                    "cdk_nag", {"rules_to_suppress": [{"id": rule_id, "reason": REASON}]}
                )
        where = "suppressed in the Metadata of TestStack/"

    assert construct_warnings(accepted, prop) == []
    [info] = construct_infos(accepted, prop)
    assert f"{rule_id} {where}" in info
    assert REASON in info
    findings = audit_findings(accepted, rule_id)
    assert findings and all(f.suppression == "inSource" for f in findings)
