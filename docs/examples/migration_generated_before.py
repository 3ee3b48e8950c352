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

# No queue_name: CloudFormation generates both names, as most hand-written queues have.
dlq = sqs.Queue(stack, "OrdersDlq")
queue = sqs.Queue(
    stack,
    "OrdersQueue",
    visibility_timeout=cdk.Duration.seconds(180),
    dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3),
)
worker.add_event_source(event_sources.SqsEventSource(queue, batch_size=10))

app.synth()
