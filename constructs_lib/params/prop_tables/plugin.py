"""The table of ``QueueResilienceChecks(...)``, the audit run as a CDK validation plugin."""

from __future__ import annotations

from constructs_lib.params.kinds import (
    Choice,
)
from constructs_lib.params.table import Param, Table

CHECKS = Table(
    "QueueResilienceChecks",
    (
        Param(
            "fail_on",
            Choice(("error", "warning", "info", "never")),
            '`"error"`',
            "findings of this severity or above fail the synth; `never` only reports",
            fix='pass fail_on="error", "warning", "info" or "never"',
        ),
        Param(
            "profile",
            Choice(("all", "recommended")),
            '`"all"`',
            "`all`: every rule at its catalog severity; `recommended`: as `queue-audit`'s "
            "default profile, QR013, QR015 and QR025 as info",
            fix='pass profile="all" or "recommended"',
        ),
    ),
)
