"""The checks of one public call beyond its parameter table: rules between parameters, and
misuse of the API.

A table (``constructs_lib.params.prop_tables``) judges each argument alone; what takes two of
them, or the construct tree, is here: the rules between a ``ResilientQueue(...)``'s props
(``queue_props``, with the DLQ's retention in a private module), and the misuse of the API
(``misuse``): a construct outside a stack or under a taken id, a consumer added twice or out of
reach, a second dashboard or one that would tie two stacks together. Each returns or raises its
findings as ``Problem`` objects, which the call raises together as one ``ConfigurationError``.
"""

from constructs_lib.params.combinations.misuse import (
    check_new_construct,
    consumer_misuse_problems,
    dashboard_problems,
)
from constructs_lib.params.combinations.queue_props import (
    FIFO_ONLY,
    QueueGiven,
    check_queue,
    unresolved_warning,
)

__all__ = [
    "FIFO_ONLY",
    "QueueGiven",
    "check_new_construct",
    "check_queue",
    "consumer_misuse_problems",
    "dashboard_problems",
    "unresolved_warning",
]
