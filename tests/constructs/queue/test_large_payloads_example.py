"""The large payloads example of docs/large-payloads.md, judged by its peers: CloudFormation's
built-in validation when run as a user runs it, cfn-lint, and cdk-nag's four packs, which find
nothing in the library's resources (the example's own functions are not the library's)."""

from __future__ import annotations

import contextlib
import json
import re
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, ServerlessChecks

from tests.conftest import REPO_ROOT, SynthResult, cfn_lint
from tests.support.nag import PACKS

EXAMPLE = REPO_ROOT / "docs" / "examples" / "large_payloads_app.py"
# What ResilientQueue builds in the example: the two queues' constructs, bucket included.
LIBRARY = re.compile(r"^Documents/(Documents|Ledger)/")
# The bucket's acknowledgments, and the prefix wildcard's on each principal it granted.
BUCKET_RULES = {
    "AwsSolutions-S1",
    "NIST.800.53.R5-S3BucketLoggingEnabled",
    "HIPAA.Security-S3BucketLoggingEnabled",
    "NIST.800.53.R5-S3BucketVersioningEnabled",
    "HIPAA.Security-S3BucketVersioningEnabled",
    "NIST.800.53.R5-S3BucketReplicationEnabled",
    "HIPAA.Security-S3BucketReplicationEnabled",
}
PREFIX_WILDCARD = re.compile(
    r"^AwsSolutions-IAM5\[Resource::<\w+PayloadBucket\w+\.Arn>/[\w.]+/\*\]$"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    outdir = tmp_path_factory.mktemp("cdk.out")

    class CheckedApp(cdk.App):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(outdir=str(outdir), **kwargs)
            cdk.Validations.of(self).add_plugins(
                AwsSolutionsChecks(self),
                ServerlessChecks(self),
                NIST80053R5Checks(self),
                HIPAASecurityChecks(self),
            )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cdk, "App", CheckedApp)
        # The example's functions have findings of their own, which fail the synth after the
        # report is written; the test reads the report.
        with contextlib.suppress(Exception):
            runpy.run_path(str(EXAMPLE), run_name="__main__")
    document: dict[str, Any] = json.loads((outdir / "validation-report.json").read_text())
    return document


def test_the_example_synthesizes_without_validation_warnings(
    docs_example: Callable[[str], SynthResult],
) -> None:
    synthesized = docs_example("large_payloads_app")

    assert synthesized.returncode == 0, synthesized.output
    assert not re.search(r"\[Warning|\bWARN(ING)?\b", synthesized.output), synthesized.output


def test_cfn_lint_finds_nothing_in_the_example(docs_example: Callable[[str], SynthResult]) -> None:
    templates = sorted(docs_example("large_payloads_app").outdir.glob("*.template.json"))

    completed = cfn_lint(templates)

    assert templates and completed.returncode == 0, completed.stdout + completed.stderr


def test_the_four_packs_find_nothing_in_the_librarys_resources(report: dict[str, Any]) -> None:
    assert {r["pluginName"] for r in report["pluginReports"]} == PACKS
    violations = [
        (r["pluginName"], v["ruleName"], c["constructPath"])
        for r in report["pluginReports"]
        for v in r["violations"]
        for c in v["violatingConstructs"]
    ]
    assert [v for v in violations if LIBRARY.search(v[2])] == []
    # Nor any finding about the payload grants the library wrote into the example's roles.
    assert [v for v in violations if "PayloadBucket" in v[1]] == []


def test_the_acknowledgments_are_the_known_ones_with_reasons(report: dict[str, Any]) -> None:
    suppressed = [
        (v["ruleName"], c["constructPath"], v.get("reason", ""))
        for r in report["pluginReports"]
        for v in r.get("suppressedViolations", [])
        for c in v["violatingConstructs"]
    ]
    on_buckets = {rule for rule, path, _ in suppressed if "/PayloadBucket/" in path}
    wildcards = {(rule, path) for rule, path, _ in suppressed if PREFIX_WILDCARD.match(rule)}

    assert on_buckets == BUCKET_RULES
    # The consumers, the producer and the operator: one acknowledgment each, on its role.
    assert {path.split("/")[1] for _, path in wildcards} == {"Index", "Upload", "Post", "Operator"}
    assert all(len(reason) > 40 for rule, _, reason in suppressed if rule in BUCKET_RULES)


def test_the_example_is_the_one_the_page_shows() -> None:
    page = (REPO_ROOT / "docs" / "large-payloads.md").read_text()

    assert f"<!-- example: docs/examples/{EXAMPLE.name} -->" in page
    assert Path(EXAMPLE).read_text() in page
