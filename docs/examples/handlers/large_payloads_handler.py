"""An SQS consumer whose large orders arrive through S3 (the extended client's pointers):
each record reaches handle_record with its payload in the body (no Powertools)."""

from __future__ import annotations

import json
from typing import Any

from constructs_lib.large_payloads import process_batch


def handle_record(record: dict[str, Any]) -> None:
    order = json.loads(record["body"])
    if not order["lines"]:
        raise ValueError(f"order {order['order_id']}: no lines")


def handler(event: dict[str, Any], context: object) -> dict[str, list[dict[str, str]]]:
    # A payload that cannot be read (missing, denied, over the read cap) fails its record only,
    # which waits its backoff like any failure; the payloads of the processed records are
    # deleted where the queue's large_payloads says so. The bucket and prefix come from the
    # function's environment, where the construct writes them.
    return process_batch(event, handle_record, context=context)
