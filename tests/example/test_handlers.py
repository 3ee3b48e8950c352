"""The example consumers report exactly the messages that failed."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from constructs_lib import large_payloads
from constructs_lib.backoff_batch import BatchEventError
from example.handlers import orders, payments, rejected_orders
from tests.support.s3server import S3Server, s3_server  # noqa: F401  (fixture)
from tests.support.sqs_events import made_up, queue_arn


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


def stored_payment(s3: Any, bucket: str, key: str, payment: dict[str, object] | None) -> str:
    """The body the extended client sends for a payment kept at ``key`` (None: not stored)."""
    if payment is not None:
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(payment).encode())
    return json.dumps([large_payloads.POINTER_CLASS, {"s3BucketName": bucket, "s3Key": key}])


def test_payments_reads_payloads_from_s3_and_deletes_only_the_settled_ones(
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the environment the construct writes on the payments consumer, on the emulator's S3
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    s3 = s3_server.client()
    bucket = "payments-payloads"
    s3.create_bucket(Bucket=bucket)
    monkeypatch.setenv(large_payloads.PAYLOAD_BUCKET_ENV, bucket)
    monkeypatch.setenv(large_payloads.PAYLOAD_PREFIX_ENV, "payments.fifo/")
    monkeypatch.setenv(large_payloads.PAYLOAD_DELETE_ENV, "true")
    pointer = {large_payloads.SIZE_ATTRIBUTE: {"stringValue": "2000000", "dataType": "Number"}}
    good = stored_payment(s3, bucket, "payments.fifo/a", {"payment_id": "a", "amount_cents": 1})
    missing = stored_payment(s3, bucket, "payments.fifo/b", None)
    later = stored_payment(s3, bucket, "payments.fifo/c", {"payment_id": "c", "amount_cents": 2})
    records = [
        made_up(f"m{i}", body, arn=queue_arn("payments.fifo"), group="payer-1")
        for i, body in enumerate((good, missing, later))
    ]
    event = {"Records": [{**record, "messageAttributes": pointer} for record in records]}

    # WHEN the batch is handled
    response = payments.handler(event, None)

    # THEN the payment whose payload is missing fails with the rest of its group's batch, and
    # only the settled payment's payload is gone
    assert failed_ids(response) == ["m1", "m2"]
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert left == ["payments.fifo/c"]


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
