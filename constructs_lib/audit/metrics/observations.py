"""Observed metrics joined to the template graph: which series belong in which queue's context.

A series names its resource by account, region and the one dimension CloudWatch publishes it
by (``QueueName`` in AWS/SQS, ``FunctionName`` in AWS/Lambda); a deployed resource carries its
ARN (``model.PHYSICAL``), which holds the same three. A queue's context receives the series of
the queue itself, of its dead-letter queues (its ledger's, ``ledger.py``) and of its consumer
functions (the rules of ``rules/behaviour.py`` read the queue's and the functions'), and the
metrics input's coverage of the queue's account and region. A resource known
only from a template file has no ARN and gets no series: its queue is judged without metrics.

Both engines call ``for_group``: the local one over dictionaries, the Spark one on the
executors, with the aggregated series broadcast (one row per series, not per data point).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from constructs_lib.audit import model
from constructs_lib.audit.model import CoverageRow, ResourceRow, SeriesRow

if TYPE_CHECKING:  # pyarrow, which reading metrics needs, is an extra
    from constructs_lib.audit.metrics.aggregate import MetricsInput

SQS_NAMESPACE = "AWS/SQS"
LAMBDA_NAMESPACE = "AWS/Lambda"
# Members whose series a context receives: the queue, its dead-letter queues (what the queue's
# ledger counts as dead-lettered, ``ledger.py``) and its consumer functions.
OBSERVED_MEMBERS = frozenset({model.MEMBER_QUEUE, model.MEMBER_DLQ, model.MEMBER_FUNCTION})

# (account, region, namespace, dimension value)
SeriesKey = tuple[str, str, str, str]


def arn_key(arn: str) -> SeriesKey | None:
    """The series key of a queue's or a function's ARN; None for anything else.

    ``arn:aws:sqs:REGION:ACCOUNT:NAME`` and ``arn:aws:lambda:REGION:ACCOUNT:function:NAME``
    (a qualified function ARN, ``...:function:NAME:ALIAS``, names the same function's metrics
    by ``FunctionName`` only together with ``Resource``, which the series do not carry)."""
    parts = arn.split(":")
    if len(parts) == 6 and parts[:3] == ["arn", "aws", "sqs"] and parts[5]:
        return parts[4], parts[3], SQS_NAMESPACE, parts[5]
    if len(parts) == 7 and parts[:3] == ["arn", "aws", "lambda"] and parts[5] == "function":
        return parts[4], parts[3], LAMBDA_NAMESPACE, parts[6]
    return None


def resource_key(row: ResourceRow) -> SeriesKey | None:
    """The series key of a deployed queue or function; None for a resource without an ARN."""
    if row.type not in (model.QUEUE, model.FUNCTION) or model.PHYSICAL not in row.properties:
        return None
    physical = json.loads(row.properties).get(model.PHYSICAL)
    return arn_key(physical) if isinstance(physical, str) else None


@dataclass
class Metrics:
    """The aggregated metrics input, indexed for the join; what it covers, for the summary."""

    series: dict[SeriesKey, list[SeriesRow]] = field(default_factory=dict)
    coverage: dict[tuple[str, str], CoverageRow] = field(default_factory=dict)
    # what reading it found: objects, data points, problems, the window (for the summary)
    read: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        series: Iterable[SeriesRow],
        coverage: Iterable[CoverageRow],
        read: dict[str, Any] | None = None,
    ) -> Metrics:
        by_key: dict[SeriesKey, list[SeriesRow]] = defaultdict(list)
        for row in series:
            by_key[(row.account, row.region, row.namespace, row.name)].append(row)
        return cls(
            {k: sorted(v) for k, v in by_key.items()},
            {(c.account, c.region): c for c in coverage},
            dict(read or {}),
        )

    def covered(self) -> list[str]:
        """The accounts and regions the input covers, as ``ACCOUNT/REGION``."""
        return sorted(f"{account}/{region}" for account, region in self.coverage)


def for_group(
    metrics: Metrics, group: Sequence[tuple[str, str, ResourceRow]]
) -> list[tuple[str, str, ResourceRow]]:
    """The observed members to add to one queue's context (``(member, detail, row)`` triples,
    as ``model.build_context`` reads them): each series of the queue, of its dead-letter queues
    and of its consumer functions, and the coverage of the queue's account and region."""
    added: list[tuple[str, str, ResourceRow]] = []
    for member, _detail, row in group:
        if member not in OBSERVED_MEMBERS:
            continue
        key = resource_key(row)
        if key is None:
            continue
        added += [
            (model.MEMBER_OBSERVED, row.uid, model.observed_row(s))
            for s in metrics.series.get(key, [])
        ]
        if member == model.MEMBER_QUEUE and (key[0], key[1]) in metrics.coverage:
            coverage = metrics.coverage[(key[0], key[1])]
            added.append((model.MEMBER_OBSERVED, "", model.coverage_row(coverage)))
    return added


def of_input(read: MetricsInput) -> Metrics:
    """The aggregated ``--metrics`` input (either engine's), indexed for the join, with what
    reading it found for the summary: the window, what was read, and every object not read
    whole with the reason."""
    return Metrics.of(
        read.series,
        read.coverage,
        {
            "location": read.location,
            "window_days": read.window_days,
            "window_start": read.window_start,
            "window_end": read.window_end,
            "objects_read": read.objects_read,
            "objects_skipped": read.objects_skipped,
            "data_points": read.data_points,
            "problems": len(read.problems),
            "problem_objects": [{"object": o, "reason": r} for o, r in read.problems],
        },
    )


def observed(metrics: Metrics, row: ResourceRow) -> bool:
    """Whether the metrics input holds a series of this resource: its queue is "judged with
    metrics" in the summary."""
    key = resource_key(row)
    return key is not None and key in metrics.series


def summary(metrics: Metrics, with_metrics: int, queues: int) -> dict[str, Any]:
    """What the summary says of the metrics input: the queues judged with and without their own
    series, the accounts and regions it covers, and what was read (``Metrics.read``)."""
    return {
        "queues_with_metrics": with_metrics,
        "queues_without_metrics": queues - with_metrics,
        "covered": metrics.covered(),
        **metrics.read,
    }
