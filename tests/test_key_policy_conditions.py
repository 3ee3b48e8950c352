"""Every KMS permission in the synthesized example app and docs examples, read as IAM reads it.

A service principal acts for every customer of its service: a key statement for one must name
the source (``aws:SourceArn`` or ``aws:SourceAccount``, or the encryption-context condition the
service documents). An identity principal that only needs a queue's key through SQS must carry
``kms:ViaService``. The only statements allowed without either are listed in ``EXEMPT``, each with
the reason it cannot be narrowed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, SynthResult

EXAMPLES = sorted((REPO_ROOT / "docs" / "examples").glob("*.py"))
# Condition keys, compared case-insensitively as IAM compares them.
SOURCE_KEYS = {"aws:sourcearn", "aws:sourceaccount"}
# CloudWatch Logs documents the log group's encryption context as the condition of its key
# statement (CloudWatch Logs user guide, encrypt-log-data-kms).
DOCUMENTED_CONTEXT_KEYS = {"logs": {"kms:encryptioncontext:aws:logs:arn"}}
VIA_SERVICE = "kms:viaservice"
# Statements CDK writes that the library cannot narrow, with the reason.
EXEMPT = {
    "key-admin": (
        "CDK's default key policy statement: the account root may use the key (kms:*), which "
        "delegates the key to the account's IAM policies; every grant above it is an IAM or key "
        "policy statement this test checks. A key policy without it is unmanageable (KMS "
        "developer guide, key-policy-default)."
    ),
}


@dataclass(frozen=True)
class KmsStatement:
    where: str  # "<template> <logical id>"
    in_key_policy: bool
    statement: dict[str, Any]

    @property
    def actions(self) -> list[str]:
        action = self.statement.get("Action", [])
        return [action] if isinstance(action, str) else list(action)

    @property
    def condition_keys(self) -> set[str]:
        return {
            key.lower()
            for operator in self.statement.get("Condition", {}).values()
            for key in operator
        }

    @property
    def services(self) -> list[str]:
        principal = self.statement.get("Principal", {})
        service = principal.get("Service", []) if isinstance(principal, dict) else []
        services = service if isinstance(service, list) else [service]
        return [_text(s) for s in services]

    def exemption(self) -> str | None:
        principal = self.statement.get("Principal")
        if (
            self.in_key_policy
            and self.actions == ["kms:*"]
            and isinstance(principal, dict)
            and _is_account_root(principal.get("AWS"))
            and "Condition" not in self.statement
        ):
            return "key-admin"
        return None

    def fault(self) -> str | None:
        """Why IAM would read this statement as too wide, or None."""
        if self.exemption() is not None:
            return None
        keys = self.condition_keys
        if self.services:
            for service in self.services:
                name = service.split(".")[0]
                if not keys & (SOURCE_KEYS | DOCUMENTED_CONTEXT_KEYS.get(name, set())):
                    return f"service principal {service} without aws:SourceArn/aws:SourceAccount"
            return None
        if VIA_SERVICE not in keys:
            return "identity principal without kms:ViaService"
        return None


def _text(value: Any) -> str:
    """A resolved CloudFormation string as text (``Fn::Join`` joined, ``Ref`` as ``${...}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_text(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    return json.dumps(value)


def _is_account_root(value: Any) -> bool:
    text = json.dumps(value)
    return text.endswith(':root"]]}') or bool(re.search(r":root\"?$", text.strip('"')))


def kms_statements(name: str, template: dict[str, Any]) -> Iterator[KmsStatement]:
    for logical_id, resource in template.get("Resources", {}).items():
        kind, properties = resource["Type"], resource.get("Properties", {})
        documents: list[tuple[bool, dict[str, Any]]] = []
        if kind == "AWS::KMS::Key":
            documents.append((True, properties.get("KeyPolicy", {})))
        elif kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents.append((False, properties.get("PolicyDocument", {})))
        elif kind == "AWS::IAM::Role":
            documents += [(False, p["PolicyDocument"]) for p in properties.get("Policies", [])]
        for in_key_policy, document in documents:
            for statement in document.get("Statement", []):
                found = KmsStatement(f"{name} {logical_id}", in_key_policy, statement)
                if statement.get("Effect") == "Allow" and any(
                    a.lower().startswith("kms:") for a in found.actions
                ):
                    yield found


def faults(templates: dict[str, dict[str, Any]]) -> list[str]:
    return [
        f"{s.where}: {fault}: {json.dumps(s.statement)}"
        for name, template in templates.items()
        for s in kms_statements(name, template)
        if (fault := s.fault()) is not None
    ]


def test_the_example_app_grants_no_key_without_a_source_or_via_service(
    example_assembly: SynthResult,
) -> None:
    assert example_assembly.returncode == 0, example_assembly.output
    templates = example_assembly.templates()
    assert any(True for t in templates.values() for _ in kms_statements("", t))
    assert faults(templates) == []


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_a_docs_example_grants_no_key_without_a_source_or_via_service(
    example: Path, docs_example: Callable[[str], SynthResult]
) -> None:
    synthesized = docs_example(example.stem)
    assert synthesized.returncode == 0, synthesized.output
    assert faults(synthesized.templates()) == []


# --- the walker judges what it should --------------------------------------------------------


def _key_policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            "Key": {
                "Type": "AWS::KMS::Key",
                "Properties": {"KeyPolicy": {"Statement": list(statements)}},
            }
        }
    }


ROOT = {
    "Fn::Join": [
        "",
        ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":root"],
    ]
}


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        pytest.param(
            {
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
            },
            "service principal s3.amazonaws.com without aws:SourceArn/aws:SourceAccount",
            id="unconditioned-service",
        ),
        pytest.param(
            {
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": "kms:Decrypt",
                "Resource": "*",
                "Condition": {"ArnLike": {"AWS:SourceArn": "arn:aws:s3:::b"}},
            },
            None,
            id="service-with-source-any-case",
        ),
        pytest.param(
            {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::111122223333:role/ops"},
                "Action": "kms:Decrypt",
                "Resource": "*",
            },
            "identity principal without kms:ViaService",
            id="cross-account-identity",
        ),
        pytest.param(
            {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::111122223333:role/ops"},
                "Action": "kms:Decrypt",
                "Resource": "*",
                "Condition": {"StringEquals": {"kms:ViaService": "sqs.us-east-1.amazonaws.com"}},
            },
            None,
            id="identity-via-sqs",
        ),
        pytest.param(
            {"Effect": "Allow", "Principal": {"AWS": ROOT}, "Action": "kms:*", "Resource": "*"},
            None,
            id="cdk-key-admin",
        ),
        pytest.param(
            {
                "Effect": "Allow",
                "Principal": {"AWS": ROOT},
                "Action": ["kms:Decrypt"],
                "Resource": "*",
            },
            "identity principal without kms:ViaService",
            id="root-decrypt-is-not-the-admin-statement",
        ),
        pytest.param(
            {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "kms:*", "Resource": "*"},
            None,
            id="deny-ignored",
        ),
    ],
)
def test_the_walker_reads_key_statements_as_iam_does(
    statement: dict[str, Any], expected: str | None
) -> None:
    found = faults({"t": _key_policy(statement)})
    if expected is None:
        assert found == []
    else:
        [fault] = found
        assert expected in fault


def test_the_walker_reads_identity_policies() -> None:
    template = {
        "Resources": {
            "Policy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyDocument": {
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "kms:Decrypt",
                                "Resource": "arn:aws:kms:us-east-1:1:key/k",
                            }
                        ]
                    }
                },
            }
        }
    }

    [fault] = faults({"t": template})

    assert "t Policy: identity principal without kms:ViaService" in fault
