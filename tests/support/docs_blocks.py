"""Example files shown in Markdown pages as plain code blocks, readable wherever the page is.

A page shows an example file as a fenced block right after a marker naming the file::

    <!-- example: docs/examples/minimal_app.py -->
    ```python
    ...the file, byte for byte...
    ```

The marker is an HTML comment, invisible on the repository host and on the built site alike; the
block is ordinary Markdown, so the page reads the same with or without the site's extensions.
The tests hold every block equal to its file (``tests/test_docs_blocks.py``), and this module
rewrites the blocks after an example changes::

    python -m tests.support.docs_blocks README.md docs/*.md          # rewrite the blocks from the files
    python -m tests.support.docs_blocks --check README.md docs/*.md  # exit 1 if one differs
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(
    r"^<!-- example: (?P<path>\S+) -->\n```(?P<lang>\w+)\n(?P<body>.*?)^```$",
    flags=re.MULTILINE | re.DOTALL,
)
LANGUAGES = {".py": "python", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    language: str
    body: str


def blocks(markdown: str) -> list[Block]:
    return [Block(m["path"], m["lang"], m["body"]) for m in BLOCK.finditer(markdown)]


def render(path: str, root: Path = REPO_ROOT) -> str:
    """The marker and block that show the file at ``path``."""
    text = (root / path).read_text()
    if not text.endswith("\n"):
        text += "\n"
    language = LANGUAGES.get(Path(path).suffix, "text")
    return f"<!-- example: {path} -->\n```{language}\n{text}```"


def sync(markdown: str, root: Path = REPO_ROOT) -> str:
    """The page with every example block rewritten from its file."""
    return BLOCK.sub(lambda m: render(m["path"], root), markdown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.docs_blocks", description=__doc__
    )
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 on a diff")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    stale = []
    for page in args.pages:
        text = page.read_text()
        synced = sync(text, args.root)
        if synced != text:
            stale.append(str(page))
            if not args.check:
                page.write_text(synced)
    if stale:
        verb = "differ from their example files" if args.check else "rewritten"
        print(f"{', '.join(stale)}: {verb}", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
