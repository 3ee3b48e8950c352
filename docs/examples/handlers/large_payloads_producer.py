"""A producer function that sends orders of any size: a body above the extended client's
threshold (256 KiB) goes to the queue's payload bucket, and the queue gets its pointer."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

from constructs_lib.large_payloads import Payloads

sqs = boto3.client("sqs")


def handler(event: dict[str, Any], context: object) -> dict[str, str]:
    # The bucket and prefix come from the function's environment, where add_producer writes
    # them; the queue's URL from a variable the app sets.
    payloads = Payloads.from_environment()
    answer = payloads.send(sqs, os.environ["ORDERS_QUEUE_URL"], json.dumps(event["order"]))
    return {"messageId": answer["MessageId"]}
