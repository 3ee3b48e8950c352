"""What the constructs need to know of a queue's KMS key: whether it is SQS's AWS managed key,
whether this app writes its policy, whether two keys are one, and how a message names it."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_kms as kms

from constructs_lib import policy
from constructs_lib.params.kinds import implements


def is_aws_managed_sqs_key(key: kms.IKey | None, stack: Stack) -> bool:
    """Whether ``key`` is SQS's AWS managed key: ``kms.Alias.from_alias_name(..., "alias/aws/sqs")``,
    or any key whose ARN ends ``:alias/aws/sqs`` (literal, or formatted by CDK)."""
    if key is None:
        return False
    alias_name = getattr(key, "alias_name", None) if implements(key, kms.IAlias) else None
    if isinstance(alias_name, str) and policy.is_aws_managed_sqs_key(alias_name):
        return True
    return policy.is_aws_managed_sqs_key(_literal_tail(stack.resolve(key.key_arn)))


def key_text(key: Any, stack: Stack) -> str:
    """A key as a message names it: its alias name or literal ARN, else its construct path."""
    alias_name = getattr(key, "alias_name", None) if implements(key, kms.IAlias) else None
    if isinstance(alias_name, str) and not Token.is_unresolved(alias_name):
        return alias_name
    arn = stack.resolve(key.key_arn)
    return arn if isinstance(arn, str) else str(key.node.path)


def _literal_tail(resolved: object) -> str:
    """The literal end of a resolved string: the string itself, or an ``Fn::Join``'s last part."""
    if isinstance(resolved, str):
        return resolved
    if isinstance(resolved, dict) and isinstance(resolved.get("Fn::Join"), list):
        parts = resolved["Fn::Join"][1]
        if isinstance(parts, list) and parts and isinstance(parts[-1], str):
            return parts[-1]
    return ""


def key_policy_editable(key: kms.IKey) -> bool:
    """Whether this app writes ``key``'s policy: a key defined here, or an alias of one."""
    if isinstance(key, kms.Key):
        return True
    return isinstance(key, kms.Alias) and key_policy_editable(key.alias_target_key)


def customer_key(key: kms.IKey | None, stack: Stack) -> kms.IKey | None:
    """``key``, unless it is absent or the AWS managed key, whose policy already admits every
    principal of the account that may use SQS (an identity statement on it grants nothing)."""
    return None if key is None or is_aws_managed_sqs_key(key, stack) else key


def same_key(first: kms.IKey, second: kms.IKey, stack: Stack) -> bool:
    return bool(stack.resolve(first.key_arn) == stack.resolve(second.key_arn))
