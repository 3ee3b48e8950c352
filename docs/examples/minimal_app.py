import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Orders")
topic = sns.Topic(stack, "OnCall", enforce_ssl=True)
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

orders = ResilientQueue(stack, "Orders", fifo=True, alarm_actions=[actions.SnsAction(topic)])
orders.add_lambda_consumer(worker, batch_size=10)
# orders.queue_name == "<generated>.fifo", its DLQ "<generated>-dlq.fifo";
# visibility timeout 6 x 30 s = 180 s; six alarms to the on-call topic (docs/alarms.md).

app.synth()
