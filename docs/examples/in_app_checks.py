import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs

from constructs_lib.checks import QueueResilienceChecks

app = cdk.App()
stack = cdk.Stack(app, "Orders")

# A hand-rolled pipeline: no error (the DLQ has the right type and a longer retention, the
# visibility timeout covers 6 x 30 s), but no alarms, no TLS-only policy, no redrive-allow policy.
dead_letters = sqs.Queue(stack, "DeadLetters", retention_period=cdk.Duration.days(14))
queue = sqs.Queue(
    stack,
    "Queue",
    visibility_timeout=cdk.Duration.seconds(180),
    dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=5),
)
worker = lambda_.Function(
    stack,
    "Worker",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    timeout=cdk.Duration.seconds(30),
)
worker.add_event_source(event_sources.SqsEventSource(queue))

# Errors fail the synth; warnings are listed in the validation report.
cdk.Validations.of(app).add_plugins(QueueResilienceChecks())
app.synth()
