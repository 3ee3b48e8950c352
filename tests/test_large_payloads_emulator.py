"""Large payloads through a real queue, both ways with AWS's own extended client
(``amazon-sqs-extended-client``): what it sends our consumer reads, what our producer sends it
reads; a payload missing from S3 fails its record, which is retried and then dead-lettered.

SQS and S3 are moto's server on loopback (``tests/support/s3server.py``, one per session). What
the emulator cannot do is invoke a function: the test plays Lambda's poller, as the backoff tests
do. It receives with ReceiveMessage (every attribute), builds the event Lambda builds
(``tests/support/sqs_events.event_of``), runs the handler here, and deletes the messages the
partial batch response does not report. Each consumer test runs twice: through
``large_payloads.process_batch``, and through Powertools' batch processor with the documented
recipe (``Payloads.wrap``, ``apply_backoff``, ``Payloads.delete_processed``).
"""

from __future__ import annotations

import importlib.util
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import boto3.session
import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)

from constructs_lib import large_payloads
from constructs_lib.backoff import Backoff
from constructs_lib.backoff_batch import apply_backoff
from constructs_lib.large_payloads import Payloads
from tests.conftest import REPO_ROOT
from tests.support.s3server import S3Server, s3_server  # noqa: F401  (fixture)
from tests.support.sqs_events import event_of

# Importing the extended client replaces boto3's Session class in the whole process (its
# __init__ sets boto3.Session and boto3.session.Session to its own). The test keeps its class
# and puts boto3's back, so no other test in this process gets an extended client unasked.
_BOTO3_SESSION, _BOTO3_DEFAULT = boto3.session.Session, boto3.DEFAULT_SESSION
import sqs_extended_client  # noqa: E402, F401
from sqs_extended_client.client import SQSExtendedClientSession  # noqa: E402

boto3.session.Session = boto3.Session = _BOTO3_SESSION  # type: ignore[misc]
boto3.DEFAULT_SESSION = _BOTO3_DEFAULT

# The Python extended client's threshold (sqs_extended_client/client.py), written out here.
CLIENT_THRESHOLD = 262_144
LARGE = CLIENT_THRESHOLD + 1
MAX_RECEIVE_COUNT = 2
# A failed receive waits 1 s, the last none (its next receive dead-letters the message).
SCHEDULE = Backoff(
    base_seconds=1, factor=1, cap_seconds=1, jitter=0, max_receive_count=MAX_RECEIVE_COUNT
)


@pytest.fixture
def aws(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:  # noqa: F811
    """The emulator as a function's environment: the extended client makes its S3 client from
    it, and so does ``Payloads`` when given none."""
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def sqs(aws: S3Server) -> Any:
    return boto3.session.Session().client("sqs", endpoint_url=aws.endpoint)


@pytest.fixture
def s3(aws: S3Server) -> Any:
    return aws.client()


@pytest.fixture
def bucket(s3: Any) -> Iterator[str]:
    name = f"payloads-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    yield name
    for item in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=item["Key"])
    s3.delete_bucket(Bucket=name)


def keys(s3: Any, bucket: str) -> list[str]:
    return sorted(item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def extended_client(bucket: str, *, legacy: bool = False, delete: bool = False) -> Any:
    """The extended client's SQS client, storing in ``bucket`` (its S3 client follows
    AWS_ENDPOINT_URL)."""
    client = SQSExtendedClientSession().client("sqs")
    client.large_payload_support = bucket
    client.use_legacy_attribute = legacy
    client.delete_payload_from_s3 = delete
    return client


@pytest.fixture
def queue(sqs: Any) -> Callable[..., tuple[str, str]]:
    """``queue(fifo=False)``: a new source queue with a DLQ after ``MAX_RECEIVE_COUNT``
    receives; its URL and ARN (the DLQ's URL is ``dead_letters[url]``)."""

    def make(fifo: bool = False) -> tuple[str, str]:
        name = f"orders-{uuid.uuid4().hex[:10]}"
        suffix, extra = (".fifo", {"FifoQueue": "true"}) if fifo else ("", {})
        dlq = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=extra)["QueueUrl"]
        dlq_arn = arn_of(sqs, dlq)
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVE_COUNT})
        attributes = {**extra, "RedrivePolicy": redrive, "VisibilityTimeout": "30"}
        if fifo:
            attributes["ContentBasedDeduplication"] = "true"
        url = sqs.create_queue(QueueName=f"{name}{suffix}", Attributes=attributes)["QueueUrl"]
        dead_letters[url] = dlq
        return url, arn_of(sqs, url)

    return make


dead_letters: dict[str, str] = {}


def arn_of(sqs: Any, url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def receive(sqs: Any, url: str, wait: int = 1) -> list[dict[str, Any]]:
    """What Lambda's poller receives: up to 10 messages with every attribute."""
    answer = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
        WaitTimeSeconds=wait,
    )
    messages: list[dict[str, Any]] = answer.get("Messages", [])
    return messages


def prefixed(payloads: Payloads) -> dict[str, dict[str, str]]:
    """The extended client has no key prefix; its ``S3Key`` message attribute names the key, so
    a sender puts its payload under the queue's prefix with it."""
    return {"S3Key": {"DataType": "String", "StringValue": f"{payloads.prefix}{uuid.uuid4()}"}}


# --- the consumer, two ways -------------------------------------------------------------------

Handler = Callable[[dict[str, Any]], None]


def with_process_batch(
    event: dict[str, Any], handle: Handler, payloads: Payloads, sqs: Any
) -> dict[str, Any]:
    return dict(
        large_payloads.process_batch(
            event, handle, payloads=payloads, backoff=SCHEDULE, sqs_client=sqs
        )
    )


def with_powertools(
    event: dict[str, Any], handle: Handler, payloads: Payloads, sqs: Any
) -> dict[str, Any]:
    # The recipe of docs/large-payloads.md: a failed payload is a failed record. On a FIFO
    # queue, Powertools' own FIFO processor ends the batch at the first failure.
    fifo = any(r["eventSourceARN"].endswith(".fifo") for r in event["Records"])
    processor = (
        SqsFifoPartialProcessor()
        if fifo
        else BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    )
    # A batch whose every record failed must return its response too (the FIFO processor
    # takes no such argument).
    processor.raise_on_entire_batch_failure = False
    response = process_partial_response(
        event=event,
        record_handler=payloads.wrap(lambda record: handle(dict(record.raw_event))),
        processor=processor,
    )
    response = apply_backoff(event, response, backoff=SCHEDULE, sqs_client=sqs)
    return dict(payloads.delete_processed(event, response))


CONSUMERS = pytest.mark.parametrize(
    "consume", [with_process_batch, with_powertools], ids=["process_batch", "powertools"]
)


def play_lambda(
    sqs: Any,
    url: str,
    arn: str,
    consume: Callable[..., dict[str, Any]],
    payloads: Payloads,
    handle: Handler,
    wait: int = 1,
) -> tuple[list[dict[str, Any]], set[str]]:
    """One poll and invocation: the messages received and the ids reported failed; the others
    are deleted, as Lambda deletes them."""
    messages = receive(sqs, url, wait)
    if not messages:
        return [], set()
    response = consume(event_of(messages, arn), handle, payloads, sqs)
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    for message in messages:
        if message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return messages, failed


@CONSUMERS
@pytest.mark.parametrize("legacy", [False, True], ids=["current", "legacy"])
def test_what_the_extended_client_sent_is_read_by_our_consumer(
    sqs: Any, s3: Any, bucket: str, queue: Any, consume: Any, legacy: bool
) -> None:
    url, arn = queue()
    payloads = Payloads(bucket=bucket, prefix="orders/", delete=True)
    payload = json.dumps({"order": "o-1", "lines": "x" * LARGE})
    answer = extended_client(bucket, legacy=legacy).send_message(
        QueueUrl=url, MessageBody=payload, MessageAttributes=prefixed(payloads)
    )
    [key] = keys(s3, bucket)
    seen: list[dict[str, Any]] = []

    messages, failed = play_lambda(sqs, url, arn, consume, payloads, seen.append)

    [message] = messages
    assert message["MessageId"] == answer["MessageId"]
    # The queue holds the pointer, with the attribute of the client's choice.
    attribute = "SQSLargePayloadSize" if legacy else "ExtendedPayloadSize"
    assert message["MessageAttributes"][attribute]["StringValue"] == str(len(payload))
    assert json.loads(message["Body"])[1] == {"s3BucketName": bucket, "s3Key": key}
    # The handler saw the payload; nothing failed; the payload was deleted after success.
    assert [record["body"] for record in seen] == [payload]
    assert attribute not in seen[0]["messageAttributes"]
    assert failed == set()
    assert keys(s3, bucket) == []
    assert receive(sqs, url, wait=0) == []


@pytest.mark.parametrize("legacy", [False, True], ids=["current", "legacy"])
def test_what_our_producer_sent_is_read_by_the_extended_client(
    sqs: Any, s3: Any, bucket: str, queue: Any, legacy: bool
) -> None:
    url, _ = queue()
    payloads = Payloads(bucket=bucket, prefix="orders/")
    large = "é" * (LARGE // 2 + 1)
    payloads.send(sqs, url, large, legacy=legacy)
    payloads.send(sqs, url, "small")
    [key] = keys(s3, bucket)
    assert key.startswith("orders/")
    client = extended_client(bucket, legacy=legacy, delete=True)

    messages = client.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], WaitTimeSeconds=1
    )["Messages"]

    assert sorted(message["Body"] for message in messages) == sorted([large, "small"])
    # Its delete takes the S3 object with the message: the pointer it embedded in the receipt
    # handle came from our body.
    for message in messages:
        client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert keys(s3, bucket) == []
    assert receive(sqs, url, wait=0) == []


@pytest.mark.parametrize(("size", "offloaded"), [(CLIENT_THRESHOLD, 0), (LARGE, 1)])
def test_our_producer_and_the_extended_client_offload_the_same_bodies(
    sqs: Any, s3: Any, bucket: str, queue: Any, size: int, offloaded: int
) -> None:
    url, _ = queue()
    Payloads(bucket=bucket).send(sqs, url, "x" * size)
    ours = len(keys(s3, bucket))
    extended_client(bucket).send_message(QueueUrl=url, MessageBody="x" * size)
    assert (ours, len(keys(s3, bucket)) - ours) == (offloaded, offloaded)


@CONSUMERS
def test_a_missing_payload_fails_its_record_is_retried_then_dead_lettered(
    sqs: Any, s3: Any, bucket: str, queue: Any, consume: Any
) -> None:
    url, arn = queue()
    payloads = Payloads(bucket=bucket, prefix="orders/", delete=True)
    sent = {
        name: send_stored(payloads, sqs, s3, url, f"payload of {name}")
        for name in ("kept", "lost", "also kept")
    }
    # The lost one's payload is gone (expired early, deleted by hand).
    s3.delete_object(Bucket=bucket, Key=sent["lost"][1])
    sent = {name: message_id for name, (message_id, _) in sent.items()}
    seen: list[str] = []
    handle: Handler = lambda record: seen.append(record["body"])  # noqa: E731

    # 1. The first invocation: the two others are processed, the lost one alone fails.
    messages, failed = play_lambda(sqs, url, arn, consume, payloads, handle)
    assert len(messages) == 3
    assert failed == {sent["lost"]}
    assert sorted(seen) == ["payload of also kept", "payload of kept"]
    assert keys(s3, bucket) == []  # both processed payloads deleted, the lost one never was
    # 2. It waits its backoff (1 s), comes back, fails again: its last receive, no wait.
    assert receive(sqs, url, wait=0) == []
    time.sleep(1)
    messages, failed = play_lambda(sqs, url, arn, consume, payloads, handle, wait=3)
    assert [(m["MessageId"], m["Attributes"]["ApproximateReceiveCount"]) for m in messages] == [
        (sent["lost"], str(MAX_RECEIVE_COUNT))
    ]
    assert failed == {sent["lost"]}
    # 3. The next receive moves it to the dead-letter queue; the handler never saw it.
    assert receive(sqs, url, wait=1) == []
    [dead] = receive(sqs, dead_letters[url])
    assert dead["MessageId"] == sent["lost"]
    assert len(seen) == 2


def send_stored(
    payloads: Payloads, sqs: Any, s3: Any, url: str, body: str, **arguments: Any
) -> tuple[str, str]:
    """The message id and the S3 key of ``body`` sent through S3 (the one new key)."""
    before = set(keys(s3, payloads.bucket or ""))
    message_id = payloads.send(sqs, url, body, always=True, **arguments)["MessageId"]
    [key] = set(keys(s3, payloads.bucket or "")) - before
    return str(message_id), key


@CONSUMERS
def test_a_batch_whose_every_payload_is_missing_fails_every_record(
    sqs: Any, bucket: str, queue: Any, consume: Any
) -> None:
    url, arn = queue()
    payloads = Payloads(bucket=bucket, prefix="orders/")
    for n in range(3):
        # Pointers to objects that were never written.
        body = json.dumps(
            [large_payloads.POINTER_CLASS, {"s3BucketName": bucket, "s3Key": f"orders/{n}"}]
        )
        attribute = {"ExtendedPayloadSize": {"DataType": "Number", "StringValue": "10"}}
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attribute)
    seen: list[dict[str, Any]] = []
    messages, failed = play_lambda(sqs, url, arn, consume, payloads, seen.append)
    assert len(messages) == 3
    assert failed == {m["MessageId"] for m in messages}
    assert seen == []


def test_an_empty_batch_reports_nothing(bucket: str, sqs: Any) -> None:
    # process_batch only: Powertools' process_partial_response refuses an event without records
    # itself (UnexpectedBatchTypeError), and Lambda never invokes with none.
    seen: list[dict[str, Any]] = []
    payloads = Payloads(bucket=bucket, delete=True)
    response = with_process_batch({"Records": []}, seen.append, payloads, sqs)
    assert response == {"batchItemFailures": []}
    assert seen == []


@CONSUMERS
def test_fifo_the_first_failed_payload_ends_the_batch(
    sqs: Any, s3: Any, bucket: str, queue: Any, consume: Any
) -> None:
    url, arn = queue(fifo=True)
    payloads = Payloads(bucket=bucket, prefix="orders/")
    sent = [
        send_stored(payloads, sqs, s3, url, body, MessageGroupId=group)
        for body, group in (("first", "a"), ("second", "a"), ("third", "b"))
    ]
    s3.delete_object(Bucket=bucket, Key=sent[1][1])
    ids = [message_id for message_id, _ in sent]
    seen: list[str] = []
    messages, failed = play_lambda(
        sqs, url, arn, consume, payloads, lambda record: seen.append(record["body"])
    )
    assert [m["MessageId"] for m in messages] == ids
    # The second failed; the third, of another group, was not started and is reported too.
    assert seen == ["first"]
    assert failed == {ids[1], ids[2]}


# --- the docs' examples -----------------------------------------------------------------------

DOCS_HANDLERS = REPO_ROOT / "docs" / "examples" / "handlers"


def load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"docs_example_{name}", DOCS_HANDLERS / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.fixture
def function_environment(bucket: str, monkeypatch: pytest.MonkeyPatch) -> Payloads:
    """What the construct writes into a consumer's environment: the bucket, the prefix, delete,
    and a backoff schedule."""
    for name, value in {
        large_payloads.PAYLOAD_BUCKET_ENV: bucket,
        large_payloads.PAYLOAD_PREFIX_ENV: "orders/",
        large_payloads.PAYLOAD_DELETE_ENV: "true",
        **SCHEDULE.to_environment(),
    }.items():
        monkeypatch.setenv(name, value)
    return Payloads.from_environment()


@pytest.mark.parametrize("name", ["large_payloads_handler", "large_payloads_powertools"])
def test_docs_consumer_examples_read_payloads_and_fail_only_what_they_cannot(
    name: str, sqs: Any, s3: Any, bucket: str, queue: Any, function_environment: Payloads
) -> None:
    url, arn = queue()
    payloads = function_environment
    good = {"order_id": "o-1", "lines": ["x" * LARGE]}
    good_id = extended_client(bucket).send_message(
        QueueUrl=url, MessageBody=json.dumps(good), MessageAttributes=prefixed(payloads)
    )["MessageId"]
    bad_id, bad_key = send_stored(
        payloads, sqs, s3, url, json.dumps({"order_id": "o-2", "lines": []})
    )
    lost_id, lost_key = send_stored(
        payloads, sqs, s3, url, json.dumps({"order_id": "o-3", "lines": [1]})
    )
    s3.delete_object(Bucket=bucket, Key=lost_key)
    messages: list[dict[str, Any]] = []
    while len(messages) < 3:
        batch = receive(sqs, url)
        assert batch, "the orders did not arrive"
        messages += batch

    response = load_example(name).handler(event_of(messages, arn), None)

    assert {item["itemIdentifier"] for item in response["batchItemFailures"]} == {bad_id, lost_id}
    # The good order's payload was deleted; the failed one's stays for its next receive.
    assert keys(s3, bucket) == [bad_key]
    assert good_id not in {item["itemIdentifier"] for item in response["batchItemFailures"]}


def test_docs_producer_example_sends_what_the_extended_client_reads(
    sqs: Any,
    s3: Any,
    bucket: str,
    queue: Any,
    function_environment: Payloads,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, _ = queue()
    monkeypatch.setenv("ORDERS_QUEUE_URL", url)
    order = {"order_id": "o-1", "lines": ["x" * LARGE]}

    answer = load_example("large_payloads_producer").handler({"order": order}, None)

    [key] = keys(s3, bucket)  # the order went through S3, under the queue's prefix
    assert key.startswith("orders/")

    client = extended_client(bucket)
    [message] = client.receive_message(
        QueueUrl=url, MessageAttributeNames=["All"], WaitTimeSeconds=1
    )["Messages"]
    assert message["MessageId"] == answer["messageId"]
    assert json.loads(message["Body"]) == order
