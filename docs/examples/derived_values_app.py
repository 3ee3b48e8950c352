import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Invoices")
render = lambda_.Function(
    stack,
    "Render",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    timeout=cdk.Duration.seconds(40),
)
# A function defined in another app: its timeout cannot be read, so it must be given.
archive = lambda_.Function.from_function_arn(
    stack, "Archive", "arn:aws:lambda:us-east-1:123456789012:function:archive"
)

invoices = ResilientQueue(stack, "Invoices", retention_period=cdk.Duration.days(4))
# 6 x 40 s + 10 s window = 250 s
invoices.add_lambda_consumer(render, batch_size=50, max_batching_window=cdk.Duration.seconds(10))
# 6 x 60 s = 360 s: the largest over the consumers wins.
invoices.add_lambda_consumer(archive, function_timeout=cdk.Duration.seconds(60))
assert invoices.visibility_timeout == 360

# Alarm thresholds follow from the retention periods (4 days source, 14 days DLQ):
# source age alarm at 2 days, DLQ age alarm at (14 - 4) / 2 = 5 days.
for alarm, days in (
    (invoices.alarms.source_expiry_risk, 2),
    (invoices.alarms.dead_letter_expiry_risk, 5),
):
    threshold = alarm.node.default_child.threshold  # the CfnAlarm's value, in seconds
    assert threshold == days * 86_400, threshold

app.synth()
