"""AWS numbers the library relies on, each with the document that states it.

Durations are in seconds. Values marked "recommendation" are advice from AWS, which the library
applies as defaults and warnings; every other value is a hard limit AWS enforces at deploy time.
Nothing here imports CDK or Spark: the constructs, the in-app checks and the audit share it.
"""

from __future__ import annotations

import re
from typing import Final

# --- SQS queue attributes (botocore SQS SetQueueAttributes / CreateQueue) -------------------
VISIBILITY_TIMEOUT_MIN: Final = 0  # botocore SetQueueAttributes VisibilityTimeout
VISIBILITY_TIMEOUT_MAX: Final = 43_200  # 12 h; botocore SetQueueAttributes VisibilityTimeout
VISIBILITY_TIMEOUT_DEFAULT: Final = 30  # CloudFormation AWS::SQS::Queue VisibilityTimeout

RETENTION_MIN: Final = 60  # botocore SetQueueAttributes MessageRetentionPeriod
RETENTION_MAX: Final = 1_209_600  # 14 d; botocore SetQueueAttributes MessageRetentionPeriod
RETENTION_DEFAULT: Final = 345_600  # 4 d; CloudFormation AWS::SQS::Queue MessageRetentionPeriod

# 1 KiB-1 MiB; the default rose from 256 KiB to 1 MiB on 2025-08-04.
# botocore SetQueueAttributes MaximumMessageSize; AWS What's New 2025-08-04.
MESSAGE_SIZE_MIN: Final = 1_024
MESSAGE_SIZE_MAX: Final = 1_048_576
MESSAGE_SIZE_DEFAULT: Final = MESSAGE_SIZE_MAX

# Properties SQS accepts only on FIFO queues (CreateQueue fails on a standard queue).
# botocore CreateQueue attributes; CloudFormation AWS::SQS::Queue.
FIFO_ONLY_QUEUE_PROPERTIES: Final = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
)
# The AWS managed key for SQS. Its key policy admits only principals of the account and cannot be
# changed, so SNS, EventBridge and S3 cannot send to a queue it encrypts.
# SQS developer guide, key management (sqs-key-management).
AWS_MANAGED_SQS_KEY: Final = "alias/aws/sqs"

DELAY_SECONDS_MAX: Final = 900  # botocore SetQueueAttributes DelaySeconds
RECEIVE_WAIT_TIME_MAX: Final = 20  # botocore SetQueueAttributes ReceiveMessageWaitTimeSeconds

MAX_RECEIVE_COUNT_MIN: Final = 1  # SQS developer guide, configuring a DLQ (console)
MAX_RECEIVE_COUNT_MAX: Final = 1_000  # SQS developer guide, configuring a DLQ (console)

REDRIVE_ALLOW_SOURCE_ARNS_MAX: Final = 10  # botocore RedriveAllowPolicy sourceQueueArns

QUEUE_NAME_MAX_LENGTH: Final = 80  # botocore CreateQueue QueueName; includes ".fifo"
FIFO_SUFFIX: Final = ".fifo"  # SQS developer guide, quotas-fifo
QUEUE_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]+$")  # botocore CreateQueue QueueName

# About 120,000 for standard queues and 120,000 for FIFO (older texts say 20,000 for FIFO).
# SQS developer guide, quotas-queues and quotas-fifo.
IN_FLIGHT_QUOTA_STANDARD: Final = 120_000
IN_FLIGHT_QUOTA_FIFO: Final = 120_000

# --- Lambda function and its SQS event source mapping ---------------------------------------
FUNCTION_TIMEOUT_MIN: Final = 1  # Lambda guide, configuration-timeout
FUNCTION_TIMEOUT_MAX: Final = 900  # Lambda guide, configuration-timeout (not Managed Instances)
FUNCTION_TIMEOUT_DEFAULT: Final = 3  # CloudFormation AWS::Lambda::Function Timeout

BATCH_SIZE_MIN: Final = 1  # Lambda guide, services-sqs-parameters
BATCH_SIZE_MAX_STANDARD: Final = 10_000  # Lambda guide, services-sqs-parameters
BATCH_SIZE_MAX_FIFO: Final = 10  # Lambda guide, services-sqs-parameters
BATCH_SIZE_DEFAULT: Final = 10  # CloudFormation AWS::Lambda::EventSourceMapping BatchSize
# A batch above 10 needs MaximumBatchingWindowInSeconds >= 1 (botocore); CDK lets 0 s through.
BATCH_SIZE_MAX_WITHOUT_WINDOW: Final = 10
BATCHING_WINDOW_MIN_FOR_LARGE_BATCH: Final = 1
BATCHING_WINDOW_MAX: Final = 300  # Lambda guide, services-sqs-parameters; none for FIFO

MAX_CONCURRENCY_MIN: Final = 2  # botocore ScalingConfig.MaximumConcurrency
MAX_CONCURRENCY_MAX: Final = 1_000  # botocore ScalingConfig.MaximumConcurrency

# Provisioned mode (ProvisionedPollerConfig); mutually exclusive with MaximumConcurrency.
# Lambda guide, services-sqs-scaling; CloudFormation AWS::Lambda::EventSourceMapping.
MIN_POLLERS_MIN: Final = 2
MIN_POLLERS_MAX: Final = 200
MIN_POLLERS_DEFAULT: Final = 2
MAX_POLLERS_MIN: Final = 2
# 2,000 in the Lambda guide, CloudFormation and aws-cdk-lib (which rejects more); the newest
# Lambda API reference (ProvisionedPollerConfig) and cfn-lint's schema say 10,000 for SQS. The
# library keeps the lower bound, which every deploy path accepts.
MAX_POLLERS_MAX: Final = 2_000
MAX_POLLERS_MAX_LAMBDA_API: Final = 10_000
MAX_POLLERS_DEFAULT: Final = 200
# Each SQS event poller makes up to 10 concurrent invocations (Lambda guide, with-sqs, and
# services-sqs-scaling; AWS News Blog 2025-11-14).
INVOCATIONS_PER_POLLER: Final = 10
# An on-demand SQS event source without ScalingConfig.MaximumConcurrency scales up to 1,250
# concurrent invocations of its function (standard queues; older editions of the guide say
# 1,000; a FIFO source scales to its active message groups). Lambda guide, services-sqs-scaling.
SQS_ON_DEMAND_MAX_CONCURRENCY: Final = 1_250

# Lambda's synchronous invocation payload; a mapping invokes early when a batch reaches it, so
# large messages cut batches short of BatchSize. Lambda guide, quotas (6 MB) and with-sqs.
LAMBDA_SYNC_PAYLOAD_MAX: Final = 6 * 1024 * 1024
# AWS::Lambda::Function RecursiveLoop: "Allow" lets a function that sends to its own queue loop
# forever; the default, "Terminate", stops it. Lambda API PutFunctionRecursionConfig.
RECURSIVE_LOOP_ALLOW: Final = "Allow"
# "You can add up to five layers to a Lambda function." Lambda guide, adding-layers (and quotas).
LAYERS_PER_FUNCTION_MAX: Final = 5

# --- CloudWatch dashboards (botocore CloudWatch PutDashboard DashboardName) ---------------------
DASHBOARD_NAME_MAX_LENGTH: Final = 255
DASHBOARD_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]+$")

# --- Recommendations --------------------------------------------------------------------------
# Visibility timeout >= 6 x function timeout + batching window.
# Lambda guide, services-sqs-configure, "Batch window".
VISIBILITY_TIMEOUT_FACTOR: Final = 6
# maxReceiveCount >= 5 with a Lambda consumer, because throttled receives count.
# Lambda guide, with-sqs / services-sqs-configure.
LAMBDA_MIN_RECEIVE_COUNT: Final = 5
MAX_RECEIVE_COUNT_DEFAULT: Final = LAMBDA_MIN_RECEIVE_COUNT

# --- CloudWatch (SQS developer guide, monitoring with CloudWatch) ------------------------------
SQS_METRIC_NAMESPACE: Final = "AWS/SQS"
SQS_METRIC_DIMENSION: Final = "QueueName"
METRIC_IN_FLIGHT: Final = "ApproximateNumberOfMessagesNotVisible"
METRIC_VISIBLE: Final = "ApproximateNumberOfMessagesVisible"
METRIC_OLDEST_AGE: Final = "ApproximateAgeOfOldestMessage"
# Does not count messages the redrive policy moves into a DLQ: never alarm on it for DLQ arrivals.
# SQS developer guide, "NumberOfMessagesSent and NumberOfMessagesReceived for a DLQ don't match".
METRIC_SENT: Final = "NumberOfMessagesSent"
SQS_METRIC_PERIOD: Final = 60  # SQS publishes one-minute data
# SQS stops publishing every metric of a queue inactive for more than six hours: for an alarm on
# silent producers, no data is silence (SQS developer guide, available CloudWatch metrics).
SQS_INACTIVE_AFTER: Final = 21_600
# Fair queues (standard queues whose producers set MessageGroupId) publish these besides the
# queue-wide metrics; "quiet groups" leave out the groups SQS flags as noisy (SQS developer guide,
# available CloudWatch metrics and sqs-fair-queues; AWS Compute Blog, 2025-07, "Building resilient
# multi-tenant systems with Amazon SQS fair queues").
METRIC_OLDEST_AGE_QUIET: Final = "ApproximateAgeOfOldestMessageInQuietGroups"
METRIC_VISIBLE_QUIET: Final = "ApproximateNumberOfMessagesVisibleInQuietGroups"
METRIC_IN_FLIGHT_QUIET: Final = "ApproximateNumberOfMessagesNotVisibleInQuietGroups"
METRIC_NOISY_GROUPS: Final = "ApproximateNumberOfNoisyGroups"
# CloudWatch PutMetricAlarm Period: 10, 20, 30 or a multiple of 60 (10-30 only for high-resolution
# custom metrics; SQS's are one-minute); Period x EvaluationPeriods at most 604,800 s (7 days), and
# at most 86,400 s for a period under 3,600 s (CloudWatch API reference, PutMetricAlarm).
ALARM_PERIOD_MULTIPLE: Final = 60
ALARM_EVALUATION_RANGE_MAX: Final = 604_800
# Counts receives; on a DLQ with a consumer it sees every arrival, which the depth metric, drained
# by the consumer, does not. SQS developer guide, available CloudWatch metrics.
METRIC_RECEIVED: Final = "NumberOfMessagesReceived"
# On a standard queue, a message received this many times or more is left out of
# ApproximateAgeOfOldestMessage until it is consumed. SQS developer guide, available metrics.
AGE_METRIC_IGNORED_AFTER_RECEIVES: Final = 3

# --- Event source mapping metrics (Lambda guide, monitoring-metrics-types) -------------------
# MetricsConfig {"Metrics": ["EventCount"]} turns them on; published per mapping.
ESM_METRICS_EVENT_COUNT: Final = "EventCount"
ESM_METRIC_NAMESPACE: Final = "AWS/Lambda"
ESM_METRIC_DIMENSION: Final = "EventSourceMappingUUID"
METRIC_ESM_POLLED: Final = "PolledEventCount"
METRIC_ESM_FILTERED_OUT: Final = "FilteredOutEventCount"
METRIC_ESM_INVOKED: Final = "InvokedEventCount"
# Includes the messages a function returns in batchItemFailures.
METRIC_ESM_FAILED: Final = "FailedInvokeEventCount"
METRIC_ESM_DELETED: Final = "DeletedEventCount"

# --- Observed behaviour (``--metrics``; Lambda guide, monitoring-metrics-types) ---------------
# Function metrics, published per function (dimension FunctionName). Duration is in
# milliseconds, per invocation; Throttles counts invocation requests refused for concurrency.
LAMBDA_METRIC_NAMESPACE: Final = "AWS/Lambda"
LAMBDA_METRIC_DIMENSION: Final = "FunctionName"
METRIC_DURATION: Final = "Duration"
METRIC_THROTTLES: Final = "Throttles"
MILLISECONDS_PER_SECOND: Final = 1000
# CloudWatch considers a queue active for up to six hours after it held a message or any action
# accessed it, and SQS publishes metrics only for active queues: a queue without data points
# has been inactive that long. SQS developer guide, "Monitoring Amazon SQS queues using
# CloudWatch".
SQS_METRICS_ACTIVE_HOURS: Final = 6

# --- Redrive out of a DLQ (SQS API permissions reference; StartMessageMoveTask) --------------
# On the DLQ: start, list and cancel move tasks, and what the move does to its messages.
REDRIVE_DEAD_LETTER_ACTIONS: Final = (
    "sqs:StartMessageMoveTask",
    "sqs:ListMessageMoveTasks",
    "sqs:CancelMessageMoveTask",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
)
REDRIVE_DESTINATION_ACTIONS: Final = ("sqs:SendMessage", "sqs:GetQueueAttributes")
# Reading an SSE-KMS queue needs kms:Decrypt; sending to one needs kms:GenerateDataKey too.
# SQS developer guide, key management ("Configure KMS permissions for producers/consumers").
KMS_RECEIVE_ACTIONS: Final = ("kms:Decrypt",)
KMS_SEND_ACTIONS: Final = ("kms:GenerateDataKey", "kms:Decrypt")

# --- Alarm thresholds the library derives (its own choices, reasoned in docs/alarms.md) -------
# In-flight alarm: fire at a tenth of the in-flight quota, long before receives start failing.
IN_FLIGHT_ALARM_QUOTA_FRACTION: Final = 0.1
# Expiry-risk alarms fire when the oldest message has used this share of the time it has left.
EXPIRY_ALARM_RETENTION_FRACTION: Final = 0.5


def in_flight_quota(fifo: bool) -> int:
    """The in-flight message quota for a queue of this type."""
    return IN_FLIGHT_QUOTA_FIFO if fifo else IN_FLIGHT_QUOTA_STANDARD


def max_batch_size(fifo: bool) -> int:
    """The largest batch an SQS event source may take from a queue of this type."""
    return BATCH_SIZE_MAX_FIFO if fifo else BATCH_SIZE_MAX_STANDARD


# --- KMS conditions for SQS (KMS developer guide, condition keys: kms:ViaService) ---------------
# A principal that needs a queue's key only through SQS: KMS requests SQS makes on its behalf
# carry kms:ViaService = sqs.<region>.amazonaws.com. KMS developer guide, conditions-kms.
KMS_VIA_SERVICE_KEY: Final = "kms:ViaService"
SQS_VIA_SERVICE: Final = "sqs.{region}.amazonaws.com"
# What an AWS service that sends to an SSE-KMS queue needs of its key: kms:GenerateDataKey and
# kms:Decrypt, nothing more. SQS developer guide, key management, "Configure KMS permissions for
# AWS services".
KMS_SERVICE_PRODUCER_ACTIONS: Final = ("kms:GenerateDataKey", "kms:Decrypt")
# Source conditions for a service principal (IAM guide, global condition keys; S3 user guide,
# grant-destinations-permissions-to-s3: a bucket's ARN names no account, so aws:SourceAccount
# keeps a bucket of the same name in another account out).
SOURCE_ARN_KEY: Final = "aws:SourceArn"
SOURCE_ACCOUNT_KEY: Final = "aws:SourceAccount"

# --- Large payloads in S3 (ResilientQueue(large_payloads=...)) ---------------------------------
# A lifecycle rule's Expiration Days "must be a non-zero positive integer". S3 API reference,
# LifecycleExpiration (Days).
S3_EXPIRATION_DAYS_MIN: Final = 1
# S3 counts an expiration from the object's creation, rounded UP to the next midnight UTC, so a
# rule of N days keeps an object at least N x 86,400 s. S3 user guide, lifecycle-expire-general-
# considerations ("how Amazon S3 calculates the time").
S3_LIFECYCLE_DAY_SECONDS: Final = 86_400
# Where a payload is written and read: PutObject to write, GetObject to read, DeleteObject to
# remove. Service Authorization Reference, Amazon S3, resource type "object".
S3_PAYLOAD_WRITE_ACTIONS: Final = ("s3:PutObject",)
S3_PAYLOAD_READ_ACTIONS: Final = ("s3:GetObject",)
S3_PAYLOAD_DELETE_ACTIONS: Final = ("s3:DeleteObject",)
# SSE-KMS objects: uploading needs kms:GenerateDataKey, downloading kms:Decrypt (a multipart
# upload needs kms:Decrypt too; payloads are written with one PutObject). S3 user guide,
# UsingKMSEncryption ("Permissions"); mpuoverview ("Multipart upload API and permissions").
KMS_S3_WRITE_ACTIONS: Final = ("kms:GenerateDataKey",)
KMS_S3_READ_ACTIONS: Final = ("kms:Decrypt",)
# KMS requests S3 makes on a principal's behalf carry kms:ViaService = s3.<region>.amazonaws.com.
# KMS developer guide, conditions-kms (kms:ViaService).
S3_VIA_SERVICE: Final = "s3.{region}.amazonaws.com"

# --- Large payloads at run time (AWS's SQS extended client's wire format) ---------------------
# A body above this many bytes, its message attributes counted in, is stored in S3: the Python
# client's fixed default (amazon-sqs-extended-client 1.0.1, DEFAULT_MESSAGE_SIZE_THRESHOLD; the
# Java client 2.x defaults to 1 MiB, SQSExtendedClientConstants DEFAULT_MESSAGE_SIZE_THRESHOLD).
EXTENDED_CLIENT_THRESHOLD: Final = 262_144
# A message stored in S3 carries the size attribute besides its own: SQS takes 10 message
# attributes (SQS developer guide, sqs-message-metadata), so the clients allow 9 of the sender's
# (MAX_ALLOWED_ATTRIBUTES in both).
EXTENDED_CLIENT_ATTRIBUTES_MAX: Final = 9
# The least memory a Lambda function has (Lambda guide, configuration-memory: 128 MB-10,240 MB).
FUNCTION_MEMORY_MIN_MB: Final = 128

# --- A queue's ledger over the metrics window (the audit's --metrics, docs/audit/ledger.md) ----
# Counts of the window, summed; SQS developer guide, available CloudWatch metrics for SQS.
METRIC_DELETED: Final = "NumberOfMessagesDeleted"
METRIC_EMPTY_RECEIVES: Final = "NumberOfEmptyReceives"
METRIC_DELAYED: Final = "ApproximateNumberOfMessagesDelayed"
# USD per request, us-east-1, the first 100 billion requests a month (an empty receive is a
# billed request); the free tier of 1 million requests a month is not subtracted. Amazon SQS
# pricing page, checked 2026-12.
SQS_STANDARD_REQUEST_USD: Final = 0.40 / 1_000_000
SQS_FIFO_REQUEST_USD: Final = 0.50 / 1_000_000
