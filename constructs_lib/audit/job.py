"""The fleet audit on Spark: extract -> parse -> resolve -> evaluate -> load.

- extract: the driver lists the input files (``discovery.discover``) and parallelizes the paths;
- parse: each partition reads its files as bytes and parses them in Python into flat rows of
  the declared schemas below (Spark never infers a schema from a template: ``Resources`` keys
  are logical ids, so inference would make one column per logical id in the fleet);
- resolve: joins: ``Fn::ImportValue`` names to ``Export`` names, then reference keys (local
  ids, queue and function names from literal ARNs, URLs, ``Fn::Sub``/``Fn::Join``) to resources,
  then the resolved edges into one group of members per queue;
- evaluate: each queue's group becomes a ``QueueContext`` judged by ``rules.evaluate``, the
  same function the single-process engine and the in-app plugin call;
- load: findings back to the driver for the reports, and optionally a Parquet dataset.

Runs unchanged under ``spark-submit`` (see docs/audit.md); pyspark is imported here only.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from constructs_lib.audit import engine, isolation, model, nesting, rules
from constructs_lib.audit.engine import AuditResult
from constructs_lib.audit.model import EdgeRow, FileRow, Finding, NoteRow, ResourceRow
from constructs_lib.audit.parameters import Overrides
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits


def _schema(*names: str, ints: Iterable[str] = ()) -> StructType:
    integer = set(ints)
    return StructType(
        [StructField(n, IntegerType() if n in integer else StringType(), False) for n in names]
    )


FILE_SCHEMA = _schema(*FileRow._fields, ints=["resources"])
RESOURCE_SCHEMA = _schema(*ResourceRow._fields)
KEY_SCHEMA = _schema(*model.KeyRow._fields)
EDGE_SCHEMA = _schema(*EdgeRow._fields)
EXPORT_SCHEMA = _schema(*model.ExportRow._fields)
NOTE_SCHEMA = _schema(*model.NoteRow._fields)
NESTED_SCHEMA = _schema(*model.NestedRow._fields)
FINDING_SCHEMA = _schema(
    "rule_id", "severity", "template", "stack", "resource", "queue", "message", "fix"
)

_SCHEMAS = {
    "file": FILE_SCHEMA,
    "resource": RESOURCE_SCHEMA,
    "key": KEY_SCHEMA,
    "edge": EDGE_SCHEMA,
    "export": EXPORT_SCHEMA,
    "note": NOTE_SCHEMA,
    "nested": NESTED_SCHEMA,
}
# Parsing yields every row kind in one pass, into one declared wide schema: a tag, six text
# columns and one integer (wide enough for each kind). Each kind is then a JVM-side select, so
# Python touches each file exactly once.
_WIDE_TEXT = [f"t{i}" for i in range(6)]
# "src" is the file a row came from, so a nested child parsed again replaces all of its rows.
WIDE_SCHEMA = _schema("tag", *_WIDE_TEXT, "n", "src", ints=["n"])


LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def create_session(master: str = "local[*]", app_name: str = "queue-audit") -> SparkSession:
    """A quiet session: no UI, few shuffle partitions (the audit's joins are small per key)."""
    # Python workers must run the interpreter that has constructs_lib installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder: Any = SparkSession.builder
    if master:
        builder = builder.master(master)
    if master.startswith("local"):
        # One machine: bind to loopback instead of guessing an interface (and warning about it),
        # and keep log4j quiet from the JVM's first line, before setLogLevel can act.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
        )
    spark: SparkSession = (
        builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.adaptive.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --- parse (runs on executors) -------------------------------------------------------------------


def _wide(tag: str, row: tuple[Any, ...], src: str) -> tuple[Any, ...]:
    text = [str(v) for v in row if not isinstance(v, int)]
    number = next((v for v in row if isinstance(v, int)), 0)
    return (tag, *text, *([""] * (len(_WIDE_TEXT) - len(text))), number, src)


def _parse_partition(
    paths: Iterable[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
) -> Iterator[tuple[Any, ...]]:
    # One worker process per partition (Spark runs one partition per core): a file that crashes
    # or hangs the parser costs that file (a QR901), never the Python worker, the task or the job.
    for parsed in isolation.parse_files(paths, limits, workers=1, overrides=overrides):
        src = parsed.file.file
        yield _wide("file", tuple(parsed.file), src)
        for tag, rows in (
            ("resource", parsed.resources),
            ("key", parsed.keys),
            ("edge", parsed.edges),
            ("export", parsed.exports),
            ("note", parsed.notes),
            ("nested", parsed.nested),
        ):
            for row in rows:
                yield _wide(tag, tuple(row), src)


def _narrow(wide: DataFrame, tag: str) -> DataFrame:
    texts = iter(_WIDE_TEXT)
    columns = [
        F.col("n").alias(f.name)
        if isinstance(f.dataType, IntegerType)
        else F.col(next(texts)).alias(f.name)
        for f in _SCHEMAS[tag].fields
    ]
    return wide.filter(F.col("tag") == tag).select(*columns)


def parse(
    spark: SparkSession,
    files: list[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
) -> tuple[DataFrame, dict[str, DataFrame]]:
    """Paths -> (the parsed wide rows, one DataFrame per row kind), from one pass over the files."""
    context = spark.sparkContext
    slices = max(min(len(files), context.defaultParallelism * 2), len(files) // 500, 1)
    parsed = context.parallelize(files, slices).mapPartitions(
        functools.partial(_parse_partition, limits=limits, overrides=overrides)
    )
    wide = spark.createDataFrame(parsed, WIDE_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
    return wide, {tag: _narrow(wide, tag) for tag in _SCHEMAS}


# --- resolve (DataFrame joins) -----------------------------------------------------------------


def resolve(edges: DataFrame, keys: DataFrame, exports: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(resolved edges: from_uid, role, detail, to_uid; unresolved edges with the EdgeRow columns)."""
    edges = edges.withColumn("edge_id", F.monotonically_increasing_id())
    is_import = F.col("key").startswith("export:")
    imports = (
        edges.filter(is_import)
        .withColumn("name", F.expr("substring(key, 8)"))
        .join(exports.select("name", "queue_key", "function_key"), "name", "left")
        .withColumn(
            "target",
            F.when(F.col("kind") == "queue", F.col("queue_key")).otherwise(F.col("function_key")),
        )
        .select("edge_id", "from_uid", "role", "detail", "target")
    )
    direct = edges.filter(~is_import).select(
        "edge_id", "from_uid", "role", "detail", F.col("key").alias("target")
    )
    matched = (
        imports.unionByName(direct)
        .join(keys.withColumnRenamed("uid", "to_uid"), F.col("target") == F.col("key"))
        .select("edge_id", "from_uid", "role", "detail", "to_uid")
    )
    resolved = matched.drop("edge_id").distinct()
    unresolved = edges.join(matched.select("edge_id").distinct(), "edge_id", "left_anti").select(
        *EdgeRow._fields
    )
    return resolved, unresolved


def members(queues: DataFrame, resolved: DataFrame) -> DataFrame:
    """Who stands around each queue: queue_uid, member, detail, uid (see ``engine.members``).

    One pass over the resolved edges turns each edge into its member rows (a DLQ edge makes two:
    the DLQ in its source's context and the source in the DLQ's); one join adds each event
    source's function to the queue it reads.
    """

    def member(queue: str, name: str, uid: str, detail: str | None = None) -> Any:
        return F.struct(
            F.col(queue).alias("queue_uid"),
            F.lit(name).alias("member"),
            (F.col(detail) if detail else F.lit("")).alias("detail"),
            F.col(uid).alias("uid"),
        )

    role = F.col("role")
    per_edge = (
        F.when(
            role == model.ROLE_DLQ,
            F.array(
                member("from_uid", model.MEMBER_DLQ, "to_uid"),
                member("to_uid", model.MEMBER_SOURCE, "from_uid"),
            ),
        )
        .when(
            role == model.ROLE_EVENT_SOURCE, F.array(member("to_uid", model.MEMBER_ESM, "from_uid"))
        )
        .when(
            role == model.ROLE_ALARM,
            F.array(member("to_uid", model.MEMBER_ALARM, "from_uid", "detail")),
        )
        .when(role == model.ROLE_POLICY, F.array(member("to_uid", model.MEMBER_POLICY, "from_uid")))
        .when(
            role == model.ROLE_FEEDS_DLQ,
            F.array(member("to_uid", model.MEMBER_FEEDER, "from_uid", "detail")),
        )
        .when(
            role == model.ROLE_ALLOW_SOURCE,
            F.array(member("from_uid", model.MEMBER_ALLOW_SOURCE, "to_uid")),
        )
    )
    from_edges = (
        resolved.filter(role != model.ROLE_FUNCTION)
        .select(F.explode(per_edge).alias("m"))
        .select("m.*")
    )
    event_sources = resolved.filter(role == model.ROLE_EVENT_SOURCE).select(
        F.col("from_uid").alias("mapping_uid"), F.col("to_uid").alias("queue_uid")
    )
    functions = resolved.filter(role == model.ROLE_FUNCTION).select(
        F.col("from_uid").alias("mapping_uid"), F.col("to_uid").alias("uid")
    )
    consumer_functions = event_sources.join(functions, "mapping_uid").select(
        "queue_uid",
        F.lit(model.MEMBER_FUNCTION).alias("member"),
        F.col("mapping_uid").alias("detail"),
        "uid",
    )
    own = queues.select(
        F.col("uid").alias("queue_uid"),
        F.lit(model.MEMBER_QUEUE).alias("member"),
        F.lit("").alias("detail"),
        F.col("uid"),
    )
    return own.unionByName(from_edges).unionByName(consumer_functions)


def contexts(members_df: DataFrame, resources: DataFrame) -> DataFrame:
    """One row per queue: its uid and the list of (member, detail, resource columns)."""
    return (
        members_df.join(resources, "uid")
        .groupBy("queue_uid")
        .agg(
            F.collect_list(
                F.struct("member", "detail", *[F.col(c) for c in ResourceRow._fields])
            ).alias("members")
        )
    )


# --- evaluate (Python on executors) ------------------------------------------------------------


def _evaluate_context(row: Any) -> list[tuple[str, ...]]:
    group = [
        (m["member"], m["detail"], ResourceRow(*(m[c] for c in ResourceRow._fields)))
        for m in row["members"]
    ]
    return [tuple(f.as_dict().values()) for f in engine.evaluate_group(row["queue_uid"], group)]


def _unresolved_finding(row: Any) -> tuple[str, ...]:
    source = ResourceRow(*(row[c] for c in ResourceRow._fields))
    edge = EdgeRow(*(row[f"edge_{c}"] for c in EdgeRow._fields))
    return tuple(engine.unresolved_edge_finding(source, edge).as_dict().values())


def _unparseable_finding(row: Any) -> tuple[str, ...]:
    return tuple(
        rules.unparseable_finding(row["file"], row["stack"], row["error"]).as_dict().values()
    )


def evaluate(
    spark: SparkSession,
    contexts_df: DataFrame,
    unresolved: DataFrame,
    resources: DataFrame,
    files: DataFrame,
    notes: DataFrame,
) -> DataFrame:
    judged = contexts_df.rdd.flatMap(_evaluate_context)
    edges = unresolved.select(*[F.col(c).alias(f"edge_{c}") for c in EdgeRow._fields])
    missing = edges.join(resources, edges["edge_from_uid"] == resources["uid"]).rdd.map(
        _unresolved_finding
    )
    broken = files.filter(F.col("status") != "ok").rdd.map(_unparseable_finding)
    noted = notes.rdd.map(lambda row: tuple(rules.note_finding(NoteRow(*row)).as_dict().values()))
    return spark.createDataFrame(judged.union(missing).union(broken).union(noted), FINDING_SCHEMA)


# --- the whole job -------------------------------------------------------------------------------


def _progress(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"queue-audit: {message}", file=sys.stderr, flush=True)


def run(
    spark: SparkSession,
    files: list[tuple[str, str]],
    parquet_dir: str | None = None,
    quiet: bool = True,
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
) -> AuditResult:
    """Audit ``(path, stack)`` pairs on ``spark``; each stage is materialized to time it."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    wide, frames = parse(spark, files, limits, overrides)
    again, child_overrides = nesting.children(
        (model.NestedRow(*row) for row in frames["nested"].collect()), files, overrides
    )
    if again:  # nested stacks whose parent passes plain values: parse those children again
        reparsed, _ = parse(spark, again, limits, child_overrides)
        kept = wide.filter(~F.col("src").isin([file for file, _stack in again]))
        first, wide = wide, kept.unionByName(reparsed).persist(StorageLevel.MEMORY_AND_DISK)
        frames = {tag: _narrow(wide, tag) for tag in _SCHEMAS}
    parsed_count = frames["file"].count()  # materializes the cached rows the stages below read
    if again:
        first.unpersist()
        reparsed.unpersist()
    timings["parse"] = time.perf_counter() - started
    _progress(f"parsed {parsed_count} files in {timings['parse']:.1f} s", quiet)

    mark = time.perf_counter()
    resolved, unresolved = resolve(frames["edge"], frames["key"], frames["export"])
    queues = frames["resource"].filter(F.col("type") == model.QUEUE)
    resolved = resolved.persist(StorageLevel.MEMORY_AND_DISK)
    grouped = contexts(members(queues, resolved), frames["resource"]).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    unresolved = unresolved.persist(StorageLevel.MEMORY_AND_DISK)
    queue_count = grouped.count()
    unresolved.count()
    timings["resolve"] = time.perf_counter() - mark
    _progress(f"resolved {queue_count} queue contexts in {timings['resolve']:.1f} s", quiet)

    mark = time.perf_counter()
    findings_df = evaluate(
        spark, grouped, unresolved, frames["resource"], frames["file"], frames["note"]
    ).persist(StorageLevel.MEMORY_AND_DISK)
    rows = findings_df.collect()
    timings["evaluate"] = time.perf_counter() - mark
    _progress(f"evaluated: {len(rows)} findings in {timings['evaluate']:.1f} s", quiet)

    mark = time.perf_counter()
    if parquet_dir:
        write_parquet(findings_df, parquet_dir)
    findings = sorted((Finding(**row.asDict()) for row in rows), key=Finding.sort_key)
    file_rows = sorted((FileRow(*row) for row in frames["file"].collect()), key=lambda f: f.file)
    timings["write"] = time.perf_counter() - mark
    for frame in (wide, resolved, grouped, unresolved, findings_df):
        frame.unpersist()
    return AuditResult(findings, file_rows, queue_count, timings)


def write_parquet(findings: DataFrame, directory: str) -> None:
    """Append this run's findings to a Parquet dataset partitioned by run, for fleet history."""
    run_id = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    findings.withColumn("run", F.lit(run_id)).write.mode("append").partitionBy("run").parquet(
        directory
    )
