"""The fleet view that the human reports (table, Markdown, HTML) lead with.

One pass over the findings in template order (``Finding.sort_key``: template, then stack, ...)
counts, for the findings that decide the exit status:

- per rule: its findings, the queues and the stacks it touches, and the queues and stacks it is
  the only rule of: fixing that rule alone (in the shared construct or template that most of a
  fleet's queues come from) leaves them with nothing to act on;
- the worst stacks (most errors, then warnings, then info), a fixed number of them.

A stack is a template and the stack name it was read as; a queue is a queue's logical id in
one stack, counted in its own stack only: a finding on a consumer in another stack (which imports
the queue) counts among that stack's findings, not as a queue of it, so no queue is counted
twice. A queue whose only findings are on other stacks' resources is not counted as a queue. Template order keeps each stack's findings together, so the survey holds one stack's
rules and queues at a time, one tally per rule, and the worst stacks so far: its memory does
not grow with the fleet, whichever engine streams the findings.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from constructs_lib.audit import rules
from constructs_lib.audit.model import SEVERITY_RANK, Finding

# How many stacks the fleet view names: the worst first. The rest are counted, and listed with
# their findings further down the report.
WORST_STACKS = 10

_SEVERITIES = ("error", "warning", "info")


@dataclass
class RuleTally:
    """One rule across the fleet (its deciding findings only)."""

    rule_id: str
    severity: str
    findings: int = 0
    queues: int = 0  # queues with at least one finding of this rule
    stacks: int = 0  # stacks with at least one finding of this rule
    # Queues and stacks whose only deciding rule this is: fixing it leaves them clean.
    queues_cleared: int = 0
    stacks_cleared: int = 0


@dataclass(frozen=True)
class StackTally:
    """One stack with findings that decide."""

    template: str
    stack: str
    by_severity: Mapping[str, int]
    queues: int  # queues with a deciding finding
    rules: tuple[str, ...]  # its rules, in id order

    @property
    def findings(self) -> int:
        return sum(self.by_severity.values())

    def rank(self) -> tuple[int, ...]:
        """Larger is worse: errors, then warnings, then info."""
        return tuple(self.by_severity.get(s, 0) for s in _SEVERITIES)


@dataclass
class Fleet:
    """What the fleet view shows; ``survey`` computes it."""

    rules: list[RuleTally] = field(default_factory=list)
    worst: list[StackTally] = field(default_factory=list)
    stacks: int = 0  # stacks with a deciding finding
    queues: int = 0  # queues with a deciding finding
    findings: int = 0  # deciding findings

    @property
    def empty(self) -> bool:
        return not self.findings

    @property
    def best(self) -> RuleTally | None:
        """``best_of`` every severity."""
        return self.best_of(_SEVERITIES)[0]

    def best_of(self, severities: Iterable[str]) -> tuple[RuleTally | None, tuple[str, ...]]:
        """(the rule whose fix clears the most findings of ``severities``, those that decide the
        exit status; on a tie the more severe, then the first by id), and the severities it was
        chosen among. When no rule has findings of ``severities`` (nothing reaches
        ``--fail-on``), it is chosen among the rules of the worst severity there is. (None, ())
        without findings."""
        wanted = tuple(severities)
        among = [r for r in self.rules if r.severity in wanted]
        if not among and self.rules:
            worst = max(SEVERITY_RANK.get(r.severity, -1) for r in self.rules)
            among = [r for r in self.rules if SEVERITY_RANK.get(r.severity, -1) == worst]
            wanted = (among[0].severity,)
        best = min(
            among,
            key=lambda r: (-r.findings, -SEVERITY_RANK.get(r.severity, -1), r.rule_id),
            default=None,
        )
        present = tuple(
            s for s in _SEVERITIES if s in wanted and any(r.severity == s for r in among)
        )
        return best, present

    def findings_of(self, severities: Iterable[str]) -> int:
        """How many deciding findings the rules of ``severities`` have."""
        wanted = set(severities)
        return sum(r.findings for r in self.rules if r.severity in wanted)


class Survey:
    """Feed it the findings in template order (``add``), then read ``result()``."""

    def __init__(self, worst: int = WORST_STACKS) -> None:
        self._keep = worst
        self._rules: dict[str, RuleTally] = {}
        # a min-heap of the worst stacks so far: (rank, minus the stack's place in report
        # order, tally); on a tie in rank the stack that comes first stays
        self._worst: list[tuple[tuple[int, ...], int, StackTally]] = []
        self._stacks = 0
        self._queues = 0
        self._findings = 0
        self._current: tuple[str, str] | None = None
        # the current stack: its findings by severity, and which rules each queue has
        self._severity: Counter[str] = Counter()
        self._queue_rules: dict[str, set[str]] = {}
        self._rule_counts: Counter[str] = Counter()

    def add(self, finding: Finding) -> None:
        if not finding.decides:
            return
        where = (finding.template, finding.stack)
        if where != self._current:
            self._close()
            self._current = where
        self._findings += 1
        self._severity[finding.severity] += 1
        self._rule_counts[finding.rule_id] += 1
        tally = self._rules.get(finding.rule_id)
        if tally is None:
            tally = self._rules[finding.rule_id] = RuleTally(finding.rule_id, finding.severity)
        elif SEVERITY_RANK.get(finding.severity, -1) > SEVERITY_RANK.get(tally.severity, -1):
            tally.severity = finding.severity
        tally.findings += 1
        # QR901 (an unreadable file) and findings not about one queue name no queue; a queue of
        # another stack is counted there
        if (
            finding.queue
            and not finding.queue_template
            and finding.rule_id != rules.UNPARSEABLE_RULE
        ):
            self._queue_rules.setdefault(finding.queue, set()).add(finding.rule_id)

    def _close(self) -> None:
        """Fold the current stack into the fleet's tallies."""
        if self._current is None:
            return
        template, stack = self._current
        self._stacks += 1
        self._queues += len(self._queue_rules)
        for rule_id in self._rule_counts:
            self._rules[rule_id].stacks += 1
        if len(self._rule_counts) == 1:
            (only,) = self._rule_counts
            self._rules[only].stacks_cleared += 1
        for queue_rules in self._queue_rules.values():
            for rule_id in queue_rules:
                self._rules[rule_id].queues += 1
            if len(queue_rules) == 1:
                (only,) = queue_rules
                self._rules[only].queues_cleared += 1
        tally = StackTally(
            template,
            stack,
            {s: self._severity[s] for s in _SEVERITIES if self._severity[s]},
            len(self._queue_rules),
            tuple(sorted(self._rule_counts)),
        )
        entry = (tally.rank(), -self._stacks, tally)
        if len(self._worst) < self._keep:
            heapq.heappush(self._worst, entry)
        elif self._keep and entry[:2] > self._worst[0][:2]:
            heapq.heapreplace(self._worst, entry)
        self._current = None
        self._severity = Counter()
        self._queue_rules = {}
        self._rule_counts = Counter()

    def result(self) -> Fleet:
        self._close()
        ordered = sorted(
            self._rules.values(),
            key=lambda r: (-SEVERITY_RANK.get(r.severity, -1), -r.queues, -r.findings, r.rule_id),
        )
        worst = [entry[2] for entry in sorted(self._worst, key=lambda e: e[:2], reverse=True)]
        return Fleet(ordered, worst, self._stacks, self._queues, self._findings)


def survey(findings: Iterable[Finding], worst: int = WORST_STACKS) -> Fleet:
    """The fleet view of ``findings``, given in template order."""
    tally = Survey(worst)
    for finding in findings:
        tally.add(finding)
    return tally.result()


def share(part: int, whole: int) -> str:
    """``37%``; below 1% but not none, ``<1%``; ``-`` without a whole."""
    if not whole:
        return "-"
    if part and part * 100 < whole:
        return "<1%"
    return f"{round(100 * part / whole)}%"
