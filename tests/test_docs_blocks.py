"""Pages show example files as plain Markdown code blocks, byte for byte what the tests run, so
they read the same on the repository host (which renders no include syntax) as on the site."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support import docs_blocks

PAGES = sorted([REPO_ROOT / "README.md", *(REPO_ROOT / "docs").rglob("*.md")])
IDS = [page.relative_to(REPO_ROOT).as_posix() for page in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_no_page_uses_an_include_the_repository_host_cannot_render(page: Path) -> None:
    # a `--8<--` line is rendered by the site's snippets extension only: elsewhere the block
    # shows that line instead of the code
    offending = [line for line in page.read_text().splitlines() if line.startswith("--8<--")]
    assert offending == []


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_every_example_block_is_its_file_byte_for_byte(page: Path) -> None:
    for block in docs_blocks.blocks(page.read_text()):
        source = (REPO_ROOT / block.path).read_text()
        assert block.body == source, f"{page.name}: the block of {block.path} differs from it"


def test_readme_shows_the_minimal_app() -> None:
    shown = {block.path for block in docs_blocks.blocks((REPO_ROOT / "README.md").read_text())}
    assert "docs/examples/minimal_app.py" in shown


def test_a_changed_example_is_caught_and_rewritten(tmp_path: Path) -> None:
    # GIVEN a page whose block shows an older version of its file
    (tmp_path / "x.py").write_text("print('new')\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n<!-- example: x.py -->\n```python\nprint('old')\n```\n\nEnd.\n")
    stale = page.read_text()
    # THEN the check sees it, and sync rewrites only the block
    assert docs_blocks.blocks(stale)[0].body == "print('old')\n"
    synced = docs_blocks.sync(stale, root=tmp_path)
    assert synced == "# Page\n\n<!-- example: x.py -->\n```python\nprint('new')\n```\n\nEnd.\n"
    assert docs_blocks.sync(synced, root=tmp_path) == synced


def test_check_command_exits_1_on_a_stale_page(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("print('new')\n")
    page = tmp_path / "page.md"
    page.write_text("<!-- example: x.py -->\n```python\nprint('old')\n```\n")
    root = ["--root", str(tmp_path)]
    assert docs_blocks.main(["--check", *root, str(page)]) == 1
    assert "print('old')" in page.read_text()  # --check changes nothing
    assert docs_blocks.main([*root, str(page)]) == 0
    assert "print('new')" in page.read_text()
