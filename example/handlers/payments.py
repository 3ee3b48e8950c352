"""Consumer of the FIFO payments queue.

Within a message group order matters, so after the first failure in a batch every later
message is reported as failed too: they are retried after it, in their original order, instead
of being processed ahead of it (Lambda guide, "Reporting batch item failures" for FIFO).

A payment above SQS's message size arrives as the extended client's pointer to the queue's
payload bucket (``large_payloads``): it is read from S3 before it is processed, and one that
cannot be read fails like a bad payment. The payloads of the settled payments are deleted last.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from constructs_lib.large_payloads import PayloadError, Payloads

logger = logging.getLogger()
logger.setLevel(logging.INFO)


def process_payment(body: str) -> None:
    payment = json.loads(body)
    amount = payment["amount_cents"]
    if not isinstance(amount, int) or amount <= 0:
        raise ValueError(f"payment {payment.get('payment_id')}: amount_cents must be positive")
    logger.info("settled payment %s", payment.get("payment_id"))


def handler(event: dict[str, Any], context: object) -> dict[str, list[dict[str, str]]]:
    # The bucket, the queue's prefix and whether to delete come from the function's environment,
    # where the construct writes them.
    payloads = Payloads.from_environment()
    records = event["Records"]
    response: dict[str, list[dict[str, str]]] = {"batchItemFailures": []}
    for position, record in enumerate(records):
        try:
            process_payment(payloads.resolve(record)["body"])
        except (PayloadError, ValueError, KeyError, TypeError) as error:
            logger.warning("message %s failed: %s", record["messageId"], error)
            response["batchItemFailures"] = [
                {"itemIdentifier": later["messageId"]} for later in records[position:]
            ]
            break
    return payloads.delete_processed(event, response, context=context)
