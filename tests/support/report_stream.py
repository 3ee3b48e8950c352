"""Stream the JSON report of COUNT synthetic findings from a Spark session with default settings.

    python tests/support/report_stream.py COUNT [PARTITIONS]

Run in a process of its own (``test_report_stream.py``) so that the session is the one
``queue-audit`` starts: ``session.create_session("local[2]")``, nothing set but what the command
sets, so the driver's JVM gets Spark's default heap (``spark.driver.memory``, 1 GiB) unless
``PYSPARK_SUBMIT_ARGS`` names another (``--driver-memory 512m pyspark-shell``).

The findings are made by Spark from ``spark.range``, shaped like real ones (about 400 bytes
each, template names in four scripts, so that byte and code point order are both exercised) and
in no particular order: finding ``x`` of ``COUNT`` is made from row ``(x * STRIDE) % COUNT``.
They go through what ``spark.job.SparkEngine.audit`` does with a fleet's findings (stored on disk,
measured, ``streaming.report_view``), then ``report.stream_json`` writes the report, which is checked here as it
streams, one piece at a time: each finding parses as JSON, its sort key is above the one before
it (report order, judged by Python's own string order), and the numbers ``x`` decoded from the
findings add up to those of 0..COUNT-1. One line of JSON on stdout says what was seen.

PARTITIONS replaces the report's partition count (``streaming.report_partitions``) with a fixed
one: 2 is what one global ``orderBy`` gave on ``local[2]``, the way that ran out of heap.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

STRIDE = 1_000_003  # a prime: x -> (x * STRIDE) % COUNT is a permutation unless it divides COUNT
FINDINGS_PER_TEMPLATE = 11
# Template name prefixes, by code point: ASCII, Latin-1, CJK, and one beyond the BMP (four
# bytes in UTF-8, a surrogate pair in UTF-16: its order is Python's only when compared as UTF-8).
PREFIXES = ("fleet-a", "fleet-\u00e9", "fleet-\u4e2d", "fleet-\U0001f600")
MESSAGE = (
    "visibility timeout 59 s of queue {stack}/{resource} is below 6 x the consumer function "
    "timeout (10 s) + batching window (0 s) = 60 s: messages in flight when a batch is retried "
    "become visible again and are processed twice"
)
FIX = "set VisibilityTimeout to at least 60 s, or shorten the function timeout"


def findings_frame(spark: Any, count: int) -> Any:
    from pyspark.sql import functions as F

    from constructs_lib.audit.engines.spark import schemas

    x = (F.col("id") * F.lit(STRIDE)) % F.lit(count)
    template_number = (x / FINDINGS_PER_TEMPLATE).cast("long")
    k = x % FINDINGS_PER_TEMPLATE
    prefix = F.element_at(
        F.array(*[F.lit(p) for p in PREFIXES]), (template_number % len(PREFIXES) + 1).cast("int")
    )
    stack = F.format_string("t%08d", template_number)
    resource = F.format_string("Queue%02d", k)
    columns = {
        "rule_id": F.format_string("QR%03d", k + 1),
        "severity": F.lit("warning"),
        "template": F.format_string(
            "%s/%03d/t%08d.template.json", prefix, template_number % 1000, template_number
        ),
        "stack": stack,
        "resource": resource,
        "queue": resource,
        "message": F.format_string(
            MESSAGE.replace("{stack}", "%s").replace("{resource}", "%s"), stack, resource
        ),
        "fix": F.lit(FIX),
        "suppression": F.lit(""),
        "justification": F.lit(""),
        "baseline": F.lit(""),
        "account": F.lit(""),
        "region": F.lit(""),
        "physical": F.lit(""),
        "queue_template": F.lit(""),
        "line": F.lit(0),
        "column": F.lit(0),
        "construct_path": F.lit(""),
    }
    return spark.range(count).select(
        *[columns[name].alias(name) for name in schemas.FINDING_FIELDS]
    )


def number_of(finding: dict[str, str]) -> int:
    """The ``x`` a finding was made from."""
    template_number = int(finding["stack"][1:])
    return template_number * FINDINGS_PER_TEMPLATE + int(finding["resource"][len("Queue") :])


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(count: int) -> dict[str, Any]:
    from pyspark import StorageLevel

    from constructs_lib.audit import report
    from constructs_lib.audit.engines.spark import session, streaming
    from constructs_lib.audit.model import AuditResult

    started = time.perf_counter()
    spark = session.create_session("local[2]")
    try:
        jvm = spark._jvm  # type: ignore[attr-defined]
        heap = int(jvm.java.lang.Runtime.getRuntime().maxMemory())
        jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        phases = {"session": time.perf_counter() - started}
        cpu = {"session": (time.process_time(), _cpu_seconds(jvm_pid))}
        findings = findings_frame(spark, count).persist(StorageLevel.DISK_ONLY)
        listed, size = streaming.measure(findings)
        phases["measure"] = time.perf_counter() - started - sum(phases.values())
        cpu["measure"] = (time.process_time(), _cpu_seconds(jvm_pid))
        view = streaming.report_view(findings, listed, size)
        phases["sort"] = time.perf_counter() - started - sum(phases.values())
        cpu["sort"] = (time.process_time(), _cpu_seconds(jvm_pid))
        summary = report.summary_of({}, 0, 0, {})
        result = AuditResult(view, [], 0, {}, summary)
        pieces = report.stream_json(result)
        head = next(pieces)
        seen = total = out_of_order = 0
        previous: tuple[str, ...] | None = None
        tail = []
        for piece in pieces:
            if piece.startswith("\n  ]"):
                tail.append(piece)
                break
            finding = json.loads(piece.removeprefix(","))
            key = tuple(finding[c] for c in ("template", "stack", "resource", "rule_id"))
            key += (finding["queue"], finding["message"])
            if previous is not None and not previous < key:
                out_of_order += 1
            previous = key
            seen += 1
            total += number_of(finding)
        tail += list(pieces)
        document_end = json.loads("{" + "".join(tail).removeprefix("\n  ],"))
        phases["stream"] = time.perf_counter() - started - sum(phases.values())
        cpu["stream"] = (time.process_time(), _cpu_seconds(jvm_pid))
        streaming.release(result)
    finally:
        spark.stop()
    return {
        "heap_max_bytes": heap,
        "head": head,
        "findings": seen,
        "listed": listed,
        "out_of_order": out_of_order,
        "sum_of_numbers": total,
        "summary_findings": document_end["summary"]["findings"],
        "partitions": streaming.report_partitions(size),
        "report_bytes_estimate": size,
        "seconds": round(time.perf_counter() - started, 1),
        "phases_s": {name: round(seconds, 1) for name, seconds in phases.items()},
        "cpu_s": {name: [round(p, 1), round(j, 1)] for name, (p, j) in cpu.items()},
    }


if __name__ == "__main__":
    if len(sys.argv) > 2:
        from constructs_lib.audit.engines.spark import streaming

        fixed = int(sys.argv[2])
        streaming.report_partitions = lambda _size: fixed
    print(json.dumps(main(int(sys.argv[1]))))
