"""A boto3 consumer that plays the Lambda function's part on the deployed queues.

The emulator cannot invoke functions (that needs Docker), so the tests receive, process, delete
or leave messages themselves, exactly as the Lambda poller would on the queues the library made.
Every loop here is bounded in iterations and in time and only talks to the local emulator.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

ALL = ["All"]


@dataclass(frozen=True)
class Received:
    message_id: str
    body: str
    receipt_handle: str
    receive_count: int
    group_id: str | None
    attributes: dict[str, Any]
    md5_of_body: str

    @classmethod
    def of(cls, message: dict[str, Any]) -> Received:
        return cls(
            message_id=message["MessageId"],
            body=message["Body"],
            receipt_handle=message["ReceiptHandle"],
            receive_count=int(message["Attributes"]["ApproximateReceiveCount"]),
            group_id=message["Attributes"].get("MessageGroupId"),
            attributes=message.get("MessageAttributes", {}),
            md5_of_body=message["MD5OfBody"],
        )


def receive(sqs: Any, url: str, limit: int = 10, wait: int = 0) -> list[Received]:
    response = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=limit,
        WaitTimeSeconds=wait,
        AttributeNames=ALL,
        MessageSystemAttributeNames=ALL,
        MessageAttributeNames=ALL,
    )
    return [Received.of(message) for message in response.get("Messages", [])]


def release(sqs: Any, url: str, message: Received) -> None:
    """Give a failed message back at once (a consumer that fails fast) instead of letting its
    visibility timeout run out; it still counts as a receive without a delete."""
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=0
    )


def depth(sqs: Any, url: str) -> int:
    """Messages in the queue: visible, in flight and delayed."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attrs.get(name, 0)) for name in names)


def drain(sqs: Any, url: str, expected: int, seconds: float = 30) -> list[Received]:
    """Receive and delete everything in a queue (a DLQ), in the order the queue hands it out.

    Stops once ``expected`` messages arrived and a further one-second poll finds nothing (so
    extra copies would be seen), or when ``seconds`` run out.
    """
    drained: list[Received] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch = receive(sqs, url, wait=1)
        if not batch and len(drained) >= expected:
            break
        for message in batch:
            drained.append(message)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message.receipt_handle)
    return drained


def send(
    sqs: Any,
    url: str,
    body: str,
    attributes: dict[str, Any] | None = None,
    group: str | None = None,
) -> str:
    extra: dict[str, Any] = {}
    if group is not None:
        extra = {"MessageGroupId": group, "MessageDeduplicationId": body}
    response = sqs.send_message(
        QueueUrl=url, MessageBody=body, MessageAttributes=attributes or {}, **extra
    )
    message_id: str = response["MessageId"]
    return message_id
