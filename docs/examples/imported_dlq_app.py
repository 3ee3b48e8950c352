import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Orders", env=cdk.Environment(account="123456789012", region="eu-west-1"))

# A dead-letter queue another team owns. SQS does not say what an imported queue keeps, so
# without dead_letter_retention_period there would be no DLQ expiry alarm, and a warning.
shared_dlq_arn = "arn:aws:sqs:eu-west-1:123456789012:shared-dlq"
orders = ResilientQueue(
    stack,
    "Orders",
    dead_letter_queue=sqs.Queue.from_queue_arn(stack, "SharedDlq", shared_dlq_arn),
    dead_letter_retention_period=cdk.Duration.days(14),  # what shared-dlq keeps, as you know it
)
assert orders.alarms.dead_letter_expiry_risk is not None

app.synth()
