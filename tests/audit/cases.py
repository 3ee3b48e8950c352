"""One small template per rule, failing and passing, with the findings each must produce.

Each case gets its own queue names so that all cases can be audited in one Spark job without
one case's literal ARNs resolving to another's queues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.audit.conftest import Template, _alarm, healthy, props, variant


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[str], Template]
    # Every (rule id, logical id) pair the template must produce, and nothing else; empty: clean.
    expected: frozenset[tuple[str, str]]
    rule: str


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
        _with(
            lambda t: props(t, "Policy")["PolicyDocument"]["Statement"][0].update(Effect="Allow")
        ),
        frozenset({("QR013", "Source"), ("QR013", "Dlq")}),
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
]
