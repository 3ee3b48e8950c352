"""The whole CDK CLI cycle against the emulator: bootstrap, deploy, diff, destroy.

What the emulator cannot do here, and what covers it:

* ``cdk diff`` (default method) first calls CloudFormation DeleteChangeSet for a diff change set
  that does not exist yet. moto 5.2.5 answers HTTP 500 (``UnboundLocalError: to_delete`` in
  ``cloudformation/models.py delete_change_set``); the CLI retries for about 45 s and then falls
  back to comparing templates. The test runs ``cdk diff --method=template --fail`` (the CLI's
  template diff against GetTemplate, exit status 1 on any difference) and compares the deployed
  templates with the synthesized ones through boto3 GetTemplate.
* Stack Outputs: moto's ExecuteChangeSet does not evaluate them (DescribeStacks shows none after
  ``cdk deploy``), so nothing here depends on them; resources are found by logical id.
"""

from __future__ import annotations

import json
from typing import Any

import botocore.exceptions
import pytest

from .app_spec import QUEUES
from .deployment import app_args, deploy, load_templates, physical_ids, stack_names
from .emulator import CdkCli

pytestmark = pytest.mark.e2e
PREFIX = "cycle"


def queue_names(client_factory: Any) -> list[str]:
    urls = client_factory("sqs").list_queues(QueueNamePrefix=f"{PREFIX}-").get("QueueUrls", [])
    return sorted(url.rsplit("/", 1)[-1] for url in urls)


def test_bootstrap_created_the_toolkit_stack(bootstrapped: CdkCli, client_factory: Any) -> None:
    stack = client_factory("cloudformation").describe_stacks(StackName="CDKToolkit")["Stacks"][0]

    assert stack["StackStatus"] == "CREATE_COMPLETE"
    buckets = [b["Name"] for b in client_factory("s3").list_buckets()["Buckets"]]
    assert any(name.startswith("cdk-") and "-assets-" in name for name in buckets)


def test_deploy_then_diff_shows_no_changes_then_destroy_removes_everything(
    bootstrapped: CdkCli, client_factory: Any, e2e_tmp: Any
) -> None:
    cloudformation = client_factory("cloudformation")
    assembly = e2e_tmp / f"assembly-{PREFIX}"

    deployed = deploy(bootstrapped, PREFIX, assembly)

    assert deployed.returncode == 0, deployed.describe()
    templates = load_templates(assembly, PREFIX)
    created: dict[str, dict[str, str]] = {}
    for name in stack_names(PREFIX):
        stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE"
        body = cloudformation.get_template(StackName=name)["TemplateBody"]
        assert (json.loads(body) if isinstance(body, str) else body) == templates[name]
        created[name] = physical_ids(cloudformation, name)
    names = queue_names(client_factory)
    assert len(names) == 2 * len(QUEUES)
    assert sum(name.endswith(".fifo") for name in names) == 2 * sum(s.fifo for s in QUEUES)

    diff = bootstrapped.run(
        "diff", "--method=template", "--fail", *app_args(PREFIX, e2e_tmp / f"diff-{PREFIX}")
    )

    assert diff.returncode == 0, diff.describe()
    assert "Number of stacks with differences: 0" in diff.output, diff.describe()

    destroyed = bootstrapped.run("destroy", "--all", "--force", "--app", str(assembly))

    assert destroyed.returncode == 0, destroyed.describe()
    assert queue_names(client_factory) == []
    for name in stack_names(PREFIX):
        with pytest.raises(botocore.exceptions.ClientError):
            cloudformation.describe_stacks(StackName=name)
    types = {
        (stack, logical): resource["Type"]
        for stack, template in templates.items()
        for logical, resource in template["Resources"].items()
    }
    lambda_client = client_factory("lambda")
    functions = {f["FunctionName"] for f in lambda_client.list_functions()["Functions"]}
    mappings = {
        m["UUID"] for m in lambda_client.list_event_source_mappings()["EventSourceMappings"]
    }
    roles = {r["RoleName"] for r in client_factory("iam").list_roles()["Roles"]}
    keys = {k["KeyId"] for k in client_factory("kms").list_keys()["Keys"]}
    topics = {t["TopicArn"] for t in client_factory("sns").list_topics()["Topics"]}
    alarms = {
        a["AlarmName"] for a in client_factory("cloudwatch").describe_alarms()["MetricAlarms"]
    }
    remaining = {
        "AWS::CloudWatch::Alarm": alarms,  # created through the harness's adapter
        "AWS::Lambda::Function": functions,
        "AWS::Lambda::EventSourceMapping": mappings,
        "AWS::IAM::Role": roles,
        "AWS::KMS::Key": keys,
        "AWS::SNS::Topic": topics,
    }
    checked = [
        (ids[logical], types[(stack, logical)])
        for stack, ids in created.items()
        for logical in ids
        if types.get((stack, logical)) in remaining
    ]
    # per queue a function, its role, its event source and six alarms (four on the queues; on
    # the event source, its failed messages and its failing every message); a key per KMS queue;
    # a topic per stack
    expected = 9 * len(QUEUES) + sum(spec.kms for spec in QUEUES) + len(stack_names(PREFIX))
    assert len(checked) == expected
    for physical, resource_type in checked:
        assert physical not in remaining[resource_type], f"{resource_type} {physical} survived"
