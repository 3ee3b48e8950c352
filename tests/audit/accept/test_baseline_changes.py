"""A baseline records each finding's values: a known finding whose values moved is "changed",
and CI can fail on it (``--fail-on-changed``). On both engines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.accept import baseline
from tests.audit.accept.test_suppressions import audit, usage_error
from tests.audit.conftest import Template, healthy, props, write


def slow_consumer(visibility: int) -> Template:
    """The healthy pipeline with the source's visibility timeout below 6 x the 10 s function
    timeout and above it: QR007 (warning), whose message states ``visibility``."""
    template = healthy("orders")
    props(template, "Source")["VisibilityTimeout"] = visibility
    return template


def qr007(document: dict[str, Any]) -> dict[str, Any]:
    [finding] = [f for f in document["findings"] if f["rule_id"] == "QR007"]
    return finding


def write_baseline(tmp_path: Path, visibility: int) -> Path:
    base = tmp_path / "baseline.json"
    code, _ = audit(
        "local",
        [write(tmp_path, "a.json", slow_consumer(visibility))],
        "--write-baseline",
        str(base),
        out=tmp_path,
    )
    assert code == 0  # a warning, below --fail-on error
    return base


def test_a_known_finding_with_other_values_is_changed_and_can_fail_the_run(
    engine_name: str, tmp_path: Path
) -> None:
    base = write_baseline(tmp_path, 30)
    template = write(tmp_path, "a.json", slow_consumer(20))
    options = ["--baseline", str(base), "--fail-on", "warning"]

    code, document = audit(engine_name, [template], *options, out=tmp_path)
    finding = qr007(document)
    assert "visibility timeout 20 s" in finding["message"]
    assert finding["baseline"] == "updated"  # SARIF's word; people read "changed"
    assert document["summary"]["baseline"]["changed"] == 1
    assert document["summary"]["changed_by_severity"] == {"error": 0, "warning": 1, "info": 0}
    assert code == 0  # a changed finding does not decide unless asked

    code, _ = audit(engine_name, [template], *options, "--fail-on-changed", out=tmp_path)
    assert code == 1


@pytest.mark.parametrize(
    ("visibility", "state"),
    [
        pytest.param(29, "updated", id="just-below"),
        pytest.param(30, "unchanged", id="at"),
        pytest.param(31, "updated", id="just-above"),
    ],
)
def test_only_a_moved_value_is_a_change(tmp_path: Path, visibility: int, state: str) -> None:
    base = write_baseline(tmp_path, 30)
    _, document = audit(
        "local",
        [write(tmp_path, "a.json", slow_consumer(visibility))],
        "--baseline",
        str(base),
        out=tmp_path,
    )
    assert qr007(document)["baseline"] == state


def test_a_version_1_baseline_still_loads_and_changes_nothing(tmp_path: Path) -> None:
    base = write_baseline(tmp_path, 30)
    document = json.loads(base.read_text())
    assert document["version"] == 2
    assert all(entry["values"] for entry in document["findings"])
    document["version"] = 1
    for entry in document["findings"]:
        del entry["values"]
    base.write_text(json.dumps(document))

    code, report = audit(
        "local",
        [write(tmp_path, "a.json", slow_consumer(20))],
        "--baseline",
        str(base),
        "--fail-on-changed",
        "--fail-on",
        "warning",
        out=tmp_path,
    )
    assert qr007(report)["baseline"] == "unchanged"  # its values are unknown
    assert code == 0


def test_a_version_2_entry_without_values_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_baseline(tmp_path, 30)
    document = json.loads(base.read_text())
    del document["findings"][0]["values"]
    base.write_text(json.dumps(document))
    template = write(tmp_path, "a.json", slow_consumer(20))
    error = usage_error([str(template), "--engine", "local", "--baseline", str(base)], capsys)
    assert "finding 1, has no values text" in error


def test_fail_on_changed_needs_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write(tmp_path, "a.json", slow_consumer(20))
    error = usage_error([str(template), "--engine", "local", "--fail-on-changed"], capsys)
    assert "--fail-on-changed compares with a baseline" in error


@pytest.mark.parametrize(
    ("message", "values"),
    [
        pytest.param(
            "queue a/orders has visibility timeout 20 s, below the 60 s recommended for this "
            "consumer (6 x 10 s function timeout + 0 s batching window)",
            "20 60 6 10 0",
            id="qr007",
        ),
        pytest.param(
            "queue orders-2 (Queue1A2B) keeps 345600 s.", "345600", id="names-are-not-values"
        ),
        pytest.param(
            "factor 5.5 of v1.2, 10,000 in flight", "5.5 10 000", id="decimals-and-groups"
        ),
        pytest.param("no numbers here", "", id="none"),
    ],
)
def test_values_are_the_numbers_a_message_states(message: str, values: str) -> None:
    assert baseline.values_of(message) == values
