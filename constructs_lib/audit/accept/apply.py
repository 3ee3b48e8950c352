"""What a run accepts besides the templates' own Metadata: a profile, a suppressions file and a
baseline.

Both engines apply the same steps after judging: the profile's and the file's rule levels to
each finding's severity (``profiles``), the file's suppressions to each finding, a QR902 for
each entry past its expiry, then the comparison with the baseline (``baseline``).
The local engine does it here, over a list; the Spark job with the same functions over
partitions (``engines.spark.accept``).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from constructs_lib.audit import rules, safety
from constructs_lib.audit.accept import baseline, profiles, suppressions
from constructs_lib.audit.accept.baseline import Entry as BaselineEntry
from constructs_lib.audit.accept.suppressions import FileSuppression
from constructs_lib.audit.model import Finding
from constructs_lib.audit.parse import documents
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits


@dataclass(frozen=True)
class Acceptance:
    suppressions: tuple[FileSuppression, ...] = ()
    baseline: tuple[BaselineEntry, ...] | None = None  # None: no baseline given
    # rule id -> the severity its findings are reported at, where that is not the catalog's
    levels: Mapping[str, str] = field(default_factory=dict)
    today: datetime.date = field(default_factory=lambda: datetime.datetime.now(datetime.UTC).date())

    @property
    def active(self) -> list[FileSuppression]:
        return [s for s in self.suppressions if not s.expired(self.today)]

    def expired_findings(self) -> list[Finding]:
        return suppressions.expired_findings(
            list(self.suppressions), self.today, rules.meta_fix(suppressions.SUPPRESSION_RULE)
        )


NONE = Acceptance()


def catalog_severities() -> dict[str, str]:
    """Every rule id a finding can carry -> its catalog severity."""
    return {rule_id: severity for rule_id, severity, _title, _fix in rules.describe_rules()}


def load(
    suppression_files: Sequence[str],
    baseline_file: str | None,
    limits: ReadLimits = DEFAULT_LIMITS,
    profile: str = profiles.DEFAULT_PROFILE,
) -> Acceptance:
    """The run's acceptance from its options; a ``SuppressionsFileError`` or ``BaselineError``
    for a file that cannot be used. A suppressions file is read within the templates'
    ``limits``; its rule levels win over the ``profile``'s (a later file's over an earlier's)."""
    entries: list[FileSuppression] = []
    chosen: dict[str, str] = {}
    for path in suppression_files:
        try:
            with open(path, "rb") as handle:
                data = handle.read(limits.max_file_bytes + 1)
            if len(data) > limits.max_file_bytes:
                raise suppressions.SuppressionsFileError(
                    f"the suppressions file {path} is larger than --max-file-size "
                    f"({safety.size_text(limits.max_file_bytes)})"
                )
            document = documents.load_data(path, data, limits)
        except OSError as error:
            raise suppressions.SuppressionsFileError(
                f"cannot read the suppressions file {path}: {error.strerror or error}"
            ) from None
        except documents.TemplateError as error:
            raise suppressions.SuppressionsFileError(
                f"the suppressions file {path} is not YAML or JSON: {error}"
            ) from None
        entries += suppressions.parse_file(path, document, rules.RULE_IDS)
        chosen.update(
            (rule_id, level)
            for rule_id, (level, _reason, _expires) in suppressions.parse_rules(
                path, document, rules.RULE_IDS
            ).items()
            if level != profiles.LEVEL_OFF
        )
    known = tuple(baseline.read(baseline_file)) if baseline_file else None
    levels = profiles.levels(profile, catalog_severities(), chosen)
    return Acceptance(tuple(entries), known, levels)


def regrade(findings: Iterable[Finding], levels: Mapping[str, str]) -> Iterator[Finding]:
    """Each finding at the severity ``levels`` gives its rule (its own when none)."""
    for finding in findings:
        level = levels.get(finding.rule_id)
        yield finding if level is None else replace(finding, severity=level)  # type: ignore[arg-type]


def apply(
    findings: list[Finding], acceptance: Acceptance
) -> tuple[list[Finding], list[Finding] | None]:
    """Findings in report order -> (the same findings accepted or marked, and the expiry
    QR902s, in report order; the baseline's fixed findings, or None without a baseline)."""
    if not acceptance.suppressions and acceptance.baseline is None and not acceptance.levels:
        return findings, None
    graded = regrade(findings, acceptance.levels)
    accepted = list(suppressions.external(graded, acceptance.active))
    accepted = sorted(accepted + acceptance.expired_findings(), key=Finding.sort_key)
    if acceptance.baseline is None:
        return accepted, None
    marked, found = baseline.compare(accepted, acceptance.baseline)
    return marked, baseline.fixed([e.finding for e in acceptance.baseline], found)
