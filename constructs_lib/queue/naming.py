"""How a message names a resource the user passed: what the user can find it by.

An imported resource is named by the literal ARN (or name) it was imported with; a resource
defined in the app by its construct id, with the physical name the user gave it when there is
one. Never by a Python or jsii representation, and never by a construct path alone: the path is
how CDK names the construct, not how the user wrote it.
"""

from __future__ import annotations

from aws_cdk import CfnResource, Token

# Attributes of an imported resource that hold what it was imported by, most precise first.
_IMPORTED_BY = (
    "queue_arn",
    "function_arn",
    "key_arn",
    "topic_arn",
    "rule_arn",
    "bucket_arn",
    "role_arn",
    "queue_name",
    "function_name",
    "bucket_name",
)
# The physical names a user may give a resource defined in the app (CloudFormation properties
# as the L1 constructs spell them).
_WRITTEN_NAMES = (
    "queue_name",
    "function_name",
    "topic_name",
    "bucket_name",
    "role_name",
    "name",
)
_KINDS = (
    ("aws_sqs", "queue"),
    ("aws_lambda", "function"),
    ("aws_kms", "key"),
    ("aws_sns", "topic"),
    ("aws_events", "rule"),
    ("aws_s3", "bucket"),
    ("aws_iam", "principal"),
)


class Named(str):
    """A name for messages: shown as written, without quotes (``errors.show`` uses ``repr``)."""

    def __repr__(self) -> str:
        return str(self)


def _literal(value: object) -> str | None:
    if isinstance(value, str) and value and not Token.is_unresolved(value):
        return value
    return None


def _kind(value: object) -> str:
    module = type(value).__module__
    for part, kind in _KINDS:
        if part in module:
            return kind
    return "resource"


def display(value: object) -> Named:
    """``arn:aws:sqs:eu-west-1:111111111111:shared-dlq`` for an imported queue; ``queue MyDlq
    (queue_name 'orders-dlq')`` or ``queue MyDlq`` for one the app defines."""
    node = getattr(value, "node", None)
    if node is None:
        return Named(str(value))
    kind = _kind(value)
    child = node.default_child
    if isinstance(child, CfnResource):
        written = next(
            (
                (name, text)
                for name in _WRITTEN_NAMES
                if (text := _literal(getattr(child, name, None))) is not None
            ),
            None,
        )
        suffix = f" ({written[0]} {written[1]!r})" if written else ""
        return Named(f"{kind} {node.id}{suffix}")
    for attribute in _IMPORTED_BY:
        try:
            text = _literal(getattr(value, attribute, None))
        except Exception:  # an attribute the imported kind cannot give (jsii raises)
            text = None
        if text is not None:
            return Named(text)
    return Named(f"imported {kind} {node.id}")
