"""Every public parameter, declared once: the kind of value it accepts, its range and its unit.

Each call of the public API (``ResilientQueue(...)``, ``add_lambda_consumer``,
``add_dead_letter_consumer``, ``add_dashboard``, ``QueueResilienceChecks(...)``) passes its arguments to its table before any of them reaches
jsii: a value of the wrong kind is a ``ParameterTypeError`` (a ``TypeError``), a value out of
range a ``Problem`` that the call raises with its other problems as one ``ConfigurationError``.
A table must name exactly the parameters of its call, so no parameter goes unchecked; the
README and docs/api.md tables are rendered from these (and tested against them).

Python's own semantics are stated here rather than borrowed from ``int()`` or ``float()``:
``bool`` is not a number; a float where AWS counts whole units is refused, not rounded, even when
it is integral; NaN and infinities are refused; a string is never a number; a duration where AWS
counts whole seconds must be whole seconds. Unresolved tokens are accepted wherever CDK accepts
them and reported in ``Given.unresolved``, so the caller can warn that they were not judged.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits, naming, policy
from constructs_lib.errors import ConfigurationError, ParameterTypeError, Problem
from constructs_lib.kinds import (
    Choice,
    Dictionary,
    Flag,
    Implements,
    Instance,
    Kind,
    Number,
    Seconds,
    SequenceOf,
    Text,
    Whole,
    kind_of,
)

# --- the parameter and its table ----------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """``low`` to ``high`` (``None``: no upper bound) in ``unit``; FIFO queues may allow less."""

    low: int
    high: int | None
    unit: str = ""
    fifo_high: int | None = None
    why: str = ""

    def bounds(self, fifo: bool) -> tuple[int, int | None]:
        return self.low, self.fifo_high if fifo and self.fifo_high is not None else self.high

    def render(self) -> str:
        """For the docs: ``1-1,000``, ``60-1,209,600 s``, ``at least 1``."""
        unit = f" {self.unit}" if self.unit else ""
        text = (
            f"at least {self.low:,}{unit}"
            if self.high is None
            else f"{self.low:,}-{self.high:,}{unit}"
        )
        if self.fifo_high is not None and self.fifo_high != self.high:
            text += f" (FIFO {self.low:,}-{self.fifo_high:,})"
        return text


@dataclass(frozen=True)
class Param:
    """One parameter of a public call: its kind, whether ``None`` means "not set", its range,
    and the default and rule the docs state."""

    name: str
    kind: Kind
    default: str
    rule: str = ""
    optional: bool = False
    range: Range | None = None
    fix: str = ""
    documented: bool = True

    def accepts(self) -> str:
        """What the messages and the docs say this parameter accepts."""
        return self.kind.accepts + (" or `None`" if self.optional else "")

    def accepts_in_words(self) -> str:
        """``accepts()`` with the range, for messages (no markdown)."""
        text = self.accepts().replace("`", "")
        return f"{text} ({self.range.render()})" if self.range else text

    def range_problem(self, value: int | float, fifo: bool) -> Problem | None:
        if self.range is None:
            return None
        low, high = self.range.bounds(fifo)
        if low <= value and (high is None or value <= high):
            return None
        unit = {"s": " seconds", "": ""}.get(self.range.unit, f" {self.range.unit}")
        if high is None:
            rule = f"must be at least {low}{unit}"
        else:
            rule = f"must be between {low} and {high}{unit}"
            if self.range.fifo_high is not None:
                rule += " for a FIFO queue" if fifo else " for a standard queue"
        if self.range.why:
            rule += f": {self.range.why}"
        return Problem(self.name, value, rule, self.fix)


@dataclass(frozen=True)
class Given:
    """A call's arguments as the checks read them: durations in whole seconds, numbers as
    numbers, ``None`` for "not set" and for unresolved tokens (named in ``unresolved``)."""

    values: Mapping[str, Any]
    problems: list[Problem] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


@dataclass(frozen=True)
class Table:
    """The parameters of one public call, in the order of its signature."""

    call: str
    params: tuple[Param, ...]

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def check_kinds(self, path: Callable[[], str], arguments: Mapping[str, object]) -> None:
        """Raise one ``ParameterTypeError`` naming every argument of the wrong kind."""
        if tuple(arguments) != self.names:
            # A parameter added to a call without its declaration (or the reverse): a bug here.
            raise RuntimeError(f"{self.call} passes {tuple(arguments)}, its table {self.names}")
        problems: list[Problem] = []
        for param in self.params:
            value = arguments[param.name]
            if value is None and param.optional:
                continue
            reason = param.kind.wrong(param.name, value)
            if reason is not None:
                problems.append(
                    Problem(
                        param.name,
                        value,
                        f"{reason[0]}; {self.call} accepts {param.accepts_in_words()}",
                        reason[1],
                    )
                )
        if problems:
            raise ParameterTypeError(path(), problems)

    def read(self, arguments: Mapping[str, object], fifo: bool = False) -> Given:
        """Values in the units AWS counts, and every value outside its range (call after
        ``check_kinds``)."""
        values: dict[str, Any] = {}
        problems: list[Problem] = []
        unresolved: list[str] = []
        for param in self.params:
            value = arguments[param.name]
            if isinstance(value, Duration):
                value, problem = _whole_seconds(param, value)
                if problem is not None:
                    problems.append(problem)
                    value = None
                elif value is None:
                    unresolved.append(param.name)
            elif isinstance(value, float) and isinstance(param.kind, Whole):
                unresolved.append(param.name)  # a float that passed the kind check is a token
                value = None
            elif isinstance(value, float) and not math.isfinite(value):
                problems.append(
                    Problem(
                        param.name,
                        value,
                        "must be a finite number (NaN and infinities are refused)",
                        param.fix or "pass a finite number",
                    )
                )
                value = None
            elif isinstance(value, float) and Token.is_unresolved(value):
                problems.append(
                    Problem(
                        param.name,
                        value,
                        "is an unresolved token, but it must be known at synth (the library "
                        "computes with it)",
                        "pass a plain number",
                    )
                )
                value = None
            elif isinstance(param.kind, Choice) and value not in param.kind.choices:
                problems.append(
                    Problem(
                        param.name,
                        value,
                        f"must be {param.kind.accepts.replace('`', '')}",
                        param.fix,
                    )
                )
            values[param.name] = value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                problem = param.range_problem(value, fifo)
                if problem is not None:
                    problems.append(problem)
        return Given(values, problems, unresolved)

    def render_markdown(self) -> str:
        """The docs' table of this call's parameters."""
        lines = ["| prop | accepts | default | range and rule |", "|---|---|---|---|"]
        for param in self.params:
            if not param.documented:
                continue
            rule = "; ".join(
                part for part in (param.range.render() if param.range else "", param.rule) if part
            )
            lines.append(f"| `{param.name}` | {param.accepts()} | {param.default} | {rule} |")
        return "\n".join(lines)


def _whole_seconds(param: Param, duration: Duration) -> tuple[int | None, Problem | None]:
    seconds = duration.to_seconds(integral=False)
    if isinstance(seconds, int):
        return seconds, None
    if Token.is_unresolved(seconds):
        return None, None
    if seconds.is_integer():
        return int(seconds), None
    return None, Problem(
        param.name,
        duration,
        f"is {seconds:g} s, but AWS counts whole seconds here; fractions are refused, not rounded",
        f"pass {param.name}=Duration.seconds({max(math.ceil(seconds), 1)}) or another whole number of seconds",
    )


@dataclass(frozen=True)
class Pair(Kind):
    """A ``tuple`` of two whole numbers, (minimum, maximum); each may be a token number."""

    units: str
    example: str
    accepts: str = "a `tuple` of two `int` (minimum, maximum)"

    def wrong(self, prop: str, value: object) -> tuple[str, str] | None:
        fix = f"pass {prop}={self.example}"
        if not isinstance(value, tuple):
            return f"is {kind_of(value)}, not a tuple (minimum, maximum)", fix
        if len(value) != 2:
            return f"is a tuple of {len(value)} items, not two (minimum, maximum)", fix
        for index, item in enumerate(value):
            reason = Whole(self.units).wrong(f"{prop}[{index}]", item)
            if reason is not None:
                return f"holds at [{index}] a value that {reason[0]}", fix
        return None


# --- the tables -------------------------------------------------------------------------------

_RETENTION = Range(limits.RETENTION_MIN, limits.RETENTION_MAX, "s")
_SECONDS_FIX = "choose a retention period within SQS's range"

SCOPE = Param(
    "scope",
    Instance(Construct, "constructs.Construct", "stack"),
    "",
    documented=False,
)
CONSTRUCT_ID = Param("construct_id", Text(), "", documented=False)
_ALARM_ACTIONS = SequenceOf(
    Implements(
        cloudwatch.IAlarmAction, "cloudwatch.IAlarmAction", "cloudwatch_actions.SnsAction(topic)"
    ),
    "cloudwatch.IAlarmAction",
)

QUEUE = Table(
    "ResilientQueue",
    (
        SCOPE,
        CONSTRUCT_ID,
        Param(
            "fifo",
            Flag(),
            "inferred from `queue_name` ending `.fifo`, else standard",
            "the DLQ always has the source's type; `False` with a name ending `.fifo` is an error",
            optional=True,
        ),
        Param(
            "queue_name",
            Text(),
            "generated from the construct path",
            f"base name; with `-dlq` and `.fifo` at most {limits.QUEUE_NAME_MAX_LENGTH} "
            "characters of `A-Z a-z 0-9 - _`",
            optional=True,
        ),
        Param(
            "max_receive_count",
            Whole("receives"),
            f"{limits.MAX_RECEIVE_COUNT_DEFAULT}",
            f"below {limits.LAMBDA_MIN_RECEIVE_COUNT} warns once a Lambda consumer is added",
            range=Range(limits.MAX_RECEIVE_COUNT_MIN, limits.MAX_RECEIVE_COUNT_MAX),
            fix="choose how many receives a message gets before it moves to the DLQ, within SQS's range",
        ),
        Param(
            "retention_period",
            Seconds(),
            "4 days (SQS's default)",
            "on a standard queue, shorter than the DLQ's",
            optional=True,
            range=_RETENTION,
            fix=_SECONDS_FIX,
        ),
        Param(
            "dead_letter_retention_period",
            Seconds(),
            "14 days; with an imported `dead_letter_queue`, unknown (no DLQ expiry alarm, a warning)",
            "with an imported `dead_letter_queue`: the retention it has, for the DLQ expiry alarm; "
            "not with a `dead_letter_queue` defined in the app (its own is read)",
            optional=True,
            range=_RETENTION,
            fix=f"{_SECONDS_FIX}; 14 days gives the most time to inspect failures",
        ),
        Param(
            "visibility_timeout",
            Seconds(),
            "derived from the consumers; 30 s without one",
            "below the derived value is an error",
            optional=True,
            range=Range(limits.VISIBILITY_TIMEOUT_MIN, limits.VISIBILITY_TIMEOUT_MAX, "s"),
            fix="remove visibility_timeout to let the library derive it from the consumers",
        ),
        Param(
            "max_message_size",
            Whole("bytes"),
            f"SQS's {limits.MESSAGE_SIZE_DEFAULT:,} bytes (1 MiB), not set in the template",
            "the created DLQ gets the same; a given DLQ may not allow less",
            optional=True,
            range=Range(limits.MESSAGE_SIZE_MIN, limits.MESSAGE_SIZE_MAX, "bytes"),
            fix=f"choose a size from {limits.MESSAGE_SIZE_MIN} to {limits.MESSAGE_SIZE_MAX} bytes "
            "(1 MiB), or leave it unset for SQS's default of 1 MiB",
        ),
        Param(
            "encryption_key",
            Implements(kms.IKey, "kms.IKey", "kms.Key(stack, 'Key')"),
            "none: SSE-SQS on both queues",
            "SSE-KMS on both queues with this one key",
            optional=True,
        ),
        Param(
            "content_based_deduplication",
            Flag(),
            "SQS's (off)",
            "FIFO only; an error on a standard queue",
            optional=True,
        ),
        Param(
            "deduplication_scope",
            Instance(
                sqs.DeduplicationScope,
                "sqs.DeduplicationScope",
                "sqs.DeduplicationScope.MESSAGE_GROUP",
            ),
            "SQS's (`QUEUE`)",
            "FIFO only; an error on a standard queue",
            optional=True,
        ),
        Param(
            "fifo_throughput_limit",
            Instance(
                sqs.FifoThroughputLimit,
                "sqs.FifoThroughputLimit",
                "sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID",
            ),
            "SQS's (`PER_QUEUE`)",
            "FIFO only; an error on a standard queue",
            optional=True,
        ),
        Param(
            "dead_letter_queue",
            Implements(sqs.IQueue, "sqs.IQueue", "sqs.Queue(stack, 'Dlq')"),
            "one is created",
            "an existing queue of the source's type, keeping messages longer than the source; you "
            "own its retention and redrive-allow policy",
            optional=True,
        ),
        Param(
            "alarm_actions",
            _ALARM_ACTIONS,
            "none",
            "applied to every alarm when it fires; empty warns (the alarms notify nobody)",
        ),
        Param(
            "ok_actions",
            _ALARM_ACTIONS,
            "none",
            "applied to every alarm when it recovers",
        ),
        Param(
            "in_flight_alarm_threshold",
            Whole("messages"),
            f"{policy.default_in_flight_threshold(False):,} (a tenth of the "
            f"{limits.IN_FLIGHT_QUOTA_STANDARD:,} in-flight quota), or more when the capped "
            "consumers hold more in flight at full speed",
            "up to the queue's in-flight quota",
            optional=True,
            range=Range(
                1,
                limits.IN_FLIGHT_QUOTA_STANDARD,
                "messages",
                fifo_high=limits.IN_FLIGHT_QUOTA_FIFO,
                why="the in-flight quota, past which consumers stall",
            ),
            fix="leave it unset for a tenth of the in-flight quota, or pick a value in range",
        ),
        Param(
            "removal_policy",
            Instance(RemovalPolicy, "aws_cdk.RemovalPolicy", "RemovalPolicy.RETAIN"),
            "CDK's (destroy)",
            "applied to both queues",
            optional=True,
        ),
    ),
)

_FUNCTION = Implements(
    lambda_.IFunction, "lambda_.IFunction", "lambda_.Function(stack, 'Worker', ...)"
)
_EVENT_SOURCE_METRICS = Param(
    "event_source_metrics",
    Flag(),
    "on",
    "the mapping's `EventCount` metrics and an alarm on `FailedInvokeEventCount`; off with "
    "`report_batch_item_failures` warns",
)
_PROVISIONED_POLLERS = Param(
    "provisioned_pollers",
    Pair("pollers", "(2, 20)"),
    "none: on-demand polling",
    f"provisioned mode (extra cost): minimum {limits.MIN_POLLERS_MIN}-{limits.MIN_POLLERS_MAX}, "
    f"maximum {limits.MAX_POLLERS_MIN}-{limits.MAX_POLLERS_MAX:,}, minimum <= maximum; not with "
    f"`max_concurrency`; each poller makes up to {limits.INVOCATIONS_PER_POLLER} concurrent "
    "invocations",
    optional=True,
)

CONSUMER = Table(
    "add_lambda_consumer",
    (
        Param(
            "function",
            _FUNCTION,
            "required",
            "a function, alias or version; each at most once per queue",
        ),
        Param(
            "batch_size",
            Whole("records"),
            f"{limits.BATCH_SIZE_DEFAULT}",
            f"above {limits.BATCH_SIZE_MAX_WITHOUT_WINDOW} only with a window of "
            f"{limits.BATCHING_WINDOW_MIN_FOR_LARGE_BATCH} s or more",
            range=Range(
                limits.BATCH_SIZE_MIN,
                limits.BATCH_SIZE_MAX_STANDARD,
                fifo_high=limits.BATCH_SIZE_MAX_FIFO,
            ),
            fix="choose a batch size within Lambda's range for this queue type",
        ),
        Param(
            "max_batching_window",
            Seconds(),
            "none",
            "none on FIFO",
            optional=True,
            range=Range(0, limits.BATCHING_WINDOW_MAX, "s"),
            fix=f"choose a window of at most {limits.BATCHING_WINDOW_MAX} seconds",
        ),
        Param(
            "max_concurrency",
            Whole("invocations"),
            "no limit",
            "not with `provisioned_pollers`",
            optional=True,
            range=Range(limits.MAX_CONCURRENCY_MIN, limits.MAX_CONCURRENCY_MAX),
            fix=f"choose a maximum concurrency from {limits.MAX_CONCURRENCY_MIN} to "
            f"{limits.MAX_CONCURRENCY_MAX}, or leave it unset",
        ),
        Param(
            "report_batch_item_failures",
            Flag(),
            "on",
            "only the failed messages of a batch are retried",
        ),
        Param(
            "visibility_timeout_factor",
            Number(),
            f"{limits.VISIBILITY_TIMEOUT_FACTOR}",
            f"below {limits.VISIBILITY_TIMEOUT_FACTOR} warns",
            range=Range(
                1,
                None,
                why="the queue's visibility timeout may not be shorter than the function timeout",
            ),
            fix=f"use the recommended {limits.VISIBILITY_TIMEOUT_FACTOR}",
        ),
        Param(
            "function_timeout",
            Seconds(),
            "read from the function",
            "required for imported functions, aliases and versions",
            optional=True,
            range=Range(limits.FUNCTION_TIMEOUT_MIN, limits.FUNCTION_TIMEOUT_MAX, "s"),
            fix=f"give the function's real timeout (Lambda allows {limits.FUNCTION_TIMEOUT_MIN} "
            f"to {limits.FUNCTION_TIMEOUT_MAX} seconds)",
        ),
        Param("enabled", Flag(), "on", "whether the event source polls"),
        Param(
            "filters",
            SequenceOf(Dictionary(), "dict"),
            "every message",
            "`lambda_.FilterCriteria.filter(...)`; a message matching none is deleted, never "
            "dead-lettered (warns)",
            optional=True,
        ),
        _EVENT_SOURCE_METRICS,
        _PROVISIONED_POLLERS,
    ),
)

_CONSUMER_PARAMS = {param.name: param for param in CONSUMER.params}
# The same settings as a source consumer, on the DLQ; no filters (a message matching none would
# be deleted, and a dead letter is the last copy) and no disabled mapping (then why add it).
DEAD_LETTER_CONSUMER = Table(
    "add_dead_letter_consumer",
    (
        Param(
            "function",
            _FUNCTION,
            "required",
            "a function, alias or version; each at most once per dead-letter queue; not with a "
            "`dead_letter_queue` you gave",
        ),
        *(
            _CONSUMER_PARAMS[name]
            for name in (
                "batch_size",
                "max_batching_window",
                "max_concurrency",
                "report_batch_item_failures",
                "visibility_timeout_factor",
                "function_timeout",
                "event_source_metrics",
                "provisioned_pollers",
            )
        ),
    ),
)

DASHBOARD = Table(
    "add_dashboard",
    (
        Param(
            "dashboard_name",
            Text(),
            "generated by CloudFormation",
            f"at most {limits.DASHBOARD_NAME_MAX_LENGTH} characters of `A-Z a-z 0-9 - _`; "
            "one dashboard per queue",
            optional=True,
        ),
    ),
)

CHECKS = Table(
    "QueueResilienceChecks",
    (
        Param(
            "fail_on",
            Choice(("error", "warning", "info", "never")),
            '`"error"`',
            "findings of this severity or above fail the synth; `never` only reports",
            fix='pass fail_on="error", "warning", "info" or "never"',
        ),
        Param(
            "profile",
            Choice(("all", "recommended")),
            '`"all"`',
            "`all`: every rule at its catalog severity; `recommended`: as `queue-audit`'s "
            "default profile, QR013, QR015 and QR025 as info",
            fix='pass profile="all" or "recommended"',
        ),
    ),
)


@dataclass(frozen=True)
class AnyOf(Kind):
    """A value of any of ``kinds``: an SNS topic, an EventBridge rule or an S3 bucket."""

    kinds: tuple[Instance, ...]
    example: str

    @property
    def accepts(self) -> str:  # type: ignore[override]
        labels = [kind.accepts for kind in self.kinds]
        return ", ".join(labels[:-1]) + " or " + labels[-1]

    def wrong(self, prop: str, value: object) -> tuple[str, str] | None:
        if any(kind.matches(value) for kind in self.kinds):
            return None
        names = " or ".join(kind.label for kind in self.kinds)
        return f"is {kind_of(value)}, not {names}", f"pass {prop}={self.example}"


REDRIVE = Table(
    "grant_redrive",
    (
        Param(
            "grantee",
            Implements(
                iam.IGrantable,
                "iam.IGrantable",
                "iam.Role(stack, 'Operator', assumed_by=iam.AccountRootPrincipal())",
            ),
            "required",
            "a role, user, group or function; gets the actions on the two queues and their keys",
        ),
    ),
)

PRODUCER = Table(
    "add_producer",
    (
        Param(
            "source",
            AnyOf(
                (
                    Implements(sns.ITopic, "sns.ITopic", "sns.Topic(stack, 'Events')"),
                    Implements(events.IRule, "events.IRule", "events.Rule(stack, 'Rule', ...)"),
                    Implements(s3.IBucket, "s3.IBucket", "s3.Bucket(stack, 'Uploads')"),
                ),
                "sns.Topic(stack, 'Events'), an events.Rule or an s3.Bucket",
            ),
            "required",
            "a rule or bucket of the queue's stack; a topic or rule once per queue; not with "
            "the AWS managed key `alias/aws/sqs`",
        ),
        Param(
            "s3_events",
            SequenceOf(
                Instance(s3.EventType, "s3.EventType", "s3.EventType.OBJECT_REMOVED"),
                "s3.EventType",
            ),
            "`s3.EventType.OBJECT_CREATED`",
            "S3 only; not for a FIFO queue",
        ),
        Param(
            "s3_filters",
            SequenceOf(
                Instance(
                    s3.NotificationKeyFilter,
                    "s3.NotificationKeyFilter",
                    "s3.NotificationKeyFilter(prefix='in/')",
                ),
                "s3.NotificationKeyFilter",
            ),
            "every object",
            "S3 only; applied to each of `s3_events`",
        ),
        Param(
            "raw_message_delivery",
            Flag(),
            "off: each message is SNS's JSON envelope",
            "SNS only",
        ),
        Param(
            "message_group_id",
            Text(),
            "none",
            "EventBridge only; required for a FIFO queue, which also needs "
            "`content_based_deduplication=True`",
            optional=True,
        ),
    ),
)

TABLES = (QUEUE, CONSUMER, DEAD_LETTER_CONSUMER, DASHBOARD, CHECKS, REDRIVE, PRODUCER)


# --- the checks of one call, beyond the table: rules between parameters, misuse of the API -----


def check_new_construct(table: Table, arguments: Mapping[str, Any]) -> None:
    """Kinds of every argument, and a free construct id, before the construct joins the tree."""
    scope, construct_id = arguments["scope"], arguments["construct_id"]

    def path() -> str:
        if not isinstance(scope, Construct):
            return f"{table.call} {construct_id!r}"
        return "/".join(part for part in (scope.node.path, str(construct_id)) if part)

    table.check_kinds(path, arguments)
    sibling = scope.node.try_find_child(construct_id)
    if sibling is not None:
        raise ConfigurationError(
            path(),
            [
                Problem(
                    "construct_id",
                    construct_id,
                    f"is already the id of {kind_of(sibling)} in {scope.node.path or 'the app'}; "
                    "construct ids must be unique within their scope",
                    "choose another id (renaming an existing construct replaces its resources)",
                )
            ],
        )


@dataclass(frozen=True)
class QueueGiven(Given):
    fifo: bool = False
    source_retention: int | None = None
    dead_letter_retention: int | None = None


def check_queue(arguments: Mapping[str, Any]) -> QueueGiven:
    """Every problem of a ``ResilientQueue(...)`` call: the table's ranges, then the rules
    between props. Call after ``check_new_construct``."""
    queue_name: str | None = arguments["queue_name"]
    dead_letter_queue: sqs.IQueue | None = arguments["dead_letter_queue"]
    name_known = queue_name is not None and not Token.is_unresolved(queue_name)
    fifo, problems = _resolve_fifo(arguments["fifo"], queue_name if name_known else None)
    given = QUEUE.read(arguments, fifo)
    unresolved = list(given.unresolved)
    if queue_name is not None and not name_known:
        unresolved.insert(0, "queue_name")
    problems = given.problems + problems
    problems += policy.queue_name_problems(
        "queue_name", queue_name if name_known else None, fifo, dead_letter_queue is None
    )
    source_retention = given["retention_period"]
    source_set = arguments["retention_period"] is not None
    if not source_set:
        source_retention = limits.RETENTION_DEFAULT
    retention_problems, dead_letter_retention = _dead_letter_retention(
        fifo,
        source_retention,
        source_set,
        dead_letter_queue,
        arguments["dead_letter_retention_period"],
        given["dead_letter_retention_period"],
    )
    problems += retention_problems
    problems += _message_size_problems(given, problems, dead_letter_queue)
    problems += _expiry_problems(given, problems, source_retention)
    if not fifo:
        problems += [
            Problem(
                prop, arguments[prop], "applies only to FIFO queues", "remove it, or set fifo=True"
            )
            for prop in (
                "content_based_deduplication",
                "deduplication_scope",
                "fifo_throughput_limit",
            )
            if arguments[prop] is not None
        ]
    if dead_letter_queue is not None and dead_letter_queue.fifo != fifo:
        problems.append(
            Problem(
                "dead_letter_queue",
                naming.display(dead_letter_queue),
                f"is a {'FIFO' if dead_letter_queue.fifo else 'standard'} queue, but the source is "
                f"{'FIFO' if fifo else 'standard'}; SQS requires the same type and rejects the deploy",
                "pass a DLQ of the source's type, or leave dead_letter_queue unset to get one",
            )
        )
    return QueueGiven(
        given.values, problems, unresolved, fifo, source_retention, dead_letter_retention
    )


def _dead_letter_retention(
    fifo: bool,
    source: int | None,
    source_set: bool,
    dead_letter_queue: sqs.IQueue | None,
    stated: Duration | None,
    stated_seconds: int | None,
) -> tuple[list[Problem], int | None]:
    """The DLQ's retention in seconds (None: not known) and what is wrong with it.

    A created DLQ keeps ``dead_letter_retention_period`` (14 days unset). A DLQ the app
    defines keeps its own retention, read from it: setting ``dead_letter_retention_period``
    too is an error that names where to set it instead. An imported DLQ's retention cannot be
    read: ``dead_letter_retention_period`` then states it (checked against the source's and
    used for the DLQ expiry alarm), and without it there is no DLQ expiry alarm (a warning)."""
    if dead_letter_queue is None:
        retention = limits.RETENTION_MAX if stated is None else stated_seconds
        return _created_order_problems(fifo, source, source_set, retention), retention
    shown = naming.display(dead_letter_queue)
    own = _own_retention(dead_letter_queue)
    imported = not isinstance(dead_letter_queue.node.default_child, sqs.CfnQueue)
    if not imported:
        cfn = dead_letter_queue.node.default_child
        unset = isinstance(cfn, sqs.CfnQueue) and cfn.message_retention_period is None
        problems = _given_order_problems(
            fifo, source, source_set, own, shown, stated=False, dead_letter_unset=unset
        )
        if stated is not None:
            problems.insert(
                0,
                Problem(
                    "dead_letter_retention_period",
                    stated,
                    f"is read from the dead_letter_queue you gave, {shown}"
                    + (f", which keeps messages {own} s" if own is not None else "")
                    + "; it sets the retention only of a DLQ this construct creates",
                    f"remove dead_letter_retention_period, and set retention_period on {shown} "
                    "to change how long it keeps messages",
                ),
            )
        return problems, own
    if stated is None:
        return [
            Problem(
                "dead_letter_retention_period",
                None,
                f"is not set, and the retention of the imported dead_letter_queue {shown} cannot "
                "be read, so no DLQ expiry alarm is made: dead letters could expire unseen",
                "pass dead_letter_retention_period=Duration.days(N) with the retention that "
                "queue has (the alarm then fires at half the time a dead letter has left)",
                severity="warning",
            )
        ], None
    return (
        _given_order_problems(fifo, source, source_set, stated_seconds, shown, stated=True),
        stated_seconds,
    )


def _source_text(source: int, source_set: bool) -> str:
    return f"{source} s" if source_set else f"{source} s, SQS's default, as it is not set"


def _created_order_problems(
    fifo: bool, source: int | None, source_set: bool, dead_letter: int | None
) -> list[Problem]:
    """A standard source must keep messages for less time than the DLQ created for it; each
    fix offered is one the user can apply (a DLQ already at 14 days cannot be lengthened)."""
    if fifo or source is None or dead_letter is None or source < dead_letter:
        return []
    fixes = [f"shorten retention_period below {dead_letter} s"]
    if dead_letter < limits.RETENTION_MAX:
        fixes.append(
            f"lengthen dead_letter_retention_period above {source} s (at most "
            f"{limits.RETENTION_MAX} s, 14 days)"
        )
    return [
        Problem(
            "retention_period",
            source if source_set else naming.Named(f"None ({_source_text(source, False)})"),
            f"must be shorter than dead_letter_retention_period ({dead_letter} s): a standard "
            "queue keeps a message's original enqueue time when it moves to the DLQ, so the DLQ "
            "would delete it on arrival or soon after",
            " or ".join(fixes),
        )
    ]


def _given_order_problems(
    fifo: bool,
    source: int | None,
    source_set: bool,
    dead_letter: int | None,
    shown: str,
    stated: bool,
    dead_letter_unset: bool = False,
) -> list[Problem]:
    """The same rule for a DLQ the user gave: the fix names that queue's own retention."""
    if fifo or source is None or dead_letter is None or source < dead_letter:
        return []
    where = (
        f"{shown} keeps messages {dead_letter} s (dead_letter_retention_period, as you state it)"
        if stated
        else f"{shown} keeps messages {dead_letter} s"
        + (", SQS's default, as it sets no retention_period" if dead_letter_unset else "")
    )
    longer = f"a retention_period above {source} s (at most {limits.RETENTION_MAX} s, 14 days)"
    fix = (
        f"if that queue keeps messages longer, state it in dead_letter_retention_period; "
        f"otherwise give it {longer}"
        if stated
        else f"give {shown} {longer}, e.g. sqs.Queue(..., retention_period=Duration.days(14))"
    )
    if source > limits.RETENTION_MIN:
        fix += f", or set this queue's retention_period below {dead_letter} s"
    return [
        Problem(
            "dead_letter_queue",
            naming.Named(shown),
            f"keeps messages no longer than this queue's retention_period "
            f"({_source_text(source, source_set)}): {where}. A standard queue keeps a message's "
            "original enqueue time when it moves to the DLQ, so the DLQ would delete it on "
            "arrival or soon after",
            fix,
        )
    ]


def _message_size_problems(
    given: Given, problems: list[Problem], dead_letter_queue: sqs.IQueue | None
) -> list[Problem]:
    """A given DLQ must take every message the source takes (a created one gets the source's
    size). An unset size is SQS's default, 1 MiB, on either queue."""
    if (
        dead_letter_queue is None
        or "max_message_size" in given.unresolved
        or any(p.prop == "max_message_size" for p in problems)
    ):
        return []
    source = given["max_message_size"]
    if source is None:
        source = limits.MESSAGE_SIZE_DEFAULT
    return policy.message_size_problems(source, _own_message_size(dead_letter_queue))


def _own_message_size(queue: sqs.IQueue) -> int | None:
    """The maximum message size of a queue defined in this app; None when it cannot be read."""
    cfn = queue.node.default_child
    if not isinstance(cfn, sqs.CfnQueue):
        return None
    value = cfn.maximum_message_size
    if value is None:
        return limits.MESSAGE_SIZE_DEFAULT
    return None if Token.is_unresolved(value) else int(value)


def _expiry_problems(
    given: Given, problems: list[Problem], source_retention: int | None
) -> list[Problem]:
    """An explicit visibility timeout that lets messages expire before they are dead-lettered.
    Without one the consumers set it: ``add_lambda_consumer`` checks then, and the construct
    checks SQS's default at synth when no consumer came."""
    judged = ("max_receive_count", "retention_period", "visibility_timeout")
    if given["visibility_timeout"] is None or any(p.prop in judged for p in problems):
        return []
    return policy.expiry_before_dead_letter_problems(
        given["max_receive_count"], given["visibility_timeout"], source_retention
    )


def _resolve_fifo(fifo: bool | None, known_name: str | None) -> tuple[bool, list[Problem]]:
    name_says_fifo = known_name is not None and known_name.endswith(limits.FIFO_SUFFIX)
    if fifo is False and name_says_fifo:
        return False, [
            Problem(
                "queue_name",
                known_name,
                "ends with '.fifo', which only FIFO queues may, but fifo=False",
                "remove '.fifo' from the name, or set fifo=True",
            )
        ]
    return (fifo if fifo is not None else name_says_fifo), []


def _own_retention(queue: sqs.IQueue) -> int | None:
    """The retention of a queue defined in this app, when it can be read; None otherwise."""
    cfn = queue.node.default_child
    if not isinstance(cfn, sqs.CfnQueue):
        return None
    value = cfn.message_retention_period
    if value is None:
        return limits.RETENTION_DEFAULT
    return None if Token.is_unresolved(value) else int(value)


def consumer_misuse_problems(
    queue: Any,
    queue_stack: Stack,
    function: lambda_.IFunction,
    consumers: Sequence[Any] | None = None,
    consumed: str | None = None,
) -> list[Problem]:
    """A function twice on one queue, or one that this queue cannot reach: another app, another
    account or region (``queue`` is a ResilientQueue). A function in another stack of the same
    app and environment works: its stack gets the event source mapping and the grants.

    ``consumers`` are those of the queue being consumed (default: the source's) and
    ``consumed`` names that queue in the message (default: the ResilientQueue's path)."""
    function_stack = Stack.of(function)
    if function_stack is not queue_stack:
        if function.node.root is not queue.node.root:
            return [
                Problem(
                    "function",
                    naming.display(function),
                    f"belongs to another CDK app than {queue.node.path}; one synthesis cannot "
                    "connect constructs of two apps",
                    "define the function in the queue's app (Function.from_function_arn imports "
                    "one deployed elsewhere)",
                )
            ]
        if not _same_environment(function_stack, queue_stack):
            return [
                Problem(
                    "function",
                    naming.display(function),
                    f"is in stack {function_stack.stack_name} ({function_stack.account}/"
                    f"{function_stack.region}), another environment than {queue.node.path} "
                    f"({queue_stack.account}/{queue_stack.region}); this construct wires the event "
                    "source and its grants within one account and region",
                    "define the function in a stack of the queue's account and region",
                )
            ]
    for consumer in queue.consumers if consumers is None else consumers:
        if consumer.function is function or consumer.function.node.path == function.node.path:
            return [
                Problem(
                    "function",
                    naming.display(function),
                    f"already consumes {consumed or queue.node.path}; a second event source "
                    "mapping would "
                    "deliver every message to it twice",
                    "add each function once per queue (raise batch_size or max_concurrency for "
                    "more throughput)",
                )
            ]
    return []


def _same_environment(first: Stack, second: Stack) -> bool:
    return all(
        Token.is_unresolved(a) or Token.is_unresolved(b) or a == b
        for a, b in ((first.account, second.account), (first.region, second.region))
    )


def dashboard_problems(queue: Any, dashboard_name: str | None) -> list[Problem]:
    """One dashboard per queue; a name CloudWatch accepts (``queue`` is a ResilientQueue)."""
    problems: list[Problem] = []
    queue_stack = Stack.of(queue)
    problems += [
        Problem(
            "add_dashboard",
            dashboard_name,
            f"would graph {naming.display(consumer.function)} of stack "
            f"{Stack.of(consumer.function).stack_name}, another stack: that stack "
            f"already depends on {queue_stack.stack_name} (its event source mapping reads the "
            "queue), and the graph would make the two depend on each other, which CloudFormation "
            "rejects",
            "add the dashboard before that consumer, or define the function in the queue's stack",
        )
        for consumer in [*queue.consumers, *queue.dead_letter_consumers]
        if Stack.of(consumer.function) is not queue_stack
    ]
    if queue.node.try_find_child("Dashboard") is not None:
        problems.append(
            Problem(
                "add_dashboard",
                dashboard_name,
                f"was already called for {queue.node.path}, which has one dashboard",
                "call add_dashboard once, after adding every consumer",
            )
        )
    if (
        dashboard_name is not None
        and not Token.is_unresolved(dashboard_name)
        and (
            len(dashboard_name) > limits.DASHBOARD_NAME_MAX_LENGTH
            or not limits.DASHBOARD_NAME_PATTERN.match(dashboard_name)
        )
    ):
        problems.append(
            Problem(
                "dashboard_name",
                dashboard_name,
                f"must be 1 to {limits.DASHBOARD_NAME_MAX_LENGTH} characters of "
                "A-Z a-z 0-9 - _ (CloudWatch PutDashboard)",
                "remove the other characters, or leave it unset for a generated name",
            )
        )
    return problems


def unresolved_warning(prop: str) -> tuple[str, str]:
    """The warning id and text for a prop whose value is an unresolved token."""
    if prop == "queue_name":
        return (
            "unresolvedQueueName",
            "queue_name is a token: its length and characters are not checked.",
        )
    return f"unresolved_{prop}", f"{prop} is a token: the rules that use it are not checked."
