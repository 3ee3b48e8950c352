import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Shipping")
on_call = sns.Topic(stack, "OnCall", enforce_ssl=True)
ship = lambda_.Function(
    stack,
    "Ship",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    timeout=cdk.Duration.seconds(30),
)

shipments = ResilientQueue(
    stack,
    "Shipments",
    queue_name="shipments",
    alarm_actions=[actions.SnsAction(on_call)],  # every alarm pages on-call...
    ok_actions=[actions.SnsAction(on_call)],  # ...and says when it recovers
    in_flight_alarm_threshold=2_000,  # this pipeline never holds more than a few hundred
)
shipments.add_lambda_consumer(ship)
shipments.add_dashboard("shipments")

# The four alarms, by what they catch:
for alarm in shipments.alarms:
    cdk.CfnOutput(stack, f"{alarm.node.id}Name", value=alarm.alarm_name)

app.synth()
