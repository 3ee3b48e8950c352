import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import LargePayloads, ResilientQueue, RetryBackoff

app = cdk.App()
stack = cdk.Stack(app, "Documents")
key = kms.Key(stack, "Key", enable_key_rotation=True)
on_call = sns.Topic(stack, "OnCall", enforce_ssl=True, master_key=key)


def function(name: str) -> lambda_.Function:
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline(
            "def handler(event, context):\n    return {'batchItemFailures': []}\n"
        ),
        timeout=cdk.Duration.seconds(60),
    )


# Bodies above the producer's threshold (256 KiB by default, as in AWS's Python extended
# client) go to S3, the message carries a pointer (the extended client's format). The bucket is created, encrypted with the queue's key and kept 14 + 1 days: the DLQ's
# retention (a standard DLQ counts it from the first send) plus a day's margin.
documents = ResilientQueue(
    stack,
    "Documents",
    queue_name="documents",
    encryption_key=key,
    alarm_actions=[actions.SnsAction(on_call)],
    large_payloads=LargePayloads(),
)
assert documents.payloads is not None
assert (documents.payloads.prefix, documents.payloads.expiration_days) == ("documents/", 15)

# The consumer reads and deletes under documents/ and gets the layer with
# constructs_lib.large_payloads (and constructs_lib.backoff, for its retry_backoff).
documents.add_lambda_consumer(function("Index"), retry_backoff=RetryBackoff())
# The producer may write under documents/; its environment says where.
upload = function("Upload")
documents.queue.grant_send_messages(upload)
documents.grant_redrive(iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal()))

# A FIFO queue's DLQ resets a message's clock: its payloads are kept for the source's
# retention (4 days) plus the DLQ's (14 days), plus the margin.
ledger = ResilientQueue(
    stack,
    "Ledger",
    queue_name="ledger.fifo",
    encryption_key=key,
    alarm_actions=[actions.SnsAction(on_call)],
    large_payloads=LargePayloads(consumers_delete=False),
)
assert ledger.payloads is not None and ledger.payloads.expiration_days == 4 + 14 + 1
ledger.add_lambda_consumer(function("Post"))

app.synth()
