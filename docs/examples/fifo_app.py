import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Payments")
settle = lambda_.Function(
    stack,
    "Settle",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline(
        "def handler(event, context):\n    return {'batchItemFailures': []}\n"
    ),
    timeout=cdk.Duration.seconds(20),
)

# A name ending ".fifo" makes both queues FIFO: "payments.fifo" and "payments-dlq.fifo".
payments = ResilientQueue(
    stack,
    "Payments",
    queue_name="payments.fifo",
    content_based_deduplication=True,
    deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
    fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
)
# FIFO: batches of 1-10 and no batching window. Visibility timeout 6 x 20 s = 120 s.
payments.add_lambda_consumer(settle, batch_size=10)
assert payments.fifo and payments.visibility_timeout == 120

app.synth()
