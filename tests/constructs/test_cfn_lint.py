"""cfn-lint, a peer that knows CloudFormation's rules (E3505 visibility vs function timeout,
E3004 circular dependencies, property ranges), judges the templates of every main shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from constructs_lib import LargePayloads, ResilientQueue, RetryBackoff
from tests.conftest import cfn_lint


def worker(stack: cdk.Stack, construct_id: str, timeout: int) -> lambda_.Function:
    return lambda_.Function(
        stack,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=cdk.Duration.seconds(timeout),
    )


def standard(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Orders", queue_name="orders")
    queue.add_lambda_consumer(
        worker(stack, "Worker", 900),
        batch_size=10_000,
        max_batching_window=cdk.Duration.seconds(300),
    )
    queue.add_dashboard()


def fifo_with_kms(stack: cdk.Stack) -> None:
    queue = ResilientQueue(
        stack, "Payments", fifo=True, encryption_key=kms.Key(stack, "Key", enable_key_rotation=True)
    )
    queue.add_lambda_consumer(worker(stack, "Worker", 1), batch_size=1, max_concurrency=2)


def several_consumers_and_an_imported_one(stack: cdk.Stack) -> None:
    # 1,000 receives x the slow consumer's 720 s must stay below the retention (13 days).
    queue = ResilientQueue(
        stack, "Jobs", max_receive_count=1000, retention_period=cdk.Duration.days(13)
    )
    queue.add_lambda_consumer(worker(stack, "Fast", 3))
    queue.add_lambda_consumer(worker(stack, "Slow", 120), max_concurrency=1000)
    imported = lambda_.Function.from_function_arn(
        stack, "Imported", "arn:aws:lambda:us-east-1:123456789012:function:legacy"
    )
    queue.add_lambda_consumer(imported, function_timeout=cdk.Duration.seconds(60))


def shortest_retention(stack: cdk.Stack) -> None:
    # One receive x 18 s visibility timeout, below a retention of one minute.
    queue = ResilientQueue(
        stack, "Brief", max_receive_count=1, retention_period=cdk.Duration.minutes(1)
    )
    queue.add_lambda_consumer(worker(stack, "Fast", 3))


def event_source_features(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Events", max_message_size=262_144)
    queue.add_lambda_consumer(worker(stack, "Polled", 30), provisioned_pollers=(2, 20))
    queue.add_dead_letter_consumer(worker(stack, "Archiver", 60), max_concurrency=2)
    queue.add_dashboard()


def large_payloads_fifo_with_kms_and_backoff(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    queue = ResilientQueue(
        stack, "Ledger", fifo=True, encryption_key=key, large_payloads=LargePayloads()
    )
    queue.add_lambda_consumer(worker(stack, "Post", 30), retry_backoff=RetryBackoff())
    queue.add_dead_letter_consumer(worker(stack, "Archive", 30))
    queue.queue.grant_send_messages(worker(stack, "Write", 30))


def large_payloads_standard(stack: cdk.Stack) -> None:
    queue = ResilientQueue(stack, "Uploads", large_payloads=LargePayloads(consumers_delete=False))
    queue.add_lambda_consumer(worker(stack, "Read", 30))


SHAPES: list[Callable[[cdk.Stack], None]] = [
    standard,
    fifo_with_kms,
    several_consumers_and_an_imported_one,
    shortest_retention,
    event_source_features,
    large_payloads_fifo_with_kms_and_backoff,
    large_payloads_standard,
]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    outdir = tmp_path_factory.mktemp("shapes")
    app = cdk.App(outdir=str(outdir))
    for shape in SHAPES:
        shape(cdk.Stack(app, shape.__name__.replace("_", "-")))
    app.synth()
    return sorted(outdir.glob("*.template.json"))


def test_every_shape_was_synthesized(templates: list[Path]) -> None:
    assert len(templates) == len(SHAPES)
    for template in templates:
        assert "AWS::SQS::Queue" in json.dumps(json.loads(template.read_text())["Resources"])


def test_cfn_lint_finds_nothing(templates: list[Path]) -> None:
    completed = cfn_lint(templates)
    assert completed.returncode == 0, completed.stdout + completed.stderr
