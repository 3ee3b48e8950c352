#!/usr/bin/env python3
"""Example app: a standard and a FIFO SQS -> Lambda pipeline, judged by the cdk-nag packs."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, ServerlessChecks

from example.stack import PipelinesStack


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    PipelinesStack(app, "Pipelines")
    cdk.Validations.of(app).add_plugins(
        AwsSolutionsChecks(app),
        ServerlessChecks(app),
        NIST80053R5Checks(app),
        HIPAASecurityChecks(app),
    )
    return app


if __name__ == "__main__":
    build_app().synth()
