import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Tenants")
on_call = sns.Topic(stack, "OnCall", enforce_ssl=True)
index = lambda_.Function(
    stack,
    "Index",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline(
        "def handler(event, context):\n    return {'batchItemFailures': []}\n"
    ),
    timeout=cdk.Duration.seconds(30),
)

# Documents from many customers share one queue. Producers set MessageGroupId to the customer
# id, which makes it a fair queue: SQS serves quiet customers first while one floods it.
documents = ResilientQueue(
    stack,
    "Documents",
    queue_name="documents",
    fair=True,
    # The nightly batch and the web uploads never leave an hour without a document: a silent
    # hour means a producer broke upstream.
    expected_traffic=cdk.Duration.hours(1),
    alarm_actions=[cloudwatch_actions.SnsAction(on_call)],
)
documents.add_lambda_consumer(index)

# An SNS standard topic forwards the publisher's MessageGroupId to the queue: nothing to set.
documents.add_producer(sns.Topic(stack, "Uploads", enforce_ssl=True))
# An EventBridge rule sets one group for all of its events: the partner feed is one tenant.
partner_feed = events.Rule(
    stack, "PartnerFeed", event_pattern=events.EventPattern(source=["partner.documents"])
)
documents.add_producer(partner_feed, message_group_id="partner-feed")

assert documents.alarms.no_messages_sent is not None
assert documents.alarms.quiet_groups_expiry_risk is not None
documents.add_dashboard("documents")

app.synth()
