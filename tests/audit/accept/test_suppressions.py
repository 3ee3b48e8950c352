"""Suppressions (template Metadata, a suppressions file) and baselines, on both engines.

Templates are the hand-written healthy pipeline of conftest.py with two faults whose findings
follow from the rule catalog: SSE off on Source (QR012, error) and RecursiveLoop Allow on the
consumer function Fn (QR028, warning).
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from constructs_lib.audit import cli, report
from tests.audit.conftest import Template, healthy, props, write
from tests.audit.report.test_report import SARIF_SCHEMA_FILE, _assert_valid_sarif
from tests.conftest import SynthResult

REASON = "Accepted by the platform team until the Q3 migration."


def usage_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """queue-audit's message for a usage error, which stops it with exit status 2."""
    with pytest.raises(SystemExit) as stopped:
        cli.main(args)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def faulty(name: str = "orders") -> Template:
    template = healthy(name)
    props(template, "Source")["SqsManagedSseEnabled"] = False
    props(template, "Fn")["RecursiveLoop"] = "Allow"
    return template


def suppress(template: Template, logical_id: str | None, *entries: dict[str, Any]) -> Template:
    """cdk-nag's Metadata on a resource, or on the template when ``logical_id`` is None."""
    target = template if logical_id is None else template["Resources"][logical_id]
    target.setdefault("Metadata", {})["cdk_nag"] = {"rules_to_suppress": list(entries)}
    return template


def run(engine: str, paths: list[Path], options: list[str], fmt: str, out: Path) -> tuple[int, str]:
    """queue-audit's exit status and report in ``fmt``, written to ``out``."""
    code = cli.main(
        [
            *map(str, paths),
            "--engine",
            engine,
            "--quiet",
            "--format",
            fmt,
            *options,
            "--output",
            str(out),
        ]
    )
    return code, out.read_text()


def audit(engine: str, paths: list[Path], *options: str, out: Path) -> tuple[int, dict[str, Any]]:
    """queue-audit's exit status and JSON report."""
    code, text = run(engine, paths, list(options), "json", out / f"report-{engine}.json")
    return code, json.loads(text)


def states(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(rule, resource, state) of every finding: suppressed, new, unchanged or open."""
    found = set()
    for f in document["findings"]:
        state = "suppressed" if f["suppression"] else f["baseline"] or "open"
        found.add((f["rule_id"], f["resource"], state))
    return found


def test_the_faults_are_found_unsuppressed(engine_name: str, tmp_path: Path) -> None:
    code, document = audit(engine_name, [write(tmp_path, "a.json", faulty())], out=tmp_path)
    assert states(document) == {("QR012", "Source", "open"), ("QR028", "Fn", "open")}
    assert code == 1


def test_metadata_on_the_resource_suppresses_its_finding_with_the_reason(
    engine_name: str, tmp_path: Path
) -> None:
    template = suppress(faulty(), "Source", {"id": "QR012", "reason": REASON})
    code, document = audit(engine_name, [write(tmp_path, "a.json", template)], out=tmp_path)
    assert states(document) == {("QR012", "Source", "suppressed"), ("QR028", "Fn", "open")}
    (accepted,) = [f for f in document["findings"] if f["suppression"]]
    assert accepted["suppression"] == "inSource"
    assert REASON in accepted["justification"]
    summary = document["summary"]
    assert summary["by_severity"] == {"error": 0, "warning": 1, "info": 0}
    assert summary["suppressed"] == 1
    assert code == 0  # the only error is accepted; the warning is below --fail-on error
    # a template whose findings are all suppressed is not clean
    assert summary["files_clean"] == 0 and summary["files_with_findings"] == 1


def test_metadata_names_only_the_resource_it_is_on(tmp_path: Path) -> None:
    template = suppress(faulty(), "Dlq", {"id": "QR012", "reason": REASON})
    _, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert ("QR012", "Source", "open") in states(document)


def test_template_metadata_suppresses_every_resource_and_the_plugin_prefix_counts(
    engine_name: str, tmp_path: Path
) -> None:
    template = suppress(
        faulty(),
        None,
        {"id": "QR012", "reason": REASON},
        {"id": "constructs-lib-queue-resilience::QR028", "reason": REASON},
    )
    code, document = audit(engine_name, [write(tmp_path, "a.json", template)], out=tmp_path)
    assert states(document) == {("QR012", "Source", "suppressed"), ("QR028", "Fn", "suppressed")}
    assert all("template's Metadata" in f["justification"] for f in document["findings"])
    assert code == 0


def test_findings_made_while_parsing_are_suppressed_too(tmp_path: Path) -> None:
    template = healthy("orders")
    template["Conditions"] = {"Prod": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}}
    template["Parameters"] = {"Stage": {"Type": "String"}}  # no default: undecidable
    template["Resources"]["Dlq"]["Condition"] = "Prod"
    suppress(template, "Dlq", {"id": "QR900", "reason": REASON})
    _, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert ("QR900", "Dlq", "suppressed") in states(document)


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"id": "QR012"}, "gives no reason"),
        ({"id": "QR012", "reason": "   "}, "gives no reason"),
        ({"id": "QR012", "reason": "ok"}, "shorter than 10 characters"),
        ({"id": "QR012", "reason": 42}, "gives no reason"),
        ({"id": "QR099", "reason": REASON}, "names no queue-audit rule"),
    ],
)
def test_a_suppression_that_is_not_one_is_a_finding_and_suppresses_nothing(
    entry: dict[str, Any], says: str, tmp_path: Path
) -> None:
    template = suppress(faulty(), "Source", entry)
    code, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert ("QR012", "Source", "open") in states(document)
    (problem,) = [f for f in document["findings"] if f["rule_id"] == "QR902"]
    assert (problem["resource"], problem["queue"], problem["severity"]) == (
        "Source",
        "Source",
        "warning",
    )
    assert says in problem["message"]
    assert code == 1


def test_cfn_lint_ignore_checks_cannot_carry_a_reason(tmp_path: Path) -> None:
    template = faulty()
    template["Resources"]["Source"]["Metadata"] = {
        "cfn-lint": {"config": {"ignore_checks": ["W3005", "QR012"]}}
    }
    _, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert ("QR012", "Source", "open") in states(document)
    (problem,) = [f for f in document["findings"] if f["rule_id"] == "QR902"]
    assert "ignore_checks names QR012" in problem["message"]


def test_other_tools_suppressions_are_theirs(tmp_path: Path) -> None:
    template = suppress(
        faulty(),
        "Source",
        {"id": "AwsSolutions-SQS3", "reason": "x"},
        {"id": "AwsSolutions::AwsSolutions-SQS4"},
    )
    _, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert {f["rule_id"] for f in document["findings"]} == {"QR012", "QR028"}


def test_malformed_cdk_nag_metadata_meant_for_queue_audit_is_reported(tmp_path: Path) -> None:
    template = faulty()
    template["Resources"]["Source"]["Metadata"] = {"cdk_nag": {"rules_to_suppress": "QR012"}}
    _, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert ("QR902", "Source", "open") in states(document)
    assert ("QR012", "Source", "open") in states(document)


def test_qr902_itself_cannot_be_suppressed(tmp_path: Path) -> None:
    template = suppress(
        faulty(), "Source", {"id": "QR012", "reason": "no"}, {"id": "QR902", "reason": REASON}
    )
    _, document = audit("local", [write(tmp_path, "a.json", template)], out=tmp_path)
    assert ("QR902", "Source", "open") in states(document)


# --- the suppressions file -----------------------------------------------------------------------


def suppressions_file(folder: Path, *entries: dict[str, Any]) -> Path:
    path = folder / "suppressions.json"
    path.write_text(json.dumps({"suppressions": list(entries)}))
    return path


def test_a_file_entry_accepts_what_its_globs_match(engine_name: str, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    legacy, current = write(fleet, "legacy.json", faulty("old")), write(fleet, "new.json", faulty())
    entries = suppressions_file(
        tmp_path,
        {"rule": "QR012", "template": "*/legacy.json", "resource": "Sour*", "reason": REASON},
        {"rule": "QR028", "stack": "no-such-stack", "reason": REASON},
    )
    code, document = audit(
        engine_name, [legacy, current], "--suppressions", str(entries), out=tmp_path
    )
    by_template = {(Path(f["template"]).name, f["rule_id"]): f for f in document["findings"]}
    accepted = by_template[("legacy.json", "QR012")]
    assert accepted["suppression"] == "external"
    assert REASON in accepted["justification"] and "entry 1" in accepted["justification"]
    assert not by_template[("new.json", "QR012")]["suppression"]  # another template
    assert not by_template[("legacy.json", "QR028")]["suppression"]  # another stack
    assert code == 1


def test_an_expired_entry_stops_applying_and_says_so(engine_name: str, tmp_path: Path) -> None:
    yesterday = datetime.datetime.now(datetime.UTC).date() - datetime.timedelta(days=1)
    tomorrow = yesterday + datetime.timedelta(days=2)
    entries = suppressions_file(
        tmp_path,
        {"rule": "QR012", "reason": REASON, "expires": yesterday.isoformat()},
        {"rule": "QR028", "reason": REASON, "expires": tomorrow.isoformat()},
    )
    template = write(tmp_path, "a.json", faulty())
    code, document = audit(engine_name, [template], "--suppressions", str(entries), out=tmp_path)
    assert ("QR012", "Source", "open") in states(document)
    assert ("QR028", "Fn", "suppressed") in states(document)
    (expired,) = [f for f in document["findings"] if f["rule_id"] == "QR902"]
    assert expired["template"] == str(entries)
    assert f"expired on {yesterday.isoformat()}" in expired["message"]
    assert document["summary"]["reconciled"]  # the suppressions file is not a template
    assert code == 1


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([], "a list under 'suppressions'"),
        ({"suppressions": ["QR012"]}, "is not a mapping"),
        ({"suppressions": [{"rule": "QR012"}]}, "gives no reason"),
        ({"suppressions": [{"rule": "QR012", "reason": "short"}]}, "shorter than 10"),
        ({"suppressions": [{"rule": "QR12", "reason": REASON}]}, "rule 'QR12' is not a rule"),
        ({"suppressions": [{"rule": "QR902", "reason": REASON}]}, "QR902 cannot be suppressed"),
        ({"suppressions": [{"rule": "QR012", "reason": REASON, "until": 1}]}, "unknown key until"),
        ({"suppressions": [{"rule": "QR012", "reason": REASON, "expires": "soon"}]}, "YYYY-MM-DD"),
        ({"suppressions": [{"rule": "QR012", "reason": REASON, "stack": ""}]}, "not a pattern"),
    ],
)
def test_a_wrong_suppressions_file_is_a_usage_error_naming_the_entry(
    document: Any, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "suppressions.json"
    path.write_text(json.dumps(document))
    template = write(tmp_path, "a.json", faulty())
    error = usage_error([str(template), "--engine", "local", "--suppressions", str(path)], capsys)
    assert says in error and str(path) in error


def test_a_yaml_suppressions_file_with_a_plain_date(tmp_path: Path) -> None:
    path = tmp_path / "suppressions.yaml"
    path.write_text(
        f"suppressions:\n  - rule: QR012\n    reason: {REASON}\n    expires: 2999-12-31\n"
    )
    _, document = audit(
        "local", [write(tmp_path, "a.json", faulty())], "--suppressions", str(path), out=tmp_path
    )
    assert ("QR012", "Source", "suppressed") in states(document)


# --- baselines -----------------------------------------------------------------------------------


def test_a_baseline_lets_only_new_findings_decide(engine_name: str, tmp_path: Path) -> None:
    before = tmp_path / "before"
    before.mkdir()
    base = tmp_path / "baseline.json"
    code, _ = audit(
        engine_name,
        [write(before, "a.json", faulty())],
        "--write-baseline",
        str(base),
        out=tmp_path,
    )
    assert code == 0  # a recording run is no gate

    # The same stack from another folder, resources reordered, an unrelated edit, the error fixed
    # and a new queue without encryption: only that one is new.
    after = tmp_path / "after"
    after.mkdir()
    template = faulty()
    template["Resources"] = dict(reversed(list(template["Resources"].items())))
    props(template, "Fn")["MemorySize"] = 512
    props(template, "Source").pop("SqsManagedSseEnabled")
    template["Resources"]["Extra"] = {
        "Type": "AWS::SQS::Queue",
        "Properties": {"SqsManagedSseEnabled": False},
    }
    code, document = audit(
        engine_name, [write(after, "a.json", template)], "--baseline", str(base), out=tmp_path
    )
    found = states(document)
    assert ("QR028", "Fn", "unchanged") in found
    assert ("QR012", "Extra", "new") in found
    assert not any(resource == "Source" for _, resource, _ in found)
    (fixed,) = document["fixed"]
    assert (fixed["rule_id"], fixed["resource"], fixed["baseline"]) == ("QR012", "Source", "absent")
    counts = document["summary"]["baseline"]
    assert counts["unchanged"] == 1 and counts["fixed"] == 1
    assert counts["new"] == sum(1 for *_, state in found if state == "new")
    assert code == 1  # QR012 on Extra is a new error

    props(template, "Fn")["RecursiveLoop"] = "Allow"
    template["Resources"].pop("Extra")
    code, document = audit(
        engine_name, [write(after, "a.json", template)], "--baseline", str(base), out=tmp_path
    )
    assert states(document) == {("QR028", "Fn", "unchanged")}
    assert code == 0  # nothing new


def test_findings_sharing_a_fingerprint_are_matched_by_count(tmp_path: Path) -> None:
    """The same stack in two folders: two QR012 on Source where the baseline holds one."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    base = tmp_path / "baseline.json"
    audit("local", [write(one, "a.json", faulty())], "--write-baseline", str(base), out=tmp_path)
    paths = [write(one, "a.json", faulty()), write(two, "a.json", faulty())]
    code, document = audit("local", paths, "--baseline", str(base), out=tmp_path)
    qr012 = [f["baseline"] for f in document["findings"] if f["rule_id"] == "QR012"]
    assert sorted(qr012) == ["new", "unchanged"]
    assert code == 1


def test_suppressed_findings_stay_out_of_the_baseline(tmp_path: Path) -> None:
    template = suppress(faulty(), "Source", {"id": "QR012", "reason": REASON})
    base = tmp_path / "baseline.json"
    audit(
        "local", [write(tmp_path, "a.json", template)], "--write-baseline", str(base), out=tmp_path
    )
    recorded = json.loads(base.read_text())["findings"]
    assert [(f["rule_id"], f["resource"]) for f in recorded] == [("QR028", "Fn")]
    # the suppression removed, the finding is new: dropping a suppression is noticed
    code, document = audit(
        "local", [write(tmp_path, "a.json", faulty())], "--baseline", str(base), out=tmp_path
    )
    assert ("QR012", "Source", "new") in states(document)
    assert code == 1


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "is not JSON"),
        ('{"version": 3, "findings": []}', "version 1 or 2"),
        ('{"version": 1}', "no list of findings"),
        ('{"version": 1, "findings": [{"rule_id": "QR001"}]}', "finding 1, lacks one of"),
    ],
)
def test_a_wrong_baseline_is_a_usage_error(
    content: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "baseline.json"
    base.write_text(content)
    template = write(tmp_path, "a.json", faulty())
    error = usage_error([str(template), "--engine", "local", "--baseline", str(base)], capsys)
    assert says in error


def test_a_missing_baseline_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write(tmp_path, "a.json", faulty())
    error = usage_error(
        [str(template), "--engine", "local", "--baseline", str(tmp_path / "none.json")], capsys
    )
    assert "cannot read the baseline" in error


# --- every format, both engines ----------------------------------------------------------------


@pytest.fixture
def accepted_fleet(tmp_path: Path) -> tuple[list[Path], list[str]]:
    """Findings in every state: suppressed in the template and by the file, unchanged, changed
    (a visibility timeout cut from 30 s to 20 s: QR007 with other values), new, fixed, an
    expired file entry, and a rule the default profile reports as info (QR025: no DLQ age
    alarm)."""
    base = tmp_path / "baseline.json"
    original = faulty()
    props(original, "Dlq")["SqsManagedSseEnabled"] = False  # fixed below
    props(original, "Source")["VisibilityTimeout"] = 30
    original["Resources"].pop("DlqAge")
    audit(
        "local", [write(tmp_path, "a.json", original)], "--write-baseline", str(base), out=tmp_path
    )
    template = suppress(faulty(), "Source", {"id": "QR012", "reason": REASON})
    props(template, "Source")["VisibilityTimeout"] = 20
    template["Resources"].pop("DlqAge")
    second = copy.deepcopy(faulty("billing"))
    entries = suppressions_file(
        tmp_path,
        {"rule": "QR028", "template": "*b.json", "reason": REASON},
        {"rule": "QR012", "reason": REASON, "expires": "2000-01-01"},
    )
    paths = [write(tmp_path, "a.json", template), write(tmp_path, "b.json", second)]
    return paths, ["--suppressions", str(entries), "--baseline", str(base)]


def render(
    fleet: tuple[list[Path], list[str]], fmt: str, out: Path, engine: str = "local"
) -> tuple[int, str]:
    """The accepted fleet's report in ``fmt``: (exit status, text)."""
    paths, options = fleet
    return run(engine, paths, options, fmt, out)


@pytest.mark.spark
@pytest.mark.parametrize("fmt", report.FORMATS)
def test_both_engines_accept_alike_in_every_format(
    spark: Any, fmt: str, accepted_fleet: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    outputs = {
        engine: render(accepted_fleet, fmt, tmp_path / f"{engine}.{fmt}", engine)
        for engine in ("local", "spark")
    }
    assert outputs["local"] == outputs["spark"]
    assert outputs["local"][0] == 1  # the new QR012 on billing's Source


def test_sarif_with_suppressions_and_baseline_states_validates(
    accepted_fleet: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    _, text = render(accepted_fleet, "sarif", tmp_path / "audit.sarif")
    schema = json.loads(SARIF_SCHEMA_FILE.read_text(encoding="utf-8"))
    document = _assert_valid_sarif(text, jsonschema.Draft4Validator(schema))
    results = document["runs"][0]["results"]
    suppressed = [r for r in results if "suppressions" in r]
    kinds = {r["suppressions"][0]["kind"] for r in suppressed}
    assert kinds == {"inSource", "external"}
    assert all(r["suppressions"][0]["status"] == "accepted" for r in suppressed)
    assert all(REASON in r["suppressions"][0]["justification"] for r in suppressed)
    assert {r["baselineState"] for r in results if "suppressions" not in r} == {
        "new",
        "unchanged",
        "updated",
    }
    assert document["runs"][0]["properties"]["baseline"]["fixed"] == 1


def test_codequality_lists_suppressed_findings_as_info_with_the_reason(
    accepted_fleet: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    _, text = render(accepted_fleet, "codequality", tmp_path / "gl-code-quality.json")
    issues = json.loads(text)
    accepted = [i for i in issues if i["description"].startswith("suppressed (")]
    assert len(accepted) == 2
    assert all(i["severity"] == "info" and REASON in i["description"] for i in accepted)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_text_formats_show_each_state_and_the_counts(
    fmt: str, accepted_fleet: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    _, text = render(accepted_fleet, fmt, tmp_path / f"audit.{fmt}")
    for word in ("suppressed", "unchanged", "changed", "new"):
        assert word in text
    assert "2 suppressed" in text and "1 changed" in text and "1 fixed" in text


def test_the_documented_cdk_route_accepts_the_finding_in_construct_plugin_and_audit(
    docs_example: Callable[[str], SynthResult],
) -> None:
    """docs/examples/suppressions_app.py, as a user runs it: one acknowledgment, three places."""
    from constructs_lib.audit.engines import local as engine

    synthesized = docs_example("suppressions_app")
    assert synthesized.returncode == 0, synthesized.output  # the plugin (fail_on warning) passed
    (finding,) = engine.audit_paths([str(synthesized.outdir)]).findings
    assert (finding.rule_id, finding.state) == ("QR008", "suppressed")
    assert "event store" in finding.justification
    annotations = json.loads((synthesized.outdir / "Orders.metadata.json").read_text())
    infos = [
        e["data"]
        for entries in annotations.values()
        for e in entries
        if e["type"] == "aws:cdk:info"
    ]
    assert any("QR008" in str(text) and "event store" in str(text) for text in infos)
    assert not any(
        "max_receive_count" in str(e["data"])
        for entries in annotations.values()
        for e in entries
        if e["type"] == "aws:cdk:warning"
    )


SAM_TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 10
  Worker:
    Type: AWS::Serverless::Function
    Metadata:
      cdk_nag:
        rules_to_suppress:
          - id: QR006
            reason: {reason}
    Properties:
      Runtime: python3.12
      Handler: index.handler
      InlineCode: "def handler(event, context): pass"
      Timeout: 60
      Events:
        FromJobs:
          Type: SQS
          Properties:
            Queue: !GetAtt Jobs.Arn
"""


@pytest.mark.parametrize(("reason", "state"), [(REASON, "suppressed"), ("later", "open")])
def test_a_sam_functions_metadata_covers_the_mapping_made_from_its_event(
    reason: str, state: str, tmp_path: Path
) -> None:
    """SAM makes the event source mapping from the function's Events; findings name it
    Worker.FromJobs, and its author wrote the suppression on Worker."""
    template = write(tmp_path, "template.yaml", SAM_TEMPLATE.format(reason=reason))
    _, document = audit("local", [template], out=tmp_path)
    assert ("QR006", "Worker.FromJobs", state) in states(document)


YAML_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdef", "bcdefg", strict=True)
)


@pytest.mark.parametrize(
    ("content", "options", "says"),
    [
        ("a: &a [x, x, x, x, x, x, x, x, x]\n" + YAML_BOMB, [], "too many YAML nodes"),
        ("[" * 100_000, [], "nested too deeply"),
        (b"\xff\xfe", [], "not UTF-8"),
        ("suppressions: []\n", ["--max-file-size", "10"], "larger than --max-file-size"),
    ],
)
def test_a_hostile_suppressions_file_costs_a_usage_error_within_the_limits(
    content: str | bytes,
    options: list[str],
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "suppressions.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    template = write(tmp_path, "a.json", faulty())
    error = usage_error(
        [str(template), "--engine", "local", "--suppressions", str(path), *options], capsys
    )
    assert says in error


@pytest.mark.parametrize(
    ("where", "says"),
    [("deep", "is not JSON"), ("folder", "cannot read the baseline")],
)
def test_a_hostile_baseline_is_a_usage_error(
    where: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "baseline.json"
    if where == "deep":
        base.write_text("[" * 1_000_000)
    else:
        base.mkdir()
    template = write(tmp_path, "a.json", faulty())
    error = usage_error([str(template), "--engine", "local", "--baseline", str(base)], capsys)
    assert says in error


def test_a_baseline_into_a_missing_folder_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write(tmp_path, "a.json", faulty())
    target = tmp_path / "missing" / "baseline.json"
    error = usage_error(
        [str(template), "--engine", "local", "--write-baseline", str(target)], capsys
    )
    assert "does not exist" in error
