"""The ledger of a deployed fleet whose traffic was planted minute by minute (``ledger_fleet.py``),
on the local engine and on Spark (joining on the driver and on the executors, findings gathered
and streamed). Nothing is mocked: moto's CloudFormation holds the stacks the audit reads back,
its S3 the metric stream output. Every expected figure is added up here from the planted events,
never from the metrics or the code under test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from constructs_lib import limits
from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import deployed
from constructs_lib.audit.model import AuditResult, QueueLedger
from tests.audit.conftest import EngineAudit
from tests.audit.metrics import ledger_fleet as planted
from tests.support.moto_accounts import CALLER, EAST, Fleet, audit_as, start_server

pytest.importorskip("boto3")

TARGETS = deployed.targets([EAST], [])
WINDOW_DAYS = 1


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, str]]:
    process, port = start_server(tmp_path_factory.mktemp("ledger") / "moto.log")
    endpoint = f"http://127.0.0.1:{port}"
    try:
        planted.plant_stacks(endpoint)
        yield Fleet(endpoint, "observer", "observer"), planted.write_metrics(endpoint)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def observed(fleet: tuple[Fleet, str], monkeypatch: pytest.MonkeyPatch) -> str:
    server, metrics = fleet
    audit_as(server, monkeypatch)
    return metrics


def _metrics(read: Any) -> Any:
    from constructs_lib.audit.metrics import observations

    return observations.Metrics.of(read.series, read.coverage)


def _local(url: str) -> AuditResult:
    from constructs_lib.audit.metrics.aggregate import read_and_aggregate

    return engine.audit_files([], deployed=TARGETS, metrics=_metrics(read_and_aggregate(url, 1)))


Figures = dict[str, Any]


def _source(queue: planted.Queue, dead_lettered: float, estimated: bool) -> Figures:
    sent, deleted, received = queue.total("s"), queue.total("d"), queue.total("r")
    lost = queue.total("x") + queue.total("e")  # what the planted traffic lost
    fifo = queue.name.endswith(".fifo")
    price = limits.SQS_FIFO_REQUEST_USD if fifo else limits.SQS_STANDARD_REQUEST_USD
    return {
        "fifo": fifo,
        "sent": sent,
        "deleted": deleted,
        "received": received,
        "empty_receives": queue.total("z"),
        "backlog_change": queue.change(),
        "unprocessed": lost,
        "dead_lettered": dead_lettered,
        "expired": lost - dead_lettered,
        "split_estimated": estimated,
        "extra_deliveries": received - deleted - dead_lettered,
        "empty_receive_cost": pytest.approx(queue.total("z") * price),
        "explained_by": ("QR030",) if queue is planted.SLOW else (),
        "dead_letter_sources": 0,
    }


def _dead_letter_queue(dlq: planted.DeadLetterQueue) -> Figures:
    return {
        "fifo": False,
        "sent": dlq.total("s"),
        "deleted": dlq.total("d"),
        "received": dlq.total("r"),
        "empty_receives": dlq.total("z"),
        "backlog_change": dlq.change(),
        "unprocessed": None,  # what arrives by redrive is in none of its metrics
        "dead_lettered": 0.0,  # no redrive policy of its own
        "expired": None,
        "split_estimated": False,
        "extra_deliveries": 0.0,  # its consumer deletes what it receives
        "empty_receive_cost": pytest.approx(dlq.total("z") * limits.SQS_STANDARD_REQUEST_USD),
        "explained_by": (),
        "dead_letter_sources": len(dlq.sources),
    }


def expected() -> dict[str, Figures]:
    """Each observed queue's ledger, by name, from the planted events."""
    a, b = planted.SHARED_A, planted.SHARED_B
    lost_a, lost_b = a.total("x") + a.total("e"), b.total("x") + b.total("e")
    arrived = a.total("x") + b.total("x")  # into the shared DLQ, shared in proportion
    return {
        # its own DLQ, empty at the window's first reading, 14 d >= 1 d + 4 d: exact
        "orders": _source(planted.ORDERS, planted.ORDERS.total("x"), estimated=False),
        # its DLQ published nothing: none taken to have arrived, an estimate
        "billing.fifo": _source(planted.BILLING, 0.0, estimated=True),
        "slow": _source(planted.SLOW, 0.0, estimated=True),
        "shared-a": _source(a, arrived * lost_a / (lost_a + lost_b), estimated=True),
        "shared-b": _source(b, arrived * lost_b / (lost_a + lost_b), estimated=True),
        "orders-dlq": _dead_letter_queue(planted.ORDERS_DLQ),
        "shared-dlq": _dead_letter_queue(planted.SHARED_DLQ),
    }


def _figures(row: QueueLedger) -> Figures:
    return {name: getattr(row, name) for name in expected()["orders"]}


def test_the_planted_traffic_is_what_the_test_says() -> None:
    # the window cuts orders mid-backlog, and every queue lost something the ledger must find
    first = planted.ORDERS.events[planted.WINDOW_FIRST]
    assert first["V"] > 100 and planted.ORDERS.events[-1]["V"] < first["V"]
    assert all(q.total("x") + q.total("e") > 0 for q in planted.QUEUES)
    assert planted.SLOW.total("u") > 0 and planted.BILLING.total("x") == 0


def test_the_local_engine_gives_the_planted_ledger(observed: str) -> None:
    result = _local(observed)
    by_name = {row.name: row for row in result.ledgers}
    want = expected()
    assert sorted(by_name) == sorted(want)  # quiet and the silent DLQs have no data point
    for name, figures in want.items():
        row = by_name[name]
        assert _figures(row) == figures, name
        assert (row.stack, row.logical_id) == planted.PLACES[name]
        assert (row.account, row.region) == (CALLER, EAST)
    assert by_name["orders"].dead_letter_queue == by_name["orders-dlq"].uid
    assert by_name["shared-b"].dead_letter_queue == by_name["shared-dlq"].uid


def test_the_ledger_is_ranked_by_loss_then_money(observed: str) -> None:
    want = expected()

    def rank(name: str) -> tuple[Any, ...]:
        lost, cost = want[name]["unprocessed"], want[name]["empty_receive_cost"].expected
        return (lost is None, -(lost or 0), -cost)

    # the planted losses and costs have no ties, so uids never decide here
    order = sorted(want, key=rank)
    assert len({rank(name) for name in order}) == len(order)
    assert [row.name for row in _local(observed).ledgers] == order


@pytest.mark.spark
@pytest.mark.parametrize("gather", [True, False], ids=["gathered", "streamed"])
def test_spark_gives_the_local_ledger(
    observed: str,
    spark: Any,
    spark_joining: EngineAudit,
    fleet: tuple[Fleet, str],
    gather: bool,
) -> None:
    from constructs_lib.audit.engines.spark import metrics as spark_metrics
    from constructs_lib.audit.engines.spark import streaming

    environment = spark.sparkContext.environment
    saved = dict(environment)
    environment.update(fleet[0].env)
    try:
        read = spark_metrics.read_and_aggregate(spark, observed, WINDOW_DAYS)
        inputs = AuditInputs([], TARGETS, _metrics(read))
        on_spark = spark_joining(inputs, AuditOptions(gather=gather))
        streaming.release(on_spark)
    finally:
        environment.clear()
        environment.update(saved)
    assert on_spark.ledgers == _local(observed).ledgers
    by_name = {row.name: row for row in on_spark.ledgers}
    assert {name: _figures(row) for name, row in by_name.items()} == expected()
