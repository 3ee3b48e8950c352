"""Grants on a ResilientQueue's KMS key are bound to SQS, and whatever cannot be attached to an
imported resource is a warning holding the statement to add.

Expected statements are written here from the SQS key management guide (the actions) and the
KMS developer guide (``kms:ViaService`` = ``sqs.<region>.amazonaws.com``), not read from the
library."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template

from constructs_lib import ResilientQueue

ACCOUNT, OTHER_ACCOUNT, REGION = "123456789012", "210987654321", "eu-west-1"
VIA_SQS = {"StringEquals": {"kms:ViaService": f"sqs.{REGION}.amazonaws.com"}}
IMPORTED_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
IMPORTED_DLQ = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq"


@pytest.fixture
def env_stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "TestStack", env=cdk.Environment(account=ACCOUNT, region=REGION))


def kms_statements(template: Template) -> list[dict[str, Any]]:
    """Every Allow that grants a kms: action, in identity policies and key policies."""
    found: list[dict[str, Any]] = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        found += policy["Properties"]["PolicyDocument"]["Statement"]
    for key in template.find_resources("AWS::KMS::Key").values():
        found += key["Properties"]["KeyPolicy"]["Statement"]
    return [
        s
        for s in found
        if s["Effect"] == "Allow"
        and any(
            a.startswith("kms:")
            for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        )
        and s["Action"] != "kms:*"  # CDK's key administration statement for the account root
    ]


def warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    return [str(m.entry.data) for m in found]


def pasted(message: str) -> dict[str, Any]:
    """The JSON statement a warning ends with, as the owner would paste it."""
    statement, _ = json.JSONDecoder().raw_decode(message, message.index("\n{") + 1)
    assert isinstance(statement, dict)
    return statement


def function(stack: cdk.Stack, construct_id: str = "Fn") -> lambda_.Function:
    return lambda_.Function(
        stack,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        timeout=cdk.Duration.seconds(10),
    )


def test_a_consumer_may_decrypt_only_through_sqs(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key")
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)

    queue.add_lambda_consumer(function(env_stack))

    [statement] = kms_statements(Template.from_stack(env_stack))
    assert statement["Action"] == "kms:Decrypt"
    assert statement["Resource"] == env_stack.resolve(key.key_arn)
    assert statement["Condition"] == VIA_SQS


def test_a_dead_letter_consumer_may_decrypt_only_through_sqs(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key")
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)

    queue.add_dead_letter_consumer(function(env_stack))

    [statement] = kms_statements(Template.from_stack(env_stack))
    assert statement["Condition"] == VIA_SQS


def test_a_producer_granted_send_may_use_the_key_only_through_sqs(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key")
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)

    queue.queue.grant_send_messages(function(env_stack))

    [statement] = kms_statements(Template.from_stack(env_stack))
    assert statement["Condition"] == VIA_SQS


def test_without_an_environment_the_region_is_the_stacks(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key")
    queue = ResilientQueue(stack, "Orders", queue_name="orders", encryption_key=key)

    queue.add_lambda_consumer(function(stack))

    [statement] = kms_statements(Template.from_stack(stack))
    assert statement["Condition"] == {
        "StringEquals": {
            "kms:ViaService": {"Fn::Join": ["", ["sqs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
        }
    }


def test_redrive_key_statements_are_bound_to_sqs(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key")
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)

    queue.grant_redrive(iam.Role(env_stack, "Operator", assumed_by=iam.AccountRootPrincipal()))

    [statement] = kms_statements(Template.from_stack(env_stack))
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statement["Condition"] == VIA_SQS


def test_a_principal_of_another_account_is_trusted_by_the_key_through_sqs_only(
    env_stack: cdk.Stack,
) -> None:
    key = kms.Key(env_stack, "Key")
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)
    operator = iam.Role.from_role_arn(
        env_stack, "Operator", f"arn:aws:iam::{OTHER_ACCOUNT}:role/operator", mutable=False
    )

    grant = queue.grant_redrive(operator)

    [key_resource] = Template.from_stack(env_stack).find_resources("AWS::KMS::Key").values()
    [trusted] = [
        s
        for s in key_resource["Properties"]["KeyPolicy"]["Statement"]
        if s["Principal"] == {"AWS": f"arn:aws:iam::{OTHER_ACCOUNT}:role/operator"}
    ]
    assert sorted(trusted["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert trusted["Condition"] == VIA_SQS
    assert grant.success


def test_an_imported_key_warns_with_the_key_statement_for_another_account(
    env_stack: cdk.Stack,
) -> None:
    key = kms.Key.from_key_arn(env_stack, "Key", IMPORTED_KEY)
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)
    operator = iam.Role.from_role_arn(
        env_stack, "Operator", f"arn:aws:iam::{OTHER_ACCOUNT}:role/operator", mutable=False
    )

    grant = queue.grant_redrive(operator)

    assert not grant.success
    [message] = [m for m in warnings(env_stack) if "keyPolicyNotAdded" in m or IMPORTED_KEY in m]
    assert IMPORTED_KEY in message
    assert pasted(message) == {
        "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
        "Condition": VIA_SQS,
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{OTHER_ACCOUNT}:role/operator"},
        "Resource": "*",
    }


def test_an_imported_dead_letter_queue_warns_with_its_queue_statement(
    env_stack: cdk.Stack,
) -> None:
    dead_letter_queue = sqs.Queue.from_queue_arn(env_stack, "Dlq", IMPORTED_DLQ)
    queue = ResilientQueue(
        env_stack, "Orders", queue_name="orders", dead_letter_queue=dead_letter_queue
    )
    operator = iam.Role.from_role_arn(
        env_stack, "Operator", f"arn:aws:iam::{OTHER_ACCOUNT}:role/operator", mutable=False
    )

    grant = queue.grant_redrive(operator)

    assert not grant.success
    [message] = [m for m in warnings(env_stack) if "queue policy" in m and IMPORTED_DLQ in m]
    statement = pasted(message)
    assert statement["Principal"] == {"AWS": f"arn:aws:iam::{OTHER_ACCOUNT}:role/operator"}
    assert statement["Resource"] == IMPORTED_DLQ
    assert "sqs:StartMessageMoveTask" in statement["Action"]
    assert "Token[" not in message and "jsii" not in message


def test_an_imported_dead_letter_queue_without_its_key_warns_what_to_grant(
    env_stack: cdk.Stack,
) -> None:
    key = kms.Key(env_stack, "Key")
    dead_letter_queue = sqs.Queue.from_queue_arn(env_stack, "Dlq", IMPORTED_DLQ)
    queue = ResilientQueue(
        env_stack,
        "Orders",
        queue_name="orders",
        encryption_key=key,
        dead_letter_queue=dead_letter_queue,
    )

    queue.grant_redrive(iam.Role(env_stack, "Operator", assumed_by=iam.AccountRootPrincipal()))

    [message] = [m for m in warnings(env_stack) if "without its encryption_master_key" in m]
    statement = pasted(message)
    assert statement["Action"] == "kms:Decrypt"
    assert statement["Condition"] == VIA_SQS


def test_a_queue_created_here_gives_no_warning(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key")
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)

    queue.grant_redrive(iam.Role(env_stack, "Operator", assumed_by=iam.AccountRootPrincipal()))
    queue.add_producer(sns.Topic(env_stack, "Topic"))

    assert [m for m in warnings(env_stack) if "add" in m and "\n{" in m] == []


def test_a_key_of_another_account_warns_that_its_policy_must_name_the_consumer(
    env_stack: cdk.Stack,
) -> None:
    # The key's account is the one its ARN names: its policy must trust this account's role.
    other_key = IMPORTED_KEY.replace(ACCOUNT, OTHER_ACCOUNT)
    key = kms.Key.from_key_arn(env_stack, "Key", other_key)
    queue = ResilientQueue(env_stack, "Orders", queue_name="orders", encryption_key=key)

    queue.add_lambda_consumer(function(env_stack))

    [message] = [m for m in warnings(env_stack) if other_key in m]
    statement = pasted(message)
    assert statement["Action"] == "kms:Decrypt"
    assert statement["Condition"] == VIA_SQS
    assert "Fn::GetAtt" not in json.dumps(statement) and "${" in json.dumps(statement["Principal"])
