"""An SQS consumer whose failed messages come back later with every receive (no Powertools)."""

from __future__ import annotations

import json
from typing import Any

from constructs_lib.backoff_batch import process_batch


def charge(payment: dict[str, Any]) -> None:
    """Stands for the downstream call: raises when the payment cannot be made now."""
    if payment["amount_cents"] <= 0:
        raise ValueError(f"payment {payment['payment_id']}: nothing to charge")


def handle_record(record: dict[str, Any]) -> None:
    charge(json.loads(record["body"]))


def handler(event: dict[str, Any], context: object) -> dict[str, list[dict[str, str]]]:
    # Each record that raises waits its backoff (settings from the function's environment)
    # and is reported in batchItemFailures; the others are deleted by Lambda.
    # With the context, records stop starting before the timeout: only those left come back.
    return process_batch(event, handle_record, context=context)
