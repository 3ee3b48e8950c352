"""The example consumers report exactly the messages that failed."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from constructs_lib.backoff_batch import BatchEventError
from example.handlers import orders, payments, rejected_orders
from tests.support.sqs_events import made_up


def sqs_event(*bodies: object) -> dict[str, list[dict[str, str]]]:
    return {
        "Records": [
            {"messageId": f"m{i}", "body": body if isinstance(body, str) else json.dumps(body)}
            for i, body in enumerate(bodies)
        ]
    }


def failed_ids(response: dict[str, list[dict[str, str]]]) -> list[str]:
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


def orders_event(*bodies: object) -> dict[str, list[dict[str, Any]]]:
    """The orders consumer's event, as Lambda builds it: the backoff needs every field."""
    return {
        "Records": [
            made_up(f"m{i}", body if isinstance(body, str) else json.dumps(body))
            for i, body in enumerate(bodies)
        ]
    }


# A batch with bad orders sets visibility timeouts in SQS: checked against the emulator in
# tests/e2e/test_retry_backoff.py (test_example_orders_handler_backs_off_the_bad_orders_only).


def test_orders_reports_nothing_for_a_good_batch() -> None:
    response = orders.handler(orders_event({"order_id": 1}, {"order_id": 2}), None)
    assert failed_ids(response) == []


def test_orders_refuses_an_event_that_is_not_from_sqs() -> None:
    # Records without eventSource, receiptHandle or attributes: no visibility could be set.
    with pytest.raises(BatchEventError, match="record 0 has eventSource None, not 'aws:sqs'"):
        orders.handler(sqs_event({"order_id": 1}), None)
    with pytest.raises(BatchEventError, match=r"record 0 \(messageId 'm0'\) has no receiptHandle"):
        orders.handler({"Records": [{**made_up("m0"), "receiptHandle": ""}]}, None)


def test_payments_fails_the_rest_of_the_batch_after_the_first_failure() -> None:
    event = sqs_event(
        {"payment_id": "a", "amount_cents": 100},
        {"payment_id": "b", "amount_cents": -5},
        {"payment_id": "c", "amount_cents": 200},
    )

    # c is good, but processing it before b would break the group's order.
    assert failed_ids(payments.handler(event, None)) == ["m1", "m2"]


def test_payments_reports_nothing_for_a_good_batch() -> None:
    event = sqs_event(
        {"payment_id": "a", "amount_cents": 1}, {"payment_id": "b", "amount_cents": 2}
    )
    assert failed_ids(payments.handler(event, None)) == []


def test_rejected_orders_logs_each_order_and_keeps_what_is_not_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    event = sqs_event({"order_id": 7, "quantity": 0}, "not json", {"sku": "x"})
    event["Records"][0]["attributes"] = {"ApproximateReceiveCount": "5", "SentTimestamp": "1"}

    with caplog.at_level(logging.INFO):
        response = rejected_orders.handler(event, None)

    assert failed_ids(response) == ["m1", "m2"]
    logged = [json.loads(r.message) for r in caplog.records if r.message.startswith("{")]
    assert logged == [{"rejected_order": 7, "message_id": "m0", "first_sent": "1", "receives": "5"}]
