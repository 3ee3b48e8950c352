"""The HTML report's ledger: what each queue lost and spent over the metrics window, every queue
in the ledger's rank (the most messages lost first, then the most money), and the fleet's total.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from constructs_lib.audit.model import QueueLedger
from constructs_lib.audit.report import ledger


def _row(cells: Sequence[str], tag: str = "td") -> str:
    """One row; the queue's stack/logical id as code, the figures aligned right."""
    parts = []
    for i, cell in enumerate(cells):
        text = html.escape(cell)
        if i == 0 and tag == "td":
            text = f"<code>{text}</code>"
        numeric = ' class="num"' if i >= ledger.FIGURES_FROM else ""
        parts.append(f"<{tag}{numeric}>{text}</{tag}>")
    return "<tr>" + "".join(parts) + "</tr>"


def ledger_section(ledgers: Sequence[QueueLedger]) -> str:
    """The ledger's section ("" without a ledger): a table of every queue, its total in the
    table's foot, and what a dash and an estimate mean."""
    if not ledgers:
        return ""
    head = _row(ledger.LEDGER_HEADER, "th")
    body = "".join(_row(ledger.cells(row)) for row in ledgers)
    total = _row(ledger.total_cells(ledger.totals(ledgers)), "th")
    return (
        '<section id="ledger"><h2>Ledger</h2>'
        f'<p class="lead">{html.escape(ledger.lead_text(ledgers))}</p>'
        f'<table class="ledger"><thead>{head}</thead><tbody>{body}</tbody>'
        f"<tfoot>{total}</tfoot></table>"
        f'<p class="hint">{html.escape(ledger.notes_text())}</p></section>'
    )
