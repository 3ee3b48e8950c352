"""Profiles: which rules report at which severity, and the order a report lists them in.

The rule catalog (``rules.CATALOG``) gives each rule one severity, the one profile ``all``
reports. The default profile, ``recommended``, reports the rules that fire on nearly every queue
of careful fleets and whose fault is a gap in observability or hardening, not a message lost or
processed twice, as ``info``: still listed and counted, never deciding the exit status under
``--fail-on warning``. The evidence is in docs/audit/ci.md ("Profiles"), measured with
``bench/noise_bench.py``.

A suppressions file may set a rule's level for its fleet (``rules: {QR025: off}``): ``off``
accepts every finding of the rule as an external suppression naming the file, so the findings
stay in the JSON and SARIF outputs and in the summary's ``suppressed`` count; ``info``,
``warning`` and ``error`` report the rule at that severity. The file's levels win over the
profile's.
"""

from __future__ import annotations

from collections.abc import Mapping

from constructs_lib.audit.model import SEVERITIES

# The levels a rule can be reported at: off (every finding accepted), or a severity. The one
# table a suppressions file's ``rules`` levels are checked against.
LEVEL_OFF = "off"
LEVELS: tuple[str, ...] = (LEVEL_OFF, *SEVERITIES)
RECOMMENDED = "recommended"
ALL = "all"
PROFILES = (RECOMMENDED, ALL)
DEFAULT_PROFILE = RECOMMENDED

# The recommended profile's departures from the catalog, each with its reason. Every other rule
# reports at its catalog severity.
_RECOMMENDED_LEVELS: dict[str, tuple[str, str]] = {
    "QR013": (
        "info",
        "hardening: AWS SDKs and the CLI call SQS over HTTPS by default; fires on nearly every "
        "queue of public fleets",
    ),
    "QR015": (
        "info",
        "event source metrics (2025) are opt-in; fires on every consumer that reports batch item "
        "failures, and the DLQ depth alarm still catches what fails",
    ),
    "QR025": (
        "info",
        "AWS's recommended SQS alarms include one on ApproximateAgeOfOldestMessage, with a "
        "threshold that depends on the workload; fires on every queue of a redrive in public "
        "fleets",
    ),
}

# What a report lists first within one severity: faults that lose messages, then those that
# fail a deploy or process messages twice, then exposure, then blind spots, then hygiene. A rule
# not named here comes after these, in id order.
IMPACT_ORDER: tuple[str, ...] = (
    # messages lost or never retried (QR031: observed, about to expire)
    "QR031",
    "QR018",
    "QR003",
    "QR001",
    "QR021",
    "QR005",
    "QR002",
    "QR029",
    "QR019",
    # deploy fails, messages processed twice, consumers throttled (QR030, QR033: observed)
    "QR030",
    "QR006",
    "QR014",
    "QR016",
    "QR026",
    "QR027",
    "QR007",
    "QR008",
    "QR017",
    "QR033",
    "QR022",
    "QR028",
    # exposure
    "QR023",
    "QR012",
    # failures nobody sees (QR032: observed dead letters)
    "QR032",
    "QR010",
    "QR011",
    "QR024",
    "QR020",
    "QR025",
    "QR009",
    "QR015",
    # hygiene
    "QR004",
    "QR013",
    "QR034",
    # about the audit itself
    "QR904",
    "QR901",
    "QR902",
    "QR900",
)
_IMPACT = {rule_id: position for position, rule_id in enumerate(IMPACT_ORDER)}


def impact(rule_id: str) -> int:
    """A rule's place in ``IMPACT_ORDER`` (lower lists first)."""
    return _IMPACT.get(rule_id, len(IMPACT_ORDER))


def level(profile: str, rule_id: str, catalog_severity: str) -> str:
    """The severity ``profile`` reports ``rule_id`` at."""
    if profile == RECOMMENDED and rule_id in _RECOMMENDED_LEVELS:
        return _RECOMMENDED_LEVELS[rule_id][0]
    return catalog_severity


def departures(profile: str) -> tuple[str, ...]:
    """The rules ``profile`` reports away from their catalog severity, in id order."""
    return tuple(sorted(_RECOMMENDED_LEVELS)) if profile == RECOMMENDED else ()


def reason(profile: str, rule_id: str) -> str:
    """Why ``profile`` reports ``rule_id`` away from its catalog severity ("" if it does not)."""
    if profile == RECOMMENDED and rule_id in _RECOMMENDED_LEVELS:
        return _RECOMMENDED_LEVELS[rule_id][1]
    return ""


def levels(
    profile: str, catalog: Mapping[str, str], overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Rule id -> level for every rule whose level differs from its catalog severity under
    ``profile`` and a suppressions file's ``overrides`` (which win)."""
    chosen = {rule_id: level(profile, rule_id, severity) for rule_id, severity in catalog.items()}
    chosen.update(overrides or {})
    return {rule_id: lvl for rule_id, lvl in chosen.items() if lvl != catalog.get(rule_id)}
