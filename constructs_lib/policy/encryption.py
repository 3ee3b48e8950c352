"""Encryption keys: which key producers' services cannot use."""

from __future__ import annotations

from constructs_lib import limits


def is_aws_managed_sqs_key(key_id: str) -> bool:
    """True for the AWS managed key for SQS, by alias or by alias ARN. Its key policy cannot be
    changed, so SNS, EventBridge and S3 cannot encrypt messages with it: they cannot send to a
    queue it encrypts (SQS developer guide, key management)."""
    managed = limits.AWS_MANAGED_SQS_KEY
    return key_id == managed or key_id.endswith(f":{managed}")
