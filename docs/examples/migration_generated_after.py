import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ExistingQueues, ResilientQueue

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

orders = ResilientQueue(
    stack,
    "Orders",
    existing=ExistingQueues(
        # The logical ids, from the old cdk.out/Orders.template.json.
        queue_logical_id="OrdersQueue3DFA1D51",
        dead_letter_logical_id="OrdersDlq16CD0DA3",
        event_source_logical_ids={
            "Worker": "WorkerSqsEventSourceOrdersOrdersQueueEA10BA75C97A02A1"
        },
        # CloudFormation generated the names: keep them, and name the deployed source (its URL
        # or name, from `aws cloudformation describe-stack-resources`) so that the DLQ admits
        # only this source.
        names_generated=True,
        queue_name="Orders-OrdersQueue3DFA1D51-1A2B3C4D5E6F",
    ),
)
orders.add_lambda_consumer(worker, batch_size=10)  # visibility 6 x 30 s = 180 s, as before

app.synth()
