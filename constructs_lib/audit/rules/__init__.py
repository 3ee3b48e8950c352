"""The rule catalog as pure functions over one queue's context.

The Spark job, the local engine and the in-app validation plugin all call ``evaluate``; the
numbers and decisions come from ``constructs_lib.limits`` and ``constructs_lib.policy``, the
same ones the constructs use at synth time.

A rule that needs a value the audit could not resolve (a parameter, an unknown import) does not
guess: it reports the value as QR900 (info), naming the rule it could not judge.

One module per concern, each rule's check beside its ``Rule`` (id, severity, title, fix):
``dead_letters``, ``consumers`` (visibility and the consumer function), ``event_sources``,
``alarms``, ``encryption``, ``queue_policies``, ``fifo``, ``behaviour`` (a queue judged by its
observed CloudWatch metrics, and the static verdicts those settle); ``meta`` holds the rules about
the audit itself, and ``catalog`` assembles them all, the single source of every rule's id,
severity, title and fix, and holds ``evaluate``. What a rule is and returns (``Rule``, ``Hit``,
``Unknown``) is the audit's vocabulary (``constructs_lib.audit.model.outcomes``); the rules'
private helpers read property values and a context's consumers (``_reading``) and a consumer's
retry backoff (``_backoff``).
"""

from constructs_lib.audit.model.outcomes import Rule
from constructs_lib.audit.rules.catalog import (
    BEHAVIOUR_RULE_IDS,
    CATALOG,
    CONFIGURATION_RULE_IDS,
    META_RULE_IDS,
    QUEUE_RULE_IDS,
    RULE_IDS,
    RULES_BY_ID,
    describe_rules,
    evaluate,
    id_ranges,
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

__all__ = [
    "BEHAVIOUR_RULE_IDS",
    "CATALOG",
    "CONFIGURATION_RULE_IDS",
    "META_RULES",
    "META_RULE_IDS",
    "MISSING_TRANSFORM_RULE",
    "QUEUE_RULE_IDS",
    "RULES_BY_ID",
    "RULE_IDS",
    "UNPARSEABLE_RULE",
    "UNREACHABLE_RULE",
    "UNRESOLVED_RULE",
    "Rule",
    "describe_rules",
    "evaluate",
    "id_ranges",
    "meta_fix",
    "note_finding",
    "unparseable_finding",
    "unresolved_finding",
]
