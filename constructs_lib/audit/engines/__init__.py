"""The two engines that run the audit, behind one entry point: ``audit(inputs, options) ->
AuditResult`` (``request``), in one process (``local.audit``) and on Spark
(``spark.job.SparkEngine(session).audit``), judging with the same code (``judging``)."""

from constructs_lib.audit.engines.request import AuditEngine, AuditInputs, AuditOptions

__all__ = ["AuditEngine", "AuditInputs", "AuditOptions"]
