"""Fleet audit of SQS -> Lambda resilience: the rule catalog, a single-process engine, and a
Spark job (``job.py``, imported only when used) that applies the same rules across thousands of
templates and across stacks."""

from constructs_lib.audit.engine import AuditResult, audit_files, audit_paths
from constructs_lib.audit.model import Finding, QueueContext
from constructs_lib.audit.rules import CATALOG, Rule, evaluate

__all__ = [
    "CATALOG",
    "AuditResult",
    "Finding",
    "QueueContext",
    "Rule",
    "audit_files",
    "audit_paths",
    "evaluate",
]
