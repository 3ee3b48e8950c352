"""The Spark job: same findings as the single-process engine, counts that reconcile, Parquet."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.report import summarize
from tests.audit.conftest import JOIN_WAYS, EngineAudit, healthy, props, write
from tests.audit.parse.test_templates import YAML_PIPELINE
from tests.support.cases import CASES, write_case

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every rule case in its own file, plus YAML, a cross-stack pair and broken files."""
    folder = tmp_path_factory.mktemp("job-corpus")
    for case in CASES:
        write_case(folder / "cases", case)
    write(folder, "yaml-stack.yaml", YAML_PIPELINE)
    exporter = healthy("exported")
    props(exporter, "Dlq")["MessageRetentionPeriod"] = 345600  # QR003 lands on the importer
    exporter["Resources"]["Source"]["Properties"].pop("RedrivePolicy")
    exporter["Outputs"] = {
        "Arn": {"Value": {"Fn::GetAtt": ["Dlq", "Arn"]}, "Export": {"Name": "exported-dlq"}}
    }
    write(folder, "exporter.template.json", exporter)
    importer = healthy("exported")  # same source name: the DLQ's allow-list names it
    for logical_id in ("Dlq", "DlqDepth", "DlqAge"):
        importer["Resources"].pop(logical_id)
    props(importer, "Source")["RedrivePolicy"]["deadLetterTargetArn"] = {
        "Fn::ImportValue": "exported-dlq"
    }
    props(importer, "Policy")["Queues"] = [{"Ref": "Source"}]
    write(folder, "importer.template.json", importer)
    write(folder, "broken.json", b'{"Resources": not json')  # a broken template: QR901
    write(folder, "broken.yaml", b"Resources: [")
    return folder


@pytest.fixture(scope="module")
def spark_result(spark_joining: EngineAudit, corpus: Path) -> AuditResult:
    return spark_joining(AuditInputs(discovery.discover([str(corpus)])))


def by_file(findings: list[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        grouped[finding.template].append(finding)
    return grouped


def test_spark_matches_engine(spark_result: AuditResult, corpus: Path) -> None:
    local = engine.audit_paths([str(corpus)])
    assert spark_result.findings == local.findings
    assert spark_result.files == sorted(local.files, key=lambda f: f.file)
    assert spark_result.queues == local.queues


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_spark_rule_case(spark_result: AuditResult, corpus: Path, case: Any) -> None:
    path = str(corpus / "cases" / f"{case.id}.template.json")
    found = {(f.rule_id, f.resource) for f in by_file(spark_result.findings).get(path, [])}
    assert found == case.expected
    for name in case.companions(case.id) if case.companions else {}:
        companion = str(corpus / "cases" / f"{case.id}.{name}.template.json")
        assert by_file(spark_result.findings).get(companion, []) == []


def test_spark_reports_a_function_once_across_stacks(
    spark_result: AuditResult, corpus: Path
) -> None:
    # The function of qr017-across-stacks reads a queue in each of two stacks: the Spark job
    # joins the two mappings on the function and reports the function once, as the engine does.
    path = str(corpus / "cases" / "qr017-across-stacks.template.json")
    findings = [f for f in spark_result.findings if f.template == path]
    assert [(f.rule_id, f.resource) for f in findings] == [("QR017", "Fn")]
    assert "qr017-across-stacks.other/Esm 20" in findings[0].message


def test_spark_cross_stack(spark_result: AuditResult, corpus: Path) -> None:
    files = by_file(spark_result.findings)
    importer = {(f.rule_id, f.resource) for f in files[str(corpus / "importer.template.json")]}
    exporter = {(f.rule_id, f.resource) for f in files[str(corpus / "exporter.template.json")]}
    assert importer == {("QR003", "Source")}
    # the exporter's own source has no redrive policy any more: QR001
    assert exporter == {("QR001", "Source")}


def test_spark_counts_reconcile(spark_result: AuditResult, corpus: Path) -> None:
    summary = summarize(spark_result)
    unparseable = {f.template for f in spark_result.findings if f.rule_id == "QR901"}
    with_findings = {f.template for f in spark_result.findings} - unparseable
    all_files = {str(p) for p in corpus.rglob("*") if p.is_file()}
    companions = sum(len(c.companions(c.id)) for c in CASES if c.companions)
    assert summary["files_read"] == len(all_files) == len(CASES) + companions + 5
    assert unparseable == {str(corpus / "broken.json"), str(corpus / "broken.yaml")}
    assert summary["files_unparseable"] == 2
    assert summary["files_with_findings"] == len(with_findings)
    assert summary["files_clean"] == len(all_files - with_findings - unparseable)
    assert summary["files_read"] == (
        summary["files_clean"] + summary["files_with_findings"] + summary["files_unparseable"]
    )


def test_output_dataset_holds_every_finding_once_per_run(
    spark: Any, spark_audit: EngineAudit, corpus: Path, tmp_path: Path
) -> None:
    target = tmp_path / "history"
    files = discovery.discover([str(corpus / "cases")])
    result = spark_audit(AuditInputs(files), AuditOptions(output_dir=str(target)))
    rows = spark.read.parquet(str(target / "findings")).collect()
    as_findings = sorted(
        (Finding(**{k: r[k] for k in Finding.__dataclass_fields__}) for r in rows),
        key=Finding.sort_key,
    )
    assert as_findings == result.findings and len(rows) > 0
    assert len({r["run"] for r in rows}) == 1
    (run_dir,) = (target / "findings-jsonl").iterdir()
    lines = [
        json.loads(line)
        for part in sorted(run_dir.glob("*.jsonl"))
        for line in part.read_text().splitlines()
    ]
    assert sorted(lines, key=lambda d: Finding(**d).sort_key()) == [
        f.as_dict() for f in result.findings
    ]
    summary = json.loads((target / "summary" / f"{run_dir.name}.json").read_text())["summary"]
    assert summary["findings"] == len(result.findings)


def test_the_join_runs_on_the_driver_up_to_its_limit_and_on_the_executors_beyond(
    spark: Any, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from constructs_lib.audit.engines.spark import job
    from constructs_lib.audit.resolve import crossing

    inputs = AuditInputs(discovery.discover([str(corpus)]))
    quiet = AuditOptions(quiet=True)
    # the text the join stage reads, measured as the engine measures it
    wide, _files, _queues, size = job._parse_fleet(spark, inputs, quiet, 2)
    wide.unpersist()  # the suite's session is shared: leave nothing cached
    assert size > 0
    planned: list[object] = []  # a spy: the driver's plan, called through
    real_plan = crossing.plan
    monkeypatch.setattr(crossing, "plan", lambda rows: planned.append(rows) or real_plan(rows))
    at_limit = job.SparkEngine(spark, driver_join_bytes=size).audit(inputs, quiet)
    assert len(planned) == 1
    beyond = job.SparkEngine(spark, driver_join_bytes=size - 1).audit(inputs, quiet)
    assert len(planned) == 1
    assert sorted(at_limit.findings, key=Finding.sort_key) == sorted(
        beyond.findings, key=Finding.sort_key
    )
    assert at_limit.cross_template == beyond.cross_template


def test_cached_findings_are_not_left_in_a_clusters_200_shuffle_partitions(
    spark: Any, corpus: Path
) -> None:
    """A standalone cluster keeps Spark's default of 200 shuffle partitions. The findings are
    cached after a join, and adaptive execution merges a cached plan's small partitions only with
    ``spark.sql.optimizer.canChangeCachedPlanOutputPartitioning`` on (an internal setting; its
    text in Spark's SQLConf: "queries may need an extra shuffle to read the cached data"): without
    it each pass over this corpus's findings ran over 204 partitions. The engine sets it for its run only.
    The join stage runs on the executors, and no join is broadcast, as in a fleet too large for
    either."""
    from constructs_lib.audit.engines.spark import job, streaming

    setting = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"
    inputs = AuditInputs(discovery.discover([str(corpus)]))
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        result = job.SparkEngine(spark, JOIN_WAYS["executors"]).audit(
            inputs, AuditOptions(quiet=True, gather=False)
        )
        assert isinstance(result.findings, streaming.FindingsView)
        (cached,) = result.findings.sources
        assert cached.rdd.getNumPartitions() < 20
        # The same findings and counts as the local engine: with this setting on, Spark 3.5.0
        # lost rows of joins over cached plans (SPARK-45592, fixed before 4.0), and the counts
        # are joins over the cached findings.
        local = engine.audit_paths([str(corpus)])
        assert list(result.findings) == local.findings
        assert summarize(result) == summarize(local)
        streaming.release(result)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert spark.conf.get(setting, None) is None  # restored: the session is the caller's
