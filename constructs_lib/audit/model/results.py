"""What an audit run produces, whichever engine ran it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.audit.model.findings import Finding
from constructs_lib.audit.model.rows import FileRow, QueueLedger


@dataclass
class AuditResult:
    """What an audit run produced: every finding, every file, and how long each stage took.

    A Spark run for a report (``SparkEngine.audit`` with ``gather=False``) holds neither in memory: its
    ``findings`` is a sorted view that streams them from the executors, ``files`` is empty, and
    ``summary`` holds the counts, computed where the rows are."""

    findings: Collection[Finding]
    files: list[FileRow]
    queues: int
    timings: dict[str, float] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    # With a baseline: its findings that this run no longer reports (``baseline`` "absent"),
    # in report order; None without one.
    fixed: list[Finding] | None = None
    # With ``--metrics``: the queues judged with and without their own series, the accounts and
    # regions the input covers, what was read (``observations.summary``); None without it.
    metrics: dict[str, Any] | None = None
    # A Spark run: how much of the fleet its join stage had to judge, the rest being judged where
    # each template was parsed: {"queues": judged there, "templates": whose rows it read}. The
    # run's progress line on stderr says it; the reports leave it out, so that both engines'
    # reports stay byte for byte the same.
    cross_template: dict[str, int] | None = None
    # With ``--metrics``: a ledger for every deployed queue with series in the window, ranked
    # by messages lost, then by money (``metrics/ledger.py``); empty without it.
    ledgers: tuple[QueueLedger, ...] = ()
