"""Which engine ``--engine auto`` runs, from the size of the work and measured rates.

Two facts decide it, both measured by the benches named beside each constant
(docs/performance.md; docs/audit/spark.md, "Choosing the engine"):

- On one machine the local engine is faster than Spark at every size measured, for templates
  and for metric streams alike. What it cannot do is hold a fleet's parsed templates past the
  machine's memory (the metrics read's memory does not grow with the data points). So without a
  cluster named, ``auto`` runs the local engine until the templates need half the memory.
- A Spark run pays a fixed cost before it reads anything (a session, cold Python workers, a
  JIT) and wins only on more cores than one machine has. So with ``--master`` or ``--remote``,
  ``auto`` runs Spark once the local engine's predicted time reaches that fixed cost, and the
  local engine below it: a small fleet is done before the session would be up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final, Literal

Engine = Literal["local", "spark"]

# The local engine holds every parsed row: 1,483 MiB at 100,000 generated templates, about
# 15.2 KiB each (`python bench/audit_bench.py --sizes 100000 --runs 1 --engines local`).
LOCAL_BYTES_PER_TEMPLATE: Final = 16 * 1024
# What a Spark run costs before its work: a classic local[2] session audited 10,000 templates in
# 25.0 s where the local engine took 3.4 s (session start 4.7 s, the rest cold Python workers,
# the JIT and scheduling; `python bench/audit_bench.py --sizes 10000 --runs 3 --engines local
# spark`); a standalone cluster's session starts in 8.0 s of its 40.3 s.
SPARK_FIXED_SECONDS: Final = 20.0
# The local engine's rates with two workers on 2 cores. Templates: 100,000 in 149.4 s
# (`bench/audit_bench.py --sizes 100000 --engines local-2`). Metric streams, from
# `bench/metrics_bench.py --sizes 10000000 --engines local-2` (gzipped JSON, the slower format):
# few large objects, 227 MB in 18.6 s, gives the bytes as stored a second; Firehose-sized ones,
# 248 MB in 40,820 objects in 43.8 s, what is left of that time for each object.
LOCAL_TEMPLATES_PER_SECOND: Final = 670.0
LOCAL_METRIC_BYTES_PER_SECOND: Final = 12.0e6
LOCAL_METRIC_OBJECTS_PER_SECOND: Final = 1_700.0


@dataclass(frozen=True)
class Workload:
    """The size of a run, known before anything is read: the templates listed, and the metric
    stream objects the window needs (their count and bytes as stored)."""

    templates: int
    metric_bytes: int = 0
    metric_objects: int = 0

    def local_seconds(self) -> float:
        """The local engine's predicted wall time at the measured rates."""
        return (
            self.templates / LOCAL_TEMPLATES_PER_SECOND
            + self.metric_bytes / LOCAL_METRIC_BYTES_PER_SECOND
            + self.metric_objects / LOCAL_METRIC_OBJECTS_PER_SECOND
        )


def default_workers() -> int:
    """The local engine's workers without ``--workers``: one per core (parsing processes for
    templates, reading threads for metric streams)."""
    return os.cpu_count() or 1


def memory_bytes() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # not every platform reports it
        return 8 * 2**30


def auto_spark_files() -> int:
    """The fleet size from which ``--engine auto`` runs Spark on this machine: the templates
    that fill half its memory in the local engine."""
    return max(1, memory_bytes() // 2 // LOCAL_BYTES_PER_TEMPLATE)


@dataclass(frozen=True)
class EngineChoice:
    """The engine to run and, where ``auto`` chose other than the user may expect (Spark
    without a cluster named, or the local engine with one), why."""

    engine: Engine
    reason: str | None = None


def choose(engine: str, cluster_named: bool, work: Workload, spark_files: int) -> EngineChoice:
    """``engine`` as given (``local``, ``spark`` or ``auto``); ``cluster_named``: ``--master`` or
    ``--remote`` was given; ``spark_files``: ``auto_spark_files()``."""
    if engine == "local":
        return EngineChoice("local")
    if engine == "spark":
        return EngineChoice("spark")
    if work.templates >= spark_files:
        return EngineChoice(
            "spark",
            f"{work.templates:,} templates need more than half this machine's memory in the "
            f"local engine (from {spark_files:,})",
        )
    if not cluster_named:
        return EngineChoice("local")  # faster than Spark on one machine: nothing to say
    predicted = work.local_seconds()
    if predicted >= SPARK_FIXED_SECONDS:
        return EngineChoice(
            "spark",
            f"the local engine would take about {predicted:,.0f} s, more than a Spark run's "
            f"fixed cost (about {SPARK_FIXED_SECONDS:.0f} s)",
        )
    return EngineChoice(
        "local",
        f"the local engine takes about {predicted:,.0f} s, less than a Spark run's fixed cost "
        f"(about {SPARK_FIXED_SECONDS:.0f} s): auditing on this machine (--engine spark runs "
        "it on the cluster named)",
    )
