"""Consumer of the standard orders queue.

Reports partial batch failures: only the messages that failed are retried, each after a wait that
grows with its receive count (``constructs_lib.backoff_batch``, with the settings
``retry_backoff=`` writes into the function's environment), and a message that keeps failing
reaches the dead-letter queue after the queue's max_receive_count.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from constructs_lib.backoff_batch import process_batch

logger = logging.getLogger()
logger.setLevel(logging.INFO)


class InvalidOrder(ValueError):
    """A message that can never be processed: retrying will not help."""


def process_order(body: str) -> None:
    order = json.loads(body)
    if not isinstance(order, dict) or "order_id" not in order:
        raise InvalidOrder("an order needs an order_id")
    if not isinstance(order.get("quantity", 1), int) or order.get("quantity", 1) < 1:
        raise InvalidOrder(f"order {order['order_id']}: quantity must be a positive integer")
    logger.info("processed order %s", order["order_id"])


def handle_order(record: dict[str, Any]) -> None:
    process_order(record["body"])


def handler(event: dict[str, Any], context: object) -> dict[str, list[dict[str, str]]]:
    # Each order that raises is logged, waits its backoff and is reported in batchItemFailures;
    # orders not started when the invocation runs short of time are reported too, nothing else.
    return process_batch(event, handle_order, context=context)
