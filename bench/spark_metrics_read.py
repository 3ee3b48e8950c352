"""Time the Spark engine's metrics read alone, its session started apart.

    python bench/spark_metrics_read.py CORPUS/json [--open-cost 4m]

One ``local[2]`` session; one small job warms it; then ``spark/metrics.py``'s
``read_and_aggregate`` over the location, timed. ``--open-cost`` sets
``spark.sql.files.openCostInBytes`` (the packing's cost of one object). Run it at two commits
(the code under test is the one importable as ``constructs_lib``) to compare them on the same
corpus and machine.
"""

from __future__ import annotations

import argparse
import time

from constructs_lib.audit.engines.spark import metrics, session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("location")
    parser.add_argument("--open-cost", help="spark.sql.files.openCostInBytes, e.g. 4m")
    parser.add_argument("--window", type=int, default=14)
    args = parser.parse_args()
    with session.running("local[2]", None) as spark:
        if args.open_cost:
            spark.conf.set("spark.sql.files.openCostInBytes", args.open_cost)
        spark.range(10).count()
        start = time.perf_counter()
        read = metrics.read_and_aggregate(spark, args.location, args.window)
        seconds = time.perf_counter() - start
    print(f"{seconds:.1f} s, {len(read.series):,} series, {read.data_points:,} data points")


if __name__ == "__main__":
    main()
