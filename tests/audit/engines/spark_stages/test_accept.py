"""Acceptance's steps on Spark (``engines/spark/accept.py``), each on a few findings.

Every expected frame is written from what the step means: a rule's level, a suppressions
file's entry, an expired entry's QR902, and each finding's state against the baseline.
"""

from __future__ import annotations

from typing import Any

from constructs_lib.audit import model
from constructs_lib.audit.accept.suppressions import FileSuppression
from constructs_lib.audit.engines.spark import accept
from constructs_lib.audit.engines.spark.schemas import FINDING_SCHEMA
from constructs_lib.audit.model import Finding
from tests.support.frames import assert_same_rows, finding, frame


def test_a_level_regrades_its_rule_only(spark: Any) -> None:
    findings = frame(spark, FINDING_SCHEMA, [finding("QR001", "Orders"), finding("QR002", "Jobs")])
    expected = frame(
        spark,
        FINDING_SCHEMA,
        [finding("QR001", "Orders", severity="error"), finding("QR002", "Jobs")],
    )
    assert_same_rows(findings.transform(accept.with_levels, {"QR001": "error"}), expected)


def test_an_entry_of_the_suppressions_file_accepts_the_findings_it_matches(spark: Any) -> None:
    findings = frame(spark, FINDING_SCHEMA, [finding("QR001", "Orders"), finding("QR002", "Jobs")])
    entry = FileSuppression(rule="QR001", reason="known", source="s.yml entry 1")
    accepted = finding(
        "QR001", "Orders", suppression=model.EXTERNAL, justification="known (s.yml entry 1)"
    )
    expected = frame(spark, FINDING_SCHEMA, [accepted, finding("QR002", "Jobs")])
    assert_same_rows(findings.transform(accept.suppressed, [entry]), expected)


def test_expired_entries_add_their_findings(spark: Any) -> None:
    findings = frame(spark, FINDING_SCHEMA, [finding("QR001", "Orders")])
    expired = Finding("QR902", "warning", "s.yml", "", "", "", "entry 1 expired", "renew it")
    expected = frame(
        spark,
        FINDING_SCHEMA,
        [
            finding("QR001", "Orders"),
            finding(
                "QR902",
                "",
                template="s.yml",
                stack="",
                message="entry 1 expired",
                fix="renew it",
            ),
        ],
    )
    assert_same_rows(findings.transform(accept.with_expired, [expired]), expected)
    assert_same_rows(findings.transform(accept.with_expired, []), findings)


def test_each_finding_is_compared_with_the_baseline_entry_of_its_rank(spark: Any) -> None:
    from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

    known_schema = StructType(
        [
            *(
                StructField(name, StringType())
                for name in ("rule_id", "stack", "resource", "queue")
            ),
            StructField("_n", IntegerType()),
            StructField("_values", StringType()),
            StructField("_known", BooleanType()),
        ]
    )
    known = frame(
        spark,
        known_schema,
        [
            ("QR001", "a", "Orders", "Orders", 1, "5 3", True),
            ("QR003", "a", "Mail", "", 1, "1", True),
        ],
    )
    first = {"queue": "Orders", "message": "depth 5 over 3"}
    second = {"queue": "Orders", "message": "depth 7 over 3"}
    mail = {"message": "limit 2"}
    accepted = {"suppression": model.EXTERNAL, "justification": "known"}
    findings = frame(
        spark,
        FINDING_SCHEMA,
        [
            finding("QR001", "Orders", **first),
            finding("QR001", "Orders", **second),
            finding("QR003", "Mail", **mail),
            finding("QR002", "Jobs", **accepted),
        ],
    )
    expected = frame(
        spark,
        FINDING_SCHEMA,
        [
            finding("QR001", "Orders", **first, baseline=model.BASELINE_UNCHANGED),
            finding("QR001", "Orders", **second, baseline=model.BASELINE_NEW),
            finding("QR003", "Mail", **mail, baseline=model.BASELINE_UPDATED),
            finding("QR002", "Jobs", **accepted),
        ],
    )
    assert_same_rows(findings.transform(accept.against_baseline, known, 2), expected)
