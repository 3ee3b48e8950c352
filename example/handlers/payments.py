"""Consumer of the FIFO payments queue.

Within a message group order matters, so after the first failure in a batch every later
message is reported as failed too: they are retried after it, in their original order, instead
of being processed ahead of it (Lambda guide, "Reporting batch item failures" for FIFO).
"""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger()
logger.setLevel(logging.INFO)


def process_payment(body: str) -> None:
    payment = json.loads(body)
    amount = payment["amount_cents"]
    if not isinstance(amount, int) or amount <= 0:
        raise ValueError(f"payment {payment.get('payment_id')}: amount_cents must be positive")
    logger.info("settled payment %s", payment.get("payment_id"))


def handler(event: dict[str, Any], _context: object) -> dict[str, list[dict[str, str]]]:
    records = event["Records"]
    for position, record in enumerate(records):
        try:
            process_payment(record["body"])
        except (ValueError, KeyError, TypeError) as error:
            logger.warning("message %s failed: %s", record["messageId"], error)
            return {
                "batchItemFailures": [
                    {"itemIdentifier": later["messageId"]} for later in records[position:]
                ]
            }
    return {"batchItemFailures": []}
