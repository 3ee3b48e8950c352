"""What the human formats (table, Markdown, HTML) say alike: the fleet view in sentences and
table cells, what a run accepted, whether a listing needs a state column, and where a deployed
resource lives (its account, region and ARN)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.model import Finding
from constructs_lib.audit.report import fleet
from constructs_lib.audit.report.summary import DEFAULT_GATE, Gate
from constructs_lib.audit.report.words import noun_for, plural


def accepted_text(summary: dict[str, Any]) -> str:
    """What the run accepted, as a sentence ("" when nothing was)."""
    parts = []
    if summary["suppressed"]:
        parts.append(f"{summary['suppressed']:,} suppressed")
    known = summary["baseline"]
    if known is not None:
        parts.append(
            f"against the baseline: {known['new']:,} new, {known['changed']:,} changed, "
            f"{known['unchanged']:,} unchanged, {known['fixed']:,} fixed"
        )
    regraded = sum(r["findings"] for r in summary.get("regraded", {}).values())
    if regraded:
        parts.append(
            f"{regraded:,} reported below or above their rule's catalog severity by the profile "
            "(--profile all reports the catalog's)"
        )
    return "; ".join(parts)


def metrics_text(summary: Mapping[str, Any]) -> str:
    """With ``--metrics``: how many queues were judged with their own series, and what the
    input covers; "" without it."""
    metrics = summary.get("metrics")
    if not metrics:
        return ""
    judged = metrics["queues_with_metrics"]
    covered = metrics["covered"]
    text = (
        f"metrics: {judged:,} of {judged + metrics['queues_without_metrics']:,} queues judged "
        f"with their own series; the input covers {len(covered):,} account-regions"
        + (f" ({', '.join(covered[:5])}{', ...' if len(covered) > 5 else ''})" if covered else "")
    )
    if metrics.get("data_points") is not None:
        text += f", {metrics['data_points']:,} data points read"
    problems = metrics.get("problems")
    if problems:
        text += f", {problems:,} objects not read whole (see the run's messages)"
    return text


def with_state(findings: list[Finding]) -> bool:
    """Whether a listing needs a state column: something was suppressed or compared."""
    return any(f.state != "open" for f in findings)


def deployed(findings: Iterable[Finding]) -> bool:
    """Whether a listing names where deployed resources live: some finding has an account."""
    return any(f.account for f in findings)


def physical_name(arn: str) -> str:
    """The last part of an ARN, what its service calls the resource: ``orders`` for a queue's
    ``arn:aws:sqs:eu-west-1:111122223333:orders``, ``worker`` for a function's
    ``...:function:worker``; a value that is no ARN as it is."""
    if not arn.startswith("arn:"):
        return arn
    return arn.split(":", 5)[-1].rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def where_text(finding: Finding) -> str:
    """Where a finding is, in one short cell: its template, or for a deployed stack (whose
    template is its stack ARN) ``account/region/stack``; ``file:line`` when the line is known."""
    if not finding.account:
        return f"{finding.template}:{finding.line}" if finding.line else finding.template
    return f"{finding.account}/{finding.region}/{finding.stack}"


def resource_text(finding: Finding, physical: str = "") -> str:
    """The finding's resource, with ``physical`` (its ARN, or a shorter form of it) beside it
    when the resource is deployed, or else its CDK construct path when the template has one
    (what a CDK user finds the resource by in the app's code)."""
    beside = physical or finding.construct_path
    if not beside:
        return finding.resource
    return f"{finding.resource} ({beside})" if finding.resource else beside


def rule_titles() -> dict[str, str]:
    """Each rule's title, by rule id."""
    return {rule_id: title for rule_id, _, title, _ in rules.describe_rules()}


def fleet_lead(summary: Mapping[str, Any], view: fleet.Fleet) -> str:
    """One sentence: how much of the fleet has something to act on."""
    return (
        f"{view.queues:,} of {plural(summary['queues'], 'queue')} "
        f"({fleet.share(view.queues, summary['queues'])}) in {plural(view.stacks, 'stack')} "
        f"{noun_for(view.queues, 'has', 'have')} findings to act on."
    )


def _severities_words(severities: tuple[str, ...]) -> str:
    """``errors``, ``errors and warnings``, ``errors, warnings and info``."""
    words = [noun_for(2, s) for s in severities]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def fleet_best(view: fleet.Fleet, titles: Mapping[str, str], gate: Gate = DEFAULT_GATE) -> str:
    """One sentence: the rule whose fix clears the most of the findings that decide the exit
    status (``gate``), and what it leaves clean."""
    best, severities = view.best_of(gate.deciding())
    if best is None:
        return ""
    title = titles.get(best.rule_id, "")
    named = f"{best.rule_id} ({title})" if title else best.rule_id
    clean = cleared(best)
    total = view.findings_of(severities)
    return (
        f"One fix clears the most: {named}, {best.findings:,} of the {total:,} "
        f"{_severities_words(severities)} ({fleet.share(best.findings, total)}) in "
        f"{plural(best.stacks, 'stack')}"
        + (f"; it alone leaves {clean} with nothing to act on." if clean != "-" else ".")
    )


def cleared(tally: fleet.RuleTally) -> str:
    """``3 queues, 2 stacks``: what fixing the rule alone leaves clean; ``-`` for nothing."""
    parts = []
    if tally.queues_cleared:
        parts.append(plural(tally.queues_cleared, "queue"))
    if tally.stacks_cleared:
        parts.append(plural(tally.stacks_cleared, "stack"))
    return ", ".join(parts) or "-"


def counts_text(summary: Mapping[str, Any]) -> str:
    """The counts in a sentence: ``3 findings (1 error, 2 warnings, 0 info) in 8 files: 0 clean,
    3 with findings, 0 unparseable, 5 not templates``."""
    severity = summary["by_severity"]
    files = [
        f"{summary['files_clean']:,} clean",
        f"{summary['files_with_findings']:,} with findings",
        f"{summary['files_unparseable']:,} unparseable",
    ]
    if summary.get("files_not_templates"):
        files.append(plural(summary["files_not_templates"], "not a template", "not templates"))
    return (
        f"{plural(summary['findings'], 'finding')} ({plural(severity['error'], 'error')}, "
        f"{plural(severity['warning'], 'warning')}, {plural(severity['info'], 'info')}) in "
        f"{plural(summary['files_read'], 'file')}: {', '.join(files)}"
    )


def not_templates_text(summary: Mapping[str, Any]) -> str:
    """The files skipped as no template, named (the first ``NOT_TEMPLATES_LISTED``); "" for
    none."""
    count = summary.get("files_not_templates", 0)
    if not count:
        return ""
    named = summary.get("not_templates", [])
    more = count - len(named)
    return (
        f"Skipped, not CloudFormation templates ({count:,}; no AWSTemplateFormatVersion, "
        f"Resources or Transform): {', '.join(named)}"
        + (f" and {plural(more, 'more file')}" if more > 0 else "")
    )


def queues_cell(tally: fleet.RuleTally) -> str:
    """How many queues a rule touches, ``-`` for none."""
    return f"{tally.queues:,}" if tally.queues else "-"


FLEET_RULE_HEADER = (
    "Rule",
    "Severity",
    "Queues affected",
    "Share of queues",
    "Stacks",
    "Findings",
    "Fixing it alone leaves clean",
)
FLEET_STACK_HEADER = ("Stack", "Template", "Errors", "Warnings", "Info", "Queues", "Rules")


def fleet_rule_cells(
    tally: fleet.RuleTally, queues: int, titles: Mapping[str, str]
) -> tuple[str, ...]:
    """A rule's row of the fleet view (``FLEET_RULE_HEADER``'s columns)."""
    title = titles.get(tally.rule_id, "")
    return (
        f"{tally.rule_id} {title}" if title else tally.rule_id,
        tally.severity,
        queues_cell(tally),
        fleet.share(tally.queues, queues) if tally.queues else "-",
        f"{tally.stacks:,}",
        f"{tally.findings:,}",
        cleared(tally),
    )


def stack_name(stack: fleet.StackTally) -> str:
    """How the fleet view names a stack, the unreadable files and an unnamed stack included."""
    if stack.rules == (rules.UNPARSEABLE_RULE,):
        return "(could not be read)"
    return stack.stack or "(no stack name)"


def fleet_stack_cells(stack: fleet.StackTally) -> tuple[str, ...]:
    """A worst stack's row of the fleet view (``FLEET_STACK_HEADER``'s columns)."""
    return (
        stack_name(stack),
        stack.template,
        f"{stack.by_severity.get('error', 0):,}",
        f"{stack.by_severity.get('warning', 0):,}",
        f"{stack.by_severity.get('info', 0):,}",
        f"{stack.queues:,}",
        " ".join(stack.rules),
    )


def worst_title(view: fleet.Fleet) -> str:
    """The worst stacks' heading, saying how many of the fleet's stacks it names."""
    shown = len(view.worst)
    return (
        f"Worst stacks ({shown:,} of {view.stacks:,})"
        if view.stacks > shown
        else f"Worst stacks ({shown:,})"
    )


def text_fleet_shown(view: fleet.Fleet) -> bool:
    """Whether the table and Markdown lead with the fleet view: when the findings to act on
    span more than one stack. For one stack (a pre-commit hook's few files, one app's pull
    request) the list that follows says it all."""
    return view.stacks > 1
