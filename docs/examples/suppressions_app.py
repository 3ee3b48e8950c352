import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from cdk_nag import WriteNagSuppressionsToCloudFormationAspect

from constructs_lib import ResilientQueue
from constructs_lib.checks import QueueResilienceChecks

app = cdk.App()
stack = cdk.Stack(app, "Orders")
topic = sns.Topic(stack, "OnCall", enforce_ssl=True)
worker = lambda_.Function(
    stack,
    "Worker",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    timeout=cdk.Duration.seconds(30),
)

# Three receives before the DLQ is below the five AWS recommends for Lambda consumers (QR008):
# a deliberate choice here, accepted once with its reason.
orders = ResilientQueue(
    stack, "Orders", max_receive_count=3, alarm_actions=[actions.SnsAction(topic)]
)
orders.add_lambda_consumer(worker)
cdk.Validations.of(orders).acknowledge(
    cdk.Acknowledgment(
        id="constructs-lib-queue-resilience::QR008",
        reason="Orders are replayed from the event store, so three attempts are enough.",
    )
)

# The acknowledgment turns the construct's warning into an info and, copied into the template's
# Metadata by cdk-nag's aspect, makes the in-app plugin and the fleet audit list QR008 as
# suppressed with that reason.
cdk.Aspects.of(app).add(WriteNagSuppressionsToCloudFormationAspect())
cdk.Validations.of(app).add_plugins(QueueResilienceChecks(fail_on="warning"))
app.synth()
