"""``queue-audit``: audit CloudFormation templates for SQS resilience faults on Spark."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from constructs_lib.audit import discovery, report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queue-audit",
        description="Find SQS resilience faults (rules QR001-QR014) across CloudFormation "
        "templates and cdk.out cloud assemblies, following references across stacks.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="template files (JSON or YAML) and folders (cdk.out assemblies or trees of templates)",
    )
    parser.add_argument("--format", choices=report.FORMATS, default="table")
    parser.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default="error",
        help="exit 1 when a finding is at least this severe (default: error)",
    )
    parser.add_argument(
        "--master",
        default="local[*]",
        help="Spark master URL (default: local[*]); under spark-submit pass '' to keep its master",
    )
    parser.add_argument("--parquet", metavar="DIR", help="append findings to a Parquet dataset")
    parser.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="spark (default) or local: the same rules in this process, for small inputs",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.engine == "local" and args.parquet:
        build_parser().error("--parquet needs the spark engine")
    files = discovery.discover(args.paths)
    if not files:
        # Every path given was an empty folder (a missing file still counts, as QR901): most
        # likely a wrong path or a cdk.out not synthesized yet, not a clean fleet.
        build_parser().error(
            f"no templates found in {', '.join(args.paths)}: give template files (JSON or "
            "YAML), folders that hold them, or a synthesized cdk.out"
        )
    if args.engine == "local":
        from constructs_lib.audit import engine

        result = engine.audit_files(files)
    else:
        from pyspark.sql import SparkSession

        from constructs_lib.audit import job

        # Inside a program that already runs Spark (a notebook, a test), reuse its session and
        # leave it running; otherwise this command owns the session and stops it.
        owned = SparkSession.getActiveSession() is None
        spark = job.create_session(args.master) if owned else SparkSession.getActiveSession()
        assert spark is not None
        try:
            result = job.run(spark, files, parquet_dir=args.parquet, quiet=args.quiet)
        finally:
            if owned:
                spark.stop()
    text = report.RENDERERS[args.format](result)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return report.exit_code(result.findings, args.fail_on)


if __name__ == "__main__":
    sys.exit(main())
