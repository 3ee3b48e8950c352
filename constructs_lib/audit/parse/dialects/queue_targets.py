"""Where each CloudFormation resource type names the queues it sends to: its dead-letter
settings, a producer's targets, and the queues an alarm's metrics watch.

Plain reads of a resource's normalized properties, as ``(service or metric, target)`` pairs;
whether a target is a queue, and which one, ``edges.target_key`` decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from constructs_lib import limits
from constructs_lib.audit import model


def lookup(value: Any, *path: str) -> Any:
    """The value at ``path`` in nested mappings; None where a step is missing or no mapping."""
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def alarm_metrics(properties: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(metric name, QueueName dimension value) for each SQS metric the alarm watches."""
    metrics = [properties]
    for query in properties.get("Metrics") or []:
        if isinstance(query, dict) and isinstance(query.get("MetricStat"), dict):
            metric = query["MetricStat"].get("Metric")
            if isinstance(metric, dict):
                metrics.append(metric)
    for metric in metrics:
        if metric.get("Namespace") != limits.SQS_METRIC_NAMESPACE:
            continue
        name = metric.get("MetricName")
        dimensions = metric.get("Dimensions")
        if not isinstance(name, str) or not isinstance(dimensions, list):
            continue
        for dimension in dimensions:
            if isinstance(dimension, dict) and dimension.get("Name") == limits.SQS_METRIC_DIMENSION:
                yield name, dimension.get("Value")


def dead_letter_targets(
    kind: str, name: str, properties: dict[str, Any]
) -> Iterator[tuple[str, Any]]:
    """(service, target) for each setting through which a service sends its failures to a queue
    (SNS topics and other targets are dropped later: only SQS targets make edges)."""
    if kind == model.FUNCTION:
        yield (
            f"Lambda async invocations of {name}",
            lookup(properties, "DeadLetterConfig", "TargetArn"),
        )
    elif kind in (model.EVENT_INVOKE_CONFIG, model.EVENT_SOURCE_MAPPING):
        yield (
            f"Lambda on-failure destination of {name}",
            lookup(properties, "DestinationConfig", "OnFailure", "Destination"),
        )
    elif kind == model.EVENT_RULE:
        targets = properties.get("Targets")
        for target in targets if isinstance(targets, list) else []:
            yield f"EventBridge rule {name}", lookup(target, "DeadLetterConfig", "Arn")
    elif kind == model.SCHEDULE:
        yield (
            f"EventBridge Scheduler schedule {name}",
            lookup(properties, "Target", "DeadLetterConfig", "Arn"),
        )
    elif kind == model.PIPE:
        source = properties.get("SourceParameters")
        for parameters in source.values() if isinstance(source, dict) else []:
            yield f"EventBridge Pipe {name}", lookup(parameters, "DeadLetterConfig", "Arn")
    elif kind == model.SNS_SUBSCRIPTION:
        redrive = properties.get("RedrivePolicy")
        if isinstance(redrive, str):
            try:
                redrive = json.loads(redrive)
            except ValueError:
                redrive = None
        yield f"SNS subscription {name}", lookup(redrive, "deadLetterTargetArn")


def producer_targets(kind: str, properties: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(service, target) for each setting through which a service sends messages to a queue:
    SNS subscriptions with protocol sqs (standalone or inline in a topic), EventBridge rule
    targets, and S3 event notifications (the bucket's own, or CDK's custom resource, which
    takes the S3 API's ``QueueArn``)."""
    if kind == model.SNS_SUBSCRIPTION:
        if _is_sqs_protocol(properties.get("Protocol")):
            yield model.PRODUCER_SNS, properties.get("Endpoint")
    elif kind == model.SNS_TOPIC:
        subscriptions = properties.get("Subscription")
        for entry in subscriptions if isinstance(subscriptions, list) else []:
            if isinstance(entry, dict) and _is_sqs_protocol(entry.get("Protocol")):
                yield model.PRODUCER_SNS, entry.get("Endpoint")
    elif kind == model.EVENT_RULE:
        targets = properties.get("Targets")
        for target in targets if isinstance(targets, list) else []:
            yield model.PRODUCER_EVENTBRIDGE, lookup(target, "Arn")
    elif kind in (model.BUCKET, model.BUCKET_NOTIFICATIONS):
        field = "Queue" if kind == model.BUCKET else "QueueArn"
        configurations = lookup(properties, "NotificationConfiguration", "QueueConfigurations")
        for configuration in configurations if isinstance(configurations, list) else []:
            yield model.PRODUCER_S3, lookup(configuration, field)


def _is_sqs_protocol(protocol: Any) -> bool:
    return isinstance(protocol, str) and protocol.lower() == "sqs"
