"""Deployed stacks as an input (``--deployed``): which accounts and regions to read (targets),
and each target's stacks turned into the rows a template file gives, with what only the deployed
stack knows: its parameter values, its resources' ARNs, its nested stacks.

A deployed stack's template name is its stack ARN (``model.deployed_location`` reads the account
and region from it). Its queues and functions carry their ARN (``model.PHYSICAL``) and answer to
their deployed names, so a literal ARN in another stack, another account's included, resolves to
them. A nested stack's parent points at the child's ARN as at a local child template, so what
the parent passes and reads travels as it does between files (``model.NESTED_*``).

What cannot be read never stops the rest: a target that cannot be reached is one QR904 finding,
a stack whose template cannot be read one QR901 (the API calls are ``stacks``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constructs_lib.audit import model, optional, rules
from constructs_lib.audit.inputs import stacks
from constructs_lib.audit.inputs.stacks import DeployedStack, StackReadError, TargetError
from constructs_lib.audit.model import KeyRow, NoteRow, ParsedTemplate
from constructs_lib.audit.parse import documents, parameters, pipeline
from constructs_lib.audit.parse.dialects.cdk_assembly import ASSET_PATH_METADATA
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

# An IAM role ARN (IAM User Guide, "IAM identifiers": role names and paths use letters, digits
# and +=,.@_- ; the path adds slashes), in any partition (aws, aws-cn, aws-us-gov).
_ROLE_ARN = re.compile(r"^arn:(aws[a-z-]*):iam::(\d{12}):role/[\w+=,.@/-]+$")
ROLE_ARN_FORM = "arn:aws:iam::123456789012:role/NAME"
# A region code (us-east-1, ap-southeast-2, us-gov-west-1, eu-central-2).
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
# Stacks of a target are read this many at a time: the calls wait on the network, and adaptive
# retries slow them down where CloudFormation throttles.
STACK_READERS = 4
# Targets read at a time by the local engine.
TARGET_READERS = 4
# What DescribeStacks shows for a NoEcho parameter's value (CloudFormation User Guide, "Parameters":
# NoEcho): not the value, so the template's default stands in for it.
NO_ECHO = "****"
# QR904's template name for a whole target: every stack of the account and region.
_ALL_STACKS = "stack/*"


@dataclass(frozen=True)
class Target:
    """One account and region to read: the caller's own account (``role_arn`` None) or the
    account of a role the caller assumes."""

    role_arn: str | None
    region: str

    @property
    def account(self) -> str:
        """The role's account, "" for the caller's own (known once reached)."""
        found = _ROLE_ARN.match(self.role_arn or "")
        return found.group(2) if found else ""

    @property
    def partition(self) -> str:
        found = _ROLE_ARN.match(self.role_arn or "")
        return found.group(1) if found else "aws"

    def name(self, account: str = "") -> str:
        """What findings about the whole target name it by: its stacks' ARN pattern."""
        account = account or self.account
        return f"arn:{self.partition}:cloudformation:{self.region}:{account}:{_ALL_STACKS}"


def default_region() -> str | None:
    """The region boto3's default session is configured with (AWS_DEFAULT_REGION, the
    profile's config), None when none is."""
    boto3 = optional.require("boto3", "auditing deployed stacks")
    _, botocore_error = stacks.botocore_errors()
    try:
        region = boto3.session.Session().region_name
    except botocore_error as error:  # a profile that does not exist, a broken config file
        raise ValueError(f"--deployed cannot read the AWS configuration: {error}") from error
    return str(region) if region else None


def targets(regions: list[str], role_arns: list[str], include_caller: bool = True) -> list[Target]:
    """Every (account, region) pair to read: the caller's own account unless
    ``include_caller`` is False, and each role's; in ``regions``, or the configured region."""
    for role_arn in role_arns:
        if not _ROLE_ARN.match(role_arn):
            raise ValueError(
                f"--role-arn {role_arn!r} is not an IAM role ARN: write it as {ROLE_ARN_FORM}"
            )
    for region in regions:
        if not _REGION.match(region):
            raise ValueError(
                f"--region {region!r} is not an AWS region code: write it as us-east-1, "
                "eu-west-1, ..."
            )
    if not regions:
        configured = default_region()
        if configured is None:
            raise ValueError(
                "--deployed needs a region and none is configured: pass --region REGION "
                "(repeatable), or set AWS_DEFAULT_REGION or the profile's region"
            )
        regions = [configured]
    roles: list[str | None] = [None] if include_caller else []
    roles += list(dict.fromkeys(role_arns))
    return [Target(role, region) for role in roles for region in dict.fromkeys(regions)]


def read_role_arns_file(path: str | Path) -> list[str]:
    """Role ARNs, one a line; ``#`` starts a comment, blank lines are ignored."""
    arns: list[str] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        value = line.split("#", 1)[0].strip()
        if not value:
            continue
        if not _ROLE_ARN.match(value):
            raise ValueError(
                f"{path}, line {number}: {value!r} is not an IAM role ARN: write one ARN a "
                f"line, as {ROLE_ARN_FORM}"
            )
        arns.append(value)
    return arns


def unreachable(target: Target, error: TargetError, account: str = "") -> ParsedTemplate:
    """The one QR904 a target that could not be reached yields (``account``: the caller's,
    when known)."""
    name = target.name(account)
    who = f"role {target.role_arn}" if target.role_arn else "the caller's own account"
    message = (
        f"{who} in {target.region} was not audited: {error.operation} failed with "
        f"{error.code}: {error.message}"
    )
    parsed = ParsedTemplate(model.FileRow(name, "", "ok", "", 0))
    parsed.notes.append(NoteRow(name, "", "", "", rules.UNREACHABLE_RULE, message))
    return parsed


def audit_target(
    target: Target, limits: ReadLimits = DEFAULT_LIMITS, overrides: Overrides | None = None
) -> list[ParsedTemplate]:
    """Every deployed stack of one target, parsed; a QR904 when the target cannot be read."""
    session = None
    try:
        session = stacks.session_for(target.role_arn, target.region)
        client = session.client("cloudformation", config=stacks.client_config())
        listed = stacks.list_deployed(client)
    except TargetError as error:
        account = target.account or (stacks.caller_account(session) if session else "")
        return [unreachable(target, error, account)]
    with ThreadPoolExecutor(max_workers=STACK_READERS) as pool:
        read = list(pool.map(lambda stack: _read(client, *stack), listed))
    found = [s for s in read if isinstance(s, DeployedStack)]
    children = _child_ids(found)
    parsed = [p for p in read if isinstance(p, ParsedTemplate)]
    parsed += [_parse(stack, children, limits, overrides) for stack in found]
    return sorted(parsed, key=lambda p: p.file.file)


def audit_targets(
    chosen: Sequence[Target],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
) -> list[ParsedTemplate]:
    """``audit_target`` of every target, a few at a time (they wait on the network)."""
    if not chosen:
        return []
    with ThreadPoolExecutor(max_workers=TARGET_READERS) as pool:
        done = pool.map(lambda target: audit_target(target, limits, overrides), chosen)
        return [p for parsed in done for p in parsed]


def _read(client: Any, stack_id: str, name: str) -> DeployedStack | ParsedTemplate:
    try:
        return stacks.read_stack(client, stack_id, name)
    except StackReadError as error:
        return pipeline.unparseable(
            stack_id, name, f"{error.operation} failed with {error.code}: {error.message}"
        )


def _child_ids(found: Iterable[DeployedStack]) -> dict[str, str]:
    """Physical id of a nested stack resource -> the child's stack ARN. CloudFormation gives
    the child's ARN; some emulators give its name."""
    ids: dict[str, str] = {}
    for stack in found:
        ids[stack.stack_id] = stack.stack_id
        ids.setdefault(stack.name, stack.stack_id)
    return ids


def _parse(
    stack: DeployedStack,
    children: dict[str, str],
    limits: ReadLimits,
    overrides: Overrides | None,
) -> ParsedTemplate:
    """One stack's rows: parsed with its deployed parameter values (beneath any override the user
    gave for its name), then annotated with its resources' ARNs."""
    data = _with_nested_children(stack, children, limits)
    deployed = {k: v for k, v in stack.parameters.items() if v != NO_ECHO}
    given = overrides or {}
    stack_overrides = {k: v for k, v in given.items() if k == parameters.ALL_STACKS}
    stack_overrides[stack.name] = {**deployed, **given.get(stack.name, {})}
    parsed = pipeline.parse_template(stack.stack_id, stack.name, data, limits, stack_overrides)
    if parsed.file.status == "ok":
        annotate(parsed, stack)
    return parsed


def _with_nested_children(
    stack: DeployedStack, children: dict[str, str], limits: ReadLimits
) -> bytes:
    """The template, each nested stack resource pointing at its child's stack ARN (as a path
    relative to the parent's, the way a cloud assembly names a child template file)."""
    nested = {
        r.logical_id: children[r.physical_id]
        for r in stack.resources
        if r.type == "AWS::CloudFormation::Stack" and r.physical_id in children
    }
    if not nested:
        return stack.template
    try:
        document = documents.load_document(stack.stack_id, stack.template, limits)
    except Exception:  # a template that cannot be read: parse_template reports it (QR901)
        return stack.template
    resources = document.get("Resources") if isinstance(document, dict) else None
    for logical_id, child_id in nested.items():
        body = resources.get(logical_id) if isinstance(resources, dict) else None
        if isinstance(body, dict):
            metadata = body.get("Metadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            relative = os.path.relpath(child_id, os.path.dirname(stack.stack_id))
            body["Metadata"] = {**metadata, ASSET_PATH_METADATA: relative}
    return json.dumps(document, default=str).encode("utf-8")


def annotate(parsed: ParsedTemplate, stack: DeployedStack) -> None:
    """Each queue's and function's ARN in its properties (``model.PHYSICAL``), and keys by its
    deployed name so literal ARNs and names elsewhere resolve to it."""
    account, region = model.deployed_location(stack.stack_id)
    partition = stack.stack_id.split(":", 2)[1]
    physical = {r.logical_id: r.physical_id for r in stack.resources if r.physical_id}
    keys = {(k.uid, k.key) for k in parsed.keys}
    for index, row in enumerate(parsed.resources):
        found = physical.get(row.uid.rsplit("#", 1)[-1])
        arn_and_key = _arn_and_key(row.type, found, partition, region, account)
        if found is None or arn_and_key is None:
            continue
        arn, key = arn_and_key
        properties = json.loads(row.properties)
        properties[model.PHYSICAL] = arn
        parsed.resources[index] = row._replace(properties=_dumps(properties))
        if key is not None and (row.uid, key) not in keys:
            parsed.keys.append(KeyRow(row.uid, key))
            keys.add((row.uid, key))


def _arn_and_key(
    kind: str, physical_id: str | None, partition: str, region: str, account: str
) -> tuple[str, str | None] | None:
    """(ARN, resolution key) of a deployed queue (its physical id is its URL) or function (its
    name); the ARN alone of an event source mapping (its UUID) or an alarm (its name), which
    findings name; None for other resources."""
    if not physical_id:
        return None
    if kind == model.QUEUE:
        name = physical_id.rstrip("/").rsplit("/", 1)[-1]
        return f"arn:{partition}:sqs:{region}:{account}:{name}", model.queue_key(name)
    if kind == model.FUNCTION:
        name = physical_id.rsplit(":", 1)[-1] if physical_id.startswith("arn:") else physical_id
        arn = f"arn:{partition}:lambda:{region}:{account}:function:{name}"
        return arn, model.function_key(name)
    if kind == model.EVENT_SOURCE_MAPPING:
        return f"arn:{partition}:lambda:{region}:{account}:event-source-mapping:{physical_id}", None
    if kind == model.ALARM:
        return f"arn:{partition}:cloudwatch:{region}:{account}:alarm:{physical_id}", None
    return None


def _dumps(properties: dict[str, Any]) -> str:
    """Properties as ``parse.dialects.cloudformation`` writes them into a resource row."""
    return json.dumps(properties, sort_keys=True, default=str)
