"""The audit's normalized entities: flat rows a template parses into, and what rules read.

Rows are plain tuples of strings and ints (``NamedTuple``) so that the same values flow through
Spark DataFrames (``spark/schemas.py`` declares their schemas) and through the single-process
engine (``engine.py``); both engines return an ``AuditResult``. Nothing here imports Spark or YAML: the in-app validation plugin uses it in
apps that only have aws-cdk-lib.

Property values inside ``ResourceRow.properties`` are JSON with two markers that
``templates.py`` writes when it normalizes intrinsic functions:

- ``{"$ref": KEY, "$text": ...}``: a reference to another resource, resolved across templates
  by the keys below (``KEY`` is one of the ``*_key`` forms of this module);
- ``{"$unresolved": TEXT}``: a value the audit cannot know (a parameter, a condition, ...).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}

# Resource types the audit reads; every other resource is dropped at parse time.
QUEUE = "AWS::SQS::Queue"
QUEUE_POLICY = "AWS::SQS::QueuePolicy"
EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
FUNCTION = "AWS::Lambda::Function"
ALARM = "AWS::CloudWatch::Alarm"
# Read for the metric alarms it may speak for (``dialects/composite_alarms.py``), not audited.
COMPOSITE_ALARM = "AWS::CloudWatch::CompositeAlarm"
# Resources that send their failures to a queue (a dead-letter queue fed by a service).
EVENT_RULE = "AWS::Events::Rule"
EVENT_INVOKE_CONFIG = "AWS::Lambda::EventInvokeConfig"
PIPE = "AWS::Pipes::Pipe"
SCHEDULE = "AWS::Scheduler::Schedule"
SNS_SUBSCRIPTION = "AWS::SNS::Subscription"
# Resources through which a service sends messages to a queue (producers).
SNS_TOPIC = "AWS::SNS::Topic"  # inline Subscription entries
BUCKET = "AWS::S3::Bucket"  # NotificationConfiguration.QueueConfigurations
# CDK writes a bucket's notifications as this custom resource, in the S3 API's shape.
BUCKET_NOTIFICATIONS = "Custom::S3BucketNotifications"
AUDITED_TYPES = frozenset(
    {
        QUEUE,
        QUEUE_POLICY,
        EVENT_SOURCE_MAPPING,
        FUNCTION,
        ALARM,
        EVENT_RULE,
        EVENT_INVOKE_CONFIG,
        PIPE,
        SCHEDULE,
        SNS_SUBSCRIPTION,
        SNS_TOPIC,
        BUCKET,
        BUCKET_NOTIFICATIONS,
    }
)
# Normalized properties: which top-level properties took their value from a parameter.
PARAMETER_SOURCES = "$parameters"
# Normalized properties: the suppressions of audit rules the resource's (and its template's)
# Metadata carries, as [{"id": "QR009", "reason": ...}] (``suppressions.py``).
SUPPRESSIONS = "$suppressions"
# Normalized pipe properties: what the pipe delivers to ("lambda" or "other").
PIPE_TARGET = "$target"
PIPE_TARGET_LAMBDA = "lambda"
PIPE_TARGET_OTHER = "other"
# Normalized alarm properties: what the template's composite alarms do for it (QR024), as
# {"notified_by": NAME} or {"silent": [NAME, ...], "unread": [WHY, ...]}.
COMPOSITES = "$composites"
# Normalized properties: where the resource is written (``positions.source_marker``).
SOURCE = "$source"

# A deployed resource's ARN (``--deployed``): what findings name it by and what its metrics are
# joined on. Deployed stacks are audited under their stack's ARN as the template name.
PHYSICAL = "$physical"
# Observed behaviour (``--metrics``): a queue's context carries one pseudo resource per metric
# series of its members (type OBSERVED, properties: a ``Series`` as a dict), and one for what the
# metrics input covers in the queue's account and region (type COVERAGE, a ``Coverage``).
OBSERVED = "$Observed"
COVERAGE = "$Coverage"

# Edge roles: how one resource points at another.
ROLE_DLQ = "dlq"  # queue RedrivePolicy.deadLetterTargetArn -> queue
ROLE_ALLOW_SOURCE = "allow_source"  # queue RedriveAllowPolicy.sourceQueueArns[i] -> queue
ROLE_EVENT_SOURCE = "event_source"  # event source mapping EventSourceArn -> queue
ROLE_FUNCTION = "function"  # event source mapping FunctionName -> function
ROLE_ALARM = "alarm"  # alarm dimension QueueName -> queue (detail: metric name)
ROLE_POLICY = "policy"  # queue policy Queues[i] -> queue
ROLE_FEEDS_DLQ = "feeds_dlq"  # a service's dead-letter setting -> queue (detail: the service)
# An SNS subscription, an EventBridge rule target or an S3 notification -> queue (detail: the
# service: one of PRODUCER_SERVICES).
ROLE_PRODUCER = "producer"
PRODUCER_SNS = "SNS"
PRODUCER_EVENTBRIDGE = "EventBridge"
PRODUCER_S3 = "S3"
PRODUCER_SERVICES = (PRODUCER_SNS, PRODUCER_EVENTBRIDGE, PRODUCER_S3)

# Members of a queue context (who stands where around the queue).
MEMBER_QUEUE = "queue"
MEMBER_DLQ = "dlq"
MEMBER_SOURCE = "source"
MEMBER_ESM = "esm"
MEMBER_FUNCTION = "function"  # detail: the uid of the event source mapping that names it
MEMBER_ALARM = "alarm"  # detail: the metric name
MEMBER_POLICY = "policy"
MEMBER_ALLOW_SOURCE = "allow_source"
MEMBER_FEEDER = "feeder"  # detail: the service that sends its failures to this queue
MEMBER_PRODUCER = "producer"  # detail: the service that sends messages to this queue
# Every queue-reading mapping (event source mapping or pipe) of a function that consumes this
# queue, wherever in the fleet it is: detail is the function's uid. A function's reserved
# concurrency must cover all its SQS sources, not only this queue's.
MEMBER_FUNCTION_MAPPING = "function_mapping"
# A metric series observed on a member of the context (detail: the member's uid), or the metrics
# input's coverage of the queue's account and region (detail: "").
MEMBER_OBSERVED = "observed"


def uid(file: str, logical_id: str) -> str:
    """A resource's identity across the whole input: its file and its logical id."""
    return f"{file}#{logical_id}"


# The key of a reference whose value is only known at deployment: no resource carries one.
NEVER_RESOLVES = "unresolved:"


def local_key(resource_uid: str) -> str:
    return f"local:{resource_uid}"


def queue_key(name: str) -> str:
    return f"queue:{name}"


def function_key(name: str) -> str:
    return f"function:{name}"


def export_key(name: str) -> str:
    return f"export:{name}"


# A nested stack's parameters and outputs travel between the parent's and the child's templates
# as exports of these names: the parent "exports" each parameter it passes, the child each output.
NESTED_PARAMETER = "nested-parameter:"
NESTED_OUTPUT = "nested-output:"


def nested_parameter(child_file: str, name: str) -> str:
    return f"{NESTED_PARAMETER}{os.path.normpath(child_file)}#{name}"


def nested_output(child_file: str, name: str) -> str:
    return f"{NESTED_OUTPUT}{os.path.normpath(child_file)}#{name}"


def deployed_location(template: str) -> tuple[str, str]:
    """(account, region) of a deployed stack, whose template name is its stack ARN
    (``arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/ID``); ("", "") for a file."""
    parts = template.split(":", 5)
    if (
        len(parts) == 6
        and parts[:3] == ["arn", "aws", "cloudformation"]
        and parts[5][:6] == "stack/"
    ):
        return parts[4], parts[3]
    return "", ""


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


class CoverageRow(NamedTuple):
    """What the metrics input covers in one account and region: the earliest and latest data
    point of any AWS/SQS series there (QR034 judges a queue without data points only when this
    spans the window)."""

    account: str
    region: str
    first: int
    last: int


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


# How a finding was accepted (SARIF's suppression kinds): by Metadata in the template itself,
# or by a suppressions file beside the audit (``--suppressions``).
IN_SOURCE = "inSource"
EXTERNAL = "external"
# Where a finding stands against a baseline (``--baseline``), in SARIF's words.
BASELINE_NEW = "new"
BASELINE_UNCHANGED = "unchanged"
# In the baseline, with other values in its message (a visibility timeout cut from 30 s to 20 s).
BASELINE_UPDATED = "updated"
BASELINE_ABSENT = "absent"  # in the baseline, no longer found: fixed
STATE_CHANGED = "changed"


def finding_state(suppression: str, baseline: str) -> str:
    """One word for people: "suppressed", "unchanged" (in the baseline), "changed" (in the
    baseline with other values), "new" (not in the baseline), "fixed" (in the baseline, gone
    now) or "open" (no baseline given)."""
    if suppression:
        return "suppressed"
    if baseline == BASELINE_ABSENT:
        return "fixed"
    if baseline == BASELINE_UPDATED:
        return STATE_CHANGED
    return baseline or "open"


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: Severity
    template: str
    stack: str
    resource: str
    queue: str
    message: str
    fix: str
    # "" while the finding counts; IN_SOURCE or EXTERNAL once a suppression accepts it
    suppression: str = ""
    justification: str = ""  # the suppression's reason, and where it was written
    # "" without a baseline; BASELINE_NEW, BASELINE_UNCHANGED or BASELINE_UPDATED with one
    # (BASELINE_ABSENT for a baseline entry no longer found)
    baseline: str = ""
    # Where a deployed resource lives: its stack's account and region (derived from the template
    # name, a stack ARN, when not given) and its ARN; "" for template files.
    account: str = ""
    region: str = ""
    physical: str = ""
    # The template of the queue the finding is about, when it is not the finding's own (a
    # consumer in another stack, judged with the queue it imports); "" when it is the same.
    queue_template: str = ""
    # Where the resource (or the property the rule is about) is written in ``template``, from 1;
    # 0 when not known. Not part of any fingerprint: an unrelated edit moves lines.
    line: int = 0
    column: int = 0
    construct_path: str = ""  # a CDK app's construct path (``aws:cdk:path``), when written

    def __post_init__(self) -> None:
        if not self.account and not self.region:
            account, region = deployed_location(self.template)
            object.__setattr__(self, "account", account)
            object.__setattr__(self, "region", region)

    @property
    def decides(self) -> bool:
        """Whether the finding counts towards the exit status: not suppressed, and not already
        known from the baseline."""
        return not self.suppression and self.baseline in ("", BASELINE_NEW)

    @property
    def state(self) -> str:
        """``finding_state`` of this finding."""
        return finding_state(self.suppression, self.baseline)

    def sort_key(self) -> tuple[str, str, str, str, str, str]:
        return (self.template, self.stack, self.resource, self.rule_id, self.queue, self.message)

    def as_dict(self) -> dict[str, str | int]:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "template": self.template,
            "stack": self.stack,
            "resource": self.resource,
            "queue": self.queue,
            "message": self.message,
            "fix": self.fix,
            "suppression": self.suppression,
            "justification": self.justification,
            "baseline": self.baseline,
            "account": self.account,
            "region": self.region,
            "physical": self.physical,
            "queue_template": self.queue_template,
            "line": self.line,
            "column": self.column,
            "construct_path": self.construct_path,
        }


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


@dataclass
class AuditResult:
    """What an audit run produced: every finding, every file, and how long each stage took.

    A Spark run for a report (``spark.job.run(..., gather=False)``) holds neither in memory: its
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
