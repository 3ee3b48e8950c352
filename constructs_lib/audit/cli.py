"""``queue-audit``: audit CloudFormation templates for SQS resilience faults on Spark."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from constructs_lib.audit import (
    acceptance,
    baseline,
    optional,
    parameters,
    profiles,
    report,
    safety,
    suppressions,
)
from constructs_lib.audit.inputs import discovery, objects
from constructs_lib.audit.metrics import request as metrics_request

if TYPE_CHECKING:
    from constructs_lib.audit.model import AuditResult

# The local engine is faster than Spark on one machine at every fleet size measured (2 cores,
# up to 100,000 templates: docs/performance.md, "Audit on Spark"), but it holds every parsed row
# in memory: 1,483 MiB at 100,000 generated templates, about 15.2 KiB each (docs/performance.md).
# So --engine auto keeps a fleet local while it needs at most half this machine's memory, and
# runs Spark beyond.
LOCAL_BYTES_PER_TEMPLATE = 16 * 1024


def auto_spark_files() -> int:
    """The fleet size from which ``--engine auto`` runs Spark on this machine."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # not every platform reports it
        memory = 8 * 2**30
    return max(1, memory // 2 // LOCAL_BYTES_PER_TEMPLATE)


# Exit status of a run that could not finish (the Spark job failed, workers could not start):
# distinct from 0 (no finding at --fail-on), 1 (findings) and 2 (usage errors).
EXIT_NOT_FINISHED = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queue-audit",
        description="Find SQS resilience faults (rules QR001-QR029) across CloudFormation "
        "templates and cdk.out cloud assemblies, following references across stacks.",
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
        nargs="+",
        metavar="PATH",
        help="template files (JSON or YAML), folders (cdk.out assemblies or trees of templates) "
        "and s3://BUCKET/PREFIX/ or s3://BUCKET/KEY URLs",
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
        "observability or hardening (QR013, QR015, QR025) report as info; all: every "
        "rule at its catalog severity. A suppressions file's 'rules' levels win over either",
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
        "spark when --master or --remote is given or the fleet needs more than half this "
        f"machine's memory in the local engine (here from {auto_spark_files():,} templates), "
        "else local",
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
    group = parser.add_argument_group("metrics (how the queues behave: rules QR030-QR034)")
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
    """What one file may cost (docs/audit.md, "Limits and safety"); a file over a limit is a
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
AUDIT_MODULES = ("yaml", "samtranslator", "boto3")
# What the Spark engine adds: the session (classic or Spark Connect) and the Arrow batches.
SPARK_MODULES = ("pyspark", "pyarrow", "pandas")


def missing_paths(paths: Iterable[str]) -> list[str]:
    """The local paths given that name nothing at all (a dangling symbolic link is something:
    it is reported as a file that is not a regular file)."""
    return [p for p in paths if not objects.is_object_url(p) and not os.path.lexists(p)]


def check_modules(args: argparse.Namespace) -> None:
    """``optional.MissingExtra`` for the first module this run needs that is not installed,
    before any file is read: one line naming the extra, not a finding per file."""
    for module in AUDIT_MODULES:
        optional.check(module, "queue-audit")
    if args.engine == "spark" or args.master or args.remote:
        for module in SPARK_MODULES:
            optional.check(module, "the Spark engine (--engine spark, --master, --remote)")
    if args.output_dir:
        optional.check("pyarrow", "--output-dir (Parquet)")
    if args.metrics:
        optional.check("pyarrow", "--metrics (metric stream output)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.engine == "local" and (args.master or args.remote):
        build_parser().error("--master and --remote choose a Spark engine: drop --engine local")
    missing = missing_paths(args.paths)
    if missing:
        build_parser().error(
            f"no such file or folder: {', '.join(missing)}; give template files, folders of "
            "templates, a synthesized cdk.out or s3:// URLs"
        )
    try:
        metrics = metrics_from(args)
    except ValueError as error:
        build_parser().error(str(error))
    try:
        check_modules(args)
    except optional.MissingExtra as error:
        build_parser().error(str(error))
    try:
        overrides = overrides_from(args)
    except parameters.ParameterError as error:
        build_parser().error(str(error))
    try:
        accepts = acceptance.load(
            args.suppressions, args.baseline, limits_from(args), profile=args.profile
        )
    except (suppressions.SuppressionsFileError, baseline.BaselineError) as error:
        build_parser().error(str(error))
    if args.fail_on_changed and not args.baseline:
        build_parser().error(
            "--fail-on-changed compares with a baseline: give --baseline FILE, or drop it"
        )
    folder = os.path.dirname(args.write_baseline or "") or "."
    if args.write_baseline and not os.path.isdir(folder):
        build_parser().error(
            f"--write-baseline {args.write_baseline}: the folder {folder} does not exist; "
            "create it, or name a file in an existing folder"
        )
    try:
        files = discovery.discover(args.paths)
    except objects.ObjectStoreError as error:  # a wrong URL or no access: nothing was audited
        build_parser().error(str(error))
    if not files:
        # Every path given was an empty folder: most likely a wrong path or a cdk.out not
        # synthesized yet, not a clean fleet.
        build_parser().error(
            f"no templates found in {', '.join(args.paths)}: give template files (JSON or "
            "YAML), folders that hold them, or a synthesized cdk.out"
        )
    if choose_engine(args, len(files)) == "spark":
        try:  # --engine auto chose Spark for a large fleet
            for module in SPARK_MODULES:
                optional.check(
                    module,
                    f"the Spark engine, which --engine auto chooses for {len(files):,} files "
                    "(--engine local keeps them on this machine),",
                )
        except optional.MissingExtra as error:
            build_parser().error(str(error))
    try:
        with _audit(args, files, overrides, accepts, metrics) as result:
            _write(report.stream(args.format, result, docs_url=args.docs_url), args.output)
            summary = report.summarize(result)
            if args.write_baseline:
                recorded = baseline.write(args.write_baseline, result.findings)
                if not args.quiet:
                    print(
                        f"queue-audit: wrote {recorded:,} findings to the baseline "
                        f"{args.write_baseline}",
                        file=sys.stderr,
                    )
    except Exception as error:  # never a clean fleet (nor "findings"): the run did not finish
        print(
            f"queue-audit: the run could not finish: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return EXIT_NOT_FINISHED
    return report.exit_status(summary, args.fail_on, args.fail_on_changed)


def _write(pieces: Iterable[str], output: str | None) -> None:
    """The report, as UTF-8, piece by piece. A file name that is not UTF-8 (its undecodable
    bytes are lone surrogates in Python) is written as \\udcff-style escapes: named, and the
    report stays valid. A report file appears whole or not at all."""
    encoded = (piece.encode("utf-8", "backslashreplace") for piece in pieces)
    if output:
        partial = f"{output}.partial"
        try:
            with open(partial, "wb") as handle:
                for data in encoded:
                    handle.write(data)
            os.replace(partial, output)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
        return
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    for data in encoded:
        if buffer is None:
            sys.stdout.write(data.decode("utf-8"))
        else:
            buffer.write(data)
    sys.stdout.flush()


def overrides_from(args: argparse.Namespace) -> parameters.Overrides:
    """Parameter files first, then --parameter-overrides, each applied in the order given."""
    triples: list[tuple[str, str, str]] = []
    for spec in args.parameters_file:
        stack, separator, path = spec.partition("=")
        if not separator:
            stack, path = parameters.ALL_STACKS, spec
        triples += [(stack, k, v) for k, v in parameters.read_parameters_file(path).items()]
    triples += [parameters.parse_override(text) for text in args.parameter_overrides]
    return parameters.merge(triples)


def choose_engine(args: argparse.Namespace, file_count: int) -> str:
    if args.engine != "auto":
        return str(args.engine)
    if args.master or args.remote or file_count >= auto_spark_files():
        return "spark"
    return "local"


@contextlib.contextmanager
def _audit(
    args: argparse.Namespace,
    files: list[tuple[str, str]],
    overrides: parameters.Overrides,
    accepts: acceptance.Acceptance,
    metrics: metrics_request.MetricsRequest | None = None,
) -> Iterator[AuditResult]:
    """The run's result, for as long as the report takes to write: a Spark result streams its
    findings from the session, which this command then stops (when it started it).

    ``metrics`` is ``--metrics`` and ``--metrics-window`` (None without them), for the engines
    to aggregate (``metrics.aggregate``, ``spark.metrics``) and join to the queues."""
    limits = limits_from(args)
    if choose_engine(args, len(files)) == "local":
        from constructs_lib.audit import engine, outputs

        result = engine.audit_files(
            files,
            limits,
            overrides=overrides,
            progress=None if args.quiet else _Progress(),
            acceptance=accepts,
        )
        if args.output_dir:
            outputs.write_result(result, args.output_dir)
        yield result
        return
    SparkSession = optional.require("pyspark.sql", "the Spark engine").SparkSession

    from constructs_lib.audit.spark import job, session, streaming

    # Inside a program that already runs Spark (a notebook, a test), reuse its session and
    # leave it running; otherwise this command owns the session and stops it.
    active = None if args.master or args.remote else SparkSession.getActiveSession()
    spark = active or session.create_session(args.master, args.remote)
    try:
        result = job.run(
            spark,
            files,
            output_dir=args.output_dir,
            quiet=args.quiet,
            limits=limits,
            overrides=overrides,
            gather=False,
            acceptance=accepts,
        )
        yield result
        streaming.release(result)
    finally:
        if active is None:
            spark.stop()


class _Progress:
    """``read 12,000 of 100,000 files`` on stderr: updated in place on a terminal, a line every
    few seconds in a CI log."""

    INTERVAL_S = 2.0

    def __init__(self) -> None:
        self.terminal = sys.stderr.isatty()
        self.last = time.monotonic()
        self.shown = False  # a run shorter than one interval says nothing

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < self.INTERVAL_S and (done < total or not self.shown):
            return
        self.last, self.shown = now, True
        end = "\n" if done == total or not self.terminal else ""
        prefix = "\r" if self.terminal else ""
        print(f"{prefix}queue-audit: read {done:,} of {total:,} files", end=end, file=sys.stderr)
        sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
