"""The "before" of the Solutions Constructs adoption: SqsToLambda with its defaults (generated
queue names), run with aws-solutions-constructs.aws-sqs-lambda as pinned in
bench/peers/solutions-constructs.lock."""

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_solutions_constructs.aws_sqs_lambda import SqsToLambda

app = cdk.App()
stack = cdk.Stack(app, "Orders")
worker = lambda_.Function(
    stack,
    "Worker",
    runtime=lambda_.Runtime.PYTHON_3_13,
    handler="index.handler",
    code=lambda_.Code.from_inline(
        "def handler(event, context):\n    return {'batchItemFailures': []}\n"
    ),
    timeout=cdk.Duration.seconds(30),
)
SqsToLambda(stack, "Pair", existing_lambda_obj=worker)

app.synth()
