import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

from constructs_lib import ResilientQueue

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

# queue_name="orders" keeps the physical names "orders" and "orders-dlq".
orders = ResilientQueue(stack, "Orders", queue_name="orders")
orders.add_lambda_consumer(worker, batch_size=10)  # visibility 6 x 30 s = 180 s, as before


def keep_logical_id(construct: IConstruct, logical_id: str) -> None:
    """Give a resource the logical id it had, so CloudFormation updates it in place."""
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnResource), construct.node.path
    resource.override_logical_id(logical_id)


# The logical ids of the raw version, copied from its cdk.out/Orders.template.json.
mapping = next(c for c in worker.node.children if isinstance(c, lambda_.EventSourceMapping))
keep_logical_id(orders.queue, "OrdersQueue3DFA1D51")
keep_logical_id(orders.queue.node.find_child("Policy"), "OrdersQueuePolicy060934B1")
keep_logical_id(orders.dead_letter_queue, "OrdersDlq16CD0DA3")
keep_logical_id(orders.dead_letter_queue.node.find_child("Policy"), "OrdersDlqPolicy92ACC843")
keep_logical_id(mapping, "WorkerSqsEventSourceOrdersOrdersQueueEA10BA75C97A02A1")

app.synth()
