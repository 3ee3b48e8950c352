"""Where a deployed resource lives, in every report: its account, region and ARN (``Finding``'s
``account``, ``region``, ``physical``), and reports over template files as they always were."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from constructs_lib.audit import report
from constructs_lib.audit.model import AuditResult, FileRow, Finding
from constructs_lib.audit.report.html.findings import accounts_html, stack_groups, stacks_html
from constructs_lib.audit.report.human import physical_name, resource_text, where_text
from tests.audit.report.test_html_report import Node, parse, squash
from tests.audit.report.test_report import _assert_valid_sarif, sarif_validator  # noqa: F401 (fixture)

ORDERS_STACK = "arn:aws:cloudformation:eu-west-1:111122223333:stack/orders/4b2c1d30-1111-2222"
BILLING_STACK = "arn:aws:cloudformation:us-east-1:444455556666:stack/billing/9e8f7a60-3333-4444"
ORDERS_QUEUE = "arn:aws:sqs:eu-west-1:111122223333:orders"
WORKER = "arn:aws:lambda:eu-west-1:111122223333:function:orders-worker"
INVOICES = "arn:aws:sqs:us-east-1:444455556666:invoices"


def finding(
    rule_id: str, severity: str, template: str, stack: str, resource: str, physical: str = ""
) -> Finding:
    return Finding(
        rule_id,
        severity,  # type: ignore[arg-type]
        template,
        stack,
        resource,
        "Orders" if stack != "billing" else "Invoices",
        f"{rule_id} on {resource}",
        "fix it",
        physical=physical,
    )


def deployed_result() -> AuditResult:
    findings = [
        finding("QR009", "warning", BILLING_STACK, "billing", "Invoices", INVOICES),
        finding("QR001", "error", ORDERS_STACK, "orders", "Orders", ORDERS_QUEUE),
        finding("QR028", "warning", ORDERS_STACK, "orders", "Worker", WORKER),
        finding("QR012", "error", ORDERS_STACK, "orders", "Orders", ORDERS_QUEUE),
    ]
    files = [
        FileRow(ORDERS_STACK, "orders", "ok", "", 3),
        FileRow(BILLING_STACK, "billing", "ok", "", 1),
    ]
    return AuditResult(findings, files, queues=2)


def template_result() -> AuditResult:
    findings = [
        finding("QR001", "error", "cdk.out/orders.template.json", "orders", "Orders"),
        finding("QR009", "warning", "billing.yaml", "billing", "Invoices"),
    ]
    files = [
        FileRow("cdk.out/orders.template.json", "orders", "ok", "", 3),
        FileRow("billing.yaml", "billing", "ok", "", 1),
    ]
    return AuditResult(findings, files, queues=2)


def test_a_stack_arn_gives_the_finding_its_account_and_region() -> None:
    (first, *_) = deployed_result().findings
    assert (first.account, first.region, first.physical) == ("444455556666", "us-east-1", INVOICES)
    plain = template_result().findings
    assert all((f.account, f.region, f.physical) == ("", "", "") for f in plain)


def test_json_carries_account_region_and_physical() -> None:
    document = json.loads(report.render_json(deployed_result()))
    by_resource = {f["resource"]: f for f in document["findings"]}
    assert by_resource["Worker"]["account"] == "111122223333"
    assert by_resource["Worker"]["region"] == "eu-west-1"
    assert by_resource["Worker"]["physical"] == WORKER


# --- SARIF ------------------------------------------------------------------------------------


def _results(result: AuditResult, validator: jsonschema.Draft4Validator) -> list[dict[str, Any]]:
    document = _assert_valid_sarif(report.render_sarif(result), validator)
    results: list[dict[str, Any]] = document["runs"][0]["results"]
    return results


def test_sarif_properties_and_logical_location_name_the_deployed_resource(
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    results = _results(deployed_result(), sarif_validator)
    worker = next(r for r in results if r["ruleId"] == "QR028")
    assert worker["properties"] == {
        "account": "111122223333",
        "region": "eu-west-1",
        "physical": WORKER,
    }
    (logical,) = worker["locations"][0]["logicalLocations"]
    assert logical == {"name": "Worker", "fullyQualifiedName": WORKER, "kind": "resource"}
    assert worker["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == ORDERS_STACK


def test_sarif_of_template_files_has_no_location_properties(
    sarif_validator: jsonschema.Draft4Validator,  # noqa: F811
) -> None:
    for result in _results(template_result(), sarif_validator):
        assert "properties" not in result
        (logical,) = result["locations"][0]["logicalLocations"]
        assert logical["fullyQualifiedName"] in ("orders/Orders", "billing/Invoices")


# --- Markdown and the table ----------------------------------------------------------------------


def test_markdown_names_account_region_stack_and_arn() -> None:
    text = report.render_markdown(deployed_result())
    assert "| Severity | Rule | Where | Resource | Message | Fix |" in text
    assert (
        f"| error | QR001 | `111122223333/eu-west-1/orders` | Orders (`{ORDERS_QUEUE}`) |" in text
    )
    assert "`444455556666/us-east-1/billing`" in text
    assert ORDERS_STACK not in text.split("### Findings")[-1]  # the short form, not the stack ARN


def test_table_names_account_region_stack_and_physical_name() -> None:
    lines = report.render_table(deployed_result()).splitlines()
    header = next(line for line in lines if line.startswith("SEVERITY"))
    assert header.split()[:5] == ["SEVERITY", "RULE", "WHERE", "RESOURCE", "MESSAGE"]
    worker = next(line for line in lines if " QR028 " in line)
    assert "111122223333/eu-west-1/orders" in worker and "Worker (orders-worker)" in worker


def test_markdown_and_table_of_template_files_are_unchanged() -> None:
    result = template_result()
    for f in result.findings:
        assert (
            where_text(f) == f.template
            and resource_text(f, physical_name(f.physical)) == f.resource
        )
    markdown = report.render_markdown(result)
    assert "| Severity | Rule | Template | Resource | Message | Fix |" in markdown
    assert (
        "| error | QR001 | `cdk.out/orders.template.json` | Orders | QR001 on Orders |" in markdown
    )
    table = report.render_table(result)
    header = next(line for line in table.splitlines() if line.startswith("SEVERITY"))
    assert header.split()[:5] == ["SEVERITY", "RULE", "TEMPLATE", "RESOURCE", "MESSAGE"]
    assert "WHERE" not in table and "Where" not in markdown


def test_physical_names() -> None:
    assert physical_name(ORDERS_QUEUE) == "orders"
    assert physical_name(WORKER) == "orders-worker"
    assert physical_name("arn:aws:lambda:eu-west-1:1:event-source-mapping:abc-123") == "abc-123"
    assert physical_name("arn:aws:cloudwatch:eu-west-1:1:alarm:orders/depth") == "depth"
    assert physical_name("not-an-arn") == "not-an-arn"


# --- HTML ---------------------------------------------------------------------------------------


def _findings_section(page: str) -> Node:
    root = parse(page)
    (section,) = [s for s in root.find_all("section") if s.attrs.get("id") == "findings"]
    return section


def test_html_groups_by_account_then_stack_and_shows_the_arn() -> None:
    section = _findings_section(report.render_html(deployed_result()))
    assert squash(section.find_all("h2")[0].text()) == "Findings to act on, by account and stack"
    layout: list[str] = []
    for child in section.children:
        if isinstance(child, Node) and child.tag == "h3":
            layout.append(squash(child.text()))
        elif isinstance(child, Node) and child.tag == "details":
            layout.append("  " + squash(child.find_all("summary")[0].text()))
    # the account of the worst stack first, each account's stacks under it
    assert layout == [
        "Account 111122223333 1 stack: 2 errors, 1 warning",
        f"  Stack orders 2 errors, 1 warning {ORDERS_STACK}",
        "Account 444455556666 1 stack: 1 warning",
        f"  Stack billing 1 warning {BILLING_STACK}",
    ]
    places = [squash(p.text()) for p in section.find_all("p", "where")]
    assert f"Resource Worker {WORKER}" in places
    assert ORDERS_QUEUE in places  # the queue itself: its ARN, no resource line


def test_html_of_templates_beside_deployed_stacks() -> None:
    mixed = deployed_result()
    mixed.findings = [*mixed.findings, *template_result().findings]  # type: ignore[misc]
    section = _findings_section(report.render_html(mixed))
    headings = [squash(h.text()) for h in section.find_all("h3")]
    assert headings == [
        "Account 111122223333 1 stack: 2 errors, 1 warning",
        "Template files 2 stacks: 1 error, 1 warning",
        "Account 444455556666 1 stack: 1 warning",
    ]


def test_html_of_template_files_is_unchanged() -> None:
    result = template_result()
    groups = stack_groups(result.findings)
    assert accounts_html(groups, {}) == stacks_html(groups, {})
    section = _findings_section(report.render_html(result))
    assert squash(section.find_all("h2")[0].text()) == "Findings to act on, by stack"
    assert not section.find_all("h3") and not section.find_all("code", "physical")
