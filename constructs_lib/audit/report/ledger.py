"""The ledger in the reports: what each queue lost and spent over the metrics window
(``AuditResult.ledgers``, in its rank: the most messages lost first, then the most money), as
figures a person reads, as JSON objects, and as the rank that orders the findings.

The engines compute the figures (``metrics/ledger.py``; docs/audit/ledger.md gives each formula);
this module only rounds them for display, adds them up for the fleet and ranks findings by them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from constructs_lib.audit.model import Finding, QueueLedger, uid
from constructs_lib.audit.report.words import plural

# How many queues the terminal table lists, the most messages lost first; the rest are counted.
# One screen beside the findings: a fleet's whole ledger is in JSON, SARIF, Markdown, HTML and
# the --output-dir datasets.
LEDGER_ROWS = 20

# The ledger's figures that add up across the fleet, in the order the rows carry them: message
# counts, and ``empty_receive_cost`` in US dollars.
FIGURES = (
    "sent",
    "deleted",
    "received",
    "empty_receives",
    "backlog_change",
    "unprocessed",
    "dead_lettered",
    "expired",
    "extra_deliveries",
    "empty_receive_cost",
)

# What a figure is written as when it is None: a metric it needs had no data point in the window.
UNKNOWN = "-"
ESTIMATE = "estimate"

LEDGER_HEADER = (
    "Queue",
    "Name",
    "Account/region",
    "Type",
    "Unprocessed",
    "Dead-lettered",
    "Expired",
    "Extra deliveries",
    "Empty receives",
    "Empty receive cost (USD)",
)
# The columns from here on are figures, aligned right.
FIGURES_FROM = 4

_CENT = Decimal("0.01")
_FOUR_PLACES = Decimal("0.0001")


def _decimal(value: float) -> Decimal:
    # through the float's shortest text, so 0.00995 rounds as written, not as its binary value
    return Decimal(repr(value))


def messages_text(value: float | None) -> str:
    """A message count as a whole number, halves away from zero: ``1,235`` for 1234.5, ``-``
    for None."""
    if value is None:
        return UNKNOWN
    whole = int(_decimal(value).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return f"{whole:,}"


def usd_text(value: float | None) -> str:
    """Dollars in cents (``$1,234.57``); below a cent in four decimals (``$0.0040``), since
    empty receives cost fractions of a cent and ``$0.00`` would read as free; a cost that is
    not zero but below $0.00005 as ``<$0.0001``; ``-`` for None."""
    if value is None:
        return UNKNOWN
    exact = _decimal(value)
    four = exact.quantize(_FOUR_PLACES, rounding=ROUND_HALF_UP)
    if abs(four) >= _CENT:
        return f"${exact.quantize(_CENT, rounding=ROUND_HALF_UP):,}"
    if four:
        return f"${four}"
    return "<$0.0001" if exact > 0 else "$0.00"


def queue_uid(finding: Finding) -> str:
    """The uid of the queue a finding is about (``QueueLedger.uid``), "" when it is about none:
    the queue's own template, which is the finding's unless the finding is on a resource of
    another template (``queue_template``)."""
    if not finding.queue:
        return ""
    return uid(finding.queue_template or finding.template, finding.queue)


def loss_ranks(ledgers: Sequence[QueueLedger]) -> dict[str, int]:
    """Queue uid -> its place (0 first) among the queues whose loss (``unprocessed``) is known,
    in the ledger's rank. A queue whose loss is not known has no place: the findings order it
    as they would without a ledger."""
    known = (ledger.uid for ledger in ledgers if ledger.unprocessed is not None)
    return {queue: rank for rank, queue in enumerate(known)}


def totals(ledgers: Sequence[QueueLedger]) -> dict[str, Any]:
    """The fleet's figures: each the sum of the queues that know it (None when none does),
    how many queues do not (``queues_without``), and whether any dead-lettered / expired split
    added is an estimate."""
    summed: dict[str, Any] = {"queues": len(ledgers)}
    without: dict[str, int] = {}
    for figure in FIGURES:
        known = [v for v in (getattr(ledger, figure) for ledger in ledgers) if v is not None]
        # fsum: the same total whatever the order the queues are added in
        summed[figure] = math.fsum(known) if known else None
        without[figure] = len(ledgers) - len(known)
    summed["split_estimated"] = any(ledger.split_estimated for ledger in ledgers)
    summed["queues_without"] = without
    return summed


def as_dict(ledger: QueueLedger, rank: int) -> dict[str, Any]:
    """One queue's ledger for JSON: its rank (1 first) and every field, None as null and
    ``explained_by`` as a list."""
    return {"rank": rank, **ledger._asdict(), "explained_by": list(ledger.explained_by)}


def as_dicts(ledgers: Sequence[QueueLedger]) -> list[dict[str, Any]]:
    return [as_dict(ledger, rank) for rank, ledger in enumerate(ledgers, 1)]


def _split_text(value: float | None, estimated: bool) -> str:
    text = messages_text(value)
    return f"{text} ({ESTIMATE})" if estimated and value is not None else text


def _extra_text(value: float | None, explained_by: Sequence[str]) -> str:
    text = messages_text(value)
    return f"{text} ({', '.join(explained_by)})" if explained_by and value is not None else text


def cells(ledger: QueueLedger) -> tuple[str, ...]:
    """A queue's row (``LEDGER_HEADER``'s columns)."""
    return (
        f"{ledger.stack}/{ledger.logical_id}",
        ledger.name,
        f"{ledger.account}/{ledger.region}",
        "FIFO" if ledger.fifo else "standard",
        messages_text(ledger.unprocessed),
        _split_text(ledger.dead_lettered, ledger.split_estimated),
        _split_text(ledger.expired, ledger.split_estimated),
        _extra_text(ledger.extra_deliveries, ledger.explained_by),
        messages_text(ledger.empty_receives),
        usd_text(ledger.empty_receive_cost),
    )


TOTAL_LABEL = "Fleet total"


def total_cells(fleet: dict[str, Any]) -> tuple[str, ...]:
    """The fleet total row (``totals``), under ``LEDGER_HEADER``'s columns."""
    estimated = bool(fleet["split_estimated"])
    return (
        TOTAL_LABEL,
        plural(fleet["queues"], "queue"),
        "",
        "",
        messages_text(fleet["unprocessed"]),
        _split_text(fleet["dead_lettered"], estimated),
        _split_text(fleet["expired"], estimated),
        messages_text(fleet["extra_deliveries"]),
        messages_text(fleet["empty_receives"]),
        usd_text(fleet["empty_receive_cost"]),
    )


# The published page of the formulas (docs/audit/ledger.md), as the human reports name it.
LEDGER_PAGE = "docs/audit/ledger.md"


def lead_text(ledgers: Sequence[QueueLedger]) -> str:
    return (
        f"What {plural(len(ledgers), 'queue')} lost and spent over the metrics window, the most "
        "messages lost first, then the most money."
    )


def notes_text() -> str:
    """What a dash and an estimate mean, and where the formulas are."""
    return (
        f"{UNKNOWN}: no data point in the window for a metric the figure needs; "
        f'"{ESTIMATE}": the split of unprocessed messages into dead-lettered and expired is '
        f"estimated; totals add the queues that know the figure. Formulas: {LEDGER_PAGE}."
    )
