"""The Spark engine's join stage on the driver and on the executors, side by side: one generated
fleet audited on one ``local[2]`` session both ways, alternating, with the findings compared.

    python bench/spark_join.py --count 2000 --runs 3

Prints, for each way, the median wall time of a whole audit; the text the join stage reads
(``DRIVER_JOIN_BYTES`` is the threshold between the two ways); and the driver process's peak
resident memory before any audit (the fleet parsed once) and after the driver way's runs, which
come first.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_jobs import generated_templates, local_session


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=2000, help="templates (default 2000)")
    options.add_argument("--runs", type=int, default=3, help="runs of each way (default 3)")
    args = options.parse_args()
    from constructs_lib.audit.engines.request import AuditInputs, AuditOptions
    from constructs_lib.audit.engines.spark import job
    from constructs_lib.audit.inputs import discovery

    spark = local_session(("spark.sql.shuffle.partitions", "2"))
    with tempfile.TemporaryDirectory() as folder:
        templates = generated_templates(args.count, folder)
        inputs = AuditInputs(tuple(discovery.discover([templates])))
        quiet = AuditOptions(quiet=True)
        _wide, _files, _queues, join_bytes = job._parse_fleet(spark, inputs, quiet, 2)
        print(f"{args.count:,} templates: the join stage reads {join_bytes / 2**20:.1f} MiB")
        ways = {"driver": 2**62, "executors": 0}
        walls: dict[str, list[float]] = {way: [] for way in ways}
        findings: dict[str, list[tuple[str, ...]]] = {}
        before = _peak_mib()
        for way, limit in ways.items():
            for _run in range(args.runs):
                started = time.perf_counter()
                result = job.SparkEngine(spark, limit).audit(inputs, quiet)
                walls[way].append(time.perf_counter() - started)
                findings[way] = sorted(tuple(map(str, f.sort_key())) for f in result.findings)
            if way == "driver":
                after = _peak_mib()
    for way in ways:
        print(f"{way:>9}: {statistics.median(walls[way]):6.2f} s median of {args.runs}")
    print(f"driver peak RSS: {before:,.0f} MiB parsed, {after:,.0f} MiB after the driver way")
    same = findings["driver"] == findings["executors"]
    print(f"same findings: {same} ({len(findings['driver']):,})")
    spark.stop()
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
