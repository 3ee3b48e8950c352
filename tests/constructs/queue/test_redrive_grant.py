"""ResilientQueue.grant_redrive: what moving dead letters back to the source takes, and nothing
more. The local AWS emulator has no message move tasks, so the statements are checked on the
synthesized template. The expected actions are written here from the SQS API permissions
reference and the SQS key management guide, not read from the library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template

from constructs_lib import ParameterTypeError, ResilientQueue

ON_DEAD_LETTER_QUEUE = [
    "sqs:StartMessageMoveTask",
    "sqs:ListMessageMoveTasks",
    "sqs:CancelMessageMoveTask",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
]
ON_SOURCE = ["sqs:SendMessage", "sqs:GetQueueAttributes"]
GrantableFactory = Callable[[cdk.Stack], iam.IGrantable]
GRANTEES: dict[str, GrantableFactory] = {
    "role": lambda stack: iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal()),
    "user": lambda stack: iam.User(stack, "Operator"),
}


def identity_statements(stack: cdk.Stack, grantee: iam.IGrantable) -> list[dict[str, Any]]:
    """The statements of the identity policies attached to ``grantee`` (a role or a user)."""
    cfn = grantee.node.default_child  # type: ignore[attr-defined]
    reference = {"Ref": stack.get_logical_id(cfn)}
    statements: list[dict[str, Any]] = []
    for policy in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values():
        properties = policy["Properties"]
        if reference in properties.get("Roles", []) + properties.get("Users", []):
            statements += properties["PolicyDocument"]["Statement"]
    return statements


def actions_of(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def by_resource(stack: cdk.Stack, statements: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Actions per resource; resources rendered as text so they can be keys."""
    return {str(s["Resource"]): actions_of(s) for s in statements}


def arn(stack: cdk.Stack, value: str) -> str:
    return str(stack.resolve(value))


@pytest.mark.parametrize("kind", list(GRANTEES))
def test_sse_sqs_queues_get_exactly_the_move_task_actions(stack: cdk.Stack, kind: str) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    grantee = GRANTEES[kind](stack)

    grant = queue.grant_redrive(grantee)

    assert grant.success
    statements = identity_statements(stack, grantee)
    assert all(s["Effect"] == "Allow" and "Condition" not in s for s in statements)
    assert by_resource(stack, statements) == {
        arn(stack, queue.dead_letter_queue.queue_arn): ON_DEAD_LETTER_QUEUE,
        arn(stack, queue.queue.queue_arn): ON_SOURCE,
    }


@pytest.mark.parametrize("kind", list(GRANTEES))
def test_one_customer_key_gets_one_statement_to_decrypt_and_generate(
    stack: cdk.Stack, kind: str
) -> None:
    key = kms.Key(stack, "Key")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)
    grantee = GRANTEES[kind](stack)

    queue.grant_redrive(grantee)

    granted = by_resource(stack, identity_statements(stack, grantee))
    # Receiving from the DLQ decrypts; sending to the source generates a data key and decrypts.
    assert sorted(granted[arn(stack, key.key_arn)]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert len(granted) == 3


@pytest.mark.parametrize("kind", list(GRANTEES))
def test_a_given_dead_letter_queue_with_its_own_key_needs_decrypt_on_that_key(
    stack: cdk.Stack, kind: str
) -> None:
    source_key, dead_letter_key = kms.Key(stack, "SourceKey"), kms.Key(stack, "DlqKey")
    dead_letter_queue = sqs.Queue(
        stack,
        "Dlq",
        encryption_master_key=dead_letter_key,
        retention_period=cdk.Duration.days(14),
    )
    queue = ResilientQueue(
        stack,
        "Orders",
        queue_name="orders",
        encryption_key=source_key,
        dead_letter_queue=dead_letter_queue,
    )
    grantee = GRANTEES[kind](stack)

    queue.grant_redrive(grantee)

    granted = by_resource(stack, identity_statements(stack, grantee))
    assert granted == {
        arn(stack, dead_letter_queue.queue_arn): ON_DEAD_LETTER_QUEUE,
        arn(stack, queue.queue.queue_arn): ON_SOURCE,
        arn(stack, dead_letter_key.key_arn): ["kms:Decrypt"],
        arn(stack, source_key.key_arn): ["kms:GenerateDataKey", "kms:Decrypt"],
    }


@pytest.mark.parametrize(
    "managed_key",
    [
        lambda stack: kms.Alias.from_alias_name(stack, "Managed", "alias/aws/sqs"),
        lambda stack: kms.Key.from_key_arn(
            stack, "Managed", "arn:aws:kms:us-east-1:123456789012:alias/aws/sqs"
        ),
    ],
    ids=["alias", "arn"],
)
def test_the_aws_managed_key_gets_no_statement(
    stack: cdk.Stack, managed_key: Callable[[cdk.Stack], kms.IKey]
) -> None:
    # Its key policy already admits the account's principals that may use SQS.
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=managed_key(stack))
    grantee = GRANTEES["role"](stack)

    queue.grant_redrive(grantee)

    statements = identity_statements(stack, grantee)
    assert not [a for s in statements for a in actions_of(s) if a.startswith("kms:")]
    assert len(statements) == 2


def test_no_statement_has_a_wildcard_resource(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)
    grantee = GRANTEES["role"](stack)

    queue.grant_redrive(grantee)

    for statement in identity_statements(stack, grantee):
        resources = statement["Resource"]
        for resource in resources if isinstance(resources, list) else [resources]:
            assert "*" not in str(resource), statement


def test_a_principal_of_the_account_needs_no_queue_or_key_policy_statement(
    stack: cdk.Stack,
) -> None:
    key = kms.Key(stack, "Key")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)

    queue.grant_redrive(GRANTEES["role"](stack))

    template = Template.from_stack(stack)
    for policy in template.find_resources("AWS::SQS::QueuePolicy").values():
        allows = [
            s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"
        ]
        assert allows == []
    [key_resource] = template.find_resources("AWS::KMS::Key").values()
    # Only CDK's statement that lets the account's IAM policies use the key.
    assert len(key_resource["Properties"]["KeyPolicy"]["Statement"]) == 1


def test_the_grant_is_returned_with_every_statement(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)

    grant = queue.grant_redrive(GRANTEES["role"](stack))

    assert grant.success
    assert len(grant.principal_statements) == 3


def test_a_dependency_on_the_grant_waits_for_the_policy(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    grant = queue.grant_redrive(GRANTEES["role"](stack))
    waiter = cdk.CfnResource(stack, "Waiter", type="AWS::CloudFormation::WaitConditionHandle")

    grant.apply_before(waiter)

    Template.from_stack(stack).has_resource(
        "AWS::CloudFormation::WaitConditionHandle",
        {"DependsOn": Match.array_with([Match.string_like_regexp("^OperatorDefaultPolicy")])},
    )


@pytest.mark.parametrize(
    ("value", "described"),
    [
        pytest.param(lambda stack: "arn:aws:iam::123456789012:role/ops", "a str", id="str"),
        pytest.param(lambda stack: None, "None", id="none"),
        pytest.param(lambda stack: sqs.Queue(stack, "Other"), "aws_sqs.Queue", id="queue"),
        pytest.param(lambda stack: sns.Topic(stack, "Topic"), "aws_sns.Topic", id="topic"),
    ],
)
def test_fails_for_a_grantee_of_the_wrong_type(
    stack: cdk.Stack, value: Callable[[cdk.Stack], object], described: str
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    wrong = value(stack)

    with pytest.raises(ParameterTypeError) as raised:
        queue.grant_redrive(wrong)  # type: ignore[arg-type]

    message = str(raised.value)
    assert message.startswith("TestStack/Orders: 1 argument of the wrong type:")
    assert "grantee=" in message and described in message
    assert "Fix: pass grantee=iam.Role(" in message
    assert Template.from_stack(stack).find_resources("AWS::IAM::Policy") == {}
