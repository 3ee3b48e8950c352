"""Recall and precision per rule on a generated corpus with known injected faults.

The generator (bench/generate_templates.py) derives each template's expected findings from the
fault it injected, by hand, not by running the audit.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from constructs_lib.audit import rules
from constructs_lib.audit.engines import AuditInputs
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import Finding
from constructs_lib.audit.rules import behaviour, describe_rules
from tests.audit.conftest import EngineAudit
from tests.support.scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]

CORPUS_SIZE = 300

Triple = tuple[str, str, str]  # (template relative to the corpus, rule id, resource)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[Triple]]:
    out = tmp_path_factory.mktemp("corpus")
    load_script(REPO_ROOT / "bench" / "generate_templates.py").write(str(out), CORPUS_SIZE, seed=11)
    truth = json.loads((out / "ground-truth.json").read_text())["findings"]
    return out / "templates", {(t["template"], t["rule_id"], t["resource"]) for t in truth}


def _triples(root: Path, findings: list[Finding]) -> set[Triple]:
    return {(os.path.relpath(f.template, root), f.rule_id, f.resource) for f in findings}


def _per_rule(expected: set[Triple], found: set[Triple]) -> dict[str, tuple[float, float]]:
    by_rule: dict[str, dict[str, set[Triple]]] = defaultdict(lambda: {"e": set(), "f": set()})
    for triple in expected:
        by_rule[triple[1]]["e"].add(triple)
    for triple in found:
        by_rule[triple[1]]["f"].add(triple)
    scores = {}
    for rule, sets in by_rule.items():
        hits = len(sets["e"] & sets["f"])
        recall = hits / len(sets["e"]) if sets["e"] else 1.0
        precision = hits / len(sets["f"]) if sets["f"] else 1.0
        scores[rule] = (recall, precision)
    return scores


def test_corpus_covers_every_rule(corpus: tuple[Path, set[Triple]]) -> None:
    # The behaviour rules judge observed metrics, which templates have not
    # (test_behaviour_rules.py holds their cases); QR904 is an account or region of --deployed
    # that could not be read (test_deployed.py).
    _, expected = corpus
    templates_can_show = (
        {rule_id for rule_id, *_ in describe_rules()}
        - {rule.id for rule in behaviour.RULES}
        - {rules.UNREACHABLE_RULE}
    )
    assert {rule for _, rule, _ in expected} == templates_can_show


@pytest.mark.spark
def test_spark_recall_and_precision_per_rule(
    spark_audit: EngineAudit, corpus: tuple[Path, set[Triple]]
) -> None:
    root, expected = corpus
    result = spark_audit(AuditInputs(discovery.discover([str(root)])))
    scores = _per_rule(expected, _triples(root, result.findings))
    assert scores == {rule: (1.0, 1.0) for rule in scores}, {
        "missed": sorted(expected - _triples(root, result.findings))[:10],
        "extra": sorted(_triples(root, result.findings) - expected)[:10],
    }
    assert len(result.files) == CORPUS_SIZE


def test_engine_recall_and_precision_per_rule(corpus: tuple[Path, set[Triple]]) -> None:
    root, expected = corpus
    result = engine.audit_paths([str(root)])
    found = _triples(root, result.findings)
    assert found == expected
    scores = _per_rule(expected, found)
    assert set(scores.values()) == {(1.0, 1.0)}
