"""How a suppression of an audit rule is spelled and when its reason counts: the vocabulary the
constructs (acknowledgments read back from the construct tree) and the audit (Metadata and
suppressions files) share. No CDK and no audit code here.
"""

from __future__ import annotations

from typing import Any

# cdk-nag refuses a suppression whose reason is shorter than this (NagPackSuppression.reason,
# "minimum 10 characters"); queue-audit holds its suppressions to the same rule, so a reason
# that cdk-nag accepts is accepted here, and "ok" or "n/a" is not a reason.
MIN_REASON_LENGTH = 10
# The in-app validation plugin's name (checks.py): CDK acknowledges a plugin's rule as
# "<plugin>::<rule>", and cdk-nag's aspect copies that id into the template's Metadata.
PLUGIN_NAME = "constructs-lib-queue-resilience"
_PREFIXES = ("", f"{PLUGIN_NAME}::")
# cdk-nag's Metadata spelling: Metadata: {cdk_nag: {rules_to_suppress: [{id, reason}]}}.
CDK_NAG_KEY = "cdk_nag"
CDK_NAG_LIST = "rules_to_suppress"


def rule_of(suppression_id: Any) -> str | None:
    """The queue-audit rule an id names ("QR009", or the plugin's "<plugin>::QR009"); None
    for another tool's rule (AwsSolutions-SQS3, cfn-lint's W3005)."""
    if not isinstance(suppression_id, str):
        return None
    for prefix in _PREFIXES:
        rest = suppression_id.removeprefix(prefix) if prefix else suppression_id
        if (not prefix or rest != suppression_id) and _looks_like_rule(rest):
            return rest
    return None


def _looks_like_rule(text: str) -> bool:
    return len(text) == 5 and text.startswith("QR") and text[2:].isdigit()


def reason_problem(reason: Any) -> str | None:
    """Why a suppression's reason is not one, or None when it is."""
    if not isinstance(reason, str) or not reason.strip():
        return "gives no reason"
    if len(reason.strip()) < MIN_REASON_LENGTH:
        return f"gives the reason {reason.strip()!r}, shorter than {MIN_REASON_LENGTH} characters"
    return None
