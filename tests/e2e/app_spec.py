"""The inputs of the end-to-end test app, shared by the app and the tests that check the result.

Function timeouts are short so the visibility timeouts derived from them keep the message tests
quick. Each queue has one Lambda consumer; ``NAME_PREFIX_CONTEXT`` lets two copies of the app
live side by side in one emulator account (physical names are deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass

NAME_PREFIX_CONTEXT = "e2eNamePrefix"
STANDARD_STACK = "Standard"
FIFO_STACK = "Fifo"


@dataclass(frozen=True)
class QueueSpec:
    construct_id: str
    stack: str
    fifo: bool
    kms: bool
    max_receive_count: int
    retention_days: int
    dead_letter_retention_days: int
    function_timeout: int  # seconds
    batch_size: int
    batching_window: int | None  # seconds; None leaves it unset
    max_concurrency: int | None
    report_batch_item_failures: bool

    def base_name(self, prefix: str) -> str:
        return f"{prefix}-{self.construct_id.lower()}"

    def output_id(self, what: str) -> str:
        return f"{self.construct_id}{what}"


EVENTS = QueueSpec(
    construct_id="Events",
    stack=STANDARD_STACK,
    fifo=False,
    kms=False,
    max_receive_count=5,
    retention_days=4,
    dead_letter_retention_days=14,
    function_timeout=1,
    batch_size=10,
    batching_window=None,
    max_concurrency=None,
    report_batch_item_failures=True,
)
PAYMENTS = QueueSpec(
    construct_id="Payments",
    stack=STANDARD_STACK,
    fifo=False,
    kms=True,
    max_receive_count=6,
    retention_days=3,
    dead_letter_retention_days=14,
    function_timeout=2,
    batch_size=50,
    batching_window=2,
    max_concurrency=5,
    report_batch_item_failures=False,
)
ORDERS = QueueSpec(
    construct_id="Orders",
    stack=FIFO_STACK,
    fifo=True,
    kms=False,
    max_receive_count=5,
    retention_days=4,
    dead_letter_retention_days=14,
    function_timeout=1,
    batch_size=10,
    batching_window=None,
    max_concurrency=None,
    report_batch_item_failures=True,
)
LEDGER = QueueSpec(
    construct_id="Ledger",
    stack=FIFO_STACK,
    fifo=True,
    kms=True,
    max_receive_count=7,
    retention_days=14,
    dead_letter_retention_days=14,
    function_timeout=2,
    batch_size=5,
    batching_window=None,
    max_concurrency=2,
    report_batch_item_failures=True,
)
QUEUES = (EVENTS, PAYMENTS, ORDERS, LEDGER)
