"""``ResilientQueue(large_payloads=...)``: the bucket it creates or takes, its lifecycle, the
grants and environment of the functions it wires, the runtime layer, and its refusals.

Expected values are written here from the AWS documents the library cites: S3 lifecycle days
(S3 API LifecycleExpiration: whole days; S3 user guide: rounded up to the next midnight UTC), a
standard DLQ keeping the original enqueue timestamp and a FIFO DLQ resetting it (SQS developer
guide, setting-up-dead-letter-queue-retention), and the KMS actions of SSE-KMS objects (S3 user
guide, UsingKMSEncryption)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from constructs_lib import (
    ConfigurationError,
    LargePayloads,
    ParameterTypeError,
    ResilientQueue,
    RetryBackoff,
)
from constructs_lib.large_payloads import (
    PAYLOAD_BUCKET_ENV,
    PAYLOAD_DELETE_ENV,
    PAYLOAD_PREFIX_ENV,
)
from tests.constructs.conftest import FunctionFactory, warnings_matching

DAY = 86_400
ACCOUNT, REGION = "123456789012", "eu-west-1"


@pytest.fixture
def env_stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "TestStack", env=cdk.Environment(account=ACCOUNT, region=REGION))


def only_bucket(stack: cdk.Stack) -> dict[str, Any]:
    [bucket] = Template.from_stack(stack).find_resources("AWS::S3::Bucket").values()
    return bucket


def expiration_days(stack: cdk.Stack) -> int:
    [rule] = only_bucket(stack)["Properties"]["LifecycleConfiguration"]["Rules"]
    days: int = rule["ExpirationInDays"]
    return days


def environment(stack: cdk.Stack, function: lambda_.Function) -> dict[str, Any]:
    resolved = stack.resolve(function.node.default_child.logical_id)  # type: ignore[union-attr]
    properties = Template.from_stack(stack).to_json()["Resources"][resolved]["Properties"]
    variables: dict[str, Any] = properties.get("Environment", {}).get("Variables", {})
    return variables


def statements_of(stack: cdk.Stack, function: lambda_.Function) -> list[dict[str, Any]]:
    """The statements of the identity policy on ``function``'s role."""
    role = stack.resolve(function.role.node.default_child.logical_id)  # type: ignore[union-attr]
    found: list[dict[str, Any]] = []
    for policy in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def s3_actions(stack: cdk.Stack, function: lambda_.Function) -> set[str]:
    return {a for s in statements_of(stack, function) for a in actions(s) if a.startswith("s3:")}


# --- off by default ----------------------------------------------------------------------------


def test_without_large_payloads_there_is_no_bucket(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders")

    Template.from_stack(stack).resource_count_is("AWS::S3::Bucket", 0)


def test_without_large_payloads_a_consumer_gets_no_payload_variables(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders")
    function = make_function()
    queue.add_lambda_consumer(function)

    assert PAYLOAD_BUCKET_ENV not in environment(stack, function)
    assert queue.payloads is None


# --- the bucket the construct creates ----------------------------------------------------------


def test_the_created_bucket_blocks_all_public_access(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", large_payloads=LargePayloads())

    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            }
        },
    )


def test_the_created_bucket_denies_requests_without_tls(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", large_payloads=LargePayloads())

    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "s3:*",
                                "Principal": {"AWS": "*"},
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_without_a_customer_key_the_bucket_is_s3_managed(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", large_payloads=LargePayloads())

    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            }
        },
    )


def test_with_the_queues_key_the_bucket_is_sse_kms_with_a_bucket_key(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    ResilientQueue(stack, "Orders", encryption_key=key, large_payloads=LargePayloads())

    key_arn = stack.resolve(key.key_arn)
    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": key_arn,
                        },
                    }
                ]
            }
        },
    )


def test_the_aws_managed_sqs_key_leaves_the_bucket_s3_managed(stack: cdk.Stack) -> None:
    # S3 cannot use SQS's AWS managed key; the queue stays SSE-KMS with it.
    managed = kms.Alias.from_alias_name(stack, "Managed", "alias/aws/sqs")
    ResilientQueue(stack, "Orders", encryption_key=managed, large_payloads=LargePayloads())

    encryption = only_bucket(stack)["Properties"]["BucketEncryption"]
    assert encryption["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]


def test_the_created_bucket_is_retained_by_default(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", large_payloads=LargePayloads())

    bucket = only_bucket(stack)
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("Retain", "Retain")


def test_the_created_bucket_follows_the_queues_removal_policy(stack: cdk.Stack) -> None:
    ResilientQueue(
        stack,
        "Orders",
        removal_policy=cdk.RemovalPolicy.DESTROY,
        large_payloads=LargePayloads(),
    )

    assert only_bucket(stack)["DeletionPolicy"] == "Delete"
    # No auto-delete: no custom resource empties the bucket.
    Template.from_stack(stack).resource_count_is("Custom::S3AutoDeleteObjects", 0)


def test_the_lifecycle_rule_covers_only_the_queues_prefix(stack: cdk.Stack) -> None:
    ResilientQueue(stack, "Orders", queue_name="orders", large_payloads=LargePayloads())

    [rule] = only_bucket(stack)["Properties"]["LifecycleConfiguration"]["Rules"]
    assert (rule["Prefix"], rule["Status"]) == ("orders/", "Enabled")
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}


# --- the lifecycle's days ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dead_letter_seconds", "days"),
    [
        pytest.param(7 * DAY - 1, 7 + 1, id="just-below-7-days"),
        pytest.param(7 * DAY, 7 + 1, id="exactly-7-days"),
        pytest.param(7 * DAY + 1, 8 + 1, id="just-above-7-days"),
        pytest.param(14 * DAY, 14 + 1, id="14-days"),
    ],
)
def test_a_standard_queues_payloads_outlive_the_dlq_retention_by_the_margin(
    stack: cdk.Stack, dead_letter_seconds: int, days: int
) -> None:
    ResilientQueue(
        stack,
        "Orders",
        retention_period=cdk.Duration.days(1),
        dead_letter_retention_period=cdk.Duration.seconds(dead_letter_seconds),
        large_payloads=LargePayloads(),
    )

    assert expiration_days(stack) == days


@pytest.mark.parametrize(
    ("source_seconds", "dead_letter_seconds", "days"),
    [
        # The move resets a FIFO message's timestamp: source + DLQ retention, then the margin.
        pytest.param(2 * DAY, 3 * DAY, 5 + 1, id="on-a-day-boundary"),
        pytest.param(2 * DAY, 3 * DAY + 1, 6 + 1, id="one-second-above"),
        pytest.param(4 * DAY, 14 * DAY, 18 + 1, id="defaults"),
    ],
)
def test_a_fifo_queues_payloads_outlive_source_and_dlq_retention(
    stack: cdk.Stack, source_seconds: int, dead_letter_seconds: int, days: int
) -> None:
    ResilientQueue(
        stack,
        "Orders",
        fifo=True,
        retention_period=cdk.Duration.seconds(source_seconds),
        dead_letter_retention_period=cdk.Duration.seconds(dead_letter_seconds),
        large_payloads=LargePayloads(),
    )

    assert expiration_days(stack) == days


@pytest.mark.parametrize(("margin", "days"), [(0, 14), (1, 15), (365, 14 + 365)])
def test_the_margin_adds_whole_days(stack: cdk.Stack, margin: int, days: int) -> None:
    ResilientQueue(stack, "Orders", large_payloads=LargePayloads(margin_days=margin))

    assert expiration_days(stack) == days


def test_a_token_retention_counts_as_the_14_day_maximum(stack: cdk.Stack) -> None:
    retention = cdk.CfnParameter(stack, "Retention", type="Number").value_as_number
    ResilientQueue(
        stack,
        "Orders",
        dead_letter_retention_period=cdk.Duration.seconds(retention),
        large_payloads=LargePayloads(),
    )

    assert expiration_days(stack) == 14 + 1


def test_retry_backoff_leaves_the_lifecycle_as_it_was(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # Backoff waits are spent in the source, within its retention (checked at the call); a
    # standard DLQ counts its retention from the first send.
    queue = ResilientQueue(
        stack,
        "Orders",
        retention_period=cdk.Duration.days(4),
        dead_letter_retention_period=cdk.Duration.days(10),
        large_payloads=LargePayloads(),
    )
    queue.add_lambda_consumer(make_function(), retry_backoff=RetryBackoff())

    assert expiration_days(stack) == 10 + 1


# --- a bucket of the user's ------------------------------------------------------------------------


def test_a_given_bucket_is_used_and_no_bucket_is_created(stack: cdk.Stack) -> None:
    given = s3.Bucket.from_bucket_name(stack, "Given", "team-payloads")
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads(bucket=given))

    Template.from_stack(stack).resource_count_is("AWS::S3::Bucket", 0)
    assert queue.payloads is not None and queue.payloads.bucket is given


def test_a_given_bucket_warns_with_the_days_its_lifecycle_must_keep(stack: cdk.Stack) -> None:
    given = s3.Bucket.from_bucket_name(stack, "Given", "team-payloads")
    ResilientQueue(
        stack,
        "Orders",
        queue_name="orders",
        dead_letter_retention_period=cdk.Duration.days(10),
        large_payloads=LargePayloads(bucket=given),
    )

    [warning] = warnings_matching(stack, "large_payloads: the bucket you gave")
    assert "at least 11 days" in warning
    assert "'orders/'" in warning


# --- grants and environment ----------------------------------------------------------------------


def test_a_consumer_reads_and_deletes_under_the_prefix(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders", large_payloads=LargePayloads())
    function = make_function()
    queue.add_lambda_consumer(function)

    assert s3_actions(stack, function) == {"s3:GetObject", "s3:DeleteObject"}


def test_a_consumer_that_does_not_delete_only_reads(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads(consumers_delete=False))
    function = make_function()
    queue.add_lambda_consumer(function)

    assert s3_actions(stack, function) == {"s3:GetObject"}
    assert environment(stack, function)[PAYLOAD_DELETE_ENV] == "false"


def test_a_consumer_gets_the_bucket_prefix_and_delete_flag(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders", large_payloads=LargePayloads())
    function = make_function()
    queue.add_lambda_consumer(function)

    assert queue.payloads is not None
    variables = environment(stack, function)
    assert variables[PAYLOAD_BUCKET_ENV] == stack.resolve(queue.payloads.bucket.bucket_name)
    assert (variables[PAYLOAD_PREFIX_ENV], variables[PAYLOAD_DELETE_ENV]) == ("orders/", "true")


def test_a_fifo_queues_prefix_is_its_physical_name(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders.fifo", large_payloads=LargePayloads()
    )
    function = make_function()
    queue.add_lambda_consumer(function)

    assert environment(stack, function)[PAYLOAD_PREFIX_ENV] == "orders.fifo/"


def test_a_dead_letter_consumer_reads_and_deletes_as_consumers_do(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads())
    function = make_function()
    queue.add_dead_letter_consumer(function)

    assert s3_actions(stack, function) == {"s3:GetObject", "s3:DeleteObject"}
    assert environment(stack, function)[PAYLOAD_DELETE_ENV] == "true"


def test_a_producer_granted_send_writes_only(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders", large_payloads=LargePayloads())
    function = make_function()
    queue.queue.grant_send_messages(function)

    assert s3_actions(stack, function) == {"s3:PutObject"}
    variables = environment(stack, function)
    assert variables[PAYLOAD_PREFIX_ENV] == "orders/"
    assert PAYLOAD_DELETE_ENV not in variables


def test_the_redrive_grant_reads_payloads(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads())
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
    queue.grant_redrive(operator)

    role = stack.resolve(operator.node.default_child.logical_id)  # type: ignore[union-attr]
    statements = [
        s
        for policy in Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert {a for s in statements for a in actions(s) if a.startswith("s3:")} == {"s3:GetObject"}


def test_a_producer_writes_with_a_data_key_through_s3_only(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key", enable_key_rotation=True)
    queue = ResilientQueue(env_stack, "Orders", encryption_key=key, large_payloads=LargePayloads())
    function = lambda_.Function(
        env_stack,
        "Producer",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    )
    queue.queue.grant_send_messages(function)

    via_s3 = {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}}
    assert {
        "Action": "kms:GenerateDataKey",
        "Condition": via_s3,
        "Effect": "Allow",
        "Resource": env_stack.resolve(key.key_arn),
    } in statements_of(env_stack, function)


def test_a_consumer_decrypts_payloads_through_s3_only(env_stack: cdk.Stack) -> None:
    key = kms.Key(env_stack, "Key", enable_key_rotation=True)
    queue = ResilientQueue(env_stack, "Orders", encryption_key=key, large_payloads=LargePayloads())
    function = lambda_.Function(
        env_stack,
        "Consumer",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(30),
    )
    queue.add_lambda_consumer(function)

    via_s3 = {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}}
    assert {
        "Action": "kms:Decrypt",
        "Condition": via_s3,
        "Effect": "Allow",
        "Resource": env_stack.resolve(key.key_arn),
    } in statements_of(env_stack, function)


def test_an_imported_consumer_warns_that_its_environment_cannot_be_set(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads())
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:us-east-1:123456789012:function:worker"
    )
    queue.add_lambda_consumer(imported, function_timeout=cdk.Duration.seconds(30))

    [warning] = warnings_matching(stack, "large_payloads: the environment of")
    assert PAYLOAD_BUCKET_ENV in warning and PAYLOAD_DELETE_ENV in warning


# --- the runtime layer -----------------------------------------------------------------------------


def layer_descriptions(stack: cdk.Stack) -> list[str]:
    layers = Template.from_stack(stack).find_resources("AWS::Lambda::LayerVersion").values()
    return sorted(layer["Properties"]["Description"] for layer in layers)


def test_a_python_consumer_gets_the_payloads_layer(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads())
    queue.add_lambda_consumer(make_function())

    [description] = layer_descriptions(stack)
    assert description.startswith("constructs_lib.large_payloads and constructs_lib.backoff")


def test_with_retry_backoff_the_consumer_gets_one_layer_not_two(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads())
    function = make_function()
    queue.add_lambda_consumer(function, retry_backoff=RetryBackoff())

    [description] = layer_descriptions(stack)
    assert description.startswith("constructs_lib.large_payloads")
    properties = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    [layers] = [
        p["Properties"]["Layers"] for p in properties.values() if "Layers" in p["Properties"]
    ]
    assert len(layers) == 1


def test_two_queues_with_payloads_give_a_shared_consumer_the_layer_once(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    function = make_function()
    for name in ("Orders", "Refunds"):
        ResilientQueue(stack, name, large_payloads=LargePayloads()).add_lambda_consumer(function)

    resolved = stack.resolve(function.node.default_child.logical_id)  # type: ignore[union-attr]
    properties = Template.from_stack(stack).to_json()["Resources"][resolved]["Properties"]
    assert len(properties["Layers"]) == 1


def test_layer_off_adds_no_layer(stack: cdk.Stack, make_function: FunctionFactory) -> None:
    queue = ResilientQueue(stack, "Orders", large_payloads=LargePayloads(layer=False))
    queue.add_lambda_consumer(make_function())

    Template.from_stack(stack).resource_count_is("AWS::Lambda::LayerVersion", 0)


def test_the_backoff_layer_without_payloads_is_unchanged(
    stack: cdk.Stack, make_function: FunctionFactory
) -> None:
    # Its files, and so its asset hash, are those of the backoff layer before large payloads.
    queue = ResilientQueue(stack, "Orders")
    queue.add_lambda_consumer(make_function(), retry_backoff=RetryBackoff())

    assert layer_descriptions(stack) == [
        "constructs_lib.backoff: retry backoff for SQS consumers (no dependencies)"
    ]


# --- refusals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("margin", [-1, 366])
def test_fails_with_a_margin_out_of_range(stack: cdk.Stack, margin: int) -> None:
    with pytest.raises(ConfigurationError) as raised:
        ResilientQueue(stack, "Orders", large_payloads=LargePayloads(margin_days=margin))

    [problem] = raised.value.problems
    assert problem.prop == "large_payloads.margin_days"
    message = str(raised.value)
    assert f"large_payloads.margin_days={margin}" in message
    assert "between 0 and 365 days" in message
    assert "margin_days=1" in message  # the fix's example


def test_fails_with_a_bucket_that_is_not_a_bucket(stack: cdk.Stack) -> None:
    with pytest.raises(ParameterTypeError) as raised:
        ResilientQueue(stack, "Orders", large_payloads=LargePayloads(bucket="payloads"))  # type: ignore[arg-type]

    [problem] = raised.value.problems
    assert problem.prop == "large_payloads.bucket"
    assert "s3.IBucket" in str(raised.value)
    # Refused before the construct joined the tree: the id is still free.
    assert stack.node.try_find_child("Orders") is None


def test_fails_with_large_payloads_that_are_not_large_payloads(stack: cdk.Stack) -> None:
    with pytest.raises(ParameterTypeError) as raised:
        ResilientQueue(stack, "Orders", large_payloads={"bucket": None})  # type: ignore[arg-type]

    [problem] = raised.value.problems
    assert problem.prop == "large_payloads"
    assert "Fix: pass large_payloads=LargePayloads()" in str(raised.value)
