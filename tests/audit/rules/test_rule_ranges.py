"""Where the in-app plugin's docstring and queue-audit's help name rules by range, or list the
rules the default profile reports as info, they say what the rule catalog and the profiles say:
a rule added to the catalog, or a range written by hand, fails here. The rules page has its own
checks (``test_rules_page.py``)."""

from __future__ import annotations

import re

import pytest

from constructs_lib.audit import cli_options, rules
from constructs_lib.audit.accept import profiles

RANGE = re.compile(r"\bQR\d{3}-QR\d{3}\b")
GROUPS = (
    rules.RULE_IDS,
    rules.QUEUE_RULE_IDS,
    rules.CONFIGURATION_RULE_IDS,
    rules.BEHAVIOUR_RULE_IDS,
    rules.META_RULE_IDS,
)


def catalog_ranges() -> set[str]:
    """Every run of consecutive ids of a group of the catalog: what a range may say."""
    return {run for ids in GROUPS for run in re.split(r", | and ", rules.id_ranges(ids))}


def lowered() -> str:
    return ", ".join(profiles.departures(profiles.RECOMMENDED))


def test_ranges_are_runs_of_consecutive_ids() -> None:
    assert rules.id_ranges(["QR003", "QR001", "QR002", "QR005", "QR900"]) == (
        "QR001-QR003, QR005 and QR900"
    )
    assert rules.id_ranges(rules.RULE_IDS) == "QR001-QR034 and QR900-QR904"


def test_the_profile_lowers_the_rules_it_has_reasons_for() -> None:
    assert profiles.departures(profiles.ALL) == ()
    assert all(
        profiles.reason(profiles.RECOMMENDED, rule_id)
        for rule_id in profiles.departures(profiles.RECOMMENDED)
    )


def test_the_plugin_docstring_names_the_catalog() -> None:
    pytest.importorskip("aws_cdk")
    from constructs_lib.checks import QueueResilienceChecks

    doc = QueueResilienceChecks.__doc__ or ""
    assert f"Runs the audit's rules ({rules.id_ranges(rules.RULE_IDS)})" in doc
    assert f"({lowered()}) report as info" in doc
    assert set(RANGE.findall(doc)) <= catalog_ranges()
    assert "{" not in doc.split(":param", 1)[0]


def test_the_cli_help_names_the_catalog() -> None:
    parser = cli_options.build_parser()
    groups = {group.title or "" for group in parser._action_groups}
    helps = {action.dest: action.help or "" for action in parser._actions}
    texts = [parser.description or "", *groups, *helps.values()]
    assert f"(rules {rules.id_ranges(rules.QUEUE_RULE_IDS)})" in (parser.description or "")
    assert (
        f"metrics (how the queues behave: rules {rules.id_ranges(rules.BEHAVIOUR_RULE_IDS)})"
        in (groups)
    )
    assert f"({lowered()}) report as info" in helps["profile"]
    assert {r for text in texts for r in RANGE.findall(text)} <= catalog_ranges()


def test_the_plugin_s_profile_parameter_names_the_lowered_rules() -> None:
    # The parameter tables import nothing from the audit (tests/test_layout.py), so the plugin's
    # table writes the rules out; this holds it to the profiles, as the docstring is held.
    from constructs_lib.params.prop_tables import CHECKS

    (profile,) = [param for param in CHECKS.params if param.name == "profile"]
    departures = profiles.departures(profiles.RECOMMENDED)
    written = f"{', '.join(departures[:-1])} and {departures[-1]} as info"
    assert written in profile.rule
