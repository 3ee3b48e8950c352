"""The table of ``ResilientQueue(...)``: the queue pair, its retention and sizes, its key, its
alarms' actions and thresholds, and the queues it takes over."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib import limits
from constructs_lib.adoption import ExistingQueues
from constructs_lib.params.kinds import (
    Flag,
    Implements,
    Instance,
    Seconds,
    SequenceOf,
    Text,
    Whole,
)
from constructs_lib.params.table import Param, Range, Table
from constructs_lib.policy.alarm_thresholds import default_in_flight_threshold
from constructs_lib.queue.payloads import LargePayloads

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
        Param(
            "large_payloads",
            Instance(LargePayloads, "LargePayloads", "LargePayloads()"),
            "none: bodies stay in the messages (at most the queue's message size)",
            "bodies in S3 under `<queue name>/`, a pointer in the message, as AWS's extended "
            "clients send them; the bucket's grants and the functions' environment follow "
            "(docs/large-payloads.md)",
            optional=True,
        ),
    ),
)
