"""What a run accepts besides the templates' own Metadata: a suppressions file and a baseline.

Both engines apply the same steps after judging: the file's suppressions to each finding, a
QR902 for each entry past its expiry, then the comparison with the baseline (``baseline.py``).
The local engine does it here, over a list; the Spark job with the same functions over
partitions (``job.accept``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field

from constructs_lib.audit import baseline, parsing, rules, safety, suppressions
from constructs_lib.audit.model import Finding
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits
from constructs_lib.audit.suppressions import FileSuppression


@dataclass(frozen=True)
class Acceptance:
    suppressions: tuple[FileSuppression, ...] = ()
    baseline: tuple[Finding, ...] | None = None  # None: no baseline given
    today: datetime.date = field(default_factory=lambda: datetime.datetime.now(datetime.UTC).date())

    @property
    def active(self) -> list[FileSuppression]:
        return [s for s in self.suppressions if not s.expired(self.today)]

    def expired_findings(self) -> list[Finding]:
        return suppressions.expired_findings(
            list(self.suppressions), self.today, rules.meta_fix(suppressions.SUPPRESSION_RULE)
        )


NONE = Acceptance()


def load(
    suppression_files: Sequence[str],
    baseline_file: str | None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> Acceptance:
    """The run's acceptance from its options; a ``SuppressionsFileError`` or ``BaselineError``
    for a file that cannot be used. A suppressions file is read within the templates'
    ``limits``."""
    entries: list[FileSuppression] = []
    for path in suppression_files:
        try:
            with open(path, "rb") as handle:
                data = handle.read(limits.max_file_bytes + 1)
            if len(data) > limits.max_file_bytes:
                raise suppressions.SuppressionsFileError(
                    f"the suppressions file {path} is larger than --max-file-size "
                    f"({safety.size_text(limits.max_file_bytes)})"
                )
            document = parsing.load_data(path, data, limits)
        except OSError as error:
            raise suppressions.SuppressionsFileError(
                f"cannot read the suppressions file {path}: {error.strerror or error}"
            ) from None
        except parsing.TemplateError as error:
            raise suppressions.SuppressionsFileError(
                f"the suppressions file {path} is not YAML or JSON: {error}"
            ) from None
        entries += suppressions.parse_file(path, document, rules.RULE_IDS)
    known = tuple(baseline.read(baseline_file)) if baseline_file else None
    return Acceptance(tuple(entries), known)


def apply(
    findings: list[Finding], acceptance: Acceptance
) -> tuple[list[Finding], list[Finding] | None]:
    """Findings in report order -> (the same findings accepted or marked, and the expiry
    QR902s, in report order; the baseline's fixed findings, or None without a baseline)."""
    if not acceptance.suppressions and acceptance.baseline is None:
        return findings, None
    accepted = list(suppressions.external(findings, acceptance.active))
    accepted = sorted(accepted + acceptance.expired_findings(), key=Finding.sort_key)
    if acceptance.baseline is None:
        return accepted, None
    marked, found = baseline.compare(accepted, baseline.counts(acceptance.baseline))
    return marked, baseline.fixed(list(acceptance.baseline), found)
