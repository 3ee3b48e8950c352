"""The catalog: every queue rule in id order, the ids a finding can carry, and
``evaluate``, which runs the rules on one queue's context and turns their outcomes into
findings (the static verdicts its observed metrics answer settled by ``behaviour.settle``)."""

from __future__ import annotations

from collections.abc import Iterable

from constructs_lib.audit.accept import suppressions
from constructs_lib.audit.model import (
    PARAMETER_SOURCES,
    PHYSICAL,
    AuditSeverity,
    Finding,
    QueueContext,
    Resource,
)
from constructs_lib.audit.model.outcomes import Hit, Rule, Unknowable, Unknown
from constructs_lib.audit.rules import (
    alarms,
    behaviour,
    consumers,
    dead_letters,
    encryption,
    event_sources,
    fifo,
    queue_policies,
)
from constructs_lib.audit.rules._reading import name_of
from constructs_lib.audit.rules.meta import META_RULES, unresolved_finding

CATALOG: tuple[Rule, ...] = tuple(
    sorted(
        (
            *dead_letters.RULES,
            *consumers.RULES,
            *event_sources.RULES,
            *alarms.RULES,
            *encryption.RULES,
            *queue_policies.RULES,
            *fifo.RULES,
            *behaviour.RULES,
        ),
        key=lambda rule: rule.id,
    )
)


RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in CATALOG}

# Every id a finding can carry: what a suppression may name.
RULE_IDS = frozenset([*RULES_BY_ID, *(m[0] for m in META_RULES)])

# The ids by what they judge: a queue (as configured, or as it runs: ``BEHAVIOUR_RULE_IDS``, read
# from observed metrics), or the audit itself. The plugin's docstring, the CLI's help and the
# rules page name them through ``id_ranges``, so none of them can name a rule the catalog lacks.
QUEUE_RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in CATALOG)
BEHAVIOUR_RULE_IDS: tuple[str, ...] = tuple(sorted(rule.id for rule in behaviour.RULES))
CONFIGURATION_RULE_IDS: tuple[str, ...] = tuple(
    rule_id for rule_id in QUEUE_RULE_IDS if rule_id not in BEHAVIOUR_RULE_IDS
)
META_RULE_IDS: tuple[str, ...] = tuple(sorted(m[0] for m in META_RULES))


def id_ranges(ids: Iterable[str]) -> str:
    """Rule ids as runs of consecutive numbers, in id order: "QR001-QR034 and QR900-QR904"."""
    runs: list[list[str]] = []
    for rule_id in sorted(ids):
        if runs and int(rule_id[2:]) == int(runs[-1][-1][2:]) + 1:
            runs[-1].append(rule_id)
        else:
            runs.append([rule_id])
    texts = [run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    return " and ".join(texts) if len(texts) <= 2 else f"{', '.join(texts[:-1])} and {texts[-1]}"


def describe_rules() -> list[tuple[str, AuditSeverity, str, str]]:
    """(id, severity, title, fix) for every rule the audit can report, in id order."""
    return sorted([(r.id, r.severity, r.title, r.fix) for r in CATALOG] + list(META_RULES))


def _parameter_sources(ctx: QueueContext, resource: Resource) -> str:
    """Where values of the judged resources came from, when a parameter gave them."""
    seen: dict[str, Resource] = {r.uid: r for r in (resource, ctx.queue)}
    for consumer in ctx.consumers:
        if consumer.mapping.uid == resource.uid and consumer.function is not None:
            seen[consumer.function.uid] = consumer.function
    notes = [
        f"{name_of(r)} {prop} from {source}"
        for r in seen.values()
        for prop, source in sorted((r.prop(PARAMETER_SOURCES) or {}).items())
    ]
    return f" [values: {'; '.join(notes)}]" if notes else ""


def _queue_elsewhere(ctx: QueueContext, resource: Resource) -> str:
    """The queue's template when the finding is on a resource of another template ("" when
    both are in one): the fleet view counts each queue in its own stack only."""
    return ctx.queue.file if resource.file != ctx.queue.file else ""


def evaluate(ctx: QueueContext, catalog: Iterable[Rule] = CATALOG) -> list[Finding]:
    """Every finding of every rule on this queue's context, QR900 for what it could not judge."""
    findings: dict[tuple[str, str, str, str], Finding] = {}
    queue = ctx.queue.logical_id
    for rule in catalog:
        try:
            outcomes = list(rule.check(ctx))
        except Unknowable as unknown:
            outcomes = [Unknown(unknown.resource, unknown.what)]
        except Exception as error:  # a template shape no rule foresaw is reported, not fatal
            outcomes = [Unknown(ctx.queue, f"unexpected property shape ({type(error).__name__})")]
        for outcome in outcomes:
            if isinstance(outcome, Hit):
                finding = suppressions.of_resource(
                    Finding(
                        rule.id,
                        rule.severity,
                        outcome.resource.file,
                        outcome.resource.stack,
                        outcome.resource.logical_id,
                        queue,
                        outcome.message + _parameter_sources(ctx, outcome.resource),
                        rule.fix,
                        physical=outcome.resource.prop(PHYSICAL) or "",
                        queue_template=_queue_elsewhere(ctx, outcome.resource),
                    ),
                    outcome.resource,
                )
            else:
                finding = unresolved_finding(
                    outcome.resource,
                    f"{rule.id} not judged for queue {name_of(ctx.queue)}: {outcome.what}",
                    queue,
                    _queue_elsewhere(ctx, outcome.resource),
                )
            findings[(finding.rule_id, finding.template, finding.resource, finding.message)] = (
                finding
            )
    return behaviour.settle(ctx, sorted(findings.values(), key=Finding.sort_key))
