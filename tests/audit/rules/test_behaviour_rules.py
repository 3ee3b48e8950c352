"""The behaviour rules (QR030-QR034) on queue contexts with observed metric series, and how the
observations settle the static verdicts QR007 and QR010.

Contexts are assembled by ``model.build_context`` from resource rows and the pseudo rows of
observed series and coverage, as both engines assemble them. The figures come from the rules'
definitions and CloudFormation's defaults, never from running the audit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from constructs_lib import limits
from constructs_lib.audit import model
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.model import (
    ALARM,
    EVENT_SOURCE_MAPPING,
    FUNCTION,
    MEMBER_ALARM,
    MEMBER_DLQ,
    MEMBER_ESM,
    MEMBER_FUNCTION,
    MEMBER_FUNCTION_MAPPING,
    MEMBER_OBSERVED,
    MEMBER_QUEUE,
    MEMBER_SOURCE,
    QUEUE,
    CoverageRow,
    Finding,
    QueueContext,
    ResourceRow,
    SeriesRow,
    coverage_row,
    observed_row,
)
from constructs_lib.audit.rules import RULES_BY_ID, describe_rules, evaluate
from constructs_lib.audit.rules.behaviour import IDLE_MIN_COVERAGE_DAYS
from tests.audit.conftest import healthy, props, write

FILE = "fleet.template.json"
ACCOUNT, REGION = "111122223333", "eu-west-1"
DAY_MS = 24 * 3600 * 1000
START = 1_790_000_000_000  # epoch milliseconds, as metric streams write them
BEHAVIOUR = ("QR030", "QR031", "QR032", "QR033", "QR034")

Member = tuple[str, str, ResourceRow]


def row(logical_id: str, type_: str, **properties: Any) -> ResourceRow:
    return ResourceRow(
        model.uid(FILE, logical_id), FILE, "fleet", logical_id, type_, json.dumps(properties)
    )


def queue(logical_id: str = "Orders", **properties: Any) -> ResourceRow:
    return row(logical_id, QUEUE, QueueName=logical_id.lower(), **properties)


def series(
    metric: str,
    name: str,
    maximum: float = 0,
    total: float = 0,
    first: int = START,
    last: int = START + DAY_MS,
) -> SeriesRow:
    namespace = "AWS/Lambda" if metric in ("Duration", "Throttles") else "AWS/SQS"
    return SeriesRow(ACCOUNT, REGION, namespace, metric, name, maximum, total, 1, first, last)


def observed(resource: ResourceRow, *observations: SeriesRow) -> list[Member]:
    return [(MEMBER_OBSERVED, resource.uid, observed_row(s)) for s in observations]


def covered(days: float) -> Member:
    coverage = CoverageRow(ACCOUNT, REGION, START, START + round(days * DAY_MS))
    return (MEMBER_OBSERVED, "", coverage_row(coverage))


def context(source: ResourceRow, *members: Member) -> QueueContext:
    ctx = model.build_context(source.uid, [(MEMBER_QUEUE, "", source), *members])
    assert ctx is not None
    return ctx


def consumed(
    source: ResourceRow, function_props: dict[str, Any], mapping_props: dict[str, Any]
) -> tuple[ResourceRow, list[Member]]:
    """A function and the event source mapping by which it reads ``source``."""
    function = row("Worker", FUNCTION, **function_props)
    mapping = row("WorkerEsm", EVENT_SOURCE_MAPPING, **mapping_props)
    return function, [
        (MEMBER_ESM, "", mapping),
        (MEMBER_FUNCTION, mapping.uid, function),
        (MEMBER_FUNCTION_MAPPING, function.uid, mapping),
    ]


def dead_letter_queue(*alarm_metrics: str) -> tuple[ResourceRow, list[Member]]:
    """A DLQ, the source that redrives into it, and alarms on the DLQ's metrics."""
    dlq = queue("OrdersDlq", MessageRetentionPeriod=1_209_600)
    source = queue("Orders", RedrivePolicy={"maxReceiveCount": 5})
    members: list[Member] = [(MEMBER_SOURCE, "", source)]
    for metric in alarm_metrics:
        alarm = row(f"Alarm{metric}", ALARM, MetricName=metric, AlarmActions=["arn:topic"])
        members.append((MEMBER_ALARM, metric, alarm))
    return dlq, members


def ids(findings: list[Finding]) -> list[str]:
    return [f.rule_id for f in findings]


def behaviour(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule_id in BEHAVIOUR]


# --- QR030: observed duration above the visibility timeout ----------------------------------


@pytest.mark.parametrize(
    ("duration_ms", "fires"),
    [(29_999, False), (30_000, False), (30_001, True)],
    ids=["below", "at", "above"],
)
def test_qr030_duration_against_the_visibility_timeout(duration_ms: int, fires: bool) -> None:
    # GIVEN a queue with a 30 s visibility timeout and a 5 s batching window: 25 s for the run
    source = queue(VisibilityTimeout=30)
    function, members = consumed(
        source, {"Timeout": 20}, {"MaximumBatchingWindowInSeconds": 5, "BatchSize": 10}
    )
    ctx = context(
        source, *members, *observed(function, series("Duration", "worker", duration_ms - 5000))
    )
    # WHEN judged THEN QR030 fires only once the run plus the window exceeds 30 s
    findings = [f for f in evaluate(ctx) if f.rule_id == "QR030"]
    assert bool(findings) is fires
    if fires:
        (finding,) = findings
        assert (finding.severity, finding.resource) == ("error", "WorkerEsm")
        for figure in ("25001 ms", "5 s batching window", "30.001 s", "30 s visibility timeout"):
            assert figure in finding.message, (figure, finding.message)


def test_qr030_defaults_when_properties_are_absent() -> None:
    # GIVEN no VisibilityTimeout (30 s) and no batching window (0 s)
    source = queue()
    function, members = consumed(source, {}, {})
    at = context(source, *members, *observed(function, series("Duration", "worker", 30_000)))
    above = context(source, *members, *observed(function, series("Duration", "worker", 30_000.5)))
    # THEN the defaults are the limits
    assert "QR030" not in ids(evaluate(at))
    (finding,) = [f for f in evaluate(above) if f.rule_id == "QR030"]
    assert "30000.5 ms" in finding.message and "0 s batching window" in finding.message


# --- QR031: messages near expiry -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "fires"), [(499, False), (500, True), (501, True)], ids=["below", "at", "above"]
)
def test_qr031_age_against_half_the_retention(age: int, fires: bool) -> None:
    source = queue(MessageRetentionPeriod=1000)
    ctx = context(source, *observed(source, series(limits.METRIC_OLDEST_AGE, "orders", age)))
    findings = [f for f in evaluate(ctx) if f.rule_id == "QR031"]
    assert bool(findings) is fires
    if fires:
        (finding,) = findings
        assert finding.severity == "error"
        assert f"{age} s old" in finding.message and "1000 s" in finding.message
        assert "500 s" in finding.message and "expire unprocessed" in finding.message


def test_qr031_default_retention() -> None:
    # 345600 s by default: half is 172800 s
    source = queue()
    below = context(source, *observed(source, series(limits.METRIC_OLDEST_AGE, "orders", 172_799)))
    at = context(source, *observed(source, series(limits.METRIC_OLDEST_AGE, "orders", 172_800)))
    assert "QR031" not in ids(evaluate(below))
    (finding,) = [f for f in evaluate(at) if f.rule_id == "QR031"]
    assert "345600 s" in finding.message


def test_qr031_on_a_dead_letter_queue_says_dead_letters_are_lost() -> None:
    dlq, members = dead_letter_queue(limits.METRIC_VISIBLE, limits.METRIC_OLDEST_AGE)
    ctx = context(
        dlq, *members, *observed(dlq, series(limits.METRIC_OLDEST_AGE, "ordersdlq", 604_800))
    )
    (finding,) = behaviour(evaluate(ctx))
    assert finding.rule_id == "QR031"
    assert "dead-letter queue fleet/OrdersDlq" in finding.message
    assert "lost unread" in finding.message and "1209600 s" in finding.message


# --- QR032: dead letters nobody is told about ----------------------------------------------------


@pytest.mark.parametrize(("depth", "fires"), [(0, False), (1, True), (7, True)])
def test_qr032_a_dead_letter_queue_that_held_messages(depth: int, fires: bool) -> None:
    dlq, members = dead_letter_queue()
    ctx = context(dlq, *members, *observed(dlq, series(limits.METRIC_VISIBLE, "ordersdlq", depth)))
    found = ids(evaluate(ctx))
    if fires:
        # THEN QR032 replaces QR010: not both
        assert "QR032" in found and "QR010" not in found
        (finding,) = [f for f in evaluate(ctx) if f.rule_id == "QR032"]
        assert f"held up to {depth} messages" in finding.message
        assert finding.severity == "warning"
    else:
        assert "QR032" not in found and "QR010" in found


@pytest.mark.parametrize(
    ("alarms", "silent"),
    [
        ((limits.METRIC_VISIBLE,), False),  # the depth alarm
        ((limits.METRIC_SENT,), True),  # misses what the redrive policy moves (QR011)
        ((), True),
    ],
)
def test_qr032_accepts_the_alarms_qr010_accepts(alarms: tuple[str, ...], silent: bool) -> None:
    dlq, members = dead_letter_queue(*alarms)
    ctx = context(dlq, *members, *observed(dlq, series(limits.METRIC_VISIBLE, "ordersdlq", 3)))
    assert ("QR032" in ids(evaluate(ctx))) is silent


def test_qr032_a_dead_letter_queue_fed_by_a_service_with_an_arrivals_alarm() -> None:
    # Services send their failures with SendMessage: an alarm on NumberOfMessagesSent sees them.
    dlq = queue("FailuresDlq")
    rule = row("Rule", "AWS::Events::Rule")
    alarm = row("Sent", ALARM, MetricName=limits.METRIC_SENT, AlarmActions=["arn:topic"])
    depth = observed(dlq, series(limits.METRIC_VISIBLE, "failuresdlq", 2))
    watched = context(
        dlq, ("feeder", "EventBridge", rule), (MEMBER_ALARM, limits.METRIC_SENT, alarm), *depth
    )
    unwatched = context(dlq, ("feeder", "EventBridge", rule), *depth)
    assert "QR032" not in ids(evaluate(watched))
    assert "QR032" in ids(evaluate(unwatched))


# --- QR033: throttled consumer -------------------------------------------------------------------


@pytest.mark.parametrize(("throttles", "fires"), [(0, False), (1, True), (12, True)])
def test_qr033_throttled_consumer(throttles: int, fires: bool) -> None:
    source = queue()
    function, members = consumed(source, {"ReservedConcurrentExecutions": 5}, {})
    ctx = context(
        source, *members, *observed(function, series("Throttles", "worker", 1, throttles))
    )
    findings = [f for f in evaluate(ctx) if f.rule_id == "QR033"]
    assert bool(findings) is fires
    if fires:
        (finding,) = findings
        assert finding.resource == "Worker"
        assert f"throttled {throttles} times" in finding.message
        assert "ReservedConcurrentExecutions 5" in finding.message


def test_qr033_without_reserved_concurrency() -> None:
    source = queue()
    function, members = consumed(source, {}, {})
    ctx = context(source, *members, *observed(function, series("Throttles", "worker", 1, 3)))
    (finding,) = [f for f in evaluate(ctx) if f.rule_id == "QR033"]
    assert "no ReservedConcurrentExecutions" in finding.message


# --- QR034: idle queue ---------------------------------------------------------------------------


def test_idle_coverage_is_a_week() -> None:
    assert IDLE_MIN_COVERAGE_DAYS == 7
    assert limits.SQS_METRICS_ACTIVE_HOURS == 6


@pytest.mark.parametrize(
    ("days", "judged"), [(6, False), (7 - 1 / DAY_MS, False), (7, True), (8, True)]
)
def test_qr034_a_queue_without_series_needs_a_week_of_coverage(days: float, judged: bool) -> None:
    source = queue()
    ctx = context(source, covered(days))
    findings = [f for f in evaluate(ctx) if f.rule_id == "QR034"]
    assert bool(findings) is judged
    if judged:
        (finding,) = findings
        assert finding.severity == "info"
        assert f"{days:g} days" in finding.message and "no data points" in finding.message


@pytest.mark.parametrize(("sent", "received", "idle"), [(0, 0, True), (1, 0, False), (0, 1, False)])
def test_qr034_totals_of_sent_and_received(sent: int, received: int, idle: bool) -> None:
    source = queue()
    ctx = context(
        source,
        covered(7),
        *observed(
            source,
            series(limits.METRIC_SENT, "orders", sent, sent),
            series(limits.METRIC_RECEIVED, "orders", received, received),
        ),
    )
    assert ("QR034" in ids(evaluate(ctx))) is idle


def test_qr034_zero_series_over_a_short_span_is_not_judged() -> None:
    source = queue()
    short = context(source, covered(6), *observed(source, series(limits.METRIC_SENT, "orders")))
    assert "QR034" not in ids(evaluate(short))


def test_qr034_leaves_dead_letter_queues_and_unobserved_queues_alone() -> None:
    dlq, members = dead_letter_queue(limits.METRIC_VISIBLE)
    assert "QR034" not in ids(evaluate(context(dlq, *members, covered(30))))
    assert "QR034" not in ids(evaluate(context(queue())))  # no --metrics at all


# --- no observations, no verdict ----------------------------------------------------------------


def test_no_behaviour_finding_without_observations() -> None:
    # GIVEN every fault the behaviour rules look for, configured, and nothing observed
    source = queue(VisibilityTimeout=3, MessageRetentionPeriod=60)
    _function, members = consumed(source, {"Timeout": 3}, {})
    assert behaviour(evaluate(context(source, *members))) == []
    dlq, dlq_members = dead_letter_queue()
    assert behaviour(evaluate(context(dlq, *dlq_members))) == []
    # and series of other resources than this context's members say nothing about it
    other = queue("Other")
    ctx = context(source, *members, *observed(other, series("Duration", "other", 10**6)))
    assert behaviour(evaluate(ctx)) == []


# --- settling the static verdicts -----------------------------------------------------------------


@pytest.mark.parametrize(("duration_ms", "settled"), [(4_999, True), (5_000, True), (5_001, False)])
def test_qr007_drops_to_info_when_the_longest_run_fits(duration_ms: int, settled: bool) -> None:
    # GIVEN visibility 30 s against a 10 s function: QR007 (6 x 10 s = 60 s recommended)
    source = queue(VisibilityTimeout=30)
    function, members = consumed(source, {"Timeout": 10}, {})
    (static,) = [f for f in evaluate(context(source, *members)) if f.rule_id == "QR007"]
    assert static.severity == "warning"
    # WHEN the function ran for at most 5 s: 6 x 5 s + 0 s = 30 s still fits
    ctx = context(source, *members, *observed(function, series("Duration", "worker", duration_ms)))
    (finding,) = [f for f in evaluate(ctx) if f.rule_id == "QR007"]
    if settled:
        assert finding.severity == "info"
        assert finding.message.startswith(static.message)
        assert (
            f"{duration_ms} ms" in finding.message and "30 s visibility timeout" in finding.message
        )
        assert f"6 x {duration_ms / 1000:g} s + 0 s batching window" in finding.message
    else:
        assert finding == static


def test_qr007_settling_counts_the_batching_window() -> None:
    # 6 x 4 s + 10 s window = 34 s > 30 s: the warning stays
    source = queue(VisibilityTimeout=30)
    function, members = consumed(source, {"Timeout": 5}, {"MaximumBatchingWindowInSeconds": 10})
    ctx = context(source, *members, *observed(function, series("Duration", "worker", 4_000)))
    (finding,) = [f for f in evaluate(ctx) if f.rule_id == "QR007"]
    assert finding.severity == "warning" and "observed" not in finding.message


def test_qr010_stays_for_a_dead_letter_queue_observed_empty() -> None:
    dlq, members = dead_letter_queue()
    ctx = context(dlq, *members, *observed(dlq, series(limits.METRIC_VISIBLE, "ordersdlq", 0)))
    assert "QR010" in ids(evaluate(ctx))


def test_the_dead_letter_queue_member_of_a_source_is_not_judged_for_it() -> None:
    # Series of a source's DLQ belong to the DLQ's own context: the source's gets no QR031/QR032.
    source = queue(RedrivePolicy={"maxReceiveCount": 5})
    dlq = queue("OrdersDlq")
    ctx = context(
        source,
        (MEMBER_DLQ, "", dlq),
        *observed(dlq, series(limits.METRIC_VISIBLE, "ordersdlq", 9)),
        *observed(dlq, series(limits.METRIC_OLDEST_AGE, "ordersdlq", 10**6)),
    )
    assert behaviour(evaluate(ctx)) == []


# --- the catalog ---------------------------------------------------------------------------------


def test_the_behaviour_rules_are_in_the_catalog() -> None:
    severities = {rule_id: severity for rule_id, severity, _, _ in describe_rules()}
    assert {r: severities[r] for r in BEHAVIOUR} == {
        "QR030": "error",
        "QR031": "error",
        "QR032": "warning",
        "QR033": "warning",
        "QR034": "info",
    }
    for rule_id in BEHAVIOUR:
        assert RULES_BY_ID[rule_id].fix


def test_templates_alone_never_get_a_behaviour_finding(tmp_path: Path) -> None:
    # GIVEN a template with a DLQ nobody watches and a consumer near its visibility timeout
    template = healthy("orders")
    props(template, "Source")["VisibilityTimeout"] = 30
    del template["Resources"]["DlqDepth"]
    path = write(tmp_path, "orders.template.json", template)
    # WHEN the template is audited as the in-app plugin audits an app's templates
    found = engine.audit_paths([str(path)]).findings
    # THEN the static rules judge it, at their catalog severity, and no behaviour rule does
    assert {(f.rule_id, f.severity) for f in found} == {("QR007", "warning"), ("QR010", "warning")}


def test_the_in_app_plugin_is_unaffected(tmp_path: Path) -> None:
    pytest.importorskip("aws_cdk")
    from constructs_lib.checks import QueueResilienceChecks

    template = healthy("orders")
    props(template, "Source")["VisibilityTimeout"] = 30
    path = write(tmp_path, "orders.template.json", template)

    class Templates:  # what CDK hands the plugin: the paths of the app's templates
        template_paths = (str(path),)

    plugin = QueueResilienceChecks(fail_on="never")
    report = plugin.validate(Templates())  # type: ignore[arg-type]
    assert report.success
    assert [(f.rule_id, f.severity) for f in plugin.findings] == [("QR007", "warning")]
    assert set(BEHAVIOUR) <= set(plugin.rule_ids or [])


def test_each_behaviour_rule_is_documented() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "audit" / "rules.md").read_text(encoding="utf-8")
    for rule_id, severity, _title, _fix in describe_rules():
        if rule_id in BEHAVIOUR:
            assert f'<a id="{rule_id.lower()}"></a>{rule_id} | {severity} |' in docs
            assert f"\n| {rule_id} | " in docs  # where its fact comes from
            assert f"| {rule_id} | the " in docs or f"| {rule_id} | a " in docs  # what it reads
