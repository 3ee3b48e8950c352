"""Queue policy shapes and the verdicts IAM gives them: QR023 (public) and QR013 (TLS deny).

Each row is one queue with one queue policy, the verdict an expert reading the AWS documentation
gives each rule ("hit": the rule reports it, "pass": it does not, "unknown": the audit reports
QR900 for that rule), and the documentation line the verdict rests on. The verdicts were worked
out by hand from those lines, never by running the audit.

Every row runs through the single-process engine (``rules.evaluate``) on its own; the whole
table also runs as one fleet through the local engine and the Spark job, which must agree.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditInputs
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.model import Finding
from tests.audit.conftest import EngineAudit, Template, write

# --- The documentation lines the verdicts rest on --------------------------------------------

CONFIG = (
    "AWS Config sqs-queue-no-public-access (Security Hub SQS.3): to be non-public a policy grants "
    "access only to fixed values, without wildcards"
)
S3_PUBLIC = (
    "S3 user guide, 'The meaning of public': a fixed aws:SourceArn, aws:SourceVpc, "
    "aws:SourceVpce, aws:SourceOwner, aws:SourceAccount or aws:userid, or a set of CIDRs in "
    "aws:SourceIp, makes a policy non-public"
)
AA_ORG = (
    "IAM Access Analyzer, external access: principals of the organization or account "
    "(aws:PrincipalOrgID, aws:PrincipalAccount, aws:PrincipalArn) are the zone of trust"
)
AA_SERVICE = (
    "IAM Access Analyzer policy checks, 'Security Warning - Restrict access to service "
    "principal': use aws:SourceArn, aws:SourceAccount, aws:SourceOrgID or aws:SourceOrgPaths"
)
AA_NOTPRINCIPAL = (
    "IAM Access Analyzer policy checks, 'Security Warning - Allow with NotPrincipal'; IAM guide, "
    "NotPrincipal: with Allow it admits everyone not listed"
)
IAM_ABSENT = (
    "IAM guide, condition operators: a key absent from the request fails a positive operator "
    "and makes a negated one (StringNotEquals, ...) true"
)
IAM_IFEXISTS = (
    "IAM guide, ...IfExists: true when the key is absent; IAM guide, global condition keys: "
    "aws:SourceArn/aws:SourceAccount are absent from requests IAM principals make"
)
IAM_SETS = (
    "IAM guide, set operators: ForAllValues is true when the key is absent, ForAnyValue false"
)
IAM_NULL = "IAM guide, Null condition operator: it tests only whether the key is present"
IAM_KEYS = "IAM guide, Condition element: condition key names are not case-sensitive"
IAM_MULTI = (
    "IAM guide, conditions with multiple keys or values: operators and keys ANDed, values ORed"
)
IAM_SPOOFABLE = (
    "IAM guide, global condition keys: aws:UserAgent and aws:Referer are set by the caller and "
    "must not be used to prevent unauthorized access"
)
IAM_SECURE = (
    "IAM guide, global condition keys: aws:SecureTransport tells whether the request used TLS; "
    "it does not say who sent it"
)
IAM_IP = "Our decision (docs/audit/rules.md): an aws:SourceIp range wider than /8 (IPv4) or /32 (IPv6) names no one"
IAM_ACTION = (
    "IAM guide, Action/NotAction; Service Authorization Reference, Amazon SQS: the actions on a "
    "queue"
)
IAM_RESOURCE = (
    "IAM guide, Resource/NotResource: a statement applies only to the resources it names, with "
    "* and ? wildcards"
)
IAM_GRAMMAR = "IAM guide, policy grammar: Statement is one statement or a list of statements"
IAM_DENY = "IAM guide, policy evaluation logic: an explicit Deny overrides any Allow"
CFN_VALUES = (
    "CloudFormation: Ref to a resource or a parameter and Fn::Sub with pseudo parameters are "
    "known when the template says them; a parameter without a value is not"
)
SQS_TLS = (
    "SQS developer guide, security best practices: deny every sqs action to every principal when "
    "aws:SecureTransport is false"
)
RCP_TLS = (
    "AWS Organizations resource control policy examples: BoolIfExists aws:SecureTransport false"
)
IAM_BOOL = "IAM guide, Bool condition operator: true or false, as text or as a JSON boolean"

# --- Building blocks --------------------------------------------------------------------------

QUEUE_ARN = {"Fn::GetAtt": ["Queue", "Arn"]}
ACCOUNT = "123456789012"
OTHER_ACCOUNT = "210987654321"
TLS = {
    "Sid": "DenyPlainHttp",
    "Effect": "Deny",
    "Principal": "*",
    "Action": "sqs:*",
    "Resource": QUEUE_ARN,
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}


def allow(condition: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A statement that lets "*" send messages to the queue, changed by ``fields``."""
    statement: dict[str, Any] = {
        "Sid": "Send",
        "Effect": "Allow",
        "Principal": "*",
        "Action": "sqs:SendMessage",
        "Resource": QUEUE_ARN,
    }
    statement.update(fields)
    if condition is not None:
        statement["Condition"] = condition
    return statement


def deny_tls(**fields: Any) -> dict[str, Any]:
    """The complete TLS deny, changed by ``fields`` (a None value removes the element)."""
    statement = copy.deepcopy(TLS)
    for key, value in fields.items():
        if value is None:
            statement.pop(key, None)
        else:
            statement[key] = value
    return statement


@dataclass(frozen=True)
class Shape:
    id: str
    statements: Any  # the document's Statement: a list, or one object
    qr023: str  # "hit", "pass" or "unknown"
    qr013: str
    source: str  # the AWS documentation line the verdicts rest on
    named: bool = True  # the queue has a QueueName (else CloudFormation generates one)
    parameters: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # more resources
    says: tuple[str, ...] = ()  # fragments the QR023 or QR013 message must hold


def public(shape_id: str, condition: dict[str, Any] | None, source: str, **kw: Any) -> Shape:
    """A shape whose Allow is public; the complete TLS deny is present."""
    says = kw.pop("says", ())
    statement = allow(condition, **kw)
    return Shape(shape_id, [statement, TLS], "hit", "pass", source, says=says)


def private(shape_id: str, condition: dict[str, Any] | None, source: str, **kw: Any) -> Shape:
    """A shape whose Allow is restricted to known parties; the complete TLS deny is present."""
    return Shape(shape_id, [allow(condition, **kw), TLS], "pass", "pass", source)


TOPIC = {"Type": "AWS::SNS::Topic", "Properties": {}}

SHAPES: list[Shape] = [
    # --- QR023: principals that are everyone ------------------------------------------------
    public("star-no-condition", None, CONFIG, says=('any principal ("*")', "no Condition")),
    public("aws-star", None, CONFIG, Principal={"AWS": "*"}),
    public(
        "aws-list-with-star", None, CONFIG, Principal={"AWS": [f"arn:aws:iam::{ACCOUNT}:root", "*"]}
    ),
    public("aws-list-only-star", None, CONFIG, Principal={"AWS": ["*"]}),
    # --- QR023: conditions that do not restrict ---------------------------------------------
    public(
        "securetransport-true",
        {"Bool": {"aws:SecureTransport": "true"}},
        IAM_SECURE,
        says=("aws:SecureTransport", "does not identify the caller"),
    ),
    public(
        "sourcearn-stringlike-star",
        {"StringLike": {"aws:SourceArn": "*"}},
        CONFIG,
        says=("wildcard or any account",),
    ),
    public(
        "sourcearn-any-account-topic",
        {"ArnLike": {"aws:SourceArn": "arn:aws:sns:us-east-1:*:alerts"}},
        CONFIG,
    ),
    public("sourceip-everywhere", {"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}, IAM_IP),
    public("sourceip-ipv6-everywhere", {"IpAddress": {"aws:SourceIp": "::/0"}}, IAM_IP),
    public("sourceip-wider-than-8", {"IpAddress": {"aws:SourceIp": "16.0.0.0/4"}}, IAM_IP),
    public(
        "principalaccount-not-equals",
        {"StringNotEquals": {"aws:PrincipalAccount": ACCOUNT}},
        IAM_ABSENT,
        says=("StringNotEquals is not a positive match",),
    ),
    public(
        "null-sourcearn-false",
        {"Null": {"aws:SourceArn": "false"}},
        IAM_NULL,
        says=("Null only tests",),
    ),
    public("useragent", {"StringEquals": {"aws:UserAgent": "our-sdk/1.0"}}, IAM_SPOOFABLE),
    public("referer", {"StringLike": {"aws:Referer": "https://example.com/*"}}, IAM_SPOOFABLE),
    public(
        "sourceaccount-ifexists",
        {"StringEqualsIfExists": {"aws:SourceAccount": ACCOUNT}},
        IAM_IFEXISTS,
        says=("true when aws:SourceAccount is absent",),
    ),
    public(
        "sourcearn-arnlike-ifexists",
        {"ArnLikeIfExists": {"aws:SourceArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"}},
        IAM_IFEXISTS,
    ),
    public(
        "principalorgid-forallvalues",
        {"ForAllValues:StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
        IAM_SETS,
    ),
    public(
        "sourceaccount-wildcard-digits",
        {"StringLike": {"aws:SourceAccount": "12345678901*"}},
        CONFIG,
    ),
    public("principalorgid-wildcard", {"StringLike": {"aws:PrincipalOrgID": "o-*"}}, CONFIG),
    public(
        "principalarn-any-account",
        {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/uploader"}},
        CONFIG,
    ),
    public(
        "values-one-wildcard",
        {"StringLike": {"aws:SourceAccount": [ACCOUNT, "*"]}},
        IAM_MULTI,
    ),
    public("key-case-wildcard", {"StringLike": {"AWS:SourceArn": "*"}}, IAM_KEYS),
    public("notaction-allow", None, IAM_ACTION, Action=None, NotAction="sqs:DeleteQueue"),
    public("resource-wildcard-sqs-arn", None, IAM_RESOURCE, Resource="arn:aws:sqs:*:*:*"),
    public("resource-star", None, IAM_RESOURCE, Resource="*"),
    public(
        "resource-own-arn-by-sub",
        None,
        IAM_RESOURCE,
        Resource={
            "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:resource-own-arn-by-sub"
        },
    ),
    public("action-wildcard-all", None, IAM_ACTION, Action="*"),
    public("action-case-and-prefix", None, IAM_ACTION, Action="SQS:Receive*"),
    # --- QR023: NotPrincipal --------------------------------------------------------------------
    public(
        "notprincipal-allow",
        None,
        AA_NOTPRINCIPAL,
        Principal=None,
        NotPrincipal={"AWS": f"arn:aws:iam::{ACCOUNT}:role/admin"},
        says=("everyone except NotPrincipal", "admits everyone not listed"),
    ),
    private(
        "notprincipal-allow-with-source-account",
        {"StringEquals": {"aws:PrincipalAccount": ACCOUNT}},
        AA_ORG,
        Principal=None,
        NotPrincipal={"AWS": f"arn:aws:iam::{ACCOUNT}:role/admin"},
    ),
    # --- QR023: conditions that restrict -------------------------------------------------------
    private(
        "sourcearn-fixed-topic",
        {"ArnEquals": {"aws:SourceArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"}},
        S3_PUBLIC,
    ),
    private(
        "sourcearn-fixed-account-wildcard-name",
        {"ArnLike": {"aws:SourceArn": f"arn:aws:sns:*:{ACCOUNT}:*"}},
        S3_PUBLIC,
    ),
    private("sourceaccount-fixed", {"StringEquals": {"aws:SourceAccount": ACCOUNT}}, S3_PUBLIC),
    private(
        "sourceaccount-as-number",
        {"StringEquals": {"aws:SourceAccount": int(ACCOUNT)}},
        S3_PUBLIC,
    ),
    private(
        "sourceaccount-pseudo-parameter",
        {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
        CFN_VALUES,
    ),
    private("sourceowner-fixed", {"StringEquals": {"aws:SourceOwner": ACCOUNT}}, S3_PUBLIC),
    private(
        "principalorgid-fixed",
        {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
        AA_ORG,
    ),
    private(
        "principalorgid-foranyvalue",
        {"ForAnyValue:StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
        IAM_SETS,
    ),
    private(
        "principalorgpaths-fixed-org",
        {"ForAnyValue:StringLike": {"aws:PrincipalOrgPaths": "o-a1b2c3d4e5/r-ab12/ou-ab12-*"}},
        AA_ORG,
    ),
    private(
        "cross-account-principalaccount",
        {"StringEquals": {"aws:PrincipalAccount": OTHER_ACCOUNT}},
        AA_ORG,
    ),
    private(
        "principalarn-fixed-role",
        {"ArnEquals": {"aws:PrincipalArn": f"arn:aws:iam::{OTHER_ACCOUNT}:role/uploader"}},
        AA_ORG,
    ),
    private("sourcevpce-fixed", {"StringEquals": {"aws:SourceVpce": "vpce-0a1b2c3d"}}, S3_PUBLIC),
    private("sourcevpc-fixed", {"StringEquals": {"aws:SourceVpc": "vpc-0a1b2c3d"}}, S3_PUBLIC),
    private("sourceip-24", {"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}, S3_PUBLIC),
    private(
        "key-case-fixed",
        {"StringEquals": {"AWS:SOURCEACCOUNT": ACCOUNT}},
        IAM_KEYS,
    ),
    private(
        "and-with-non-restricting",
        {
            "Bool": {"aws:SecureTransport": "true"},
            "StringEquals": {"aws:SourceAccount": ACCOUNT},
        },
        IAM_MULTI,
    ),
    private(
        "named-cross-account", None, AA_ORG, Principal={"AWS": f"arn:aws:iam::{OTHER_ACCOUNT}:root"}
    ),
    private("named-account-id", None, AA_ORG, Principal={"AWS": OTHER_ACCOUNT}),
    private("action-not-sqs", None, IAM_ACTION, Action="sns:Publish"),
    private(
        "resource-other-queue",
        None,
        IAM_RESOURCE,
        Resource=f"arn:aws:sqs:us-east-1:{ACCOUNT}:someone-elses-queue",
    ),
    # --- QR023: service principals ---------------------------------------------------------------
    public(
        "service-sns-no-source",
        None,
        AA_SERVICE,
        Principal={"Service": "sns.amazonaws.com"},
        says=("service principal sns.amazonaws.com", "confused deputy"),
    ),
    public(
        "service-events-securetransport-only",
        {"Bool": {"aws:SecureTransport": "true"}},
        AA_SERVICE,
        Principal={"Service": "events.amazonaws.com"},
    ),
    public(
        "service-s3-any-bucket",
        {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::*"}},
        AA_SERVICE,
        Principal={"Service": "s3.amazonaws.com"},
    ),
    public(
        "service-list-no-source",
        None,
        AA_SERVICE,
        Principal={"Service": ["sns.amazonaws.com", "events.amazonaws.com"]},
    ),
    private(
        "service-sns-sourcearn",
        {"ArnEquals": {"aws:SourceArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"}},
        AA_SERVICE,
        Principal={"Service": "sns.amazonaws.com"},
    ),
    private(
        "service-events-sourceaccount",
        {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        AA_SERVICE,
        Principal={"Service": "events.amazonaws.com"},
    ),
    private(
        "service-s3-fixed-bucket",
        {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::uploads-a1b2"}},
        AA_SERVICE,
        Principal={"Service": "s3.amazonaws.com"},
    ),
    private(
        "service-sourceorgid",
        {"StringEquals": {"aws:SourceOrgID": "o-a1b2c3d4e5"}},
        AA_SERVICE,
        Principal={"Service": "sns.amazonaws.com"},
    ),
    # --- QR023: values from intrinsic functions --------------------------------------------------
    Shape(
        "sourcearn-ref-topic",
        [allow({"ArnEquals": {"aws:SourceArn": {"Ref": "Topic"}}}), TLS],
        "pass",
        "pass",
        CFN_VALUES,
        extra={"Topic": TOPIC},
    ),
    Shape(
        "sourcearn-sub-own-account",
        [
            allow(
                {
                    "ArnEquals": {
                        "aws:SourceArn": {
                            "Fn::Sub": "arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:alerts"
                        }
                    }
                }
            ),
            TLS,
        ],
        "pass",
        "pass",
        CFN_VALUES,
    ),
    Shape(
        "sourcearn-parameter-fixed",
        [allow({"ArnEquals": {"aws:SourceArn": {"Ref": "TopicArn"}}}), TLS],
        "pass",
        "pass",
        CFN_VALUES,
        parameters={
            "TopicArn": {"Type": "String", "Default": f"arn:aws:sns:us-east-1:{ACCOUNT}:t"}
        },
    ),
    Shape(
        "sourcearn-parameter-wildcard",
        [allow({"ArnLike": {"aws:SourceArn": {"Ref": "TopicArn"}}}), TLS],
        "hit",
        "pass",
        CFN_VALUES,
        parameters={"TopicArn": {"Type": "String", "Default": "*"}},
    ),
    Shape(
        "sourcearn-parameter-unknown",
        [allow({"ArnEquals": {"aws:SourceArn": {"Ref": "TopicArn"}}}), TLS],
        "unknown",
        "pass",
        CFN_VALUES,
        parameters={"TopicArn": {"Type": "String"}},
    ),
    Shape(
        "sourcearn-sub-unknown-account",
        [
            allow(
                {"ArnEquals": {"aws:SourceArn": {"Fn::Sub": "arn:aws:sns:us-east-1:${Owner}:t"}}}
            ),
            TLS,
        ],
        "unknown",
        "pass",
        CFN_VALUES,
        parameters={"Owner": {"Type": "String"}},
    ),
    Shape(
        "principal-parameter-unknown",
        [allow(None, Principal={"AWS": {"Ref": "Consumer"}}), TLS],
        "unknown",
        "pass",
        CFN_VALUES,
        parameters={"Consumer": {"Type": "String"}},
    ),
    Shape(
        "principal-parameter-star",
        [allow(None, Principal={"AWS": {"Ref": "Consumer"}}), TLS],
        "hit",
        "pass",
        CFN_VALUES,
        parameters={"Consumer": {"Type": "String", "Default": "*"}},
    ),
    Shape(
        "principal-star-beside-unknown",
        [allow(None, Principal={"AWS": ["*", {"Ref": "Consumer"}]}), TLS],
        "hit",
        "pass",
        CONFIG,
        parameters={"Consumer": {"Type": "String"}},
    ),
    # --- QR023: a Deny of the same policy --------------------------------------------------------
    Shape(
        "deny-outside-org-neutralises",
        [
            allow(None),
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": QUEUE_ARN,
                "Condition": {"StringNotEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
            },
            TLS,
        ],
        "pass",
        "pass",
        IAM_DENY,
    ),
    Shape(
        "deny-outside-org-other-actions",
        [
            allow(None),
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:ReceiveMessage",
                "Resource": QUEUE_ARN,
                "Condition": {"StringNotEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
            },
            TLS,
        ],
        "hit",
        "pass",
        IAM_DENY,
    ),
    Shape(
        "deny-outside-org-wildcard",
        [
            allow(None),
            {
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": QUEUE_ARN,
                "Condition": {"StringNotLike": {"aws:PrincipalOrgID": "o-*"}},
            },
            TLS,
        ],
        "hit",
        "pass",
        IAM_DENY,
    ),
    # --- QR023 and QR013 together ----------------------------------------------------------------
    Shape("single-statement-object-public", allow(None), "hit", "hit", IAM_GRAMMAR),
    Shape(
        "allow-when-no-tls",
        [allow({"Bool": {"aws:SecureTransport": "false"}}, Action="sqs:*")],
        "hit",
        "hit",
        SQS_TLS,
    ),
    # --- QR013: complete TLS denies --------------------------------------------------------------
    Shape("tls-standard", [TLS], "pass", "pass", SQS_TLS),
    Shape(
        "tls-boolifexists",
        [deny_tls(Condition={"BoolIfExists": {"aws:SecureTransport": "false"}})],
        "pass",
        "pass",
        RCP_TLS,
    ),
    Shape(
        "tls-json-boolean",
        [deny_tls(Condition={"Bool": {"aws:SecureTransport": False}})],
        "pass",
        "pass",
        IAM_BOOL,
    ),
    Shape(
        "tls-upper-case-value",
        [deny_tls(Condition={"Bool": {"aws:SecureTransport": "FALSE"}})],
        "pass",
        "pass",
        IAM_BOOL,
    ),
    Shape(
        "tls-lower-case-key",
        [deny_tls(Condition={"Bool": {"aws:securetransport": "false"}})],
        "pass",
        "pass",
        IAM_KEYS,
    ),
    Shape("tls-aws-star", [deny_tls(Principal={"AWS": "*"})], "pass", "pass", SQS_TLS),
    Shape("tls-resource-star", [deny_tls(Resource="*")], "pass", "pass", IAM_RESOURCE),
    Shape("tls-action-star", [deny_tls(Action="*")], "pass", "pass", IAM_ACTION),
    Shape(
        "tls-notaction-not-a-queue-action",
        [deny_tls(Action=None, NotAction="sqs:ListQueues")],
        "pass",
        "pass",
        IAM_ACTION,
    ),
    Shape("tls-single-object", deny_tls(), "pass", "pass", IAM_GRAMMAR),
    Shape(
        "tls-split-over-two-statements",
        [
            deny_tls(Sid="SendReceive", Action=["sqs:SendMessage", "sqs:ReceiveMessage"]),
            deny_tls(Sid="Rest", Action=None, NotAction=["sqs:SendMessage", "sqs:ReceiveMessage"]),
        ],
        "pass",
        "pass",
        IAM_ACTION,
    ),
    Shape(
        "tls-generated-name-wildcard-arn",
        [deny_tls(Resource="arn:aws:sqs:*:*:*")],
        "pass",
        "pass",
        IAM_RESOURCE,
        named=False,
    ),
    Shape(
        "tls-own-arn-by-sub",
        [
            deny_tls(
                Resource={
                    "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:tls-own-arn-by-sub"
                }
            )
        ],
        "pass",
        "pass",
        IAM_RESOURCE,
    ),
    # --- QR013: partial and narrowed TLS denies --------------------------------------------------
    Shape(
        "tls-no-deny",
        [allow(None, Principal={"AWS": f"arn:aws:iam::{ACCOUNT}:root"})],
        "pass",
        "hit",
        SQS_TLS,
        says=("no queue policy denying requests without TLS",),
    ),
    Shape(
        "tls-one-role",
        [deny_tls(Principal={"AWS": f"arn:aws:iam::{ACCOUNT}:role/app"})],
        "pass",
        "hit",
        SQS_TLS,
        says=("names only", "every other principal"),
    ),
    Shape(
        "tls-notprincipal",
        [deny_tls(Principal=None, NotPrincipal={"AWS": f"arn:aws:iam::{ACCOUNT}:role/app"})],
        "pass",
        "hit",
        SQS_TLS,
        says=("exempts NotPrincipal",),
    ),
    Shape(
        "tls-deletequeue-only",
        [deny_tls(Action="sqs:DeleteQueue")],
        "pass",
        "hit",
        SQS_TLS,
        says=("sqs:SendMessage", "sqs:ReceiveMessage"),
    ),
    Shape(
        "tls-sendmessage-only",
        [deny_tls(Action="sqs:SendMessage")],
        "pass",
        "hit",
        SQS_TLS,
        says=("left open without TLS", "sqs:ReceiveMessage"),
    ),
    Shape(
        "tls-notaction-sendmessage",
        [deny_tls(Action=None, NotAction="sqs:SendMessage")],
        "pass",
        "hit",
        IAM_ACTION,
        says=("left open without TLS: sqs:SendMessage",),
    ),
    Shape(
        "tls-message-actions-only",
        [deny_tls(Action="sqs:*Message")],
        "pass",
        "hit",
        IAM_ACTION,
        says=("sqs:PurgeQueue",),
    ),
    Shape(
        "tls-other-queue-arn",
        [deny_tls(Resource=f"arn:aws:sqs:us-east-1:{ACCOUNT}:someone-elses-queue")],
        "pass",
        "hit",
        IAM_RESOURCE,
        says=("does not cover the queue",),
    ),
    Shape(
        "tls-generated-name-literal-arn",
        [deny_tls(Resource=f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders")],
        "pass",
        "hit",
        IAM_RESOURCE,
        named=False,
    ),
    Shape(
        "tls-narrowed-by-vpce",
        [
            deny_tls(
                Condition={
                    "Bool": {"aws:SecureTransport": "false"},
                    "StringEquals": {"aws:SourceVpce": "vpce-0a1b2c3d"},
                }
            )
        ],
        "pass",
        "hit",
        IAM_MULTI,
        says=("narrowed by StringEquals aws:SourceVpce",),
    ),
    Shape(
        "tls-true-value",
        [deny_tls(Condition={"Bool": {"aws:SecureTransport": "true"}})],
        "pass",
        "hit",
        IAM_BOOL,
        says=("not Bool/BoolIfExists aws:SecureTransport false",),
    ),
    Shape(
        "tls-resource-parameter-unknown",
        [deny_tls(Resource={"Ref": "QueueArn"})],
        "pass",
        "unknown",
        CFN_VALUES,
        parameters={"QueueArn": {"Type": "String"}},
    ),
    Shape(
        "tls-resource-parameter-other-queue",
        [deny_tls(Resource={"Ref": "QueueArn"})],
        "pass",
        "hit",
        CFN_VALUES,
        parameters={
            "QueueArn": {"Type": "String", "Default": f"arn:aws:sqs:us-east-1:{ACCOUNT}:elsewhere"}
        },
    ),
]


# --- Templates and verdicts ---------------------------------------------------------------------


def template(shape: Shape) -> Template:
    queue: dict[str, Any] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    if shape.named:
        queue["Properties"]["QueueName"] = shape.id
    document = {"Version": "2012-10-17", "Statement": copy.deepcopy(shape.statements)}
    _drop_none(document)
    resources: dict[str, Any] = {
        "Queue": queue,
        "Policy": {
            "Type": "AWS::SQS::QueuePolicy",
            "Properties": {"Queues": [{"Ref": "Queue"}], "PolicyDocument": document},
        },
        **copy.deepcopy(shape.extra),
    }
    result: Template = {"Resources": resources}
    if shape.parameters:
        result["Parameters"] = copy.deepcopy(shape.parameters)
    return result


def _drop_none(value: Any) -> None:
    """Remove elements the builders set to None (``allow(Principal=None)``: no Principal)."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            _drop_none(item)
    elif isinstance(value, list):
        for item in value:
            _drop_none(item)


def verdict(findings: list[Finding], rule_id: str) -> str:
    """hit, unknown or pass for one rule on the queue ``Queue``."""
    mine = [f for f in findings if f.queue == "Queue"]
    if any(f.rule_id == rule_id for f in mine):
        return "hit"
    if any(f.rule_id == "QR900" and f"{rule_id} not judged" in f.message for f in mine):
        return "unknown"
    return "pass"


def test_the_table_is_large_and_cites_its_sources() -> None:
    assert len(SHAPES) >= 60
    assert len({s.id for s in SHAPES}) == len(SHAPES)
    for shape in SHAPES:
        assert {shape.qr023, shape.qr013} <= {"hit", "pass", "unknown"}, shape.id
        assert len(shape.source) > 20, shape.id
    # every verdict occurs for both rules
    assert {s.qr023 for s in SHAPES} == {"hit", "pass", "unknown"}
    assert {s.qr013 for s in SHAPES} == {"hit", "pass", "unknown"}


@pytest.mark.parametrize("shape", SHAPES, ids=[s.id for s in SHAPES])
def test_policy_shape(shape: Shape, tmp_path: Path) -> None:
    # GIVEN one queue and its policy in the given shape
    path = write(tmp_path, f"{shape.id}.template.json", template(shape))
    # WHEN the single-process engine audits it
    findings = list(engine.audit_paths([str(path)]).findings)
    # THEN QR023 and QR013 give the documented verdicts, and their messages say what is open
    assert (verdict(findings, "QR023"), verdict(findings, "QR013")) == (
        shape.qr023,
        shape.qr013,
    ), (shape.source, [f.message for f in findings if f.rule_id in ("QR023", "QR013", "QR900")])
    messages = " | ".join(f.message for f in findings if f.rule_id in ("QR023", "QR013"))
    for fragment in shape.says:
        assert fragment in messages, (fragment, messages)


def test_qr023_message_names_statement_actions_and_principal(tmp_path: Path) -> None:
    shape = next(s for s in SHAPES if s.id == "sourcearn-any-account-topic")
    path = write(tmp_path, "t.template.json", template(shape))
    (finding,) = [f for f in engine.audit_paths([str(path)]).findings if f.rule_id == "QR023"]
    assert "statement 'Send'" in finding.message
    assert "sqs:SendMessage" in finding.message
    assert 'any principal ("*")' in finding.message
    assert "arn:aws:sns:us-east-1:*:alerts" in finding.message


def test_qr900_names_the_unknown_value(tmp_path: Path) -> None:
    shape = next(s for s in SHAPES if s.id == "sourcearn-parameter-unknown")
    path = write(tmp_path, "t.template.json", template(shape))
    (finding,) = [f for f in engine.audit_paths([str(path)]).findings if f.rule_id == "QR900"]
    assert "QR023 not judged" in finding.message
    assert "TopicArn" in finding.message


# --- The whole table as one fleet, on both engines --------------------------------------------


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    folder = tmp_path_factory.mktemp("policy-shapes")
    return [(str(write(folder, f"{s.id}.template.json", template(s))), s.id) for s in SHAPES]


def _verdicts(findings: list[Finding]) -> dict[str, tuple[str, str]]:
    by_stack: dict[str, list[Finding]] = {s.id: [] for s in SHAPES}
    for finding in findings:
        by_stack[finding.stack].append(finding)
    return {
        stack: (verdict(found, "QR023"), verdict(found, "QR013"))
        for stack, found in by_stack.items()
    }


EXPECTED = {s.id: (s.qr023, s.qr013) for s in SHAPES}


def test_fleet_local_engine(fleet: list[tuple[str, str]]) -> None:
    findings = list(engine.audit_paths([path for path, _ in fleet]).findings)
    assert _verdicts(findings) == EXPECTED


@pytest.mark.spark
def test_fleet_spark_job_agrees(spark_audit: EngineAudit, fleet: list[tuple[str, str]]) -> None:
    spark_findings = list(spark_audit(AuditInputs(fleet)).findings)
    assert _verdicts(spark_findings) == EXPECTED
    local = list(engine.audit_paths([path for path, _ in fleet]).findings)
    relevant = ("QR013", "QR023", "QR900")
    assert sorted(
        (f for f in spark_findings if f.rule_id in relevant), key=Finding.sort_key
    ) == sorted((f for f in local if f.rule_id in relevant), key=Finding.sort_key)


# --- Boundaries of a fixed value, on the evaluator itself ----------------------------------------


@pytest.mark.parametrize(
    ("cidr", "restricts"),
    [
        ("10.0.0.0/7", False),  # just wider than the /8 floor: many owners
        ("10.0.0.0/8", True),
        ("10.0.0.0/9", True),
        ("2001:db8::/31", False),
        ("2001:db8::/32", True),
        ("2001:db8::/33", True),
        ("not-an-address", False),
    ],
    ids=["v4-7", "v4-8", "v4-9", "v6-31", "v6-32", "v6-33", "garbage"],
)
def test_source_ip_width(cidr: str, restricts: bool) -> None:
    from constructs_lib.audit.iam import conditions

    test = conditions.Test("IpAddress", "aws:SourceIp", (cidr,))
    assert (conditions.restricts(test) is True) == restricts, conditions.restricts(test)


@pytest.mark.parametrize(
    ("account", "restricts"),
    [("12345678901", False), ("123456789012", True), ("1234567890123", False)],
    ids=["11-digits", "12-digits", "13-digits"],
)
def test_source_account_is_twelve_digits(account: str, restricts: bool) -> None:
    from constructs_lib.audit.iam import conditions

    test = conditions.Test("StringEquals", "aws:SourceAccount", (account,))
    assert (conditions.restricts(test) is True) == restricts, conditions.restricts(test)
