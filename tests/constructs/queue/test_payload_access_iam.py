"""The payload statements, read the way IAM reads them: a key under the queue's prefix is
allowed, a key outside it, another bucket and a request without TLS are not.

The policies are the synthesized template's; ``constructs_lib.audit.iam`` reads their statements
and conditions (``statements.statements``, ``conditions.tests``), and the few lines below apply
IAM's evaluation to one request. Each verdict rests on the documentation line quoted beside it;
none was obtained by running the library's own grants."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from constructs_lib import LargePayloads, ResilientQueue
from constructs_lib.audit.iam import conditions
from constructs_lib.audit.iam.statements import as_list, statements

ACCOUNT, REGION = "123456789012", "eu-west-1"
BUCKET = "payloads-of-orders"

# --- The documentation lines the verdicts rest on ---------------------------------------------
DEFAULT_DENY = (
    "IAM guide, policy evaluation logic: a request is implicitly denied unless an identity-based "
    "policy allows it"
)
EXPLICIT_DENY = (
    "IAM guide, policy evaluation logic: an explicit deny in any policy overrides any allow"
)
ABSENT_KEY = (
    "IAM guide, condition operators: a positive operator (Bool, StringEquals) is false when the "
    "key is absent from the request"
)
RESOURCE_WILDCARD = (
    "IAM guide, Resource element: a wildcard (*) matches any combination of characters, so "
    "'<bucket>/orders/*' names the objects whose key starts 'orders/' and nothing else"
)


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: dict[str, str] = field(default_factory=dict)


def _matches(patterns: list[Any], value: str) -> bool:
    return any(
        isinstance(p, str) and fnmatch.fnmatchcase(value.lower(), p.lower()) for p in patterns
    )


def _conditions_hold(statement: Any, request: Request) -> bool:
    context = {key.lower(): value for key, value in request.context.items()}
    for test in conditions.tests(statement):
        value = context.get(test.key.lower())
        if value is None:
            if not test.if_exists:
                return False  # ABSENT_KEY
            continue
        wanted = {str(v).lower() for v in test.values}
        if test.base in ("bool", "stringequals") and value.lower() not in wanted:
            return False
        if test.base not in ("bool", "stringequals"):
            raise AssertionError(f"operator {test.operator} not evaluated by this test")
    return True


def _applies(statement: Any, request: Request) -> bool:
    body = statement.body
    return (
        _matches(as_list(body.get("Action")), request.action)
        and _matches(as_list(body.get("Resource")), request.resource)
        and _conditions_hold(statement, request)
    )


def allowed(identity: list[Any], bucket_policy: list[Any], request: Request) -> bool:
    """IAM's verdict for one principal of this account: an Allow of its identity policies and
    no Deny of the bucket policy (whose statements name every principal, ``"*"``)."""
    for document in bucket_policy:
        for statement in statements(document):
            if statement.effect == "deny" and _applies(statement, request):
                return False  # EXPLICIT_DENY
    return any(
        statement.effect == "allow" and _applies(statement, request)
        for document in identity
        for statement in statements(document)
    )  # DEFAULT_DENY when none


# --- The app and its policies, with the ARNs the deployed stack would hold ----------------------


def concrete(value: Any, names: dict[str, str]) -> Any:
    """The template's values with each resource's ARN or name filled in (``names``: logical id
    to ARN), ``Fn::Join`` joined."""
    if isinstance(value, list):
        return [concrete(v, names) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Fn::GetAtt"}:
        return names[value["Fn::GetAtt"][0]]
    if set(value) == {"Ref"}:
        return names[value["Ref"]].rsplit(":", 1)[-1]
    if set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(concrete(p, names) for p in parts)
    return {k: concrete(v, names) for k, v in value.items()}


@pytest.fixture(scope="module")
def policies() -> dict[str, list[Any]]:
    """The identity policies of a consumer, a producer and an operator, and the bucket policy."""
    app = cdk.App()
    stack = cdk.Stack(app, "Shop", env=cdk.Environment(account=ACCOUNT, region=REGION))
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    queue = ResilientQueue(
        stack, "Orders", queue_name="orders", encryption_key=key, large_payloads=LargePayloads()
    )

    def function(name: str) -> lambda_.Function:
        return lambda_.Function(
            stack,
            name,
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
            timeout=cdk.Duration.seconds(30),
        )

    consumer, producer = function("Consumer"), function("Producer")
    queue.add_lambda_consumer(consumer)
    queue.queue.grant_send_messages(producer)
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
    queue.grant_redrive(operator)

    template = Template.from_stack(stack).to_json()["Resources"]
    names = {}
    for logical_id, resource in template.items():
        kind = resource["Type"]
        if kind == "AWS::S3::Bucket":
            names[logical_id] = f"arn:aws:s3:::{BUCKET}"
        elif kind == "AWS::KMS::Key":
            names[logical_id] = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/k"
        else:
            names[logical_id] = f"arn:aws:test:{REGION}:{ACCOUNT}:{logical_id}"

    def roles_policy(role: iam.IRole) -> list[Any]:
        role_id = stack.resolve(role.node.default_child.logical_id)  # type: ignore[union-attr]
        return [
            concrete(r["Properties"]["PolicyDocument"], names)
            for r in template.values()
            if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
        ]

    assert consumer.role is not None and producer.role is not None
    return {
        "consumer": roles_policy(consumer.role),
        "producer": roles_policy(producer.role),
        "operator": roles_policy(operator),
        "bucket": [
            concrete(r["Properties"]["PolicyDocument"], names)
            for r in template.values()
            if r["Type"] == "AWS::S3::BucketPolicy"
        ],
    }


TLS = {"aws:SecureTransport": "true"}
NO_TLS = {"aws:SecureTransport": "false"}
IN_PREFIX = f"arn:aws:s3:::{BUCKET}/orders/3f2b-payload"

CASES = [
    # who, action, resource, context, verdict, why
    ("consumer", "s3:GetObject", IN_PREFIX, TLS, True, RESOURCE_WILDCARD),
    ("consumer", "s3:DeleteObject", IN_PREFIX, TLS, True, RESOURCE_WILDCARD),
    ("consumer", "s3:PutObject", IN_PREFIX, TLS, False, DEFAULT_DENY),
    ("consumer", "s3:GetObject", f"arn:aws:s3:::{BUCKET}/refunds/3f2b", TLS, False, DEFAULT_DENY),
    # A queue whose name starts like this one's: the slash keeps its payloads apart.
    ("consumer", "s3:GetObject", f"arn:aws:s3:::{BUCKET}/orders2/x", TLS, False, RESOURCE_WILDCARD),
    ("consumer", "s3:GetObject", "arn:aws:s3:::another-bucket/orders/x", TLS, False, DEFAULT_DENY),
    ("consumer", "s3:GetObject", IN_PREFIX, NO_TLS, False, EXPLICIT_DENY),
    ("consumer", "s3:GetObject", IN_PREFIX, {}, False, ABSENT_KEY),
    ("producer", "s3:PutObject", IN_PREFIX, TLS, True, RESOURCE_WILDCARD),
    ("producer", "s3:GetObject", IN_PREFIX, TLS, False, DEFAULT_DENY),
    ("producer", "s3:DeleteObject", IN_PREFIX, TLS, False, DEFAULT_DENY),
    ("producer", "s3:PutObject", f"arn:aws:s3:::{BUCKET}/refunds/x", TLS, False, DEFAULT_DENY),
    ("producer", "s3:PutObject", IN_PREFIX, NO_TLS, False, EXPLICIT_DENY),
    ("operator", "s3:GetObject", IN_PREFIX, TLS, True, RESOURCE_WILDCARD),
    ("operator", "s3:DeleteObject", IN_PREFIX, TLS, False, DEFAULT_DENY),
]


@pytest.mark.parametrize(
    ("who", "action", "resource", "context", "verdict", "why"),
    [pytest.param(*case, id=f"{case[0]}-{case[1]}-{i}") for i, case in enumerate(CASES)],
)
def test_iam_admits_exactly_the_queues_prefix_over_tls(
    policies: dict[str, list[Any]],
    who: str,
    action: str,
    resource: str,
    context: dict[str, str],
    verdict: bool,
    why: str,
) -> None:
    request = Request(action, resource, context)

    assert allowed(policies[who], policies["bucket"], request) is verdict, why


@pytest.mark.parametrize(
    ("who", "action", "verdict"),
    [
        ("consumer", "kms:Decrypt", True),
        ("consumer", "kms:GenerateDataKey", False),
        ("producer", "kms:GenerateDataKey", True),
    ],
)
def test_the_key_is_usable_for_payloads_only_through_s3(
    policies: dict[str, list[Any]], who: str, action: str, verdict: bool
) -> None:
    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/k"
    through_s3 = Request(action, key, {"kms:ViaService": f"s3.{REGION}.amazonaws.com"})
    direct = Request(action, key, {})

    # KMS developer guide, kms:ViaService: the key is present only in requests a service makes
    # on the principal's behalf; a direct call has no such key (ABSENT_KEY).
    assert allowed(policies[who], [], through_s3) is verdict
    assert allowed(policies[who], [], direct) is False, ABSENT_KEY
