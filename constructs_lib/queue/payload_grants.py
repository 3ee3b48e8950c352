"""Who may write and read a queue's payloads, and what their functions are told.

Every S3 statement names only the queue's prefix (``arn:...:<bucket>/<queue name>/*``) and only
requests over TLS (``aws:SecureTransport``; the created bucket's policy also denies the rest),
so a principal of one queue reads no other queue's payloads in a shared bucket. The key that
encrypts the payloads is granted bound to S3 (``kms:ViaService`` = ``s3.<region>.amazonaws.com``,
KMS developer guide, conditions-kms), as the queue's own key grants are bound to SQS
(``queue.grants``): writing needs ``kms:GenerateDataKey``, reading ``kms:Decrypt`` (S3 user
guide, UsingKMSEncryption). A service principal (SNS, EventBridge, S3 notifications sending to
the queue) writes no payloads and gets nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Acknowledgment, Annotations, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from constructs_lib import limits
from constructs_lib.large_payloads import PAYLOAD_BUCKET_ENV, PAYLOAD_DELETE_ENV, PAYLOAD_PREFIX_ENV
from constructs_lib.queue import grants, naming
from constructs_lib.queue.payloads import PayloadStore

TLS_ONLY: dict[str, dict[str, str]] = {"Bool": {"aws:SecureTransport": "true"}}
"""The condition of every payload statement: requests made over TLS only (IAM guide, global
condition keys, aws:SecureTransport)."""


def grant_producer(store: PayloadStore, grantee: iam.IGrantable, warn_on: IConstruct) -> iam.Grant:
    """What ``grant_send_messages`` adds for a producer of a queue with large payloads: writing
    under the prefix, and for a function of the app the bucket and prefix in its environment."""
    grant = grant_write(store, grantee, warn_on)
    if isinstance(grantee, lambda_.Function):
        set_environment(grantee, grantee, producer_environment(store))
    return grant


def grant_write(store: PayloadStore, grantee: iam.IGrantable, warn_on: IConstruct) -> iam.Grant:
    """A producer's access: PutObject under the prefix, and a data key of the bucket's key."""
    return _grant(
        store,
        grantee,
        limits.S3_PAYLOAD_WRITE_ACTIONS,
        limits.KMS_S3_WRITE_ACTIONS,
        warn_on,
        "large_payloads: writing payloads",
    )


def grant_read(
    store: PayloadStore, grantee: iam.IGrantable, delete: bool, warn_on: IConstruct
) -> iam.Grant:
    """A reader's access: GetObject under the prefix (and DeleteObject with ``delete``), and
    decrypting with the bucket's key."""
    actions = limits.S3_PAYLOAD_READ_ACTIONS + (limits.S3_PAYLOAD_DELETE_ACTIONS if delete else ())
    return _grant(
        store, grantee, actions, limits.KMS_S3_READ_ACTIONS, warn_on, "large_payloads: reading"
    )


def warn_without_role(
    store: PayloadStore, function: IConstruct, delete: bool, shown: IConstruct
) -> None:
    """A function imported without its role cannot be granted anything here (CDK's event
    source warns the same for the queue): a warning holding the statement its role needs."""
    actions = limits.S3_PAYLOAD_READ_ACTIONS + (limits.S3_PAYLOAD_DELETE_ACTIONS if delete else ())
    grants.warn_statement(
        shown,
        "payloadGrantNotAdded",
        f"large_payloads: {naming.display(function)} was imported without its role, so it "
        "cannot be granted its queue's payloads; add this statement to its role's policy",
        iam.PolicyStatement(
            actions=list(actions),
            resources=[store.bucket.arn_for_objects(f"{store.prefix}*")],
            conditions=TLS_ONLY,
        ),
    )


def _grant(
    store: PayloadStore,
    grantee: iam.IGrantable,
    s3_actions: Sequence[str],
    key_actions: Sequence[str],
    warn_on: IConstruct,
    purpose: str,
) -> iam.Grant:
    grant = iam.Grant.add_to_principal_or_resource(
        grantee=grantee,
        actions=list(s3_actions),
        resource_arns=[store.bucket.arn_for_objects(f"{store.prefix}*")],
        resource=store.bucket,
        conditions=TLS_ONLY,
    )
    _acknowledge_prefix(store, grantee)
    if store.key is None:
        return grant
    key_grant = grants.grant_key_via_sqs(
        store.key, grantee, key_actions, warn_on, purpose, service=limits.S3_VIA_SERVICE
    )
    return grant.combine(key_grant)


def _acknowledge_prefix(store: PayloadStore, grantee: iam.IGrantable) -> None:
    """cdk-nag's AwsSolutions-IAM5 flags the prefix's wildcard, which is the grant itself (a
    payload's key is new for every message): acknowledged on the principal for exactly that
    resource, as cdk-nag names it, when the bucket is defined in the principal's stack."""
    bucket = store.bucket
    # The statement lands in the principal's policy (a function's is its role's), which need
    # not be a child of the grantee: the acknowledgment goes on the principal.
    principal = grantee.grant_principal
    if not isinstance(principal, Construct) or not isinstance(bucket, s3.Bucket):
        return
    stack = Stack.of(bucket)
    if Stack.of(principal) is not stack:
        return
    cfn = bucket.node.default_child
    assert isinstance(cfn, s3.CfnBucket)
    resource = f"<{stack.get_logical_id(cfn)}.Arn>/{store.prefix}*"
    Validations.of(principal).acknowledge(
        Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]",
            reason="Payload keys are new for every message: the grant is the queue's prefix "
            "in its payload bucket, nothing wider.",
        )
    )


def consumer_environment(store: PayloadStore, delete: bool) -> dict[str, str]:
    """What a consumer's handler reads (``constructs_lib.large_payloads``)."""
    return {
        PAYLOAD_BUCKET_ENV: store.bucket.bucket_name,
        PAYLOAD_PREFIX_ENV: store.prefix,
        PAYLOAD_DELETE_ENV: "true" if delete else "false",
    }


def producer_environment(store: PayloadStore) -> dict[str, str]:
    """What a producer's code reads: where to write."""
    return {PAYLOAD_BUCKET_ENV: store.bucket.bucket_name, PAYLOAD_PREFIX_ENV: store.prefix}


def set_environment(
    function: lambda_.Function | None,
    shown: IConstruct,
    variables: dict[str, str],
) -> None:
    """``variables`` into ``function``'s environment; for a function the app cannot set
    (``function`` None: imported, or a published version), a warning naming them."""
    if function is not None:
        for name, value in variables.items():
            function.add_environment(name, value)
        return
    Annotations.of(shown).add_warning_v2(
        "constructs_lib:payloadEnvironment",
        f"large_payloads: the environment of {naming.display(shown)} cannot be set by this app "
        "(an imported function, or a version other than current_version); set "
        + ", ".join(sorted(variables))
        + " where it is deployed, to the values this queue's other functions get",
    )
