"""``queue-audit``: audit CloudFormation templates for SQS resilience faults, on this machine
(the local engine) or on Spark."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from constructs_lib.audit import optional, report
from constructs_lib.audit.accept import apply as acceptance
from constructs_lib.audit.accept import baseline, suppressions
from constructs_lib.audit.cli_options import (
    build_parser,
    limits_from,
    metrics_from,
)
from constructs_lib.audit.engines import choice
from constructs_lib.audit.engines import spark as spark_engine
from constructs_lib.audit.engines.choice import auto_spark_files, default_workers
from constructs_lib.audit.engines.request import AuditInputs, AuditOptions
from constructs_lib.audit.inputs import deployed, discovery, objects
from constructs_lib.audit.metrics import observations
from constructs_lib.audit.metrics import request as metrics_request
from constructs_lib.audit.parse import parameters
from constructs_lib.audit.report.words import plural

if TYPE_CHECKING:
    from constructs_lib.audit.metrics.aggregate import MetricsInput
    from constructs_lib.audit.model import AuditResult

# Exit status of a run that could not finish (the Spark job failed, workers could not start):
# distinct from 0 (no finding at --fail-on), 1 (findings) and 2 (usage errors).
EXIT_NOT_FINISHED = 3


# Why --workers and a Spark run do not go together, and what to give instead.
_WORKERS_ON_SPARK = (
    "--workers {workers} sets the local engine's parsing processes; Spark takes its cores from "
    "--master (local[N]: N cores on this machine) or from the cluster: drop --workers, or give "
    "--engine local"
)

AUDIT_MODULES = ("yaml", "samtranslator", "boto3")
_SPARK_ENGINE = "the Spark engine (--engine spark, --master, --remote)"


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
        spark_engine.check_installed(_SPARK_ENGINE)
    if args.output_dir:
        optional.check("pyarrow", "--output-dir (Parquet)")
    if args.metrics:
        optional.check("pyarrow", "--metrics (metric stream output)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _check_engine_options(args)
    _check_deployed_options(args)
    _check_paths(args.paths)
    metrics, overrides, accepts = _settings(args)
    _check_baseline_options(args)
    files = _inputs(args)
    chosen = choose_engine(args, _workload(args, len(files), metrics))
    _check_chosen_engine(args, chosen)
    return _run(args, files, overrides, accepts, metrics, chosen.engine)


def _check_engine_options(args: argparse.Namespace) -> None:
    if args.engine == "local" and (args.master or args.remote):
        build_parser().error("--master and --remote choose a Spark engine: drop --engine local")
    if args.workers is not None and (args.engine == "spark" or args.master or args.remote):
        build_parser().error(_WORKERS_ON_SPARK.format(workers=args.workers))


def _check_paths(paths: list[str]) -> None:
    missing = missing_paths(paths)
    if missing:
        build_parser().error(
            f"no such file or folder: {', '.join(missing)}; give template files, folders of "
            "templates, a synthesized cdk.out or s3:// URLs"
        )


def _settings(
    args: argparse.Namespace,
) -> tuple[metrics_request.MetricsRequest | None, parameters.Overrides, acceptance.Acceptance]:
    """--metrics, the installed modules the run needs, the parameter values and what the run
    accepts, read before any template: each problem is a usage error."""
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
    return metrics, overrides, accepts


def _check_baseline_options(args: argparse.Namespace) -> None:
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


def _inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The templates under the paths given; ``args.targets`` set to what --deployed reads."""
    try:
        files = discovery.discover(args.paths)
        args.targets = _targets(args)
    except objects.ObjectStoreError as error:  # a wrong URL or no access: nothing was audited
        build_parser().error(str(error))
    except (ValueError, OSError) as error:  # a malformed role ARN or region, no region
        build_parser().error(str(error))
    if not files and not args.deployed:
        # Every path given was an empty folder: most likely a wrong path or a cdk.out not
        # synthesized yet, not a clean fleet.
        build_parser().error(
            f"no templates found in {', '.join(args.paths)}: give template files (JSON or "
            "YAML), folders that hold them, or a synthesized cdk.out"
        )
    return files


def _workload(
    args: argparse.Namespace, templates: int, metrics: metrics_request.MetricsRequest | None
) -> choice.Workload:
    """What --engine auto weighs: the templates, and the metric stream objects the window needs
    when --master or --remote leaves the choice to the size of the work."""
    if metrics is None or args.engine != "auto" or not (args.master or args.remote):
        return choice.Workload(templates)
    from constructs_lib.audit.metrics import stream

    try:
        to_read, _ = stream.within_window(
            stream.list_objects(metrics.location), metrics.window_days
        )
    except metrics_request.MetricsInputError as error:  # nothing was read yet
        build_parser().error(str(error))
    return choice.Workload(templates, sum(o.size for o in to_read), len(to_read))


def _check_chosen_engine(args: argparse.Namespace, chosen: choice.EngineChoice) -> None:
    """What --engine auto's choice needs: for Spark, no --workers and the Spark engine's
    modules. Its reason is said on stderr (unless --quiet)."""
    if chosen.reason and not args.quiet:
        print(f"queue-audit: --engine auto runs {chosen.engine}: {chosen.reason}", file=sys.stderr)
    if args.engine != "auto" or chosen.engine != "spark":
        return
    if args.workers is not None:
        build_parser().error(
            f"--workers {args.workers} sets the local engine's parsing processes, but "
            f"--engine auto chooses Spark ({chosen.reason}): give --engine local to parse "
            "on this machine, or drop --workers (Spark takes its cores from --master or the "
            "cluster)"
        )
    try:
        spark_engine.check_installed(
            f"the Spark engine, which --engine auto chooses ({chosen.reason}; --engine local "
            "keeps the run on this machine),"
        )
    except optional.MissingExtra as error:
        build_parser().error(str(error))


def _run(
    args: argparse.Namespace,
    files: list[tuple[str, str]],
    overrides: parameters.Overrides,
    accepts: acceptance.Acceptance,
    metrics: metrics_request.MetricsRequest | None,
    engine: choice.Engine,
) -> int:
    """Audit on ``engine``, write the report (and the baseline), and give the exit status.

    A run with ``--write-baseline`` records the findings and is no gate: it exits 0 once the
    baseline is written (3 when it could not finish), whatever it found."""
    gate = report.Gate(args.fail_on, args.fail_on_changed, recording=bool(args.write_baseline))
    try:
        with _audit(args, files, overrides, accepts, metrics, engine) as result:
            _write(
                report.stream(args.format, result, docs_url=args.docs_url, gate=gate),
                args.output,
            )
            summary = report.summarize(result)
            if args.write_baseline:
                recorded = baseline.write(args.write_baseline, result.findings)
                if not args.quiet:
                    print(
                        f"queue-audit: wrote {plural(recorded, 'finding')} to the baseline "
                        f"{args.write_baseline} (exit status 0: a recording run is no gate)",
                        file=sys.stderr,
                    )
    except metrics_request.MetricsInputError as error:  # nothing was audited
        build_parser().error(str(error))
    except Exception as error:  # never a clean fleet (nor "findings"): the run did not finish
        print(
            f"queue-audit: the run could not finish: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return EXIT_NOT_FINISHED
    return gate.status(summary)


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


def _check_deployed_options(args: argparse.Namespace) -> None:
    if not args.paths and not args.deployed:
        build_parser().error("give at least one PATH (templates to audit), or --deployed")
    if not args.deployed and (args.region or args.role_arn or args.role_arns_file):
        build_parser().error(
            "--region, --role-arn and --role-arns-file choose what --deployed "
            "reads: add --deployed, or drop them"
        )


def _targets(args: argparse.Namespace) -> list[deployed.Target]:
    """The accounts and regions --deployed reads; none without it."""
    if not args.deployed:
        return []
    role_arns = list(args.role_arn)
    if args.role_arns_file:
        role_arns += deployed.read_role_arns_file(args.role_arns_file)
    return deployed.targets(args.region, role_arns)


def choose_engine(args: argparse.Namespace, work: choice.Workload) -> choice.EngineChoice:
    cluster_named = bool(args.master or args.remote)
    return choice.choose(args.engine, cluster_named, work, auto_spark_files())


@contextlib.contextmanager
def _audit(
    args: argparse.Namespace,
    files: list[tuple[str, str]],
    overrides: parameters.Overrides,
    accepts: acceptance.Acceptance,
    metrics: metrics_request.MetricsRequest | None,
    engine: choice.Engine,
) -> Iterator[AuditResult]:
    """The run's result, for as long as the report takes to write: a Spark result streams its
    findings from the session, which this command then stops (when it started it). The engine
    writes the findings datasets of --output-dir.

    ``metrics`` is ``--metrics`` and ``--metrics-window`` (None without them), for the engines
    to aggregate (``metrics.aggregate``, ``spark.metrics``) and join to the queues."""
    options = AuditOptions(
        limits=limits_from(args),
        overrides=overrides,
        acceptance=accepts,
        output_dir=args.output_dir,
        quiet=args.quiet,
        workers=args.workers or default_workers(),
        gather=False,
    )
    if engine == "local":
        from constructs_lib.audit.engines import local

        observed = None
        if metrics is not None:
            from constructs_lib.audit.metrics.aggregate import read_and_aggregate

            read = read_and_aggregate(
                metrics.location, metrics.window_days, workers=options.workers
            )
            observed = _observed(args, read)
        yield local.audit(AuditInputs(files, args.targets, observed), options)
        return
    from constructs_lib.audit.engines.spark import job, session, streaming

    # Inside a program that already runs Spark (a notebook, a test), its session, left running.
    with session.running(args.master, args.remote) as spark:
        observed = None
        if metrics is not None:
            from constructs_lib.audit.engines.spark import metrics as spark_metrics

            read = spark_metrics.read_and_aggregate(spark, metrics.location, metrics.window_days)
            observed = _observed(args, read)
        result = job.SparkEngine(spark).audit(AuditInputs(files, args.targets, observed), options)
        yield result
        streaming.release(result)


def _observed(args: argparse.Namespace, read: MetricsInput) -> observations.Metrics:
    """The metrics input for the engines; each object not read whole is said on stderr (and
    listed in the summary), even with --quiet: it changes what the run could judge."""
    for location, reason in read.problems:
        print(f"queue-audit: --metrics: {location} not read whole: {reason}", file=sys.stderr)
    if not args.quiet:
        print(
            f"queue-audit: --metrics: {read.data_points:,} data points in "
            f"{read.objects_read:,} objects, {len(read.series):,} series",
            file=sys.stderr,
        )
    return observations.of_input(read)


if __name__ == "__main__":
    sys.exit(main())
