"""Grants on a ResilientQueue's KMS key, bound to SQS, and the warnings for what cannot be
attached.

A principal that reads or writes a queue only needs the queue's key through SQS: SQS calls KMS
on its behalf (SQS developer guide, key management). Every key statement written here for an
identity principal carries ``kms:ViaService`` = ``sqs.<region>.amazonaws.com`` (KMS developer
guide, condition keys, kms:ViaService), so the same principal cannot decrypt anything else the key
protects (log groups, topics) by calling KMS itself.

aws-cdk-lib's ``Key.grant`` takes no conditions, and ``iam.Grant.add_to_principal_or_resource``
puts its conditions on the principal's statement only, not on the key policy statement it writes
for a principal of another account; so both statements are written here.

A statement that cannot be attached (an imported key's policy, an imported queue's policy, an
imported role in another account) is never dropped silently: it becomes a warning that holds the
statement as JSON the resource's owner can paste.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aws_cdk import Annotations, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from constructs_lib import limits
from constructs_lib.queue.keys import is_aws_managed_sqs_key

WARNING_PREFIX = "constructs_lib"


def via_sqs(scope: IConstruct) -> str:
    """``kms:ViaService`` for SQS in the region of ``scope``'s stack."""
    return limits.SQS_VIA_SERVICE.format(region=Stack.of(scope).region)


def via_sqs_conditions(
    scope: IConstruct, service: str = limits.SQS_VIA_SERVICE
) -> dict[str, dict[str, Any]]:
    """``kms:ViaService`` for ``service`` (SQS, or S3 for payloads) in ``scope``'s region."""
    via = service.format(region=Stack.of(scope).region)
    return {"StringEquals": {limits.KMS_VIA_SERVICE_KEY: via}}


def is_service_principal(principal: iam.IPrincipal) -> bool:
    """Whether ``principal`` is an AWS service (``{"Service": ...}``), conditioned or not."""
    fragment = principal.policy_fragment.principal_json
    return "Service" in fragment


def grant_key_via_sqs(
    key: kms.IKey,
    grantee: iam.IGrantable,
    actions: Sequence[str],
    warn_on: IConstruct,
    purpose: str,
    service: str = limits.SQS_VIA_SERVICE,
) -> iam.Grant:
    """Let ``grantee`` use ``key`` for ``actions`` only through SQS (or the ``service`` given:
    S3 for a queue's payloads).

    The identity statement names the key's ARN; a principal of another account also needs the
    key's policy to name it (a key must trust a principal of another account itself), which is
    written with the same condition, or, for a key not defined in this app, warned about with the
    statement to add. ``purpose`` says in the warning what the grant was for."""
    conditions = via_sqs_conditions(key, service)
    grant = iam.Grant.add_to_principal(
        grantee=grantee, actions=list(actions), resource_arns=[key.key_arn], conditions=conditions
    )
    principal = grantee.grant_principal
    if not grant.success or _other_account(principal, key):
        statement = iam.PolicyStatement(
            principals=[principal], actions=list(actions), resources=["*"], conditions=conditions
        )
        added = key.add_to_resource_policy(statement, True).statement_added
        if not added:
            warn_statement(
                warn_on,
                "keyPolicyNotAdded",
                f"{purpose}: the key {render(key.key_arn, key)} is not defined in this app, so its "
                "key policy cannot get the statement; add it where the key is managed",
                statement,
            )
            # Without the key policy's word a principal of another account cannot use the key.
            return iam.Grant.drop(grantee, purpose)
    return grant


def _other_account(principal: iam.IPrincipal, resource: IConstruct) -> bool:
    """Whether ``principal`` is known to belong to another account than ``resource``
    (the comparison ``iam.Grant`` makes before it writes a resource statement)."""
    account = principal.principal_account
    if account is None:
        return False
    # An imported resource's account is the one its ARN names (``env``), not the stack's.
    env = getattr(resource, "env", None)
    own = env.account if env is not None else Stack.of(resource).account
    if own == account:
        return False
    # Token.compare_strings's rule, without its comparison objects (jsii proxies compare unequal):
    # both unresolved counts as the same account, one unresolved as another.
    return not (Token.is_unresolved(own) and Token.is_unresolved(account))


def grant_on_queue(
    grantee: iam.IGrantable,
    queue: sqs.IQueue,
    actions: Sequence[str],
    warn_on: IConstruct,
    purpose: str,
) -> iam.Grant:
    """``actions`` on ``queue`` (identity policy, or the queue policy for a principal of another
    account), with a warning holding the statement when neither could be attached."""
    grant = iam.Grant.add_to_principal_or_resource(
        grantee=grantee, actions=list(actions), resource_arns=[queue.queue_arn], resource=queue
    )
    # A principal of another account needs the queue policy too, which only a queue defined in
    # this app can get. iam.Grant reports success anyway: an imported role in another account
    # says its statement was added, and an imported queue's dropped statement is still listed.
    missing_resource = _other_account(grantee.grant_principal, queue) and not isinstance(
        queue, sqs.Queue
    )
    if grant.success and not missing_resource:
        return grant
    warn_statement(
        warn_on,
        "queuePolicyNotAdded",
        f"{purpose}: the queue {render(queue.queue_arn, queue)} is not defined in this app, so "
        "its queue policy cannot get the statement the principal needs; add it where the queue "
        "is managed",
        iam.PolicyStatement(
            principals=[grantee.grant_principal],
            actions=list(actions),
            resources=[queue.queue_arn],
        ),
    )
    return iam.Grant.drop(grantee, purpose)


class KeyViaSqsQueue(sqs.Queue):
    """An ``sqs.Queue`` whose grants on its customer key are bound to SQS.

    ``grant_consume_messages``, ``grant_send_messages`` and the Lambda event source (which calls
    ``grant_consume_messages``) reach the key through ``grant_on_key``; here that writes
    ``grant_key_via_sqs`` instead of ``Key.grant``. A service principal (a producer's) keeps
    CDK's grant: services reach the key through the key policy with their own source
    conditions, not through SQS. The AWS managed key needs no grant (its policy admits the
    account's principals that use SQS).

    ``on_grant_send``, when set (a source queue with ``large_payloads``), adds to every
    ``grant_send_messages`` of a principal that is not a service what writing the queue's
    payloads takes (``queue.payload_grants``)."""

    on_grant_send: Callable[[iam.IGrantable], iam.Grant] | None = None

    def grant_send_messages(self, grantee: iam.IGrantable) -> iam.Grant:
        grant = super().grant_send_messages(grantee)
        hook = self.on_grant_send
        if hook is None or is_service_principal(grantee.grant_principal):
            return grant
        return grant.combine(hook(grantee))

    def grant_on_key(self, grantee: iam.IGrantable, *actions: str) -> iam.GrantOnKeyResult:
        key = self.encryption_master_key
        if key is None or is_aws_managed_sqs_key(key, Stack.of(self)):
            return iam.GrantOnKeyResult()
        if is_service_principal(grantee.grant_principal):
            return super().grant_on_key(grantee, *actions)
        grant = grant_key_via_sqs(
            key,
            grantee,
            actions,
            self,
            f"{', '.join(actions)} on the key of the queue {self.node.path}",
        )
        return iam.GrantOnKeyResult(grant=grant)


# --- warnings that carry a statement ----------------------------------------------------------


def warn_statement(
    scope: IConstruct, warning_id: str, message: str, statement: iam.PolicyStatement
) -> None:
    """A warning on ``scope`` that ends with ``statement`` as JSON (tokens rendered readably)."""
    Annotations.of(scope).add_warning_v2(
        f"{WARNING_PREFIX}:{warning_id}",
        f"{message}:\n{statement_json(statement, scope)}",
    )


def statement_json(statement: iam.PolicyStatement, scope: IConstruct) -> str:
    """``statement`` as a policy statement's JSON, every value a string."""
    resolved = Stack.of(scope).resolve(statement.to_statement_json())
    return json.dumps(_as_text(resolved), indent=2, sort_keys=True)


def render(value: str, scope: IConstruct) -> str:
    """A string, with any token rendered as CloudFormation's ``${...}`` substitution syntax."""
    text = _as_text(Stack.of(scope).resolve(value))
    return text if isinstance(text, str) else json.dumps(text)


def _as_text(value: Any) -> Any:
    """Resolved CloudFormation values as text: ``Ref`` and ``Fn::GetAtt`` become ``${...}``,
    ``Fn::Join`` joins, so a warning never shows a token or a jsii object."""
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    if not isinstance(value, Mapping):
        return value
    if set(value) == {"Ref"}:
        return "${" + str(value["Ref"]) + "}"
    if set(value) == {"Fn::GetAtt"}:
        return "${" + ".".join(str(part) for part in value["Fn::GetAtt"]) + "}"
    if set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return str(separator).join(str(_as_text(part)) for part in parts)
    return {key: _as_text(item) for key, item in value.items()}
