"""Fleet audit of SQS -> Lambda resilience: the rule catalog, a single-process engine
(``engines.local``), and a Spark engine (``engines.spark``, imported only when used) that applies
the same rules across thousands of templates and across stacks, both behind one entry point
(``audit(AuditInputs, AuditOptions)``)."""

from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines.local import audit_files, audit_paths
from constructs_lib.audit.model import AuditResult, Finding, QueueContext
from constructs_lib.audit.rules import CATALOG, Rule, evaluate

__all__ = [
    "CATALOG",
    "AuditInputs",
    "AuditOptions",
    "AuditResult",
    "Finding",
    "QueueContext",
    "Rule",
    "audit_files",
    "audit_paths",
    "evaluate",
]
