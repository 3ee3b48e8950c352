"""The same consumer with Powertools' batch processor: its partial response goes through
apply_backoff."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from constructs_lib.backoff_batch import apply_backoff
from constructs_lib.time_budget import TimeBudget

# A batch whose every record failed must return its response too, or no record waits.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    payment = record.json_body
    if payment["amount_cents"] <= 0:
        raise ValueError(f"payment {payment['payment_id']}: nothing to charge")


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    # A record starts only while the invocation has time for it; those left are reported too.
    budget = TimeBudget(context)
    response = process_partial_response(
        event=event,
        record_handler=budget.wrap(record_handler),
        processor=processor,
        context=context,
    )
    return apply_backoff(event, response, budget=budget)
