"""Redriving a ResilientQueue's dead letters: what an operator needs to move them back to the
source with ``StartMessageMoveTask``, on exactly the two queues and their customer keys."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.queue import grants
from constructs_lib.queue.keys import customer_key, same_key


def grant_redrive(
    scope: Construct,
    source: sqs.IQueue,
    dead_letter_queue: sqs.IQueue,
    grantee: iam.IGrantable,
) -> iam.Grant:
    """What moving dead letters back to the source takes (StartMessageMoveTask, and listing and
    cancelling move tasks), on exactly the two queues and their customer keys, the keys bound to
    SQS (``kms:ViaService``). What cannot be attached (an imported queue's policy, an imported
    key's policy) is warned about with the statement to add."""
    stack = Stack.of(scope)
    purpose = f"grant_redrive of {scope.node.path}"
    parts = [
        grants.grant_on_queue(
            grantee, dead_letter_queue, limits.REDRIVE_DEAD_LETTER_ACTIONS, scope, purpose
        ),
        grants.grant_on_queue(grantee, source, limits.REDRIVE_DESTINATION_ACTIONS, scope, purpose),
    ]
    # The move reads each message from the DLQ (decrypt with the DLQ's key) and sends it to the
    # source (a data key of the source's key). SQS developer guide, key management.
    dead_letter_key = customer_key(dead_letter_queue.encryption_master_key, stack)
    source_key = customer_key(source.encryption_master_key, stack)
    source_actions: tuple[str, ...] = limits.KMS_SEND_ACTIONS
    if dead_letter_key and source_key and same_key(dead_letter_key, source_key, stack):
        source_actions = tuple(dict.fromkeys(limits.KMS_SEND_ACTIONS + limits.KMS_RECEIVE_ACTIONS))
        dead_letter_key = None
    if dead_letter_queue.encryption_master_key is None and not isinstance(
        dead_letter_queue, sqs.Queue
    ):
        # An imported DLQ hides its encryption: if a customer key encrypts it, the move cannot
        # read its messages without kms:Decrypt on that key.
        grants.warn_statement(
            scope,
            "deadLetterKeyUnknown",
            f"{purpose}: the dead_letter_queue {grants.render(dead_letter_queue.queue_arn, scope)} "
            "was imported without its encryption_master_key, so no key was granted. If a "
            "customer managed key encrypts it, add this statement to the principal's policy with "
            "that key's ARN (or import the queue with Queue.from_queue_attributes(key_arn=...))",
            iam.PolicyStatement(
                actions=list(limits.KMS_RECEIVE_ACTIONS),
                resources=["<ARN of the dead-letter queue's key>"],
                conditions=grants.via_sqs_conditions(scope),
            ),
        )
    if dead_letter_key is not None:
        parts.append(
            grants.grant_key_via_sqs(
                dead_letter_key, grantee, limits.KMS_RECEIVE_ACTIONS, scope, purpose
            )
        )
    if source_key is not None:
        parts.append(grants.grant_key_via_sqs(source_key, grantee, source_actions, scope, purpose))
    if not all(part.success for part in parts):
        # iam.Grant.combine reports success when any part succeeded; a redrive that lacks one
        # statement fails, so the grant says so (each missing statement was warned about).
        return iam.Grant.drop(grantee, purpose)
    grant = parts[0]
    for part in parts[1:]:
        grant = grant.combine(part)
    return grant
