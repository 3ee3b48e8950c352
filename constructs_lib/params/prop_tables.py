"""Every public parameter, declared once: the kind of value it accepts, its range and its unit.

Each call of the public API (``ResilientQueue(...)``, ``add_lambda_consumer``,
``add_dead_letter_consumer``, ``add_dashboard``, ``grant_redrive``, ``add_producer``,
``QueueResilienceChecks(...)``) passes its arguments to its table here before any of them
reaches jsii (``constructs_lib.params.table`` says how a table checks and reads them). The README
and docs/api.md tables are rendered from these (and tested against them).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import backoff, limits
from constructs_lib.adoption import ExistingQueues
from constructs_lib.params.kinds import (
    AnyOf,
    Choice,
    FilterPattern,
    Flag,
    Implements,
    Instance,
    Number,
    Pair,
    Seconds,
    SequenceOf,
    Text,
    Whole,
)
from constructs_lib.params.table import Param, Range, Table
from constructs_lib.policy.alarm_thresholds import default_in_flight_threshold
from constructs_lib.retry_backoff import RetryBackoff

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
            example="5",
        ),
        Param(
            "retention_period",
            Seconds(),
            "4 days (SQS's default)",
            "on a standard queue, shorter than the DLQ's",
            optional=True,
            range=_RETENTION,
            fix=_SECONDS_FIX,
            example="Duration.days(4)",
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
            example="Duration.days(14)",
        ),
        Param(
            "visibility_timeout",
            Seconds(),
            "derived from the consumers; 30 s without one",
            "below the derived value is an error",
            optional=True,
            range=Range(limits.VISIBILITY_TIMEOUT_MIN, limits.VISIBILITY_TIMEOUT_MAX, "s"),
            fix="remove visibility_timeout to let the library derive it from the consumers, or "
            "give one within SQS's range",
            example="Duration.minutes(3)",
        ),
        Param(
            "max_message_size",
            Whole("bytes"),
            f"SQS's {limits.MESSAGE_SIZE_DEFAULT:,} bytes (1 MiB), not set in the template",
            "the created DLQ gets the same; a given DLQ may not allow less",
            optional=True,
            range=Range(limits.MESSAGE_SIZE_MIN, limits.MESSAGE_SIZE_MAX, "bytes"),
            fix=f"choose a size from {limits.MESSAGE_SIZE_MIN} to {limits.MESSAGE_SIZE_MAX} bytes "
            "(or leave it unset for SQS's default of 1 MiB)",
            example="262144",
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
            "the actions of both tiers (critical and warning) unless `critical_actions` or "
            "`warning_actions` is given; empty warns (the alarms notify nobody)",
        ),
        Param(
            "ok_actions",
            _ALARM_ACTIONS,
            "none",
            "applied to every alarm when it recovers (with `composite_alarm`, to the composite "
            "instead of its members)",
        ),
        Param(
            "critical_actions",
            _ALARM_ACTIONS,
            "`alarm_actions`",
            "the critical alarms' (they page: dead letters, messages about to expire, SNS "
            "delivery failures, a consumer failing every message); empty warns",
            optional=True,
        ),
        Param(
            "warning_actions",
            _ALARM_ACTIONS,
            "`alarm_actions`",
            "the warning alarms' (they file a ticket: in flight near the limit, a consumer "
            "failing messages); empty warns",
            optional=True,
        ),
        Param(
            "composite_alarm",
            Flag(),
            "off",
            "a composite alarm `<queue_name>-critical` over the critical alarms of the queue's "
            "stack carries the critical actions, its members none (one page, not one per "
            "alarm); critical alarms of consumers in other stacks keep their own",
        ),
        Param(
            "in_flight_alarm_threshold",
            Whole("messages"),
            f"{default_in_flight_threshold(False):,} (a tenth of the "
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
            example="12000",
        ),
        Param(
            "removal_policy",
            Instance(RemovalPolicy, "aws_cdk.RemovalPolicy", "RemovalPolicy.RETAIN"),
            "CDK's (destroy)",
            "applied to both queues",
            optional=True,
        ),
        Param(
            "expected_traffic",
            Seconds(),
            "none: no alarm on silent producers",
            "an alarm when no message is sent to the source in this period (missing data "
            "counts as silence); whole minutes",
            optional=True,
            range=Range(
                limits.ALARM_PERIOD_MULTIPLE,
                limits.ALARM_EVALUATION_RANGE_MAX,
                "s",
                why="CloudWatch evaluates an alarm over at most 7 days",
                step=limits.ALARM_PERIOD_MULTIPLE,
            ),
            fix="pass the longest time without a message that is still normal, from "
            "Duration.minutes(1) to Duration.days(7)",
            example="Duration.hours(1)",
        ),
        Param(
            "fair",
            Flag(),
            "off",
            "a fair queue (producers set `MessageGroupId`): the age alarm that pages watches the "
            "quiet groups; standard queues only",
        ),
        Param(
            "existing",
            Instance(ExistingQueues, "ExistingQueues", "ExistingQueues(queue_logical_id='Q')"),
            "none: new queues",
            "deployed queues to take over in place: their logical ids and names are kept, and "
            "any change that would replace a queue warns (docs/migration.md)",
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
            example="10",
        ),
        Param(
            "max_batching_window",
            Seconds(),
            "none",
            "none on FIFO",
            optional=True,
            range=Range(0, limits.BATCHING_WINDOW_MAX, "s"),
            fix=f"choose a window of at most {limits.BATCHING_WINDOW_MAX} seconds (above 0 only on a "
            "standard queue)",
            example="Duration.seconds(1)",
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
            example="10",
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
            fix="use the factor AWS recommends",
            example="6",
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
            example="Duration.seconds(30)",
        ),
        Param("enabled", Flag(), "on", "whether the event source polls"),
        Param(
            "filters",
            SequenceOf(FilterPattern(), "lambda_.FilterCriteria.filter(...)"),
            "every message",
            "`lambda_.FilterCriteria.filter(...)`; a message matching none is deleted, never "
            "dead-lettered (warns)",
            optional=True,
        ),
        _EVENT_SOURCE_METRICS,
        _PROVISIONED_POLLERS,
        Param(
            "retry_backoff",
            Instance(RetryBackoff, "RetryBackoff", "RetryBackoff(base=Duration.seconds(10))"),
            "none: failed messages come back after the visibility timeout",
            "the schedule goes into the function's environment, `constructs_lib.backoff` into a "
            "layer (Python); a message failing every receive must reach the DLQ within the "
            "retention; FIFO warns (a waiting message holds its group)",
            optional=True,
        ),
    ),
)

# The fields of RetryBackoff (constructs_lib.retry_backoff), checked by add_lambda_consumer.
_WAIT = Range(1, backoff.VISIBILITY_MAX, "s")
RETRY_BACKOFF = Table(
    "RetryBackoff",
    (
        Param(
            "base",
            Seconds(),
            f"{backoff.BASE_DEFAULT} s",
            "the wait after the first failed receive",
            range=_WAIT,
            fix="choose a first wait within ChangeMessageVisibility's 0-12 hours",
            example="Duration.seconds(10)",
        ),
        Param(
            "factor",
            Number(),
            f"{backoff.FACTOR_DEFAULT:g}",
            "each wait is the previous one x factor (1: a constant wait)",
            range=Range(1, 10),
            fix="choose a growth factor from 1 to 10 (2 doubles each wait)",
            example="2",
        ),
        Param(
            "cap",
            Seconds(),
            f"{backoff.CAP_DEFAULT // 60} minutes",
            "the longest wait; at least `base`",
            range=_WAIT,
            fix="choose a longest wait within ChangeMessageVisibility's 0-12 hours",
            example="Duration.minutes(15)",
        ),
        Param(
            "jitter",
            Number(),
            f"{backoff.JITTER_DEFAULT:g}",
            "the fraction of each wait drawn at random (0: none; 1: from 0 to the wait)",
            range=Range(0, 1),
            fix="choose a fraction from 0 to 1 (0.5 spreads retries without halving them)",
            example="0.5",
        ),
        Param(
            "layer",
            Flag(),
            "on",
            "the layer holding `constructs_lib.backoff` on a Python function of the app; off "
            "when the function bundles the package",
        ),
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

TABLES = (
    QUEUE,
    CONSUMER,
    RETRY_BACKOFF,
    DEAD_LETTER_CONSUMER,
    DASHBOARD,
    CHECKS,
    REDRIVE,
    PRODUCER,
)
