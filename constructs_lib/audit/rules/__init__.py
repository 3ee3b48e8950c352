"""The rule catalog (QR001-QR034) as pure functions over one queue's context.

The Spark job, the single-process engine and the in-app validation plugin all call
``evaluate``; the numbers and decisions come from ``constructs_lib.limits`` and
``constructs_lib.policy``, the same ones the constructs use at synth time.

A rule that needs a value the audit could not resolve (a parameter, an unknown import) does not
guess: it reports the value as QR900 (info), naming the rule it could not judge.

One module per concern, each rule's check beside its ``Rule`` (id, severity, title, fix):
``dead_letters``, ``consumers`` (visibility and the consumer function), ``event_sources``,
``alarms``, ``encryption``, ``queue_policies``, ``fifo``, ``behaviour`` (QR030-QR034: a queue
judged by its observed CloudWatch metrics, and the static verdicts those settle); ``meta`` holds
QR900-QR904, and ``catalog`` assembles them and holds ``evaluate``. Shared by the rules:
``outcomes`` (``Rule``, ``Hit``, ``Unknown``), ``properties`` (reading property values) and
``context`` (a queue's consumers).
"""

from constructs_lib.audit.rules.catalog import (
    CATALOG,
    RULE_IDS,
    RULES_BY_ID,
    describe_rules,
    evaluate,
)
from constructs_lib.audit.rules.meta import (
    META_RULES,
    MISSING_TRANSFORM_RULE,
    UNPARSEABLE_RULE,
    UNREACHABLE_RULE,
    UNRESOLVED_RULE,
    meta_fix,
    note_finding,
    unparseable_finding,
    unresolved_finding,
)
from constructs_lib.audit.rules.outcomes import Rule

__all__ = [
    "CATALOG",
    "META_RULES",
    "MISSING_TRANSFORM_RULE",
    "RULES_BY_ID",
    "RULE_IDS",
    "UNPARSEABLE_RULE",
    "UNREACHABLE_RULE",
    "UNRESOLVED_RULE",
    "Rule",
    "describe_rules",
    "evaluate",
    "meta_fix",
    "note_finding",
    "unparseable_finding",
    "unresolved_finding",
]
