"""The same consumer with Powertools' batch processor: Payloads.wrap resolves each record before
the record handler sees it, so a payload that cannot be read is a failed record."""

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
from constructs_lib.large_payloads import Payloads

# A batch whose every record failed must return its response too, or no record waits.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    order = record.json_body
    if not order["lines"]:
        raise ValueError(f"order {order['order_id']}: no lines")


def handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    payloads = Payloads.from_environment()
    response = process_partial_response(
        event=event,
        record_handler=payloads.wrap(record_handler),
        processor=processor,
        context=context,
    )
    response = apply_backoff(event, response)
    # Last, just before returning: only the payloads of records that will not come back.
    return payloads.delete_processed(event, response, context=context)
