"""The rules page (docs/audit/rules.md) lists every rule the audit can report, in id order, with
the catalog's severity and fix, and says for each where its fact comes from."""

from __future__ import annotations

import re

from constructs_lib.audit.rules.catalog import describe_rules
from tests.conftest import REPO_ROOT

PAGE = (REPO_ROOT / "docs" / "audit" / "rules.md").read_text(encoding="utf-8")
# `| <a id="qr001"></a>QR001 | error | what it checks | fix |`: the catalog table's rows
CATALOG_ROW = re.compile(
    r'^\| <a id="(?P<anchor>qr\d+)"></a>(?P<id>QR\d+) \| (?P<severity>\w+) \| .+ \| (?P<fix>.+) \|$',
    flags=re.MULTILINE,
)
# `| QR001 | source of the fact | example |`: the sources table's rows
SOURCE_ROW = re.compile(r"^\| (QR\d+) \| .+ \| .+ \|$", flags=re.MULTILINE)


def test_the_catalog_table_is_the_code_catalog() -> None:
    rows = [
        (m["id"], m["severity"], m["fix"].replace("\\|", "|")) for m in CATALOG_ROW.finditer(PAGE)
    ]
    assert rows == [(rule_id, severity, fix) for rule_id, severity, _title, fix in describe_rules()]


def test_every_rule_is_anchored_by_its_lower_case_id() -> None:
    # the HTML report links each rule to this anchor (report/html/page.py, RULES_PAGE)
    for match in CATALOG_ROW.finditer(PAGE):
        assert match["anchor"] == match["id"].lower()


def test_every_rule_says_where_its_fact_comes_from() -> None:
    start = PAGE.index("Why each rule exists")
    sources = PAGE[start : PAGE.index("\n## ", start)]
    sourced = SOURCE_ROW.findall(sources)
    assert sourced == [rule_id for rule_id, _severity, _title, _fix in describe_rules()]
