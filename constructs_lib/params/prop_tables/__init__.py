"""Every public parameter, declared once: the kind of value it accepts, its range and its unit.

Each call of the public API passes its arguments to its table here before any of them reaches
jsii (``constructs_lib.params.table`` says how a table checks and reads them): one module per
call or family of calls, ``ResilientQueue(...)`` (``queue``), ``add_lambda_consumer``,
``RetryBackoff`` and ``add_dead_letter_consumer`` (``consumers``), ``LargePayloads``
(``payloads``), ``add_dashboard``,
``grant_redrive`` and ``add_producer`` (``queue_methods``), ``QueueResilienceChecks(...)``
(``plugin``). The README and docs/api.md tables are rendered from these (and tested against
them).
"""

from constructs_lib.params.prop_tables.consumers import (
    CONSUMER,
    DEAD_LETTER_CONSUMER,
    RETRY_BACKOFF,
)
from constructs_lib.params.prop_tables.payloads import LARGE_PAYLOADS
from constructs_lib.params.prop_tables.plugin import CHECKS
from constructs_lib.params.prop_tables.queue import QUEUE
from constructs_lib.params.prop_tables.queue_methods import DASHBOARD, PRODUCER, REDRIVE

TABLES = (
    QUEUE,
    CONSUMER,
    RETRY_BACKOFF,
    LARGE_PAYLOADS,
    DEAD_LETTER_CONSUMER,
    DASHBOARD,
    CHECKS,
    REDRIVE,
    PRODUCER,
)
"""Every public call's table."""

__all__ = [
    "CHECKS",
    "CONSUMER",
    "DASHBOARD",
    "DEAD_LETTER_CONSUMER",
    "LARGE_PAYLOADS",
    "PRODUCER",
    "QUEUE",
    "REDRIVE",
    "RETRY_BACKOFF",
    "TABLES",
]
