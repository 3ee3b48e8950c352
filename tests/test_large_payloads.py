"""Large payloads at run time: pointers read, payloads fetched within their cap, failures kept to
their record, payloads deleted after success, and bodies offloaded above the threshold.

S3 and SQS are moto's server on loopback (``tests/support/s3server.py``, one per session); the
records are made up here (``tests/support/sqs_events.py``). The round trips through a real queue,
with AWS's extended client on the other side, are in ``test_large_payloads_emulator.py``.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from constructs_lib import large_payloads, limits
from constructs_lib.large_payloads import (
    PAYLOAD_BUCKET_ENV,
    PAYLOAD_DELETE_ENV,
    PAYLOAD_PREFIX_ENV,
    PAYLOAD_READ_MAX,
    PayloadError,
    Payloads,
    PayloadSettingsError,
    Pointer,
    pointer_of,
)
from constructs_lib.time_budget import LAST_CALL_SECONDS
from tests.support.s3server import S3Server, s3_server  # noqa: F401  (fixture)
from tests.support.sqs_events import made_up, queue_arn

# The extended client's wire format, written out here rather than taken from the module.
CURRENT_CLASS = "software.amazon.payloadoffloading.PayloadS3Pointer"
LEGACY_CLASS = "com.amazon.sqs.javamessaging.MessageS3Pointer"
PREFIX = "orders/"


def pointer_body(bucket: str, key: str, kind: str = CURRENT_CLASS) -> str:
    return json.dumps([kind, {"s3BucketName": bucket, "s3Key": key}])


def lambda_attribute(value: str, data_type: str = "Number") -> dict[str, Any]:
    """A message attribute as Lambda hands it to a function (camel case)."""
    return {
        "stringValue": value,
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": data_type,
    }


def pointer_record(
    message_id: str,
    body: str,
    *,
    attribute: str | None = "ExtendedPayloadSize",
    arn: str = queue_arn("orders"),
    group: str | None = None,
) -> dict[str, Any]:
    record = made_up(message_id, body, arn=arn, group=group)
    record["messageAttributes"] = {"tenant": lambda_attribute("acme", "String")}
    if attribute is not None:
        record["messageAttributes"][attribute] = lambda_attribute("1")
    return record


@pytest.fixture
def s3(s3_server: S3Server) -> Any:  # noqa: F811
    return s3_server.client()


@pytest.fixture
def sqs(s3_server: S3Server) -> Any:  # noqa: F811
    import boto3

    env = s3_server.env
    session = boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_REGION"],
    )
    return session.client("sqs", endpoint_url=s3_server.endpoint)


@pytest.fixture
def bucket(s3: Any) -> Iterator[str]:
    name = f"payloads-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    yield name
    for item in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=item["Key"])
    s3.delete_bucket(Bucket=name)


@pytest.fixture
def store(bucket: str, s3: Any) -> Payloads:
    return Payloads(bucket=bucket, prefix=PREFIX, s3_client=s3)


def keys(s3: Any, bucket: str) -> list[str]:
    return sorted(item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


# --- which records carry a pointer ------------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "kind"),
    [("ExtendedPayloadSize", CURRENT_CLASS), ("SQSLargePayloadSize", LEGACY_CLASS)],
    ids=["current", "legacy"],
)
def test_either_size_attribute_marks_a_pointer(attribute: str, kind: str) -> None:
    record = pointer_record("m1", pointer_body("b", "orders/k", kind), attribute=attribute)
    assert pointer_of(record) == Pointer("b", "orders/k")


def test_a_pointer_shaped_body_without_the_attribute_is_a_body(store: Payloads) -> None:
    body = pointer_body("b", "orders/k")
    record = pointer_record("m1", body, attribute=None)
    assert pointer_of(record) is None
    assert store.resolve(record)["body"] == body


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"s3BucketName": "b", "s3Key": "k"}),
        json.dumps([CURRENT_CLASS]),
        json.dumps([CURRENT_CLASS, {"s3BucketName": "b"}]),
        json.dumps([CURRENT_CLASS, {"s3BucketName": "", "s3Key": "k"}]),
        json.dumps(["some.other.Pointer", {"s3BucketName": "b", "s3Key": "k"}]),
    ],
    ids=["not-json", "object", "one-element", "no-key", "empty-bucket", "unknown-class"],
)
def test_fails_a_marked_record_whose_body_is_no_pointer(body: str) -> None:
    with pytest.raises(PayloadError, match=r"message m1: the body .* is no extended client "):
        pointer_of(pointer_record("m1", body))


# --- reading a payload ------------------------------------------------------------------------


def test_resolve_puts_the_payload_in_the_body_and_keeps_the_rest(
    store: Payloads, s3: Any, bucket: str
) -> None:
    payload = '{"order": "é' + "x" * 1000 + '"}'
    s3.put_object(Bucket=bucket, Key="orders/k1", Body=payload.encode())
    record = pointer_record("m1", pointer_body(bucket, "orders/k1"))

    resolved = store.resolve(record)

    assert resolved["body"] == payload
    # The size attribute goes, as from the extended client's receive; the sender's own stays.
    assert resolved["messageAttributes"] == {"tenant": lambda_attribute("acme", "String")}
    assert resolved["receiptHandle"] == record["receiptHandle"]
    assert resolved["messageId"] == "m1"
    assert record["body"] == pointer_body(bucket, "orders/k1")  # the event is left as it was


@pytest.mark.parametrize(("size", "fits"), [(999, True), (1000, True), (1001, False)])
def test_read_max_bounds_a_payload(s3: Any, bucket: str, size: int, fits: bool) -> None:
    store = Payloads(bucket=bucket, prefix=PREFIX, read_max=1000, s3_client=s3)
    s3.put_object(Bucket=bucket, Key="orders/k", Body=b"a" * size)
    record = pointer_record("m1", pointer_body(bucket, "orders/k"))
    if fits:
        assert store.resolve(record)["body"] == "a" * size
    else:
        with pytest.raises(
            PayloadError,
            match=r"over read_max=1000 bytes \(1001 or more\): "
            r"raise Payloads\(read_max=\.\.\.\)",
        ):
            store.resolve(record)


def test_the_default_read_cap_is_32_mib() -> None:
    assert Payloads().read_max == PAYLOAD_READ_MAX == 32 * 1024 * 1024


@pytest.mark.parametrize("read_max", [0, -1, True, 1.5, "1000"])
def test_fails_a_read_max_that_is_no_whole_number_from_1(read_max: Any) -> None:
    with pytest.raises(
        PayloadSettingsError,
        match=r"read_max=.* is not a whole number of bytes "
        r"from 1: pass one, or leave it out for 33554432",
    ):
        Payloads(read_max=read_max)


def test_fails_a_missing_payload_with_its_code(store: Payloads, bucket: str) -> None:
    record = pointer_record("m1", pointer_body(bucket, "orders/gone"))
    with pytest.raises(
        PayloadError,
        match=rf"message m1: payload s3://{bucket}/orders/gone not "
        "read: NoSuchKey",
    ):
        store.resolve(record)


def test_fails_a_payload_in_a_bucket_that_does_not_exist(s3: Any) -> None:
    store = Payloads(s3_client=s3)  # no bucket configured: pointers read where they point
    record = pointer_record("m1", pointer_body("no-such-bucket-here", "k"))
    with pytest.raises(PayloadError, match="not read: NoSuchBucket"):
        store.resolve(record)


@pytest.mark.parametrize(
    ("where", "key"),
    [("other-bucket", "orders/k"), (None, "invoices/k"), (None, "k")],
    ids=["other-bucket", "other-prefix", "no-prefix"],
)
def test_fails_a_pointer_outside_the_queue_s_payloads(
    store: Payloads, s3: Any, bucket: str, where: str | None, key: str
) -> None:
    # The object exists: the store refuses it for where it is, not for being missing.
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    record = pointer_record("m1", pointer_body(where or bucket, key))
    with pytest.raises(PayloadError, match=rf"outside this queue's payloads s3://{bucket}/orders/"):
        store.resolve(record)


def test_fails_a_payload_that_is_not_utf8(store: Payloads, s3: Any, bucket: str) -> None:
    s3.put_object(Bucket=bucket, Key="orders/k", Body=b"\xff\xfe")
    with pytest.raises(PayloadError, match="is not UTF-8 text"):
        store.resolve(pointer_record("m1", pointer_body(bucket, "orders/k")))


# --- a batch ----------------------------------------------------------------------------------


def test_an_empty_batch_resolves_to_nothing(store: Payloads) -> None:
    resolved = store.resolve_batch({"Records": []})
    assert (resolved.records, resolved.failures) == ([], {})


def test_a_missing_payload_fails_its_record_only(store: Payloads, s3: Any, bucket: str) -> None:
    s3.put_object(Bucket=bucket, Key="orders/k1", Body=b"first")
    event = {
        "Records": [
            pointer_record("m1", pointer_body(bucket, "orders/k1")),
            pointer_record("m2", pointer_body(bucket, "orders/gone")),
            made_up("m3", "plain"),
        ]
    }
    resolved = store.resolve_batch(event)
    assert [(r["messageId"], r["body"]) for r in resolved.records] == [
        ("m1", "first"),
        ("m3", "plain"),
    ]
    assert list(resolved.failures) == ["m2"]
    assert resolved.batch_item_failures() == [{"itemIdentifier": "m2"}]


def test_a_batch_whose_every_payload_is_missing_fails_every_record(
    store: Payloads, bucket: str
) -> None:
    event = {
        "Records": [pointer_record(f"m{i}", pointer_body(bucket, f"orders/{i}")) for i in range(3)]
    }
    resolved = store.resolve_batch(event)
    assert resolved.records == []
    assert resolved.batch_item_failures() == [{"itemIdentifier": f"m{i}"} for i in range(3)]


def test_fifo_the_first_failure_ends_the_batch(store: Payloads, s3: Any, bucket: str) -> None:
    s3.put_object(Bucket=bucket, Key="orders/k3", Body=b"third")
    arn = queue_arn("orders.fifo")
    event = {
        "Records": [
            made_up("m1", "plain", arn=arn, group="a"),
            pointer_record("m2", pointer_body(bucket, "orders/gone"), arn=arn, group="a"),
            pointer_record("m3", pointer_body(bucket, "orders/k3"), arn=arn, group="b"),
        ]
    }
    resolved = store.resolve_batch(event)
    assert [r["messageId"] for r in resolved.records] == ["m1"]
    assert list(resolved.failures) == ["m2", "m3"]
    assert "an earlier record of this FIFO batch failed" in str(resolved.failures["m3"])


# --- settings from the environment ------------------------------------------------------------


def test_from_environment_reads_the_construct_s_variables(s3: Any) -> None:
    environment = {
        PAYLOAD_BUCKET_ENV: "b",
        PAYLOAD_PREFIX_ENV: "orders/",
        PAYLOAD_DELETE_ENV: "true",
    }
    assert Payloads.from_environment(environment, s3_client=s3) == Payloads(
        bucket="b", prefix="orders/", delete=True
    )
    assert Payloads.from_environment({}) == Payloads(bucket=None, prefix="", delete=False)


@pytest.mark.parametrize("value", ["yes", "True", "1"])
def test_fails_a_delete_variable_that_is_neither_true_nor_false(value: str) -> None:
    with pytest.raises(
        PayloadSettingsError,
        match=rf"{PAYLOAD_DELETE_ENV}='{value}' is neither "
        "'true' nor 'false': set one of them, or remove it for 'false'",
    ):
        Payloads.from_environment({PAYLOAD_BUCKET_ENV: "b", PAYLOAD_DELETE_ENV: value})


def test_fails_delete_without_a_bucket() -> None:
    with pytest.raises(
        PayloadSettingsError, match=f"delete=True needs bucket= .*{PAYLOAD_BUCKET_ENV}"
    ):
        Payloads.from_environment({PAYLOAD_DELETE_ENV: "true"})


# --- deleting after success -------------------------------------------------------------------


def stored_batch(s3: Any, bucket: str, count: int) -> dict[str, Any]:
    for i in range(count):
        s3.put_object(Bucket=bucket, Key=f"orders/k{i}", Body=f"payload {i}".encode())
    return {
        "Records": [
            pointer_record(f"m{i}", pointer_body(bucket, f"orders/k{i}")) for i in range(count)
        ]
    }


def test_delete_processed_deletes_the_processed_payloads_only(s3: Any, bucket: str) -> None:
    store = Payloads(bucket=bucket, prefix=PREFIX, delete=True, s3_client=s3)
    event = stored_batch(s3, bucket, 3)
    response = {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert store.delete_processed(event, response) is response
    assert keys(s3, bucket) == ["orders/k1"]


def test_delete_processed_deletes_nothing_unless_told(
    store: Payloads, s3: Any, bucket: str
) -> None:
    event = stored_batch(s3, bucket, 2)
    store.delete_processed(event, {"batchItemFailures": []})
    assert keys(s3, bucket) == ["orders/k0", "orders/k1"]


@pytest.mark.parametrize(
    "response",
    [{"batchItemFailures": [{"itemIdentifier": "not-in-batch"}]}, {"batchItemFailures": "m0"}],
    ids=["unknown-identifier", "not-a-list"],
)
def test_delete_processed_deletes_nothing_when_lambda_would_fail_the_batch(
    s3: Any, bucket: str, response: dict[str, Any]
) -> None:
    store = Payloads(bucket=bucket, prefix=PREFIX, delete=True, s3_client=s3)
    event = stored_batch(s3, bucket, 2)
    store.delete_processed(event, response)
    assert keys(s3, bucket) == ["orders/k0", "orders/k1"]


def test_a_delete_that_fails_is_logged_not_raised(
    s3: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A bucket that does not exist: DeleteObject answers NoSuchBucket.
    store = Payloads(bucket="no-such-bucket-here", prefix=PREFIX, delete=True, s3_client=s3)
    event = {"Records": [pointer_record("m1", pointer_body("no-such-bucket-here", "orders/k"))]}
    with caplog.at_level(logging.WARNING, logger=large_payloads.__name__):
        assert store.delete_processed(event, {"batchItemFailures": []}) == {"batchItemFailures": []}
    assert "payload of message m1 not deleted: NoSuchBucket" in caplog.text


# --- sending ----------------------------------------------------------------------------------


@pytest.fixture
def queue(sqs: Any) -> str:
    url: str = sqs.create_queue(QueueName=f"payloads-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    return url


def received(sqs: Any, queue_url: str) -> dict[str, Any]:
    messages = sqs.receive_message(
        QueueUrl=queue_url, MessageAttributeNames=["All"], WaitTimeSeconds=1
    )["Messages"]
    assert len(messages) == 1
    message: dict[str, Any] = messages[0]
    return message


# The threshold counts the body's bytes and each attribute's name, type and value: "tenant"
# (6) + "String" (6) + "acme" (4) = 16 bytes of attributes.
ATTRIBUTES = {"tenant": {"DataType": "String", "StringValue": "acme"}}
ATTRIBUTE_BYTES = 16


@pytest.mark.parametrize(
    ("extra", "offloaded"), [(-1, False), (0, False), (1, True)], ids=["below", "at", "above"]
)
def test_a_body_goes_to_s3_only_above_the_threshold(
    store: Payloads, sqs: Any, queue: str, s3: Any, bucket: str, extra: int, offloaded: bool
) -> None:
    threshold = 2000
    body = "é" * ((threshold - ATTRIBUTE_BYTES + extra) // 2) + "x" * (
        (threshold - ATTRIBUTE_BYTES + extra) % 2
    )
    assert len(body.encode()) + ATTRIBUTE_BYTES == threshold + extra
    store.send(sqs, queue, body, message_attributes=ATTRIBUTES, threshold=threshold)
    message = received(sqs, queue)
    stored = keys(s3, bucket)
    if offloaded:
        [key] = stored
        assert key.startswith(PREFIX) and len(key) == len(PREFIX) + 36  # the prefix and a UUID
        assert json.loads(message["Body"]) == [
            CURRENT_CLASS,
            {"s3BucketName": bucket, "s3Key": key},
        ]
        size = message["MessageAttributes"]["ExtendedPayloadSize"]
        assert size == {
            "DataType": "Number",
            "StringValue": str(threshold + extra - ATTRIBUTE_BYTES),
        }
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode() == body
    else:
        assert stored == []
        assert message["Body"] == body
        assert set(message["MessageAttributes"]) == {"tenant"}


def test_the_default_threshold_is_the_extended_client_s() -> None:
    import inspect

    default = inspect.signature(Payloads.send).parameters["threshold"].default
    assert default == limits.EXTENDED_CLIENT_THRESHOLD == 256 * 1024


def test_always_sends_even_a_small_body_through_s3(
    store: Payloads, sqs: Any, queue: str, s3: Any, bucket: str
) -> None:
    store.send(sqs, queue, "tiny", always=True, legacy=True)
    message = received(sqs, queue)
    [key] = keys(s3, bucket)
    assert json.loads(message["Body"]) == [LEGACY_CLASS, {"s3BucketName": bucket, "s3Key": key}]
    assert message["MessageAttributes"] == {
        "SQSLargePayloadSize": {"DataType": "Number", "StringValue": "4"}
    }


@pytest.mark.parametrize(
    ("threshold", "good"),
    [
        (-1, False),
        (0, True),
        (limits.MESSAGE_SIZE_MAX, True),
        (limits.MESSAGE_SIZE_MAX + 1, False),
        (True, False),
    ],
)
def test_the_threshold_runs_from_0_to_sqs_s_largest_message(
    store: Payloads, sqs: Any, queue: str, threshold: Any, good: bool
) -> None:
    if good:
        store.send(sqs, queue, "x", threshold=threshold)
        return
    with pytest.raises(
        PayloadSettingsError,
        match=rf"threshold={threshold!r} is not a whole "
        r"number of bytes from 0 to 1048576 \(SQS's largest message\): pass one, "
        "or leave it out for 262144",
    ):
        store.send(sqs, queue, "x", threshold=threshold)


def test_fails_to_offload_without_a_bucket(sqs: Any, queue: str) -> None:
    with pytest.raises(
        PayloadSettingsError,
        match=f"a body of 4 bytes goes to S3, but the store "
        f"has no bucket: set {PAYLOAD_BUCKET_ENV}",
    ):
        Payloads().send(sqs, queue, "tiny", always=True)


@pytest.mark.parametrize("name", ["ExtendedPayloadSize", "SQSLargePayloadSize"])
def test_fails_a_sender_attribute_with_the_reserved_name(
    store: Payloads, sqs: Any, queue: str, name: str
) -> None:
    attributes = {name: {"DataType": "Number", "StringValue": "1"}}
    with pytest.raises(PayloadSettingsError, match=f"message attribute {name} is the extended "):
        store.send(sqs, queue, "tiny", always=True, message_attributes=attributes)


@pytest.mark.parametrize(("count", "good"), [(9, True), (10, False)])
def test_a_message_in_s3_carries_at_most_9_attributes_of_its_own(
    store: Payloads, sqs: Any, queue: str, count: int, good: bool
) -> None:
    attributes = {f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(count)}
    if good:
        store.send(sqs, queue, "tiny", always=True, message_attributes=attributes)
        assert len(received(sqs, queue)["MessageAttributes"]) == 10
        return
    with pytest.raises(
        PayloadSettingsError,
        match="10 message attributes on a message stored in "
        "S3: at most 9, the size attribute takes SQS's tenth",
    ):
        store.send(sqs, queue, "tiny", always=True, message_attributes=attributes)


def test_wrap_refuses_what_is_no_sqs_record() -> None:
    wrapped = Payloads().wrap(lambda record: None)
    with pytest.raises(
        TypeError,
        match=r"Payloads\.wrap takes an SQS record as a dict or Powertools' SQSRecord, not "
        "int: build the batch processor without model=",
    ):
        wrapped(3)


def test_the_layer_s_files_alone_import_the_module_without_cdk_or_boto3(tmp_path: Path) -> None:
    """The consumers' layer holds ``PAYLOAD_RUNTIME_FILES``; a Python without site-packages
    (``-S``: no aws-cdk-lib, no boto3) imports the module from those files alone."""
    from constructs_lib.consumer.backoff_layer import PAYLOAD_RUNTIME_FILES  # imports CDK

    package = Path(large_payloads.__file__).parent
    layer = tmp_path / "python" / "constructs_lib"
    layer.mkdir(parents=True)
    for name in PAYLOAD_RUNTIME_FILES:
        shutil.copy(package / name, layer / name)
    script = (
        f"import sys; sys.path.insert(0, {str(layer.parent)!r})\n"
        "import constructs_lib.large_payloads\n"
        "print('\\n'.join(sys.modules))"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-c", script], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    loaded = set(completed.stdout.split())
    assert "constructs_lib.large_payloads" in loaded
    assert not {name.split(".")[0] for name in loaded} & {"aws_cdk", "jsii", "constructs", "boto3"}


class FakeContext:
    """A Lambda context whose remaining time stands still (the boundary is the point)."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@pytest.mark.parametrize(
    ("remaining_ms", "deleted"),
    [(199, False), (200, True), (201, True)],
    ids=["below", "at", "above"],
)
def test_no_delete_starts_with_under_the_last_call_time_left(
    s3: Any, bucket: str, remaining_ms: int, deleted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    assert LAST_CALL_SECONDS == 0.2  # the boundary below, in milliseconds
    store = Payloads(bucket=bucket, prefix=PREFIX, delete=True, s3_client=s3)
    event = stored_batch(s3, bucket, 2)
    with caplog.at_level(logging.WARNING, logger=large_payloads.__name__):
        store.delete_processed(event, {"batchItemFailures": []}, context=FakeContext(remaining_ms))
    assert keys(s3, bucket) == ([] if deleted else ["orders/k0", "orders/k1"])
    assert ("not deleted: TimeoutError" in caplog.text) is not deleted
