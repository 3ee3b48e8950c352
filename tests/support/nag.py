"""cdk-nag's four packs over a test app: the report, and the violations under a construct path."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, ServerlessChecks

PACKS = {"AwsSolutions", "Serverless", "NIST.800.53.R5", "HIPAA.Security"}


def synth_with_packs(app: cdk.App, outdir: Path, *more_plugins: Any) -> dict[str, Any]:
    """Synthesize ``app`` (made with ``outdir``) under the four packs and ``more_plugins``; the
    validation report. Violations of a test's own resources (its functions, topics, buckets)
    fail the synth; the report is written either way."""
    cdk.Validations.of(app).add_plugins(
        AwsSolutionsChecks(app),
        ServerlessChecks(app),
        NIST80053R5Checks(app),
        HIPAASecurityChecks(app),
        *more_plugins,
    )
    with contextlib.suppress(Exception):
        app.synth()
    # A plugin that found nothing is left out of the report.
    report: dict[str, Any] = json.loads((outdir / "validation-report.json").read_text())
    return report


def violations_under(report: dict[str, Any], prefix: str) -> list[tuple[str, str, str]]:
    """(pack, rule, construct path) of each violation of a construct under ``prefix``."""
    return [
        (r["pluginName"], v["ruleName"], c["constructPath"])
        for r in report["pluginReports"]
        if r["pluginName"] in PACKS
        for v in r["violations"]
        for c in v["violatingConstructs"]
        if c["constructPath"].startswith(prefix)
    ]
