"""A fleet whose ledger is known by construction, for ``test_ledger_fleet.py``: stacks on moto's
server and thirty hours of metric stream output in its S3, each queue's traffic planted minute by
minute (sends, receives, deletes, dead letters, returns after a visibility timeout, expiries,
empty receives) and its gauges the state that traffic leaves, at the end of each minute.

- ``orders``: a backlog built before the window and drained in it, dead letters into its own
  ``orders-dlq`` (which a producer also sends to, and a consumer reads), expiries;
- ``billing.fifo``: FIFO, every send delayed one minute, no dead letters, a silent DLQ;
- ``slow``: a consumer that runs 58 s on a 60 s visibility timeout (QR030), messages received
  again;
- ``shared-a`` and ``shared-b`` (another stack, naming the DLQ by its ARN): one DLQ for both;
- ``quiet``: no data point at all.

The window is the last day; its first minute is quiet on every queue, so its opening readings are
the state the minutes before it left (a data point's counts and its reading share its minute).
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.audit.conftest import healthy
from tests.support.moto_accounts import CALLER, EAST, create_stack, session

BUCKET = "ledger-stream"
PREFIX = "metrics"
MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
# The newest data point; the window is the day before it (``--metrics-window 1``).
END_MS = 1_795_000_000_000 - 1_795_000_000_000 % HOUR_MS
MINUTES = 30 * 60
FIRST_MS = END_MS - (MINUTES - 1) * MINUTE_MS
# The first minute inside the window (``start < timestamp``): the one exactly at the start is out.
WINDOW_FIRST = MINUTES - 1 - DAY_MS // MINUTE_MS + 1
METRICS = {
    "s": "NumberOfMessagesSent",
    "r": "NumberOfMessagesReceived",
    "d": "NumberOfMessagesDeleted",
    "z": "NumberOfEmptyReceives",
}
GAUGES = {
    "V": "ApproximateNumberOfMessagesVisible",
    "N": "ApproximateNumberOfMessagesNotVisible",
    "D": "ApproximateNumberOfMessagesDelayed",
}


def _in_window(k: int) -> bool:
    return k >= WINDOW_FIRST


@dataclass
class Queue:
    """One queue's planted traffic: per minute, how many are sent (``sends``), how many visible
    messages a consumer may receive (``receive_cap``), how many of those it dead-letters or
    returns (lets their visibility time out; it deletes the rest), how many visible ones
    expire, and its empty receives. The events and gauges of each minute are recorded."""

    name: str
    sends: Callable[[int], int]
    receive_cap: Callable[[int], int]
    dead_letters: Callable[[int], int] = lambda k: 0
    returns: Callable[[int], int] = lambda k: 0
    expiries: Callable[[int], int] = lambda k: 0
    empty: Callable[[int], int] = lambda k: 0
    delayed: bool = False  # sends wait one minute as delayed messages
    events: list[dict[str, int]] = field(default_factory=list)

    def run(self) -> list[dict[str, int]]:
        """Every minute's events and gauges, the gauges as the minute leaves them."""
        visible = in_flight = held = 0
        for k in range(MINUTES):
            quiet = k == WINDOW_FIRST
            sent = 0 if quiet else self.sends(k)
            visible += held
            held = sent if self.delayed else 0
            visible += 0 if self.delayed else sent
            # the oldest visible messages reach their retention before any consumer reads them
            expired = 0 if quiet else min(visible, self.expiries(k))
            visible -= expired
            received = 0 if quiet else min(visible, self.receive_cap(k))
            visible, in_flight = visible - received, in_flight + received
            moved = 0 if quiet else min(in_flight, self.dead_letters(k))
            back = 0 if quiet else min(in_flight - moved, self.returns(k))
            deleted = in_flight - moved - back
            in_flight, visible = 0, visible + back
            self.events.append(
                {"s": sent, "r": received, "d": deleted, "x": moved, "u": back, "e": expired,
                 "z": 0 if quiet else self.empty(k), "V": visible, "N": in_flight, "D": held}
            )  # fmt: skip
        return self.events

    def total(self, key: str) -> int:
        return sum(e[key] for k, e in enumerate(self.events) if _in_window(k))

    def change(self) -> int:
        """The backlog at the window's last reading less that at its first."""
        first, last = self.events[WINDOW_FIRST], self.events[-1]
        return sum(last[g] - first[g] for g in "VND")


@dataclass
class DeadLetterQueue:
    """A DLQ fed by its sources' dead letters and a producer's sends, read by a consumer that
    deletes ``reads`` a minute."""

    name: str
    sources: list[Queue]
    sends: Callable[[int], int] = lambda k: 0
    reads: Callable[[int], int] = lambda k: 0
    empty: Callable[[int], int] = lambda k: 0
    events: list[dict[str, int]] = field(default_factory=list)

    def run(self) -> list[dict[str, int]]:
        visible = 0
        for k in range(MINUTES):
            quiet = k == WINDOW_FIRST
            sent = 0 if quiet else self.sends(k)
            visible += sent + sum(q.events[k]["x"] for q in self.sources)
            read = 0 if quiet else min(visible, self.reads(k))
            visible -= read
            self.events.append(
                {"s": sent, "r": read, "d": read, "z": 0 if quiet else self.empty(k),
                 "V": visible, "N": 0}
            )  # fmt: skip
        return self.events

    def total(self, key: str) -> int:
        return sum(e[key] for k, e in enumerate(self.events) if _in_window(k))

    def change(self) -> int:
        return self.events[-1]["V"] - self.events[WINDOW_FIRST]["V"]


def _every(n: int, offset: int = 0, count: int = 1, after: int = 0) -> Callable[[int], int]:
    return lambda k: count if k >= after and k % n == offset % n else 0


ORDERS = Queue(
    "orders",
    sends=lambda k: 3 if k % 2 == 0 else 2,
    # one a minute before the window builds a backlog; four a minute drain it
    receive_cap=lambda k: 1 if k < WINDOW_FIRST else 4,
    dead_letters=_every(97, after=WINDOW_FIRST),
    expiries=_every(61, 5),
    empty=lambda k: 5 + k % 3,
)
BILLING = Queue(
    "billing.fifo", sends=_every(3, count=2), receive_cap=lambda k: 2, delayed=True,
    expiries=_every(301, 11), empty=lambda k: 40,
)  # fmt: skip
SLOW = Queue(
    "slow", sends=lambda k: 2, receive_cap=lambda k: 3, returns=_every(7),
    expiries=_every(200, 9), empty=lambda k: 1,
)  # fmt: skip
SHARED_A = Queue(
    "shared-a", sends=lambda k: 2, receive_cap=lambda k: 2,
    dead_letters=_every(10, after=WINDOW_FIRST, count=2), expiries=_every(45, 3),
)  # fmt: skip
SHARED_B = Queue(
    "shared-b", sends=lambda k: 1, receive_cap=lambda k: 1,
    dead_letters=_every(10, 5, after=WINDOW_FIRST), expiries=_every(90, 4),
)  # fmt: skip
ORDERS_DLQ = DeadLetterQueue(
    "orders-dlq", [ORDERS], sends=_every(120, 7, after=WINDOW_FIRST + 1), reads=_every(50),
    empty=lambda k: 2,
)  # fmt: skip
SHARED_DLQ = DeadLetterQueue("shared-dlq", [SHARED_A, SHARED_B], reads=_every(30), empty=_every(4))
QUEUES = [ORDERS, BILLING, SLOW, SHARED_A, SHARED_B]
DEAD_LETTER_QUEUES = [ORDERS_DLQ, SHARED_DLQ]
# the sources first: their dead letters feed the DLQs
EVERY_QUEUE: list[Queue | DeadLetterQueue] = [*QUEUES, *DEAD_LETTER_QUEUES]
for _queue in EVERY_QUEUE:
    _queue.run()
# (stack, logical id) of every queue with data points
PLACES = {
    "orders": ("orders", "Source"),
    "orders-dlq": ("orders", "Dlq"),
    "billing.fifo": ("billing", "Source"),
    "slow": ("slow", "Source"),
    "shared-a": ("shared", "SharedA"),
    "shared-dlq": ("shared", "SharedDlq"),
    "shared-b": ("shared-b", "SharedB"),
}
WORKER = "slow-worker"
# the consumer's longest run, in one minute of the window (58 s on a 60 s visibility timeout)
LONGEST_MS = 58_000.0


def _pipeline(name: str, fifo: bool = False) -> dict[str, Any]:
    template = healthy(name, fifo)
    del template["Resources"]["Fn"], template["Resources"]["Esm"]
    return template


def _slow() -> dict[str, Any]:
    """``healthy("slow")`` with a 50 s function and a 5 s batching window (QR030 once it runs
    58 s), a named function and the execution role moto requires."""
    template = healthy("slow")
    resources = template["Resources"]
    resources["Fn"]["Properties"].update(
        {"FunctionName": WORKER, "Timeout": 50, "Role": {"Fn::GetAtt": ["Role", "Arn"]}}
    )
    resources["Esm"]["Properties"]["MaximumBatchingWindowInSeconds"] = 5
    statement = {
        "Effect": "Allow",
        "Action": "sts:AssumeRole",
        "Principal": {"Service": "lambda.amazonaws.com"},
    }
    document = {"Version": "2012-10-17", "Statement": [statement]}
    resources["Role"] = {
        "Type": "AWS::IAM::Role",
        "Properties": {"AssumeRolePolicyDocument": document},
    }
    return template


def _redrive(target: Any) -> dict[str, Any]:
    return {"deadLetterTargetArn": target, "maxReceiveCount": 5}


def _shared() -> dict[str, Any]:
    return {
        "Resources": {
            "SharedDlq": {
                "Type": "AWS::SQS::Queue",
                "Properties": {"QueueName": "shared-dlq", "MessageRetentionPeriod": 1_209_600},
            },
            "SharedA": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "QueueName": "shared-a",
                    "RedrivePolicy": _redrive({"Fn::GetAtt": ["SharedDlq", "Arn"]}),
                },
            },
        }
    }


def _shared_b() -> dict[str, Any]:
    arn = f"arn:aws:sqs:{EAST}:{CALLER}:shared-dlq"  # in the other stack
    properties = {"QueueName": "shared-b", "RedrivePolicy": _redrive(arn)}
    return {"Resources": {"SharedB": {"Type": "AWS::SQS::Queue", "Properties": properties}}}


def plant_stacks(endpoint: str) -> None:
    east = session(EAST)
    for name, template in (
        ("orders", _pipeline("orders")),
        ("billing", _pipeline("billing", fifo=True)),
        ("slow", _slow()),
        ("shared", _shared()),
        ("shared-b", _shared_b()),
        ("quiet", _pipeline("quiet")),
    ):
        create_stack(endpoint, east, name, template)


def _point(namespace: str, dimension: str, name: str, metric: str, k: int, value: float) -> str:
    return json.dumps(
        {
            "metric_stream_name": "ledger",
            "account_id": CALLER,
            "region": EAST,
            "namespace": namespace,
            "metric_name": metric,
            "dimensions": {dimension: name},
            "timestamp": FIRST_MS + k * MINUTE_MS,
            "value": {"max": float(value), "min": float(value), "sum": float(value), "count": 1.0},
            "unit": "Count",
        }
    )


def _lines(k: int) -> list[str]:
    lines: list[str] = []
    for queue in EVERY_QUEUE:
        event = queue.events[k]
        gauges = "VND" if isinstance(queue, Queue) and queue.delayed else "VN"
        for key, metric in (*METRICS.items(), *((g, GAUGES[g]) for g in gauges)):
            lines.append(_point("AWS/SQS", "QueueName", queue.name, metric, k, event[key]))
    duration = LONGEST_MS if k == MINUTES - 100 else 900.0
    lines.append(_point("AWS/Lambda", "FunctionName", WORKER, "Duration", k, duration))
    return lines


def write_metrics(endpoint: str) -> str:
    """Thirty hours of the planted traffic as Firehose writes it (gzip JSON lines, an object an
    hour under YYYY/MM/DD/HH/); the URL to give ``--metrics``."""
    s3 = session(EAST).client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    by_hour: dict[int, list[str]] = {}
    for k in range(MINUTES):
        stamp = FIRST_MS + k * MINUTE_MS
        by_hour.setdefault(stamp - stamp % HOUR_MS, []).extend(_lines(k))
    for hour, lines in sorted(by_hour.items()):
        key = f"{PREFIX}/{time.strftime('%Y/%m/%d/%H', time.gmtime(hour / 1000))}/ledger-1.gz"
        body = gzip.compress("".join(line + "\n" for line in lines).encode())
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    return f"s3://{BUCKET}/{PREFIX}/"
