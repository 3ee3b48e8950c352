"""What SAM expansion costs per template: SAM templates parsed vs the same templates pre-expanded.

    python bench/sam_bench.py --count 200 --runs 3

Each SAM template is a queue pair and a Serverless function (Globals, a local CodeUri, an SQS
event, a policy template; every fourth with AutoPublishAlias). The same templates, expanded once
beforehand, are parsed as plain CloudFormation; the difference of the medians is the translator's
cost. The one-time import of aws-sam-translator (per Python process, so per Spark worker) is
reported apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from constructs_lib.audit.parse import pipeline as templates
from constructs_lib.audit.parse.dialects import sam
from constructs_lib.audit.parse.documents import load_document

SAM_TEMPLATE = """\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.12
    Timeout: {timeout}
Resources:
  Source:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: orders-{index}
      VisibilityTimeout: 60
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt Dlq.Arn
        maxReceiveCount: 5
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      MessageRetentionPeriod: 1209600
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/worker/
      Handler: app.handler
{alias}      Policies:
        - SQSPollerPolicy:
            QueueName: !GetAtt Source.QueueName
      Events:
        Orders:
          Type: SQS
          Properties:
            Queue: !GetAtt Source.Arn
            BatchSize: 10
"""


def sam_templates(count: int) -> list[tuple[str, bytes]]:
    return [
        (
            f"app-{i}.yaml",
            SAM_TEMPLATE.format(
                index=i,
                timeout=5 + i % 20,
                alias="      AutoPublishAlias: live\n" if i % 4 == 0 else "",
            ).encode(),
        )
        for i in range(count)
    ]


def parse_all(files: list[tuple[str, bytes]]) -> float:
    started = time.perf_counter()
    for name, data in files:
        parsed = templates.parse_template(name, name, data)
        assert parsed.file.status == "ok" and not parsed.notes, parsed
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    started = time.perf_counter()
    import samtranslator.translator.translator  # noqa: F401

    import_seconds = time.perf_counter() - started
    sam_files = sam_templates(args.count)
    expanded_files = []
    for name, data in sam_files:
        document = load_document(name, data)
        expansion = sam.expand(document, sam.default_parameter_values(document))
        expanded_files.append(
            (name.replace(".yaml", ".json"), json.dumps(expansion.document).encode())
        )

    sam_runs = [parse_all(sam_files) for _ in range(args.runs)]
    plain_runs = [parse_all(expanded_files) for _ in range(args.runs)]
    sam_median, plain_median = statistics.median(sam_runs), statistics.median(plain_runs)
    per_template_ms = (sam_median - plain_median) / args.count * 1000
    print(f"aws-sam-translator import: {import_seconds * 1000:.0f} ms once per process")
    print(
        f"{args.count} SAM templates: {sam_median:.2f} s (median of {args.runs}); "
        f"the same pre-expanded: {plain_median:.2f} s; "
        f"translation {per_template_ms:.1f} ms per template"
    )


if __name__ == "__main__":
    main()
