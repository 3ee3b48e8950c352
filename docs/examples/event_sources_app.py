import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Imports")
on_call = sns.Topic(stack, "OnCall", enforce_ssl=True)


def function(name: str, timeout: int, reserved: int) -> lambda_.Function:
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline(
            "def handler(event, context):\n    return {'batchItemFailures': []}\n"
        ),
        timeout=cdk.Duration.seconds(timeout),
        reserved_concurrent_executions=reserved,
    )


imports = ResilientQueue(
    stack,
    "Imports",
    queue_name="imports",
    max_message_size=262_144,  # 256 KiB on the source and on its DLQ
    alarm_actions=[actions.SnsAction(on_call)],
    ok_actions=[actions.SnsAction(on_call)],
)
# Provisioned mode: 2 pollers always ready, at most 20 (each makes up to 10 concurrent
# invocations, so up to 200); reserved concurrency covers them. Event source metrics are on
# by default: the consumer's FailedInvokeEventCount alarm is consumer.failed_messages_alarm.
consumer = imports.add_lambda_consumer(
    function("Import", timeout=60, reserved=200),
    batch_size=20,  # 20 x 256 KiB = 5 MiB, within Lambda's 6 MB payload
    max_batching_window=cdk.Duration.seconds(5),
    provisioned_pollers=(2, 20),
)
# A consumer on the DLQ archives dead letters as they arrive. It drains the DLQ, so the
# construct adds an alarm on the DLQ's NumberOfMessagesReceived: imports.alarms.dead_letter_arrivals.
imports.add_dead_letter_consumer(function("Archive", timeout=30, reserved=5), max_concurrency=5)
imports.add_dashboard("imports")

failed = consumer.failed_messages_alarm  # None only with event_source_metrics=False
assert failed is not None
cdk.CfnOutput(stack, "FailedMessagesAlarm", value=failed.alarm_name)
app.synth()
