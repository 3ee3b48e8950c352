"""The deployed example's orders consumer backs off on the schedule ``retry_backoff=`` deployed.

The schedule is read back from the emulator (the orders function's environment, Lambda
GetFunctionConfiguration), and one order that can never be processed goes through the deployed
orders queue with the example's own handler code (``example/handlers/orders.py``) in that
environment. What the emulator cannot do: invoke the function. The test plays Lambda's poller
(``lambda_poller.py``), as the other example tests do with the mappings disabled
(``example_deployment``). The handler's ChangeMessageVisibility calls go to the emulator.

It waits the deployed schedule in real time (the example's 30 s base: a few minutes). This module
runs before ``test_example_app.py``, whose last test destroys the example, and leaves both queues
as it found them.
"""

from __future__ import annotations

from typing import Any

import pytest

from constructs_lib.backoff import ENV_BASE, Backoff
from example.handlers import orders

from .emulator import Emulator
from .example_deployment import ORDERS, ExampleDeployment
from .lambda_poller import POLL_INTERVAL, gaps, retry_until_gone
from .messages import depth, drain, send

pytestmark = pytest.mark.e2e
# As in test_retry_backoff.py: a gap is never shorter than the wait set (bar the emulator's
# millisecond rounding) and longer by at most a poll interval and a request or two.
EARLY = 0.01
LATE = POLL_INTERVAL + 1.5


def test_deployed_orders_consumer_backs_off_then_dead_letters(
    example_deployment: ExampleDeployment,
    client_factory: Any,
    emulator: Emulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = example_deployment.pipelines[ORDERS.queue_name]
    configuration = client_factory("lambda").get_function_configuration(
        FunctionName=pipeline.function_name
    )
    environment: dict[str, str] = configuration["Environment"]["Variables"]
    assert ENV_BASE in environment, "the orders consumer was deployed without retry_backoff="
    schedule = Backoff.from_environment(environment)
    # The queue's own limit and retention travel with the schedule.
    assert schedule.max_receive_count == ORDERS.max_receive_count
    assert schedule.retention_seconds == ORDERS.retention_days * 86_400
    # The function's environment, pointed at the emulator.
    for name, value in {**environment, **emulator.aws_env()}.items():
        monkeypatch.setenv(name, value)
    sqs = client_factory("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=pipeline.queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    sent_id = send(sqs, pipeline.queue_url, "not json: an order that can never be processed")

    attempts = retry_until_gone(
        sqs,
        pipeline.queue_url,
        arn,
        lambda event: orders.handler(event, None),
        wait_after=schedule.ceiling,
        receives_max=schedule.max_receive_count + 1,
        quiet_after=lambda n: schedule.ceiling(n) * (1 - schedule.jitter) - 1,
    )

    # 1. Every receive failed and was reported, up to the queue's maxReceiveCount.
    assert [a.receive_count for a in attempts] == list(range(1, ORDERS.max_receive_count + 1))
    for attempt in attempts:
        assert attempt.response == {"batchItemFailures": [{"itemIdentifier": sent_id}]}
    # 2. Each came back after its wait: the ceiling less up to `jitter` of it, far from the
    # queue's 185 s visibility timeout each time.
    for attempt, gap in zip(attempts, gaps(attempts), strict=False):
        ceiling = schedule.ceiling(attempt.receive_count)
        shortest = ceiling * (1 - schedule.jitter)
        assert shortest - EARLY <= gap <= ceiling + LATE, (attempt.receive_count, gap, ceiling)
    # 3. The last receive waited nothing: the next receive moved it to the DLQ.
    assert schedule.ceiling(ORDERS.max_receive_count) == 0
    assert depth(sqs, pipeline.queue_url) == 0
    (dead,) = drain(sqs, pipeline.dead_letter_queue_url, expected=1)
    assert dead.message_id == sent_id
