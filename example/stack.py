"""Two SQS -> Lambda pipelines as a platform team would write them with ResilientQueue."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Acknowledgment, ArnFormat, Duration, Stack, Validations
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from constructs_lib import LargePayloads, ResilientQueue, RetryBackoff

HANDLERS = Path(__file__).parent / "handlers"

# Why the example's functions carry these cdk-nag acknowledgments (none concerns a library resource).
ASYNC_DLQ_REASON = (
    "A function's dead-letter queue catches failed asynchronous invocations; this function is "
    "invoked only synchronously, by its SQS event source, and failed messages go to the source "
    "queue's dead-letter queue."
)
INLINE_POLICY_REASON = (
    "The role belongs to this one function and holds only the grants CDK writes for it (its log "
    "group, its queue, its key, X-Ray); a customer-managed policy would hold the same statements."
)
REDRIVE_POLICY_REASON = (
    "The role exists only to redrive failed payments; its one policy holds exactly the "
    "statements grant_redrive writes, scoped to the two payment queues and their key. A "
    "customer-managed policy would hold the same statements."
)
VPC_REASON = (
    "The function reaches only AWS service APIs (SQS through its event source, KMS, CloudWatch "
    "Logs, X-Ray) and no private network resource; VPC placement with interface endpoints is the "
    "network stack's decision, not this example's."
)


class PipelinesStack(Stack):
    """A standard orders pipeline (SSE-SQS) and a FIFO payments pipeline (SSE-KMS).

    Orders arrive from an SNS topic; a provisioned-mode consumer processes them, and a second
    function records the orders that end in the dead-letter queue. Payments' dead letters stay
    in their queue for an operator, whose role may redrive them to the source; their large bodies
    are kept in S3 (``large_payloads``), and the consumer reads them from there.
    """

    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        key = kms.Key(
            self,
            "PipelineKey",
            enable_key_rotation=True,
            description="Encrypts the payment queues, the alarm topic and the consumers' logs",
        )
        # CloudWatch Logs and CloudWatch alarms (publishing to the encrypted topic) use the key,
        # each bound to this account's resources: Logs by the log group's encryption context
        # (CloudWatch Logs user guide, encrypt-log-data-kms), CloudWatch by the source account
        # (IAM guide, aws:SourceAccount; SNS developer guide, key management).
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(f"logs.{self.region}.amazonaws.com")],
                actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": self.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": self.account}},
            )
        )
        alarm_topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        alarm_actions = [cloudwatch_actions.SnsAction(alarm_topic)]

        # Both tiers go to the one alarm topic (alarm_actions): critical alarms (dead letters,
        # messages about to expire, a consumer failing every message) as one page through the
        # composite alarm "orders-critical", warnings (in flight, some failed messages) each on
        # their own. A team that files tickets separately passes critical_actions= its paging
        # topic and warning_actions= its ticket topic instead.
        orders = ResilientQueue(
            self,
            "Orders",
            queue_name="orders",
            retention_period=Duration.days(4),
            alarm_actions=alarm_actions,
            ok_actions=alarm_actions,
            composite_alarm=True,
        )
        order_events = sns.Topic(self, "OrderEvents", master_key=key, enforce_ssl=True)
        orders.add_producer(order_events, raw_message_delivery=True)
        # Provisioned mode keeps 2 pollers ready and scales to 5, at most 50 concurrent
        # invocations: the handler's reserved concurrency. Pollers are billed while provisioned.
        orders.add_lambda_consumer(
            self._function("OrdersHandler", "orders.handler", Duration.seconds(30), key),
            batch_size=100,
            max_batching_window=Duration.seconds(5),
            provisioned_pollers=(2, 5),
            # A failed order comes back after 30 s, then 1, 2 and 4 minutes (less up to half at
            # random), not after the 185 s visibility timeout each time: the handler sets each
            # failed message's visibility with constructs_lib.backoff, which a layer provides.
            retry_backoff=RetryBackoff(base=Duration.seconds(30), cap=Duration.minutes(10)),
        )
        # Each handler reserves 50 concurrent executions; an uncapped SQS source would scale to
        # 1,250 and the throttled receives would push healthy messages to the DLQ.
        orders.add_dead_letter_consumer(
            self._function(
                "RejectedOrdersHandler", "rejected_orders.handler", Duration.seconds(10), key
            ),
            max_concurrency=50,
        )
        orders.add_dashboard()

        payments = ResilientQueue(
            self,
            "Payments",
            queue_name="payments",
            fifo=True,
            content_based_deduplication=True,
            encryption_key=key,
            alarm_actions=alarm_actions,
            ok_actions=alarm_actions,
            # Large bodies (a payment with its documents) go to a bucket encrypted with the
            # same key, under "payments.fifo/", kept 4 + 14 + 1 days: a FIFO DLQ
            # restarts a message's clock. The consumer reads and deletes there, the redrive
            # operator reads (docs/large-payloads.md).
            large_payloads=LargePayloads(),
        )
        payments.add_lambda_consumer(
            self._function("PaymentsHandler", "payments.handler", Duration.seconds(20), key),
            batch_size=10,
            max_concurrency=50,
        )
        payments.add_dashboard()
        redrive_operator = iam.Role(
            self,
            "PaymentsRedriveOperator",
            assumed_by=iam.AccountPrincipal(self.account),
            description="Moves failed payments back to the payments queue once their cause is fixed",
        )
        payments.grant_redrive(redrive_operator)
        acknowledge(
            redrive_operator,
            {
                "NIST.800.53.R5::NIST.800.53.R5-IAMNoInlinePolicy": REDRIVE_POLICY_REASON,
                "HIPAA.Security::HIPAA.Security-IAMNoInlinePolicy": REDRIVE_POLICY_REASON,
            },
        )

    def _function(
        self, construct_id: str, handler: str, timeout: Duration, key: kms.IKey
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{construct_id}Logs",
            retention=logs.RetentionDays.ONE_YEAR,
            encryption_key=key,
        )
        # A role of its own without the AWS managed basic-execution policy: it may write to its
        # own log group only. The queue grants what consuming needs.
        role = iam.Role(
            self,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
            construct_id,
            role=role,
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler=handler,
            code=lambda_.Code.from_asset(str(HANDLERS)),
            timeout=timeout,
            memory_size=256,
            reserved_concurrent_executions=50,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
        )
        acknowledge(
            role,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "X-Ray's PutTraceSegments and "
                "PutTelemetryRecords support no resource-level permissions; the tracing grant "
                "is the only wildcard.",
                "NIST.800.53.R5::NIST.800.53.R5-IAMNoInlinePolicy": INLINE_POLICY_REASON,
                "HIPAA.Security::HIPAA.Security-IAMNoInlinePolicy": INLINE_POLICY_REASON,
            },
        )
        acknowledge(
            function,
            {
                "Serverless::Serverless-LambdaDLQ": ASYNC_DLQ_REASON,
                "NIST.800.53.R5::NIST.800.53.R5-LambdaDLQ": ASYNC_DLQ_REASON,
                "HIPAA.Security::HIPAA.Security-LambdaDLQ": ASYNC_DLQ_REASON,
                "NIST.800.53.R5::NIST.800.53.R5-LambdaInsideVPC": VPC_REASON,
                "HIPAA.Security::HIPAA.Security-LambdaInsideVPC": VPC_REASON,
            },
        )
        return function


def acknowledge(scope: Construct, reasons: dict[str, str]) -> None:
    Validations.of(scope).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule, reason in reasons.items())
    )
