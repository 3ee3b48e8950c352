"""GitLab's Code Quality report: a JSON array of issues, SARIF's fingerprints."""

from __future__ import annotations

from collections.abc import Iterator

from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.report.json import indented
from constructs_lib.audit.report.sarif import fingerprinted, uri

# GitLab Code Quality severities are info, minor, major, critical and blocker. An error is what
# fails the pipeline under the default --fail-on (messages lost or looping, a deploy that fails,
# an unencrypted or public queue, an unreadable template): worse than the code smells GitLab
# calls major, so critical. Blocker is left unused: the job's exit status already blocks.
_CODEQUALITY_SEVERITY = {"error": "critical", "warning": "minor", "info": "info"}


def stream_codequality(result: AuditResult) -> Iterator[str]:
    """GitLab's Code Quality report (a JSON array of issues), one finding at a time.

    The fingerprint is SARIF's (``fingerprinted``), so GitLab matches a finding across
    pipelines while its wording changes. An issue points at the line its resource (or the
    property its rule is about) is written on, at line 1 when that is not known (a deployed
    stack, a whole file).
    """
    yield "["
    i = -1
    for i, (finding, fingerprint) in enumerate(fingerprinted(result)):
        # Code Quality has no notion of a suppression: an accepted finding is listed as info,
        # its description starting with why, so that a merge request does not flag it.
        accepted = f"suppressed ({finding.justification}): " if finding.suppression else ""
        issue = {
            "type": "issue",
            "check_name": finding.rule_id,
            "description": f"{accepted}{finding.rule_id} {finding.message}. Fix: {finding.fix}",
            "severity": _CODEQUALITY_SEVERITY["info" if accepted else finding.severity],
            "fingerprint": fingerprint,
            "location": {"path": uri(finding.template), "lines": {"begin": finding.line or 1}},
        }
        yield ("," if i else "") + "\n  " + indented(issue, 2)
    yield "\n]\n" if i >= 0 else "]\n"


def render_codequality(result: AuditResult) -> str:
    return "".join(stream_codequality(result))
