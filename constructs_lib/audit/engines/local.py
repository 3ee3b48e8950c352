"""The local engine: parse -> resolve -> evaluate -> accept in one process, without Spark.

The same steps as the Spark engine (``spark/``), with dictionaries in place of joins, behind the
same entry point (``audit(inputs, options)``, ``request.py``); both judge with ``judging.py``.
The in-app validation plugin uses it on an app's own templates, the
benchmark compares it with the Spark engine, and the tests hold the two to identical findings.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence

from constructs_lib.audit import model
from constructs_lib.audit.accept.apply import NONE as NO_ACCEPTANCE
from constructs_lib.audit.accept.apply import Acceptance
from constructs_lib.audit.accept.apply import apply as accept
from constructs_lib.audit.engines.judging import (
    judge_group,
    template_findings,
    unresolved_edge_finding,
)
from constructs_lib.audit.engines.request import AuditInputs, AuditOptions
from constructs_lib.audit.inputs import deployed as deployed_stacks
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.metrics import ledger, observations
from constructs_lib.audit.model import AuditResult, Finding
from constructs_lib.audit.parse import isolation
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.report import datasets
from constructs_lib.audit.report.words import plural
from constructs_lib.audit.resolve import nesting
from constructs_lib.audit.resolve.graph import contexts, resolve
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits


def audit_parsed(
    parsed: list[model.ParsedTemplate], metrics: observations.Metrics | None = None
) -> AuditResult:
    """Resolve and evaluate templates already parsed; with ``metrics``, each queue's context
    also holds what was observed of it (``observations.py``), and the result each observed
    queue's ledger, ranked (``metrics/ledger.py``)."""
    started = time.perf_counter()
    resources = {r.uid: r for p in parsed for r in p.resources}
    resolved, missing = resolve(
        [e for p in parsed for e in p.edges],
        [k for p in parsed for k in p.keys],
        [x for p in parsed for x in p.exports],
    )
    queue_uids = sorted(uid for uid, r in resources.items() if r.type == model.QUEUE)
    groups = contexts(queue_uids, resolved, resources)
    with_metrics = 0
    if metrics is not None:
        for queue_uid in queue_uids:
            groups[queue_uid] += observations.for_group(metrics, groups[queue_uid])
            with_metrics += observations.observed(metrics, resources[queue_uid])
    resolved_at = time.perf_counter()
    findings: list[Finding] = []
    ledgers: list[model.QueueLedger] = []
    for queue_uid in queue_uids:
        judged, queue_ledger = judge_group(queue_uid, groups[queue_uid])
        findings += judged
        ledgers += [] if queue_ledger is None else [queue_ledger]
    findings += [unresolved_edge_finding(resources[e.from_uid], e) for e in missing]
    findings += [f for p in parsed for f in template_findings(p)]
    files = [p.file for p in parsed]
    findings.sort(key=Finding.sort_key)
    evaluated_at = time.perf_counter()
    return AuditResult(
        findings,
        files,
        len(queue_uids),
        {"resolve": resolved_at - started, "evaluate": evaluated_at - resolved_at},
        metrics=None
        if metrics is None
        else observations.summary(metrics, with_metrics, len(queue_uids)),
        ledgers=ledger.ranked(ledgers),
    )


def audit(inputs: AuditInputs, options: AuditOptions) -> AuditResult:
    """The local engine's entry point (``request.py``): ``inputs.files`` parsed by
    ``options.workers`` worker processes (default: one per core) within ``options.limits``, then
    resolved and evaluated here, and ``options.acceptance`` applied (a suppressions file, a
    baseline). The stacks ``inputs.deployed`` in each target (account and region) are read and
    judged with them, and with the observed ``inputs.metrics`` when given. With
    ``options.output_dir``, the findings datasets are written there (``datasets.write``);
    without ``options.quiet``, the parsing's progress is said on stderr (``ReadProgress``)."""
    result = _audit(inputs, options, None if options.quiet else ReadProgress())
    if options.output_dir:
        datasets.write(result, options.output_dir)
    return result


def _audit(
    inputs: AuditInputs, options: AuditOptions, progress: Callable[[int, int], None] | None
) -> AuditResult:
    started = time.perf_counter()
    files = list(inputs.files)
    limits, workers, overrides = options.limits, options.workers, options.overrides
    parsed = isolation.parse_files(
        files,
        limits,
        workers,
        overrides,
        progress=None if progress is None else lambda done: progress(done, len(files)),
    )
    again, child_overrides = nesting.children(
        (n for p in parsed for n in p.nested), files, overrides
    )
    if again:
        reparsed = isolation.parse_files(again, limits, workers, child_overrides)
        by_file = {p.file.file: p for p in reparsed}
        parsed = [by_file.get(p.file.file, p) for p in parsed]
    parsed += deployed_stacks.audit_targets(inputs.deployed, limits, overrides)
    parsed_at = time.perf_counter()
    result = audit_parsed(parsed, inputs.metrics)
    result.timings = {"parse": parsed_at - started, **result.timings}
    findings, result.fixed = accept(list(result.findings), options.acceptance)
    result.findings = findings
    return result


def audit_files(
    files: Iterable[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    workers: int | None = None,
    overrides: Overrides | None = None,
    progress: Callable[[int, int], None] | None = None,
    acceptance: Acceptance = NO_ACCEPTANCE,
    deployed: Sequence[deployed_stacks.Target] = (),
    metrics: observations.Metrics | None = None,
) -> AuditResult:
    """``audit`` with its inputs and options as arguments, and ``progress(done, total)``
    following the parsing: the in-app plugin's call."""
    inputs = AuditInputs(tuple(files), tuple(deployed), metrics)
    options = AuditOptions(limits, overrides, acceptance, workers=workers)
    return _audit(inputs, options, progress)


def audit_paths(
    paths: Iterable[str],
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    acceptance: Acceptance = NO_ACCEPTANCE,
) -> AuditResult:
    """Audit every template under ``paths``, with parameter ``overrides`` (stack or ``*`` ->
    key -> value, see ``parameters.py``)."""
    inputs = AuditInputs(discovery.discover(paths))
    return audit(inputs, AuditOptions(limits, overrides, acceptance))


class ReadProgress:
    """``read 12,000 of 100,000 files`` on stderr: updated in place on a terminal, a line every
    few seconds in a CI log."""

    INTERVAL_S = 2.0

    def __init__(self) -> None:
        self.terminal = sys.stderr.isatty()
        self.last = time.monotonic()
        self.shown = False  # a run shorter than one interval says nothing

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < self.INTERVAL_S and (done < total or not self.shown):
            return
        self.last, self.shown = now, True
        end = "\n" if done == total or not self.terminal else ""
        prefix = "\r" if self.terminal else ""
        print(
            f"{prefix}queue-audit: read {done:,} of {plural(total, 'file')}",
            end=end,
            file=sys.stderr,
        )
        sys.stderr.flush()
