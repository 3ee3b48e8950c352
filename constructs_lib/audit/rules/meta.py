"""The meta rules, about the audit rather than a queue: a reference it could not resolve
(QR900), a template it could not read (QR901), a suppression it does not honour (QR902), SAM
resources without the SAM transform (QR903), an account or region it could not reach (QR904); and
the findings that carry them."""

from __future__ import annotations

from constructs_lib.audit.accept import suppressions
from constructs_lib.audit.model import PHYSICAL, AuditSeverity, Finding, NoteRow, Resource
from constructs_lib.policy import suppression_terms

UNRESOLVED_RULE = "QR900"
UNPARSEABLE_RULE = "QR901"
# AWS::Serverless resources in a template that does not declare the SAM transform
# (parse/dialects/sam.py).
MISSING_TRANSFORM_RULE = "QR903"
# An account or region of a deployed-stack audit that could not be read (inputs/deployed.py).
UNREACHABLE_RULE = "QR904"

META_RULES: tuple[tuple[str, AuditSeverity, str, str], ...] = (
    (
        UNRESOLVED_RULE,
        "info",
        "Reference the audit could not resolve",
        "include the template that defines it in the audit, or replace the parameter by a value",
    ),
    (
        UNPARSEABLE_RULE,
        "error",
        "Template that could not be read or parsed",
        "fix the file, or leave it out of the audit paths",
    ),
    (
        suppressions.SUPPRESSION_RULE,
        "warning",
        "Suppression that is not honoured",
        f"write it as Metadata {suppression_terms.CDK_NAG_KEY}.{suppression_terms.CDK_NAG_LIST} entries "
        "{id, reason} naming a rule queue-audit reports, with a reason of at least "
        f"{suppression_terms.MIN_REASON_LENGTH} characters; renew an expired entry of a suppressions "
        "file, or fix the findings it accepted",
    ),
    (
        MISSING_TRANSFORM_RULE,
        "info",
        "SAM resources without the SAM transform",
        "add `Transform: AWS::Serverless-2016-10-31` to the template (CloudFormation rejects "
        "AWS::Serverless resources without it), or audit the template that declares it",
    ),
    (
        UNREACHABLE_RULE,
        "error",
        "Account or region not audited",
        "grant the auditing identity cloudformation:ListStacks, cloudformation:DescribeStacks, "
        "cloudformation:GetTemplate and cloudformation:ListStackResources in that account and "
        "region, and sts:AssumeRole on the role (trusted by the role's trust policy); or drop "
        "the target from the audit",
    ),
)


def meta_fix(rule_id: str) -> str:
    return next(m[3] for m in META_RULES if m[0] == rule_id)


def unresolved_finding(
    resource: Resource, message: str, queue: str = "", queue_template: str = ""
) -> Finding:
    _, severity, _, fix = next(m for m in META_RULES if m[0] == UNRESOLVED_RULE)
    finding = Finding(
        UNRESOLVED_RULE,
        severity,
        resource.file,
        resource.stack,
        resource.logical_id,
        queue,
        message,
        fix,
        physical=resource.prop(PHYSICAL) or "",
        queue_template=queue_template,
    )
    return suppressions.of_resource(finding, resource)


def note_finding(note: NoteRow) -> Finding:
    _, severity, _, fix = next(m for m in META_RULES if m[0] == note.rule_id)
    return Finding(
        note.rule_id, severity, note.file, note.stack, note.resource, note.queue, note.message, fix
    )


def unparseable_finding(file: str, stack: str, error: str) -> Finding:
    _, severity, _, fix = next(m for m in META_RULES if m[0] == UNPARSEABLE_RULE)
    return Finding(
        UNPARSEABLE_RULE, severity, file, stack, "", "", f"could not read {file}: {error}", fix
    )
