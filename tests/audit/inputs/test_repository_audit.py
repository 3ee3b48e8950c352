"""``queue-audit .`` on a repository: its docs, workflows and compose files are no templates, a
SAM template whose ``AWS::Include`` file is missing is still judged, and what the reports say
(the fleet's queue count, the headline, the exit status and its reason) follows what decides.

Each expectation is written by hand from the files written here and the rule catalog.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit import cli
from constructs_lib.audit.engines import local as local_engine
from tests.audit.accept.test_suppressions import audit, run
from tests.audit.conftest import healthy, props, write

# A repository's own files, none of them a template (no AWSTemplateFormatVersion, Resources
# or Transform at the top).
NOT_TEMPLATES = {
    "mkdocs.yml": "site_name: Orders\nnav:\n  - Home: index.md\n",
    ".github/workflows/ci.yml": (
        "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n"
    ),
    "docker-compose.yml": "services:\n  db:\n    image: postgres\n",
    "docs/openapi.yml": "openapi: 3.0.1\ninfo: {title: orders, version: '1'}\npaths: {}\n",
    "renovate.json": '{"extends": ["config:recommended"]}\n',
    # a Helm chart's template: Go templating, which is not YAML at all
    "chart/templates/deployment.yaml": "{{- if .Values.enabled }}\nkind: Deployment\n{{- end }}\n",
}

# A SAM application whose API body is included from a file the copy left behind: the API's
# Cors makes the translator edit that body, which it cannot when the include is unread.
SAM_WITH_MISSING_INCLUDE = """\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: prod
      Cors: "'*'"
      DefinitionBody:
        Fn::Transform:
          Name: AWS::Include
          Parameters:
            Location: ./api.yaml
  Orders:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
  FailedCalls:
    Type: AWS::SQS::Queue
  Handler:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: app.handler
      CodeUri: src/
      Timeout: 20
      DeadLetterQueue:
        Type: SQS
        TargetArn: !GetAtt FailedCalls.Arn
      Events:
        Get:
          Type: Api
          Properties:
            RestApiId: !Ref Api
            Path: /orders
            Method: get
        Orders:
          Type: SQS
          Properties:
            Queue: !GetAtt Orders.Arn
"""


def repository(root: Path) -> Path:
    """A repository: its own files, and a templates folder with one clean CloudFormation
    template (YAML), one JSON template with a queue without DLQ, and the SAM application."""
    for name, text in NOT_TEMPLATES.items():
        write(root, name, text)
    write(root, "package.json", '{"name": "orders", "version": "1.0.0"}\n')  # never read
    clean = healthy("clean")
    write(root, "templates/clean.yaml", json.dumps(clean))  # JSON is YAML
    faulty = healthy("faulty")
    del props(faulty, "Source")["RedrivePolicy"]  # QR001
    write(root, "templates/faulty.json", faulty)
    write(root, "templates/sam/template.yaml", SAM_WITH_MISSING_INCLUDE)
    return root


def test_a_repository_gives_findings_only_for_its_templates(
    engine_name: str, tmp_path: Path
) -> None:
    root = repository(tmp_path / "repo")
    code, document = audit(engine_name, [root], "--profile", "all", out=tmp_path)
    summary = document["summary"]
    templates = {f["template"] for f in document["findings"]}
    assert templates == {
        str(root / "templates/faulty.json"),
        str(root / "templates/sam/template.yaml"),
    }
    assert not [f for f in document["findings"] if f["rule_id"] == "QR901"]
    assert summary["files_not_templates"] == len(NOT_TEMPLATES)
    assert summary["not_templates"] == sorted(str(root / name) for name in NOT_TEMPLATES)
    assert (summary["files_read"], summary["files_clean"], summary["files_unparseable"]) == (
        len(NOT_TEMPLATES) + 3,
        1,
        0,
    )
    assert summary["reconciled"] is True
    assert code == 1  # faulty's QR001 and the SAM application's own errors


def test_the_missing_include_costs_only_the_property_that_held_it(
    engine_name: str, tmp_path: Path
) -> None:
    path = write(tmp_path, "templates/template.yaml", SAM_WITH_MISSING_INCLUDE)
    _, document = audit(engine_name, [path], "--profile", "all", out=tmp_path)
    found = {(f["rule_id"], f["resource"]) for f in document["findings"]}
    # the function is expanded: its consumer of Orders (6 x 20 s > 60 s) and its DLQ are judged
    assert ("QR007", "Handler.Orders") in found
    assert ("QR010", "FailedCalls") in found
    # FailedCalls is the function's DLQ, not a queue without one
    assert ("QR001", "FailedCalls") not in found
    [note] = [f for f in document["findings"] if f["rule_id"] == "QR900"]
    assert note["resource"] == "Api"
    assert "AWS::Include of ./api.yaml not read" in note["message"]
    assert "Api.Properties.DefinitionBody" in note["message"]
    assert "rejected" not in json.dumps(document["findings"])


def test_a_missing_include_merged_into_properties_keeps_the_other_properties(
    tmp_path: Path,
) -> None:
    # GIVEN a function whose Properties merge a missing file next to a Timeout of 20 s
    template = SAM_WITH_MISSING_INCLUDE.replace(
        "      Timeout: 20\n",
        "      Timeout: 20\n      Fn::Transform:\n        Name: AWS::Include\n"
        "        Parameters: {Location: ./handler-settings.yaml}\n",
    ).replace("      Cors: \"'*'\"\n", "")
    path = write(tmp_path, "template.yaml", template)
    result = local_engine.audit_paths([str(path)])
    found = {(f.rule_id, f.resource) for f in result.findings}
    # THEN the function is judged with the Timeout written beside the include
    assert ("QR007", "Handler.Orders") in found
    notes = [f.message for f in result.findings if f.rule_id == "QR900"]
    assert any("./handler-settings.yaml not read" in n and "Handler.Properties" in n for n in notes)
    assert not any("rejected" in n for n in notes)


@pytest.mark.parametrize(
    ("name", "content", "status"),
    [
        # broken, and shows a template's key: a template someone broke
        ("orders.yaml", b"Resources:\n  Q: [\n", "QR901"),
        ("orders.json", b'{"AWSTemplateFormatVersion": "2010-09-09", "Resources": {', "QR901"),
        # named as a template: one, whatever it holds
        ("orders.template.yaml", b"site_name: x\n", "QR901"),
        ("orders.template.json", b"{", "QR901"),
        # broken, and nothing in it says template: a Helm chart, JSON with comments
        ("deployment.yaml", b"{{- if .Values.enabled }}\nkind: Deployment\n", "not_template"),
        ("settings.json", b'{\n  // editor settings\n  "tabSize": 2\n}\n', "not_template"),
        # a template's key nested deeper is not a template's
        ("values.yaml", b"service:\n  Resources: {}\n", "not_template"),
    ],
)
def test_what_claims_to_be_a_template(
    tmp_path: Path, name: str, content: bytes, status: str
) -> None:
    path = write(tmp_path, name, content)
    result = local_engine.audit_paths([str(path)])
    [row] = result.files
    if status == "QR901":
        assert [f.rule_id for f in result.findings] == ["QR901"]
    else:
        assert (row.status, result.findings) == (status, [])


def test_yaml_errors_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "orders.yaml", b"Resources:\n  Q:\n    Type: AWS::SQS::Queue\n  - x\n")
    result = local_engine.audit_paths([str(path)])
    [finding] = result.findings
    assert finding.rule_id == "QR901"
    assert "<unicode string>" not in finding.message
    assert f"{path}, line 4" in finding.message


def cross_stack(folder: Path) -> list[Path]:
    """Stack a: a queue without DLQ exported to stack b, whose function (20 s) consumes it
    with a 30 s visibility timeout (QR007 in b); and a second queue of a."""
    exporter = {
        "Resources": {
            "Orders": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 30}},
            "Other": {"Type": "AWS::SQS::Queue"},
        },
        "Outputs": {
            "OrdersArn": {
                "Value": {"Fn::GetAtt": ["Orders", "Arn"]},
                "Export": {"Name": "orders-arn"},
            }
        },
    }
    consumer = {
        "Resources": {
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Runtime": "python3.12",
                    "Handler": "a.b",
                    "Role": "arn:aws:iam::111122223333:role/worker",
                    "Code": {"ZipFile": "x"},
                    "Timeout": 20,
                },
            },
            "Map": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "FunctionName": {"Ref": "Fn"},
                    "EventSourceArn": {"Fn::ImportValue": "orders-arn"},
                },
            },
        }
    }
    return [write(folder, "a.json", exporter), write(folder, "b.json", consumer)]


def test_a_queue_consumed_from_another_stack_is_counted_once(
    engine_name: str, tmp_path: Path
) -> None:
    paths = cross_stack(tmp_path / "fleet")
    _, text = run(engine_name, paths, [], "table", tmp_path / f"{engine_name}.txt")
    assert "FLEET: 2 of 2 queues (100%) in 2 stacks have findings to act on." in text
    _, document = audit(engine_name, paths, out=tmp_path)
    [qr007] = [f for f in document["findings"] if f["rule_id"] == "QR007"]
    assert (qr007["template"], qr007["queue"]) == (str(paths[1]), "Orders")
    assert qr007["queue_template"] == str(paths[0])
    assert all(not f["queue_template"] for f in document["findings"] if f is not qr007)


def many_info_few_errors(folder: Path) -> list[Path]:
    """Two stacks whose queue policies allow an account instead of denying plain HTTP: QR013
    (info in the recommended profile) on each of their four queues; and one error, stack a's
    source unencrypted (QR012)."""
    paths = []
    for name in ("a", "b"):
        template = healthy(name)
        if name == "a":
            props(template, "Source")["SqsManagedSseEnabled"] = False
        for body in template["Resources"].values():
            if body["Type"] == "AWS::SQS::QueuePolicy":
                body["Properties"]["PolicyDocument"]["Statement"] = [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                        "Action": "sqs:SendMessage",
                        "Resource": "*",
                    }
                ]
        paths.append(write(folder, f"{name}.json", template))
    return paths


@pytest.mark.parametrize(
    ("fail_on", "named"), [("error", "QR012"), ("info", "QR013")], ids=["errors", "info"]
)
def test_the_headline_ranks_what_decides_the_exit_status(
    tmp_path: Path, fail_on: str, named: str
) -> None:
    paths = many_info_few_errors(tmp_path / "fleet")
    _, text = run("local", paths, ["--fail-on", fail_on], "table", tmp_path / "out.txt")
    [headline] = [line for line in text.splitlines() if line.startswith("One fix clears")]
    assert headline.startswith(f"One fix clears the most: {named} ")
    by_rule = json.loads(run("local", paths, [], "json", tmp_path / "o.json")[1])["summary"]
    assert by_rule["by_rule"]["QR013"] > by_rule["by_rule"]["QR012"]  # the trap the issue met


def test_the_html_header_counts_only_what_decides(tmp_path: Path) -> None:
    paths = many_info_few_errors(tmp_path / "fleet")
    _, page = run("local", paths, [], "html", tmp_path / "report.html")
    deciding = page.split("Findings that decide the exit status", 1)[1].split("</ul>", 1)[0]
    assert 'data-count="error"' in deciding
    assert 'data-count="info"' not in deciding and 'data-count="warning"' not in deciding
    assert "(--fail-on error)" in deciding


def test_writing_a_baseline_exits_0_and_a_baseline_run_says_why_it_fails(
    engine_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = healthy("orders")
    props(template, "Source")["VisibilityTimeout"] = 30  # QR007 (warning): 6 x 10 s > 30 s
    props(template, "Source")["SqsManagedSseEnabled"] = False  # QR012 (error)
    path = write(tmp_path, "orders.json", template)
    base = tmp_path / "baseline.json"
    code, _ = run(engine_name, [path], ["--write-baseline", str(base)], "json", tmp_path / "w.json")
    assert code == 0  # it found an error, and it is a recording run
    assert len(json.loads(base.read_text())["findings"]) == 2
    # ... and its table gives no reason to fail either
    code, text = run(
        engine_name, [path], ["--write-baseline", str(base)], "table", tmp_path / "w.txt"
    )
    assert code == 0
    assert "exit status 1" not in text

    props(template, "Source")["VisibilityTimeout"] = 20  # the same QR007, another value
    write(tmp_path, "orders.json", template)
    options = ["--baseline", str(base), "--fail-on", "warning", "--fail-on-changed"]
    code, text = run(engine_name, [path], options, "table", tmp_path / "b.txt")
    assert code == 1
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("0 findings (0 errors, 0 warnings, 0 info) in 1 file:")
    assert last.endswith("exit status 1: 1 changed finding (--fail-on-changed)")


def test_counts_are_said_in_the_singular_for_one(tmp_path: Path) -> None:
    template = healthy("orders")
    props(template, "Source")["SqsManagedSseEnabled"] = False  # QR012 alone
    path = write(tmp_path, "orders.json", template)
    code, text = run("local", [path], [], "table", tmp_path / "out.txt")
    assert code == 1
    assert text.rstrip().splitlines()[-1] == (
        "1 finding (1 error, 0 warnings, 0 info) in 1 file: 0 clean, 1 with findings, "
        "0 unparseable; exit status 1: 1 error (--fail-on error)"
    )
    _, markdown = run("local", [path], [], "markdown", tmp_path / "out.md")
    assert "1 file, 2 queues: **1 error**, 0 warnings, 0 info." in markdown


@pytest.mark.spark
def test_the_spark_progress_line_reads_as_a_sentence(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "orders.json", healthy("orders"))
    assert cli.main([str(path), "--engine", "spark", "--format", "json", "--output",
                     str(tmp_path / "out.json")]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "queue-audit: reading and parsing 1 file\n" in err
    assert "judged 2 queues: 0 findings in " in err
    assert "(the join across templates judged 0 queues from " in err
    assert "queues and" not in err
