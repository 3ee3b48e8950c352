"""What one audit is asked, the same for both engines: ``audit(inputs, options) -> AuditResult``.

``AuditInputs`` is what the run reads (template files, deployed stacks, observed metrics);
``AuditOptions`` is how it reads and judges them and where the findings datasets go. The same
two values run on the local engine (``local.audit``) and on Spark
(``spark.job.SparkEngine(session).audit``), which is how the tests hold the two to identical
findings. The Spark session is the engine's, not an option: it is a resource with a lifetime
(started or reused, holding a streamed run's findings until released, stopped), where options are
plain values any engine takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from constructs_lib.audit.accept.apply import NONE as NO_ACCEPTANCE
from constructs_lib.audit.accept.apply import Acceptance
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

if TYPE_CHECKING:
    from collections.abc import Callable

    from constructs_lib.audit.inputs.deployed import Target
    from constructs_lib.audit.metrics.observations import Metrics
    from constructs_lib.audit.model import AuditResult
    from constructs_lib.audit.parse.parameters import Overrides


@dataclass(frozen=True)
class AuditInputs:
    """``files``: ``(path or s3:// URL, stack name)`` pairs (``discovery.discover``);
    ``deployed``: the accounts and regions whose deployed stacks are read and judged with them;
    ``metrics``: the observed series (``observations.of_input``) each queue's context joins."""

    files: Sequence[tuple[str, str]] = ()
    deployed: Sequence[Target] = ()
    metrics: Metrics | None = None


@dataclass(frozen=True)
class AuditOptions:
    """How a run reads and judges its inputs, and what it does with the findings.

    - ``limits``: what one template may cost to read (``safety.py``);
    - ``overrides``: parameter values by stack (``*``: every stack), see ``parameters.py``;
    - ``acceptance``: a profile, a suppressions file and a baseline, applied after judging;
    - ``output_dir``: where the findings datasets go (``report/datasets.py``), or None;
    - ``quiet``: False to report progress on stderr;
    - ``workers``: the local engine's parsing processes (None: one per core); Spark takes its
      cores from its session;
    - ``gather``: a Spark run's findings gathered to the driver as a list; False streams them
      from the executors (``streaming.FindingsView``), stored until ``streaming.release``, so
      the driver's memory does not grow with the fleet. The local engine always gathers.
    """

    limits: ReadLimits = DEFAULT_LIMITS
    overrides: Overrides | None = None
    acceptance: Acceptance = NO_ACCEPTANCE
    output_dir: str | None = None
    quiet: bool = True
    workers: int | None = None
    gather: bool = True


# The entry point both engines have: ``local.audit`` and ``spark.job.SparkEngine(spark).audit``.
AuditEngine: TypeAlias = "Callable[[AuditInputs, AuditOptions], AuditResult]"
