"""The end-to-end test app: ResilientQueue in the shapes the example uses, built for deploying.

Run by the tests as ``cdk --app "<python> deploy_app.py" -c e2eNamePrefix=<prefix>``. Two stacks
(standard and FIFO), each queue with SSE-SQS or a customer managed KMS key, a Lambda consumer with
a short timeout, and alarms that notify an SNS topic. Outputs name every physical resource the
tests look at, so they never guess a name the library chose.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_spec import NAME_PREFIX_CONTEXT, QUEUES, QueueSpec
from emulator import ACCOUNT, REGION

from constructs_lib import ResilientQueue

# The handler is never invoked here (the emulator cannot run functions); the tests play its part.
HANDLER = """
def handler(event, context):
    return {"batchItemFailures": []}
"""


def add_queue(stack: cdk.Stack, spec: QueueSpec, prefix: str, topic: sns.ITopic) -> None:
    key = None
    if spec.kms:
        key = kms.Key(
            stack,
            f"{spec.construct_id}Key",
            enable_key_rotation=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            pending_window=cdk.Duration.days(7),
        )
    resilient = ResilientQueue(
        stack,
        spec.construct_id,
        fifo=spec.fifo,
        max_receive_count=spec.max_receive_count,
        retention_period=cdk.Duration.days(spec.retention_days),
        dead_letter_retention_period=cdk.Duration.days(spec.dead_letter_retention_days),
        encryption_key=key,
        alarm_actions=[cw_actions.SnsAction(topic)],
        queue_name=spec.base_name(prefix),
    )
    function = lambda_.Function(
        stack,
        f"{spec.construct_id}Consumer",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline(HANDLER),
        timeout=cdk.Duration.seconds(spec.function_timeout),
    )
    resilient.add_lambda_consumer(
        function,
        batch_size=spec.batch_size,
        max_batching_window=(
            cdk.Duration.seconds(spec.batching_window) if spec.batching_window is not None else None
        ),
        max_concurrency=spec.max_concurrency,
        report_batch_item_failures=spec.report_batch_item_failures,
    )
    outputs = {
        "QueueUrl": resilient.queue.queue_url,
        "QueueArn": resilient.queue.queue_arn,
        "DeadLetterQueueUrl": resilient.dead_letter_queue.queue_url,
        "DeadLetterQueueArn": resilient.dead_letter_queue.queue_arn,
        "FunctionName": function.function_name,
        "RoleName": function.role.role_name if function.role else "",
    }
    if key is not None:
        outputs["KeyArn"] = key.key_arn
    for what, value in outputs.items():
        cdk.CfnOutput(stack, spec.output_id(what), value=value)


def build(app: cdk.App) -> None:
    prefix = str(app.node.try_get_context(NAME_PREFIX_CONTEXT) or "e2e")
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    stacks: dict[str, cdk.Stack] = {}
    for spec in QUEUES:
        if spec.stack not in stacks:
            stack = cdk.Stack(app, f"{prefix}-{spec.stack}", env=env)
            stacks[spec.stack] = stack
            sns.Topic(stack, "Alarms")
        stack = stacks[spec.stack]
        topic = stack.node.find_child("Alarms")
        assert isinstance(topic, sns.Topic)
        add_queue(stack, spec, prefix, topic)


if __name__ == "__main__":
    application = cdk.App()
    build(application)
    application.synth()
