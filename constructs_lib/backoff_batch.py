"""Retries with exponential backoff, applied: the failed records of one SQS batch wait their turn.

A handler passes its SQS event through ``process_batch`` (without Powertools) or hands the
partial batch response Powertools' batch processor made to ``apply_backoff``. Each failed
record's visibility is set with ``ChangeMessageVisibilityBatch`` to the wait ``Backoff`` gives
its receive count, capped so that SQS accepts it and the message is visible again before it
expires, and the record is reported in ``batchItemFailures`` whatever that call answers.

Like ``constructs_lib.backoff`` this module imports no CDK: boto3 and botocore, which the Lambda
Python runtime includes, are imported when a client is first needed.
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from constructs_lib import limits
from constructs_lib.backoff import VISIBILITY_MAX, Backoff
from constructs_lib.time_budget import TimeBudget

logger = logging.getLogger(__name__)

Record = dict[str, Any]
BatchResponse = dict[str, list[dict[str, str]]]
# A partial batch response of any type: Powertools' is a TypedDict.
ResponseT = TypeVar("ResponseT", bound=Mapping[str, object])

# A message's visibility timeout may not run past 12 hours counted from the ReceiveMessage that
# returned it: ChangeMessageVisibility's new timeout counts from the call, but "you can't extend
# the timeout of a message to more than a total visibility timeout of 12 hours" and a longer one
# is rejected (SQS API reference, ChangeMessageVisibility; SQS developer guide, "Amazon SQS
# visibility timeout"). The handler cannot see when the poller received the batch: at most the
# longest batching window before the invocation (MaximumBatchingWindowInSeconds, 300 s, Lambda
# API reference CreateEventSourceMapping) plus the longest function run (900 s, Lambda
# developer guide, "Lambda quotas"). So a wait never exceeds 12 hours less those 20 minutes.
WAIT_MAX: Final = VISIBILITY_MAX - limits.BATCHING_WINDOW_MAX - limits.FUNCTION_TIMEOUT_MAX
# SQS deletes a message when its retention period ends, in flight or not, and a deleted message
# never reaches the dead-letter queue (SQS developer guide, "Amazon SQS message retention"). A
# wait ends at least this long before the message expires: time for the pollers, which long-poll
# without pause, to receive it once more, even behind a few batches of backlog.
EXPIRY_MARGIN: Final = 300
# ChangeMessageVisibilityBatch takes at most 10 entries (SQS API reference).
CHANGE_BATCH_MAX: Final = 10
# Lambda's SQS event source (Lambda developer guide, "Using Lambda with Amazon SQS": example event).
SQS_EVENT_SOURCE: Final = "aws:sqs"
FIFO_SUFFIX: Final = ".fifo"
_EVENT_FIX = (
    "pass the event exactly as Lambda hands it to a function whose event source mapping reads an "
    "SQS queue"
)


class BatchEventError(ValueError):
    """The event is not an SQS event as Lambda builds it, so no visibility can be changed."""


def process_batch(
    event: Mapping[str, Any],
    handle_record: Callable[[dict[str, Any]], object],
    *,
    backoff: Backoff | None = None,
    sqs_client: Any = None,
    now: float | None = None,
    rng: random.Random | None = None,
    context: Any = None,
    margin: float | None = None,
) -> BatchResponse:
    """Call ``handle_record`` on each record; every record that raises waits its backoff and is
    reported in the partial batch response this returns (``ReportBatchItemFailures``).

    With ``context`` (the Lambda context), a record starts only while the invocation has at
    least ``margin`` seconds left (``time_budget.TimeBudget``); the records not started are
    reported too and visible again at once, so a batch that runs long returns only them.

    On a FIFO queue the first failure ends the batch: Lambda requires the records after it to be
    reported unprocessed too (Lambda developer guide, "Handling errors for an SQS event source",
    partial batch responses). Those of the failed record's message group wait as long as it does,
    so the group comes back in order; those of other groups are visible again at once.

    :param backoff: the schedule; default ``Backoff.from_environment(os.environ)``.
    :param sqs_client: a boto3 SQS client; default one for the queue's region (the endpoint is
        boto3's choice, so ``AWS_ENDPOINT_URL`` applies).
    :param now: the time in seconds since the epoch; default ``time.time()``.
    :param rng: the jitter's random source; default the ``random`` module.
    :param context: the invocation's Lambda context; default none: every record starts.
    :param margin: the seconds that must be left to start a record (with ``context``); default
        the longest record so far plus ``time_budget.WRAP_UP_SECONDS``.
    """
    records = sqs_records(event)
    # Read before any record is processed: a bad setting fails the invocation, not half a batch.
    settings = _backoff(backoff)
    if margin is not None and context is None:
        raise TypeError("margin needs the invocation's time: pass context=context as well")
    budget = TimeBudget(context, margin) if context is not None else None
    fifo = any(_is_fifo(record) for record in records)
    failed: set[str] = set()
    skipped: set[str] = set()
    for record in records:
        message_id = record["messageId"]
        if (fifo and failed) or (budget is not None and not budget.may_start(message_id)):
            skipped.add(message_id)
            continue
        try:
            if budget is None:
                handle_record(record)
            else:
                budget.run(handle_record, record)
        except Exception as error:
            logger.warning("message %s failed: %s: %s", message_id, type(error).__name__, error)
            failed.add(message_id)
    waits = plan_waits(records, failed, skipped, settings, _now(now), rng)
    _change_visibility(records, waits, sqs_client, budget)
    reported = failed | skipped
    return {
        "batchItemFailures": [
            {"itemIdentifier": record["messageId"]}
            for record in records
            if record["messageId"] in reported
        ]
    }


def apply_backoff(
    event: Mapping[str, Any],
    response: ResponseT,
    *,
    backoff: Backoff | None = None,
    sqs_client: Any = None,
    now: float | None = None,
    rng: random.Random | None = None,
    budget: TimeBudget | None = None,
) -> ResponseT:
    """Make every record ``response`` reports wait its backoff; ``response`` is returned as it is.

    ``response`` is what Powertools' ``process_partial_response`` returns. A response cannot tell
    a record that failed from one a FIFO processor skipped after a failure, so on a FIFO queue
    the first reported record of each message group waits as a failure and the group's later
    ones wait as long. The parameters are ``process_batch``'s, and ``budget``: the
    ``TimeBudget`` whose ``wrap`` made the record handler; the records it did not start are
    visible again at once, not after a backoff.
    """
    records = sqs_records(event)
    failures = response.get("batchItemFailures") if isinstance(response, Mapping) else None
    if not isinstance(failures, list) or not all(
        isinstance(item, Mapping) and "itemIdentifier" in item for item in failures
    ):
        raise BatchEventError(
            "the response has no batchItemFailures list of {'itemIdentifier': ...}: pass the "
            "partial batch response process_partial_response returned"
        )
    reported = {str(item["itemIdentifier"]) for item in failures}
    unknown = reported - {record["messageId"] for record in records}
    if unknown:
        logger.warning("batchItemFailures names messages not in the event: %s", sorted(unknown))
    not_started = set(budget.not_started) if budget is not None else set()
    waits = plan_waits(
        records, reported - not_started, reported & not_started, _backoff(backoff), _now(now), rng
    )
    _change_visibility(records, waits, sqs_client, budget)
    return response


def plan_waits(
    records: Sequence[Record],
    failed: set[str],
    skipped: set[str],
    backoff: Backoff,
    now: float,
    rng: random.Random | None = None,
) -> dict[str, int]:
    """The visibility timeout to set on each failed or skipped record, by message id.

    On a FIFO queue a record takes the wait of the first reported record of its message group,
    so the group comes back together and in order; a skipped record of a group without a
    failure waits nothing.
    """
    waits: dict[str, int] = {}
    group_waits: dict[str, int] = {}
    for record in records:
        message_id = record["messageId"]
        if message_id not in failed and message_id not in skipped:
            continue
        group = record["attributes"].get("MessageGroupId") if _is_fifo(record) else None
        if group is not None and group in group_waits:
            wait = group_waits[group]
        elif message_id in failed:
            wait = wait_after_failure(record, backoff, now, rng)
        else:
            wait = 0
        if group is not None:
            group_waits.setdefault(group, wait)
        waits[message_id] = wait
    return waits


def wait_after_failure(
    record: Record, backoff: Backoff, now: float, rng: random.Random | None = None
) -> int:
    """How long a record that failed stays invisible: its backoff, at most ``WAIT_MAX``, and
    over ``EXPIRY_MARGIN`` before the message expires when the retention period is known. On
    the last receive the backoff is 0: the next receive moves the message to the DLQ."""
    attributes = record["attributes"]
    wait = min(backoff.delay(int(attributes["ApproximateReceiveCount"]), rng), WAIT_MAX)
    if backoff.retention_seconds is not None:
        # SentTimestamp: milliseconds since the epoch when SQS accepted the message.
        expires = int(attributes["SentTimestamp"]) / 1000 + backoff.retention_seconds
        wait = min(wait, max(0, math.floor(expires - EXPIRY_MARGIN - now)))
    return wait


def queue_url(event_source_arn: str) -> str:
    """The queue URL of ``arn:PARTITION:sqs:REGION:ACCOUNT:NAME``:
    ``https://sqs.REGION.DNS_SUFFIX/ACCOUNT/NAME`` (SQS developer guide, "Amazon SQS queue and
    message identifiers"), with the partition's DNS suffix as botocore knows it."""
    partition, region, account, name = _arn_parts(event_source_arn)
    return f"https://sqs.{region}.{_dns_suffix(partition)}/{account}/{name}"


def sqs_records(event: Mapping[str, Any]) -> list[Record]:
    """The records of an SQS event, each checked for what the backoff needs."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list):
        raise BatchEventError(f"the event has no 'Records' list: {_EVENT_FIX}")
    for index, record in enumerate(records):
        where = f"record {index}"
        if not isinstance(record, Mapping):
            raise BatchEventError(
                f"{where} is {type(record).__name__}, not an object: {_EVENT_FIX}"
            )
        source = record.get("eventSource")
        if source != SQS_EVENT_SOURCE:
            raise BatchEventError(
                f"{where} has eventSource {source!r}, not {SQS_EVENT_SOURCE!r}: the backoff "
                f"applies to SQS messages only; {_EVENT_FIX}"
            )
        where = f"record {index} (messageId {record.get('messageId')!r})"
        for key in ("messageId", "receiptHandle", "eventSourceARN"):
            if not isinstance(record.get(key), str) or not record[key]:
                raise BatchEventError(f"{where} has no {key}: {_EVENT_FIX}")
        _arn_parts(record["eventSourceARN"])
        attributes = record.get("attributes")
        for key in ("ApproximateReceiveCount", "SentTimestamp"):
            if not isinstance(attributes, Mapping) or not str(attributes.get(key, "")).isdigit():
                raise BatchEventError(
                    f"{where} has no attributes.{key} (a whole number): {_EVENT_FIX}"
                )
    return records


def _change_visibility(
    records: Sequence[Record],
    waits: Mapping[str, int],
    client: Any,
    budget: TimeBudget | None = None,
) -> None:
    """Set each planned wait, ten records a call; a failed change is logged, never raised (the
    record is reported all the same and the queue's visibility timeout applies). With a
    ``budget``, no call starts once the invocation is about to end: the response must leave in
    time, or every record of the batch returns."""
    planned = [record for record in records if record["messageId"] in waits]
    by_queue: dict[str, list[Record]] = {}
    for record in planned:
        by_queue.setdefault(record["eventSourceARN"], []).append(record)
    for arn, queued in by_queue.items():
        try:
            sqs = client if client is not None else _default_client(_arn_parts(arn)[1])
            url = queue_url(arn)
        except Exception as error:  # no client, a partition botocore does not know
            _log_failures((record["messageId"] for record in queued), _error_code(error))
            continue
        for start in range(0, len(queued), CHANGE_BATCH_MAX):
            chunk = queued[start : start + CHANGE_BATCH_MAX]
            if budget is not None and not budget.may_call():
                for record in chunk:
                    logger.warning(
                        "visibility of message %s not changed: too little time left; it is "
                        "reported failed and returns after the queue's visibility timeout",
                        record["messageId"],
                    )
                continue
            entries = [
                {
                    "Id": str(index),
                    "ReceiptHandle": record["receiptHandle"],
                    "VisibilityTimeout": waits[record["messageId"]],
                }
                for index, record in enumerate(chunk)
            ]
            try:
                answer = sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)
            except Exception as error:
                _log_failures((record["messageId"] for record in chunk), _error_code(error))
                continue
            for failure in answer.get("Failed", []):
                _log_failures([chunk[int(failure["Id"])]["messageId"]], failure.get("Code", "?"))


def _log_failures(message_ids: Iterable[str], code: str) -> None:
    for message_id in message_ids:
        logger.warning(
            "backoff not set for message %s: ChangeMessageVisibility failed with %s; it is "
            "reported failed and returns after the queue's visibility timeout",
            message_id,
            code,
        )


def _error_code(error: Exception) -> str:
    """The AWS error code of a botocore ClientError, else the exception's class name."""
    response = getattr(error, "response", None)
    if isinstance(response, Mapping):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    return type(error).__name__


def _arn_parts(arn: str) -> tuple[str, str, str, str]:
    """(partition, region, account, queue name) of an SQS queue ARN."""
    parts = arn.split(":")
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sqs" or not all(parts[1:]):
        raise BatchEventError(
            f"eventSourceARN {arn!r} is not an SQS queue ARN (arn:PARTITION:sqs:REGION:ACCOUNT:"
            f"NAME): {_EVENT_FIX}"
        )
    return parts[1], parts[3], parts[4], parts[5]


def _is_fifo(record: Record) -> bool:
    return str(record.get("eventSourceARN", "")).endswith(FIFO_SUFFIX)


@functools.cache
def _dns_suffix(partition: str) -> str:
    loader = importlib.import_module("botocore.loaders").create_loader()
    for known in loader.load_data("partitions")["partitions"]:
        if known["id"] == partition:
            return str(known["outputs"]["dnsSuffix"])
    raise BatchEventError(
        f"partition {partition!r} is unknown to this botocore: update boto3 in the function"
    )


@functools.cache
def _client_for(region: str, endpoints: tuple[str | None, ...]) -> Any:
    # One client per region and configured endpoint, kept across invocations of a warm function.
    return importlib.import_module("boto3").session.Session().client("sqs", region_name=region)


def _default_client(region: str) -> Any:
    endpoints = tuple(os.environ.get(name) for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"))
    return _client_for(region, endpoints)


def _backoff(backoff: Backoff | None) -> Backoff:
    return backoff if backoff is not None else Backoff.from_environment(os.environ)


def _now(now: float | None) -> float:
    return time.time() if now is None else now
