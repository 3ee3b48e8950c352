"""The HTML report (``queue-audit --format html``): a page a person acts on.

Structure tests read the page with the standard library's HTML parser; one test looks at the page
in a real headless browser (Debian's chromium, which ``make test`` installs) and checks that the
screenshot is not blank and shows the severity colours."""

from __future__ import annotations

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
from constructs_lib.audit.engine import AuditResult
from constructs_lib.audit.model import FileRow, Finding

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


def test_deciding_findings_are_grouped_by_stack_then_queue(page: str) -> None:
    root = parse(page)
    (findings,) = [s for s in root.find_all("section") if s.attrs.get("id") == "findings"]
    layout: dict[str, dict[str, list[str]]] = {}
    for stack in findings.find_all("section", "stack"):
        heading = squash(stack.find_all("h3")[0].text())
        queue = ""
        for child in stack.children:
            if isinstance(child, Node) and child.tag == "h4":
                queue = squash(child.text())
            elif isinstance(child, Node) and child.tag == "ol":
                layout.setdefault(heading, {}).setdefault(queue, []).extend(
                    squash(li.find_all("p")[1].text()) for li in child.find_all("li", "finding")
                )
    # the unreadable file first: it hides every queue in it; then the worst, busiest stack
    assert list(layout) == [
        "Files that could not be read 1 error",
        "Stack Orders 2 errors, 2 warnings, 1 info",
        "Stack Billing 1 error, 1 info",
    ]
    assert layout["Files that could not be read 1 error"] == {
        "": ["could not read cdk.out/broken.template.json: line 3: bad JSON"]
    }
    assert layout["Stack Orders 2 errors, 2 warnings, 1 info"] == {
        # the most severe first within a queue
        "Queue OrdersQueue 2 errors, 1 warning": [
            "OrdersQueue has no dead-letter queue",
            "OrdersQueue is not encrypted",
            "no alarm on messages in flight",
        ],
        "Queue OrdersDlq 1 warning": ["no depth alarm on OrdersDlq"],
        "Not about one queue 1 info": ["FunctionName {Ref: FnName} not resolved"],
    }
    assert layout["Stack Billing 1 error, 1 info"] == {
        "Queue InvoiceQueue 1 error, 1 info": [
            "visibility 30 s below function timeout 60 s",
            "filter deletes unmatched messages",
        ]
    }


def test_each_finding_shows_message_fix_resource_template_and_rule(page: str) -> None:
    root = parse(page)
    item = next(li for li in root.find_all("li", "finding") if "no dead-letter queue" in li.text())
    text = squash(item.text())
    assert "error QR001 Queue without a dead-letter queue" in text
    assert f"Fix: {FIX['QR001']}" in text
    assert f"Resource OrdersQueue in {ORDERS}" in text
    assert [a.attrs["href"] for a in item.find_all("a")] == ["#qr001"]


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
        background, _ = report._HTML_SEVERITY_COLOURS[severity]
        assert re.search(rf"\.badge\.sev-{severity}\{{background:{background};", page)
    assert len({bg for bg, _ in report._HTML_SEVERITY_COLOURS.values()}) == 3


def _finding_states(root: Node) -> list[tuple[str, Node]]:
    return [(li.attrs["data-state"] or "", li) for li in root.find_all("li", "finding")]


def test_what_does_not_decide_is_folded_in_closed_details(page: str) -> None:
    root = parse(page)
    states = _finding_states(root)
    assert sorted(state for state, _ in states) == ["fixed", "new", "new", "new", "new", "new", "new", "new", "new", "suppressed", "unchanged"]  # fmt: skip
    for state, item in states:
        folds = [a for a in item.ancestors() if a.tag == "details"]
        if state in ("suppressed", "unchanged", "fixed"):
            assert folds, f"a {state} finding is in the open"
            assert all("open" not in d.attrs for d in folds), "folded findings start closed"
        else:
            assert not folds, "a finding that decides is folded away"
    suppressed = next(li for state, li in states if state == "suppressed")
    assert "private VPC endpoint only; ticket OPS-12" in suppressed.text()
    summaries = [squash(s.text()) for s in root.find_all("summary")]
    assert summaries == [
        "Suppressed: accepted with a reason (1)",
        "Unchanged: already in the baseline (1)",
        "Fixed since the baseline (1)",
    ]


def test_fixed_findings_have_their_own_folded_section(page: str) -> None:
    root = parse(page)
    (fixed,) = [d for d in root.find_all("details") if "Fixed" in d.find_all("summary")[0].text()]
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
        assert external == [f"https://example.org/constructs_lib/audit/#{rule.attrs['id']}"]
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
        url.startswith("https://example.org/docs/audit/#qr") for url in external
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
    assert "<script" not in page.lower() and "<img" not in page.lower() and "<b>" not in page
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
    assert not [s for s in root.find_all("section") if s.attrs.get("id") == "findings"]
    assert len(root.find_all("details")) == 2


def test_charts_colour_bars_by_severity_and_say_it_in_words(page: str) -> None:
    root = parse(page)
    (by_rule,) = [s for s in root.find_all("svg") if s.attrs["aria-label"] == "Findings by rule"]
    colours = {bg: severity for severity, (bg, _) in report._HTML_SEVERITY_COLOURS.items()}
    for rect in by_rule.find_all("rect"):
        severity = colours[rect.attrs["fill"] or ""]
        assert f": 1 {severity}" in rect.text()
    labels = [t.text() for t in by_rule.find_all("text")][1:]
    assert "QR001 (error)" in labels and "QR019 (info)" in labels and "QR009 (warning)" in labels
    assert "QR013 (warning)" not in labels  # suppressed: it does not decide


def test_report_rows_cut_the_list_and_say_how_many_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "REPORT_ROWS", 4)
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
    assert not root.find_all("table")
    assert max(len([a for a in n.ancestors() if a.tag in ("ol", "ul")]) for n in root.walk()) <= 1
    assert len(page) < 1200 * 1000


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
    colours: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        colours.update(zip(row[0::bpp], row[1::bpp], row[2::bpp], strict=True))
    return png, colours


def is_blank(colours: Counter[tuple[int, int, int]]) -> bool:
    """Under 1% of the pixels differ from white, or fewer than 8 colours: nothing to read."""
    total = colours.total()
    not_white = total - colours[(255, 255, 255)]
    return not_white < total // 100 or len(colours) < 8


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_screenshot_shows_the_report_and_its_severity_colours(tmp_path: Path) -> None:
    started = time.monotonic()
    png, colours = screenshot(report.render_html(fleet()), tmp_path, "report")
    assert not is_blank(colours), f"the report renders blank: {png}"
    for severity, (background, _) in report._HTML_SEVERITY_COLOURS.items():
        wanted = _hex(background)
        near = sum(
            n
            for colour, n in colours.items()
            if max(abs(a - b) for a, b in zip(colour, wanted, strict=True)) <= 3
        )
        # badges (some 60 x 18 pixels each), the borders of findings and of counts
        assert near >= 1000, f"{severity} ({background}) shows on {near} pixels only"
    # the same check on an empty page says blank: it can fail
    _, empty = screenshot("<!DOCTYPE html><html><body></body></html>", tmp_path, "empty")
    assert is_blank(empty)
    assert time.monotonic() - started < 60
