"""Observed series joined to queues (``observations.py``): which series a context receives, by
the ARN a deployed resource carries, and what the reports say of the metrics input."""

from __future__ import annotations

import json

from constructs_lib.audit import model, report
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.model import AuditResult, CoverageRow, ResourceRow, SeriesRow

ACCOUNT, REGION = "111122223333", "eu-west-1"
DAY_MS = 24 * 3600 * 1000


def _row(uid: str, type_: str, physical: str | None) -> ResourceRow:
    properties = {} if physical is None else {model.PHYSICAL: physical}
    return ResourceRow(uid, "t", "s", uid, type_, json.dumps(properties))


def _series(namespace: str, name: str, metric: str, account: str = ACCOUNT) -> SeriesRow:
    return SeriesRow(account, REGION, namespace, metric, name, 1.0, 2.0, 3.0, 0, DAY_MS)


def test_arn_keys_follow_the_dimension_cloudwatch_publishes_by() -> None:
    assert observations.arn_key(f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders") == (
        ACCOUNT,
        REGION,
        "AWS/SQS",
        "orders",
    )
    assert observations.arn_key(f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:worker") == (
        ACCOUNT,
        REGION,
        "AWS/Lambda",
        "worker",
    )
    # a qualified function ARN, a topic, a queue URL: no series of their own by these names
    for other in (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:worker:live",
        f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts",
        f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/orders",
        "",
    ):
        assert observations.arn_key(other) is None


def test_a_context_receives_its_queue_dlq_and_functions_series_and_the_coverage() -> None:
    metrics = observations.Metrics.of(
        [
            _series("AWS/SQS", "orders", "ApproximateAgeOfOldestMessage"),
            _series("AWS/SQS", "orders", "NumberOfMessagesSent"),
            _series("AWS/Lambda", "worker", "Duration"),
            _series("AWS/SQS", "orders-dlq", "ApproximateNumberOfMessagesVisible"),
            # the same name in another account is another queue
            _series("AWS/SQS", "orders", "NumberOfMessagesSent", account="999999999999"),
        ],
        [CoverageRow(ACCOUNT, REGION, 0, 14 * DAY_MS)],
    )
    queue = _row("q", model.QUEUE, f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders")
    dlq = _row("d", model.QUEUE, f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq")
    function = _row("f", model.FUNCTION, f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:worker")
    group = [
        (model.MEMBER_QUEUE, "", queue),
        (model.MEMBER_DLQ, "", dlq),
        (model.MEMBER_FUNCTION, "m", function),
    ]
    context = model.build_context("q", group + observations.for_group(metrics, group))
    assert context is not None
    assert sorted((uid, s.metric) for uid, s in context.observed) == [
        ("d", "ApproximateNumberOfMessagesVisible"),  # its ledger's dead letters
        ("f", "Duration"),
        ("q", "ApproximateAgeOfOldestMessage"),
        ("q", "NumberOfMessagesSent"),
    ]
    assert context.series("q", "NumberOfMessagesSent") == _series(
        "AWS/SQS", "orders", "NumberOfMessagesSent"
    )
    assert context.series("d", "ApproximateNumberOfMessagesVisible") == _series(
        "AWS/SQS", "orders-dlq", "ApproximateNumberOfMessagesVisible"
    )
    assert context.coverage == CoverageRow(ACCOUNT, REGION, 0, 14 * DAY_MS)
    assert observations.observed(metrics, queue) and not observations.observed(
        metrics, _row("x", model.QUEUE, f"arn:aws:sqs:{REGION}:{ACCOUNT}:other")
    )


def test_a_resource_known_only_from_a_template_gets_no_series() -> None:
    metrics = observations.Metrics.of([_series("AWS/SQS", "orders", "NumberOfMessagesSent")], [])
    group = [(model.MEMBER_QUEUE, "", _row("q", model.QUEUE, None))]
    assert observations.for_group(metrics, group) == []


def test_reports_say_what_the_metrics_input_covered() -> None:
    metrics = observations.Metrics.of(
        [], [CoverageRow(ACCOUNT, REGION, 0, DAY_MS)], {"data_points": 1234, "problems": 2}
    )
    result = AuditResult([], [], 5, metrics=observations.summary(metrics, 3, 5))
    summary = report.summarize(result)
    assert summary["metrics"]["queues_with_metrics"] == 3
    assert summary["metrics"]["queues_without_metrics"] == 2
    said = "3 of 5 queues judged with their own series"
    for rendered in (
        report.render_table(result),
        report.render_markdown(result),
        report.render_html(result),
    ):
        assert said in rendered.replace("Metrics", "metrics")
        assert f"{ACCOUNT}/{REGION}" in rendered and "1,234 data points" in rendered
        assert "2 objects not read whole" in rendered
    plain = report.render_table(AuditResult([], [], 5))
    assert "judged with their own series" not in plain
