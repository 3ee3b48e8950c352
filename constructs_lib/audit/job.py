"""The fleet audit on Spark: extract -> parse -> resolve -> evaluate -> load.

One code path for every kind of session: the job uses the DataFrame API only (no RDD, no
SparkContext), so it runs on a local session, a standalone, YARN or Kubernetes cluster through
``spark-submit``, and on Spark Connect (``--remote sc://...``).

- extract: the driver lists the inputs (``discovery.discover``: files, folders, ``s3://``
  prefixes; it never reads a template) into a DataFrame of paths;
- parse: ``mapInArrow`` reads and parses each partition's files in Python (in a parsing worker
  process per task: ``isolation.py``) into flat rows of one declared wide schema, in Arrow
  batches. Spark never infers a schema from a template: ``Resources`` keys are logical ids;
- resolve: joins: ``Fn::ImportValue`` names to ``Export`` names, then reference keys (local
  ids, queue and function names from literal ARNs, URLs, ``Fn::Sub``/``Fn::Join``) to resources,
  then the resolved edges into the members of each queue's context;
- evaluate: the member rows, partitioned and sorted by queue, go through one Python pass
  (``mapInArrow`` again) that builds each ``QueueContext`` and judges it with
  ``rules.evaluate``, the function the single-process engine and the in-app plugin call;
- load: findings to the driver for the report, and from the executors to ``--output-dir``
  (``outputs.py``).

pyspark is imported here only.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from constructs_lib.audit import (
    acceptance,
    baseline,
    engine,
    isolation,
    model,
    nesting,
    outputs,
    report,
    rules,
    shipping,
    suppressions,
)
from constructs_lib.audit.engine import AuditResult
from constructs_lib.audit.model import EdgeRow, FileRow, Finding, ResourceRow
from constructs_lib.audit.parameters import Overrides
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

# Files per parse task: large enough that a task's fixed cost (a Python worker, a parsing
# process) is small beside its work, small enough that a lost executor costs little to redo.
FILES_PER_TASK = 1000
# Templates per partition of the parsed rows: each later stage's task over them is then big
# enough to be worth its scheduling, on a cluster as on one machine.
FILES_PER_PARTITION = 25_000
# Rows per Arrow batch the Python stages send back to the JVM.
BATCH_ROWS = 20_000


def _schema(*names: str, ints: Iterable[str] = (), binary: Iterable[str] = ()) -> StructType:
    integer, raw = set(ints), set(binary)

    def kind(name: str) -> Any:
        return IntegerType() if name in integer else BinaryType() if name in raw else StringType()

    return StructType([StructField(n, kind(n), True) for n in names])


FINDING_FIELDS = tuple(Finding.__dataclass_fields__)
FINDING_SCHEMA = _schema(*FINDING_FIELDS)
# The driver's list of inputs: the path as bytes (a file name need not be UTF-8) and its stack.
PATH_SCHEMA = _schema("path", "stack", binary=["path"])
_SCHEMAS = {
    "file": _schema(*FileRow._fields, ints=["resources"]),
    "resource": _schema(*ResourceRow._fields),
    "key": _schema(*model.KeyRow._fields),
    "edge": _schema(*EdgeRow._fields),
    "export": _schema(*model.ExportRow._fields),
    "nested": _schema(*model.NestedRow._fields),
    # Notes and unreadable files: findings a template yields on its own, made while parsing.
    "finding": FINDING_SCHEMA,
}
# Parsing yields every row kind in one pass, into one wide schema: a tag, eleven text columns and
# one integer (wide enough for each kind: a finding has eleven); each kind is then a JVM-side select of it. "src" is
# the file a row came from, so a nested child parsed again replaces all of its rows.
_WIDE_TEXT = [f"t{i}" for i in range(11)]
WIDE_SCHEMA = _schema("tag", *_WIDE_TEXT, "n", "src", ints=["n"])
# The evaluation pass reads one row per member of a queue's context (see ``members``) with its
# resource's columns, or one row per unresolved reference: member UNRESOLVED, with the edge's.
_EDGE_COLUMNS = [f"edge_{c}" for c in EdgeRow._fields]
UNRESOLVED = "unresolved"

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


# --- the session ---------------------------------------------------------------------------------


def create_session(
    master: str | None = None, remote: str | None = None, app_name: str = "queue-audit"
) -> SparkSession:
    """A quiet session: classic (``master``; default ``local[*]``, or what ``spark-submit``
    set) or Spark Connect (``remote``, ``sc://host:port``). Executors other than this process's
    own get the job's code shipped to them (``shipping.py``)."""
    builder: Any = SparkSession.builder
    if remote:
        spark: SparkSession = builder.remote(remote).appName(app_name).getOrCreate()
    else:
        # Python workers must run the interpreter that has constructs_lib installed, where the
        # executors are this machine's.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if master:
            builder = builder.master(master)
        if (master or "local").startswith("local"):
            # One machine: bind to loopback instead of guessing an interface (and warning).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (
            builder.appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config(
                "spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
            )
        )
        with _jvm_output_hidden():
            spark = builder.getOrCreate()
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    cores = _local_cores(str(spark.conf.get("spark.master", "") or ""))
    if cores:
        # One machine: one shuffle partition per core. Each stage of the audit's joins is
        # small, so more partitions only add tasks. A cluster keeps its own setting.
        spark.conf.set("spark.sql.shuffle.partitions", str(cores))
    if remote or not cores:
        shipping.ship(spark)
    return spark


def _local_cores(master: str) -> int:
    """The cores of a local master (``local``, ``local[4]``, ``local[*]``, ``local[2,3]``);
    0 for any other (the executors are then not this process's)."""
    if master == "local":
        return 1
    if not master.startswith("local["):
        return 0
    count = master[len("local[") :].split(",")[0].rstrip("]")
    return (os.cpu_count() or 1) if count == "*" else int(count) if count.isdigit() else 0


@contextlib.contextmanager
def _jvm_output_hidden() -> Iterator[None]:
    """The JVM that a classic session starts writes start-up chatter to stderr before any log
    configuration applies (``WARNING: Using incubator modules``, the default log level). It
    inherits this process's stderr, so point that at a log file while it starts; Spark's own
    errors still reach the caller as exceptions. ``QUEUE_AUDIT_SPARK_LOG`` names the file to
    keep (default: a temporary one, removed when this process exits)."""
    log_path = os.environ.get("QUEUE_AUDIT_SPARK_LOG")
    if not log_path:
        log_path = os.path.join(tempfile.gettempdir(), f"queue-audit-spark-{os.getpid()}.log")
        atexit.register(_remove, log_path)
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


# --- parse (runs on executors) -------------------------------------------------------------------


def _rows_of(parsed: model.ParsedTemplate) -> Iterator[tuple[str, tuple[Any, ...]]]:
    yield "file", tuple(parsed.file)
    for tag, rows in (
        ("resource", parsed.resources),
        ("key", parsed.keys),
        ("edge", parsed.edges),
        ("export", parsed.exports),
        ("nested", parsed.nested),
    ):
        for row in rows:
            yield tag, tuple(row)
    for finding in engine.template_findings(parsed):
        yield "finding", tuple(finding.as_dict().values())


def _arrow_text(values: list[Any]) -> Any:
    """A string column. A file name that is not UTF-8 holds lone surrogates, which Arrow cannot
    encode: such values travel as the ``\\udcff``-style escapes the reports print anyway."""
    import pyarrow as pa

    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:
        return pa.array(
            [v if v is None else v.encode("utf-8", "backslashreplace").decode() for v in values],
            pa.string(),
        )


def _arrow_batch(columns: dict[str, list[Any]], schema: StructType) -> Any:
    import pyarrow as pa

    arrays = [
        pa.array(columns[f.name], pa.int32())
        if isinstance(f.dataType, IntegerType)
        else _arrow_text(columns[f.name])
        for f in schema.fields
    ]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


def _parse_batches(
    batches: Iterable[Any], limits: ReadLimits, overrides: Overrides, cwd: str
) -> Iterator[Any]:
    """One partition of paths -> wide rows. The parsing worker process (``isolation.py``) makes
    a file that crashes or hangs the parser cost that file (a QR901), never the task."""
    files = [
        (os.fsdecode(path), stack)
        for batch in batches
        for path, stack in zip(
            batch.column("path").to_pylist(), batch.column("stack").to_pylist(), strict=True
        )
    ]
    width = len(_WIDE_TEXT)
    columns: dict[str, list[Any]] = {name: [] for name in WIDE_SCHEMA.names}
    parsed_files = isolation.parse_files(files, limits, 1, overrides, cwd)
    for parsed in parsed_files:
        src = parsed.file.file
        for tag, row in _rows_of(parsed):
            text = [v for v in row if not isinstance(v, int)]
            columns["tag"].append(tag)
            for i in range(width):
                columns[_WIDE_TEXT[i]].append(text[i] if i < len(text) else "")
            columns["n"].append(next((v for v in row if isinstance(v, int)), 0))
            columns["src"].append(src)
        if len(columns["tag"]) >= BATCH_ROWS:
            yield _arrow_batch(columns, WIDE_SCHEMA)
            columns = {name: [] for name in WIDE_SCHEMA.names}
    if columns["tag"]:
        yield _arrow_batch(columns, WIDE_SCHEMA)


def _narrow(wide: DataFrame, tag: str) -> DataFrame:
    texts = iter(_WIDE_TEXT)
    columns = [
        F.col("n").alias(f.name)
        if isinstance(f.dataType, IntegerType)
        else F.col(next(texts)).alias(f.name)
        for f in _SCHEMAS[tag].fields
    ]
    return wide.filter(F.col("tag") == tag).select(*columns)


def _paths_frame(spark: SparkSession, files: list[tuple[str, str]]) -> DataFrame:
    import pyarrow as pa

    table = pa.table(
        {
            "path": pa.array([os.fsencode(file) for file, _ in files], pa.binary()),
            "stack": _arrow_text([stack for _, stack in files]),
        }
    )
    tasks = max(1, min(len(files), math.ceil(len(files) / FILES_PER_TASK), 10_000))
    tasks = max(tasks, min(len(files), 2))
    return spark.createDataFrame(table, PATH_SCHEMA).repartition(tasks)


def parse(
    spark: SparkSession,
    files: list[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
) -> DataFrame:
    """Paths -> the parsed wide rows (not yet computed). Relative paths are read from this
    process's working directory, wherever the executors run."""
    parse_partition = functools.partial(
        _parse_batches, limits=limits, overrides=dict(overrides or {}), cwd=os.getcwd()
    )
    return _paths_frame(spark, files).mapInArrow(parse_partition, WIDE_SCHEMA)


# --- resolve (DataFrame joins) -----------------------------------------------------------------


def resolve(edges: DataFrame, keys: DataFrame, exports: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(resolved edges: from_uid, role, detail, to_uid; unresolved edges with the EdgeRow columns).

    One outer join of every edge's target key with the keys gives both: an edge that matched
    nothing comes out once, with no ``to_uid``."""
    is_import = F.col("key").startswith("export:")
    imports = (
        edges.filter(is_import)
        .withColumn("name", F.expr("substring(key, 8)"))
        .join(F.broadcast(exports.select("name", "queue_key", "function_key")), "name", "left")
        .withColumn(
            "target",
            F.when(F.col("kind") == "queue", F.col("queue_key")).otherwise(F.col("function_key")),
        )
        .select(*EdgeRow._fields, "target")
    )
    direct = edges.filter(~is_import).withColumn("target", F.col("key"))
    targets = keys.select(F.col("key").alias("target"), F.col("uid").alias("to_uid"))
    matched = imports.unionByName(direct).join(targets, "target", "left")
    resolved = (
        matched.filter(F.col("to_uid").isNotNull())
        .select("from_uid", "role", "detail", "to_uid")
        .distinct()
    )
    unresolved = matched.filter(F.col("to_uid").isNull()).select(*EdgeRow._fields)
    return resolved, unresolved


def members(queues: DataFrame, resolved: DataFrame) -> DataFrame:
    """Who stands around each queue: queue_uid, member, detail, uid (see ``engine.members``).

    One pass over the resolved edges turns each edge into its member rows (a DLQ edge makes two:
    the DLQ in its source's context and the source in the DLQ's); one join adds each event
    source's function to the queue it reads, and a join of those on the function adds all of
    the function's queue-reading mappings, wherever they are in the fleet.
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
            role == model.ROLE_PRODUCER,
            F.array(member("to_uid", model.MEMBER_PRODUCER, "from_uid", "detail")),
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
    consumers = event_sources.join(functions, "mapping_uid").distinct()
    consumer_functions = consumers.select(
        "queue_uid",
        F.lit(model.MEMBER_FUNCTION).alias("member"),
        F.col("mapping_uid").alias("detail"),
        "uid",
    )
    # Each consumer function's mappings across the fleet, into every queue it consumes: a
    # second join, on the function, of the consumers with themselves.
    mappings_of = consumers.select(
        F.col("uid").alias("function_uid"), F.col("mapping_uid").alias("uid")
    ).distinct()
    function_mappings = (
        consumers.select("queue_uid", F.col("uid").alias("function_uid"))
        .distinct()
        .join(mappings_of, "function_uid")
        .select(
            "queue_uid",
            F.lit(model.MEMBER_FUNCTION_MAPPING).alias("member"),
            F.col("function_uid").alias("detail"),
            "uid",
        )
    )
    own = queues.select(
        F.col("uid").alias("queue_uid"),
        F.lit(model.MEMBER_QUEUE).alias("member"),
        F.lit("").alias("detail"),
        F.col("uid"),
    )
    return (
        own.unionByName(from_edges).unionByName(consumer_functions).unionByName(function_mappings)
    )


def evaluation_rows(
    members_df: DataFrame, unresolved: DataFrame, resources: DataFrame, partitions: int
) -> DataFrame:
    """Each member with its resource's columns, and each unresolved edge with its source's,
    partitioned and sorted by queue so that one pass meets each queue's members together."""
    no_edge = [F.lit(None).cast("string").alias(c) for c in _EDGE_COLUMNS]
    member_rows = members_df.join(resources, "uid").select(
        "queue_uid", "member", "detail", *ResourceRow._fields, *no_edge
    )
    edges = unresolved.select(*[F.col(c).alias(f"edge_{c}") for c in EdgeRow._fields])
    unresolved_rows = edges.join(resources, edges["edge_from_uid"] == resources["uid"]).select(
        F.col("uid").alias("queue_uid"),
        F.lit(UNRESOLVED).alias("member"),
        F.lit("").alias("detail"),
        *ResourceRow._fields,
        *_EDGE_COLUMNS,
    )
    return (
        member_rows.unionByName(unresolved_rows)
        .repartition(partitions, "queue_uid")
        .sortWithinPartitions("queue_uid")
    )


# --- evaluate (Python on executors) ------------------------------------------------------------


def _evaluate_batches(batches: Iterable[Any]) -> Iterator[Any]:
    """Sorted evaluation rows -> findings. A queue's members are consecutive (they may span two
    batches), so each context is judged once its last member has been seen."""
    found: list[Finding] = []
    queue_uid: str | None = None
    group: list[tuple[str, str, ResourceRow]] = []
    for batch in batches:
        columns = batch.to_pydict()
        for i in range(batch.num_rows):
            resource = ResourceRow(*(columns[c][i] for c in ResourceRow._fields))
            if columns["member"][i] == UNRESOLVED:
                edge = EdgeRow(*(columns[c][i] for c in _EDGE_COLUMNS))
                found.append(engine.unresolved_edge_finding(resource, edge))
                continue
            if columns["queue_uid"][i] != queue_uid:
                if group:
                    found += engine.evaluate_group(queue_uid or "", group)
                queue_uid, group = columns["queue_uid"][i], []
            group.append((columns["member"][i], columns["detail"][i], resource))
        if len(found) >= BATCH_ROWS:
            yield _findings_batch(found)
            found = []
    if group:
        found += engine.evaluate_group(queue_uid or "", group)
    if found:
        yield _findings_batch(found)


def _findings_batch(findings: list[Finding]) -> Any:
    columns: dict[str, list[Any]] = {name: [] for name in FINDING_FIELDS}
    for finding in findings:
        for name, value in finding.as_dict().items():
            columns[name].append(value)
    return _arrow_batch(columns, FINDING_SCHEMA)


def evaluate(wide: DataFrame, partitions: int) -> DataFrame:
    """The parsed rows -> every finding: judged contexts, unresolved references, and the notes
    and unreadable files found while parsing."""
    frames = {tag: _narrow(wide, tag) for tag in _SCHEMAS}
    resolved, unresolved = resolve(frames["edge"], frames["key"], frames["export"])
    resources = frames["resource"]
    queues = resources.filter(F.col("type") == model.QUEUE)
    judged = evaluation_rows(
        members(queues, resolved), unresolved, resources, partitions
    ).mapInArrow(_evaluate_batches, FINDING_SCHEMA)
    return judged.unionByName(frames["finding"])


# --- the whole job -------------------------------------------------------------------------------


def _counts(wide: DataFrame) -> tuple[int, int]:
    """(files, queues) in one job, which also fills the cache of parsed rows."""
    tag = F.col("tag")
    resource_type = F.col(_WIDE_TEXT[ResourceRow._fields.index("type")])
    is_queue = (tag == "resource") & (resource_type == model.QUEUE)
    row = wide.select(
        F.sum(F.when(tag == "file", 1).otherwise(0)).alias("files"),
        F.sum(F.when(is_queue, 1).otherwise(0)).alias("queues"),
    ).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    return int(row["files"] or 0), int(row["queues"] or 0)


def run(
    spark: SparkSession,
    files: list[tuple[str, str]],
    output_dir: str | None = None,
    quiet: bool = True,
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    gather: bool = True,
    acceptance: acceptance.Acceptance = acceptance.NONE,
) -> AuditResult:
    """Audit ``(path or s3:// URL, stack)`` pairs on ``spark``. With ``output_dir``, the
    executors also write the findings there as Parquet and JSON Lines (``outputs.py``).

    ``gather=False`` keeps the driver's memory independent of the fleet's size: the result's
    ``findings`` streams from the executors in report order (``FindingsView``), its counts are
    computed by Spark, and the session keeps the findings cached until ``release(result)``.
    ``acceptance`` (a suppressions file, a baseline) is applied as the local engine does."""
    progress: Callable[[str], None] = (lambda _m: None) if quiet else _progress
    timings: dict[str, float] = {}
    started = time.perf_counter()
    progress(f"reading and parsing {len(files):,} files")
    wide = parse(spark, files, limits, overrides)
    # Few partitions for the cached rows: every later stage scans them, and each partition is a
    # task there; the parse itself keeps its own, finer tasks.
    partitions = _partitions(spark, len(files))
    wide = wide.coalesce(partitions).persist()
    again, child_overrides = nesting.children(
        (model.NestedRow(*row) for row in _narrow(wide, "nested").collect()), files, overrides
    )
    if again:  # nested stacks whose parent passes plain values: parse those children again
        reparsed = parse(spark, again, limits, child_overrides)
        kept = wide.filter(~F.col("src").isin([file for file, _stack in again]))
        first, wide = wide, kept.unionByName(reparsed).coalesce(partitions).persist()
    file_count, queue_count = _counts(wide)
    if again:
        first.unpersist()
    timings["parse"] = time.perf_counter() - started
    progress(f"parsed {file_count:,} of {len(files):,} files in {timings['parse']:.1f} s")

    mark = time.perf_counter()
    # On disk, not in memory: on a local master the executor is the driver's JVM, whose heap
    # must not hold the fleet's findings.
    findings_df = accept(spark, evaluate(wide, partitions), acceptance, partitions).persist(
        StorageLevel.DISK_ONLY
    )
    fixed = fixed_of(findings_df, acceptance)
    if gather:
        findings: Collection[Finding] = sorted(
            (Finding(**row) for row in findings_df.toArrow().to_pylist()), key=Finding.sort_key
        )
        file_rows = sorted(
            (FileRow(*row) for row in _narrow(wide, "file").collect()), key=lambda f: f.file
        )
        result = AuditResult(findings, file_rows, queue_count, timings, fixed=fixed)
        listing = findings_df
    else:
        summary, listed, size = summarize(findings_df, _narrow(wide, "file"), queue_count, fixed)
        view = report_view(findings_df, listed, size)
        findings, listing = view, view.frame
        result = AuditResult(findings, [], queue_count, timings, summary, fixed)
    timings["evaluate"] = time.perf_counter() - mark
    progress(
        f"judged {queue_count:,} queues: {len(findings):,} findings in {timings['evaluate']:.1f} s"
    )

    mark = time.perf_counter()
    if output_dir:
        written = write_findings(listing, output_dir, result)
        progress(f"wrote {len(findings):,} findings to {written}")
    timings["write"] = time.perf_counter() - mark
    wide.unpersist()
    if gather:
        findings_df.unpersist()
    return result


# The report's order: Finding.sort_key's fields, in its order. Spark orders strings by their
# UTF-8 bytes, which is code point order: Python's.
_SORT_COLUMNS = ("template", "stack", "resource", "rule_id", "queue", "message")
# The most bytes of findings (``_finding_bytes``) in one partition of the report's order. The
# report streams partition by partition (``toLocalIterator``): the driver's JVM holds a
# partition several times over while it hands it to Python (the task's pickled rows, the task
# result, as stored and as fetched) and fetches the next one meanwhile, about eight copies, so
# 16 MiB keeps that near 128 MiB of a 1 GiB default heap whatever the fleet; the same bound
# holds for the executor that sorts a partition and for the Python worker that writes one as a
# dataset part. A million findings (470-600 bytes each) make 28-36 partitions, each one job.
REPORT_PARTITION_BYTES = 16 * 2**20
# What a finding costs beyond its text once pickled for Python: at most five bytes of opcode
# and length per field (eleven) and about twenty for the row's constructor call, rounded up.
FINDING_OVERHEAD_BYTES = 128


def _finding_bytes() -> Any:
    """A finding's size: its text's UTF-8 bytes and ``FINDING_OVERHEAD_BYTES``."""
    return sum(
        (F.coalesce(F.octet_length(F.col(name)), F.lit(0)) for name in FINDING_FIELDS),
        F.lit(FINDING_OVERHEAD_BYTES),
    )


def report_partitions(size: int) -> int:
    """Partitions of the report's order for ``size`` bytes of findings (``_finding_bytes``):
    one per ``REPORT_PARTITION_BYTES``, at least one."""
    return max(1, math.ceil(size / REPORT_PARTITION_BYTES))


def measure(findings: DataFrame) -> tuple[int, int]:
    """(how many findings, their size in ``_finding_bytes``) in one aggregation."""
    row = findings.select(
        F.count(F.lit(1)).alias("count"), F.sum(_finding_bytes()).alias("bytes")
    ).first()
    assert row is not None  # an aggregate without grouping has exactly one row
    return int(row["count"]), int(row["bytes"] or 0)


def report_view(findings: DataFrame, count: int, size: int) -> FindingsView:
    """``findings`` (``count`` of them, ``size`` bytes: ``measure``) in report order, sorted once
    into partitions of at most about ``REPORT_PARTITION_BYTES`` and kept on disk, read a
    partition at a time by each pass over the view: the memory of the driver, of the executors
    and of their Python workers is bounded by a partition, not by the fleet.

    A global ``orderBy`` would give the session's shuffle partitions (on a local master, one per
    core, which adaptive execution may merge further): a fleet's million findings made two
    partitions of some 300 MB, and the driver's JVM ran out of its 1 GiB heap handing them
    over. A range partitioning by the sort columns with a count of its own keeps its count
    (adaptive execution merges no partitions whose number was asked for); each partition then
    holds a range of keys, sorted within, so reading partitions in order reads the report in
    order."""
    ordered = (
        findings.repartitionByRange(report_partitions(size), *_SORT_COLUMNS)
        .sortWithinPartitions(*_SORT_COLUMNS)
        .select(*FINDING_FIELDS)
        .persist(StorageLevel.DISK_ONLY)
    )
    ordered.count()  # sorts and stores every partition now: the report only reads them
    return FindingsView(ordered, count, (findings,))


class FindingsView:
    """The findings of a run, in report order (``report_view``), streamed from the executors a
    partition at a time (``toLocalIterator``): the driver holds one partition and prefetches
    the next, whatever the fleet's size. Each pass reads the stored partitions again.
    ``sources``: the stored frames it was sorted from, kept until ``release``, so that a lost
    partition is sorted again from them rather than audited again."""

    def __init__(self, ordered: DataFrame, count: int, sources: Sequence[DataFrame] = ()) -> None:
        self.frame = ordered
        self.count = count
        self.sources = tuple(sources)

    def __len__(self) -> int:
        return self.count

    def __contains__(self, item: object) -> bool:
        return any(item == finding for finding in self)

    def __iter__(self) -> Iterator[Finding]:
        for row in self.frame.toLocalIterator(prefetchPartitions=True):
            # The frame's columns are FINDING_FIELDS, in Finding's order.
            yield Finding(*row)


def release(result: AuditResult) -> None:
    """Drop the stored findings behind a streamed result."""
    if isinstance(result.findings, FindingsView):
        for frame in (result.findings.frame, *result.findings.sources):
            frame.unpersist()


def summarize(
    findings: DataFrame, files: DataFrame, queues: int, fixed: list[Finding] | None
) -> tuple[dict[str, Any], int, int]:
    """``report.summarize``'s counts, computed by Spark (a few small aggregations), how many
    findings there are in all and their size (``measure``)."""
    by_status = {
        row["status"]: int(row["count"]) for row in files.groupBy("status").count().collect()
    }
    by_rule: Counter[tuple[str, str, str]] = Counter()
    size = 0
    per_rule = findings.groupBy("rule_id", "severity", "suppression", "baseline").agg(
        F.count(F.lit(1)).alias("count"), F.sum(_finding_bytes()).alias("bytes")
    )
    for row in per_rule.collect():
        state = model.finding_state(row["suppression"], row["baseline"])
        by_rule[(row["rule_id"], row["severity"], state)] += int(row["count"])
        size += int(row["bytes"] or 0)
    read_ok = files.filter(F.col("status") == "ok").select(F.col("file").alias("template"))
    with_findings = (
        findings.filter(F.col("rule_id") != rules.UNPARSEABLE_RULE)
        .select("template")
        .distinct()
        .join(read_ok, "template", "left_semi")
        .count()
    )
    summary = report.summary_of(
        by_status, with_findings, queues, by_rule, None if fixed is None else len(fixed)
    )
    return summary, sum(by_rule.values()), size


# --- accept (a suppressions file, a baseline) ------------------------------------------------


def accept(
    spark: SparkSession, findings: DataFrame, accepts: acceptance.Acceptance, partitions: int
) -> DataFrame:
    """``acceptance.apply`` on the executors, lazily: the rule levels as a column expression,
    the file's suppressions finding by finding, the expiry QR902s from the driver, and the
    comparison with the baseline: the findings of each fingerprint that are not suppressed
    numbered in report order by a window and joined with the baseline's entry of the same number
    (its values decide "changed"), as the local engine counts them. ``fixed_of`` then lists
    what the baseline lost."""
    if accepts.levels:
        severity = F.col("severity")
        for rule_id, level in sorted(accepts.levels.items()):
            severity = F.when(F.col("rule_id") == rule_id, F.lit(level)).otherwise(severity)
        findings = findings.withColumn("severity", severity).select(*FINDING_FIELDS)
    if accepts.suppressions:
        apply_file = functools.partial(_accept_batches, active=accepts.active)
        findings = findings.mapInArrow(apply_file, FINDING_SCHEMA)
        expired = accepts.expired_findings()
        if expired:
            findings = findings.unionByName(_findings_frame(spark, expired))
    if accepts.baseline is None:
        return findings
    key = list(baseline.FINGERPRINT_FIELDS)
    known = _numbered_baseline(spark, accepts.baseline)
    counted = F.col("suppression") == ""
    number = F.row_number().over(Window.partitionBy(*key, counted).orderBy(*_SORT_COLUMNS))
    values = F.array_join(
        F.regexp_extract_all(F.col("message"), F.lit(baseline.VALUE_PATTERN), F.lit(0)), " "
    )
    was = F.col("_values")
    state = (
        F.when(~counted, F.col("baseline"))
        .when(F.col("_known").isNull(), model.BASELINE_NEW)
        .when(was.isNotNull() & (was != values), model.BASELINE_UPDATED)
        .otherwise(model.BASELINE_UNCHANGED)
    )
    return (
        findings.repartition(partitions, *key)
        .withColumn("_n", number)
        .join(F.broadcast(known), [*key, "_n"], "left")
        .withColumn("baseline", state)
        .select(*FINDING_FIELDS)
    )


def _numbered_baseline(spark: SparkSession, entries: Sequence[baseline.Entry]) -> DataFrame:
    """The baseline's entries as (fingerprint, n, values): the n-th entry of each fingerprint
    in report order (the order they were read in), which the n-th finding is compared with."""
    seen: Counter[baseline.Fingerprint] = Counter()
    rows = []
    for entry in entries:
        key = baseline.fingerprint(entry.finding)
        seen[key] += 1
        rows.append((*key, seen[key], entry.values, True))
    schema = StructType(
        [
            *(StructField(name, StringType(), False) for name in baseline.FINGERPRINT_FIELDS),
            StructField("_n", IntegerType(), False),
            StructField("_values", StringType(), True),
            StructField("_known", BooleanType(), False),
        ]
    )
    return spark.createDataFrame(rows, schema)


def fixed_of(findings: DataFrame, accepts: acceptance.Acceptance) -> list[Finding] | None:
    """The baseline's findings this run no longer reports (suppressed ones are still reported),
    from the accepted findings (cached by then): only the counts of the baseline's own
    fingerprints come back to the driver."""
    if accepts.baseline is None:
        return None
    key = list(baseline.FINGERPRINT_FIELDS)
    spark = findings.sparkSession
    known = F.broadcast(_baseline_frame(spark, accepts).select(*key).distinct())
    found = {
        tuple(row[k] for k in key): int(row["count"])
        for row in findings.groupBy(*key).count().join(known, key, "left_semi").collect()
    }
    return baseline.fixed([e.finding for e in accepts.baseline], found)


def _baseline_frame(spark: SparkSession, accepts: acceptance.Acceptance) -> DataFrame:
    return _findings_frame(spark, [e.finding for e in accepts.baseline or ()])


def _accept_batches(batches: Iterable[Any], active: list[Any]) -> Iterator[Any]:
    for batch in batches:
        rows = [Finding(**row) for row in batch.to_pylist()]
        yield _findings_batch(list(suppressions.external(rows, active)))


def _findings_frame(spark: SparkSession, findings: list[Finding]) -> DataFrame:
    import pyarrow as pa

    table = pa.Table.from_batches([_findings_batch(findings)])
    return spark.createDataFrame(table, FINDING_SCHEMA)


def write_findings(findings: DataFrame, base: str, result: AuditResult) -> str:
    """The executors write the findings as Parquet and JSON Lines under ``base`` (a path every
    executor can reach, or ``s3://``), as a new run; the driver adds the summary."""
    root, run = outputs.output_root(base), outputs.run_id()
    write_part = functools.partial(outputs.write_part, root=root, run=run)
    # The written parts come back as (path, rows) only: no finding travels to the driver here.
    findings.mapInArrow(write_part, outputs.PART_SCHEMA_DDL).collect()
    outputs.write_summary(root, run, result)
    return root


def _partitions(spark: SparkSession, files: int) -> int:
    """Partitions for the cached rows and the judging pass: about one per
    ``FILES_PER_PARTITION`` templates and at least two, at most the session's shuffle partitions
    (one per core on a local master). More only adds tasks: on a 2-core standalone cluster, the
    default 200 shuffle partitions made a 10,000-template run take 71 s instead of 43 s, and
    20 partitions a 100,000-template run 119 s instead of 109 s with 8."""
    configured = int(spark.conf.get("spark.sql.shuffle.partitions", "200") or 200)
    return max(1, min(configured, max(2, files // FILES_PER_PARTITION)))


def _progress(message: str) -> None:
    print(f"queue-audit: {message}", file=sys.stderr, flush=True)
