import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs

app = cdk.App()
stack = cdk.Stack(app, "Orders")
worker = lambda_.Function(
    stack,
    "Worker",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline(
        "def handler(event, context):\n    return {'batchItemFailures': []}\n"
    ),
    timeout=cdk.Duration.seconds(30),
)

dlq = sqs.Queue(stack, "OrdersDlq", queue_name="orders-dlq", enforce_ssl=True)
queue = sqs.Queue(
    stack,
    "OrdersQueue",
    queue_name="orders",
    visibility_timeout=cdk.Duration.seconds(180),
    enforce_ssl=True,
    dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3),
)
worker.add_event_source(event_sources.SqsEventSource(queue, batch_size=10))

app.synth()
