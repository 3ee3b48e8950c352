"""Build a release: the sdist and the wheel, their SHA-256 checksums, and the release notes.

``make release`` runs this. It writes into ``dist/``:

- ``constructs_lib-<version>.tar.gz`` and ``constructs_lib-<version>-py3-none-any.whl``;
- ``SHA256SUMS``: one ``<hex>  <file>`` line per archive (``sha256sum -c SHA256SUMS`` checks them);
- ``RELEASE_NOTES.md``: the CHANGELOG section of pyproject.toml's version.

It refuses, before building anything, when the version has no dated CHANGELOG section (the
entries are still under ``[Unreleased]``: cut the section first), when that section is empty,
and when the commit it runs on carries a ``v*`` tag other than ``v<version>`` (a tag and the
package would name different releases). docs/releases.md has the whole recipe.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

UNRELEASED = "Unreleased"
SUMS_FILE = "SHA256SUMS"
NOTES_FILE = "RELEASE_NOTES.md"
# A release heading in Keep a Changelog's form: "## [1.0.0] - 2026-11-27".
_HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?:\s+-\s+(?P<date>\d{4}-\d{2}-\d{2}))?\s*$")
# Link reference definitions ("[1.0.0]: https://...") end the last section.
_LINK_DEFINITION = re.compile(r"^\[[^\]]+\]:\s")


class ReleaseError(Exception):
    """A release that must not be built, with what to do instead."""


def project_version(pyproject: Path) -> str:
    """The ``[project] version`` of ``pyproject`` (the one place the version is written)."""
    version: str = tomllib.loads(pyproject.read_text())["project"]["version"]
    return version


def release_notes(changelog: str, version: str) -> str:
    """The body of ``version``'s section of ``changelog`` (Keep a Changelog), without its heading.

    Raises ReleaseError when the section is missing, undated, named Unreleased or empty.
    """
    if version == UNRELEASED:
        raise ReleaseError(
            f"version {version!r} is not a release: set [project] version in pyproject.toml "
            f"to the release's number (MAJOR.MINOR.PATCH)."
        )
    lines = changelog.splitlines()
    headings = [(i, _HEADING.match(line)) for i, line in enumerate(lines)]
    starts = [(i, m) for i, m in headings if m is not None]
    found = [(i, m) for i, m in starts if m["name"] == version]
    if not found:
        raise ReleaseError(
            f"CHANGELOG.md has no section for {version}: its entries are still under "
            f"[{UNRELEASED}]. Rename that heading to '## [{version}] - YYYY-MM-DD' and put a new "
            f"empty '## [{UNRELEASED}]' above it."
        )
    start, heading = found[0]
    if heading["date"] is None:
        raise ReleaseError(
            f"CHANGELOG.md's section for {version} has no release date: write its heading as "
            f"'## [{version}] - YYYY-MM-DD'."
        )
    end = next((i for i, _ in starts if i > start), len(lines))
    body = lines[start + 1 : end]
    while body and (not body[-1].strip() or _LINK_DEFINITION.match(body[-1])):
        body.pop()
    text = "\n".join(body).strip("\n")
    if not text.strip():
        raise ReleaseError(
            f"CHANGELOG.md's section for {version} is empty: a release says what changed."
        )
    return text + "\n"


def tags_at_head(repo: Path) -> list[str]:
    """The tags on the commit ``repo`` has checked out, and the tag a CI run was started for."""
    tags: set[str] = set()
    if os.environ.get("GITHUB_REF_TYPE") == "tag" and os.environ.get("GITHUB_REF_NAME"):
        tags.add(os.environ["GITHUB_REF_NAME"])
    completed = subprocess.run(
        ["git", "tag", "--points-at", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode == 0:
        tags.update(line.strip() for line in completed.stdout.splitlines() if line.strip())
    return sorted(tags)


def check_tags(tags: list[str], version: str) -> None:
    """Refuse a commit whose release tags (``v*``) name another version than ``version``."""
    expected = f"v{version}"
    others = [tag for tag in tags if tag.startswith("v") and tag != expected]
    if others:
        raise ReleaseError(
            f"this commit is tagged {', '.join(others)} but pyproject.toml's version is "
            f"{version} (tag {expected}): set the version to the tag's, or tag the commit that "
            f"has this version."
        )


def sha256sums(files: list[Path]) -> str:
    """``sha256sum``'s format: one ``<hex>  <name>`` line per file, sorted by name."""
    lines = []
    for path in sorted(files, key=lambda p: p.name):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.name}\n")
    return "".join(lines)


def build(repo: Path, dist: Path) -> list[Path]:
    """The sdist and the wheel of ``repo`` in ``dist``, built with the environment's hatchling
    (no download at release time); earlier archives in ``dist`` are removed first."""
    dist.mkdir(parents=True, exist_ok=True)
    for old in [*dist.glob("*.whl"), *dist.glob("*.tar.gz")]:
        old.unlink()
    uv = Path(sys.executable).parent / "uv"
    command = [str(uv), "build", "--sdist", "--wheel", "--no-build-isolation", "--quiet"]
    command += ["--python", sys.executable, "--out-dir", str(dist), str(repo)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise ReleaseError(f"the build failed ({' '.join(command)}):\n{completed.stderr}")
    return sorted([*dist.glob("*.whl"), *dist.glob("*.tar.gz")])


def release(repo: Path, dist: Path) -> list[Path]:
    """Check, then build ``repo``'s release into ``dist``; the files written."""
    version = project_version(repo / "pyproject.toml")
    notes = release_notes((repo / "CHANGELOG.md").read_text(), version)
    check_tags(tags_at_head(repo), version)
    archives = build(repo, dist)
    (dist / SUMS_FILE).write_text(sha256sums(archives))
    (dist / NOTES_FILE).write_text(f"## constructs-lib {version}\n\n{notes}")
    return [*archives, dist / SUMS_FILE, dist / NOTES_FILE]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repo", type=Path, default=Path.cwd(), help="Default: the current folder."
    )
    parser.add_argument("--dist", type=Path, default=None, help="Default: <repo>/dist.")
    args = parser.parse_args(argv)
    repo: Path = args.repo.resolve()
    try:
        written = release(repo, args.dist or repo / "dist")
    except ReleaseError as error:
        print(f"release: refused: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(path.relative_to(repo) if path.is_relative_to(repo) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
