"""The HTML report (``queue-audit --format html``): a page a person acts on.

Structure tests read the page with the standard library's HTML parser; one test looks at the page
in a real headless browser (Debian's chromium, which ``make test`` installs) and checks that the
screenshot is not blank and shows the severity colours."""

from __future__ import annotations

import dataclasses
import re
import struct
import subprocess
import tempfile
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from constructs_lib.audit import report, rules
from constructs_lib.audit.model import AuditResult, FileRow, Finding
from constructs_lib.audit.report.html.findings import SEVERITY_COLOURS

CHROMIUM = "/usr/bin/chromium"
VOID = frozenset(
    "area base br col embed hr img input link meta source track wbr".split()  # noqa: SIM905
)

# ---------------------------------------------------------------------------------------------
# A small DOM from html.parser: enough to ask where an element sits.


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    parent: Node | None = None
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> list[Node]:
        found = [self]
        for child in self.children:
            if isinstance(child, Node):
                found += child.walk()
        return found

    def find_all(self, tag: str, css: str = "") -> list[Node]:
        return [
            n
            for n in self.walk()
            if n.tag == tag and (not css or css in (n.attrs.get("class") or "").split())
        ]

    def ancestors(self) -> list[Node]:
        found, node = [], self.parent
        while node is not None:
            found.append(node)
            node = node.parent
        return found


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root
        self.doctype = ""
        self.mismatched: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if self.current.tag != tag:
            self.mismatched.append(f"</{tag}> closes <{self.current.tag}>")
            return
        assert self.current.parent is not None
        self.current = self.current.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.doctype.lower() == "doctype html"
    assert not builder.mismatched, builder.mismatched
    assert builder.current is builder.root, f"<{builder.current.tag}> never closed"
    return builder.root


def squash(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Results to render.

SEVERITY = {rule_id: severity for rule_id, severity, _, _ in rules.describe_rules()}
FIX = {rule_id: fix for rule_id, _, _, fix in rules.describe_rules()}


def finding(
    rule_id: str,
    template: str,
    stack: str,
    resource: str,
    queue: str,
    message: str,
    *,
    suppression: str = "",
    justification: str = "",
    baseline: str = "",
) -> Finding:
    return Finding(
        rule_id,
        SEVERITY[rule_id],
        template,
        stack,
        resource,
        queue,
        message,
        FIX[rule_id],
        suppression=suppression,
        justification=justification,
        baseline=baseline,
    )


ORDERS = "cdk.out/Orders.template.json"
BILLING = "cdk.out/Billing.template.json"
BROKEN = "cdk.out/broken.template.json"


def fleet(*, baseline: bool = True) -> AuditResult:
    """Two stacks, several findings of each severity, one suppressed, one known from the
    baseline, one fixed since, and a file that could not be read."""
    new = "new" if baseline else ""
    findings = [
        finding("QR001", ORDERS, "Orders", "OrdersQueue", "OrdersQueue", "OrdersQueue has no dead-letter queue", baseline=new),
        finding("QR012", ORDERS, "Orders", "OrdersQueue", "OrdersQueue", "OrdersQueue is not encrypted", baseline=new),
        finding("QR009", ORDERS, "Orders", "OrdersQueue", "OrdersQueue", "no alarm on messages in flight", baseline=new),
        finding("QR010", ORDERS, "Orders", "OrdersDlq", "OrdersDlq", "no depth alarm on OrdersDlq", baseline=new),
        finding("QR900", ORDERS, "Orders", "Mapping", "", "FunctionName {Ref: FnName} not resolved", baseline=new),
        finding("QR006", BILLING, "Billing", "InvoiceMapping", "InvoiceQueue", "visibility 30 s below function timeout 60 s", baseline=new),
        finding("QR019", BILLING, "Billing", "InvoiceMapping", "InvoiceQueue", "filter deletes unmatched messages", baseline=new),
        finding("QR013", BILLING, "Billing", "InvoiceQueue", "InvoiceQueue", "InvoiceQueue accepts plain HTTP", suppression="inSource", justification="private VPC endpoint only; ticket OPS-12", baseline=new),
        finding("QR025", BILLING, "Billing", "InvoiceQueue", "InvoiceQueue", "no alarm on the oldest message age", baseline="unchanged" if baseline else ""),
        finding("QR901", BROKEN, "", "", "", "could not read cdk.out/broken.template.json: line 3: bad JSON", baseline=new),
    ]  # fmt: skip
    files = [
        FileRow(ORDERS, "Orders", "ok", "", 6),
        FileRow(BILLING, "Billing", "ok", "", 4),
        FileRow(BROKEN, "", "unparseable", "bad JSON", 0),
        FileRow("cdk.out/Clean.template.json", "Clean", "ok", "", 2),
    ]
    fixed = [
        finding("QR023", BILLING, "Billing", "InvoicePolicy", "InvoiceQueue", "InvoiceQueue's policy allows anyone", baseline="absent")
    ]  # fmt: skip
    return AuditResult(findings, files, queues=4, fixed=fixed if baseline else None)


@pytest.fixture
def page() -> str:
    return report.render_html(fleet())


# ---------------------------------------------------------------------------------------------
# Structure.


def test_page_is_html5_with_language_and_charset(page: str) -> None:
    root = parse(page)
    (html_element,) = root.find_all("html")
    assert html_element.attrs["lang"] == "en"
    assert [m.attrs.get("charset") for m in root.find_all("meta") if "charset" in m.attrs] == [
        "utf-8"
    ]
    assert root.find_all("title")[0].text().startswith("Queue audit")


def own_text(node: Node) -> str:
    """The text directly in ``node``, not in its child elements: a finding's message."""
    return squash("".join(c for c in node.children if isinstance(c, str)))


def _stacks(section: Node) -> list[Node]:
    """The <details> directly in ``section``: one per stack."""
    return [c for c in section.children if isinstance(c, Node) and c.tag == "details"]


def _section(root: Node, name: str) -> Node:
    (found,) = [s for s in root.find_all("section") if s.attrs.get("id") == name]
    return found


def test_deciding_findings_are_grouped_by_stack_then_queue(page: str) -> None:
    root = parse(page)
    layout: dict[str, dict[str, list[str]]] = {}
    for stack in _stacks(_section(root, "findings")):
        heading = squash(stack.find_all("summary")[0].text())
        queue = ""
        for child in stack.children:
            if isinstance(child, Node) and child.tag == "h4":
                queue = squash(child.text())
            elif isinstance(child, Node) and child.tag == "ol":
                layout.setdefault(heading, {}).setdefault(queue, []).extend(
                    own_text(li) for li in child.find_all("li", "finding")
                )
    # the unreadable file first: it hides every queue in it; then the worst, busiest stack; each
    # stack's summary line names its template
    assert list(layout) == [
        "Files that could not be read 1 error",
        f"Stack Orders 2 errors, 2 warnings, 1 info {ORDERS}",
        f"Stack Billing 1 error, 1 info {BILLING}",
    ]
    assert layout["Files that could not be read 1 error"] == {
        "": ["could not read cdk.out/broken.template.json: line 3: bad JSON"]
    }
    assert layout[f"Stack Orders 2 errors, 2 warnings, 1 info {ORDERS}"] == {
        # the most severe first within a queue
        "Queue OrdersQueue 2 errors, 1 warning": [
            "OrdersQueue has no dead-letter queue",
            "OrdersQueue is not encrypted",
            "no alarm on messages in flight",
        ],
        "Queue OrdersDlq 1 warning": ["no depth alarm on OrdersDlq"],
        "Not about one queue 1 info": ["FunctionName {Ref: FnName} not resolved"],
    }
    assert layout[f"Stack Billing 1 error, 1 info {BILLING}"] == {
        "Queue InvoiceQueue 1 error, 1 info": [
            "visibility 30 s below function timeout 60 s",
            "filter deletes unmatched messages",
        ]
    }


def test_stacks_of_the_same_name_in_two_templates_stay_apart() -> None:
    findings = [
        finding("QR009", "prod/app.template.json", "App", "Q", "Q", "no alarm in prod"),
        finding("QR009", "test/app.template.json", "App", "Q", "Q", "no alarm in test"),
    ]
    root = parse(report.render_html(AuditResult(findings, [], queues=2)))
    summaries = [
        squash(d.find_all("summary")[0].text()) for d in _stacks(_section(root, "findings"))
    ]
    assert summaries == [
        "Stack App 1 warning prod/app.template.json",
        "Stack App 1 warning test/app.template.json",
    ]


def test_each_finding_shows_severity_rule_message_and_resource(page: str) -> None:
    root = parse(page)
    item = next(li for li in root.find_all("li", "finding") if "no dead-letter queue" in li.text())
    assert squash(item.text()) == "error QR001 OrdersQueue has no dead-letter queue"
    assert [a.attrs["href"] for a in item.find_all("a")] == ["#qr001"]
    # the fix is the rule's: once, where the rule id links to, not on each of a fleet's findings
    (rule,) = [d for d in root.find_all("div", "rule") if d.attrs["id"] == "qr001"]
    assert f"Fix: {FIX['QR001']}" in squash(rule.text())
    assert "Fix:" not in item.text()
    # a resource other than the queue it is listed under is named
    mapping = next(li for li in root.find_all("li", "finding") if "30 s below" in li.text())
    assert squash(mapping.find_all("p", "where")[0].text()) == "Resource InvoiceMapping"


def test_a_fix_worded_otherwise_than_its_rule_is_shown_on_the_finding() -> None:
    old = dataclasses.replace(
        finding("QR001", ORDERS, "Orders", "Q", "Q", "no DLQ", baseline="absent"),
        fix="add a dead-letter queue (as the baseline worded it)",
    )
    result = AuditResult([], [FileRow(ORDERS, "Orders", "ok", "", 1)], 1, fixed=[old])
    (item,) = parse(report.render_html(result)).find_all("li", "finding")
    assert "Fix: add a dead-letter queue (as the baseline worded it)" in squash(item.text())


def test_severity_is_said_in_words_with_a_distinct_colour_each(page: str) -> None:
    root = parse(page)
    badges = root.find_all("span", "badge")
    by_severity = {
        b.text(): (b.attrs["class"] or "")
        for b in badges
        if "state" not in (b.attrs["class"] or "")
    }
    assert set(by_severity) == {"error", "warning", "info"}
    assert len(set(by_severity.values())) == 3
    for severity, css in by_severity.items():
        assert f"sev-{severity}" in css.split()
        background, _ = SEVERITY_COLOURS[severity]
        assert re.search(rf"\.badge\.sev-{severity}\{{background:{background};", page)
    assert len({bg for bg, _ in SEVERITY_COLOURS.values()}) == 3


def _finding_states(root: Node) -> list[tuple[str, Node]]:
    return [(li.attrs["data-state"] or "", li) for li in root.find_all("li", "finding")]


def test_every_finding_is_folded_in_closed_details(page: str) -> None:
    root = parse(page)
    states = _finding_states(root)
    assert sorted(state for state, _ in states) == ["fixed", "new", "new", "new", "new", "new", "new", "new", "new", "suppressed", "unchanged"]  # fmt: skip
    for state, item in states:
        folds = [a for a in item.ancestors() if a.tag == "details"]
        assert all("open" not in d.attrs for d in folds), "folded findings start closed"
        sections = [a.attrs.get("id") for a in item.ancestors() if a.tag == "section"]
        if state in ("suppressed", "unchanged", "fixed"):
            # in the "not deciding" fold, then in its stack's
            assert len(folds) == 2 and sections == ["not-deciding"], state
        else:
            # a finding that decides is folded in its stack only, until the stack is opened
            assert len(folds) == 1 and sections == ["findings"], state
    suppressed = next(li for state, li in states if state == "suppressed")
    assert "private VPC endpoint only; ticket OPS-12" in suppressed.text()
    summaries = [squash(s.text()) for s in root.find_all("summary") if "fold" in (s.parent.attrs.get("class") or "")]  # type: ignore[union-attr]  # fmt: skip
    assert summaries == [
        "Suppressed: accepted with a reason (1)",
        "Unchanged: already in the baseline (1)",
        "Fixed since the baseline (1)",
    ]


def test_fixed_findings_have_their_own_folded_section(page: str) -> None:
    root = parse(page)
    (fixed,) = [d for d in root.find_all("details", "fold") if "Fixed" in d.find_all("summary")[0].text()]  # fmt: skip
    assert "InvoiceQueue's policy allows anyone" in fixed.text()
    assert "Stack Billing" in squash(fixed.text())
    without_baseline = parse(report.render_html(fleet(baseline=False)))
    assert not any("Fixed" in s.text() for s in without_baseline.find_all("summary"))
    assert not [li for li in without_baseline.find_all("li") if li.attrs.get("data-count") == "new"]


def _counts(root: Node) -> dict[str, int]:
    return {
        li.attrs["data-count"] or "": int(li.find_all("strong")[0].text().replace(",", ""))
        for li in root.find_all("li")
        if "data-count" in li.attrs
    }


def test_counts_at_the_top_equal_the_summary(page: str) -> None:
    result = fleet()
    summary = report.summarize(result)
    root = parse(page)
    counts = _counts(root)
    assert counts == {
        **summary["by_severity"],
        "suppressed": summary["suppressed"],
        **summary["baseline"],
        "files_read": summary["files_read"],
        "files_clean": summary["files_clean"],
        "files_with_findings": summary["files_with_findings"],
        "files_unparseable": summary["files_unparseable"],
        "files_not_templates": summary["files_not_templates"],
        "queues": summary["queues"],
    }
    assert counts["error"] == 4 and counts["warning"] == 2 and counts["info"] == 2
    assert (counts["new"], counts["unchanged"], counts["fixed"]) == (8, 1, 1)
    # at the top: before the first finding
    assert page.index('data-count="files_unparseable"') < page.index('class="finding')
    verdict = root.find_all("p", "verdict")[0]
    assert squash(verdict.text()) == "Act on 8 findings: 4 errors, 2 warnings, 2 info."
    assert "sev-error" in (verdict.attrs["class"] or "")


def test_every_rule_named_has_a_section_and_every_link_resolves(page: str) -> None:
    root = parse(page)
    ids = [n.attrs["id"] for n in root.walk() if "id" in n.attrs]
    assert len(ids) == len(set(ids)), "ids are unique"
    (rules_section,) = [s for s in root.find_all("section") if s.attrs.get("id") == "rules"]
    named = {f.rule_id for f in fleet().findings} | {"QR023"}  # QR023: the fixed one
    sections = {d.attrs["id"]: d for d in rules_section.find_all("div", "rule")}
    assert set(sections) == {r.lower() for r in named}
    for rule_id, severity, title, fix in rules.describe_rules():
        if rule_id in named:
            text = squash(sections[rule_id.lower()].text())
            assert text.startswith(f"{rule_id} {severity} {title}")
            assert f"Fix: {fix}" in text
    links = [a.attrs["href"] or "" for a in root.find_all("a")]
    assert links and all(link.startswith("#") for link in links), "no docs_url: local links only"
    assert {link[1:] for link in links} <= set(ids)
    assert {"#qr001", "#qr901", "#qr023"} <= set(links)


def test_docs_url_links_each_rule_to_its_section_of_the_docs() -> None:
    root = parse(report.render_html(fleet(), docs_url="https://example.org/constructs_lib/"))
    for rule in root.find_all("div", "rule"):
        external = [a.attrs["href"] for a in rule.find_all("a")]
        assert external == [f"https://example.org/constructs_lib/audit/rules/#{rule.attrs['id']}"]
    outside = [
        a.attrs["href"] or ""
        for a in root.find_all("a")
        if not any(p.tag == "div" and "rule" in (p.attrs.get("class") or "") for p in a.ancestors())
    ]
    assert all(href.startswith("#") for href in outside)


def test_page_is_self_contained() -> None:
    page = report.render_html(fleet(), docs_url="https://example.org/docs")
    lower = page.lower()
    assert "<script" not in lower and "<link" not in lower and "@import" not in lower
    assert "src=" not in lower
    assert not re.search(r"url\(", lower)
    external = re.findall(r"""href\s*=\s*["']?(https?:[^"'\s>]*)""", page)
    assert external and all(
        url.startswith("https://example.org/docs/audit/rules/#qr") for url in external
    )
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", report.render_html(fleet()))
    assert len(parse(page).find_all("style")) == 1


def test_odd_names_and_messages_are_escaped() -> None:
    evil = 'a/<script>alert("x")</script> & "q".json'
    findings = [
        Finding("QR001", "error", evil, "<b>Stack</b>", "Q<1>", "Q<1>", "<script>m</script>", "f & g"),
        Finding("QR901", "error", "x'\"><img src=x>.json", "", "", "", "bad <img src=x>", "fix"),
    ]  # fmt: skip
    page = report.render_html(
        AuditResult(findings, [FileRow(evil, "<b>Stack</b>", "ok", "", 1)], 1)
    )
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "<b>Stack" not in page
    root = parse(page)
    text = squash(root.text())
    assert evil in text and "<script>m</script>" in text and "Queue Q<1>" in text
    assert "Stack <b>Stack</b>" in text and "bad <img src=x>" in text


def test_no_findings_says_so_in_visible_text() -> None:
    clean = AuditResult([], [FileRow("a.template.json", "A", "ok", "", 2)], queues=2)
    root = parse(report.render_html(clean))
    verdict = squash(root.find_all("p", "verdict")[0].text())
    assert verdict == "No findings: 1 template read, every queue passes every rule."
    assert _counts(root)["files_clean"] == 1
    assert not root.find_all("li", "finding") and not root.find_all("svg")
    nothing_read = parse(report.render_html(AuditResult([], [], queues=0)))
    assert "no template was read" in nothing_read.find_all("p", "verdict")[0].text()


def test_only_non_deciding_findings_say_there_is_nothing_to_act_on() -> None:
    quiet = [f for f in fleet().findings if not f.decides]
    root = parse(report.render_html(AuditResult(quiet, [], queues=1, fixed=[])))
    verdict = squash(root.find_all("p", "verdict")[0].text())
    assert verdict.startswith("Nothing to act on")
    assert not [s for s in root.find_all("section") if s.attrs.get("id") in ("findings", "fleet")]
    assert len(root.find_all("details", "fold")) == 2


def _table(root: Node, css: str) -> list[list[str]]:
    (table,) = root.find_all("table", css)
    return [[squash(cell.text()) for cell in row.children if isinstance(cell, Node)] for row in table.find_all("tr")]  # fmt: skip


def test_the_fleet_view_leads_the_page(page: str) -> None:
    # before any finding: the counts, then the fleet view, then the stacks
    assert (
        page.index('data-count="queues"') < page.index('id="fleet"') < page.index('id="findings"')
    )
    fleet_view = _section(parse(page), "fleet")
    assert [squash(p.text()) for p in fleet_view.find_all("p", "lead")] == [
        "3 of 4 queues (75%) in 3 stacks have findings to act on.",
        "One fix clears the most: QR001 (Queue without a dead-letter queue), 1 of the 4 errors "
        "(25%) in 1 stack.",
    ]


def test_the_fleet_view_counts_each_rule_across_the_fleet(page: str) -> None:
    rows = _table(parse(page), "rules")
    assert rows[0] == [
        "Rule", "Severity", "Queues affected", "Share of queues", "Stacks", "Findings",
        "Fixing it alone leaves clean",
    ]  # fmt: skip
    # the deciding findings of fleet(), by hand: OrdersQueue has QR001, QR012 and QR009,
    # OrdersDlq QR010 alone, InvoiceQueue QR006 and QR019 (its QR013 is suppressed, its QR025
    # known); the QR900 names no queue, the QR901 is a file. Errors first, then by queues.
    assert rows[1:] == [
        ["QR001 Queue without a dead-letter queue", "error", "1", "25%", "1", "1", "-"],
        ["QR006 Visibility timeout below the consumer function timeout", "error", "1", "25%", "1", "1", "-"],
        ["QR012 Queue unencrypted", "error", "1", "25%", "1", "1", "-"],
        ["QR901 Template that could not be read or parsed", "error", "-", "-", "1", "1", "1 stack"],
        ["QR009 No in-flight alarm on the source queue", "warning", "1", "25%", "1", "1", "-"],
        ["QR010 No depth alarm on the dead-letter queue", "warning", "1", "25%", "1", "1", "1 queue"],
        ["QR019 Event source filter deletes unmatched messages", "info", "1", "25%", "1", "1", "-"],
        ["QR900 Reference the audit could not resolve", "info", "-", "-", "1", "1", "-"],
    ]  # fmt: skip
    counted = {row[0].split()[0]: int(row[5]) for row in rows[1:]}
    assert counted == report.summarize(fleet())["by_rule"], "the fleet view counts what decides"


def test_the_fleet_view_colours_each_rule_by_severity(page: str) -> None:
    root = parse(page)
    (table,) = root.find_all("table", "rules")
    colours = {bg: severity for severity, (bg, _) in SEVERITY_COLOURS.items()}
    for row in table.find_all("tbody")[0].find_all("tr"):
        severity = squash(row.find_all("td")[1].text())
        assert f"sev-{severity}" in (row.attrs["class"] or "").split()
        bars = row.find_all("svg")
        if bars:  # the share bar: filled in the severity's colour
            assert colours[bars[0].find_all("rect")[1].attrs["fill"] or ""] == severity


def test_the_worst_stacks_lead_and_link_to_their_folded_findings(page: str) -> None:
    root = parse(page)
    assert _table(root, "stacks") == [
        ["Stack", "Errors", "Warnings", "Info", "Queues", "Rules"],
        [f"Orders {ORDERS}", "2", "2", "1", "2", "QR001 QR009 QR010 QR012 QR900"],
        [f"Billing {BILLING}", "1", "0", "1", "1", "QR006 QR019"],
        [f"(could not be read) {BROKEN}", "1", "0", "0", "0", "QR901"],
    ]
    (table,) = root.find_all("table", "stacks")
    targets = {n.attrs["id"]: n for n in root.walk() if "id" in n.attrs}
    for link, stack in zip(table.find_all("a"), ("Stack Orders", "Stack Billing", "Files that could not be read"), strict=True):  # fmt: skip
        details = targets[(link.attrs["href"] or "")[1:]]
        assert details.tag == "details" and "open" not in details.attrs
        assert squash(details.find_all("summary")[0].text()).startswith(stack)


def test_the_worst_stacks_are_a_few_and_the_rest_are_counted() -> None:
    findings = [
        finding("QR009", f"app{i:02}.template.json", f"App{i:02}", "Q", "Q", "no alarm")
        for i in range(report.fleet.WORST_STACKS + 5)
    ] + [finding("QR001", "app07.template.json", "App07", "Q", "Q", "no DLQ")]
    root = parse(report.render_html(AuditResult(findings, [], queues=20)))
    fleet_view = _section(root, "fleet")
    assert f"Worst stacks ({report.fleet.WORST_STACKS} of 15)" in squash(fleet_view.text())
    names = [row[0].split()[0] for row in _table(root, "stacks")[1:]]
    # the one with an error first, then the rest in report order
    assert names == ["App07", *[f"App{i:02}" for i in range(report.fleet.WORST_STACKS) if i != 7]]
    # only the linked stacks carry an id; all 15 are on the page
    assert len(_stacks(_section(root, "findings"))) == 15
    assert len([n for n in root.walk() if (n.attrs.get("id") or "").startswith("stack-")]) == 10


LONG = "VeryLongGeneratedName" * 12  # 252 characters, no space to break at


def test_names_wrap_anywhere() -> None:
    # every element a name of the fleet sits in breaks it anywhere rather than overflow
    page = report.render_html(long_named())
    style = parse(page).find_all("style")[0].text()
    wrapping = {
        selector
        for rule in re.findall(r"([^{}]+)\{([^}]*)\}", style)
        if "overflow-wrap:anywhere" in rule[1]
        for selector in rule[0].replace("\n", "").split(",")
    }
    assert {"code", "summary", "h4", "td", ".finding", ".lead"} <= wrapping
    root = parse(page)
    for node in root.walk():
        own = "".join(c for c in node.children if isinstance(c, str))
        if LONG[:40] in own:
            holders = {node.tag, *(a.tag for a in node.ancestors())}
            classes = {c for n in (node, *node.ancestors()) for c in (n.attrs.get("class") or "").split()}  # fmt: skip
            assert holders & {"code", "summary", "h4", "td"} or classes & {"finding", "lead"}, (
                node.tag
            )


def long_named() -> AuditResult:
    template = f"services/{LONG}/cdk.out/{LONG}.template.json"
    findings = [
        finding("QR009", template, LONG, LONG, LONG, f"{LONG} has no alarm on messages in flight"),
        finding("QR013", template, LONG, LONG, LONG, f"{LONG} accepts plain HTTP"),
    ]
    return AuditResult(findings, [FileRow(template, LONG, "ok", "", 2)], queues=1)


def ten_thousand_templates() -> AuditResult:
    """A fleet of 10,000 templates as an audit finds it, built directly: 3 in 4 templates with
    one to three findings on two queues, 1 in 40 unreadable, names as long as real ones."""
    catalog = [r for r in rules.describe_rules() if r[0] not in ("QR900", "QR901", "QR902")]
    findings: list[Finding] = []
    files: list[FileRow] = []
    for i in range(10_000):
        team, app = f"team-{i % 37:02}", f"orders-service-{i:05}"
        template = f"services/{team}/{app}/cdk.out/{app}-pipeline-prod.template.json"
        stack = f"{app}-pipeline-prod"
        if i % 40 == 39:
            files.append(FileRow(template, stack, "unparseable", "bad JSON", 0))
            findings.append(finding("QR901", template, stack, "", "", f"could not read {template}: invalid JSON: Unterminated string starting at: line 127 column 5 (char 2318)"))  # fmt: skip
            continue
        files.append(FileRow(template, stack, "ok", "", 9))
        for n in range((i % 4) and (i % 3) + 1):
            rule_id = catalog[(i * 7 + n * 11) % len(catalog)][0]
            queue = ("OrdersSourceQueueF2A5B1C3", "OrdersDeadLetterQueue8D9E0F12")[n % 2]
            message = f"{queue}: VisibilityTimeout 30 s is below 6 x the consumer's Timeout 10 s + MaximumBatchingWindowInSeconds 0 s = 60 s ({rule_id})"  # fmt: skip
            findings.append(finding(rule_id, template, stack, queue, queue, message))
    return AuditResult(findings, files, queues=20_000)


def test_ten_thousand_templates_stay_under_five_megabytes() -> None:
    result = ten_thousand_templates()
    assert len(result.files) == 10_000 and len(result.findings) > report.summary.REPORT_ROWS
    page = report.render_html(result)
    size = len(page.encode("utf-8"))
    assert size < 5_000_000, f"{size:,} bytes"
    root = parse(page)
    # the fleet view is whole (every rule, counted over every finding, listed or not) ...
    counted = {row[0].split()[0]: int(row[5].replace(",", "")) for row in _table(root, "rules")[1:]}
    assert counted == report.summarize(result)["by_rule"]
    assert len(_table(root, "stacks")) == 1 + report.fleet.WORST_STACKS
    # ... the stacks are folded, and the list stops at REPORT_ROWS findings
    stacks = _stacks(_section(root, "findings"))
    assert stacks and all("open" not in d.attrs for d in stacks)
    assert len(root.find_all("li", "finding")) == report.summary.REPORT_ROWS
    assert f"and {len(result.findings) - report.summary.REPORT_ROWS:,} more findings" in page


def test_report_rows_cut_the_list_and_say_how_many_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report.summary, "REPORT_ROWS", 4)
    result = fleet()
    page = report.render_html(result)
    assert "... and 6 more findings" in page
    assert len(parse(page).find_all("li", "finding")) == 4 + 1  # the first four, and the fixed one
    counts = _counts(parse(page))
    assert counts["error"] == 4, "the counts are the whole run's, not the listed rows'"


def test_one_argument_renderers_still_render_html() -> None:
    result = fleet()
    assert report.RENDERERS["html"](result) == report.render_html(result)
    assert "".join(report.STREAMS["html"](result)) == report.render_html(result)


def test_a_thousand_findings_stay_a_flat_list() -> None:
    many = [
        finding("QR009", f"t{i % 40}.json", f"Stack{i % 40}", f"Q{i}", f"Q{i}", f"message {i}")
        for i in range(1000)
    ]
    page = report.render_html(AuditResult(many, [], queues=1000))
    root = parse(page)
    assert len(root.find_all("li", "finding")) == 1000
    assert not [li for li in root.find_all("li", "finding") if any(a.tag == "table" for a in li.ancestors())]  # fmt: skip
    assert max(len([a for a in n.ancestors() if a.tag in ("ol", "ul")]) for n in root.walk()) <= 1
    assert len(page) < 400 * 1000


# ---------------------------------------------------------------------------------------------
# In a real browser.


def _png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, rows) of an 8-bit RGB or RGBA non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and not interlace, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def screenshot(page: str, tmp_path: Path, name: str) -> tuple[Path, Counter[tuple[int, int, int]]]:
    """Renders ``page`` in headless chromium; returns the PNG and its colours, pixel counts."""
    png, bpp, rows = render(page, tmp_path, name)
    colours: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        colours.update(zip(row[0::bpp], row[1::bpp], row[2::bpp], strict=True))
    return png, colours


def render(page: str, tmp_path: Path, name: str) -> tuple[Path, int, list[bytes]]:
    """Renders ``page`` in headless chromium, 1200 x 1800 pixels; returns the PNG, its bytes per
    pixel and its rows of pixels."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium package")
    source = tmp_path / f"{name}.html"
    source.write_text(page, encoding="utf-8")
    png = tmp_path / f"{name}.png"
    with tempfile.TemporaryDirectory() as profile:
        run = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                # pixels in sRGB as the style sheet writes them, whatever the machine's profile
                "--force-color-profile=srgb",
                f"--user-data-dir={profile}",
                "--window-size=1200,1800",
                f"--screenshot={png}",
                source.as_uri(),
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert run.returncode == 0 and png.exists(), run.stderr.decode(errors="replace")[-2000:]
    width, height, bpp, rows = _png_pixels(png.read_bytes())
    assert (width, height) == (1200, 1800)
    return png, bpp, rows


def is_blank(colours: Counter[tuple[int, int, int]]) -> bool:
    """Under 1% of the pixels differ from white, or fewer than 8 colours: nothing to read."""
    total = colours.total()
    not_white = total - colours[(255, 255, 255)]
    return not_white < total // 100 or len(colours) < 8


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _near(colours: Counter[tuple[int, int, int]], colour: str) -> int:
    """How many pixels are within 3 of ``colour`` in every channel."""
    wanted = _hex(colour)
    return sum(
        n
        for found, n in colours.items()
        if max(abs(a - b) for a, b in zip(found, wanted, strict=True)) <= 3
    )


def test_screenshot_shows_the_fleet_view_and_its_severity_colours(tmp_path: Path) -> None:
    started = time.monotonic()
    page = report.render_html(fleet())
    png, bpp, rows = render(page, tmp_path, "report")
    colours: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        colours.update(zip(row[0::bpp], row[1::bpp], row[2::bpp], strict=True))
    assert not is_blank(colours), f"the report renders blank: {png}"
    # The page cut after its fleet view, and cut before it: the fleet view shows every
    # severity's colour (its rule badges, some 60 x 18 pixels each, its rows' borders, its
    # share bars) ...
    start = page.index('<section id="fleet">')
    end = page.index("</section>", start) + len("</section>")
    close = "\n</main></body></html>\n"
    _, head_bpp, head = render(page[:end] + close, tmp_path, "head")
    _, before = screenshot(page[:start] + close, tmp_path, "before-fleet")
    head_colours: Counter[tuple[int, int, int]] = Counter()
    for row in head:
        head_colours.update(zip(row[0::head_bpp], row[1::head_bpp], row[2::head_bpp], strict=True))
    for severity, (background, _) in SEVERITY_COLOURS.items():
        added = _near(head_colours, background) - _near(before, background)
        assert added >= 1000, f"the fleet view shows {severity} ({background}) on {added} pixels"
    # ... and it is what the report's first screen shows, pixel for pixel, down to its end
    last = max(y for y, row in enumerate(head) if row.strip(b"\xff"))
    assert 600 < last < 1800, f"the fleet view ends at y={last}: {png}"
    assert rows[: last + 1] == head[: last + 1], f"the first screen is not the fleet view: {png}"
    # the same check on an empty page says blank: it can fail
    _, empty = screenshot("<!DOCTYPE html><html><body></body></html>", tmp_path, "empty")
    assert is_blank(empty)
    assert time.monotonic() - started < 90


def test_long_names_wrap_inside_the_page_in_a_browser(tmp_path: Path) -> None:
    # names of 250 characters without a space, in the fleet view's tables, a stack's summary,
    # a queue's heading and a message: nothing crosses the page's right margin (24 pixels
    # outside a 1152-pixel column at 1200 pixels)
    png, bpp, rows = render(report.render_html(long_named()), tmp_path, "long-names")
    margin = [row[1180 * bpp :] for row in rows]
    inked = [y for y, pixels in enumerate(margin) if pixels.strip(b"\xff")]
    assert not inked, f"ink in the right margin on {len(inked)} rows, first at y={inked[0]}: {png}"
    # and the margin check can fail: the same page with wrapping turned off
    unwrapped = report.render_html(long_named()).replace(
        "overflow-wrap:anywhere", "overflow-wrap:normal"
    )
    _, bpp, rows = render(unwrapped, tmp_path, "long-names-unwrapped")
    assert any(row[1180 * bpp :].strip(b"\xff") for row in rows)
