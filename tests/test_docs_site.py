"""The documentation site builds strictly, shows every page of its nav, and shows the tested
example files exactly as they are."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import constructs_lib
from constructs_lib.audit.report.html.page import RULES_PAGE
from constructs_lib.audit.rules.catalog import describe_rules
from tests.conftest import REPO_ROOT, SynthResult
from tests.support.docs_blocks import blocks

DOCS = REPO_ROOT / "docs"
EXAMPLES = sorted((DOCS / "examples").glob("*.py"))


def nav_pages(nav: list[Any]) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += nav_pages(value)
        elif isinstance(value, str) and value.endswith(".md"):
            pages.append(value)
    return pages


def built_page(site: Path, page: str) -> Path:
    """Where mkdocs writes a page with directory URLs (its default)."""
    stem = page.removesuffix(".md")
    if stem == "index" or stem.endswith("/index"):
        return site / f"{stem}.html"
    return site / stem / "index.html"


def page_text(path: Path) -> str:
    """The page's text as a reader sees it: tags (including highlighting) removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    return loaded


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=REPO_ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return site_dir


def test_every_nav_page_is_built(site: Path, config: dict[str, Any]) -> None:
    pages = nav_pages(config["nav"])
    assert "index.md" in pages
    for page in pages:
        built = built_page(site, page)
        assert built.is_file(), f"{page} was not built"
        assert "<h1" in built.read_text(), f"{page} has no title"


def test_every_page_is_in_the_nav(config: dict[str, Any]) -> None:
    pages = set(nav_pages(config["nav"]))
    on_disk = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert on_disk - pages == set(), "pages missing from mkdocs.yml nav"


def test_api_reference_documents_the_public_api(site: Path) -> None:
    api = built_page(site, "api.md").read_text()
    for name in constructs_lib.__all__:
        assert f'id="constructs_lib.{name}"' in api, name
    # Generated from the docstrings, not written by hand: the consumer method and its props.
    assert 'id="constructs_lib.ResilientQueue.add_lambda_consumer"' in api
    assert "visibility_timeout_factor" in page_text(built_page(site, "api.md"))


def test_every_example_appears_in_a_page() -> None:
    shown = {block.path for page in DOCS.rglob("*.md") for block in blocks(page.read_text())}
    missing = {e.relative_to(REPO_ROOT).as_posix() for e in EXAMPLES} - shown
    assert missing == set()


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")))
def test_python_in_pages_comes_from_files(page: str, site: Path) -> None:
    """Every Python block is an example file's block, and the built page shows that file line
    by line (the blocks' equality with the files: tests/test_docs_blocks.py)."""
    source = (DOCS / page).read_text()
    python = re.findall(r"^```python\n", source, flags=re.MULTILINE)
    examples = [block for block in blocks(source) if block.language == "python"]
    assert len(examples) == len(python), f"{page}: a Python block without an example marker"
    shown = page_text(built_page(site, page))
    for block in examples:
        for line in (REPO_ROOT / block.path).read_text().splitlines():
            assert line.strip() in shown, f"{page}: {block.path} line not shown: {line!r}"


def synth_resources(synthesized: SynthResult) -> dict[str, dict[str, Any]]:
    assert synthesized.returncode == 0, synthesized.output
    template = json.loads((synthesized.outdir / "Orders.template.json").read_text())
    resources: dict[str, dict[str, Any]] = template["Resources"]
    return resources


def test_migration_example_keeps_queues_policies_and_mapping(
    docs_example: Callable[[str], SynthResult],
) -> None:
    before = synth_resources(docs_example("migration_raw_before"))
    after = synth_resources(docs_example("migration_raw_after"))
    kept = {"AWS::SQS::Queue", "AWS::SQS::QueuePolicy", "AWS::Lambda::EventSourceMapping"}
    old = {logical_id: r for logical_id, r in before.items() if r["Type"] in kept}
    assert len(old) == 5
    for logical_id, resource in old.items():
        assert logical_id in after, f"{logical_id} would be replaced"
        assert after[logical_id]["Type"] == resource["Type"]
        if resource["Type"] == "AWS::SQS::Queue":
            name = resource["Properties"]["QueueName"]
            assert after[logical_id]["Properties"]["QueueName"] == name


def test_every_rule_has_its_anchor_where_the_html_report_links(site: Path) -> None:
    # queue-audit --docs-url URL links each rule to URL/<RULES_PAGE>#<id in lower case>
    rules_page = (site / RULES_PAGE / "index.html").read_text()
    for rule_id, _severity, _title, _fix in describe_rules():
        assert f'id="{rule_id.lower()}"' in rules_page, rule_id


def test_every_link_between_pages_reaches_its_page_and_anchor(site: Path) -> None:
    ids = {
        page.resolve(): set(re.findall(r'id="([^"]+)"', page.read_text()))
        for page in site.rglob("*.html")
    }
    broken = []
    for page in site.rglob("*.html"):
        for href in re.findall(r'href="([^"#:]*)#([^"]+)"', page.read_text()):
            path, anchor = html.unescape(href[0]), html.unescape(href[1])
            target = (page.parent / path).resolve() if path else page.resolve()
            if target.is_dir():
                target = target / "index.html"
            if anchor not in ids.get(target, set()):
                broken.append(f"{page.relative_to(site)}: {path}#{anchor}")
    assert broken == []
