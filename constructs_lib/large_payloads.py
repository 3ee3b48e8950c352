"""Large messages through S3, at run time: bodies the extended client stored in S3, resolved.

The construct (``ResilientQueue(large_payloads=...)``) tells each function where payloads live
through the environment variables below. The wire format is AWS's SQS extended client's: the
payload is one S3 object, the body the JSON pointer ``[POINTER_CLASS, {"s3BucketName": ...,
"s3Key": ...}]``, and the attribute ``ExtendedPayloadSize`` (older clients:
``SQSLargePayloadSize``) its size. As in the clients, the attribute is the signal: a body that
only looks like a pointer, on a message without it, is a body. A consumer reads with
``Payloads.wrap`` (for ``process_batch`` or Powertools) or ``resolve_batch``: a payload that
cannot be read fails its record, never the batch. A producer sends with ``Payloads.send``.
Like ``backoff_batch`` this imports no CDK; boto3 is imported when first needed.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from constructs_lib import backoff_batch, limits
from constructs_lib.backoff_batch import Record, ResponseT
from constructs_lib.time_budget import HandlerT, TimeBudget

logger = logging.getLogger(__name__)

# Set by the construct on each consumer and producer function it wires.
PAYLOAD_BUCKET_ENV: Final = "CONSTRUCTS_LIB_PAYLOAD_BUCKET"
# The key prefix under which this queue's payloads are written: the queue's name and a slash.
PAYLOAD_PREFIX_ENV: Final = "CONSTRUCTS_LIB_PAYLOAD_PREFIX"
# "true" where the consumer deletes a payload once its message is processed, else "false".
PAYLOAD_DELETE_ENV: Final = "CONSTRUCTS_LIB_PAYLOAD_DELETE"

# The extended client's names (amazon-sqs-extended-client 1.0.1, sqs_extended_client/client.py;
# amazon-sqs-java-extended-client-lib, SQSExtendedClientConstants and AmazonSQSExtendedClientUtil).
SIZE_ATTRIBUTE: Final = "ExtendedPayloadSize"
LEGACY_SIZE_ATTRIBUTE: Final = "SQSLargePayloadSize"
POINTER_CLASS: Final = "software.amazon.payloadoffloading.PayloadS3Pointer"
LEGACY_POINTER_CLASS: Final = "com.amazon.sqs.javamessaging.MessageS3Pointer"

# The most bytes read for one payload. The extended client stores up to 2 GB, but a function
# holds a payload twice while decoding it (bytes, then text) and may have only 128 MB
# (limits.FUNCTION_MEMORY_MIN_MB): 32 MiB read, 64 MiB held, leave the handler half.
PAYLOAD_READ_MAX: Final = 32 * 1_048_576


class PayloadError(Exception):
    """The payload of one message could not be read: its record fails, the others go on."""

    def __init__(self, message_id: str, reason: str) -> None:
        super().__init__(f"message {message_id}: {reason}")
        self.message_id = message_id


class PayloadSettingsError(ValueError):
    """A setting (an argument or an environment variable) out of its range."""


@dataclass(frozen=True)
class Pointer:
    """Where a payload is: the bucket and the key the message body names."""

    bucket: str
    key: str

    def body(self, *, legacy: bool = False) -> str:
        """The message body, as the extended client writes it (``json.dumps`` of the pair)."""
        kind = LEGACY_POINTER_CLASS if legacy else POINTER_CLASS
        return json.dumps([kind, {"s3BucketName": self.bucket, "s3Key": self.key}])


def pointer_of(record: Mapping[str, Any]) -> Pointer | None:
    """The pointer of a Lambda SQS record whose payload is in S3; ``None`` for a record without
    the size attribute (its body is the message). A body that is no pointer, on a record with
    the attribute, is a ``PayloadError``."""
    attributes = record.get("messageAttributes") or {}
    if SIZE_ATTRIBUTE not in attributes and LEGACY_SIZE_ATTRIBUTE not in attributes:
        return None
    try:
        kind, where = json.loads(record.get("body") or "")
        bucket, key = where["s3BucketName"], where["s3Key"]
        valid = kind in (POINTER_CLASS, LEGACY_POINTER_CLASS) and all(
            isinstance(name, str) and name for name in (bucket, key)
        )
    except (ValueError, TypeError, KeyError):
        valid = False
    if not valid:
        raise PayloadError(
            str(record.get("messageId", "?")),
            f"the body {str(record.get('body'))[:200]!r} is no extended client pointer "
            f'[{POINTER_CLASS!r}, {{"s3BucketName": ..., "s3Key": ...}}]: fix the sender',
        )
    return Pointer(bucket, key)


@dataclass(frozen=True)
class ResolvedBatch:
    """The records ready for the handler, and by message id why each other record failed."""

    records: list[Record]
    failures: dict[str, PayloadError]

    def batch_item_failures(self) -> list[dict[str, str]]:
        """The failures as ``batchItemFailures`` entries of a partial batch response."""
        return [{"itemIdentifier": message_id} for message_id in self.failures]


@dataclass(frozen=True)
class Payloads:
    """Where a queue's payloads live, and how they are read, written and deleted.

    :param bucket: the payload bucket; default none: pointers are read wherever they point, and
        nothing can be sent or deleted.
    :param prefix: the key prefix of this queue's payloads (``<queue name>/``); default none.
        With a bucket, a pointer outside the bucket and the prefix is a failed record: a
        function reads and deletes only its queue's payloads.
    :param delete: whether ``delete_processed`` deletes the payloads of processed messages;
        default false.
    :param read_max: the most bytes read for one payload; default ``PAYLOAD_READ_MAX`` (32 MiB).
    :param s3_client: a boto3 S3 client; default one made when first needed.
    """

    bucket: str | None = None
    prefix: str = ""
    delete: bool = False
    read_max: int = PAYLOAD_READ_MAX
    s3_client: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.read_max) is not int or self.read_max < 1:
            raise PayloadSettingsError(
                f"read_max={self.read_max!r} is not a whole number of bytes from 1: pass one, "
                f"or leave it out for {PAYLOAD_READ_MAX}"
            )
        if self.delete and not self.bucket:
            raise PayloadSettingsError(f"delete=True needs bucket= (or {PAYLOAD_BUCKET_ENV})")

    @classmethod
    def from_environment(
        cls, environment: Mapping[str, str] | None = None, **kwargs: Any
    ) -> Payloads:
        """The store the construct configured (``os.environ`` by default); absent variables
        take the defaults. ``kwargs`` are the other fields (``read_max``, ``s3_client``)."""
        env = os.environ if environment is None else environment
        delete = env.get(PAYLOAD_DELETE_ENV, "").strip()
        if delete not in ("", "true", "false"):
            raise PayloadSettingsError(
                f"environment variable {PAYLOAD_DELETE_ENV}={delete!r} is neither 'true' nor "
                "'false': set one of them, or remove it for 'false'"
            )
        return cls(
            bucket=env.get(PAYLOAD_BUCKET_ENV) or None,
            prefix=env.get(PAYLOAD_PREFIX_ENV, ""),
            delete=delete == "true",
            **kwargs,
        )

    def resolve(self, record: Mapping[str, Any]) -> Record:
        """A copy of ``record`` with its payload as body and without the size attribute (as the
        extended client's receive gives it); a record without a pointer as it is. A payload that
        cannot be read is a ``PayloadError``. The receipt handle stays the queue's own."""
        pointer = pointer_of(record)
        if pointer is None:
            return dict(record)
        message_id = str(record.get("messageId", "?"))
        self._check_place(message_id, pointer)
        attributes = {
            name: value
            for name, value in (record.get("messageAttributes") or {}).items()
            if name not in (SIZE_ATTRIBUTE, LEGACY_SIZE_ATTRIBUTE)
        }
        return {**record, "body": self._read(message_id, pointer), "messageAttributes": attributes}

    def resolve_batch(self, event: Mapping[str, Any]) -> ResolvedBatch:
        """Every record of a Lambda SQS event resolved, the payloads that cannot be read each
        reported as its record's failure. On a FIFO queue the first failure ends the batch: the
        records after it are not read and fail too, as Lambda requires of a partial batch
        response. All payloads are held at once: for large batches prefer ``wrap``."""
        records = backoff_batch.sqs_records(event)
        fifo = any(record["eventSourceARN"].endswith(limits.FIFO_SUFFIX) for record in records)
        ready: list[Record] = []
        failures: dict[str, PayloadError] = {}
        for record in records:
            message_id = record["messageId"]
            if fifo and failures:
                failures[message_id] = PayloadError(
                    message_id, "not read: an earlier record of this FIFO batch failed"
                )
                continue
            try:
                ready.append(self.resolve(record))
            except PayloadError as error:
                logger.warning("%s", error)
                failures[message_id] = error
        return ResolvedBatch(ready, failures)

    def wrap(self, handle_record: HandlerT) -> HandlerT:
        """``handle_record``, called with the record (a dict, or Powertools' ``SQSRecord``)
        resolved: one whose payload cannot be read raises ``PayloadError`` instead, so
        ``process_batch`` and Powertools' processors report it failed (and back it off)."""

        @functools.wraps(handle_record)
        def resolved(record: Any, *args: Any, **kwargs: Any) -> Any:
            raw = getattr(record, "raw_event", None)  # Powertools' data classes wrap the dict
            if raw is None and not isinstance(record, Mapping):
                raise TypeError(
                    f"Payloads.wrap takes an SQS record as a dict or Powertools' SQSRecord, not "
                    f"{type(record).__name__}: build the batch processor without model="
                )
            if raw is None:
                return handle_record(self.resolve(record), *args, **kwargs)
            return handle_record(type(record)(self.resolve(raw)), *args, **kwargs)

        return resolved  # type: ignore[return-value]

    def delete_processed(
        self, event: Mapping[str, Any], response: ResponseT, *, context: Any = None
    ) -> ResponseT:
        """With ``delete``, delete the payload of every record ``response`` does not report
        failed; ``response`` (the partial batch response) is returned as it is.

        Call it last, just before returning: a payload deleted while its message could still
        come back would make that message's next receive fail for good. So nothing is deleted
        when ``response`` is one Lambda would fail whole (an identifier not in the batch), and,
        with ``context`` (the Lambda context), no delete starts with under
        ``time_budget.LAST_CALL_SECONDS`` left: a timeout would return the whole batch. A
        delete that fails is logged, not reported: the message was processed, reporting it
        would process it again, and the bucket's lifecycle removes the object in time."""
        if not self.delete:
            return response
        records = backoff_batch.sqs_records(event)
        items: Any = response.get("batchItemFailures") or []
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            items = [{}]  # no partial batch response: Lambda fails the batch whole
        reported = {str(i.get("itemIdentifier")) for i in items}
        if not reported <= {r["messageId"] for r in records}:
            logger.warning("no payload deleted: batchItemFailures names records not in the batch")
            return response
        budget = TimeBudget(context) if context is not None else None
        for record in (r for r in records if r["messageId"] not in reported):
            try:
                pointer = pointer_of(record)
                if pointer is not None and budget is not None and not budget.may_call():
                    raise TimeoutError("too little time left")
                if pointer is not None:
                    self._check_place(record["messageId"], pointer)
                    self._s3().delete_object(Bucket=pointer.bucket, Key=pointer.key)
            except Exception as error:
                logger.warning(
                    "payload of message %s not deleted: %s; the bucket's lifecycle removes it",
                    record["messageId"],
                    backoff_batch._error_code(error),
                )
        return response

    def send(
        self,
        sqs_client: Any,
        queue_url: str,
        body: str,
        *,
        message_attributes: Mapping[str, Mapping[str, Any]] | None = None,
        always: bool = False,
        threshold: int = limits.EXTENDED_CLIENT_THRESHOLD,
        legacy: bool = False,
        **send_arguments: Any,
    ) -> dict[str, Any]:
        """SendMessage of ``body``: above ``threshold`` (or ``always``) the body goes to S3 under
        ``prefix`` and the message carries the extended client's pointer. Returns the answer.

        :param message_attributes: SendMessage's ``MessageAttributes`` (counted with the body).
        :param always: store the body in S3 whatever its size; default false.
        :param threshold: the bytes (body and attributes) above which the body goes to S3;
            default ``limits.EXTENDED_CLIENT_THRESHOLD`` (262,144, the extended client's).
        :param legacy: write the older clients' pointer class and attribute name; default false.
        :param send_arguments: SendMessage's other arguments (``MessageGroupId``, ...).
        """
        attributes = dict(message_attributes or {})
        _check_threshold(threshold)
        if always or message_size(body, attributes) > threshold:
            if not self.bucket:
                raise PayloadSettingsError(
                    f"a body of {len(body.encode())} bytes goes to S3, but the store has no "
                    f"bucket: set {PAYLOAD_BUCKET_ENV} (the construct does) or pass bucket="
                )
            _check_attributes(attributes)
            payload = body.encode()
            pointer = Pointer(self.bucket, f"{self.prefix}{uuid.uuid4()}")
            self._s3().put_object(Bucket=pointer.bucket, Key=pointer.key, Body=payload)
            name = LEGACY_SIZE_ATTRIBUTE if legacy else SIZE_ATTRIBUTE
            attributes[name] = {"DataType": "Number", "StringValue": str(len(payload))}
            body = pointer.body(legacy=legacy)
        answer = sqs_client.send_message(
            QueueUrl=queue_url, MessageBody=body, MessageAttributes=attributes, **send_arguments
        )
        return dict(answer)

    def _check_place(self, message_id: str, pointer: Pointer) -> None:
        if self.bucket and (
            pointer.bucket != self.bucket or not pointer.key.startswith(self.prefix)
        ):
            raise PayloadError(
                message_id,
                f"the pointer names s3://{pointer.bucket}/{pointer.key}, outside this queue's "
                f"payloads s3://{self.bucket}/{self.prefix}: send through the queue's own bucket",
            )

    def _read(self, message_id: str, pointer: Pointer) -> str:
        where = f"s3://{pointer.bucket}/{pointer.key}"
        try:
            answer = self._s3().get_object(Bucket=pointer.bucket, Key=pointer.key)
            size = int(answer.get("ContentLength", 0))
            payload = b"" if size > self.read_max else answer["Body"].read(self.read_max + 1)
        except Exception as error:  # missing, denied, throttled, unreachable: this record only
            raise PayloadError(
                message_id, f"payload {where} not read: {backoff_batch._error_code(error)}"
            ) from error
        if max(size, len(payload)) > self.read_max:
            answer["Body"].close()
            raise PayloadError(
                message_id,
                f"payload {where} is over read_max={self.read_max} bytes ({max(size, len(payload))} "
                "or more): raise Payloads(read_max=...) with the function's memory",
            )
        try:
            return payload.decode()
        except UnicodeDecodeError as error:
            raise PayloadError(message_id, f"payload {where} is not UTF-8 text: {error}") from None

    def _s3(self) -> Any:
        if self.s3_client is not None:
            return self.s3_client
        return _s3_client_for(
            tuple(os.environ.get(n) for n in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"))
        )


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """A message's size as the extended client counts it against its threshold: the body's
    UTF-8 bytes, and each attribute's name, data type and value."""
    size = len(body.encode())
    for name, value in attributes.items():
        size += len(name.encode()) + len(str(value.get("DataType", "")).encode())
        size += len(str(value.get("StringValue", "")).encode())
        size += len(value.get("BinaryValue", b""))
    return size


def process_batch(
    event: Mapping[str, Any],
    handle_record: Callable[[dict[str, Any]], object],
    *,
    payloads: Payloads | None = None,
    **backoff_arguments: Any,
) -> backoff_batch.BatchResponse:
    """``backoff_batch.process_batch`` with each record resolved first (``payloads.wrap``): a
    payload that cannot be read is a failed record, which waits its backoff; then the payloads
    of the processed records are deleted where the store says so (``delete_processed``).

    :param payloads: where the payloads are; default ``Payloads.from_environment()``.
    :param backoff_arguments: ``backoff_batch.process_batch``'s (``context``, ``backoff``, ...).
    """
    store = payloads if payloads is not None else Payloads.from_environment()
    response = backoff_batch.process_batch(event, store.wrap(handle_record), **backoff_arguments)
    return store.delete_processed(event, response, context=backoff_arguments.get("context"))


def _check_threshold(threshold: int) -> None:
    if type(threshold) is not int or not 0 <= threshold <= limits.MESSAGE_SIZE_MAX:
        raise PayloadSettingsError(
            f"threshold={threshold!r} is not a whole number of bytes from 0 to "
            f"{limits.MESSAGE_SIZE_MAX} (SQS's largest message): pass one, or leave it out for "
            f"{limits.EXTENDED_CLIENT_THRESHOLD}"
        )


def _check_attributes(attributes: Mapping[str, Any]) -> None:
    reserved = sorted({SIZE_ATTRIBUTE, LEGACY_SIZE_ATTRIBUTE} & set(attributes))
    if reserved:
        raise PayloadSettingsError(
            f"message attribute {reserved[0]} is the extended client's own: rename yours"
        )
    if len(attributes) > limits.EXTENDED_CLIENT_ATTRIBUTES_MAX:
        raise PayloadSettingsError(
            f"{len(attributes)} message attributes on a message stored in S3: at most "
            f"{limits.EXTENDED_CLIENT_ATTRIBUTES_MAX}, the size attribute takes SQS's tenth; "
            "move some into the body"
        )


@functools.cache
def _s3_client_for(endpoints: tuple[str | None, ...]) -> Any:
    # One client per configured endpoint, kept across invocations of a warm function.
    return importlib.import_module("boto3").session.Session().client("s3")
