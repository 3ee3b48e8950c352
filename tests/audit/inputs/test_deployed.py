"""``queue-audit --deployed`` against deployed stacks: moto's server on loopback, with stacks in
three accounts (the caller's and two reached through ``arn:aws:iam::ACCOUNT:role/audit``) and
two regions.

The server runs without ``MOTO_ACCOUNT_ID`` (the end-to-end emulator pins one account), so the
credentials decide the account, as in AWS: the assumed role's credentials act in the role's
account. The stacks and roles are created first; then the server checks every request against
IAM (moto's ``/moto-api/reset-auth``), and the audit runs as a user granted exactly the policy
docs/audit/deployed.md asks for. A role whose trust policy does not trust that user cannot be assumed.

moto creates nested stacks (``AWS::CloudFormation::Stack`` from a template in its S3); it gives
the child's name as the nested resource's physical id where CloudFormation gives its stack ARN,
and the audit takes either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import model
from constructs_lib.audit.engines import AuditInputs
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import deployed
from constructs_lib.audit.inputs.deployed import Target
from tests.audit.conftest import EngineAudit, healthy
from tests.e2e.emulator import REPO_ROOT
from tests.support.moto_accounts import (
    CALLER,
    EAST,
    NO_FILE,
    WEST,
    Fleet,
    as_account,
    create_stack,
    policy,
    queue_audit,
    session,
    start_server,
    trust,
    without_aws,
)

pytest.importorskip("boto3")

ACCOUNT_B = "111111111111"
ACCOUNT_C = "222222222222"
ROLE_B = f"arn:aws:iam::{ACCOUNT_B}:role/audit"
ROLE_C = f"arn:aws:iam::{ACCOUNT_C}:role/audit"
LOCKED_ROLE = f"arn:aws:iam::{CALLER}:role/locked"
# A role in C that may list and describe stacks but not read their templates.
PARTIAL_ROLE = f"arn:aws:iam::{ACCOUNT_C}:role/partial"
# The read-only policy docs/audit/deployed.md gives ("Deployed stacks").
AUDIT_ACTIONS = [
    "cloudformation:ListStacks",
    "cloudformation:DescribeStacks",
    "cloudformation:GetTemplate",
    "cloudformation:ListStackResources",
    "sts:AssumeRole",
]


def _queue(name: str, **properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": name, **properties}}


def _pipeline(name: str) -> dict[str, Any]:
    """A queue, its DLQ, their alarms and TLS-only policy: no findings (no consumer)."""
    template = healthy(name)
    del template["Resources"]["Fn"], template["Resources"]["Esm"]
    return template


def _caller_stacks(endpoint: str) -> None:
    """The caller's account: a queue without a DLQ (east), a healthy pipeline (west)."""
    create_stack(endpoint, session(EAST), "orders", {"Resources": {"Orders": _queue("orders")}})
    create_stack(endpoint, session(WEST), "payments", _pipeline("payments"))


def _account_b_stacks(endpoint: str, credentials: dict[str, str]) -> None:
    """Account B, east: a parameter with no default (its deployed value judged), an export and
    the stack that imports it, a function."""
    east = session(EAST, credentials)
    retention = {
        "Parameters": {"DlqRetention": {"Type": "Number"}},
        "Resources": {
            "Source": _queue(
                "billing",
                RedrivePolicy={
                    "deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]},
                    "maxReceiveCount": 5,
                },
            ),
            "Dlq": _queue("billing-dlq", MessageRetentionPeriod={"Ref": "DlqRetention"}),
        },
    }
    parameters = [{"ParameterKey": "DlqRetention", "ParameterValue": "60"}]
    create_stack(endpoint, east, "billing", retention, Parameters=parameters)
    shared = {
        "Resources": {"Dlq": _queue("shared-dlq", MessageRetentionPeriod=1209600)},
        "Outputs": {
            "DlqArn": {
                "Value": {"Fn::GetAtt": ["Dlq", "Arn"]},
                "Export": {"Name": "shared-dlq-arn"},
            }
        },
    }
    create_stack(endpoint, east, "shared", shared)
    importing = {
        "Resources": {
            "Invoices": _queue(
                "invoices",
                RedrivePolicy={
                    "deadLetterTargetArn": {"Fn::ImportValue": "shared-dlq-arn"},
                    "maxReceiveCount": 5,
                },
            )
        }
    }
    create_stack(endpoint, east, "invoices", importing)
    function = {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {"AssumeRolePolicyDocument": json.loads(trust("*"))},
            },
            "Worker": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "FunctionName": "worker",
                    "Runtime": "python3.12",
                    "Handler": "index.handler",
                    "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                    "Code": {"ZipFile": "def handler(event, context): pass"},
                },
            },
        }
    }
    create_stack(endpoint, east, "worker", function)


def _account_c_stacks(endpoint: str, credentials: dict[str, str]) -> None:
    """Account C, west: a parent stack whose nested child's queue takes its DLQ's ARN from the
    parent."""
    west = session(WEST, credentials)
    child = {
        "Parameters": {"DlqArn": {"Type": "String"}},
        "Resources": {
            "Events": _queue(
                "events",
                RedrivePolicy={"deadLetterTargetArn": {"Ref": "DlqArn"}, "maxReceiveCount": 5},
            )
        },
    }
    s3 = west.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket="templates", CreateBucketConfiguration={"LocationConstraint": WEST})
    s3.put_object(Bucket="templates", Key="child.json", Body=json.dumps(child).encode())
    parent = {
        "Resources": {
            "Dlq": _queue("events-dlq", MessageRetentionPeriod=1209600),
            "Child": {
                "Type": "AWS::CloudFormation::Stack",
                "Properties": {
                    "TemplateURL": "https://templates.s3.amazonaws.com/child.json",
                    "Parameters": {"DlqArn": {"Fn::GetAtt": ["Dlq", "Arn"]}},
                },
            },
        }
    }
    create_stack(endpoint, west, "events", parent)


def _iam(endpoint: str) -> tuple[str, str]:
    """The auditing user (its access key), the audit roles in B and C, a role in C that may not
    read templates, and a role in the caller's account that trusts someone else."""
    iam = session(EAST).client("iam", endpoint_url=endpoint)
    iam.create_user(UserName="auditor")
    iam.put_user_policy(
        UserName="auditor", PolicyName="audit", PolicyDocument=policy(AUDIT_ACTIONS)
    )
    key = iam.create_access_key(UserName="auditor")["AccessKey"]
    iam.create_role(
        RoleName="locked", AssumeRolePolicyDocument=trust("arn:aws:iam::999999999999:root")
    )
    for role_arn in (ROLE_B, ROLE_C):
        in_account = session(EAST, as_account(endpoint, role_arn)).client(
            "iam", endpoint_url=endpoint
        )
        in_account.create_role(
            RoleName="audit", AssumeRolePolicyDocument=trust(f"arn:aws:iam::{CALLER}:root")
        )
        in_account.put_role_policy(
            RoleName="audit", PolicyName="audit", PolicyDocument=policy(AUDIT_ACTIONS[:-1])
        )
    in_c = session(EAST, as_account(endpoint, ROLE_C)).client("iam", endpoint_url=endpoint)
    in_c.create_role(
        RoleName="partial", AssumeRolePolicyDocument=trust(f"arn:aws:iam::{CALLER}:root")
    )
    no_templates = [a for a in AUDIT_ACTIONS if a != "cloudformation:GetTemplate"]
    in_c.put_role_policy(
        RoleName="partial", PolicyName="audit", PolicyDocument=policy(no_templates[:-1])
    )
    return str(key["AccessKeyId"]), str(key["SecretAccessKey"])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """The server with every account's stacks, checking IAM from then on; stopped (its process,
    by id) at the end."""
    process, port = start_server(tmp_path_factory.mktemp("deployed") / "moto.log")
    endpoint = f"http://127.0.0.1:{port}"
    try:
        key_id, secret = _iam(endpoint)
        _caller_stacks(endpoint)
        _account_b_stacks(endpoint, as_account(endpoint, ROLE_B))
        _account_c_stacks(endpoint, as_account(endpoint, ROLE_C))
        request = urllib.request.Request(
            f"{endpoint}/moto-api/reset-auth",
            data=b"0",  # authorize every request from now on
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10):
            pass
        yield Fleet(endpoint, key_id, secret)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def as_auditor(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in fleet.env.items():
        monkeypatch.setenv(name, value)
    return fleet


def _audit(*chosen: Target) -> model.AuditResult:
    return engine.audit_files([], deployed=list(chosen))


def _stack_arn(result: model.AuditResult, name: str) -> str:
    return next(f.file for f in result.files if f.stack == name)


FLEET = deployed.targets([EAST, WEST], [ROLE_B, ROLE_C])


def test_the_fleet_as_deployed_across_accounts_and_regions(as_auditor: Fleet) -> None:
    result = _audit(*FLEET)
    stacks = {f.stack: model.deployed_location(f.file) for f in result.files}
    assert stacks == {
        "orders": (CALLER, EAST),
        "payments": (CALLER, WEST),
        "billing": (ACCOUNT_B, EAST),
        "shared": (ACCOUNT_B, EAST),
        "invoices": (ACCOUNT_B, EAST),
        "worker": (ACCOUNT_B, EAST),
        "events": (ACCOUNT_C, WEST),
        "events-Child-" + _child_suffix(result): (ACCOUNT_C, WEST),
    }
    assert all(f.status == "ok" for f in result.files)
    by_stack: dict[str, set[str]] = {}
    for finding in result.findings:
        by_stack.setdefault(finding.stack, set()).add(finding.rule_id)
    # the queue without a DLQ: the finding names its account, region, stack and ARN
    missing = [f for f in result.findings if f.rule_id == "QR001"]
    assert [(f.account, f.region, f.stack, f.physical) for f in missing] == [
        (CALLER, EAST, "orders", f"arn:aws:sqs:{EAST}:{CALLER}:orders")
    ]
    assert missing[0].template == _stack_arn(result, "orders")
    # the healthy pipeline: no finding
    assert "payments" not in by_stack, [f for f in result.findings if f.stack == "payments"]
    # the import of an export, the DLQ a parent passes its nested stack: resolved, and judged
    # (the hygiene rules these bare queues meet are beside the point)
    child = next(name for name in stacks if name.startswith("events-Child-"))
    for resolved in ("invoices", "shared", "events", child):
        assert not by_stack.get(resolved, set()) & {"QR001", "QR900", "QR901"}, resolved
    assert {"QR009", "QR025"} <= by_stack["invoices"]  # judged as a source queue with a DLQ
    # the parameter with no default is judged at its deployed value (60 s)
    retention = [f for f in result.findings if f.stack == "billing" and f.rule_id == "QR003"]
    assert len(retention) == 1 and "60" in retention[0].message
    assert "QR900" not in by_stack.get("billing", set())


def _child_suffix(result: model.AuditResult) -> str:
    child = next(f.stack for f in result.files if f.stack.startswith("events-Child-"))
    return child[len("events-Child-") :]


def test_rows_carry_arns_keys_and_the_nested_wiring(as_auditor: Fleet) -> None:
    parsed = {p.file.stack: p for p in deployed.audit_target(Target(ROLE_C, WEST))}
    parent = parsed["events"]
    child_name = next(name for name in parsed if name.startswith("events-Child-"))
    child_arn = parsed[child_name].file.file
    dlq = next(r for r in parent.resources if r.logical_id == "Dlq")
    assert (
        json.loads(dlq.properties)[model.PHYSICAL] == f"arn:aws:sqs:{WEST}:{ACCOUNT_C}:events-dlq"
    )
    assert model.KeyRow(dlq.uid, model.queue_key("events-dlq")) in parent.keys
    # the parent passes its DLQ to the child as the nested-stack export of the child's ARN
    passed = [e for e in parent.exports if e.name == model.nested_parameter(child_arn, "DlqArn")]
    assert passed and passed[0].queue_key == model.local_key(dlq.uid)
    functions = deployed.audit_target(Target(ROLE_B, EAST))
    worker = next(r for p in functions for r in p.resources if r.type == model.FUNCTION)
    assert json.loads(worker.properties)[model.PHYSICAL] == (
        f"arn:aws:lambda:{EAST}:{ACCOUNT_B}:function:worker"
    )


def test_a_role_that_cannot_be_assumed_is_one_finding_and_the_rest_is_audited(
    as_auditor: Fleet,
) -> None:
    result = _audit(*deployed.targets([EAST], [LOCKED_ROLE, ROLE_B]))
    unreachable = [f for f in result.findings if f.rule_id == "QR904"]
    assert len(unreachable) == 1
    finding = unreachable[0]
    assert finding.template == f"arn:aws:cloudformation:{EAST}:{CALLER}:stack/*"
    assert (finding.account, finding.region, finding.severity) == (CALLER, EAST, "error")
    assert "AccessDenied" in finding.message and LOCKED_ROLE in finding.message
    assert "sts:AssumeRole" in finding.fix
    audited = {f.stack for f in result.files if f.stack}
    assert audited == {"orders", "billing", "shared", "invoices", "worker"}


def test_a_template_that_cannot_be_read_is_one_finding_for_its_stack(as_auditor: Fleet) -> None:
    result = _audit(Target(PARTIAL_ROLE, WEST))
    assert {f.stack: f.status for f in result.files} == {
        "events": "unparseable",
        next(f.stack for f in result.files if f.stack.startswith("events-Child-")): "unparseable",
    }
    assert [f.rule_id for f in result.findings] == ["QR901", "QR901"]
    assert all("cloudformation:GetTemplate" in f.message for f in result.findings)
    assert all("AccessDenied" in f.message for f in result.findings)


def test_credentials_refused_are_one_finding_per_target(
    as_auditor: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWN000000000")
    result = _audit(*deployed.targets([EAST, WEST], []))
    assert sorted((f.rule_id, f.template) for f in result.findings) == [
        ("QR904", f"arn:aws:cloudformation:{WEST}::stack/*"),
        ("QR904", f"arn:aws:cloudformation:{EAST}::stack/*"),
    ]
    assert all("InvalidClientTokenId" in f.message for f in result.findings)


def test_the_command_line_audits_the_deployed_fleet(fleet: Fleet, tmp_path: Path) -> None:
    roles = tmp_path / "roles.txt"
    roles.write_text(f"# the audit roles\n{ROLE_B}\n\n{ROLE_C}  # account C\n")
    completed = queue_audit(
        [
            "--deployed",
            "--region",
            EAST,
            "--region",
            WEST,
            "--role-arns-file",
            str(roles),
            "--format",
            "json",
            "--quiet",
        ],
        {**without_aws(dict(os.environ)), **fleet.env},
        tmp_path,
    )
    assert completed.returncode == 1, completed.stderr  # QR001 and QR003 are errors
    findings = json.loads(completed.stdout)["findings"]
    assert {(f["rule_id"], f["stack"], f["account"], f["region"]) for f in findings} >= {
        ("QR001", "orders", CALLER, EAST),
        ("QR003", "billing", ACCOUNT_B, EAST),
    }
    assert not [f for f in findings if f["rule_id"] in ("QR901", "QR904")]


def test_spark_finds_what_the_local_engine_finds(
    as_auditor: Fleet, spark: Any, spark_audit: EngineAudit
) -> None:
    chosen = [*FLEET, Target(LOCKED_ROLE, EAST)]
    local = _audit(*chosen)
    # The executors read with their own credentials and endpoint: here, the auditor's.
    environment = spark.sparkContext.environment
    saved = dict(environment)
    environment.update(as_auditor.env)
    try:
        on_spark = spark_audit(AuditInputs([], chosen))
    finally:
        environment.clear()
        environment.update(saved)
    assert [f.as_dict() for f in on_spark.findings] == [f.as_dict() for f in local.findings]
    assert sorted(on_spark.files) == sorted(local.files)
    assert sum(f.rule_id == "QR904" for f in on_spark.findings) == 1


def test_role_arns_and_regions_are_checked_before_any_call() -> None:
    with pytest.raises(
        ValueError, match=r"'arn:aws:iam::12:role/x'.*arn:aws:iam::123456789012:role/NAME"
    ):
        deployed.targets([EAST], ["arn:aws:iam::12:role/x"])
    with pytest.raises(ValueError, match=r"'useast1'.*us-east-1"):
        deployed.targets(["useast1"], [])
    chosen = deployed.targets([EAST, WEST], [ROLE_B], include_caller=False)
    assert chosen == [Target(ROLE_B, EAST), Target(ROLE_B, WEST)]


def test_a_bad_line_of_the_role_arns_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "roles.txt"
    path.write_text(f"# accounts\n{ROLE_B}\n\nrole/audit\n")
    with pytest.raises(ValueError) as raised:
        deployed.read_role_arns_file(path)
    message = str(raised.value)
    assert str(path) in message and "line 4" in message and "'role/audit'" in message
    assert "arn:aws:iam::123456789012:role/NAME" in message
    path.write_text(f"{ROLE_B}  # B\n# C\n{ROLE_C}\n")
    assert deployed.read_role_arns_file(path) == [ROLE_B, ROLE_C]


def test_no_region_configured_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", NO_FILE)
    with pytest.raises(ValueError, match="--region"):
        deployed.targets([], [])
    monkeypatch.setenv("AWS_DEFAULT_REGION", WEST)
    assert deployed.targets([], []) == [Target(None, WEST)]


def test_the_command_line_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "AWS_REGION": EAST}
    for argv, said in (
        ([], "--deployed"),
        (["--deployed", "--role-arn", "role/audit"], "arn:aws:iam::123456789012:role/NAME"),
        (["--region", EAST, str(tmp_path)], "add --deployed"),
    ):
        completed = subprocess.run(
            [sys.executable, "-m", "constructs_lib.audit", *argv],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert completed.returncode == 2 and said in completed.stderr, (argv, completed.stderr)
