"""Write N synthetic CloudFormation templates with known injected faults, and their ground truth.

    python bench/generate_templates.py --count 1000 --out bench/results/corpus-1k

Every template starts from a pipeline that breaks no rule (source queue, DLQ, Lambda consumer
with event source metrics, in-flight, depth and age alarms that notify a topic, TLS-only queue
policy), then gets one to three faults from different groups, each fault with the findings it
must cause, derived from the rule catalog by hand:

- single-template faults for every rule QR001-QR029 (several shapes for some);
- cross-stack pairs: the DLQ in one stack, exported, imported (``Fn::ImportValue``) or named by
  a literal ARN from another stack, with faults that only the pair shows (QR002, QR003, QR005);
- QR900: an import no template exports; QR901: truncated files; QR903: a Serverless resource
  without the SAM transform;
- a fifth of the single templates are YAML with short-form tags (!Ref, !GetAtt, !Sub, ...).

``--cross-stack FRACTION`` chooses the share of queues whose context crosses templates
(0 to 1; 0: no pair at all) instead of a pair every ten templates (about 11 % of the queues).
A pair then starts wherever the crossing queues so far fall below that share, and one pair in
three is a consumer pair: a queue stack without a consumer, and a stack whose function reads a
queue of its own and, through a second mapping named by an import or a literal ARN, the other
stack's source, with faults that only the function's two mappings together show (QR007, QR017,
QR022). Of a DLQ pair's queues both cross; of a consumer pair's four, the two the function
reads. ``ground-truth.json`` then also holds ``queues`` and ``cross_queues``.

``--profile many-findings`` puts two pipelines (logical ids prefixed P0, P1) of six to nine
faults each into every single template instead: about 11 findings per template instead of 1.5,
for fleets whose report, not their parsing, is most of the work.

Templates go to ``OUT/templates/``; ``OUT/ground-truth.json`` lists every expected finding as
{template, rule_id, resource, faults (the injected fault ids)}, with template paths relative to ``OUT/templates``. Deterministic for a given --seed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Template = dict[str, Any]
Expected = set[tuple[str, str]]  # (rule id, logical id)

SOURCE_RETENTION = 345_600  # 4 d, the SQS default
DLQ_RETENTION = 1_209_600  # 14 d, the SQS maximum
FUNCTION_TIMEOUT = 10
VISIBILITY = 60  # 6 x FUNCTION_TIMEOUT + 0 s batching window
TEMPLATES_DIR = "templates"
ALARM_TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:queue-alarms"
MANAGED_KEY = "alias/aws/sqs"


def _alarm(metric: str, queue: str) -> Template:
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmActions": [ALARM_TOPIC_ARN],
            "Namespace": "AWS/SQS",
            "MetricName": metric,
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}],
            "Statistic": "Maximum",
            "Period": 60,
            "EvaluationPeriods": 1,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
        },
    }


def _policy(queues: list[str]) -> Template:
    return {
        "Type": "AWS::SQS::QueuePolicy",
        "Properties": {
            "Queues": [{"Ref": q} for q in queues],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Deny",
                        "Principal": {"AWS": "*"},
                        "Action": "sqs:*",
                        "Resource": "*",
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    }
                ],
            },
        },
    }


def _arn_of(name: str) -> dict[str, str]:
    # The DLQ's allow-list names its source by an ARN built from the source's name: a GetAtt
    # there would make a circular dependency with the source's RedrivePolicy.
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:{name}"}


def healthy(name: str, fifo: bool = False) -> Template:
    suffix = ".fifo" if fifo else ""
    source: dict[str, Any] = {
        "QueueName": f"{name}{suffix}",
        "VisibilityTimeout": VISIBILITY,
        "MessageRetentionPeriod": SOURCE_RETENTION,
        "RedrivePolicy": {
            "deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]},
            "maxReceiveCount": 5,
        },
    }
    dlq: dict[str, Any] = {
        "QueueName": f"{name}-dlq{suffix}",
        "MessageRetentionPeriod": DLQ_RETENTION,
        "RedriveAllowPolicy": {
            "redrivePermission": "byQueue",
            "sourceQueueArns": [_arn_of(f"{name}{suffix}")],
        },
    }
    if fifo:
        source["FifoQueue"] = dlq["FifoQueue"] = True
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            "Source": {"Type": "AWS::SQS::Queue", "Properties": source},
            "Dlq": {"Type": "AWS::SQS::Queue", "Properties": dlq},
            "Policy": _policy(["Source", "Dlq"]),
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "sts:AssumeRole",
                                "Principal": {"Service": "lambda.amazonaws.com"},
                            }
                        ],
                    }
                },
            },
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    "Timeout": FUNCTION_TIMEOUT,
                    "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                    "Code": {"ZipFile": "def handler(event, context):\n    return None\n"},
                },
            },
            "Esm": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "EventSourceArn": {"Fn::GetAtt": ["Source", "Arn"]},
                    "FunctionName": {"Ref": "Fn"},
                    "BatchSize": 10,
                    "FunctionResponseTypes": ["ReportBatchItemFailures"],
                    "MetricsConfig": {"Metrics": ["EventCount"]},
                },
            },
            "InFlight": _alarm("ApproximateNumberOfMessagesNotVisible", "Source"),
            "DlqDepth": _alarm("ApproximateNumberOfMessagesVisible", "Dlq"),
            "SourceAge": _alarm("ApproximateAgeOfOldestMessage", "Source"),
            "DlqAge": _alarm("ApproximateAgeOfOldestMessage", "Dlq"),
        },
    }


def _p(t: Template, logical_id: str) -> dict[str, Any]:
    properties: dict[str, Any] = t["Resources"][logical_id]["Properties"]
    return properties


@dataclass(frozen=True)
class Fault:
    id: str
    group: str  # faults of different groups do not interact; "single" never combines
    fifo: bool
    apply: Callable[[Template], None]
    expected: frozenset[tuple[str, str]]


def _dlq_fifo(t: Template) -> None:
    _p(t, "Dlq").update(FifoQueue=True, QueueName=_p(t, "Dlq")["QueueName"] + ".fifo")


def _dlq_standard(t: Template) -> None:
    _p(t, "Dlq").update(FifoQueue=False, QueueName=_p(t, "Dlq")["QueueName"].removesuffix(".fifo"))


def _sent_alarm(t: Template) -> None:
    t["Resources"]["DlqSent"] = _alarm("NumberOfMessagesSent", "Dlq")


def _drained_dlq(t: Template) -> None:
    """A second function drains the DLQ (its own, so faults on the first do not reach it)."""
    _p(t, "Dlq")["VisibilityTimeout"] = VISIBILITY
    # From the healthy template, not a copy of Fn, which a fault applied before may have changed.
    t["Resources"]["DlqFn"] = healthy("unused")["Resources"]["Fn"]
    t["Resources"]["DlqEsm"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "EventSourceArn": {"Fn::GetAtt": ["Dlq", "Arn"]},
            "FunctionName": {"Ref": "DlqFn"},
        },
    }


def _public_statement(t: Template) -> None:
    _p(t, "Policy")["PolicyDocument"]["Statement"].append(
        {"Effect": "Allow", "Principal": "*", "Action": "sqs:SendMessage", "Resource": "*"}
    )


_SOURCE_ARN = {"Fn::GetAtt": ["Source", "Arn"]}


def _producer(logical_id: str, resource: Template) -> Callable[[Template], None]:
    """The source under the AWS managed key, and a service that sends to it."""

    def apply(t: Template) -> None:
        _p(t, "Source")["KmsMasterKeyId"] = MANAGED_KEY
        t["Resources"][logical_id] = json.loads(json.dumps(resource))
        if resource["Type"] == "AWS::SNS::Subscription":
            t["Resources"]["Topic"] = {"Type": "AWS::SNS::Topic", "Properties": {}}
        if resource["Type"] == "Custom::S3BucketNotifications":
            t["Resources"]["Bucket"] = {"Type": "AWS::S3::Bucket", "Properties": {}}

    return apply


_QUEUE_CONFIGURATIONS = "QueueConfigurations"
PRODUCERS: dict[str, tuple[str, Template]] = {
    "sns": (
        "Subscription",
        {
            "Type": "AWS::SNS::Subscription",
            "Properties": {
                "TopicArn": {"Ref": "Topic"},
                "Protocol": "sqs",
                "Endpoint": _SOURCE_ARN,
            },
        },
    ),
    "eventbridge": (
        "Rule",
        {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "EventPattern": {"source": ["orders.api"]},
                "Targets": [{"Id": "queue", "Arn": _SOURCE_ARN}],
            },
        },
    ),
    "s3": (
        "Bucket",
        {
            "Type": "AWS::S3::Bucket",
            "Properties": {
                "NotificationConfiguration": {
                    _QUEUE_CONFIGURATIONS: [{"Event": "s3:ObjectCreated:*", "Queue": _SOURCE_ARN}]
                }
            },
        },
    ),
    "cdk-s3": (
        "Notifications",
        {
            "Type": "Custom::S3BucketNotifications",
            "Properties": {
                "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:notifications",
                "BucketName": {"Ref": "Bucket"},
                "NotificationConfiguration": {
                    _QUEUE_CONFIGURATIONS: [
                        {"Events": ["s3:ObjectCreated:*"], "QueueArn": _SOURCE_ARN}
                    ]
                },
            },
        },
    ),
}


FAULTS: list[Fault] = [
    Fault(
        "no-dlq",
        "single",
        False,
        lambda t: _p(t, "Source").pop("RedrivePolicy"),
        frozenset({("QR001", "Source"), ("QR001", "Dlq"), ("QR009", "Dlq")}),
    ),
    Fault("fifo-dlq", "dlq", False, _dlq_fifo, frozenset({("QR002", "Source")})),
    Fault("standard-dlq-for-fifo", "single", True, _dlq_standard, frozenset({("QR002", "Source")})),
    Fault(
        "short-dlq-retention",
        "dlq",
        False,
        lambda t: _p(t, "Dlq").update(MessageRetentionPeriod=SOURCE_RETENTION),
        frozenset({("QR003", "Source")}),
    ),
    Fault(
        "default-retentions",
        "dlq",
        False,
        lambda t: [_p(t, q).pop("MessageRetentionPeriod") for q in ("Source", "Dlq")],
        frozenset({("QR003", "Source")}),
    ),
    Fault(
        "no-redrive-allow",
        "allow",
        False,
        lambda t: _p(t, "Dlq").pop("RedriveAllowPolicy"),
        frozenset({("QR004", "Dlq")}),
    ),
    Fault(
        "allow-all",
        "allow",
        False,
        lambda t: _p(t, "Dlq").update(RedriveAllowPolicy={"redrivePermission": "allowAll"}),
        frozenset({("QR004", "Dlq")}),
    ),
    Fault(
        "deny-all",
        "allow",
        False,
        lambda t: _p(t, "Dlq").update(RedriveAllowPolicy={"redrivePermission": "denyAll"}),
        frozenset({("QR005", "Dlq")}),
    ),
    Fault(
        "allow-list-without-source",
        "allow",
        False,
        lambda t: _p(t, "Dlq")["RedriveAllowPolicy"].update(
            sourceQueueArns=["arn:aws:sqs:us-east-1:123456789012:not-in-the-fleet"]
        ),
        # the ARN names a queue no template defines: QR900 says so
        frozenset({("QR005", "Dlq"), ("QR900", "Dlq")}),
    ),
    Fault(
        "visibility-below-timeout",
        "consumer",
        False,
        lambda t: _p(t, "Fn").update(Timeout=120),
        frozenset({("QR006", "Esm")}),
    ),
    Fault(
        "visibility-below-6x",
        "consumer",
        False,
        lambda t: _p(t, "Source").update(VisibilityTimeout=VISIBILITY - 1),
        frozenset({("QR007", "Esm")}),
    ),
    Fault(
        "window-not-counted",
        "consumer",
        False,
        lambda t: _p(t, "Esm").update(MaximumBatchingWindowInSeconds=5),
        frozenset({("QR007", "Esm")}),
    ),
    Fault(
        "few-receives",
        "redrive",
        False,
        lambda t: _p(t, "Source")["RedrivePolicy"].update(maxReceiveCount=4),
        frozenset({("QR008", "Source")}),
    ),
    Fault(
        "no-in-flight-alarm",
        "alarm-source",
        False,
        lambda t: t["Resources"].pop("InFlight"),
        frozenset({("QR009", "Source")}),
    ),
    Fault(
        "no-dlq-alarm",
        "alarm-dlq",
        False,
        lambda t: t["Resources"].pop("DlqDepth"),
        frozenset({("QR010", "Dlq")}),
    ),
    Fault("sent-alarm-on-dlq", "alarm-sent", False, _sent_alarm, frozenset({("QR011", "DlqSent")})),
    Fault(
        "unencrypted",
        "sse",
        False,
        lambda t: _p(t, "Source").update(SqsManagedSseEnabled=False),
        frozenset({("QR012", "Source")}),
    ),
    Fault(
        "no-tls-policy",
        "policy",
        False,
        lambda t: t["Resources"].pop("Policy"),
        frozenset({("QR013", "Source"), ("QR013", "Dlq")}),
    ),
    Fault(
        "large-batch-no-window",
        "consumer",
        False,
        lambda t: _p(t, "Esm").update(BatchSize=100),
        frozenset({("QR014", "Esm")}),
    ),
    Fault(
        "window-too-long",
        "consumer",
        False,
        lambda t: (
            _p(t, "Esm").update(MaximumBatchingWindowInSeconds=301),
            _p(t, "Source").update(VisibilityTimeout=VISIBILITY + 301),
        ),
        frozenset({("QR014", "Esm")}),
    ),
    Fault(
        "concurrency-too-low",
        "scaling",
        False,
        lambda t: _p(t, "Esm").update(ScalingConfig={"MaximumConcurrency": 1}),
        frozenset({("QR014", "Esm")}),
    ),
    Fault(
        "fifo-batch-11",
        "single",
        True,
        lambda t: _p(t, "Esm").update(BatchSize=11),
        frozenset({("QR014", "Esm")}),
    ),
    Fault(
        "fifo-window",
        "single",
        True,
        lambda t: (
            _p(t, "Esm").update(MaximumBatchingWindowInSeconds=1),
            _p(t, "Source").update(VisibilityTimeout=VISIBILITY + 1),
        ),
        frozenset({("QR014", "Esm")}),
    ),
    Fault(
        "no-event-count",
        "esm-metrics",
        False,
        lambda t: _p(t, "Esm").pop("MetricsConfig"),
        frozenset({("QR015", "Esm")}),
    ),
    Fault(
        "pollers-minimum-above-maximum",
        "scaling",
        False,
        lambda t: _p(t, "Esm").update(
            ProvisionedPollerConfig={"MinimumPollers": 20, "MaximumPollers": 10}
        ),
        frozenset({("QR016", "Esm")}),
    ),
    Fault(
        "pollers-with-max-concurrency",
        "scaling",
        False,
        lambda t: _p(t, "Esm").update(
            ScalingConfig={"MaximumConcurrency": 5},
            ProvisionedPollerConfig={"MinimumPollers": 2, "MaximumPollers": 10},
        ),
        frozenset({("QR016", "Esm")}),
    ),
    Fault(
        "reserved-below-max-concurrency",
        "scaling",
        False,
        lambda t: (
            _p(t, "Fn").update(ReservedConcurrentExecutions=5),
            _p(t, "Esm").update(ScalingConfig={"MaximumConcurrency": 10}),
        ),
        frozenset({("QR017", "Fn")}),
    ),
    Fault(
        # 60 s: at most 5 x 60 s needed, and no other fault brings that below 60 s
        "expires-before-dead-letter",
        "dlq",
        False,
        lambda t: _p(t, "Source").update(MessageRetentionPeriod=60),
        frozenset({("QR018", "Source")}),
    ),
    Fault(
        "filter-criteria",
        "filter",
        False,
        lambda t: _p(t, "Esm").update(
            FilterCriteria={"Filters": [{"Pattern": '{"body": {"kind": ["order"]}}'}]}
        ),
        frozenset({("QR019", "Esm")}),
    ),
    Fault("drained-dlq", "dlq-consumer", False, _drained_dlq, frozenset({("QR020", "Dlq")})),
    Fault(
        # small sizes: no batch size another fault sets makes them reach Lambda's payload
        "smaller-dlq-message-size",
        "size",
        False,
        lambda t: (
            _p(t, "Source").update(MaximumMessageSize=2048),
            _p(t, "Dlq").update(MaximumMessageSize=1024),
        ),
        frozenset({("QR021", "Source")}),
    ),
    Fault(
        "batch-above-payload",
        "size",
        False,
        lambda t: _p(t, "Source").update(MaximumMessageSize=1_048_576),
        frozenset({("QR022", "Esm")}),
    ),
    Fault(
        "public-queue-policy",
        "policy",
        False,
        _public_statement,
        frozenset({("QR023", "Source"), ("QR023", "Dlq")}),
    ),
    Fault(
        "silent-in-flight-alarm",
        "alarm-source",
        False,
        lambda t: _p(t, "InFlight").pop("AlarmActions"),
        frozenset({("QR024", "InFlight")}),
    ),
    Fault(
        "dlq-alarm-actions-disabled",
        "alarm-dlq",
        False,
        lambda t: _p(t, "DlqDepth").update(ActionsEnabled=False),
        frozenset({("QR024", "DlqDepth")}),
    ),
    Fault(
        "no-source-age-alarm",
        "alarm-age",
        False,
        lambda t: t["Resources"].pop("SourceAge"),
        frozenset({("QR025", "Source")}),
    ),
    Fault(
        "no-dlq-age-alarm",
        "alarm-age",
        False,
        lambda t: t["Resources"].pop("DlqAge"),
        frozenset({("QR025", "Dlq")}),
    ),
    Fault(
        "starting-position",
        "position",
        False,
        lambda t: _p(t, "Esm").update(StartingPosition="LATEST"),
        frozenset({("QR026", "Esm")}),
    ),
    Fault(
        "fifo-property-on-standard",
        "fifo-props",
        False,
        lambda t: _p(t, "Source").update(ContentBasedDeduplication=True),
        frozenset({("QR027", "Source")}),
    ),
    Fault(
        "suppression-without-reason",
        "suppress",
        False,
        lambda t: t["Resources"]["Source"].update(
            Metadata={"cdk_nag": {"rules_to_suppress": [{"id": "QR009", "reason": "n/a"}]}}
        ),
        frozenset({("QR902", "Source")}),
    ),
    Fault(
        # a SAM partial: Serverless resources without the Transform line (info QR903)
        "serverless-without-transform",
        "sam",
        False,
        lambda t: t["Resources"].update(
            Helper={
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    "InlineCode": "def handler(event, context):\n    return None\n",
                },
            }
        ),
        frozenset({("QR903", "")}),
    ),
    Fault(
        "recursive-loop-allowed",
        "loop",
        False,
        lambda t: _p(t, "Fn").update(RecursiveLoop="Allow"),
        frozenset({("QR028", "Fn")}),
    ),
    *(
        # "sse": the unencrypted fault turns SSE-SQS off, which a KMS key would mask
        Fault(
            f"managed-key-{producer}",
            "sse",
            False,
            _producer(*PRODUCERS[producer]),
            frozenset({("QR029", "Source")}),
        )
        for producer in PRODUCERS
    ),
]


# --- YAML with short forms ---------------------------------------------------------------------


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)  # a JSON string is a valid YAML double-quoted scalar


def _short_form(value: Any) -> str | None:
    if not isinstance(value, dict) or len(value) != 1:
        return None
    ((name, argument),) = value.items()
    if name == "Ref":
        return f"!Ref {argument}"
    if name == "Fn::GetAtt":
        return f"!GetAtt {argument[0]}.{argument[1]}"
    if name in ("Fn::Sub", "Fn::ImportValue") and isinstance(argument, str):
        return f"!{name[4:]} {json.dumps(argument)}"
    return None


def to_yaml(value: Any, indent: int = 0) -> str:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            short = _short_form(item)
            if short is not None:
                lines.append(f"{pad}{key}: {short}")
            elif isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines.append(to_yaml(item, indent + 2))
            elif isinstance(item, str) and "\n" in item:
                lines.append(f"{pad}{key}: |")
                lines += [f"{pad}  {line}" for line in item.splitlines()]
            else:
                lines.append(f"{pad}{key}: {_yaml_scalar(item) if item != {} else '{}'}")
    else:
        for item in value:
            short = _short_form(item)
            if short is not None:
                lines.append(f"{pad}- {short}")
            elif isinstance(item, dict | list) and item:
                nested = to_yaml(item, indent + 2).lstrip()
                lines.append(f"{pad}- {nested}")
            else:
                lines.append(f"{pad}- {_yaml_scalar(item)}")
    return "\n".join(lines)


# --- The corpus --------------------------------------------------------------------------------


@dataclass
class Generated:
    files: dict[str, str]  # relative path -> content
    truth: list[dict[str, str]]
    queues: int = 0  # queues in the templates that parse
    cross_queues: int = 0  # of which in cross-stack pairs


def _relative(index: int, yaml: bool = False) -> str:
    extension = "yaml" if yaml else "template.json"
    return f"{index // 1000:03d}/t{index:06d}.{extension}"


@dataclass(frozen=True)
class Profile:
    """How faulty a single template is: ``pipelines`` pipelines (source, DLQ, consumer, alarms),
    each with a first fault and then ``extras`` (one drawn per pipeline) more of other groups."""

    pipelines: int
    extras: tuple[int, ...]


PROFILES = {
    # The bench corpus: one pipeline, one to three faults, about 1.5 findings per template.
    "bench": Profile(1, (0, 0, 0, 1, 1, 2)),
    # Two pipelines of six to nine faults each (one of every template in five stays as in the
    # bench corpus: cross-stack pairs, broken files): about 11 findings per template, a fleet
    # whose report is ten times the bench corpus's for about twice its bytes.
    "many-findings": Profile(2, (5, 6, 7, 8)),
}


def _pipeline(
    name: str, rng: random.Random, extras: tuple[int, ...]
) -> tuple[Template, Expected, list[Fault]]:
    first = rng.choice(FAULTS)
    chosen = [first]
    if first.group != "single":
        extra = rng.choice(extras)
        for _ in range(extra):
            options = [f for f in FAULTS if f.group not in {"single", *(c.group for c in chosen)}]
            chosen.append(rng.choice(options))
    template = healthy(name, fifo=first.fifo)
    expected: Expected = set()
    for fault in chosen:
        fault.apply(template)
        expected |= fault.expected
    return template, expected, chosen


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every ``Ref`` and ``Fn::GetAtt`` of a logical id in ``names`` renamed (the
    templates name their queues' ARNs by queue name, never by logical id, elsewhere)."""
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and value.get("Ref") in names:
        return {"Ref": names[value["Ref"]]}
    target = value.get("Fn::GetAtt")
    if len(value) == 1 and isinstance(target, list) and target[0] in names:
        return {"Fn::GetAtt": [names[target[0]], *target[1:]]}
    return {key: _renamed(item, names) for key, item in value.items()}


def _single(
    index: int, rng: random.Random, profile: Profile = PROFILES["bench"]
) -> tuple[Template, Expected, bool, str]:
    if profile.pipelines == 1:
        template, expected, chosen = _pipeline(f"q{index:06d}", rng, profile.extras)
        return template, expected, index % 5 == 3, "+".join(f.id for f in chosen)
    # Several pipelines in one template: each one's logical ids get a prefix (P0, P1...).
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {}}
    expected = set()
    labels = []
    for number in range(profile.pipelines):
        part, part_expected, chosen = _pipeline(f"q{index:06d}p{number}", rng, profile.extras)
        names = {logical_id: f"P{number}{logical_id}" for logical_id in part["Resources"]}
        template["Resources"].update(
            {names[k]: _renamed(v, names) for k, v in part["Resources"].items()}
        )
        # A template-level finding (QR903) names no resource: it keeps its empty name.
        expected |= {
            (rule, names.get(logical_id, logical_id)) for rule, logical_id in part_expected
        }
        labels.append("+".join(f.id for f in chosen))
    return template, expected, index % 5 == 3, "|".join(labels)


def _cross_pair(index: int, rng: random.Random) -> list[tuple[str, Template, Expected, str]]:
    """An exporting DLQ stack and a source stack that imports (or names) it."""
    name = f"q{index:06d}"
    base = healthy(name)
    exporter: Template = {
        "Resources": {
            "Dlq": base["Resources"]["Dlq"],
            "DlqDepth": base["Resources"]["DlqDepth"],
            "DlqAge": base["Resources"]["DlqAge"],
            "Policy": _policy(["Dlq"]),
        },
        "Outputs": {
            "DlqArn": {
                "Value": {"Fn::GetAtt": ["Dlq", "Arn"]},
                "Export": {"Name": f"{name}-dlq-arn"},
            }
        },
    }
    importer = healthy(name)
    for logical_id in ("Dlq", "DlqDepth", "DlqAge"):
        importer["Resources"].pop(logical_id)
    importer["Resources"]["Policy"] = _policy(["Source"])
    literal = rng.random() < 0.3
    _p(importer, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = (
        f"arn:aws:sqs:us-east-1:123456789012:{name}-dlq"
        if literal
        else {"Fn::ImportValue": f"{name}-dlq-arn"}
    )
    fault = rng.choice(["retention", "fifo", "deny", "alarm", "importer-sse"])
    exporter_expected: Expected = set()
    importer_expected: Expected = set()
    if fault == "retention":
        _p(exporter, "Dlq")["MessageRetentionPeriod"] = SOURCE_RETENTION - 60
        importer_expected.add(("QR003", "Source"))
    elif fault == "fifo":
        _p(exporter, "Dlq").update(FifoQueue=True, QueueName=f"{name}-dlq.fifo")
        if literal:  # the literal ARN follows the FIFO name
            _p(importer, "Source")["RedrivePolicy"]["deadLetterTargetArn"] += ".fifo"
        importer_expected.add(("QR002", "Source"))
    elif fault == "deny":
        _p(exporter, "Dlq")["RedriveAllowPolicy"] = {"redrivePermission": "denyAll"}
        exporter_expected.add(("QR005", "Dlq"))
    elif fault == "alarm":
        exporter["Resources"].pop("DlqDepth")
        exporter_expected.add(("QR010", "Dlq"))
    else:
        _p(importer, "Source")["SqsManagedSseEnabled"] = False
        importer_expected.add(("QR012", "Source"))
    label = f"cross-{fault}" + ("-literal-arn" if literal else "-import")
    return [
        (_relative(index), exporter, exporter_expected, label),
        (_relative(index + 1), importer, importer_expected, label),
    ]


def _consumer_pair(index: int, rng: random.Random) -> list[tuple[str, Template, Expected, str]]:
    """A queue stack without a consumer of its own, and a consumer stack whose function reads its
    own queue and, through a second mapping, the other stack's source, named by an import or a
    literal ARN: the function's two mappings meet only when both stacks are read."""
    name = f"q{index:06d}"
    queues = healthy(name)
    for logical_id in ("Role", "Fn", "Esm"):
        queues["Resources"].pop(logical_id)
    queues["Outputs"] = {
        "SourceArn": {"Value": dict(_SOURCE_ARN), "Export": {"Name": f"{name}-source-arn"}}
    }
    consumer = healthy(f"q{index + 1:06d}")
    literal = rng.random() < 0.3
    remote = json.loads(json.dumps(consumer["Resources"]["Esm"]))
    remote["Properties"]["EventSourceArn"] = (
        f"arn:aws:sqs:us-east-1:123456789012:{name}"
        if literal
        else {"Fn::ImportValue": f"{name}-source-arn"}
    )
    consumer["Resources"]["RemoteEsm"] = remote
    fault = rng.choice(["reserved", "visibility", "payload"])
    queues_expected: Expected = set()
    consumer_expected: Expected = set()
    if fault == "reserved":
        # Each source's cap fits the reservation; only their sum (20) does not.
        _p(consumer, "Fn")["ReservedConcurrentExecutions"] = 15
        for mapping in ("Esm", "RemoteEsm"):
            _p(consumer, mapping)["ScalingConfig"] = {"MaximumConcurrency": 10}
        consumer_expected.add(("QR017", "Fn"))
    elif fault == "visibility":
        _p(queues, "Source")["VisibilityTimeout"] = VISIBILITY - 1
        consumer_expected.add(("QR007", "RemoteEsm"))
    else:
        _p(queues, "Source")["MaximumMessageSize"] = 1_048_576
        consumer_expected.add(("QR022", "RemoteEsm"))
    label = f"cross-consumer-{fault}" + ("-literal-arn" if literal else "-import")
    return [
        (_relative(index), queues, queues_expected, label),
        (_relative(index + 1), consumer, consumer_expected, label),
    ]


def _missing_import(index: int) -> tuple[Template, Expected]:
    template = healthy(f"q{index:06d}")
    for logical_id in ("Dlq", "DlqDepth", "DlqAge"):
        template["Resources"].pop(logical_id)
    template["Resources"]["Policy"] = _policy(["Source"])
    _p(template, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = {
        "Fn::ImportValue": f"nobody-exports-{index}"
    }
    return template, {("QR900", "Source")}


# The cross-stack pairs the generator picks when asked for a share of crossing queues: a
# consumer pair (its two stacks hold four queues, two of which cross) once in this many.
CONSUMER_PAIR_SHARE = 1 / 3


def _queues(template: Template) -> int:
    return sum(r["Type"] == "AWS::SQS::Queue" for r in template["Resources"].values())


def _special(index: int) -> bool:
    """Slots with a template of their own: a truncated file, an import nobody exports."""
    return index % 40 == 13 or index % 50 == 7


def _pair_here(index: int, count: int, cross_stack: float | None, share: tuple[int, int]) -> bool:
    """Whether a cross-stack pair starts at ``index``: without ``cross_stack``, every tenth slot
    (the bench corpus); with it, whenever the crossing queues so far (``share``: crossing, all)
    fall below that fraction, so the fleet's share never strays from it by more than a pair."""
    if index + 1 >= count:
        return False
    if cross_stack is None:
        return index % 10 == 0
    crossing, queues = share
    return not (_special(index) or _special(index + 1)) and crossing < cross_stack * max(queues, 1)


def generate(
    count: int, seed: int = 7, profile: str = "bench", cross_stack: float | None = None
) -> Generated:
    """``count`` templates; ``cross_stack``, a fraction, asks for that share of the queues in
    cross-stack pairs (0: none) instead of the bench corpus's pair every ten templates."""
    if cross_stack is not None and not 0.0 <= cross_stack <= 1.0:
        raise ValueError(f"cross_stack is a fraction of the queues, not {cross_stack}")
    rng = random.Random(seed)
    generated = Generated({}, [])

    def add(path: str, content: str, expected: Expected, faults: str, queues: int = 0) -> None:
        generated.files[path] = content
        generated.queues += queues
        generated.truth.extend(
            {"template": path, "rule_id": r, "resource": res, "faults": faults}
            for r, res in sorted(expected)
        )

    index = 0
    while index < count:
        if _pair_here(index, count, cross_stack, (generated.cross_queues, generated.queues)):
            consumer = cross_stack is not None and rng.random() < CONSUMER_PAIR_SHARE
            pair = (_consumer_pair if consumer else _cross_pair)(index, rng)
            for path, template, expected, label in pair:
                add(path, json.dumps(template, indent=1), expected, label, _queues(template))
            # A DLQ pair's two queues cross; of a consumer pair's four, the two sources the
            # shared function reads.
            generated.cross_queues += 2
            index += 2
            continue
        if index % 40 == 13:
            whole = json.dumps(healthy(f"q{index:06d}"), indent=1)
            add(_relative(index), whole[: len(whole) // 2], {("QR901", "")}, "truncated")
        elif index % 50 == 7:
            template, expected = _missing_import(index)
            content = json.dumps(template, indent=1)
            add(_relative(index), content, expected, "missing-import", _queues(template))
        else:
            template, expected, yaml, faults = _single(index, rng, PROFILES[profile])
            content = to_yaml(template) + "\n" if yaml else json.dumps(template, indent=1)
            add(_relative(index, yaml), content, expected, faults, _queues(template))
        index += 1
    return generated


def write(
    out: str,
    count: int,
    seed: int = 7,
    profile: str = "bench",
    cross_stack: float | None = None,
) -> Generated:
    generated = generate(count, seed, profile, cross_stack)
    for path, content in generated.files.items():
        full = os.path.join(out, TEMPLATES_DIR, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(content)
    header: dict[str, Any] = {"count": count, "seed": seed, "profile": profile}
    if cross_stack is not None:  # the bench corpus's file stays as it was
        header["cross_stack"] = cross_stack
    with open(os.path.join(out, "ground-truth.json"), "w", encoding="utf-8") as handle:
        json.dump(
            {
                **header,
                "queues": generated.queues,
                "cross_queues": generated.cross_queues,
                "findings": generated.truth,
            }
            if cross_stack is not None
            else {**header, "findings": generated.truth},
            handle,
            indent=1,
        )
    return generated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="bench",
        help="bench: one pipeline and one to three faults per template (default); "
        "many-findings: two pipelines of six to nine faults each (about 11 findings a template)",
    )
    parser.add_argument(
        "--cross-stack",
        type=float,
        metavar="FRACTION",
        help="the share of queues in cross-stack pairs, 0 to 1 (0: none); default: a pair "
        "every ten templates, about 11 %% of the queues",
    )
    args = parser.parse_args()
    generated = write(args.out, args.count, args.seed, args.profile, args.cross_stack)
    print(
        f"{len(generated.files)} templates, {len(generated.truth)} expected findings, "
        f"{generated.cross_queues} of {generated.queues} queues in cross-stack pairs in {args.out}"
    )


if __name__ == "__main__":
    main()
