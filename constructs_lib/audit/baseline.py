"""Baselines: adopt the audit on a fleet with findings, and fail only on new ones.

``--write-baseline FILE`` records the run's findings that are not suppressed; ``--baseline
FILE`` compares a run with it. A finding is known when the baseline holds one with the same
fingerprint: rule, stack, logical id and queue. Neither the template's path nor the message is
part of it, so moving a cdk.out, reordering resources or editing anything else in the template
keeps a finding known, while a new queue, resource or rule is new. Several findings can share a
fingerprint (the same stack in two folders, several unresolved values of one resource): they
are matched by count, in report order, so a third one where the baseline holds two is new.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from constructs_lib.audit.model import (
    BASELINE_ABSENT,
    BASELINE_NEW,
    BASELINE_UNCHANGED,
    SEVERITY_RANK,
    Finding,
)

FORMAT_VERSION = 1
FINGERPRINT_FIELDS = ("rule_id", "stack", "resource", "queue")
# Recorded so that a fixed finding can be shown as it was; not part of the fingerprint.
_SHOWN_FIELDS = ("severity", "template", "message", "fix")
_FIELDS = (*FINGERPRINT_FIELDS, *_SHOWN_FIELDS)

Fingerprint = tuple[str, str, str, str]


class BaselineError(ValueError):
    """A baseline file that cannot be used: the run stops before reading the fleet."""


def fingerprint(finding: Finding) -> Fingerprint:
    return (finding.rule_id, finding.stack, finding.resource, finding.queue)


def write(path: str, findings: Iterable[Finding]) -> int:
    """Record the findings that are not suppressed, one per line, whole or not at all.
    Returns how many were recorded."""
    partial, count = f"{path}.partial", 0
    try:
        with open(partial, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(f'{{"version": {FORMAT_VERSION}, "tool": "queue-audit", "findings": [')
            for finding in findings:
                if finding.suppression:
                    continue
                entry = {name: getattr(finding, name) for name in _FIELDS}
                handle.write(("," if count else "") + "\n  " + json.dumps(entry, sort_keys=True))
                count += 1
            handle.write("\n]}\n")
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return count


def read(path: str) -> list[Finding]:
    """A baseline file's findings, in report order, or a ``BaselineError`` that names the
    file, what is wrong and the fix."""
    fix = "write it again with --write-baseline"
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise BaselineError(f"cannot read the baseline {path}: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:  # nesting no baseline has recurses
        raise BaselineError(f"the baseline {path} is not JSON ({error}): {fix}") from None
    if not isinstance(document, Mapping) or document.get("version") != FORMAT_VERSION:
        raise BaselineError(
            f"the baseline {path} is not a queue-audit baseline of version {FORMAT_VERSION}: {fix}"
        )
    listed = document.get("findings")
    if not isinstance(listed, list):
        raise BaselineError(f"the baseline {path} has no list of findings: {fix}")
    entries = [_entry(path, position, item, fix) for position, item in enumerate(listed, 1)]
    return sorted(entries, key=Finding.sort_key)


def _entry(path: str, position: int, item: Any, fix: str) -> Finding:
    if not isinstance(item, Mapping) or not all(isinstance(item.get(n), str) for n in _FIELDS):
        raise BaselineError(
            f"the baseline {path}, finding {position}, lacks one of {', '.join(_FIELDS)}: {fix}"
        )
    if item["severity"] not in SEVERITY_RANK:
        raise BaselineError(
            f"the baseline {path}, finding {position}, has severity {item['severity']!r}: {fix}"
        )
    return Finding(**{name: item[name] for name in _FIELDS}, baseline=BASELINE_ABSENT)


def compare(
    findings: Iterable[Finding], known: Counter[Fingerprint]
) -> tuple[list[Finding], Counter[Fingerprint]]:
    """Findings in report order -> (each marked new or unchanged, how many of each
    fingerprint this run found). Suppressed findings are not marked, but they are found: a
    finding accepted since the baseline was written is not fixed."""
    seen: Counter[Fingerprint] = Counter()
    found: Counter[Fingerprint] = Counter()
    marked: list[Finding] = []
    for finding in findings:
        key = fingerprint(finding)
        found[key] += 1
        if not finding.suppression:
            seen[key] += 1
            state = BASELINE_UNCHANGED if seen[key] <= known[key] else BASELINE_NEW
            finding = replace(finding, baseline=state)
        marked.append(finding)
    return marked, found


def counts(entries: Iterable[Finding]) -> Counter[Fingerprint]:
    return Counter(fingerprint(e) for e in entries)


def fixed(entries: list[Finding], found: Mapping[Fingerprint, int]) -> list[Finding]:
    """The baseline's findings this run no longer reports: for each fingerprint, those beyond
    the number found (the last ones in report order)."""
    taken: Counter[Fingerprint] = Counter()
    gone: list[Finding] = []
    for entry in entries:
        key = fingerprint(entry)
        taken[key] += 1
        if taken[key] > found.get(key, 0):
            gone.append(entry)
    return gone
