"""S3 event notifications reach an SSE-KMS ResilientQueue through the statements the library
writes (one key statement and one queue statement, both bound to the bucket and its account).

CDK writes a bucket's notifications with a custom resource (``Custom::S3BucketNotifications``)
whose handler is a Lambda function, which the emulator cannot run (it needs Docker). So the
synthesized template is applied through the emulator's own APIs instead: the key with the
synthesized key policy, the queue with the synthesized queue policy, the bucket with the
synthesized notification configuration. Then an object is put and its notification received.
The emulator evaluates neither key policies nor queue policies: that the statements are as
narrow as AWS documents is checked on the template (tests/constructs/producers/test_producers.py,
tests/test_key_policy_conditions.py); here the statements are applied as written and the
configuration is shown to deliver.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from constructs_lib import ResilientQueue

from .deployment import resolve
from .emulator import ACCOUNT, REGION
from .messages import receive

pytestmark = pytest.mark.e2e
BUCKET = "constructs-lib-e2e-uploads"
QUEUE_NAME = "s3-intake"


def synthesized() -> tuple[dict[str, Any], dict[str, str]]:
    """The template of an SSE-KMS ResilientQueue fed by a bucket under ``incoming/``, and the
    logical ids of its key, bucket, source queue and notifications."""
    stack = cdk.Stack(cdk.App(), "S3Intake", env=cdk.Environment(account=ACCOUNT, region=REGION))
    key = kms.Key(stack, "QueueKey", enable_key_rotation=True)
    intake = ResilientQueue(stack, "Intake", queue_name=QUEUE_NAME, encryption_key=key)
    bucket = s3.Bucket(stack, "Uploads", bucket_name=BUCKET, enforce_ssl=True)
    intake.add_producer(bucket, s3_filters=[s3.NotificationKeyFilter(prefix="incoming/")])
    template = Template.from_stack(stack).to_json()
    ids = {
        "key": stack.get_logical_id(key.node.default_child),  # type: ignore[arg-type]
        "bucket": stack.get_logical_id(bucket.node.default_child),  # type: ignore[arg-type]
        "queue": stack.get_logical_id(intake.queue.node.default_child),  # type: ignore[arg-type]
    }
    return template, ids


def test_an_object_put_under_the_prefix_notifies_the_encrypted_queue(
    client_factory: Callable[..., Any],
) -> None:
    template, ids = synthesized()
    resources = template["Resources"]
    sqs, kms_client, s3_client = client_factory("sqs"), client_factory("kms"), client_factory("s3")
    physical = {ids["bucket"]: f"arn:aws:s3:::{BUCKET}"}

    key_policy = resolve(resources[ids["key"]]["Properties"]["KeyPolicy"], physical)
    key_arn = kms_client.create_key(Policy=json.dumps(key_policy))["KeyMetadata"]["Arn"]
    queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{QUEUE_NAME}"
    physical[ids["queue"]] = queue_arn
    [queue_policy] = [
        r["Properties"]["PolicyDocument"]
        for r in resources.values()
        if r["Type"] == "AWS::SQS::QueuePolicy"
        and r["Properties"]["Queues"] == [{"Ref": ids["queue"]}]
    ]
    queue_url = sqs.create_queue(
        QueueName=QUEUE_NAME,
        Attributes={
            "KmsMasterKeyId": key_arn,
            "Policy": json.dumps(resolve(queue_policy, physical)),
        },
    )["QueueUrl"]
    s3_client.create_bucket(Bucket=BUCKET)
    [notifications] = [
        r for r in resources.values() if r["Type"] == "Custom::S3BucketNotifications"
    ]
    configuration = resolve(notifications["Properties"]["NotificationConfiguration"], physical)
    s3_client.put_bucket_notification_configuration(
        Bucket=BUCKET, NotificationConfiguration=configuration
    )
    # S3 checks a new queue destination with a test event (s3:TestEvent); drop it.
    for message in receive(sqs, queue_url, 10):
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message.receipt_handle)

    s3_client.put_object(Bucket=BUCKET, Key="other/skipped.txt", Body=b"no")
    s3_client.put_object(Bucket=BUCKET, Key="incoming/order-1.json", Body=b"{}")

    # Event notifications carry the object key URL-encoded (S3 user guide, notification content
    # structure).
    keys = [
        unquote_plus(record["s3"]["object"]["key"])
        for message in receive(sqs, queue_url, 10)
        for record in json.loads(message.body).get("Records", [])
    ]
    assert keys == ["incoming/order-1.json"]
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert attributes["KmsMasterKeyId"] == key_arn
    # What was applied is what the library wrote: S3's key statement is bound to the bucket and
    # the account, and grants only what S3 needs to encrypt for the queue.
    [s3_statement] = [
        s for s in key_policy["Statement"] if s["Principal"] == {"Service": "s3.amazonaws.com"}
    ]
    assert s3_statement["Condition"] == {
        "ArnLike": {"aws:SourceArn": f"arn:aws:s3:::{BUCKET}"},
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
    }
    assert sorted(s3_statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
