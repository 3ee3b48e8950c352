import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ExistingQueues, ResilientQueue

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
    max_receive_count=5,  # SqsToLambda's default was 15
    existing=ExistingQueues(
        # SqsToLambda lets CloudFormation generate the names (unless queue_props gave one).
        names_generated=True,
        queue_name="Orders-PairqueueF51BF5AC-1A2B3C4D5E6F",
        queue_logical_id="PairqueueF51BF5AC",
        queue_policy_logical_id="PairqueuePolicy0633EB23",
        dead_letter_logical_id="PairqueuedlqFF9DF9E0",
        dead_letter_policy_logical_id="PairqueuedlqPolicy937E2D91",
        event_source_logical_ids={"Worker": "WorkerSqsEventSourceOrdersPairqueue0FDEB3E69778DCC7"},
    ),
)
orders.add_lambda_consumer(worker, batch_size=10)

app.synth()
