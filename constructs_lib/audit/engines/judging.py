"""What both engines judge with, whatever carries the rows: a template on its own (its notes,
an unreadable file), one queue's context (the rules, and with metrics its ledger), and a
reference that matched nothing.

The local engine (``local.py``) calls these over dictionaries, the Spark engine (``spark/``)
inside its Python passes on the executors, so their findings are the same.
"""

from __future__ import annotations

from constructs_lib.audit import model, rules
from constructs_lib.audit.accept import suppressions
from constructs_lib.audit.metrics import ledger
from constructs_lib.audit.model import EdgeRow, Finding, QueueLedger, ResourceRow
from constructs_lib.audit.parse import pipeline as templates
from constructs_lib.audit.parse.positions import locate, locate_all, row_source

_ROLE_LABEL = {
    model.ROLE_DLQ: "RedrivePolicy.deadLetterTargetArn",
    model.ROLE_ALLOW_SOURCE: "RedriveAllowPolicy.sourceQueueArns entry",
    model.ROLE_EVENT_SOURCE: "EventSourceArn",
    model.ROLE_FUNCTION: "FunctionName",
    model.ROLE_ALARM: "alarm dimension QueueName",
    model.ROLE_POLICY: "Queues entry",
    model.ROLE_FEEDS_DLQ: "dead-letter target",
}
_PRODUCER_LABEL = {
    model.PRODUCER_SNS: "subscription Endpoint",
    model.PRODUCER_EVENTBRIDGE: "target Arn",
    model.PRODUCER_S3: "notification queue",
}


def template_findings(parsed: model.ParsedTemplate) -> list[Finding]:
    """What one template yields on its own, before any resolution: its notes (QR900/QR901 on
    resources it could not read) and a QR901 when the file itself could not be read."""
    accepted = parsed.suppressions
    findings = [
        locate(
            suppressions.in_source(
                rules.note_finding(n), suppressions.for_resource(accepted, n.resource)
            ),
            parsed.sources.get(n.resource) if n.resource else None,
        )
        for n in parsed.notes
    ]
    if parsed.file.status not in ("ok", templates.NOT_TEMPLATE):
        findings.append(
            rules.unparseable_finding(parsed.file.file, parsed.file.stack, parsed.file.error)
        )
    return findings


def evaluate_group(queue_uid: str, group: list[tuple[str, str, ResourceRow]]) -> list[Finding]:
    """The findings of one queue's context, each placed where its resource is written."""
    return judge_group(queue_uid, group)[0]


def judge_group(
    queue_uid: str, group: list[tuple[str, str, ResourceRow]]
) -> tuple[list[Finding], QueueLedger | None]:
    """``evaluate_group``'s findings and the queue's ledger from the same context (None for a
    queue without series of its own: ``ledger.of_context``), explained by those findings' rules.
    Both engines call this where they judge a context; ``ledger.ranked`` finishes the ledgers."""
    context = model.build_context(queue_uid, group)
    if context is None:
        return [], None
    rows = {(row.file, row.logical_id): row for _, _, row in group}
    findings = locate_all(rules.evaluate(context), rows)
    found = (
        None if not context.observed else ledger.of_context(context, {f.rule_id for f in findings})
    )
    return findings, found


def unresolved_edge_finding(source: ResourceRow, edge: EdgeRow) -> Finding:
    """QR900 for a reference that matched nothing in the audited templates."""
    if edge.key.startswith(model.export_key(model.NESTED_PARAMETER)):
        reason = "the parameter has no default, no override, and no audited parent stack passes it"
    elif edge.key.startswith(model.export_key(model.NESTED_OUTPUT)):
        reason = "the nested stack's template is not among the audited files"
    elif edge.key.startswith("export:"):
        reason = f"no audited template exports {edge.key.removeprefix('export:')!r}"
    elif edge.key.startswith(model.NEVER_RESOLVES):
        reason = "its value cannot be known before deployment"
    else:
        reason = f"no audited template defines that {edge.kind}"
    if edge.role == model.ROLE_PRODUCER:
        label = _PRODUCER_LABEL.get(edge.detail, edge.role)
    else:
        label = _ROLE_LABEL.get(edge.role, edge.role)
    queue = source.logical_id if source.type == model.QUEUE else ""
    finding = rules.unresolved_finding(
        model.Resource.from_row(source),
        f"{source.type} {source.logical_id}: {label} {edge.text} not resolved: {reason}",
        queue,
    )
    return locate(finding, row_source(source))
