"""A finding: what a rule reports on a resource, at which severity, and where it stands once
suppressions and a baseline have been applied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from constructs_lib.audit.model.resources import deployed_location
from constructs_lib.errors import Severity

# A finding's severity: a synth problem's (``constructs_lib.errors``), or "info", which the audit
# lists and counts but never fails on unless asked to (``--fail-on info``).
AuditSeverity = Literal[Severity, "info"]
# Lowest first: the order levels are listed in, and their rank for ``--fail-on``.
SEVERITIES: tuple[AuditSeverity, ...] = ("info", "warning", "error")
SEVERITY_RANK: dict[str, int] = {severity: rank for rank, severity in enumerate(SEVERITIES)}

# How a finding was accepted (SARIF's suppression kinds): by Metadata in the template itself,
# or by a suppressions file beside the audit (``--suppressions``).
IN_SOURCE = "inSource"
EXTERNAL = "external"
# Where a finding stands against a baseline (``--baseline``), in SARIF's words.
BASELINE_NEW = "new"
BASELINE_UNCHANGED = "unchanged"
# In the baseline, with other values in its message (a visibility timeout cut from 30 s to 20 s).
BASELINE_UPDATED = "updated"
BASELINE_ABSENT = "absent"  # in the baseline, no longer found: fixed
STATE_CHANGED = "changed"


def finding_state(suppression: str, baseline: str) -> str:
    """One word for people: "suppressed", "unchanged" (in the baseline), "changed" (in the
    baseline with other values), "new" (not in the baseline), "fixed" (in the baseline, gone
    now) or "open" (no baseline given)."""
    if suppression:
        return "suppressed"
    if baseline == BASELINE_ABSENT:
        return "fixed"
    if baseline == BASELINE_UPDATED:
        return STATE_CHANGED
    return baseline or "open"


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: AuditSeverity
    template: str
    stack: str
    resource: str
    queue: str
    message: str
    fix: str
    # "" while the finding counts; IN_SOURCE or EXTERNAL once a suppression accepts it
    suppression: str = ""
    justification: str = ""  # the suppression's reason, and where it was written
    # "" without a baseline; BASELINE_NEW, BASELINE_UNCHANGED or BASELINE_UPDATED with one
    # (BASELINE_ABSENT for a baseline entry no longer found)
    baseline: str = ""
    # Where a deployed resource lives: its stack's account and region (derived from the template
    # name, a stack ARN, when not given) and its ARN; "" for template files.
    account: str = ""
    region: str = ""
    physical: str = ""
    # The template of the queue the finding is about, when it is not the finding's own (a
    # consumer in another stack, judged with the queue it imports); "" when it is the same.
    queue_template: str = ""
    # Where the resource (or the property the rule is about) is written in ``template``, from 1;
    # 0 when not known. Not part of any fingerprint: an unrelated edit moves lines.
    line: int = 0
    column: int = 0
    construct_path: str = ""  # a CDK app's construct path (``aws:cdk:path``), when written

    def __post_init__(self) -> None:
        if not self.account and not self.region:
            account, region = deployed_location(self.template)
            object.__setattr__(self, "account", account)
            object.__setattr__(self, "region", region)

    @property
    def decides(self) -> bool:
        """Whether the finding counts towards the exit status: not suppressed, and not already
        known from the baseline."""
        return not self.suppression and self.baseline in ("", BASELINE_NEW)

    @property
    def state(self) -> str:
        """``finding_state`` of this finding."""
        return finding_state(self.suppression, self.baseline)

    def sort_key(self) -> tuple[str, str, str, str, str, str]:
        return (self.template, self.stack, self.resource, self.rule_id, self.queue, self.message)

    def as_dict(self) -> dict[str, str | int]:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "template": self.template,
            "stack": self.stack,
            "resource": self.resource,
            "queue": self.queue,
            "message": self.message,
            "fix": self.fix,
            "suppression": self.suppression,
            "justification": self.justification,
            "baseline": self.baseline,
            "account": self.account,
            "region": self.region,
            "physical": self.physical,
            "queue_template": self.queue_template,
            "line": self.line,
            "column": self.column,
            "construct_path": self.construct_path,
        }
