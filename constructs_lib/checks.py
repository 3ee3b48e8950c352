"""The audit's rule catalog as a CDK validation plugin, for apps built with raw ``sqs.Queue``.

    from aws_cdk import App, Validations
    from constructs_lib.checks import QueueResilienceChecks

    app = App()
    ...
    Validations.of(app).add_plugins(QueueResilienceChecks())

At synth, CDK hands the plugin the app's synthesized templates; the plugin runs the same
parse -> resolve -> evaluate steps as the fleet audit (in this process, without Spark), so
references between the app's stacks resolve the same way. Findings at or above ``fail_on``
fail the synth; all findings are listed in CDK's validation report.

Each violation's rule name is the bare rule id (``QR001``; its title starts the description),
so CDK's acknowledgment id for it is stable, ``constructs-lib-queue-resilience::QR001``:

    Validations.of(queue).acknowledge(
        Acknowledgment(id="constructs-lib-queue-resilience::QR001", reason="Drained by hand.")
    )

moves the violation to the report's suppressed violations. A suppression in the template's
Metadata (``cdk_nag: rules_to_suppress: [{id, reason}]``, which cdk-nag's
``WriteNagSuppressionsToCloudFormationAspect`` writes from such acknowledgments) is honoured as
the fleet audit honours it: the finding is no violation and never fails the synth, and stays in
``findings`` with its justification. A suppression whose reason is shorter than 10 characters is
not honoured and is reported as QR902. Once CDK acknowledges any of the plugin's violations, CDK
itself decides the synth: it fails on the error violations left, whatever ``fail_on`` says.
"""

from __future__ import annotations

import os

import jsii
from aws_cdk import (
    IPolicyValidationContextBeta1,
    IPolicyValidationPluginBeta1,
    PolicyValidationPluginReportBeta1,
    PolicyViolatingResourceBeta1,
    PolicyViolationBeta1,
)

from constructs_lib.audit import rules
from constructs_lib.audit.accept import apply as acceptance
from constructs_lib.audit.accept import profiles
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import template_names
from constructs_lib.audit.model import SEVERITY_RANK, Finding
from constructs_lib.errors import ConfigurationError
from constructs_lib.params import prop_tables
from constructs_lib.policy.suppression_terms import PLUGIN_NAME

PLUGIN_VERSION = "0.1.0"


@jsii.implements(IPolicyValidationPluginBeta1)
class QueueResilienceChecks:
    """Runs the audit's rules ({rule_ids}) on the app's own templates.

    ``findings`` holds the last run's findings for programs (and tests) that want them, the
    ones a template's Metadata suppresses included (``suppression``, ``justification``): those
    are no violations and never fail the synth.

    :param fail_on: "error" (default) fails the synth on error findings, "warning" also on
        warnings, "info" on any finding, "never" only reports. Another string is a
        ``ConfigurationError``, another type a ``TypeError``.
    :param profile: "all" (default): every rule at its catalog severity; "recommended": as
        ``queue-audit``'s default profile, the rules that fire on nearly every queue of a fleet
        ({lowered}) report as info (docs/audit/ci.md, "Profiles").
    """

    def __init__(self, fail_on: str = "error", profile: str = profiles.ALL) -> None:
        arguments = {"fail_on": fail_on, "profile": profile}
        prop_tables.CHECKS.check_kinds(lambda: PLUGIN_NAME, arguments)
        problems = prop_tables.CHECKS.read(arguments).problems
        if problems:
            raise ConfigurationError(PLUGIN_NAME, problems)
        self._fail_on = fail_on
        self._levels = profiles.levels(profile, acceptance.catalog_severities())
        self.findings: list[Finding] = []

    @property
    def name(self) -> str:
        return PLUGIN_NAME

    @property
    def version(self) -> str | None:
        return PLUGIN_VERSION

    @property
    def rule_ids(self) -> list[str] | None:
        return [rule_id for rule_id, *_ in rules.describe_rules()]

    def validate(self, context: IPolicyValidationContextBeta1) -> PolicyValidationPluginReportBeta1:
        files = [(path, template_names.stack_name_for(path)) for path in context.template_paths]
        found = engine.audit_files(files).findings
        self.findings = list(acceptance.regrade(found, self._levels))
        # A finding a suppression accepted is no violation: it stays in ``findings`` only.
        violations = [_violation(f) for f in self.findings if not f.suppression]
        failed = self._fail_on != "never" and any(
            f.decides and SEVERITY_RANK[f.severity] >= SEVERITY_RANK[self._fail_on]
            for f in self.findings
        )
        return PolicyValidationPluginReportBeta1(
            success=not failed, violations=violations, plugin_version=PLUGIN_VERSION
        )


# The docstring names the rules from the catalog and the profiles, so it cannot drift from them.
QueueResilienceChecks.__doc__ = (QueueResilienceChecks.__doc__ or "").format(
    rule_ids=rules.id_ranges(rules.RULE_IDS),
    lowered=", ".join(profiles.departures(profiles.RECOMMENDED)),
)


def _violation(finding: Finding) -> PolicyViolationBeta1:
    title = _title(finding.rule_id)
    return PolicyViolationBeta1(
        # The bare id: CDK acknowledges it as "<plugin>::<rule name>", which a reworded title
        # must not change.
        rule_name=finding.rule_id,
        description=f"{title}: {finding.message}" if title else finding.message,
        fix=finding.fix,
        severity=finding.severity,
        violating_resources=[
            PolicyViolatingResourceBeta1(
                locations=[],
                resource_logical_id=finding.resource or os.path.basename(finding.template),
                template_path=finding.template,
            )
        ],
    )


def _title(rule_id: str) -> str:
    if rule_id in rules.RULES_BY_ID:
        return rules.RULES_BY_ID[rule_id].title
    return next((title for meta_id, _, title, _ in rules.META_RULES if meta_id == rule_id), "")
