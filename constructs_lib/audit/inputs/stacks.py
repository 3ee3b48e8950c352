"""The CloudFormation API calls of a deployed-stack audit: one account and region's deployed
stacks, each with its template, parameter values and physical resource ids.

Only read calls are made (``cloudformation:ListStacks``, ``DescribeStacks``, ``GetTemplate``,
``ListStackResources``, and ``sts:AssumeRole`` to reach another account). Sessions use boto3's
credential chain and configuration, as any AWS tool does, endpoint settings included
(``AWS_ENDPOINT_URL`` and its per-service forms): the audit names no endpoint. boto3 is imported
inside functions: the in-app validation plugin imports this package where boto3 may be absent.

Failures reaching the account or region (``TargetError``) and failures reading one stack
(``StackReadError``) carry the AWS error code; ``deployed`` turns them into findings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.audit import optional

# The stacks the audit reads: those whose resources exist as their template says. A stack that
# failed to create, is being deleted or is mid-update is left out (its resources are in flux).
# Status names: CloudFormation API Reference, StackSummary.StackStatus.
DEPLOYED_STATUSES = (
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_ROLLBACK_COMPLETE",
    "IMPORT_COMPLETE",
)
# What the audit's assumed-role sessions are called in the target account's CloudTrail.
SESSION_NAME = "queue-audit"
# Adaptive retries slow down on throttling, which a fleet-wide audit meets first on
# ListStackResources and GetTemplate; 10 attempts is botocore's cap for this mode's examples
# (botocore documentation, "Retries": max_attempts).
RETRIES = {"mode": "adaptive", "max_attempts": 10}
# GetTemplate's stages (CloudFormation API Reference, GetTemplate.TemplateStage): Processed has
# the transforms (SAM) expanded, Original is the template as submitted.
PROCESSED = "Processed"
ORIGINAL = "Original"
# The error code of a GetTemplate that refuses the Processed stage.
VALIDATION_ERROR = "ValidationError"


class TargetError(Exception):
    """An account or region that could not be reached: ``code`` is the AWS error code (or
    botocore's exception name), ``operation`` the call that failed."""

    def __init__(self, code: str, operation: str, message: str) -> None:
        super().__init__(f"{operation}: {code}: {message}")
        self.code = code
        self.operation = operation
        self.message = message


class StackReadError(TargetError):
    """One stack whose template, parameters or resources could not be read."""


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    type: str
    physical_id: str


@dataclass
class DeployedStack:
    """One deployed stack as the API gives it."""

    stack_id: str  # the stack's ARN
    name: str
    template: bytes = b""
    parameters: dict[str, str] = field(default_factory=dict)
    resources: list[StackResource] = field(default_factory=list)


def botocore_errors() -> tuple[type[Exception], type[Exception]]:
    """(ClientError, BotoCoreError): every exception botocore raises is one of the two."""
    exceptions = optional.require("botocore.exceptions", "auditing deployed stacks")
    return exceptions.ClientError, exceptions.BotoCoreError


def error_code(error: Exception) -> str:
    """The AWS error code of a ClientError, else botocore's exception name."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    return type(error).__name__


def _as_target_error(error: Exception, operation: str, kind: type[TargetError]) -> TargetError:
    response = getattr(error, "response", None)
    message = response.get("Error", {}).get("Message", "") if isinstance(response, dict) else ""
    return kind(error_code(error), operation, str(message or error))


def session_for(role_arn: str | None, region: str) -> Any:
    """A boto3 session in ``region``: the caller's own, or the role's, assumed with it."""
    boto3 = optional.require("boto3", "auditing deployed stacks")
    client_error, botocore_error = botocore_errors()
    try:
        session = boto3.session.Session(region_name=region)
    except botocore_error as error:  # a profile that does not exist, a broken config file
        raise _as_target_error(error, "configuration", TargetError) from error
    if role_arn is None:
        return session
    try:
        sts = session.client("sts", config=client_config())
        credentials = sts.assume_role(RoleArn=role_arn, RoleSessionName=SESSION_NAME)["Credentials"]
    except (client_error, botocore_error) as error:
        raise _as_target_error(error, "sts:AssumeRole", TargetError) from error
    return boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=region,
    )


def caller_account(session: Any) -> str:
    """The account of a session's credentials, asked once ("" when even that fails:
    GetCallerIdentity needs no permission, but valid credentials and an endpoint)."""
    client_error, botocore_error = botocore_errors()
    try:
        config = optional.require("botocore.config", "auditing deployed stacks")
        once = config.Config(retries={"mode": "standard", "max_attempts": 1})
        identity = session.client("sts", config=once).get_caller_identity()
    except (client_error, botocore_error):
        return ""
    return str(identity.get("Account", ""))


def client_config() -> Any:
    config = optional.require("botocore.config", "auditing deployed stacks")
    return config.Config(retries=dict(RETRIES))


def list_deployed(client: Any) -> list[tuple[str, str]]:
    """(stack ARN, stack name) of every deployed stack in the client's account and region, every
    page read."""
    client_error, botocore_error = botocore_errors()
    found: list[tuple[str, str]] = []
    try:
        pages = client.get_paginator("list_stacks").paginate(
            StackStatusFilter=list(DEPLOYED_STATUSES)
        )
        for page in pages:
            for summary in page.get("StackSummaries", []):
                if summary.get("StackStatus") in DEPLOYED_STATUSES:
                    found.append((str(summary["StackId"]), str(summary["StackName"])))
    except (client_error, botocore_error) as error:
        raise _as_target_error(error, "cloudformation:ListStacks", TargetError) from error
    return sorted(set(found))


def read_stack(client: Any, stack_id: str, name: str) -> DeployedStack:
    """A stack's processed template, parameter values and resources."""
    client_error, botocore_error = botocore_errors()
    operation = "cloudformation:GetTemplate"
    try:
        stack = DeployedStack(stack_id, name, _template(client, stack_id))
        operation = "cloudformation:DescribeStacks"
        described = client.describe_stacks(StackName=stack_id).get("Stacks", [])
        for parameter in described[0].get("Parameters", []) if described else []:
            # ResolvedValue: the value an SSM parameter type resolved to at deployment.
            value = parameter.get("ResolvedValue", parameter.get("ParameterValue"))
            if value is not None:
                stack.parameters[str(parameter["ParameterKey"])] = str(value)
        operation = "cloudformation:ListStackResources"
        stack.resources = list(_resources(client, stack_id))
    except (client_error, botocore_error) as error:
        raise _as_target_error(error, operation, StackReadError) from error
    return stack


def _template(client: Any, stack_id: str) -> bytes:
    """The template with its transforms expanded, or as submitted where the service refuses the
    processed stage (a SAM template is then expanded by the audit)."""
    client_error, _ = botocore_errors()
    try:
        body = client.get_template(StackName=stack_id, TemplateStage=PROCESSED)["TemplateBody"]
    except client_error as error:
        if error_code(error) != VALIDATION_ERROR:
            raise
        body = client.get_template(StackName=stack_id, TemplateStage=ORIGINAL)["TemplateBody"]
    if isinstance(body, str):
        return body.encode("utf-8")
    # botocore decodes a JSON template body into a mapping
    return json.dumps(body).encode("utf-8")


def _resources(client: Any, stack_id: str) -> Iterator[StackResource]:
    pages = client.get_paginator("list_stack_resources").paginate(StackName=stack_id)
    for page in pages:
        for summary in page.get("StackResourceSummaries", []):
            yield StackResource(
                str(summary["LogicalResourceId"]),
                str(summary.get("ResourceType", "")),
                str(summary.get("PhysicalResourceId", "")),
            )
