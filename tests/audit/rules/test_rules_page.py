"""The rules page (docs/audit/rules.md) lists every rule the audit can report, in id order, with
the catalog's severity and fix, and says for each where its fact comes from."""

from __future__ import annotations

import re

from constructs_lib.audit import rules
from constructs_lib.audit.accept import profiles
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


# The page's prose, its lines joined: the ranges it names are the catalog's.
PROSE = " ".join(PAGE.split())
RANGE = re.compile(r"\bQR\d{3}-QR\d{3}\b")
# The behaviour rules that judge data points (QR034 judges their absence): a range of the page's
# own argument, not a group of the catalog.
PAGE_RANGES = {"QR030-QR033"}


def test_the_page_names_the_catalog_ranges() -> None:
    queue, meta = rules.id_ranges(rules.QUEUE_RULE_IDS), rules.id_ranges(rules.META_RULE_IDS)
    assert f"{queue} judge a queue, {meta} the audit itself" in PROSE
    configured = rules.id_ranges(rules.CONFIGURATION_RULE_IDS)
    behaviour = rules.id_ranges(rules.BEHAVIOUR_RULE_IDS)
    assert (
        f"{configured} judge a queue as configured. With observed CloudWatch metrics "
        f"(`--metrics`), {behaviour} judge it as it behaves"
    ) in PROSE
    groups = (rules.QUEUE_RULE_IDS, rules.CONFIGURATION_RULE_IDS, rules.BEHAVIOUR_RULE_IDS)
    named = {rules.id_ranges(ids) for ids in (*groups, rules.META_RULE_IDS)}
    assert set(RANGE.findall(PROSE)) <= named | PAGE_RANGES


def test_the_page_names_the_rules_the_default_profile_lowers() -> None:
    lowered = rules.id_ranges(profiles.departures(profiles.RECOMMENDED))
    assert f"reports {lowered} as info" in PROSE
