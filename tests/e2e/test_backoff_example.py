"""The deployed example's orders consumer backs off on the schedule ``retry_backoff=`` deployed.

The schedule is read back from the emulator (the orders function's environment, Lambda
GetFunctionConfiguration), and one order that can never be processed goes through the deployed
orders queue with the example's own handler code (``example/handlers/orders.py``) in that
environment. What the emulator cannot do: invoke the function. The test plays Lambda's poller
(``lambda_poller.py``), as the other example tests do with the mappings disabled
(``example_deployment``). The handler's ChangeMessageVisibility calls go to the emulator.

The example's schedule waits minutes (a 30 s base): instead of sleeping through it, the test
records the wait the handler asks SQS for on each receive (an event hook on the handler's own
client), checks it against the deployed schedule, checks the message is then invisible, and
makes it visible again itself. That the waits are kept in real time is shown with a 1 s base
in ``test_retry_backoff.py``. This module runs before ``test_example_app.py``, whose last test
destroys the example, and leaves both queues as it found them.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from constructs_lib import backoff_batch
from constructs_lib.backoff import ENV_BASE, Backoff
from example.handlers import orders
from tests.support.sqs_events import event_of

from .emulator import Emulator
from .example_deployment import ORDERS, ExampleDeployment
from .lambda_poller import receive_when_visible
from .messages import depth, drain, send

pytestmark = pytest.mark.e2e


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

    region = arn.split(":")[3]
    # The handler's own client (one per region and endpoint, kept across invocations).
    handler_client = backoff_batch._default_client(region)
    asked: list[tuple[str, int]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        asked.extend((e["ReceiptHandle"], e["VisibilityTimeout"]) for e in params["Entries"])

    event_name = "provide-client-params.sqs.ChangeMessageVisibilityBatch"
    handler_client.meta.events.register(event_name, record)
    try:
        for receive in range(1, ORDERS.max_receive_count + 1):
            messages, _ = receive_when_visible(sqs, pipeline.queue_url, timeout=10)
            [message] = messages
            assert int(message["Attributes"]["ApproximateReceiveCount"]) == receive
            response = orders.handler(event_of(messages, arn), None)
            # 1. Every receive failed and was reported.
            assert response == {"batchItemFailures": [{"itemIdentifier": sent_id}]}
            # 2. The wait asked for is the deployed schedule's: its ceiling less up to `jitter`
            # of it; none on the last receive, whose next receive dead-letters the message.
            [(handle, wait)] = asked[receive - 1 :]
            assert handle == message["ReceiptHandle"]
            ceiling = schedule.ceiling(receive)
            assert math.floor(ceiling * (1 - schedule.jitter)) <= wait <= ceiling, (receive, wait)
            if receive < ORDERS.max_receive_count:
                assert wait > 0
                # SQS keeps it: not visible now, far from its 185 s visibility timeout or 0.
                assert receive_when_visible(sqs, pipeline.queue_url, timeout=0)[0] == []
                sqs.change_message_visibility(
                    QueueUrl=pipeline.queue_url, ReceiptHandle=handle, VisibilityTimeout=0
                )
            else:
                assert wait == 0
    finally:
        handler_client.meta.events.unregister(event_name, record)

    # 3. The receive after the last moved it to the DLQ.
    assert receive_when_visible(sqs, pipeline.queue_url, timeout=2)[0] == []
    assert depth(sqs, pipeline.queue_url) == 0
    (dead,) = drain(sqs, pipeline.dead_letter_queue_url, expected=1)
    assert dead.message_id == sent_id
