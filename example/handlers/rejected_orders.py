"""Consumer of the orders dead-letter queue: records each order that could not be processed.

A message reaches the dead-letter queue after failing every receive the source allows; retrying
it again will not help. This consumer writes one structured log line per rejected order (what
support needs to contact the customer) and lets the message go. Because it drains the
dead-letter queue, the queue's depth stays near zero: the library alarms on arrivals
(NumberOfMessagesReceived) instead, so each rejection still notifies the alarm topic.

A record it cannot log (a body that is not an order) is reported as failed and stays in the
dead-letter queue for a person to read.
"""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger()
logger.setLevel(logging.INFO)


def rejection(record: dict[str, Any]) -> dict[str, Any]:
    """The log entry for one dead letter; ValueError when the body is not an order."""
    order = json.loads(record["body"])
    if not isinstance(order, dict) or "order_id" not in order:
        raise ValueError("not an order")
    attributes = record.get("attributes", {})
    return {
        "rejected_order": order["order_id"],
        "message_id": record["messageId"],
        "first_sent": attributes.get("SentTimestamp"),
        "receives": attributes.get("ApproximateReceiveCount"),
    }


def handler(event: dict[str, Any], _context: object) -> dict[str, list[dict[str, str]]]:
    failures = []
    for record in event["Records"]:
        try:
            logger.info(json.dumps(rejection(record)))
        except (ValueError, KeyError, TypeError) as error:
            logger.warning("dead letter %s kept: %s", record["messageId"], error)
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
