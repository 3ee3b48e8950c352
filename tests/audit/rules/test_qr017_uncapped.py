"""QR017 counts an SQS source without MaximumConcurrency: Lambda scales it up to 1,250
concurrent invocations (Lambda guide, services-sqs-scaling), so a function that reserves less
is throttled and throttled receives move healthy messages to the DLQ. The templates are the
healthy pipeline with a reservation on its function; expectations come from that number."""

from __future__ import annotations

from pathlib import Path

import pytest

from constructs_lib import limits
from constructs_lib.audit.engines import local as engine
from tests.audit.conftest import healthy, props, variant, write


def qr017(tmp_path: Path, reserved: int, cap: int | None = None) -> list[str]:
    template = variant(healthy("orders"))
    props(template, "Fn")["ReservedConcurrentExecutions"] = reserved
    if cap is not None:
        props(template, "Esm")["ScalingConfig"] = {"MaximumConcurrency": cap}
    path = write(tmp_path, "orders.template.json", template)
    findings = engine.audit_paths([str(path)]).findings
    return [f.message for f in findings if f.rule_id == "QR017"]


def test_the_on_demand_limit_is_lambdas() -> None:
    assert limits.SQS_ON_DEMAND_MAX_CONCURRENCY == 1_250


@pytest.mark.parametrize(
    ("reserved", "warned"),
    [
        pytest.param(1_249, True, id="1249"),
        pytest.param(1_250, False, id="1250"),
        pytest.param(1_251, False, id="1251"),
    ],
)
def test_an_uncapped_source_counts_as_the_on_demand_limit(
    tmp_path: Path, reserved: int, warned: bool
) -> None:
    assert bool(qr017(tmp_path, reserved)) is warned


def test_a_small_reservation_fed_by_an_uncapped_queue_is_named_with_the_fix(
    tmp_path: Path,
) -> None:
    [message] = qr017(tmp_path, reserved=5)
    assert "ReservedConcurrentExecutions 5, which is below the 1250 concurrent invocations" in (
        message
    )
    assert "up to 1250 (no maximum concurrency)" in message
    assert "throttled receives can move healthy messages to the dead-letter queue" in message


@pytest.mark.parametrize(
    ("cap", "warned"),
    [
        pytest.param(4, False, id="cap-4"),
        pytest.param(5, False, id="cap-5"),
        pytest.param(6, True, id="cap-6"),
    ],
)
def test_a_capped_source_is_judged_by_its_cap(tmp_path: Path, cap: int, warned: bool) -> None:
    assert bool(qr017(tmp_path, reserved=5, cap=cap)) is warned


def test_an_uncapped_and_a_capped_source_add_up(tmp_path: Path) -> None:
    template = variant(healthy("orders"))
    props(template, "Fn")["ReservedConcurrentExecutions"] = 1_259
    second = variant(healthy("refunds"))
    second["Resources"]["Esm"]["Properties"]["ScalingConfig"] = {"MaximumConcurrency": 10}
    second["Resources"].pop("Fn")
    # the refunds queue feeds the same function, by its name
    props(template, "Fn")["FunctionName"] = "orders-worker"
    second["Resources"]["Esm"]["Properties"]["FunctionName"] = "orders-worker"
    write(tmp_path, "orders.template.json", template)
    write(tmp_path, "refunds.template.json", second)
    findings = engine.audit_paths([str(tmp_path)]).findings
    [message] = [f.message for f in findings if f.rule_id == "QR017"]
    assert "below the 1260 concurrent invocations" in message
