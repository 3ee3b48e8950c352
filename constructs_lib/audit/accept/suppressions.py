"""Accepted findings: suppressions written in a template's Metadata, and in a suppressions file.

In a template, queue-audit reads cdk-nag's spelling, so that one suppression serves both tools::

    Metadata:
      cdk_nag:
        rules_to_suppress:
          - id: QR009
            reason: The consumer is paged by the platform's own backlog monitor.

on a resource (findings that name that resource) or at the template's top level (every finding
of the template). CDK apps write it with ``Validations.of(scope).acknowledge(...)`` and cdk-nag's
``WriteNagSuppressionsToCloudFormationAspect``; the id may then carry the in-app plugin's prefix
(``constructs-lib-queue-resilience::QR009``). A suppression is honoured only with a reason of
at least ``MIN_REASON_LENGTH`` characters; one without, one naming no rule, and cfn-lint's
``Metadata: cfn-lint: config: ignore_checks`` naming a QR rule (it has no place for a reason) are
each reported as QR902 and suppress nothing.

The suppressions file (``--suppressions FILE``) is for fleets a team cannot edit: each entry
names a rule, globs for template, stack and resource, a reason and an optional expiry date,
after which it stops applying and a QR902 says so. Its ``rules`` mapping sets a rule's level
for the whole fleet (``profiles``): ``info``, ``warning`` or ``error`` report the rule at that
severity, and ``off``, with a reason (and an optional expiry) like any entry, accepts every
finding of the rule.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from constructs_lib.audit.accept.profiles import LEVEL_OFF, LEVELS
from constructs_lib.audit.model import EXTERNAL, IN_SOURCE, SUPPRESSIONS, Finding, Resource
from constructs_lib.policy.suppression_terms import (
    CDK_NAG_KEY,
    CDK_NAG_LIST,
    MIN_REASON_LENGTH,
    reason_problem,
    rule_of,
)

SUPPRESSION_RULE = "QR902"
CFN_LINT_KEY = "cfn-lint"


@dataclass(frozen=True)
class MetadataSuppressions:
    """What one Metadata mapping says: suppressions to honour, and what is wrong with the rest."""

    entries: tuple[tuple[str, str], ...] = ()  # (rule id, reason)
    problems: tuple[str, ...] = ()


def read_metadata(metadata: Any, known_rules: Collection[str], where: str) -> MetadataSuppressions:
    """The queue-audit suppressions of one resource's (or a template's) Metadata. ``where``
    names it in problems ("resource Jobs", "the template's Metadata")."""
    if not isinstance(metadata, Mapping):
        return MetadataSuppressions()
    entries: list[tuple[str, str]] = []
    problems: list[str] = []
    nag = metadata.get(CDK_NAG_KEY)
    listed = nag.get(CDK_NAG_LIST) if isinstance(nag, Mapping) else None
    if nag is not None and not isinstance(listed, list):
        if _mentions_rule(nag):
            problems.append(
                f"{where}: {CDK_NAG_KEY} is not a mapping with a list {CDK_NAG_LIST}; its "
                f"queue-audit suppressions are not honoured"
            )
        listed = []
    for position, entry in enumerate(listed or [], start=1):
        raw_id = entry.get("id") if isinstance(entry, Mapping) else None
        rule_id = rule_of(raw_id)
        if rule_id is None:
            if not isinstance(entry, Mapping) and _mentions_rule(entry):
                problems.append(
                    f"{where}: {CDK_NAG_LIST} entry {position} is not a mapping with id and "
                    f"reason: not honoured"
                )
            continue  # another tool's rule: cdk-nag's to judge
        if rule_id not in known_rules:
            problems.append(
                f"{where}: suppression of {raw_id} names no queue-audit rule: not honoured; "
                "use one of the ids queue-audit reports (docs/audit/rules.md)"
            )
            continue
        why_not = reason_problem(entry.get("reason"))
        if why_not:
            problems.append(f"{where}: suppression of {rule_id} {why_not}: not honoured")
            continue
        entries.append((rule_id, str(entry["reason"]).strip()))
    lint = metadata.get(CFN_LINT_KEY)
    config = lint.get("config") if isinstance(lint, Mapping) else None
    ignored = config.get("ignore_checks") if isinstance(config, Mapping) else None
    for check in ignored if isinstance(ignored, list) else []:
        rule_id = rule_of(check)
        if rule_id is not None:
            problems.append(
                f"{where}: cfn-lint's ignore_checks names {rule_id}, with no place for a reason: "
                f"not honoured"
            )
    return MetadataSuppressions(tuple(entries), tuple(problems))


def _mentions_rule(value: Any) -> bool:
    """Whether a malformed value seems meant for queue-audit (else it is another tool's)."""
    return "QR" in json.dumps(value, default=str)


def encode(
    entries: Iterable[tuple[str, str]], template_entries: Iterable[tuple[str, str]]
) -> list[dict[str, str]]:
    """A resource's suppressions as normalized properties hold them (``$suppressions``): its
    own, then its template's."""
    return [
        {"id": rule_id, "reason": reason, "where": where}
        for where, listed in (("resource", entries), ("template", template_entries))
        for rule_id, reason in listed
    ]


def for_resource(
    by_resource: Mapping[str, list[dict[str, str]]], shown: str
) -> list[dict[str, str]]:
    """The ``$suppressions`` entries for a resource as findings name it. A resource SAM made
    from a function's event (shown ``Function.Event``; no CloudFormation logical id has a dot)
    has the function's, which is where its author wrote them."""
    owner = shown.partition(".")[0]
    return by_resource.get(shown) or by_resource.get(owner) or by_resource.get("", [])


def in_source(finding: Finding, entries: Any) -> Finding:
    """The finding, accepted when ``entries`` (``$suppressions``) name its rule.
    QR902 is never suppressed: it is what tells of a suppression that does not work."""
    if finding.suppression or finding.rule_id == SUPPRESSION_RULE or not isinstance(entries, list):
        return finding
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == finding.rule_id:
            where = "the template's Metadata" if entry.get("where") == "template" else "Metadata"
            return replace(
                finding, suppression=IN_SOURCE, justification=f"{entry['reason']} ({where})"
            )
    return finding


def of_resource(finding: Finding, resource: Resource) -> Finding:
    return in_source(finding, resource.prop(SUPPRESSIONS))


# --- the suppressions file ---------------------------------------------------------------------


class SuppressionsFileError(ValueError):
    """A suppressions file that cannot be used: the run stops before reading the fleet."""


_ENTRY_KEYS = {"rule", "template", "stack", "resource", "reason", "expires"}
_PATTERN_KEYS = ("template", "stack", "resource")


@dataclass(frozen=True)
class FileSuppression:
    """One entry of a suppressions file. Patterns are shell globs (``fnmatch``): ``*`` matches
    any text, ``/`` included; a template pattern is matched against the path as given to the
    audit, with ``/`` separators."""

    rule: str
    reason: str
    source: str  # "<file> entry <n>", for messages
    template: str = "*"
    stack: str = "*"
    resource: str = "*"
    expires: datetime.date | None = None

    def matches(self, finding: Finding) -> bool:
        return (
            finding.rule_id == self.rule
            and fnmatch.fnmatchcase(finding.template.replace("\\", "/"), self.template)
            and fnmatch.fnmatchcase(finding.stack, self.stack)
            and fnmatch.fnmatchcase(finding.resource, self.resource)
        )

    def expired(self, today: datetime.date) -> bool:
        return self.expires is not None and self.expires < today

    def describe(self) -> str:
        scope = ", ".join(
            f"{k} {getattr(self, k)}" for k in _PATTERN_KEYS if getattr(self, k) != "*"
        )
        return f"{self.source} ({self.rule}{', ' + scope if scope else ''})"


def parse_file(path: str, document: Any, known_rules: Collection[str]) -> list[FileSuppression]:
    """A suppressions file's document (``{"suppressions": [...], "rules": {...}}``) -> its
    entries (a rule turned ``off`` is one, matching every finding of the rule), or a
    ``SuppressionsFileError`` naming the entry, the value and the fix."""
    listed = _listed_entries(path, document)
    found: list[FileSuppression] = []
    for rule_id, (level, reason, expires) in parse_rules(path, document, known_rules).items():
        if level == LEVEL_OFF:
            found.append(
                FileSuppression(
                    rule=rule_id, reason=reason, source=f"{path} rules.{rule_id}", expires=expires
                )
            )
    for position, entry in enumerate(listed, start=1):
        found.append(_file_entry(f"{path} entry {position}", entry, known_rules))
    return found


def _listed_entries(path: str, document: Any) -> list[Any]:
    """The file's ``suppressions`` list (empty when it has only ``rules``), or the error saying
    what the file must look like."""
    listed = document.get("suppressions", []) if isinstance(document, Mapping) else None
    has_rules = isinstance(document, Mapping) and "rules" in document
    if (
        not isinstance(listed, list)
        or not isinstance(document, Mapping)
        or ("suppressions" not in document and not has_rules)
    ):
        raise SuppressionsFileError(
            f"{path}: expected a mapping with a list under 'suppressions' or a mapping under "
            "'rules' (docs/audit/ci.md, \"Suppressions outside the template\")"
        )
    return listed


def _file_entry(source: str, entry: Any, known_rules: Collection[str]) -> FileSuppression:
    """One entry of the ``suppressions`` list, checked key by key (``source`` names it)."""
    if not isinstance(entry, Mapping):
        raise SuppressionsFileError(f"{source}: {entry!r} is not a mapping of rule, reason, ...")
    unknown = sorted(set(map(str, entry)) - _ENTRY_KEYS)
    if unknown:
        raise SuppressionsFileError(
            f"{source}: unknown key {', '.join(unknown)}; the keys are "
            f"{', '.join(sorted(_ENTRY_KEYS))}"
        )
    rule = entry.get("rule")
    if rule not in known_rules or rule == SUPPRESSION_RULE:
        raise SuppressionsFileError(
            f"{source}: rule {rule!r} is not a rule queue-audit reports (QR902 cannot be "
            "suppressed); give one id, such as QR009"
        )
    why_not = reason_problem(entry.get("reason"))
    if why_not:
        raise SuppressionsFileError(
            f"{source}: {rule} {why_not}; say why the finding is accepted, in at least "
            f"{MIN_REASON_LENGTH} characters"
        )
    patterns = {}
    for key in _PATTERN_KEYS:
        value = entry.get(key, "*")
        if not isinstance(value, str) or not value:
            raise SuppressionsFileError(
                f"{source}: {key} {value!r} is not a pattern; give a glob such as "
                "'teams/legacy/*' or leave it out (any)"
            )
        patterns[key] = value
    return FileSuppression(
        rule=str(rule),
        reason=entry["reason"].strip(),
        source=source,
        expires=_date(source, entry.get("expires")),
        **patterns,
    )


def parse_rules(
    path: str, document: Mapping[str, Any], known_rules: Collection[str]
) -> dict[str, tuple[str, str, datetime.date | None]]:
    """The file's ``rules`` mapping -> rule id -> (level, reason, expiry). A level is
    ``QR025: info`` or ``QR025: {level: off, reason: ..., expires: YYYY-MM-DD}``; ``off`` needs
    a reason, as every suppression does. YAML reads a bare ``off`` as false: that is ``off``."""
    given = document.get("rules", {})
    if not isinstance(given, Mapping):
        raise SuppressionsFileError(
            f"{path}: rules is not a mapping of rule id -> level; write rules: {{QR025: info}}"
        )
    levels: dict[str, tuple[str, str, datetime.date | None]] = {}
    for rule, value in given.items():
        source = f"{path} rules.{rule}"
        if rule not in known_rules or rule == SUPPRESSION_RULE:
            raise SuppressionsFileError(
                f"{source}: {rule!r} is not a rule queue-audit reports (QR902 cannot be "
                "turned down); give one id, such as QR025"
            )
        details = value if isinstance(value, Mapping) else {"level": value}
        unknown = sorted(set(map(str, details)) - {"level", "reason", "expires"})
        level = LEVEL_OFF if details.get("level") is False else details.get("level")
        if unknown or level not in LEVELS:
            raise SuppressionsFileError(
                f"{source}: {value!r} is not a level; write one of {', '.join(LEVELS)}, or "
                f"{{level: off, reason: ..., expires: YYYY-MM-DD}}"
            )
        reason = details.get("reason")
        why_not = reason_problem(reason) if level == LEVEL_OFF else None
        if why_not:
            raise SuppressionsFileError(
                f"{source}: off {why_not}; write {rule}: {{level: off, reason: ...}} saying why "
                f"no finding of {rule} matters in this fleet, in at least {MIN_REASON_LENGTH} "
                "characters"
            )
        levels[str(rule)] = (
            str(level),
            str(reason).strip() if isinstance(reason, str) else "",
            _date(source, details.get("expires")),
        )
    return levels


def _date(source: str, value: Any) -> datetime.date | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise SuppressionsFileError(
            f"{source}: expires {value!r} is not a date; write it as YYYY-MM-DD"
        ) from None


def external(findings: Iterable[Finding], active: list[FileSuppression]) -> Iterator[Finding]:
    """Each finding, accepted by the first active file entry that matches it."""
    for finding in findings:
        if not finding.suppression and finding.rule_id != SUPPRESSION_RULE:
            entry = next((s for s in active if s.matches(finding)), None)
            if entry is not None:
                finding = replace(
                    finding,
                    suppression=EXTERNAL,
                    justification=f"{entry.reason} ({entry.source})",
                )
        yield finding


def expired_findings(
    suppressions: list[FileSuppression], today: datetime.date, fix: str
) -> list[Finding]:
    """A QR902 for each entry past its expiry date: it no longer applies, and the run says so."""
    return [
        Finding(
            SUPPRESSION_RULE,
            "warning",
            s.source.rsplit(" entry ", 1)[0],
            "",
            "",
            "",
            f"suppression {s.describe()} expired on {s.expires}: the findings it accepted "
            "count again",
            fix,
        )
        for s in suppressions
        if s.expired(today)
    ]
