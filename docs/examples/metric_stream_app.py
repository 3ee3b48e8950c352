from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue

# S3 delivers server access logs under a bucket policy rather than the legacy log-delivery ACL.
app = cdk.App(context={"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True})
stack = cdk.Stack(app, "MetricStream")
# CloudWatch alarms publish to an encrypted topic only when its key lets them (SNS developer
# guide, "Enable compatibility between event sources from AWS services and encrypted topics"),
# here only for this account's alarms.
alarm_key = kms.Key(stack, "AlarmKey", enable_key_rotation=True)
alarm_key.add_to_resource_policy(
    iam.PolicyStatement(
        principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
        actions=["kms:Decrypt", "kms:GenerateDataKey*"],
        resources=["*"],  # in a key policy, this key
        conditions={
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {
                "aws:SourceArn": f"arn:{stack.partition}:cloudwatch:{stack.region}:"
                f"{stack.account}:alarm:*"
            },
        },
    )
)
on_call = sns.Topic(stack, "OnCall", enforce_ssl=True, master_key=alarm_key)
# the workload the stream watches
ResilientQueue(stack, "Orders", queue_name="orders", alarm_actions=[actions.SnsAction(on_call)])

# Longer than queue-audit's default 14-day window, so a run always finds a full window (and the
# day of slack it reads past it) even when the audit runs a few days late.
RETENTION = cdk.Duration.days(30)
PREFIX = "metric-stream/"  # Firehose adds YYYY/MM/DD/HH/, the layout the audit reads


def private_bucket(name: str, **encryption: Any) -> s3.Bucket:
    return s3.Bucket(
        stack,
        name,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        versioned=True,
        lifecycle_rules=[
            s3.LifecycleRule(
                expiration=RETENTION,
                noncurrent_version_expiration=cdk.Duration.days(1),
                abort_incomplete_multipart_upload_after=cdk.Duration.days(1),
            )
        ],
        **encryption,
    )


# S3 user guide, "Enabling Amazon S3 server access logging": a target bucket's default
# encryption can only be SSE-S3.
access_logs = private_bucket("AccessLogs", encryption=s3.BucketEncryption.S3_MANAGED)
key = kms.Key(stack, "Key", enable_key_rotation=True)
# No S3 Bucket Key: with one, KMS sees the bucket's ARN as encryption context, not the object's,
# and the delivery role's key grant below, bound to the objects under the prefix, would refuse.
output = private_bucket(
    "Output",
    encryption=s3.BucketEncryption.KMS,
    encryption_key=key,
    server_access_logs_bucket=access_logs,
    server_access_logs_prefix="output/",
)
for pack in ("NIST.800.53.R5", "HIPAA.Security"):
    cdk.Validations.of(access_logs).acknowledge(
        cdk.Acknowledgment(
            id=f"{pack}::{pack}-S3DefaultEncryptionKMS",
            reason="S3 delivers server access logs only to a bucket whose default encryption "
            "is SSE-S3.",
        )
    )
    # CloudWatch keeps the streamed data points itself (1-minute ones 15 days, 5-minute ones 63,
    # 1-hour ones 455: GetMetricStatistics), so a copy in another region adds nothing it lacks.
    for bucket in (access_logs, output):
        cdk.Validations.of(bucket).acknowledge(
            cdk.Acknowledgment(
                id=f"{pack}::{pack}-S3BucketReplicationEnabled",
                reason="The objects are CloudWatch metric data points, which CloudWatch keeps "
                "itself, and the access logs of them.",
            )
        )

# Firehose developer guide, "Allow Firehose to assume an IAM role": the trust names the account
# as the external id. "Grant Firehose access to an Amazon S3 destination": these six actions on
# the bucket and its objects and, for a bucket under a KMS key, the key through S3 only, for
# objects under the prefix only. A managed policy, not an inline one: reviewed and versioned apart
# from the role.
delivery_role = iam.Role(
    stack,
    "DeliveryRole",
    assumed_by=iam.ServicePrincipal(
        "firehose.amazonaws.com",
        conditions={"StringEquals": {"sts:ExternalId": stack.account}},
    ),
)
delivery_policy = iam.ManagedPolicy(
    stack,
    "DeliveryPolicy",
    roles=[delivery_role],
    statements=[
        iam.PolicyStatement(
            actions=[
                "s3:AbortMultipartUpload",
                "s3:GetBucketLocation",
                "s3:GetObject",
                "s3:ListBucket",
                "s3:ListBucketMultipartUploads",
                "s3:PutObject",
            ],
            resources=[output.bucket_arn, output.arn_for_objects("*")],
        ),
        iam.PolicyStatement(
            actions=["kms:Decrypt", "kms:GenerateDataKey"],
            resources=[key.key_arn],
            conditions={
                "StringEquals": {"kms:ViaService": f"s3.{stack.region}.amazonaws.com"},
                "StringLike": {
                    "kms:EncryptionContext:aws:s3:arn": output.arn_for_objects(f"{PREFIX}*")
                },
            },
        ),
    ],
)
output_id = stack.get_logical_id(cast(s3.CfnBucket, output.node.default_child))
cdk.Validations.of(delivery_policy).acknowledge(
    cdk.Acknowledgment(
        id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{output_id}.Arn>/*]",
        reason="Firehose names each object it writes itself (prefix, UTC hour, stream name, "
        "date and a UUID), so no grant can list the objects by name.",
    )
)
delivery = firehose.CfnDeliveryStream(
    stack,
    "Delivery",
    delivery_stream_type="DirectPut",
    delivery_stream_encryption_configuration_input=(
        firehose.CfnDeliveryStream.DeliveryStreamEncryptionConfigurationInputProperty(
            key_type="AWS_OWNED_CMK"
        )
    ),
    extended_s3_destination_configuration=(
        firehose.CfnDeliveryStream.ExtendedS3DestinationConfigurationProperty(
            bucket_arn=output.bucket_arn,
            role_arn=delivery_role.role_arn,
            prefix=PREFIX,
            compression_format="GZIP",
            buffering_hints=firehose.CfnDeliveryStream.BufferingHintsProperty(
                interval_in_seconds=60, size_in_m_bs=5
            ),
        )
    ),
)
delivery.node.add_dependency(delivery_policy)  # the grant exists before the first write

# CloudWatch guide, "Trust between CloudWatch and Firehose": the metric streams service
# principal, allowed to put records into this one delivery stream. That trust policy has no
# condition: the guide documents no source key for this principal, and one it does not send
# would stop delivery. Only who may pass this role (iam:PassRole) can point a stream at it.
stream_role = iam.Role(
    stack,
    "StreamRole",
    assumed_by=iam.ServicePrincipal("streams.metrics.cloudwatch.amazonaws.com"),
)
stream_policy = iam.ManagedPolicy(
    stack,
    "StreamPolicy",
    roles=[stream_role],
    statements=[
        iam.PolicyStatement(
            actions=["firehose:PutRecord", "firehose:PutRecordBatch"],
            resources=[delivery.attr_arn],
        )
    ],
)
stream = cloudwatch.CfnMetricStream(
    stack,
    "Stream",
    name="fleet",
    firehose_arn=delivery.attr_arn,
    role_arn=stream_role.role_arn,
    output_format="json",
    include_filters=[
        cloudwatch.CfnMetricStream.MetricStreamFilterProperty(namespace="AWS/SQS"),
        cloudwatch.CfnMetricStream.MetricStreamFilterProperty(namespace="AWS/Lambda"),
    ],
)
stream.node.add_dependency(stream_policy)

# queue-audit cdk.out --metrics s3://<bucket>/metric-stream/
cdk.CfnOutput(stack, "MetricsUrl", value=f"s3://{output.bucket_name}/{PREFIX}")

app.synth()
