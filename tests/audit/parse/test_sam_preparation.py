"""SAM templates are prepared as the SAM CLI prepares them before the transform: a function
without ``CodeUri``, ``AWS::Include`` of a local file, and SAM resources without the
``Transform`` line are judged, not rejected.

Each template is the healthy SAM pipeline of ``test_sam`` (no findings as written) with one
change that makes its consumer wrong in a way only an expanded template shows: the function's
timeout of 20 s against the queue's visibility timeout of 60 s is a QR007 on ``Worker.Orders``
(6 x 20 = 120 > 60). A template the translator rejects shows a QR900 instead, and no QR007.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from constructs_lib.audit import rules
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.parse import documents as parsing
from constructs_lib.audit.parse.dialects import sam
from tests.audit.conftest import write
from tests.audit.parse.test_sam import ORDERS, sam_pipeline

SLOW_WORKER = {"Timeout": 20}
QUIET_LOCAL_JSON = ("--engine", "local", "--quiet", "--format", "json")
# An API the pipeline's template may carry too: its expansion is what makes the translator log.
API = """\
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: prod
      DefinitionBody:
        openapi: '3.0.1'
        info: {title: orders, version: '1'}
        paths: {}
"""


def findings(path: Path) -> set[tuple[str, str]]:
    result = engine.audit_paths([str(path)])
    return {(f.rule_id, f.resource) for f in result.findings}


def without_code_uri(text: str) -> str:
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if not line.strip().startswith("CodeUri:")]
    assert len(kept) == len(lines) - 1
    return "".join(kept)


def test_function_without_code_uri_is_judged(tmp_path: Path) -> None:
    # GIVEN a function with no CodeUri (the SAM CLI builds the template's folder)
    template = without_code_uri(sam_pipeline("nocode", function=SLOW_WORKER))
    path = write(tmp_path, "template.yaml", template)
    # THEN its SQS event is judged like any other, and nothing is reported as rejected
    assert findings(path) == {("QR007", ORDERS)}


def test_function_without_code_in_globals_or_image_keeps_its_own(tmp_path: Path) -> None:
    # GIVEN InlineCode instead of CodeUri: the template is valid as written and stays so
    template = without_code_uri(
        sam_pipeline("inline", function={**SLOW_WORKER, "InlineCode": "'def handler(e, c): pass'"})
    )
    path = write(tmp_path, "template.yaml", template)
    assert findings(path) == {("QR007", ORDERS)}


def test_local_include_is_read(tmp_path: Path) -> None:
    # GIVEN the function's Timeout kept in a local file pulled in with AWS::Include
    template = sam_pipeline(
        "include",
        function={
            "Fn::Transform": "{Name: AWS::Include, Parameters: {Location: ./worker/timeout.yaml}}"
        },
    )
    write(tmp_path, "worker/timeout.yaml", "Timeout: 20\n")
    path = write(tmp_path, "template.yaml", template)
    # THEN the included timeout is the function's: 6 x 20 > 60
    assert findings(path) == {("QR007", ORDERS)}


@pytest.mark.parametrize(
    "location",
    ["./worker/missing.yaml", "s3://bucket/timeout.yaml", "/etc/hostname"],
    ids=["missing-file", "s3-url", "absolute-path"],
)
def test_include_that_cannot_be_read_is_left_to_the_translator(
    tmp_path: Path, location: str
) -> None:
    template = sam_pipeline(
        "include",
        function={"Fn::Transform": f"{{Name: AWS::Include, Parameters: {{Location: {location}}}}}"},
    )
    path = write(tmp_path, "template.yaml", template)
    found = findings(path)
    # the include is not expanded: no included timeout, so no QR007 (3 s default or rejected)
    assert ("QR007", ORDERS) not in found


@pytest.mark.parametrize("through", ["dot-dot", "link"])
def test_include_outside_the_template_folder_is_not_read(tmp_path: Path, through: str) -> None:
    # GIVEN a readable file outside the template's folder, named by ../ or reached by a link
    write(tmp_path, "outside/timeout.yaml", "Timeout: 20\n")
    location = "../outside/timeout.yaml"
    if through == "link":
        (tmp_path / "app").mkdir()
        (tmp_path / "app" / "worker").symlink_to(tmp_path / "outside")
        location = "./worker/timeout.yaml"
    template = sam_pipeline(
        "include",
        function={"Fn::Transform": f"{{Name: AWS::Include, Parameters: {{Location: {location}}}}}"},
    )
    path = write(tmp_path, "app/template.yaml", template)
    # THEN the file is not pulled in: its timeout would have made a QR007
    assert ("QR007", ORDERS) not in findings(path)


def test_missing_transform_is_expanded_with_an_info_finding(tmp_path: Path) -> None:
    # GIVEN a SAM partial without the Transform line
    template = sam_pipeline("partial", function=SLOW_WORKER)
    lines = [
        line for line in template.splitlines(keepends=True) if not line.startswith("Transform")
    ]
    path = write(tmp_path, "partial.yaml", "".join(lines))
    result = engine.audit_paths([str(path)])
    # THEN its consumer is judged, and one info finding says the transform is missing
    assert {(f.rule_id, f.resource) for f in result.findings} == {
        ("QR007", ORDERS),
        (rules.MISSING_TRANSFORM_RULE, ""),
    }
    (note,) = [f for f in result.findings if f.rule_id == rules.MISSING_TRANSFORM_RULE]
    assert note.rule_id == "QR903"
    assert note.severity == "info"
    assert "no Transform: AWS::Serverless-2016-10-31" in note.message


def test_declared_transform_has_no_missing_transform_finding(tmp_path: Path) -> None:
    path = write(tmp_path, "template.yaml", sam_pipeline("declared", function=SLOW_WORKER))
    assert findings(path) == {("QR007", ORDERS)}


def test_missing_transform_rule_is_in_the_catalog_and_the_docs() -> None:
    described = {rule_id: severity for rule_id, severity, _, _ in rules.describe_rules()}
    assert described["QR903"] == "info"
    docs = (Path(__file__).parents[3] / "docs" / "audit" / "rules.md").read_text()
    assert '<a id="qr903"></a>QR903 | info |' in docs


def test_translator_prints_nothing_on_stderr(tmp_path: Path) -> None:
    """The translator logs a feature-toggle warning per template through Python's last-resort
    handler; the command's stderr stays empty with --quiet."""
    for index in range(2):
        write(tmp_path, f"app{index}/template.yaml", sam_pipeline(f"quiet{index}") + API)
    completed = subprocess.run(
        [sys.executable, "-m", "constructs_lib.audit", str(tmp_path), *QUIET_LOCAL_JSON],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert '"rule_id"' not in completed.stdout  # clean templates: no findings
    assert completed.stderr == ""


def test_an_include_that_includes_itself_is_read_once(tmp_path: Path) -> None:
    # GIVEN an included file that includes itself (twice): its own includes are not followed
    loop = "{Name: AWS::Include, Parameters: {Location: ./worker/loop.yaml}}"
    write(
        tmp_path,
        "worker/loop.yaml",
        f"Timeout: 20\nTags:\n  a: {{'Fn::Transform': {loop}}}\n  b: {{'Fn::Transform': {loop}}}\n",
    )
    template = sam_pipeline("loop", function={"Fn::Transform": loop})
    path = write(tmp_path, "template.yaml", template)
    document = sam.include_local_files(
        parsing.load_document(str(path), path.read_bytes()), str(path)
    )
    worker = document["Resources"]["Worker"]["Properties"]
    assert worker["Timeout"] == 20
    assert worker["Tags"]["a"] == {
        "Fn::Transform": {"Name": "AWS::Include", "Parameters": {"Location": "./worker/loop.yaml"}}
    }
