import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_

from constructs_lib import ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Ledger")
key = kms.Key(stack, "QueueKey", enable_key_rotation=True)


def function(construct_id: str) -> lambda_.Function:
    return lambda_.Function(
        stack,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        timeout=cdk.Duration.seconds(60),
    )


# One key encrypts the source queue and its DLQ (SSE-KMS on both).
ledger = ResilientQueue(stack, "Ledger", encryption_key=key)
# The consumer gets kms:Decrypt on this key, through SQS only (kms:ViaService), along with its
# queue permissions.
ledger.add_lambda_consumer(function("Post"))
# Producers need the key too: grant_send_messages adds kms:GenerateDataKey* and kms:Decrypt,
# also bound to SQS.
ledger.queue.grant_send_messages(function("Publish"))

app.synth()
