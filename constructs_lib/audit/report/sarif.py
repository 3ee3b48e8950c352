"""The SARIF 2.1.0 report (what GitHub code scanning reads), and the fingerprints that match a
finding from one run to the next (Code Quality uses them too)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.report import ledger
from constructs_lib.audit.report.json import indented
from constructs_lib.audit.report.summary import ordered, summarize

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
# The partialFingerprints key code scanning matches results by across runs. Namespaced so it
# cannot pose as a value GitHub computes itself; bump the version only if the hash changes
# (doing so reopens every existing alert once).
SARIF_FINGERPRINT_KEY = "queueAuditFinding/v1"


def _driver_rules(catalog: Sequence[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
    """The rule catalog as the tool's ``rules``: a result points at its rule by index."""
    return [
        {
            "id": rule_id,
            "name": title.title().replace(" ", "").replace("-", ""),
            "shortDescription": {"text": title},
            "help": {"text": fix},
            "defaultConfiguration": {"level": _SARIF_LEVEL[severity]},
        }
        for rule_id, severity, title, fix in catalog
    ]


def _document(result: AuditResult, catalog: Sequence[tuple[str, str, str, str]]) -> dict[str, Any]:
    """The SARIF document with every part but its results (an empty list)."""
    document: dict[str, Any] = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "queue-audit",
                        "informationUri": "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html",
                        "rules": _driver_rules(catalog),
                    }
                },
                # Columns count characters (code points), as Python and PyYAML count them;
                # SARIF's other choice, UTF-16 code units, differs after a character beyond
                # U+FFFF on the same line.
                "columnKind": "unicodeCodePoints",
                "results": [],
            }
        ],
    }
    summary = summarize(result)
    properties: dict[str, Any] = {}
    if summary["baseline"] is not None:
        # the fixed findings are counted, not listed: a result would open an alert for each
        properties["baseline"] = summary["baseline"]
    if result.metrics is not None or result.ledgers:
        # the run's property bag (SARIF 2.1.0, 3.8) holds the ledger in the JSON report's shape
        properties["ledger"] = ledger.as_dicts(result.ledgers)
        properties["ledgerTotals"] = ledger.totals(result.ledgers)
    if properties:
        document["runs"][0]["properties"] = properties
    return document


def _queue_figures(result: AuditResult) -> dict[str, dict[str, float]]:
    """Queue uid -> what a result on that queue carries of its ledger: the messages it left
    unprocessed and what its empty receives cost, each when known."""
    figures: dict[str, dict[str, float]] = {}
    for row in result.ledgers:
        known = {
            key: value
            for key, value in (
                ("queueUnprocessed", row.unprocessed),
                ("queueEmptyReceiveCost", row.empty_receive_cost),
            )
            if value is not None
        }
        if known:
            figures[row.uid] = known
    return figures


def _result(
    finding: Finding, fingerprint: str, rule_index: int, figures: dict[str, float] | None = None
) -> dict[str, Any]:
    """One finding as a SARIF result: where it is, its suppression and baseline state, and
    ``figures`` of its queue's ledger (``_queue_figures``) when known."""
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri(finding.template)}}
    if finding.line:  # code scanning annotates a pull request only where a result has a line
        physical["region"] = {"startLine": finding.line, "startColumn": finding.column or 1}
    location: dict[str, Any] = {"physicalLocation": physical}
    if finding.resource or finding.physical:
        # a deployed resource's fully qualified name is its ARN
        location["logicalLocations"] = [
            {
                "name": finding.resource or finding.physical,
                "fullyQualifiedName": finding.physical or f"{finding.stack}/{finding.resource}",
                "kind": "resource",
            }
        ]
    entry: dict[str, Any] = {
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[finding.severity],
        "message": {"text": f"{finding.message}. Fix: {finding.fix}"},
        "locations": [location],
        "partialFingerprints": {SARIF_FINGERPRINT_KEY: fingerprint},
    }
    if finding.suppression:
        entry["suppressions"] = [
            {
                "kind": finding.suppression,
                "status": "accepted",
                "justification": finding.justification,
            }
        ]
    if finding.baseline:
        entry["baselineState"] = finding.baseline
    deployed = {
        key: value
        for key, value in (
            ("account", finding.account),
            ("region", finding.region),
            ("physical", finding.physical),
            ("constructPath", finding.construct_path),
        )
        if value
    }
    # where a deployed resource lives, or the construct a CDK app wrote it from, and what its
    # queue lost and spent: code scanning shows a result's properties beside the alert
    if deployed or figures:
        entry["properties"] = {**deployed, **(figures or {})}
    return entry


def stream_sarif(result: AuditResult) -> Iterator[str]:
    """The SARIF report in pieces, one result at a time (``render_sarif`` joins them)."""
    catalog = rules.describe_rules()
    index = {rule_id: i for i, (rule_id, *_rest) in enumerate(catalog)}
    # Everything but the results, then the results one at a time, then what closes them.
    head, tail = json.dumps(_document(result, catalog), indent=2).split('"results": []')
    yield head + '"results": ['
    figures = _queue_figures(result)
    for i, (finding, fingerprint) in enumerate(fingerprinted(result)):
        queue = ledger.queue_uid(finding) if figures else ""
        entry = _result(finding, fingerprint, index[finding.rule_id], figures.get(queue))
        yield ("," if i else "") + "\n        " + indented(entry, 8)
    yield "\n      ]" + tail + "\n"


def render_sarif(result: AuditResult) -> str:
    return "".join(stream_sarif(result))


def fingerprinted(result: AuditResult) -> Iterator[tuple[Finding, str]]:
    """Each finding in report order with a fingerprint that survives runs and rewording.

    Findings that share rule, template, stack, resource and queue differ only by message and
    come next to each other in report order: they are numbered (``:1``, ``:2``...), so that code
    scanning and GitLab, which keep one issue per fingerprint, keep each of them."""
    previous, occurrence = "", 0
    for finding in ordered(result):
        fingerprint = _identity(finding)
        occurrence = occurrence + 1 if fingerprint == previous else 1
        previous = fingerprint
        yield finding, f"{fingerprint}:{occurrence}"


def _identity(finding: Finding) -> str:
    """What identifies a finding from one run to the next: not the message or the fix, whose
    wording (and the values they quote) may change while the problem stays the same."""
    digest = hashlib.sha256()
    for part in (
        finding.rule_id,
        uri(finding.template),
        finding.stack,
        finding.resource,
        finding.queue,
    ):
        # a file name that is not UTF-8 holds lone surrogates: hash them rather than fail
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()


def uri(path: str) -> str:
    """A relative URI (what code-scanning UIs resolve against the repository root)."""
    return path.replace("\\", "/").removeprefix("./")
