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

from constructs_lib import props
from constructs_lib.audit import discovery, engine, rules
from constructs_lib.audit.model import SEVERITY_RANK, Finding
from constructs_lib.errors import ConfigurationError

PLUGIN_NAME = "constructs-lib-queue-resilience"
PLUGIN_VERSION = "0.1.0"


@jsii.implements(IPolicyValidationPluginBeta1)
class QueueResilienceChecks:
    """Runs rules QR001-QR029 (and QR900/QR901) on the app's own templates.

    ``findings`` holds the last run's findings for programs (and tests) that want them.

    :param fail_on: "error" (default) fails the synth on error findings, "warning" also on
        warnings, "info" on any finding, "never" only reports. Another string is a
        ``ConfigurationError``, another type a ``TypeError``.
    """

    def __init__(self, fail_on: str = "error") -> None:
        arguments = {"fail_on": fail_on}
        props.CHECKS.check_kinds(lambda: PLUGIN_NAME, arguments)
        problems = props.CHECKS.read(arguments).problems
        if problems:
            raise ConfigurationError(PLUGIN_NAME, problems)
        self._fail_on = fail_on
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
        files = [(path, discovery.stack_name_for(path)) for path in context.template_paths]
        self.findings = list(engine.audit_files(files).findings)
        violations = [_violation(f) for f in self.findings]
        failed = self._fail_on != "never" and any(
            SEVERITY_RANK[f.severity] >= SEVERITY_RANK[self._fail_on] for f in self.findings
        )
        return PolicyValidationPluginReportBeta1(
            success=not failed, violations=violations, plugin_version=PLUGIN_VERSION
        )


def _violation(finding: Finding) -> PolicyViolationBeta1:
    title = rules.RULES_BY_ID[finding.rule_id].title if finding.rule_id in rules.RULES_BY_ID else ""
    return PolicyViolationBeta1(
        rule_name=f"{finding.rule_id} {title}".strip(),
        description=finding.message,
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
