"""Large messages through S3: how long a queue's payloads must be kept (no CDK).

A message whose body lives in S3 is only a pointer; when the payload expires first, the message
is data lost, and the dead letter kept for inspection is an empty shell. So the payload bucket's
lifecycle keeps a payload at least as long as its message can live:

- standard queues: the dead-letter queue's retention. A message moved to a standard DLQ keeps its
  original enqueue timestamp, so it expires at most that long after it was first sent (SQS
  developer guide, setting-up-dead-letter-queue-retention), however long it waited in the source;
- FIFO queues: the source's retention plus the DLQ's. The move resets a FIFO message's timestamp
  (the same page), and a message still in the source is gone by the source's retention.

``retry_backoff`` adds nothing beyond these: its waits are spent in the source, and a consumer's
schedule whose worst case reaches the source's retention is refused at the call
(``policy.backoff``), so a message that fails every receive is dead-lettered within the source's
retention. Unknown retentions (tokens, a dead-letter queue given) count as SQS's 14-day maximum.

A redriven message is a new message (new id, enqueue time and retention; SQS developer guide)
that still points at the old payload: the margin below is the time an operator has to redrive.
"""

from __future__ import annotations

import math
from typing import Final

from constructs_lib import limits

PAYLOAD_MARGIN_DAYS: Final = 1
"""Days a payload is kept beyond the longest life of its message (our choice): the producer
writes the payload before it sends, retries of that send included, and a dead letter redriven
on the last day of its retention must still find its payload when it is received again."""


def payload_lifetime_seconds(
    fifo: bool, source_retention: int | None, dead_letter_retention: int | None
) -> int:
    """The longest a message of the queue can live, in seconds, from the moment it is sent
    (the module docstring says why); None retentions count as SQS's maximum."""
    dead_letter = limits.RETENTION_MAX if dead_letter_retention is None else dead_letter_retention
    if not fifo:
        return dead_letter
    source = limits.RETENTION_MAX if source_retention is None else source_retention
    return source + dead_letter


def payload_expiration_days(
    fifo: bool,
    source_retention: int | None,
    dead_letter_retention: int | None,
    margin_days: int = PAYLOAD_MARGIN_DAYS,
) -> int:
    """The lifecycle rule's ``Expiration`` in whole days: the message's longest life rounded up
    to a day, plus ``margin_days``. S3 rounds the expiry up to the next midnight UTC, which only
    keeps a payload longer (``limits.S3_LIFECYCLE_DAY_SECONDS``)."""
    lifetime = payload_lifetime_seconds(fifo, source_retention, dead_letter_retention)
    days = math.ceil(lifetime / limits.S3_LIFECYCLE_DAY_SECONDS) + margin_days
    return max(days, limits.S3_EXPIRATION_DAYS_MIN)
