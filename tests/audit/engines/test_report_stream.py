"""The Spark engine's report path: a fleet's findings streamed in report order, in memory
bounded by a partition of the report's order, not by the number of findings."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.model import Finding

pytestmark = pytest.mark.spark

PROBE = Path(__file__).resolve().parents[2] / "support" / "report_stream.py"
REPO_ROOT = Path(__file__).resolve().parents[3]
# Half a million findings of about 490 bytes on a 512 MiB driver heap: the pressure of a million
# on Spark's default 1 GiB, since Spark keeps 300 MiB of any heap to itself. Sorted by one global
# orderBy into local[2]'s two partitions, a million findings killed the default driver, and half
# a million on 512 MiB did too (docs/performance.md, "A fleet with many findings on Spark").
MANY = 500_000
DRIVER_HEAP = "512m"
HEAP_BYTES = 512 * 2**20


def test_half_a_million_findings_stream_in_report_order_on_a_small_driver_heap() -> None:
    # GIVEN a session as queue-audit starts it, in a process of its own: no setting but the
    # command's and the driver's heap, which a user sets this way too
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.pop("JAVA_TOOL_OPTIONS", None)
    env["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {DRIVER_HEAP} pyspark-shell"
    env["PYTHONPATH"] = str(REPO_ROOT)
    # WHEN the JSON report of the findings made in no particular order is streamed
    completed = subprocess.run(
        [sys.executable, str(PROBE), str(MANY)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=1800,
        check=False,
    )
    # THEN it completes, with every finding once, in report order
    assert completed.returncode == 0, completed.stderr[-4000:]
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    assert seen["heap_max_bytes"] <= HEAP_BYTES, "the probe must run on a 512 MiB driver heap"
    assert seen["head"] == '{\n  "findings": ['
    assert (seen["findings"], seen["listed"]) == (MANY, MANY)
    assert seen["out_of_order"] == 0
    assert seen["sum_of_numbers"] == MANY * (MANY - 1) // 2
    assert seen["partitions"] > 1


@pytest.mark.parametrize(
    ("size", "partitions"),
    [
        pytest.param(0, 1, id="no-findings-one-partition"),
        pytest.param(1, 1, id="one-byte"),
        pytest.param(16 * 2**20 - 1, 1, id="just-below-the-bound"),
        pytest.param(16 * 2**20, 1, id="at-the-bound"),
        pytest.param(16 * 2**20 + 1, 2, id="just-above-the-bound"),
        pytest.param(600 * 10**6, 36, id="a-million-findings-of-600-bytes"),
    ],
)
def test_report_partitions_hold_at_most_16_mib_of_findings(size: int, partitions: int) -> None:
    from constructs_lib.audit.engines.spark import streaming

    assert streaming.REPORT_PARTITION_BYTES == 16 * 2**20
    assert streaming.report_partitions(size) == partitions


def _findings(count: int, seed: int) -> list[Finding]:
    """Findings with names in several scripts (code point order is Python's), some sharing
    every sort column but the message."""
    rng = random.Random(seed)
    words = ["a", "B", "z", "é", "中", "\U0001f600", "a b", "-", "_", "Z9"]
    findings = []
    for i in range(count):
        template = "/".join(rng.choice(words) for _ in range(3)) + ".json"
        stack, resource = rng.choice(words), rng.choice(words)
        rule = f"QR{rng.randrange(1, 30):03d}"
        for message in {f"m{rng.randrange(3)}", f"m{rng.randrange(3)}"}:
            findings.append(
                Finding(rule, "warning", template, stack, resource, resource, message, f"fix {i}")
            )
    return findings


def _frame(spark: Any, findings: list[Finding]) -> Any:
    from constructs_lib.audit.engines.spark import schemas

    rows = [tuple(f.as_dict().values()) for f in findings]
    return spark.createDataFrame(rows, schemas.FINDING_SCHEMA)


def test_a_view_over_many_partitions_reads_in_report_order_every_pass(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql import functions as F

    from constructs_lib.audit.engines.spark import streaming

    # GIVEN findings in random order and partitions of at most 4 KiB: dozens of ranges
    findings = _findings(400, seed=3)
    random.Random(5).shuffle(findings)
    monkeypatch.setattr(streaming, "REPORT_PARTITION_BYTES", 4096)
    frame = _frame(spark, findings)
    count, size = streaming.measure(frame)
    # WHEN the view is made
    view = streaming.report_view(frame, count, size)
    try:
        # THEN the partitions are the ones asked for, and each pass reads Python's sorted order
        stored = view.frame.select(F.spark_partition_id().alias("p")).distinct().count()
        expected = sorted(findings, key=Finding.sort_key)
        assert count == len(findings) and len(view) == len(findings)
        assert streaming.report_partitions(size) >= 20
        assert stored == streaming.report_partitions(size)
        assert [f.sort_key() for f in view] == [f.sort_key() for f in expected]
        assert sorted(view, key=Finding.sort_key) == expected  # every field, every finding
        assert [f.sort_key() for f in view] == [f.sort_key() for f in expected]  # again
    finally:
        for stored_frame in (view.frame, *view.sources):
            stored_frame.unpersist()


def test_measure_counts_findings_and_their_utf8_bytes(spark: Any) -> None:
    from constructs_lib.audit.engines.spark import streaming

    findings = [
        Finding("QR001", "error", "t.json", "s", "Q", "Q", "m", "f"),
        Finding("QR002", "error", "é.json", "s", "Q", "Q", "中", "f", "external", "why", "new"),
    ]
    count, size = streaming.measure(_frame(spark, findings))
    text = sum(
        len(v.encode()) for f in findings for v in f.as_dict().values() if isinstance(v, str)
    )
    assert (count, size) == (2, text + 2 * streaming.FINDING_OVERHEAD_BYTES)


def test_measure_of_no_findings_is_zero(spark: Any) -> None:
    from constructs_lib.audit.engines.spark import streaming

    assert streaming.measure(_frame(spark, [])) == (0, 0)
