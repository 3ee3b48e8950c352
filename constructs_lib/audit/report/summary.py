"""What every format shares: the findings in report order, the listing the human formats show
(what matters most first, at most ``REPORT_ROWS``), the summary's counts and the exit status.

Report order is template order (``Finding.sort_key``: template, stack, resource, rule, ...), the
order both engines hand the findings over in, except that with a ledger (``--metrics``) the
findings of the queues whose loss is known come first, by their queue's rank in the ledger
(``ledger.loss_ranks``), each queue's in template order, then every other finding in template
order."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from constructs_lib.audit import rules
from constructs_lib.audit.accept import profiles
from constructs_lib.audit.model import SEVERITY_RANK, AuditResult, Finding
from constructs_lib.audit.parse import pipeline as templates
from constructs_lib.audit.report import fleet, ledger
from constructs_lib.audit.report.words import plural

# The human formats (table, Markdown, HTML) list at most this many findings, then say how many
# more there are: a person reads the first screens, and a fleet's full list belongs in JSON,
# SARIF or the --output-dir datasets, which always hold every finding.
REPORT_ROWS = 10_000
# The summary names at most this many of the files that are not templates (a repository's
# workflows, site and compose files), in path order, and counts them all.
NOT_TEMPLATES_LISTED = 100


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


def template_order(result: AuditResult) -> Iterable[Finding]:
    """The findings in template order (``Finding.sort_key``); a list is sorted here, a streamed
    view comes sorted."""
    return (
        sorted_findings(result.findings) if isinstance(result.findings, list) else result.findings
    )


def loss_rank(ranks: Mapping[str, int]) -> Callable[[Finding], int]:
    """A finding's place by its queue's loss (``ledger.loss_ranks``); every finding whose
    queue's loss is not known shares the place after the last."""
    last = len(ranks)
    return lambda finding: ranks.get(ledger.queue_uid(finding), last)


def ordered(result: AuditResult) -> Iterable[Finding]:
    """The findings in report order. Machines read it (JSON, SARIF, Code Quality), and it has no
    severity in it, so the loss goes first: the queue a team should act on first leads.
    Findings that share a queue keep their template order, so SARIF's occurrence numbers, and
    with them every fingerprint, are the same with a ledger or without."""
    ranks = ledger.loss_ranks(result.ledgers)
    if not ranks:
        return template_order(result)
    rank = loss_rank(ranks)
    if isinstance(result.findings, list):
        return sorted(result.findings, key=lambda f: (rank(f), f.sort_key()))
    return _ranked_stream(result.findings, rank, len(ranks))


def _ranked_stream(
    findings: Iterable[Finding], rank: Callable[[Finding], int], last: int
) -> Iterator[Finding]:
    """A streamed view (template order) in report order, in two passes over it: the first
    holds only the findings of queues whose loss is known, a few per queue of the ledger, which
    is itself held on the driver; the second streams the rest as they come. A Spark run's
    findings thus keep their bounded memory, and reach the report in the local engine's order."""
    known = [finding for finding in findings if rank(finding) < last]
    known.sort(key=lambda f: (rank(f), f.sort_key()))
    yield from known
    yield from (finding for finding in findings if rank(finding) == last)


# What a person reads first: the findings that decide, then those that changed against the
# baseline, then the known and the accepted ones.
_STATE_RANK = {"open": 0, "new": 0, "changed": 1, "unchanged": 2, "suppressed": 3}

LeadKey = tuple[int, int, int, int, tuple[str, ...]]


def lead_key(ranks: Mapping[str, int]) -> Callable[[Finding], LeadKey]:
    """The human formats' order: state (deciding first), severity (worst first), the loss of
    the finding's queue (``ranks``: the most messages lost first, queues without a known loss
    after), the rule's impact (``profiles.IMPACT_ORDER``: lost messages first), then template
    order.

    The loss ranks inside a severity, not across: the severity is what ``--fail-on`` gates and
    what the counts above the listing follow, and the loss is the queue's, not the finding's:
    an info on a queue that lost messages (a hygiene rule) must not rise above an error on
    another queue, whose fix may stop a loss the ledger cannot see yet."""
    rank = loss_rank(ranks)

    def key(finding: Finding) -> LeadKey:
        return (
            _STATE_RANK.get(finding.state, 0),
            -SEVERITY_RANK.get(finding.severity, 0),
            rank(finding),
            profiles.impact(finding.rule_id),
            finding.sort_key(),
        )

    return key


def listed(result: AuditResult) -> tuple[list[Finding], int, fleet.Fleet]:
    """(the findings a human format lists, what matters most first; how many more there are;
    the fleet view), from one pass over the findings in template order (the fleet view's survey
    needs each stack's findings together): a streamed run's are not read twice, and at most
    ``REPORT_ROWS`` findings are held."""
    survey = fleet.Survey()
    total = 0

    def surveyed() -> Iterator[Finding]:
        nonlocal total
        for finding in template_order(result):
            survey.add(finding)
            total += 1
            yield finding

    key = lead_key(ledger.loss_ranks(result.ledgers))
    shown = heapq.nsmallest(REPORT_ROWS, surveyed(), key=key)
    return shown, total - len(shown), survey.result()


def listed_fixed(result: AuditResult) -> tuple[list[Finding], int]:
    """(the fixed findings a human format lists, at most ``REPORT_ROWS``; how many more)."""
    fixed = result.fixed or []
    return fixed[:REPORT_ROWS], max(0, len(fixed) - REPORT_ROWS)


def more_findings(count: int) -> str:
    """The line that says how many findings a human format left out ("" for none)."""
    return (
        f"... and {count:,} more findings: --format json or sarif, or --output-dir, list them all"
        if count
        else ""
    )


def summarize(result: AuditResult) -> dict[str, Any]:
    """Counts that reconcile: every file read is clean, has findings, or could not be parsed.
    A Spark run counts where the findings are and hands the counts over (``result.summary``).
    With ``--metrics``, ``metrics`` says what the metrics input covered."""
    counts = result.summary if result.summary is not None else _counted(result)
    return counts if result.metrics is None else {**counts, "metrics": result.metrics}


def _counted(result: AuditResult) -> dict[str, Any]:
    # a finding about another file (an expired entry of a suppressions file) is no template's
    read_ok = {f.file for f in result.files if f.status == "ok"}
    with_findings = {
        f.template for f in result.findings if f.rule_id != rules.UNPARSEABLE_RULE
    } & read_ok
    not_templates = sorted(f.file for f in result.files if f.status == templates.NOT_TEMPLATE)
    return summary_of(
        Counter(f.status for f in result.files),
        len(with_findings),
        result.queues,
        Counter((f.rule_id, f.severity, f.state) for f in result.findings),
        None if result.fixed is None else len(result.fixed),
        not_templates[:NOT_TEMPLATES_LISTED],
    )


def summary_of(
    files_by_status: Mapping[str, int],
    files_with_findings: int,
    queues: int,
    findings_by_rule_severity_state: Mapping[tuple[str, str, str], int],
    fixed: int | None = None,
    not_templates: Sequence[str] = (),
) -> dict[str, Any]:
    """The summary from its counts, however they were counted (in memory, or by Spark).

    Every file read is clean, has findings, could not be read (QR901), or is not a template
    (``files_not_templates``, the first ``NOT_TEMPLATES_LISTED`` of them named in
    ``not_templates``: JSON and YAML met while walking a repository, which claim no template
    key).

    ``findings``, ``by_severity`` and ``by_rule`` count the findings that decide the exit
    status: neither suppressed nor already in the baseline. ``suppressed`` counts the accepted
    ones; ``baseline`` (None without one) the new, unchanged and fixed ones. A file whose
    findings are all suppressed is not clean: it is one of ``files_with_findings``."""
    read = sum(files_by_status.values())
    not_template = files_by_status.get(templates.NOT_TEMPLATE, 0)
    unparseable = read - files_by_status.get("ok", 0) - not_template
    clean = read - files_with_findings - unparseable - not_template
    by_severity: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    by_state: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    catalog = {rule_id: sev for rule_id, sev, _title, _fix in rules.describe_rules()}
    regraded: dict[str, dict[str, Any]] = {}
    for (rule_id, severity, state), count in sorted(findings_by_rule_severity_state.items()):
        by_state[state] += count
        if state in ("open", "new"):
            by_severity[severity] += count
            by_rule[rule_id] += count
        if state == "changed":
            changed[severity] += count
        if catalog.get(rule_id, severity) != severity:
            shown = regraded.setdefault(
                rule_id, {"catalog": catalog[rule_id], "reported": severity, "findings": 0}
            )
            shown["findings"] += count
    return {
        "files_read": read,
        "files_clean": clean,
        "files_with_findings": files_with_findings,
        "files_unparseable": unparseable,
        # of which not read on purpose (not a regular file, over the size cap); each has a QR901
        "files_skipped": files_by_status.get(templates.SKIPPED, 0),
        "files_not_templates": not_template,
        "not_templates": list(not_templates),
        "reconciled": read == clean + files_with_findings + unparseable + not_template
        and clean >= 0,
        "queues": queues,
        "findings": sum(by_rule.values()),
        "by_severity": {s: by_severity.get(s, 0) for s in ("error", "warning", "info")},
        "by_rule": dict(sorted(by_rule.items())),
        "suppressed": by_state["suppressed"],
        # findings reported at another severity than the catalog's, by the profile or the
        # suppressions file's rule levels (--profile all reports the catalog's)
        "regraded": regraded,
        "baseline": None
        if fixed is None
        else {
            "new": by_state["new"],
            "unchanged": by_state["unchanged"],
            "changed": by_state["changed"],
            "fixed": fixed,
        },
        # known findings whose values changed, by severity (what --fail-on-changed judges)
        "changed_by_severity": None
        if fixed is None
        else {s: changed.get(s, 0) for s in ("error", "warning", "info")},
    }


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    """1 when any finding that decides (not suppressed, not in the baseline) is at least as
    severe as ``fail_on``; ``never`` always gives 0."""
    counts = Counter(f.severity for f in findings if f.decides)
    return exit_status({"by_severity": counts}, fail_on)


def exit_status(summary: dict[str, Any], fail_on: str, fail_on_changed: bool = False) -> int:
    """1 when the summary counts a finding at least as severe as ``fail_on`` (with
    ``fail_on_changed``, a known finding whose values changed counts too): the exit status of a
    run whose findings are not all in memory."""
    if fail_on == "never":
        return 0
    threshold = SEVERITY_RANK[fail_on]
    counts: dict[str, int] = dict(summary["by_severity"])
    if fail_on_changed:
        for severity, n in (summary.get("changed_by_severity") or {}).items():
            counts[severity] = counts.get(severity, 0) + n
    return int(any(n and SEVERITY_RANK[s] >= threshold for s, n in counts.items()))


SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Gate:
    """What decides the exit status, for the reports to say: ``fail_on`` (``--fail-on``,
    default ``error``) and ``fail_on_changed`` (``--fail-on-changed``, default off). A
    ``recording`` run (``--write-baseline``) is no gate: it exits 0 and its reports say no
    reason to fail."""

    fail_on: str = "error"
    fail_on_changed: bool = False
    recording: bool = False

    def deciding(self) -> tuple[str, ...]:
        """The severities whose findings decide, worst first (none for ``never``)."""
        if self.fail_on == "never":
            return ()
        return tuple(s for s in SEVERITIES if SEVERITY_RANK[s] >= SEVERITY_RANK[self.fail_on])

    def status(self, summary: dict[str, Any]) -> int:
        if self.recording:
            return 0
        return exit_status(summary, self.fail_on, self.fail_on_changed)

    def reason(self, summary: dict[str, Any]) -> str:
        """Why the run exits 1, in words ("" when it exits 0): ``exit status 1: 2 errors
        (--fail-on error), 1 changed finding (--fail-on-changed)``."""
        if not self.status(summary):
            return ""
        parts = []
        deciding = [
            plural(summary["by_severity"].get(s, 0), s)
            for s in self.deciding()
            if summary["by_severity"].get(s, 0)
        ]
        if deciding:
            parts.append(f"{', '.join(deciding)} (--fail-on {self.fail_on})")
        changed = sum(
            n
            for s, n in (summary.get("changed_by_severity") or {}).items()
            if self.fail_on_changed and s in self.deciding()
        )
        if changed:
            parts.append(f"{plural(changed, 'changed finding')} (--fail-on-changed)")
        return "exit status 1: " + ", ".join(parts)


DEFAULT_GATE = Gate()
