"""What the audit reads and how it names it: the resource types it audits, the markers it writes
into normalized properties, the roles references play, the members of a queue's context, and the
keys by which one template names another's resources.

Property values inside ``ResourceRow.properties`` are JSON with two markers that
``parse/intrinsics.py`` writes when it normalizes intrinsic functions:

- ``{"$ref": KEY, "$text": ...}``: a reference to another resource, resolved across templates
  by the keys below (``KEY`` is one of the ``*_key`` forms of this module);
- ``{"$unresolved": TEXT}``: a value the audit cannot know (a parameter, a condition, ...).
"""

from __future__ import annotations

import os

# Resource types the audit reads; every other resource is dropped at parse time.
QUEUE = "AWS::SQS::Queue"
QUEUE_POLICY = "AWS::SQS::QueuePolicy"
EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
FUNCTION = "AWS::Lambda::Function"
ALARM = "AWS::CloudWatch::Alarm"
# Read for the metric alarms it may speak for (``parse/dialects/composite_alarms.py``), not audited.
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
# Metadata carries, as [{"id": "QR009", "reason": ...}] (``accept/suppressions.py``).
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
