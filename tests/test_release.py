"""`make release` (scripts/release.py): the release notes taken from the CHANGELOG, the releases
it refuses, and one real build whose wheel and checksums are checked."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.scripts import load_script

release = load_script(REPO_ROOT / "scripts" / "release.py")
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]

CHANGELOG = """# Changelog

## [Unreleased]

### Added
- Something not released yet.

## [1.1.0] - 2026-12-01

### Added
- The second thing.

### Fixed
- The first thing's bug.

## [1.0.0] - 2026-11-27

### Added
- The first thing.

[1.1.0]: https://example.org/compare/v1.0.0...v1.1.0
[1.0.0]: https://example.org/releases/v1.0.0
"""


def test_the_notes_are_the_versions_section_without_its_heading() -> None:
    notes = release.release_notes(CHANGELOG, "1.1.0")

    assert notes == "### Added\n- The second thing.\n\n### Fixed\n- The first thing's bug.\n"


def test_the_last_sections_notes_stop_at_the_link_definitions() -> None:
    assert release.release_notes(CHANGELOG, "1.0.0") == "### Added\n- The first thing.\n"


def test_the_projects_version_has_its_own_dated_section() -> None:
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()

    notes = release.release_notes(changelog, VERSION)

    assert notes.strip()
    assert "## [" not in notes
    heading = next(line for line in changelog.splitlines() if line.startswith(f"## [{VERSION}]"))
    assert changelog.index(notes.splitlines()[0]) > changelog.index(heading)


@pytest.mark.parametrize(
    ("changelog", "version", "expected"),
    [
        pytest.param(
            CHANGELOG,
            "1.2.0",
            "no section for 1.2.0: its entries are still under "
            r"\[Unreleased\]",
            id="only-unreleased",
        ),
        pytest.param(CHANGELOG, "Unreleased", "'Unreleased' is not a release", id="unreleased"),
        pytest.param("## [1.2.0]\n\n- x\n", "1.2.0", "has no release date", id="undated"),
        pytest.param(
            "## [1.2.0] - 2026-12-02\n\n## [1.1.0] - 2026-12-01\n- x\n",
            "1.2.0",
            "section for 1.2.0 is empty",
            id="empty",
        ),
    ],
)
def test_fails_a_version_without_a_cut_changelog_section(
    changelog: str, version: str, expected: str
) -> None:
    with pytest.raises(release.ReleaseError, match=expected):
        release.release_notes(changelog, version)


def test_fails_a_commit_tagged_for_another_version() -> None:
    with pytest.raises(release.ReleaseError, match=r"tagged v1\.0\.1 .* version is 1\.1\.0"):
        release.check_tags(["v1.1.0", "v1.0.1"], "1.1.0")


@pytest.mark.parametrize("tags", [[], ["v1.1.0"], ["latest", "v1.1.0"], ["deploy-prod"]])
def test_a_commit_untagged_or_tagged_for_its_version_passes(tags: list[str]) -> None:
    release.check_tags(tags, "1.1.0")


def test_fails_before_building_when_ci_runs_for_another_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_REF_TYPE", "tag")
    monkeypatch.setenv("GITHUB_REF_NAME", "v0.9.9")

    with pytest.raises(release.ReleaseError, match=f"tagged v0.9.9 .* version is {VERSION}"):
        release.release(REPO_ROOT, tmp_path)

    assert list(tmp_path.iterdir()) == []


def test_the_command_says_why_it_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.2.0"\n')
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)

    completed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "release.py"), "--repo", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert completed.returncode == 1
    assert "release: refused: CHANGELOG.md has no section for 1.2.0" in completed.stderr
    assert not (tmp_path / "dist").exists()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    release.release(REPO_ROOT, dist)
    return dist


def test_the_release_holds_the_wheel_and_sdist_of_the_version(built: Path) -> None:
    names = sorted(p.name for p in built.iterdir() if p.suffix in {".whl", ".gz"})

    assert names == [
        f"constructs_lib-{VERSION}-py3-none-any.whl",
        f"constructs_lib-{VERSION}.tar.gz",
    ]
    with zipfile.ZipFile(built / names[0]) as wheel:
        metadata = wheel.read(f"constructs_lib-{VERSION}.dist-info/METADATA").decode()
    assert Parser().parsestr(metadata)["Version"] == VERSION


def test_the_checksums_match_the_archives(built: Path) -> None:
    lines = (built / release.SUMS_FILE).read_text().splitlines()
    listed = dict(reversed(line.split("  ", 1)) for line in lines)

    archives = sorted(p.name for p in built.iterdir() if p.suffix in {".whl", ".gz"})
    assert sorted(listed) == archives
    for name, digest in listed.items():
        assert hashlib.sha256((built / name).read_bytes()).hexdigest() == digest
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", release.SUMS_FILE],
        cwd=built,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_release_notes_are_the_changelog_section(built: Path) -> None:
    notes = (built / release.NOTES_FILE).read_text()
    section = release.release_notes((REPO_ROOT / "CHANGELOG.md").read_text(), VERSION)

    assert notes == f"## constructs-lib {VERSION}\n\n{section}"
