"""Hand-made ledgers and findings for the report tests: every figure written here, none computed
by the code under test."""

from __future__ import annotations

from constructs_lib.audit.model import AuditResult, Finding, QueueLedger, uid

ACCOUNT, REGION = "111122223333", "eu-west-1"


def row(
    file: str,
    logical_id: str,
    unprocessed: float | None,
    cost: float | None,
    *,
    fifo: bool = False,
    estimated: bool = False,
    dead_lettered: float | None = None,
    expired: float | None = None,
    extra: float | None = None,
    empty: float | None = None,
    explained_by: tuple[str, ...] = (),
    stack: str = "",
) -> QueueLedger:
    """One queue's ledger; sent, deleted and received are made up around ``unprocessed``, and
    each figure the test does not name is None."""
    known = unprocessed is not None
    return QueueLedger(
        uid=uid(file, logical_id),
        file=file,
        stack=stack or file.split(".")[0],
        logical_id=logical_id,
        account=ACCOUNT,
        region=REGION,
        name=f"{logical_id.lower()}{'.fifo' if fifo else ''}",
        fifo=fifo,
        sent=1000.0 if known else None,
        deleted=900.0 if known else None,
        received=1100.0 if known else None,
        empty_receives=empty,
        backlog_change=0.0 if known else None,
        unprocessed=unprocessed,
        dead_lettered=dead_lettered,
        expired=expired,
        split_estimated=estimated,
        extra_deliveries=extra,
        empty_receive_cost=cost,
        explained_by=explained_by,
    )


def finding(
    rule: str, severity: str, template: str, queue: str, *, resource: str = "", **more: str
) -> Finding:
    return Finding(
        rule,
        severity,  # type: ignore[arg-type]
        template,
        template.split(".")[0],
        resource or queue,
        queue,
        f"{rule} on {queue}",
        "fix it",
        **more,  # type: ignore[arg-type]
    )


# Three queues in the ledger's rank: Lost (500 lost), Small (40 lost, split estimated, extra
# deliveries explained by QR030), Dark (no data point: every figure None, a FIFO queue).
LOST = row(
    "b.json",
    "Lost",
    500.0,
    0.5,
    dead_lettered=480.0,
    expired=20.0,
    extra=0.0,
    empty=1_250_000.0,
)
SMALL = row(
    "c.json",
    "Small",
    40.0,
    0.0016,
    estimated=True,
    dead_lettered=30.0,
    expired=10.0,
    extra=12.0,
    empty=4_000.0,
    explained_by=("QR030",),
)
DARK = row("d.json", "Dark", None, None, fifo=True)
LEDGERS = (LOST, SMALL, DARK)


def fleet(ledgers: tuple[QueueLedger, ...] = LEDGERS) -> AuditResult:
    """Findings on each ledger queue and on queues without one, out of order, with ``ledgers``
    and the metrics summary a --metrics run has."""
    findings = [
        finding("QR009", "warning", "d.json", "Dark"),
        finding("QR008", "warning", "c.json", "Small"),
        finding("QR001", "error", "a.json", "Plain"),
        finding("QR009", "warning", "b.json", "Lost"),
        finding("QR013", "info", "b.json", "Lost"),
        finding("QR009", "warning", "a.json", "Plain"),
    ]
    metrics = {"queues_with_metrics": 3, "queues_without_metrics": 1, "covered": []}
    return AuditResult(findings, [], queues=4, metrics=metrics, ledgers=ledgers)
