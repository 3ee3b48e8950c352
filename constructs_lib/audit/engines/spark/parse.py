"""The parse stage on Spark: the driver's list of inputs -> the parsed wide rows.

Each partition's files are read and parsed in Python on the executors (``mapInArrow``), in a
parsing worker process per task (``parse/isolation.py``), into the rows of
``schemas.WIDE_SCHEMA``; each template is judged there as far as it alone can be
(``resolve/within_template.py``), so that only what crosses templates is left to the join stage
(``engines/spark/evaluate.py``).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from constructs_lib.audit import model
from constructs_lib.audit.engines.judging import template_findings
from constructs_lib.audit.engines.spark.schemas import (
    BATCH_ROWS,
    PATH_SCHEMA,
    WIDE_INTS,
    WIDE_SCHEMA,
    WIDE_TEXT,
    RowKind,
    arrow_batch,
    arrow_text,
    ledger_text,
)
from constructs_lib.audit.metrics.observations import Metrics
from constructs_lib.audit.parse import isolation
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.resolve import within_template
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

# Files per parse task: large enough that a task's fixed cost is small beside its work, small
# enough that a lost executor costs little to redo. The parsing process is a new interpreter in a
# Spark Python worker (which has threads, so no fork), started once per task.
FILES_PER_TASK = 5000


def _rows_of(
    parsed: model.ParsedTemplate, metrics: Metrics | None
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    yield RowKind.FILE, tuple(parsed.file)
    within = within_template.judge(parsed, metrics)
    for tag, rows in (
        (RowKind.RESOURCE, parsed.resources),
        (RowKind.KEY, parsed.keys),
        (RowKind.INNER, within.inner),
        (RowKind.EDGE, within.crossing),
        (RowKind.EXPORT, parsed.exports),
        (RowKind.NESTED, parsed.nested),
    ):
        for row in rows:
            yield tag, tuple(row)
    for touched in within.touched:
        yield RowKind.TOUCH, touched
    for exposed in within.exposure:
        yield RowKind.EXPOSURE, exposed
    for queue in within.pending:
        yield RowKind.PENDING, (queue,)
    for queue, finding in within.judged:
        yield RowKind.JUDGED, (queue, *finding.as_dict().values())
    for ledger in within.ledgers:
        yield RowKind.LEDGER, (ledger.uid, ledger_text(ledger))
    for finding in template_findings(parsed) + within.unresolved:
        yield RowKind.FINDING, tuple(finding.as_dict().values())


def _parse_batches(
    batches: Iterable[Any],
    limits: ReadLimits,
    overrides: Overrides,
    cwd: str,
    metrics: Metrics | None = None,
) -> Iterator[Any]:
    """One partition of paths -> wide rows. The parsing worker process (``parse/isolation.py``) makes
    a file that crashes or hangs the parser cost that file (a QR901), never the task."""
    files = [
        (os.fsdecode(path), stack)
        for batch in batches
        for path, stack in zip(
            batch.column("path").to_pylist(), batch.column("stack").to_pylist(), strict=True
        )
    ]
    yield from wide_batches(isolation.parse_files(files, limits, 1, overrides, cwd), metrics)


def wide_batches(
    parsed_templates: Iterable[model.ParsedTemplate], metrics: Metrics | None = None
) -> Iterator[Any]:
    """Parsed templates -> Arrow batches of ``WIDE_SCHEMA`` rows, each template judged on its own
    as far as it can be (``resolve/within_template.py``; with ``metrics``, the observed
    series)."""
    width, numbers = len(WIDE_TEXT), len(WIDE_INTS)
    columns: dict[str, list[Any]] = {name: [] for name in WIDE_SCHEMA.names}
    for parsed in parsed_templates:
        src = parsed.file.file
        for tag, row in _rows_of(parsed, metrics):
            text = [v for v in row if not isinstance(v, int)]
            ints = [v for v in row if isinstance(v, int)]
            columns["tag"].append(tag)
            for i in range(width):
                columns[WIDE_TEXT[i]].append(text[i] if i < len(text) else "")
            for i in range(numbers):
                columns[WIDE_INTS[i]].append(ints[i] if i < len(ints) else 0)
            columns["src"].append(src)
        if len(columns["tag"]) >= BATCH_ROWS:
            yield arrow_batch(columns, WIDE_SCHEMA)
            columns = {name: [] for name in WIDE_SCHEMA.names}
    if columns["tag"]:
        yield arrow_batch(columns, WIDE_SCHEMA)


def _paths_frame(spark: SparkSession, files: list[tuple[str, str]]) -> DataFrame:
    import pyarrow as pa

    table = pa.table(
        {
            "path": pa.array([os.fsencode(file) for file, _ in files], pa.binary()),
            "stack": arrow_text([stack for _, stack in files]),
        }
    )
    tasks = max(1, min(len(files), math.ceil(len(files) / FILES_PER_TASK), 10_000))
    tasks = max(tasks, min(len(files), 2))
    return spark.createDataFrame(table, PATH_SCHEMA).repartition(tasks)


def parse_paths(
    paths: DataFrame,
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    metrics: Metrics | None = None,
) -> DataFrame:
    """Paths (``PATH_SCHEMA``) -> the parsed wide rows (``WIDE_SCHEMA``), each partition's files
    parsed by one task. Relative paths are read from this process's working directory, wherever
    the executors run."""
    parse_partition = functools.partial(
        _parse_batches,
        limits=limits,
        overrides=dict(overrides or {}),
        cwd=os.getcwd(),
        metrics=metrics,
    )
    return paths.mapInArrow(parse_partition, WIDE_SCHEMA)


def parse(
    spark: SparkSession,
    files: list[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    metrics: Metrics | None = None,
) -> DataFrame:
    """Paths -> the parsed wide rows (not yet computed)."""
    return _paths_frame(spark, files).transform(parse_paths, limits, overrides, metrics)
