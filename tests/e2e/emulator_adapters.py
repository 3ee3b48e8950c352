"""Test-harness adapters: CloudFormation resource types the emulator lacks, filled in the emulator,
and one thread-safety fix to its SQS queues (``serialize_queue_updates``).

Every adapter the end-to-end tests need lives in this one module. None changes what the product
synthesizes: the example app and the test app are deployed exactly as built, and an adapter only
teaches the emulator's CloudFormation to create a resource type that its own service backend
already models (through the same backend call the service's API uses).

The moto server runs as a separate process, so the adapters are registered inside it:
``emulator_server.py`` imports this module, calls :func:`register`, then runs moto's server.
The pytest process never starts an in-process emulator, so importing this module there (for its
constants) changes nothing the tests use.

Each adapter names the emulator version it was written for (``ADAPTERS``). ``test_adapters.py``
fails when a newer emulator supports a type natively (then delete its adapter) and shows that the
example app cannot be deployed without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from moto.cloudformation import parsing
from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
from moto.cloudwatch.models import (
    Alarm,
    CloudWatchBackend,
    Dimension,
    Metric,
    MetricDataQuery,
    MetricStat,
    cloudwatch_backends,
)
from moto.core.common_models import CloudFormationModel
from moto.sns.models import SNSBackend, sns_backends
from moto.sqs.exceptions import QueueDoesNotExist
from moto.sqs.models import Queue, SQSBackend, sqs_backends

# The emulator release every adapter here was written against (moto's CloudFormation parsing,
# moto/cloudformation/parsing.py: types are found through CloudFormationModel.__subclasses__()).
WRITTEN_FOR_MOTO = "5.2.5"


@dataclass(frozen=True)
class AdapterInfo:
    resource_type: str
    written_for: str
    gap: str


class CloudWatchAlarmResource(CloudFormationModel):
    """``AWS::CloudWatch::Alarm``: a metric alarm in the emulator's CloudWatch backend.

    The alarm is the very object ``PutMetricAlarm`` makes (``CloudWatchBackend.put_metric_alarm``),
    so DescribeAlarms, SetAlarmState and DeleteAlarms see it. ``Ref`` gives the alarm name and
    ``Fn::GetAtt Arn`` its ARN, as CloudFormation documents. A metric-math alarm's ``Metrics``
    become the backend's metric data queries exactly as moto's PutMetricAlarm handler builds
    them (moto/cloudwatch/responses.py), so DescribeAlarms returns them; a query's
    ``AccountId`` is not adapted (a template with one fails the deploy loudly).
    """

    def __init__(self, alarm: Alarm) -> None:
        self.alarm = alarm

    @staticmethod
    def cloudformation_name_type() -> str:
        return "AlarmName"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudWatch::Alarm"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    @property
    def physical_resource_id(self) -> str:
        name: str = self.alarm.name
        return name

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name == "Arn":
            arn: str = self.alarm.alarm_arn
            return arn
        raise UnformattedGetAttTemplateException()

    def is_created(self) -> bool:
        return True

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> CloudWatchAlarmResource:
        props = cloudformation_json["Properties"]
        backend: CloudWatchBackend = cloudwatch_backends[account_id][region_name]
        datapoints = props.get("DatapointsToAlarm")
        alarm = backend.put_metric_alarm(
            name=resource_name,
            namespace=props.get("Namespace"),
            metric_name=props.get("MetricName"),
            metric_data_queries=_metric_data_queries(props.get("Metrics")),
            comparison_operator=props["ComparisonOperator"],
            evaluation_periods=int(props["EvaluationPeriods"]),
            period=int(props["Period"]) if "Period" in props else None,
            threshold=float(props["Threshold"]),
            statistic=props.get("Statistic"),
            extended_statistic=props.get("ExtendedStatistic"),
            description=props.get("AlarmDescription"),
            dimensions=props.get("Dimensions", []),
            alarm_actions=props.get("AlarmActions", []),
            ok_actions=props.get("OKActions", []),
            insufficient_data_actions=props.get("InsufficientDataActions", []),
            datapoints_to_alarm=int(datapoints) if datapoints is not None else None,
            unit=props.get("Unit"),
            actions_enabled=_as_bool(props.get("ActionsEnabled", True)),
            treat_missing_data=props.get("TreatMissingData"),
            evaluate_low_sample_count_percentile=props.get("EvaluateLowSampleCountPercentile"),
            tags=props.get("Tags"),
        )
        return cls(alarm)

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: CloudWatchAlarmResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> CloudWatchAlarmResource:
        cls.delete_from_cloudformation_json(
            original_resource.physical_resource_id, cloudformation_json, account_id, region_name
        )
        return cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )

    @classmethod
    def delete_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> None:
        backend: CloudWatchBackend = cloudwatch_backends[account_id][region_name]
        backend.delete_alarms([resource_name])


def _metric_data_queries(metrics: list[dict[str, Any]] | None) -> list[MetricDataQuery] | None:
    """A metric-math alarm's ``Metrics`` as the backend's queries, built as moto's
    PutMetricAlarm handler builds them from the API's ``Metrics``."""
    if not metrics:
        return None
    queries = []
    for metric in metrics:
        if "AccountId" in metric:
            raise NotImplementedError("cross-account metric queries are not adapted")
        stat = metric.get("MetricStat")
        metric_stat = None
        if stat is not None:
            described = stat["Metric"]
            metric_stat = MetricStat(
                metric=Metric(
                    metric_name=described["MetricName"],
                    namespace=described["Namespace"],
                    dimensions=[
                        Dimension(name=d["Name"], value=d["Value"])
                        for d in described.get("Dimensions", [])
                    ],
                ),
                period=stat.get("Period"),
                stat=stat.get("Stat"),
                unit=stat.get("Unit"),
            )
        queries.append(
            MetricDataQuery(
                query_id=metric["Id"],
                label=metric.get("Label"),
                period=metric.get("Period"),
                return_data=metric.get("ReturnData"),
                expression=metric.get("Expression"),
                metric_stat=metric_stat,
            )
        )
    return queries


# CloudFormationModel named again: moto finds its models among that class's direct subclasses.
class CloudWatchCompositeAlarmResource(CloudWatchAlarmResource, CloudFormationModel):
    """``AWS::CloudWatch::CompositeAlarm``: a composite alarm in the emulator's CloudWatch backend
    (the metric alarm's adapter, but for how it is made).

    The emulator models a composite alarm as an alarm with a rule (``Alarm.rule``, which
    DescribeAlarms lists under ``CompositeAlarms``), made by the backend call its PutMetricAlarm
    handler makes with an ``AlarmRule`` (moto/cloudwatch/responses.py: "re-use this method for
    composite alarms"); moto 5.2.5 has no PutCompositeAlarm handler of its own. The rule is
    stored, not evaluated: the emulator never changes the composite's state. ``Ref`` gives the
    alarm name and ``Fn::GetAtt Arn`` its ARN, as CloudFormation documents. The actions
    suppressor properties are not adapted: a template with one fails the deploy loudly.
    """

    NOT_ADAPTED = (
        "ActionsSuppressor",
        "ActionsSuppressorExtensionPeriod",
        "ActionsSuppressorWaitPeriod",
    )

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudWatch::CompositeAlarm"

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> CloudWatchCompositeAlarmResource:
        props = cloudformation_json["Properties"]
        unadapted = [p for p in cls.NOT_ADAPTED if p in props]
        if unadapted:
            raise NotImplementedError(f"composite alarm properties not adapted: {unadapted}")
        backend: CloudWatchBackend = cloudwatch_backends[account_id][region_name]
        # The arguments moto's PutMetricAlarm handler passes for a request with an AlarmRule
        # (every metric parameter absent).
        alarm = backend.put_metric_alarm(
            name=resource_name,
            namespace=None,
            metric_name=None,
            comparison_operator=None,
            evaluation_periods=None,
            period=None,
            threshold=None,
            statistic=None,
            description=props.get("AlarmDescription"),
            dimensions=[],
            alarm_actions=props.get("AlarmActions", []),
            ok_actions=props.get("OKActions", []),
            insufficient_data_actions=props.get("InsufficientDataActions", []),
            actions_enabled=_as_bool(props.get("ActionsEnabled", True)),
            rule=props["AlarmRule"],
            tags=props.get("Tags"),
        )
        return cls(alarm)


class SqsQueuePolicyResource(CloudFormationModel):
    """``AWS::SQS::QueuePolicy``: the policy document set on each listed queue.

    Set through ``SQSBackend.set_queue_attributes`` with the ``Policy`` attribute, the backend
    call ``SetQueueAttributes`` makes, so GetQueueAttributes returns it. Deleting the resource
    resets each queue that still exists to the emulator's empty default policy (stack deletion
    may remove a queue first).
    """

    def __init__(
        self, name: str, queue_names: list[str], account_id: str, region_name: str
    ) -> None:
        self.name = name
        self.queue_names = queue_names
        self.account_id = account_id
        self.region_name = region_name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""  # the type has no name property

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SQS::QueuePolicy"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False  # CloudFormation documents no Fn::GetAtt attribute for it

    @property
    def physical_resource_id(self) -> str:
        return self.name

    def is_created(self) -> bool:
        return True

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> SqsQueuePolicyResource:
        props = cloudformation_json["Properties"]
        backend: SQSBackend = sqs_backends[account_id][region_name]
        # Ref of a queue is its URL; the backend addresses queues by name.
        names = [str(url).rstrip("/").rsplit("/", 1)[-1] for url in props["Queues"]]
        document = props["PolicyDocument"]
        policy = document if isinstance(document, str) else json.dumps(document)
        for name in names:
            backend.set_queue_attributes(name, {"Policy": policy})
        return cls(resource_name, names, account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: SqsQueuePolicyResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> SqsQueuePolicyResource:
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(
            original_resource.name, cloudformation_json, account_id, region_name
        )

    @classmethod
    def delete_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> None:
        raise NotImplementedError("deleted through delete(), which knows the queues")

    def delete(self, account_id: str, region_name: str) -> None:
        backend: SQSBackend = sqs_backends[self.account_id][self.region_name]
        for name in self.queue_names:
            try:
                backend.set_queue_attributes(name, {"Policy": ""})
            except QueueDoesNotExist:
                continue


class SnsSubscriptionResource(CloudFormationModel):
    """``AWS::SNS::Subscription``: the subscription SNS's ``Subscribe`` makes, with its attributes.

    Made by the two backend calls ``Subscribe`` makes (moto/sns/responses.py):
    ``SNSBackend.subscribe``, then ``set_subscription_attributes`` for each attribute, the filter
    policy scope first. So ListSubscriptionsByTopic, GetSubscriptionAttributes and Publish (which
    delivers to an SQS endpoint) see it. The template's attribute properties become attributes
    as the API takes them: ``RawMessageDelivery`` as ``true``/``false``, the JSON ones
    (``RedrivePolicy``, ``FilterPolicy``, ``DeliveryPolicy``) as JSON text. ``Ref`` gives the
    subscription's ARN, as CloudFormation documents. ``Region`` and ``ReplayPolicy`` are not
    adapted: a template with one fails the deploy loudly. Deleting the resource unsubscribes.
    """

    # CloudFormation property -> subscription attribute, in the order Subscribe sets them.
    ATTRIBUTES = (
        "FilterPolicyScope",
        "FilterPolicy",
        "RawMessageDelivery",
        "RedrivePolicy",
        "DeliveryPolicy",
        "SubscriptionRoleArn",
    )
    NOT_ADAPTED = ("Region", "ReplayPolicy")

    def __init__(self, arn: str) -> None:
        self.arn = arn

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""  # the type has no name property

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SNS::Subscription"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False  # only Ref is used by the apps

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    def is_created(self) -> bool:
        return True

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> SnsSubscriptionResource:
        props = cloudformation_json["Properties"]
        unadapted = [name for name in cls.NOT_ADAPTED if name in props]
        if unadapted:
            raise NotImplementedError(f"subscription properties not adapted: {unadapted}")
        backend: SNSBackend = sns_backends[account_id][region_name]
        subscription = backend.subscribe(props["TopicArn"], props["Endpoint"], props["Protocol"])
        for name in cls.ATTRIBUTES:
            if name in props:
                backend.set_subscription_attributes(
                    subscription.arn, name, _attribute_text(props[name])
                )
        return cls(subscription.arn)

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: SnsSubscriptionResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> SnsSubscriptionResource:
        cls.delete_from_cloudformation_json(
            original_resource.arn, cloudformation_json, account_id, region_name
        )
        return cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )

    @classmethod
    def delete_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> None:
        backend: SNSBackend = sns_backends[account_id][region_name]
        backend.unsubscribe(resource_name)


def _attribute_text(value: Any) -> str:
    """A subscription attribute as the Subscribe API takes it: text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _as_bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() == "true"


ADAPTERS: dict[str, tuple[type[CloudFormationModel], AdapterInfo]] = {
    CloudWatchAlarmResource.cloudformation_type(): (
        CloudWatchAlarmResource,
        AdapterInfo(
            resource_type="AWS::CloudWatch::Alarm",
            written_for=WRITTEN_FOR_MOTO,
            gap="CloudFormation skips the type (logs 'No Moto CloudFormation support'), so no "
            "alarm exists and Fn::GetAtt on one fails the stack: 'Template error: instance of "
            "Fn::GetAtt references undefined resource <logical id>'",
        ),
    ),
    CloudWatchCompositeAlarmResource.cloudformation_type(): (
        CloudWatchCompositeAlarmResource,
        AdapterInfo(
            resource_type="AWS::CloudWatch::CompositeAlarm",
            written_for=WRITTEN_FOR_MOTO,
            gap="CloudFormation skips the type (logs 'No Moto CloudFormation support'), so no "
            "composite alarm exists and Fn::GetAtt on one (a dashboard's alarm status) fails "
            "the stack; the emulator has no PutCompositeAlarm handler either",
        ),
    ),
    SqsQueuePolicyResource.cloudformation_type(): (
        SqsQueuePolicyResource,
        AdapterInfo(
            resource_type="AWS::SQS::QueuePolicy",
            written_for=WRITTEN_FOR_MOTO,
            gap="CloudFormation skips the type (logs 'No Moto CloudFormation support') and "
            "reports it complete: the queues keep an empty policy, so a TLS-only deny cannot be "
            "read back",
        ),
    ),
    SnsSubscriptionResource.cloudformation_type(): (
        SnsSubscriptionResource,
        AdapterInfo(
            resource_type="AWS::SNS::Subscription",
            written_for=WRITTEN_FOR_MOTO,
            gap="CloudFormation skips the type (logs 'No Moto CloudFormation support') and "
            "reports it complete: the topic has no subscription, so nothing published to it "
            "reaches the queue",
        ),
    ),
}


# A race in the emulator's SQS, not in SQS: moto's Queue.delete_message rebuilds the queue's
# message list without the lock that add_message (SendMessage) takes, so a message sent while
# another is being deleted can vanish from the queue; and two ReceiveMessage calls that both move
# one message to the dead-letter queue fail with HTTP 500 (ValueError in list.remove). The fix
# holds the queue's own lock (a Condition over an RLock, which a long poll's wait releases) around
# both. test_adapters.py shows the lost send without it, with it, and fails once moto takes the
# lock itself.
SERIALIZED_QUEUE_CALLS = ("Queue.delete_message", "SQSBackend.receive_message")


def _delete_message_locked(original: Any) -> Any:
    def delete_message(self: Queue, receipt_handle: str) -> None:
        with self._messages_lock:
            original(self, receipt_handle)

    delete_message.__wrapped__ = original  # type: ignore[attr-defined]
    return delete_message


def _receive_message_locked(original: Any) -> Any:
    def receive_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        with self.get_queue(queue_name)._messages_lock:
            return original(self, queue_name, *args, **kwargs)

    receive_message.__wrapped__ = original  # type: ignore[attr-defined]
    return receive_message


def serialize_queue_updates() -> None:
    """Apply the fix above once (in the process that runs the server, or a test's own)."""
    if not hasattr(Queue.delete_message, "__wrapped__"):
        Queue.delete_message = _delete_message_locked(Queue.delete_message)  # type: ignore[method-assign]
    if not hasattr(SQSBackend.receive_message, "__wrapped__"):
        SQSBackend.receive_message = _receive_message_locked(SQSBackend.receive_message)  # type: ignore[method-assign]


def register() -> None:
    """Make the emulator's CloudFormation use the adapters (in the process that runs the server),
    and its SQS queues safe for concurrent calls (``serialize_queue_updates``).

    The classes above became CloudFormationModel subclasses when this module was imported; moto
    caches its type map, so the caches are dropped and the result checked.
    """
    serialize_queue_updates()
    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()
    model_map = parsing.get_model_map()
    for resource_type, (adapter, _) in ADAPTERS.items():
        if model_map.get(resource_type) is not adapter:
            raise RuntimeError(
                f"adapter for {resource_type} not registered: {model_map.get(resource_type)}"
            )
