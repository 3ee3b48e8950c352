import json
import tempfile
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import cloudformation_include as cfn_inc

from constructs_lib import ExistingQueues, ResilientQueue

# The stack serverless-lift deployed: queue "orders-jobs", DLQ "orders-jobs-dlq", the worker
# and its SQS event source mapping.
BEFORE = Path(__file__).with_name("migration_lift_before.template.json")
ADOPTED = (
    "jobsQueueCEDBAE3E",
    "jobsDlq47C8AE3D",
    "JobsWorkerEventSourceMappingSQSJobsQueueCEDBAE3E",
)

app = cdk.App()
stack = cdk.Stack(app, "Orders")
# Everything else stays as deployed; the queues and the mapping move to ResilientQueue.
template = json.loads(BEFORE.read_text())
for logical_id in ADOPTED:
    del template["Resources"][logical_id]
rest = Path(tempfile.mkdtemp()) / "rest.template.json"
rest.write_text(json.dumps(template))
included = cfn_inc.CfnInclude(stack, "Deployed", template_file=str(rest))
worker = lambda_.Function.from_function_attributes(
    stack,
    "Worker",
    function_arn=included.get_resource("JobsWorkerLambdaFunction").get_att("Arn").to_string(),
    same_environment=True,
)

jobs = ResilientQueue(
    stack,
    "Jobs",
    max_receive_count=5,  # lift's maxRetries default was 3
    existing=ExistingQueues(
        queue_name="orders-jobs",
        dead_letter_queue_name="orders-jobs-dlq",
        queue_logical_id="jobsQueueCEDBAE3E",
        dead_letter_logical_id="jobsDlq47C8AE3D",
        event_source_logical_ids={"Worker": "JobsWorkerEventSourceMappingSQSJobsQueueCEDBAE3E"},
    ),
)
# An imported worker: its timeout (lift's worker.timeout) must be given.
jobs.add_lambda_consumer(worker, batch_size=1, function_timeout=cdk.Duration.seconds(30))

app.synth()
