"""``queue-audit``: audit CloudFormation templates for SQS resilience faults on Spark."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from constructs_lib.audit import discovery, parameters, report, safety

if TYPE_CHECKING:
    from constructs_lib.audit.engine import AuditResult

# Exit status of a run that could not finish (the Spark job failed, workers could not start):
# distinct from 0 (no finding at --fail-on), 1 (findings) and 2 (usage errors).
EXIT_NOT_FINISHED = 3


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
    add_limit_options(parser)
    return parser


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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.engine == "local" and args.parquet:
        build_parser().error("--parquet needs the spark engine")
    try:
        overrides = overrides_from(args)
    except parameters.ParameterError as error:
        build_parser().error(str(error))
    files = discovery.discover(args.paths)
    if not files:
        # Every path given was an empty folder (a missing file still counts, as QR901): most
        # likely a wrong path or a cdk.out not synthesized yet, not a clean fleet.
        build_parser().error(
            f"no templates found in {', '.join(args.paths)}: give template files (JSON or "
            "YAML), folders that hold them, or a synthesized cdk.out"
        )
    try:
        result = _run(args, files, overrides)
        _write(report.RENDERERS[args.format](result), args.output)
    except Exception as error:  # never a clean fleet (nor "findings"): the run did not finish
        print(
            f"queue-audit: the run could not finish: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return EXIT_NOT_FINISHED
    return report.exit_code(result.findings, args.fail_on)


def _write(text: str, output: str | None) -> None:
    """The report, as UTF-8. A file name that is not UTF-8 (its undecodable bytes are lone
    surrogates in Python) is written as \\udcff-style escapes: named, and the report stays valid."""
    data = text.encode("utf-8", "backslashreplace")
    if output:
        with open(output, "wb") as handle:
            handle.write(data)
        return
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8"))
        return
    buffer.write(data)
    buffer.flush()


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


def _run(
    args: argparse.Namespace, files: list[tuple[str, str]], overrides: parameters.Overrides
) -> AuditResult:
    limits = limits_from(args)
    if args.engine == "local":
        from constructs_lib.audit import engine

        return engine.audit_files(files, limits, overrides=overrides)
    else:
        from pyspark.sql import SparkSession

        from constructs_lib.audit import job

        # Inside a program that already runs Spark (a notebook, a test), reuse its session and
        # leave it running; otherwise this command owns the session and stops it.
        owned = SparkSession.getActiveSession() is None
        spark = job.create_session(args.master) if owned else SparkSession.getActiveSession()
        assert spark is not None
        try:
            return job.run(
                spark,
                files,
                parquet_dir=args.parquet,
                quiet=args.quiet,
                limits=limits,
                overrides=overrides,
            )
        finally:
            if owned:
                spark.stop()


if __name__ == "__main__":
    sys.exit(main())
