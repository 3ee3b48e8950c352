"""SQS events as Lambda builds them for a function, from messages a test received or made up.

The shape is the one the Lambda developer guide shows for an SQS event source ("Using Lambda
with Amazon SQS", example event): one record per message with ``messageId``,
``receiptHandle``, ``body``, ``attributes`` (the message system attributes as strings, FIFO ones
included), ``messageAttributes`` in camel case, ``md5OfBody``, ``eventSource`` ``aws:sqs``,
``eventSourceARN`` and ``awsRegion``.
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
# The system attributes Lambda passes on (ReceiveMessage with AttributeNames All returns them).
SYSTEM_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
)


def queue_arn(name: str, region: str = REGION, account: str = ACCOUNT) -> str:
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    converted: dict[str, Any] = {
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": value["DataType"],
    }
    if "StringValue" in value:
        converted["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        converted["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return converted


def from_received(message: dict[str, Any], arn: str) -> dict[str, Any]:
    """The record Lambda's poller makes of one ReceiveMessage message (``AttributeNames=All``,
    ``MessageAttributeNames=All``)."""
    attributes = message.get("Attributes", {})
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {k: str(attributes[k]) for k in SYSTEM_ATTRIBUTES if k in attributes},
        "messageAttributes": {
            name: _message_attribute(value)
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": arn.split(":")[3],
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def event_of(messages: list[dict[str, Any]], arn: str) -> dict[str, Any]:
    """The event of one invocation: the poller's batch, in the order SQS returned it."""
    return {"Records": [from_received(message, arn) for message in messages]}


def made_up(
    message_id: str,
    body: str = "{}",
    *,
    arn: str = queue_arn("orders"),
    receive_count: int = 1,
    sent_at: float | None = None,
    group: str | None = None,
) -> dict[str, Any]:
    """A record for tests that never reach SQS: its receipt handle is no real one."""
    sent_ms = str(int((time.time() if sent_at is None else sent_at) * 1000))
    attributes = {
        "ApproximateReceiveCount": str(receive_count),
        "SentTimestamp": sent_ms,
        "SenderId": "AIDAEXAMPLE",
        "ApproximateFirstReceiveTimestamp": sent_ms,
    }
    if group is not None:
        attributes |= {
            "SequenceNumber": "1" + message_id.encode().hex().rjust(19, "0")[:19],
            "MessageGroupId": group,
            "MessageDeduplicationId": message_id,
        }
    return {
        "messageId": message_id,
        "receiptHandle": f"not-a-receipt-handle-{message_id}",
        "body": body,
        "attributes": attributes,
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": arn.split(":")[3],
    }
