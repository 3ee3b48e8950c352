"""The stage tests import the Spark engine's modules, which import pyspark: without it (an
install without the ``spark`` extra), they are not collected."""

from __future__ import annotations

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("pyspark") else ["test_*.py"]
