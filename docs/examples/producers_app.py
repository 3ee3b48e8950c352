import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue

# A new app's cdk.json turns this flag on: CDK then scopes its SNS key statement to the topic.
app = cdk.App(context={"@aws-cdk/aws-sns-subscriptions:restrictSqsDescryption": True})
stack = cdk.Stack(app, "Intake")
key = kms.Key(stack, "QueueKey", enable_key_rotation=True)
intake = ResilientQueue(stack, "Intake", encryption_key=key)

# Each producer may send to the queue and use its key; each statement names that producer.
# The topic's undeliverable messages go to intake.sns_delivery_failures, not the DLQ.
orders = sns.Topic(stack, "Orders")
intake.add_producer(orders, raw_message_delivery=True)
refunds = events.Rule(stack, "Refunds", event_pattern=events.EventPattern(source=["shop.refunds"]))
intake.add_producer(refunds)
uploads = s3.Bucket(stack, "Uploads", enforce_ssl=True)
intake.add_producer(uploads, s3_filters=[s3.NotificationKeyFilter(prefix="incoming/")])

# The operator may move dead letters back to the source, and list and cancel those moves; its
# key statements hold only through SQS (kms:ViaService).
operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
intake.grant_redrive(operator)

app.synth()
