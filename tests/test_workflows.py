"""The CI and release workflow definitions: what a fork runs when it pushes, and what a pushed
tag publishes, by trusted publishing only after every gate passed."""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"


def load(name: str) -> dict[str, Any]:
    workflow: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as the boolean true.
    workflow["on"] = workflow.pop(True, workflow.get("on"))
    return workflow


def commands(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def needed(job: dict[str, Any]) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def test_ci_runs_the_ci_script_on_pushes_and_pull_requests() -> None:
    ci = load("ci.yml")

    assert {"push", "pull_request"} <= set(ci["on"])
    assert [c for job in ci["jobs"].values() for c in commands(job)][-1] == "bash .ci/run"


def test_a_release_starts_from_a_version_tag() -> None:
    assert load("release.yml")["on"] == {"push": {"tags": ["v*"]}}


def test_publishing_follows_the_gates_and_make_release() -> None:
    release = load("release.yml")
    [publish] = [
        job
        for job in release["jobs"].values()
        if any("gh-action-pypi-publish" in step.get("uses", "") for step in job["steps"])
    ]

    [build_name] = needed(publish)
    build = commands(release["jobs"][build_name])
    assert "make test" in build
    assert "make release" in build
    assert build.index("make test") < build.index("make release")


def test_publishing_uses_a_trusted_publisher_and_no_stored_token() -> None:
    release = load("release.yml")
    [publish] = [
        job
        for job in release["jobs"].values()
        if any("gh-action-pypi-publish" in step.get("uses", "") for step in job["steps"])
    ]

    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"] == "pypi"
    assert "secrets." not in (WORKFLOWS / "release.yml").read_text()
    for step in publish["steps"]:
        assert not {"password", "user"} & set(step.get("with", {}))


def test_only_the_publishing_job_may_request_an_identity_token() -> None:
    for name in ("ci.yml", "release.yml"):
        workflow = load(name)
        assert workflow["permissions"] == {"contents": "read"}
        holders = [
            job_name
            for job_name, job in workflow["jobs"].items()
            if job.get("permissions", {}).get("id-token") == "write"
        ]
        assert holders == ([] if name == "ci.yml" else ["publish"])


def test_the_github_release_carries_the_notes_and_the_checksums() -> None:
    release = load("release.yml")
    [create] = [c for job in release["jobs"].values() for c in commands(job) if "gh release" in c]

    assert "--notes-file release/RELEASE_NOTES.md" in create
    assert "release/SHA256SUMS" in create
