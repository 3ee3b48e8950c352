"""One small template per rule, failing and passing, with the findings each must produce.

Each case gets its own queue names so that all cases can be audited in one Spark job without
one case's literal ARNs resolving to another's queues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.audit.conftest import Template, _alarm, healthy, props, variant, write


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[str], Template]
    # Every (rule id, logical id) pair the template must produce, and nothing else; empty: clean.
    expected: frozenset[tuple[str, str]]
    rule: str
    # Other templates of the same fleet (name -> template), audited with it; they must be clean.
    companions: Callable[[str], dict[str, Template]] | None = None


def write_case(folder: Path, case: Case) -> tuple[Path, list[Path]]:
    """The case's template and its companions, as files: (main, companions)."""
    main = write(folder, f"{case.id}.template.json", case.build(case.id))
    others = case.companions(case.id) if case.companions else {}
    return main, [
        write(folder, f"{case.id}.{name}.template.json", template)
        for name, template in others.items()
    ]


def _case(
    case_id: str, rule: str, expected: set[tuple[str, str]]
) -> Callable[[Callable[[str], Template]], Case]:
    def wrap(build: Callable[[str], Template]) -> Case:
        return Case(case_id, build, frozenset(expected), rule)

    return wrap


def _with(change: Callable[[Template], None], fifo: bool = False) -> Callable[[str], Template]:
    def build(name: str) -> Template:
        template = variant(healthy(name, fifo=fifo))
        change(template)
        return template

    return build


def _remove(logical_id: str) -> Callable[[Template], None]:
    return lambda t: t["Resources"].pop(logical_id)


def _set(logical_id: str, **values: object) -> Callable[[Template], None]:
    return lambda t: props(t, logical_id).update(values)


def _both(*changes: Callable[[Template], None]) -> Callable[[Template], None]:
    def apply(template: Template) -> None:
        for change in changes:
            change(template)

    return apply


def _drop_redrive(t: Template) -> None:
    props(t, "Source").pop("RedrivePolicy")


def _allow(permission: str, arns: list[object] | None = None) -> Callable[[Template], None]:
    def apply(t: Template) -> None:
        policy: dict[str, object] = {"redrivePermission": permission}
        if arns is not None:
            policy["sourceQueueArns"] = arns
        props(t, "Dlq")["RedriveAllowPolicy"] = policy

    return apply


def _dlq_fifo(t: Template) -> None:
    dlq = props(t, "Dlq")
    dlq["FifoQueue"] = True
    dlq["QueueName"] = dlq["QueueName"] + ".fifo"


def _max_receive(count: int) -> Callable[[Template], None]:
    return lambda t: props(t, "Source")["RedrivePolicy"].update(maxReceiveCount=count)


def _sent_alarm(t: Template) -> None:
    t["Resources"]["DlqSent"] = _alarm("NumberOfMessagesSent", "Dlq")


def _add(logical_id: str, resource: dict[str, Any]) -> Callable[[Template], None]:
    return lambda t: t["Resources"].__setitem__(logical_id, resource)


def _drop(logical_id: str, prop: str) -> Callable[[Template], None]:
    return lambda t: props(t, logical_id).pop(prop)


def _pollers(minimum: int, maximum: int) -> Callable[[Template], None]:
    return _set(
        "Esm", ProvisionedPollerConfig={"MinimumPollers": minimum, "MaximumPollers": maximum}
    )


def _statement(**fields: object) -> Callable[[Template], None]:
    def apply(t: Template) -> None:
        statement = {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}
        statement.update(fields)
        props(t, "Policy")["PolicyDocument"]["Statement"].append(statement)

    return apply


def _dlq_consumer(t: Template) -> None:
    """The function also drains the DLQ (visibility 60 s = 6 x its 10 s timeout)."""
    props(t, "Dlq")["VisibilityTimeout"] = 60
    t["Resources"]["DlqEsm"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "EventSourceArn": {"Fn::GetAtt": ["Dlq", "Arn"]},
            "FunctionName": {"Ref": "Fn"},
        },
    }


def _async_dlq(t: Template) -> None:
    """A third queue that only Lambda's asynchronous invocations of the function feed."""
    t["Resources"]["AsyncDlq"] = {
        "Type": "AWS::SQS::Queue",
        "Properties": {"MessageRetentionPeriod": 1209600},
    }
    props(t, "Fn")["DeadLetterConfig"] = {"TargetArn": {"Fn::GetAtt": ["AsyncDlq", "Arn"]}}
    props(t, "Policy")["Queues"].append({"Ref": "AsyncDlq"})
    t["Resources"]["AsyncDlqDepth"] = _alarm("ApproximateNumberOfMessagesVisible", "AsyncDlq")


_SOURCE_ARN = {"Fn::GetAtt": ["Source", "Arn"]}
_MANAGED_KEY = "alias/aws/sqs"


def _managed_key(key: object = _MANAGED_KEY) -> Callable[[Template], None]:
    return _set("Source", KmsMasterKeyId=key)


_TOPIC = {"Type": "AWS::SNS::Topic", "Properties": {}}
_SUBSCRIPTION = {
    "Type": "AWS::SNS::Subscription",
    "Properties": {"TopicArn": {"Ref": "Topic"}, "Protocol": "sqs", "Endpoint": _SOURCE_ARN},
}
_RULE = {
    "Type": "AWS::Events::Rule",
    "Properties": {
        "EventPattern": {"source": ["orders.api"]},
        "Targets": [{"Id": "queue", "Arn": _SOURCE_ARN}],
    },
}
_BUCKET = {
    "Type": "AWS::S3::Bucket",
    "Properties": {
        "NotificationConfiguration": {
            "QueueConfigurations": [{"Event": "s3:ObjectCreated:*", "Queue": _SOURCE_ARN}]
        }
    },
}
# What CDK writes for bucket.add_event_notification(..., SqsDestination(queue)).
_CDK_NOTIFICATIONS = {
    "Type": "Custom::S3BucketNotifications",
    "Properties": {
        "ServiceToken": {"Fn::GetAtt": ["NotificationsHandler", "Arn"]},
        "BucketName": {"Ref": "Bucket"},
        "NotificationConfiguration": {
            "QueueConfigurations": [{"Events": ["s3:ObjectCreated:*"], "QueueArn": _SOURCE_ARN}]
        },
        "Managed": True,
    },
}
_PLAIN_BUCKET = {"Type": "AWS::S3::Bucket", "Properties": {}}


def _worker_name(case_name: str) -> str:
    return f"{case_name}-worker"


def _reserving_worker(reserved: int, cap: int) -> Callable[[str], Template]:
    """The function, named, reserving ``reserved`` and reading its own queue with ``cap``."""

    def build(name: str) -> Template:
        template = variant(healthy(name))
        props(template, "Fn").update(
            FunctionName=_worker_name(name), ReservedConcurrentExecutions=reserved
        )
        props(template, "Esm")["ScalingConfig"] = {"MaximumConcurrency": cap}
        return template

    return build


def _second_source(cap: int | None) -> Callable[[str], dict[str, Template]]:
    """Another stack's queue, read into the first stack's function (named by its ARN)."""

    def build(name: str) -> dict[str, Template]:
        template = variant(healthy(f"{name}-other"))
        template["Resources"].pop("Fn")
        props(template, "Esm")["FunctionName"] = (
            f"arn:aws:lambda:us-east-1:123456789012:function:{_worker_name(name)}"
        )
        if cap is not None:
            props(template, "Esm")["ScalingConfig"] = {"MaximumConcurrency": cap}
        return {"other": template}

    return build


CASES: list[Case] = [
    Case("healthy-standard", _with(lambda t: None), frozenset(), ""),
    Case("healthy-fifo", _with(lambda t: None, fifo=True), frozenset(), ""),
    # QR001: the source has no redrive policy, so its former DLQ is just another queue.
    Case(
        "qr001-no-dlq",
        _with(_drop_redrive),
        frozenset({("QR001", "Source"), ("QR001", "Dlq"), ("QR009", "Dlq")}),
        "QR001",
    ),
    Case(
        "qr002-fifo-dlq-for-standard", _with(_dlq_fifo), frozenset({("QR002", "Source")}), "QR002"
    ),
    Case(
        "qr002-standard-dlq-for-fifo",
        _with(
            lambda t: props(t, "Dlq").update(
                FifoQueue=False, QueueName=props(t, "Dlq")["QueueName"][:-5]
            ),
            fifo=True,
        ),
        frozenset({("QR002", "Source")}),
        "QR002",
    ),
    Case(
        "qr003-equal-retention",
        _with(_set("Dlq", MessageRetentionPeriod=345600)),
        frozenset({("QR003", "Source")}),
        "QR003",
    ),
    Case(
        "qr003-default-retentions",
        _with(lambda t: props(t, "Dlq").pop("MessageRetentionPeriod")),
        frozenset({("QR003", "Source")}),
        "QR003",
    ),
    Case(
        "qr003-pass-one-minute-longer",
        _with(_set("Dlq", MessageRetentionPeriod=345660)),
        frozenset(),
        "QR003",
    ),
    Case(
        "qr003-pass-fifo-equal",
        _with(_set("Dlq", MessageRetentionPeriod=345600), fifo=True),
        frozenset(),
        "QR003",
    ),
    Case(
        "qr004-no-allow-policy",
        _with(lambda t: props(t, "Dlq").pop("RedriveAllowPolicy")),
        frozenset({("QR004", "Dlq")}),
        "QR004",
    ),
    Case("qr004-allow-all", _with(_allow("allowAll")), frozenset({("QR004", "Dlq")}), "QR004"),
    Case("qr005-deny-all", _with(_allow("denyAll")), frozenset({("QR005", "Dlq")}), "QR005"),
    Case(
        "qr005-by-queue-without-source",
        _with(_allow("byQueue", ["arn:aws:sqs:us-east-1:123456789012:someone-else"])),
        # the queue it names is in no audited template: QR900 says so
        frozenset({("QR005", "Dlq"), ("QR900", "Dlq")}),
        "QR005",
    ),
    Case(
        "qr005-pass-by-queue-getatt-free-literal",
        lambda n: _with(_allow("byQueue", [f"arn:aws:sqs:us-east-1:123456789012:{n}"]))(n),
        frozenset(),
        "QR005",
    ),
    Case(
        "qr006-function-timeout-above-visibility",
        _with(_set("Fn", Timeout=120)),
        frozenset({("QR006", "Esm")}),
        "QR006",
    ),
    Case(
        "qr006-default-visibility",
        _with(_both(_set("Fn", Timeout=31), lambda t: props(t, "Source").pop("VisibilityTimeout"))),
        frozenset({("QR006", "Esm")}),
        "QR006",
    ),
    Case(
        "qr006-pass-equal",
        _with(_both(_set("Fn", Timeout=60))),
        frozenset({("QR007", "Esm")}),
        "QR006",
    ),
    Case(
        "qr007-one-second-short",
        _with(_set("Source", VisibilityTimeout=59)),
        frozenset({("QR007", "Esm")}),
        "QR007",
    ),
    Case(
        "qr007-window-counts",
        _with(_set("Esm", MaximumBatchingWindowInSeconds=5)),
        frozenset({("QR007", "Esm")}),
        "QR007",
    ),
    Case(
        "qr007-default-function-timeout",
        _with(_both(lambda t: props(t, "Fn").pop("Timeout"), _set("Source", VisibilityTimeout=17))),
        frozenset({("QR007", "Esm")}),
        "QR007",
    ),
    Case(
        "qr007-pass-default-timeout-exact",
        _with(_both(lambda t: props(t, "Fn").pop("Timeout"), _set("Source", VisibilityTimeout=18))),
        frozenset(),
        "QR007",
    ),
    Case("qr008-four-receives", _with(_max_receive(4)), frozenset({("QR008", "Source")}), "QR008"),
    Case(
        "qr008-pass-without-consumer",
        _with(_both(_max_receive(4), _remove("Esm"))),
        frozenset(),
        "QR008",
    ),
    Case(
        "qr009-no-in-flight-alarm",
        _with(_remove("InFlight")),
        frozenset({("QR009", "Source")}),
        "QR009",
    ),
    Case(
        "qr009-alarm-on-wrong-metric",
        _with(
            lambda t: props(t, "InFlight").update(MetricName="ApproximateNumberOfMessagesVisible")
        ),
        frozenset({("QR009", "Source")}),
        "QR009",
    ),
    Case("qr010-no-dlq-alarm", _with(_remove("DlqDepth")), frozenset({("QR010", "Dlq")}), "QR010"),
    Case("qr011-sent-alarm-on-dlq", _with(_sent_alarm), frozenset({("QR011", "DlqSent")}), "QR011"),
    Case(
        "qr012-sse-off",
        _with(_set("Source", SqsManagedSseEnabled=False)),
        frozenset({("QR012", "Source")}),
        "QR012",
    ),
    Case(
        "qr012-pass-kms",
        _with(_set("Source", SqsManagedSseEnabled=False, KmsMasterKeyId="alias/aws/sqs")),
        frozenset(),
        "QR012",
    ),
    Case(
        "qr013-no-policy",
        _with(_remove("Policy")),
        frozenset({("QR013", "Source"), ("QR013", "Dlq")}),
        "QR013",
    ),
    Case(
        "qr013-allow-only-policy",
        # The deny turned into an Allow of sqs:* to "*" when aws:SecureTransport is false: no
        # TLS deny (QR013), and anyone may use both queues over plain HTTP (QR023).
        _with(
            lambda t: props(t, "Policy")["PolicyDocument"]["Statement"][0].update(Effect="Allow")
        ),
        frozenset({("QR013", "Source"), ("QR013", "Dlq"), ("QR023", "Source"), ("QR023", "Dlq")}),
        "QR013",
    ),
    Case(
        "qr014-large-batch-without-window",
        _with(_set("Esm", BatchSize=11)),
        frozenset({("QR014", "Esm")}),
        "QR014",
    ),
    Case(
        "qr014-pass-large-batch-with-window",
        _with(
            _both(
                _set("Esm", BatchSize=11, MaximumBatchingWindowInSeconds=1),
                _set("Source", VisibilityTimeout=61),
            )
        ),
        frozenset(),
        "QR014",
    ),
    Case(
        "qr014-fifo-window",
        _with(
            _both(
                _set("Esm", MaximumBatchingWindowInSeconds=1), _set("Source", VisibilityTimeout=61)
            ),
            fifo=True,
        ),
        frozenset({("QR014", "Esm")}),
        "QR014",
    ),
    Case(
        "qr014-fifo-batch-11",
        _with(_set("Esm", BatchSize=11), fifo=True),
        frozenset({("QR014", "Esm")}),
        "QR014",
    ),
    Case(
        "qr014-window-301",
        _with(
            _both(
                _set("Esm", MaximumBatchingWindowInSeconds=301),
                _set("Source", VisibilityTimeout=361),
            )
        ),
        frozenset({("QR014", "Esm")}),
        "QR014",
    ),
    Case(
        "qr014-concurrency-1",
        _with(_set("Esm", ScalingConfig={"MaximumConcurrency": 1})),
        frozenset({("QR014", "Esm")}),
        "QR014",
    ),
    Case(
        "qr014-pass-concurrency-2",
        _with(_set("Esm", ScalingConfig={"MaximumConcurrency": 2})),
        frozenset(),
        "QR014",
    ),
    Case(
        "qr015-no-event-count",
        _with(_drop("Esm", "MetricsConfig")),
        frozenset({("QR015", "Esm")}),
        "QR015",
    ),
    Case(
        "qr015-other-metrics-only",
        _with(_set("Esm", MetricsConfig={"Metrics": []})),
        frozenset({("QR015", "Esm")}),
        "QR015",
    ),
    Case(
        "qr015-pass-without-batch-item-failures",
        _with(_both(_drop("Esm", "MetricsConfig"), _drop("Esm", "FunctionResponseTypes"))),
        frozenset(),
        "QR015",
    ),
    Case(
        "qr016-one-minimum-poller", _with(_pollers(1, 10)), frozenset({("QR016", "Esm")}), "QR016"
    ),
    Case(
        "qr016-maximum-2001-pollers",
        _with(_pollers(2, 2001)),
        frozenset({("QR016", "Esm")}),
        "QR016",
    ),
    Case(
        "qr016-minimum-above-maximum",
        _with(_pollers(20, 10)),
        frozenset({("QR016", "Esm")}),
        "QR016",
    ),
    Case(
        "qr016-with-maximum-concurrency",
        _with(_both(_pollers(2, 10), _set("Esm", ScalingConfig={"MaximumConcurrency": 5}))),
        frozenset({("QR016", "Esm")}),
        "QR016",
    ),
    Case("qr016-pass-range-ends", _with(_pollers(200, 2000)), frozenset(), "QR016"),
    # QR017: the function reserves 30 and reads two queues in two stacks, 20 + 20 at most.
    Case(
        "qr017-across-stacks",
        _reserving_worker(30, 20),
        frozenset({("QR017", "Fn")}),
        "QR017",
        _second_source(20),
    ),
    Case(
        "qr017-pass-reservation-covers-both",
        _reserving_worker(40, 20),
        frozenset(),
        "QR017",
        _second_source(20),
    ),
    # An uncapped source scales to Lambda's on-demand 1,250: 30 < 20 + 1,250.
    Case(
        "qr017-uncapped-source-counts-as-the-on-demand-limit",
        _reserving_worker(30, 20),
        frozenset({("QR017", "Fn")}),
        "QR017",
        _second_source(None),
    ),
    Case(
        "qr017-provisioned-pollers",
        # 3 pollers x 10 invocations = 30 > 25 reserved
        _with(_both(_set("Fn", ReservedConcurrentExecutions=25), _pollers(2, 3))),
        frozenset({("QR017", "Fn")}),
        "QR017",
    ),
    Case(
        "qr018-retention-equals-time-to-dlq",
        # 5 receives x 60 s = 300 s, and the source keeps messages 300 s
        _with(_set("Source", MessageRetentionPeriod=300)),
        frozenset({("QR018", "Source")}),
        "QR018",
    ),
    Case(
        "qr018-pass-one-second-longer",
        _with(_set("Source", MessageRetentionPeriod=301)),
        frozenset(),
        "QR018",
    ),
    Case(
        "qr019-filter",
        _with(
            _set("Esm", FilterCriteria={"Filters": [{"Pattern": '{"body": {"kind": ["order"]}}'}]})
        ),
        frozenset({("QR019", "Esm")}),
        "QR019",
    ),
    Case(
        "qr019-pass-no-filters",
        _with(_set("Esm", FilterCriteria={"Filters": []})),
        frozenset(),
        "QR019",
    ),
    Case("qr020-drained-dlq", _with(_dlq_consumer), frozenset({("QR020", "Dlq")}), "QR020"),
    Case(
        "qr020-pass-arrivals-alarm",
        _with(_both(_dlq_consumer, _add("DlqReceived", _alarm("NumberOfMessagesReceived", "Dlq")))),
        frozenset(),
        "QR020",
    ),
    Case(
        "qr021-smaller-dlq",
        _with(
            _both(_set("Source", MaximumMessageSize=262144), _set("Dlq", MaximumMessageSize=131072))
        ),
        frozenset({("QR021", "Source")}),
        "QR021",
    ),
    Case(
        "qr021-default-source-size",
        _with(_set("Dlq", MaximumMessageSize=262144)),
        frozenset({("QR021", "Source")}),
        "QR021",
    ),
    Case(
        "qr021-pass-equal-sizes",
        _with(
            _both(_set("Source", MaximumMessageSize=262144), _set("Dlq", MaximumMessageSize=262144))
        ),
        frozenset(),
        "QR021",
    ),
    Case(
        "qr022-ten-mib-batch",
        _with(_set("Source", MaximumMessageSize=1048576)),
        frozenset({("QR022", "Esm")}),
        "QR022",
    ),
    Case(
        "qr022-pass-six-mib-batch",
        _with(_both(_set("Source", MaximumMessageSize=1048576), _set("Esm", BatchSize=6))),
        frozenset(),
        "QR022",
    ),
    Case(
        "qr022-pass-default-size",
        # 100 messages of up to 1 MiB by default: the default cap says nothing about real sizes
        _with(
            _both(
                _set("Esm", BatchSize=100, MaximumBatchingWindowInSeconds=1),
                _set("Source", VisibilityTimeout=61),
            )
        ),
        frozenset(),
        "QR022",
    ),
    Case(
        "qr023-anyone",
        _with(_statement(Principal="*")),
        frozenset({("QR023", "Source"), ("QR023", "Dlq")}),
        "QR023",
    ),
    Case(
        "qr023-star-in-account-list",
        _with(_statement(Principal={"AWS": ["arn:aws:iam::123456789012:root", "*"]})),
        frozenset({("QR023", "Source"), ("QR023", "Dlq")}),
        "QR023",
    ),
    Case(
        "qr023-pass-with-condition",
        _with(
            _statement(
                Principal={"AWS": "*"},
                Condition={"ArnEquals": {"aws:SourceArn": "arn:aws:sns:us-east-1:123456789012:t"}},
            )
        ),
        frozenset(),
        "QR023",
    ),
    Case(
        "qr023-service-principal-without-source",
        # Any account's SNS topic may send (Access Analyzer: "restrict access to service
        # principal"): public.
        _with(_statement(Principal={"Service": "sns.amazonaws.com"})),
        frozenset({("QR023", "Source"), ("QR023", "Dlq")}),
        "QR023",
    ),
    Case(
        "qr023-pass-service-principal-with-source",
        _with(
            _statement(
                Principal={"Service": "sns.amazonaws.com"},
                Condition={"ArnEquals": {"aws:SourceArn": "arn:aws:sns:us-east-1:123456789012:t"}},
            )
        ),
        frozenset(),
        "QR023",
    ),
    Case(
        "qr024-no-actions",
        _with(_drop("InFlight", "AlarmActions")),
        frozenset({("QR024", "InFlight")}),
        "QR024",
    ),
    Case(
        "qr024-empty-actions",
        _with(_set("DlqAge", AlarmActions=[])),
        frozenset({("QR024", "DlqAge")}),
        "QR024",
    ),
    Case(
        "qr024-actions-disabled",
        _with(_set("DlqDepth", ActionsEnabled=False)),
        frozenset({("QR024", "DlqDepth")}),
        "QR024",
    ),
    Case(
        "qr025-no-source-age-alarm",
        _with(_remove("SourceAge")),
        frozenset({("QR025", "Source")}),
        "QR025",
    ),
    Case(
        "qr025-no-dlq-age-alarm", _with(_remove("DlqAge")), frozenset({("QR025", "Dlq")}), "QR025"
    ),
    Case(
        "qr025-pass-service-fed-dlq",
        # a DLQ only Lambda's asynchronous invocations feed: no age alarm asked of it
        _with(_async_dlq),
        frozenset(),
        "QR025",
    ),
    Case(
        "qr026-starting-position",
        _with(_set("Esm", StartingPosition="LATEST")),
        frozenset({("QR026", "Esm")}),
        "QR026",
    ),
    Case(
        "qr026-starting-position-timestamp",
        _with(_set("Esm", StartingPositionTimestamp=1700000000)),
        frozenset({("QR026", "Esm")}),
        "QR026",
    ),
    Case(
        "qr027-content-based-deduplication",
        _with(_set("Source", ContentBasedDeduplication=True)),
        frozenset({("QR027", "Source")}),
        "QR027",
    ),
    Case(
        "qr027-throughput-limit-on-dlq",
        _with(_set("Dlq", FifoThroughputLimit="perMessageGroupId")),
        frozenset({("QR027", "Dlq")}),
        "QR027",
    ),
    Case(
        "qr027-pass-fifo",
        _with(
            _set(
                "Source",
                ContentBasedDeduplication=True,
                DeduplicationScope="messageGroup",
                FifoThroughputLimit="perMessageGroupId",
            ),
            fifo=True,
        ),
        frozenset(),
        "QR027",
    ),
    Case(
        "qr028-recursive-loop-allowed",
        _with(_set("Fn", RecursiveLoop="Allow")),
        frozenset({("QR028", "Fn")}),
        "QR028",
    ),
    Case(
        "qr028-pass-terminate",
        _with(_set("Fn", RecursiveLoop="Terminate")),
        frozenset(),
        "QR028",
    ),
    Case(
        "qr029-sns-subscription",
        _with(_both(_managed_key(), _add("Topic", _TOPIC), _add("Subscription", _SUBSCRIPTION))),
        frozenset({("QR029", "Source")}),
        "QR029",
    ),
    Case(
        "qr029-sns-topic-inline-subscription",
        _with(
            _both(
                _managed_key("arn:aws:kms:us-east-1:123456789012:alias/aws/sqs"),
                _add(
                    "Topic",
                    {
                        "Type": "AWS::SNS::Topic",
                        "Properties": {
                            "Subscription": [{"Protocol": "sqs", "Endpoint": _SOURCE_ARN}]
                        },
                    },
                ),
            )
        ),
        frozenset({("QR029", "Source")}),
        "QR029",
    ),
    Case(
        "qr029-eventbridge-rule",
        _with(_both(_managed_key(), _add("Rule", _RULE))),
        frozenset({("QR029", "Source")}),
        "QR029",
    ),
    Case(
        "qr029-s3-bucket",
        _with(_both(_managed_key(), _add("Bucket", _BUCKET))),
        frozenset({("QR029", "Source")}),
        "QR029",
    ),
    Case(
        "qr029-cdk-bucket-notifications",
        _with(
            _both(
                _managed_key(),
                _add("Bucket", _PLAIN_BUCKET),
                _add("Notifications", _CDK_NOTIFICATIONS),
            )
        ),
        frozenset({("QR029", "Source")}),
        "QR029",
    ),
    Case(
        "qr029-sns-dead-letter",
        # SNS sends a subscription's undeliverable messages to the DLQ with its own principal
        _with(
            _both(
                _set("Dlq", KmsMasterKeyId=_MANAGED_KEY),
                _add("Topic", _TOPIC),
                _add(
                    "FnSubscription",
                    {
                        "Type": "AWS::SNS::Subscription",
                        "Properties": {
                            "TopicArn": {"Ref": "Topic"},
                            "Protocol": "lambda",
                            "Endpoint": {"Fn::GetAtt": ["Fn", "Arn"]},
                            "RedrivePolicy": {
                                "deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]}
                            },
                        },
                    },
                ),
            )
        ),
        frozenset({("QR029", "Dlq")}),
        "QR029",
    ),
    Case(
        "qr029-pass-customer-managed-key",
        _with(
            _both(
                _managed_key({"Fn::GetAtt": ["Key", "Arn"]}),
                _add("Key", {"Type": "AWS::KMS::Key", "Properties": {}}),
                _add("Topic", _TOPIC),
                _add("Subscription", _SUBSCRIPTION),
            )
        ),
        frozenset(),
        "QR029",
    ),
    Case(
        "qr029-pass-rule-targets-a-function",
        _with(
            _both(
                _managed_key(),
                _add(
                    "Rule",
                    {
                        "Type": "AWS::Events::Rule",
                        "Properties": {
                            "EventPattern": {"source": ["orders.api"]},
                            "Targets": [{"Id": "fn", "Arn": {"Fn::GetAtt": ["Fn", "Arn"]}}],
                        },
                    },
                ),
            )
        ),
        frozenset(),
        "QR029",
    ),
]
