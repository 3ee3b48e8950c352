"""The fleet audit on Spark: extract -> parse -> resolve -> evaluate -> load.

One code path for every kind of session: the job uses the DataFrame API only (no RDD, no
SparkContext), so it runs on a local session, a standalone, YARN or Kubernetes cluster through
``spark-submit``, and on Spark Connect (``--remote sc://...``).

- extract: the driver lists the inputs (``discovery.discover``: files, folders, ``s3://``
  prefixes; it never reads a template) into a DataFrame of paths;
- parse (``parse.py``): ``mapInArrow`` reads and parses each partition's files in Python (in a
  parsing worker process per task: ``isolation.py``) into flat rows of one declared wide schema
  (``schemas.py``), in Arrow batches. Spark never infers a schema from a template:
  ``Resources`` keys are logical ids;
- resolve (``resolve.py``): joins: ``Fn::ImportValue`` names to ``Export`` names, then
  reference keys (local ids, queue and function names from literal ARNs, URLs,
  ``Fn::Sub``/``Fn::Join``) to resources, then the resolved edges into the members of each
  queue's context;
- evaluate (``evaluate.py``): the member rows, partitioned and sorted by queue, go through one
  Python pass (``mapInArrow`` again) that builds each ``QueueContext`` and judges it with
  ``rules.evaluate`` (through ``judging.py``), the function the single-process engine and the
  in-app plugin call; ``accept.py`` then applies a suppressions file and a baseline;
- load (``job.py``, whose ``SparkEngine.audit`` runs the whole): findings to the driver for the
  report (streamed by ``streaming.py``), and from the executors to ``--output-dir``
  (``report/datasets.py``).

The session (``session.py``: made, or the program's own reused) ships the package to executors
that lack it (``shipping.py``). pyspark is imported and named in this package only: this module
checks that it is installed without importing it, so the command can say which extra to install
before it reads any file.
"""

from __future__ import annotations

from constructs_lib.audit import optional

# What the Spark engine adds to the audit's modules: the session (classic or Spark Connect) and
# the Arrow batches.
MODULES = ("pyspark", "pyarrow", "pandas")


def check_installed(purpose: str) -> None:
    """``optional.MissingExtra`` naming ``purpose`` for the first of ``MODULES`` that is not
    installed, without importing any."""
    for module in MODULES:
        optional.check(module, purpose)
