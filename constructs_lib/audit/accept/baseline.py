"""Baselines: adopt the audit on a fleet with findings, and fail only on new ones.

``--write-baseline FILE`` records the run's findings that are not suppressed; ``--baseline
FILE`` compares a run with it. A finding is known when the baseline holds one with the same
fingerprint: rule, stack, logical id and queue. Neither the template's path nor the message is
part of it, so moving a cdk.out, reordering resources or editing anything else in the template
keeps a finding known, while a new queue, resource or rule is new. Several findings can share a
fingerprint (the same stack in two folders, several unresolved values of one resource): they
are matched by count, in report order, so a third one where the baseline holds two is new.

Each entry also records the finding's values: the numbers its message states (``values_of``).
A known finding whose values differ from its entry's is ``changed`` (SARIF's ``updated``): a
visibility timeout cut from 30 s to 20 s keeps its fingerprint, and the report says it moved.
Changed findings do not decide the exit status unless the run asks (``--fail-on-changed``).
Baselines of version 1 hold no values: they still load, and their findings are never changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from constructs_lib.audit.model import (
    BASELINE_ABSENT,
    BASELINE_NEW,
    BASELINE_UNCHANGED,
    BASELINE_UPDATED,
    SEVERITY_RANK,
    Finding,
)

FORMAT_VERSION = 2
# Version 1 recorded no values; it is read, with every entry's values unknown.
READABLE_VERSIONS = (1, FORMAT_VERSION)
FINGERPRINT_FIELDS = ("rule_id", "stack", "resource", "queue")
VALUES_FIELD = "values"
# A number a message states: not part of a name (``orders-2``, ``Queue1A2B``, ``v1.2``). The
# Spark job applies the same pattern with Java's regex engine: ASCII classes only, so both read
# the same numbers.
VALUE_PATTERN = r"(?<![A-Za-z0-9_.-])[0-9]+(?:[.][0-9]+)?(?![A-Za-z0-9_-]|[.][0-9])"
_VALUE = re.compile(VALUE_PATTERN)
# Recorded so that a fixed finding can be shown as it was; not part of the fingerprint.
_SHOWN_FIELDS = ("severity", "template", "message", "fix")
_FIELDS = (*FINGERPRINT_FIELDS, *_SHOWN_FIELDS)

Fingerprint = tuple[str, str, str, str]


class BaselineError(ValueError):
    """A baseline file that cannot be used: the run stops before reading the fleet."""


def fingerprint(finding: Finding) -> Fingerprint:
    return (finding.rule_id, finding.stack, finding.resource, finding.queue)


def values_of(message: str) -> str:
    """The numbers a finding's message states, in order, space-separated: what ``changed``
    compares."""
    return " ".join(_VALUE.findall(message))


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
                entry[VALUES_FIELD] = values_of(finding.message)
                handle.write(("," if count else "") + "\n  " + json.dumps(entry, sort_keys=True))
                count += 1
            handle.write("\n]}\n")
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return count


@dataclass(frozen=True)
class Entry:
    """One finding of a baseline, with the values it had (None: a version 1 baseline)."""

    finding: Finding
    values: str | None


def read(path: str) -> list[Entry]:
    """A baseline file's entries, in report order, or a ``BaselineError`` that names the
    file, what is wrong and the fix."""
    fix = "write it again with --write-baseline"
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise BaselineError(f"cannot read the baseline {path}: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:  # nesting no baseline has recurses
        raise BaselineError(f"the baseline {path} is not JSON ({error}): {fix}") from None
    version = document.get("version") if isinstance(document, Mapping) else None
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise BaselineError(
            f"the baseline {path} is not a queue-audit baseline of version "
            f"{' or '.join(map(str, READABLE_VERSIONS))}: {fix}"
        )
    listed = document.get("findings")
    if not isinstance(listed, list):
        raise BaselineError(f"the baseline {path} has no list of findings: {fix}")
    entries = [
        _entry(path, position, item, fix, version) for position, item in enumerate(listed, 1)
    ]
    return sorted(entries, key=lambda e: e.finding.sort_key())


def _entry(path: str, position: int, item: Any, fix: str, version: int) -> Entry:
    if not isinstance(item, Mapping) or not all(isinstance(item.get(n), str) for n in _FIELDS):
        raise BaselineError(
            f"the baseline {path}, finding {position}, lacks one of {', '.join(_FIELDS)}: {fix}"
        )
    if item["severity"] not in SEVERITY_RANK:
        raise BaselineError(
            f"the baseline {path}, finding {position}, has severity {item['severity']!r}: {fix}"
        )
    values = item.get(VALUES_FIELD) if version >= 2 else None
    if version >= 2 and not isinstance(values, str):
        raise BaselineError(
            f"the baseline {path}, finding {position}, has no {VALUES_FIELD} text: {fix}"
        )
    finding = Finding(**{name: item[name] for name in _FIELDS}, baseline=BASELINE_ABSENT)
    return Entry(finding, values)


def compare(
    findings: Iterable[Finding], entries: Iterable[Entry]
) -> tuple[list[Finding], Counter[Fingerprint]]:
    """Findings in report order -> (each marked new, unchanged or changed, how many of each
    fingerprint this run found). The n-th finding of a fingerprint that is not suppressed is
    known when the baseline holds at least n, and changed when the n-th entry's values (in
    report order) differ from its own. Suppressed findings are not marked, but they are found:
    a finding accepted since the baseline was written is not fixed."""
    known: dict[Fingerprint, list[str | None]] = {}
    for entry in entries:
        known.setdefault(fingerprint(entry.finding), []).append(entry.values)
    seen: Counter[Fingerprint] = Counter()
    found: Counter[Fingerprint] = Counter()
    marked: list[Finding] = []
    for finding in findings:
        key = fingerprint(finding)
        found[key] += 1
        if not finding.suppression:
            seen[key] += 1
            listed = known.get(key, [])
            if seen[key] > len(listed):
                state = BASELINE_NEW
            else:
                was = listed[seen[key] - 1]
                changed = was is not None and was != values_of(finding.message)
                state = BASELINE_UPDATED if changed else BASELINE_UNCHANGED
            finding = replace(finding, baseline=state)
        marked.append(finding)
    return marked, found


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
