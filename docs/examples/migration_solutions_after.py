import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Orders")
# SqsToLambda built the function from lambda_function_props; define it yourself instead.
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

orders = ResilientQueue(
    stack,
    "Orders",
    queue_name="orders",  # the name SqsToLambda's queue_props gave the queue, if any
    max_receive_count=5,  # SqsToLambda's default was 15
)
orders.add_lambda_consumer(worker, batch_size=10)

app.synth()
