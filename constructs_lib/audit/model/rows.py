"""The flat rows a template parses into, and the parsed template that holds them.

Rows are plain tuples of strings and numbers (``NamedTuple``) so that the same values flow through
Spark DataFrames (``engines/spark/schemas.py`` declares their schemas) and through the local
engine (``engines/local.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from constructs_lib.audit.model.resources import COVERAGE, OBSERVED


class SeriesRow(NamedTuple):
    """One metric series aggregated over the metrics window: a namespace's metric for one
    resource (its single dimension: ``QueueName`` or ``FunctionName``), in one account and region.
    Timestamps are epoch milliseconds, as metric streams write them."""

    account: str
    region: str
    namespace: str
    metric: str
    name: str  # the dimension's value: the queue's or the function's name
    maximum: float  # the largest ``value.max``
    total: float  # the sum of ``value.sum``
    samples: float  # the sum of ``value.count``
    first: int  # the earliest data point's timestamp
    last: int  # the latest
    # A gauge's reading at the window's start and end: the ``value.max`` of the first and of the
    # last data point (of two at the same timestamp, the larger). Both engines fill them; None
    # only in a row made without them.
    opening: float | None = None
    closing: float | None = None


class CoverageRow(NamedTuple):
    """What the metrics input covers in one account and region: the earliest and latest data
    point of any AWS/SQS series there (QR034 judges a queue without data points only when this
    spans the window)."""

    account: str
    region: str
    first: int
    last: int


class QueueLedger(NamedTuple):
    """What one deployed queue lost and spent over the metrics window, from the metrics SQS
    publishes for it and for its dead-letter queue (docs/audit/ledger.md gives each formula and
    its source). A figure is None where a metric it needs has no data point in the window.

    Message figures are message counts; ``empty_receive_cost`` is US dollars."""

    uid: str  # the queue's resource uid, as findings name it
    file: str
    stack: str
    logical_id: str
    account: str
    region: str
    name: str  # the queue's name
    fifo: bool  # priced as a FIFO queue
    sent: float | None  # NumberOfMessagesSent
    deleted: float | None  # NumberOfMessagesDeleted
    received: float | None  # NumberOfMessagesReceived
    empty_receives: float | None  # NumberOfEmptyReceives
    # closing less opening of visible + in flight + delayed: what the window left queued
    backlog_change: float | None
    # sent, neither deleted nor still queued: dead-lettered or expired
    unprocessed: float | None
    dead_lettered: float | None  # moved to its dead-letter queue
    expired: float | None  # deleted by SQS when their retention ended
    # the dead-lettered / expired split is an estimate (docs/audit/ledger.md says when)
    split_estimated: bool
    extra_deliveries: float | None  # receives beyond one per message that finished
    empty_receive_cost: float | None  # US dollars
    # rule ids of this queue's findings that explain a figure (QR030 for extra deliveries)
    explained_by: tuple[str, ...] = ()
    # the uid of the dead-letter queue whose figures give ``dead_lettered`` ("" without one)
    dead_letter_queue: str = ""
    # queues and services that send their failures to this queue (0 for a queue that is no
    # dead-letter queue): above 1, its arrivals are shared among them, an estimate
    dead_letter_sources: int = 0


class FileRow(NamedTuple):
    """One input file: parsed, or why not."""

    file: str
    stack: str
    status: str  # "ok" or "unparseable"
    error: str  # empty when status is "ok"
    resources: int  # resources of the audited types


class ResourceRow(NamedTuple):
    uid: str
    file: str
    stack: str
    logical_id: str
    type: str
    properties: str  # normalized JSON (see the module docstring)


class KeyRow(NamedTuple):
    """A key by which other templates can name this resource."""

    uid: str
    key: str


class EdgeRow(NamedTuple):
    """A reference from one resource to another, before resolution."""

    from_uid: str
    role: str
    detail: str  # metric name for alarms, else ""
    kind: str  # "queue" or "function": what the target must be
    key: str  # local:, queue:, function: or export: key
    text: str  # the reference as written, for messages


class ExportRow(NamedTuple):
    """``Outputs.*.Export``: the name, and keys for what its value names."""

    file: str
    name: str
    queue_key: str  # the key its value has when read as a queue ("" if none)
    function_key: str  # the key its value has when read as a function ("" if none)


class NoteRow(NamedTuple):
    """A finding one template yields on its own, before any resolution: a resource the audit
    cannot read, a transform it cannot expand, a condition it cannot evaluate (QR900/QR901)."""

    file: str
    stack: str
    resource: str  # logical id ("" for the whole template)
    queue: str  # the queue it concerns, if any
    rule_id: str
    message: str


class NestedRow(NamedTuple):
    """Values a parent stack passes to a nested stack's parameters that are plain values, not
    references (those travel as exports): the child is parsed again with them."""

    child_file: str
    parent_stack: str
    values: str  # JSON object: parameter name -> text


class ResolvedEdge(NamedTuple):
    from_uid: str
    role: str
    detail: str
    to_uid: str


class MemberRow(NamedTuple):
    """One resource in a queue's context, with the role it plays there."""

    queue_uid: str
    member: str
    detail: str
    uid: str


def observed_row(series: SeriesRow) -> ResourceRow:
    """A metric series as the pseudo resource a queue's context carries it in."""
    name = f"{series.account}/{series.region}/{series.namespace}/{series.metric}/{series.name}"
    return ResourceRow(
        f"metric:{name}", "", "", series.metric, OBSERVED, json.dumps(series._asdict())
    )


def coverage_row(coverage: CoverageRow) -> ResourceRow:
    """The metrics input's coverage of an account and region, as a context carries it."""
    uid = f"coverage:{coverage.account}/{coverage.region}"
    return ResourceRow(uid, "", "", "", COVERAGE, json.dumps(coverage._asdict()))


@dataclass
class ParsedTemplate:
    file: FileRow
    resources: list[ResourceRow] = field(default_factory=list)
    keys: list[KeyRow] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)
    exports: list[ExportRow] = field(default_factory=list)
    notes: list[NoteRow] = field(default_factory=list)
    nested: list[NestedRow] = field(default_factory=list)
    # logical id as findings show it -> its ``$suppressions`` entries ("" -> the template's own),
    # for the findings made while parsing (``notes``)
    suppressions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    # logical id as findings show it -> its ``SOURCE`` marker, for the findings of ``notes``
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
