import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ConfigurationError, ResilientQueue, RetryBackoff
from constructs_lib.backoff import Backoff

app = cdk.App()
stack = cdk.Stack(app, "Orders")


def worker(name: str) -> lambda_.Function:
    # The handler sets each failed message's visibility with constructs_lib.backoff before
    # reporting it in batchItemFailures (see "Runtime helper"); the layer provides the module.
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline(
            "def handler(event, context):\n    return {'batchItemFailures': []}\n"
        ),
        timeout=cdk.Duration.seconds(30),
    )


# Eight receives, a 30 s function: visibility timeout 6 x 30 s = 180 s. The defaults wait 10, 20,
# 40, 80, 160, 320 and 640 s after the first seven failures, and not after the eighth.
orders = ResilientQueue(
    stack, "Orders", max_receive_count=8, retention_period=cdk.Duration.hours(1)
)
orders.add_lambda_consumer(
    worker("Fulfil"),
    retry_backoff=RetryBackoff(
        base=cdk.Duration.seconds(10), factor=2, cap=cdk.Duration.minutes(15), jitter=0.5
    ),
)
schedule = orders.consumers[0].settings.retry_backoff
assert schedule == Backoff(10, 2, 900, 0.5, max_receive_count=8, retention_seconds=3_600)
# Worst case: 180 + 180 + 180 + 180 + (30 + 160) + (30 + 320) + (30 + 640) + 180 = 2,110 s.
assert schedule.worst_case_seconds(orders.visibility_timeout, 30) == 2_110

# A 30-minute retention is enough without backoff (8 x 180 s = 1,440 s) but not with it: the
# message would expire before it reached the dead-letter queue.
refunds = ResilientQueue(
    stack, "Refunds", max_receive_count=8, retention_period=cdk.Duration.minutes(30)
)
refund = worker("Refund")
try:
    refunds.add_lambda_consumer(refund, retry_backoff=RetryBackoff())
except ConfigurationError as error:
    assert "2,110 s" in str(error) and "10, 20, 40, 80, 160, 320, 640, 0 s" in str(error)
else:
    raise AssertionError("a retention shorter than the worst case is refused")
# Capped at 2 minutes, no receive holds the message longer than the visibility timeout.
refunds.add_lambda_consumer(refund, retry_backoff=RetryBackoff(cap=cdk.Duration.minutes(2)))

app.synth()
