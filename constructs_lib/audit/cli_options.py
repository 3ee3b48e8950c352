"""The ``queue-audit`` command line's options: the parser, grouped as ``--help`` shows them, and
the checks that turn option values into the audit's settings (read limits, the metrics request),
each refusing a bad value with the value, the limit and the fix."""

from __future__ import annotations

import argparse
import os
from typing import Any

from constructs_lib.audit import report, rules, safety
from constructs_lib.audit.accept import profiles
from constructs_lib.audit.engines.choice import (
    SPARK_FIXED_SECONDS,
    auto_spark_files,
    default_workers,
)
from constructs_lib.audit.inputs import objects
from constructs_lib.audit.metrics import request as metrics_request

# A local parsing worker holds three of this process's open files (its two pipes and the shared map
# that says which file it is on: isolation._Worker). The soft RLIMIT_NOFILE is 1,024 on most Linux systems
# (systemd's DefaultLimitNOFILE, man systemd-system.conf): 256 workers take 768 and leave the
# rest for the files being read and the report. A value past it is more likely a typo than a
# machine with that many cores, and workers beyond the number of files are never started.
FILES_PER_WORKER = 3
MAX_WORKERS = 256


def _workers(text: str) -> int:
    try:
        workers = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of worker processes; give 1 to {MAX_WORKERS}"
        ) from None
    if workers < 1:
        raise argparse.ArgumentTypeError(
            f"{workers} worker processes would parse nothing; give 1 to {MAX_WORKERS} "
            f"(default: one per core, {default_workers()} here)"
        )
    if workers > MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{workers} worker processes is over the limit of {MAX_WORKERS} (each holds "
            f"{FILES_PER_WORKER} of this process's open files; Linux allows 1,024 by default); "
            f"give 1 to {MAX_WORKERS}"
        )
    return workers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queue-audit",
        description=f"Find SQS resilience faults (rules {rules.id_ranges(rules.QUEUE_RULE_IDS)}) "
        "across CloudFormation templates and cdk.out cloud assemblies, following references "
        "across stacks.",
    )
    _add_inputs(parser)
    _add_report_options(parser)
    _add_acceptance_options(parser)
    _add_engine_options(parser)
    _add_parameter_values(parser)
    _add_metrics_options(parser)
    add_limit_options(parser)
    return parser


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="template files (JSON or YAML), folders (cdk.out assemblies or trees of templates) "
        "and s3://BUCKET/PREFIX/ or s3://BUCKET/KEY URLs (optional with --deployed)",
    )
    group = parser.add_argument_group("deployed stacks (docs/audit/deployed.md)")
    group.add_argument(
        "--deployed",
        action="store_true",
        help="also audit the CloudFormation stacks deployed in the caller's account and each "
        "--role-arn's, in each --region (read-only calls)",
    )
    group.add_argument(
        "--region",
        action="append",
        default=[],
        metavar="REGION",
        help="a region to read with --deployed (repeatable; default: the configured region)",
    )
    group.add_argument(
        "--role-arn",
        action="append",
        default=[],
        metavar="ARN",
        help="a role to assume for another account's stacks with --deployed (repeatable)",
    )
    group.add_argument(
        "--role-arns-file",
        metavar="FILE",
        help="role ARNs, one a line (# comments), as --role-arn",
    )


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """The report, the exit status, the findings datasets, and the profile they are graded by."""
    parser.add_argument("--format", choices=report.FORMATS, default="table")
    parser.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default="error",
        help="exit 1 when a finding is at least this severe (default: error)",
    )
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        help="also write the findings as Parquet and JSON Lines into a new run=<time> folder "
        "under DIR (a path every executor can reach, or s3://bucket/prefix)",
    )
    # The name of --output-dir before it wrote JSON Lines too; kept so scripts keep working.
    parser.add_argument("--parquet", dest="output_dir", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument(
        "--docs-url",
        metavar="URL",
        help="where the documentation is published: the HTML report links each rule to its "
        "section there (default: to the rule's summary at the end of the report)",
    )
    parser.add_argument(
        "--profile",
        choices=profiles.PROFILES,
        default=profiles.DEFAULT_PROFILE,
        help="recommended (default): the rules that fire on nearly every queue and flag a gap in "
        f"observability or hardening ({', '.join(profiles.departures(profiles.RECOMMENDED))}) "
        "report as info; all: every rule at its catalog severity. A suppressions file's 'rules' levels win over either",
    )


def _add_acceptance_options(parser: argparse.ArgumentParser) -> None:
    accepted = parser.add_argument_group(
        "accepted findings (suppressions in template Metadata always apply)"
    )
    accepted.add_argument(
        "--suppressions",
        action="append",
        default=[],
        metavar="FILE",
        help="a YAML or JSON file of suppressions for templates the team cannot edit: rule, "
        "template/stack/resource globs, reason, optional expiry; and 'rules' levels "
        "(QR025: info, or {level: off, reason: ...}) (repeatable)",
    )
    accepted.add_argument(
        "--baseline",
        metavar="FILE",
        help="a baseline written by --write-baseline: only findings not in it decide the exit "
        "status; the report shows new, unchanged and fixed findings",
    )
    accepted.add_argument(
        "--fail-on-changed",
        action="store_true",
        help="with --baseline: a known finding whose values changed (a visibility timeout cut "
        "from 30 s to 20 s) decides the exit status too, as a new one does",
    )
    accepted.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record this run's findings (all but the suppressed ones) as a baseline",
    )


def _add_engine_options(parser: argparse.ArgumentParser) -> None:
    spark = parser.add_argument_group("engine")
    spark.add_argument(
        "--engine",
        choices=("auto", "local", "spark"),
        default="auto",
        help="local: worker processes on this machine; spark: a Spark job; auto (default): "
        "local, unless the fleet needs more than half this machine's memory in the local "
        f"engine (here from {auto_spark_files():,} templates), or --master or --remote names "
        "where Spark runs and the local engine would take longer than a Spark run's fixed "
        f"cost (about {SPARK_FIXED_SECONDS:.0f} s, from the templates and the --metrics "
        "objects and bytes)",
    )
    spark.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help="parsing worker processes of the local engine (default: one per core, here "
        f"{default_workers()}); 1-{MAX_WORKERS}: each holds {FILES_PER_WORKER} of this "
        "process's open files, and Linux allows 1,024 by default. Spark takes its cores from "
        "--master (local[N]) or the cluster",
    )
    where = spark.add_mutually_exclusive_group()
    where.add_argument(
        "--master",
        help="Spark master URL (default: local[*], or the one spark-submit was given)",
    )
    where.add_argument(
        "--remote", metavar="sc://HOST:PORT", help="run the job through a Spark Connect server"
    )


def _add_parameter_values(parser: argparse.ArgumentParser) -> None:
    values = parser.add_argument_group("parameter values (default: each parameter's Default)")
    values.add_argument(
        "--parameter-overrides",
        nargs="+",
        default=[],
        metavar="[STACK:]KEY=VALUE",
        help="parameter values, for every stack or for STACK only (as `aws cloudformation "
        "deploy --parameter-overrides` takes them); AWS::Region=... replaces a placeholder",
    )
    values.add_argument(
        "--parameters-file",
        action="append",
        default=[],
        metavar="[STACK=]FILE",
        help='JSON parameters: [{"ParameterKey": ..., "ParameterValue": ...}] or an object of '
        "key -> value; for every stack, or for STACK only (repeatable; overrides win)",
    )


def _window_days(text: str) -> int:
    low, high = metrics_request.MIN_WINDOW_DAYS, metrics_request.MAX_WINDOW_DAYS
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of days; give {low} to {high}"
        ) from None
    if not low <= days <= high:
        raise argparse.ArgumentTypeError(
            f"{days} days is outside {low} to {high} (CloudWatch keeps no data point longer "
            f"than {high} days); give {low} to {high}"
        )
    return days


def _add_metrics_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        f"metrics (how the queues behave: rules {rules.id_ranges(rules.BEHAVIOUR_RULE_IDS)})"
    )
    group.add_argument(
        "--metrics",
        metavar="PATH_OR_S3_URL",
        help="CloudWatch metric stream output (JSON lines, gzip or Parquet, as Firehose "
        "delivers it to S3) with the AWS/SQS and AWS/Lambda namespaces: a file, a folder or "
        "s3://BUCKET/PREFIX/",
    )
    group.add_argument(
        "--metrics-window",
        type=_window_days,
        metavar="DAYS",
        help="days of data points up to the newest one that the figures cover "
        f"({metrics_request.MIN_WINDOW_DAYS}-{metrics_request.MAX_WINDOW_DAYS}; default "
        f"{metrics_request.DEFAULT_WINDOW_DAYS})",
    )


def metrics_from(args: argparse.Namespace) -> metrics_request.MetricsRequest | None:
    """The run's ``--metrics`` request, None without one; ValueError naming the fix for
    options that do not go together or a path that does not exist."""
    if args.metrics is None:
        if args.metrics_window is not None:
            raise ValueError(
                f"--metrics-window {args.metrics_window} sets the window of --metrics: give "
                "--metrics PATH_OR_S3_URL too, or drop --metrics-window"
            )
        return None
    if not objects.is_object_url(args.metrics) and not os.path.exists(args.metrics):
        raise ValueError(
            f"--metrics {args.metrics}: no such file or folder; give a metric stream's "
            "output folder, one of its objects, or s3://BUCKET/PREFIX/"
        )
    days = args.metrics_window or metrics_request.DEFAULT_WINDOW_DAYS
    return metrics_request.MetricsRequest(args.metrics, days)


def _bounded(kind: type, low: float, high: float) -> Any:
    def convert(text: str) -> Any:
        value = kind(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}")
        return value

    convert.__name__ = kind.__name__
    return convert


def _size(text: str) -> int:
    try:
        return safety.parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """What one file may cost (docs/audit/index.md, "Limits and safety"); a file over a limit is a
    QR901 that names the limit and the option."""
    group = parser.add_argument_group("limits per file")
    size = safety.size_text
    group.add_argument(
        "--max-file-size",
        type=_size,
        default=safety.MAX_FILE_BYTES,
        metavar="SIZE",
        help=f"larger files are not read (bytes, or K/M/G; default {size(safety.MAX_FILE_BYTES)})",
    )
    group.add_argument(
        "--max-depth",
        # Above 1,000 levels the parsers themselves may overflow the stack: not an option.
        type=_bounded(int, 1, 1000),
        default=safety.MAX_DEPTH,
        metavar="N",
        help=f"deepest nesting of JSON or YAML (1-1000; default {safety.MAX_DEPTH})",
    )
    group.add_argument(
        "--max-yaml-nodes",
        type=_bounded(int, 1, 10**9),
        default=safety.MAX_YAML_NODES,
        metavar="N",
        help="most YAML nodes once aliases and merge keys are expanded "
        f"(default {safety.MAX_YAML_NODES:,})",
    )
    group.add_argument(
        "--parse-timeout",
        type=_bounded(float, 0.1, 86400),
        default=safety.PARSE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"longest time to read and parse one file (default {safety.PARSE_TIMEOUT_S:g})",
    )
    group.add_argument(
        "--max-parse-memory",
        type=_size,
        default=safety.MAX_PARSE_MEMORY_BYTES,
        metavar="SIZE",
        help="memory a parsing worker may add while parsing "
        f"(default {size(safety.MAX_PARSE_MEMORY_BYTES)})",
    )


def limits_from(args: argparse.Namespace) -> safety.ReadLimits:
    return safety.ReadLimits(
        max_file_bytes=args.max_file_size,
        max_depth=args.max_depth,
        max_yaml_nodes=args.max_yaml_nodes,
        parse_timeout_s=args.parse_timeout,
        max_parse_memory_bytes=args.max_parse_memory,
    )


# What every run reads with: YAML templates and suppressions files, SAM templates, s3:// URLs.
