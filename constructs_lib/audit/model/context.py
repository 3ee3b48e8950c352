"""A queue's context: everything the rules need to judge one queue, gathered across all input
templates, and how both engines assemble it from the resolved rows (``build_context``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.audit.model.resources import (
    COVERAGE,
    MEMBER_ALARM,
    MEMBER_ALLOW_SOURCE,
    MEMBER_DLQ,
    MEMBER_ESM,
    MEMBER_FEEDER,
    MEMBER_FUNCTION,
    MEMBER_FUNCTION_MAPPING,
    MEMBER_OBSERVED,
    MEMBER_POLICY,
    MEMBER_PRODUCER,
    MEMBER_QUEUE,
    MEMBER_SOURCE,
    OBSERVED,
)
from constructs_lib.audit.model.rows import CoverageRow, ResourceRow, SeriesRow


@dataclass(frozen=True)
class Resource:
    """A resource with its normalized properties, as rules read it."""

    uid: str
    file: str
    stack: str
    logical_id: str
    type: str
    properties: dict[str, Any]

    @classmethod
    def from_row(cls, row: ResourceRow) -> Resource:
        return cls(
            row.uid, row.file, row.stack, row.logical_id, row.type, json.loads(row.properties)
        )

    def prop(self, name: str) -> Any:
        return self.properties.get(name)


@dataclass(frozen=True)
class Consumer:
    """A Lambda event source mapping on the queue, with the function it names (if found)."""

    mapping: Resource
    function: Resource | None


@dataclass(frozen=True)
class AlarmRef:
    alarm: Resource
    metric: str


@dataclass(frozen=True)
class QueueContext:
    """Everything the rules need to judge one queue, gathered across all input templates."""

    queue: Resource
    dead_letter_queues: tuple[Resource, ...] = ()  # what its RedrivePolicy names
    sources: tuple[Resource, ...] = ()  # queues whose RedrivePolicy names this one
    consumers: tuple[Consumer, ...] = ()
    alarms: tuple[AlarmRef, ...] = ()
    policies: tuple[Resource, ...] = ()
    allowed_sources: frozenset[str] = field(default_factory=frozenset)  # resolved uids
    # services that send their failures here: (resource, "Lambda async invocations", ...)
    feeders: tuple[tuple[Resource, str], ...] = ()
    # services that send messages here: (resource, "SNS" | "EventBridge" | "S3")
    producers: tuple[tuple[Resource, str], ...] = ()
    # (function uid, mapping) for every queue-reading mapping, across the fleet, of each
    # function that consumes this queue (this queue's own mappings included)
    function_mappings: tuple[tuple[str, Resource], ...] = ()

    # (member uid, series) for every metric series observed on the queue, its dead-letter queues
    # and its consumer functions; empty without ``--metrics``
    observed: tuple[tuple[str, SeriesRow], ...] = ()
    # the metrics input's coverage of the queue's account and region, None when it has none
    coverage: CoverageRow | None = None

    def series(self, member_uid: str, metric: str) -> SeriesRow | None:
        """The series of ``metric`` observed on a member, None when there is no data point."""
        return next((s for u, s in self.observed if u == member_uid and s.metric == metric), None)

    def mappings_of(self, function_uid: str) -> tuple[Resource, ...]:
        """Every queue-reading mapping of a consumer function, in uid order."""
        return tuple(m for f, m in self.function_mappings if f == function_uid)

    @property
    def is_dead_letter_queue(self) -> bool:
        """A queue some queue's redrive policy or some service's failure setting points at."""
        return bool(self.sources or self.feeders)


def build_context(
    queue_uid: str, members: list[tuple[str, str, ResourceRow]]
) -> QueueContext | None:
    """Assemble a queue's context from ``(member, detail, resource row)`` triples.

    Shared by the Spark job and the single-process engine, so both judge identical contexts.
    """
    by_uid: dict[str, Resource] = {}

    def resource(row: ResourceRow) -> Resource:
        if row.uid not in by_uid:
            by_uid[row.uid] = Resource.from_row(row)
        return by_uid[row.uid]

    queue: Resource | None = None
    dlqs: dict[str, Resource] = {}
    sources: dict[str, Resource] = {}
    mappings: dict[str, Resource] = {}
    functions: dict[str, Resource] = {}  # mapping uid -> function
    alarms: dict[tuple[str, str], AlarmRef] = {}
    policies: dict[str, Resource] = {}
    allowed: set[str] = set()
    feeders: dict[tuple[str, str], tuple[Resource, str]] = {}
    producers: dict[tuple[str, str], tuple[Resource, str]] = {}
    function_mappings: dict[tuple[str, str], Resource] = {}  # (function uid, mapping uid)
    observations: list[tuple[str, ResourceRow]] = []
    for member, detail, row in members:
        if member == MEMBER_QUEUE:
            queue = resource(row)
        elif member == MEMBER_DLQ:
            dlqs[row.uid] = resource(row)
        elif member == MEMBER_SOURCE:
            sources[row.uid] = resource(row)
        elif member == MEMBER_ESM:
            mappings[row.uid] = resource(row)
        elif member == MEMBER_FUNCTION:
            functions[detail] = resource(row)
        elif member == MEMBER_ALARM:
            alarms[(row.uid, detail)] = AlarmRef(resource(row), detail)
        elif member == MEMBER_POLICY:
            policies[row.uid] = resource(row)
        elif member == MEMBER_ALLOW_SOURCE:
            allowed.add(row.uid)
        elif member == MEMBER_FEEDER:
            feeders[(row.uid, detail)] = (resource(row), detail)
        elif member == MEMBER_PRODUCER:
            producers[(row.uid, detail)] = (resource(row), detail)
        elif member == MEMBER_FUNCTION_MAPPING:
            function_mappings[(detail, row.uid)] = resource(row)
        elif member == MEMBER_OBSERVED:
            observations.append((detail, row))
    if queue is None or queue.uid != queue_uid:
        return None
    return QueueContext(
        queue=queue,
        dead_letter_queues=tuple(dlqs[k] for k in sorted(dlqs)),
        sources=tuple(sources[k] for k in sorted(sources)),
        consumers=tuple(Consumer(mappings[k], functions.get(k)) for k in sorted(mappings)),
        alarms=tuple(alarms[k] for k in sorted(alarms)),
        policies=tuple(policies[k] for k in sorted(policies)),
        allowed_sources=frozenset(allowed),
        feeders=tuple(feeders[k] for k in sorted(feeders)),
        producers=tuple(producers[k] for k in sorted(producers)),
        function_mappings=tuple((k[0], function_mappings[k]) for k in sorted(function_mappings)),
        **_observations(observations),
    )


def _observations(rows: list[tuple[str, ResourceRow]]) -> dict[str, Any]:
    observed = sorted(
        (detail, SeriesRow(**json.loads(row.properties)))
        for detail, row in rows
        if row.type == OBSERVED
    )
    coverage = [
        CoverageRow(**json.loads(row.properties)) for _, row in rows if row.type == COVERAGE
    ]
    return {"observed": tuple(observed), "coverage": min(coverage) if coverage else None}
