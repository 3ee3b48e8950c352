"""Properties only FIFO queues take, set on a standard queue (QR027)."""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib import limits
from constructs_lib.audit.model import QueueContext
from constructs_lib.audit.model.outcomes import Hit, Outcome, Rule
from constructs_lib.audit.rules._reading import is_fifo, name_of


def _qr027(ctx: QueueContext) -> Iterator[Outcome]:
    present = [p for p in limits.FIFO_ONLY_QUEUE_PROPERTIES if ctx.queue.prop(p) is not None]
    if present and not is_fifo(ctx.queue):
        yield Hit(
            ctx.queue,
            f"standard queue {name_of(ctx.queue)} sets {', '.join(present)}, which SQS accepts "
            "only on FIFO queues: CreateQueue fails",
        )


QR027 = Rule(
    "QR027",
    "error",
    "FIFO-only properties on a standard queue",
    f"remove {', '.join(limits.FIFO_ONLY_QUEUE_PROPERTIES)}, or make the queue FIFO "
    "(FifoQueue true, a name ending in .fifo)",
    _qr027,
)


RULES: tuple[Rule, ...] = (QR027,)
