"""Recall and precision per rule on templates in the shapes of public AWS sample repositories.

The templates under ``corpus_real_shapes/`` were written here in the shapes real sample
applications use (SAM functions with SQS events and Globals, services that send their failures
to queues, parameters with and without defaults, conditions, nested stacks, EventBridge Pipes,
Rain module directives). ``expected.json`` lists every finding an expert reviewer expects, each
with the reason, worked out by hand from the rule catalog, never by running the audit.

A sub-folder may hold a ``parameters.json`` (CloudFormation's ``ParameterKey``/``ParameterValue``
list); its values override the parameters of every template in that sub-folder. The corpus's own
``parameters.json`` overrides, for every stack ("*"), the parameters a stack declares.

Both engines audit the same files with the same overrides; they must find exactly the expected
(template, rule, resource) triples, and the same findings as each other.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import Finding
from tests.audit.conftest import EngineAudit

CORPUS = Path(__file__).resolve().parent / "corpus_real_shapes"

EXPECTED = CORPUS / "expected.json"
PARAMETERS_FILE = "parameters.json"
NOT_TEMPLATES = {EXPECTED.name, PARAMETERS_FILE}

Triple = tuple[str, str, str]  # (template relative to the corpus, rule id, resource)


def _files() -> list[tuple[str, str]]:
    """Every template of the corpus as ``(path, stack name)``; the corpus's own data files out."""
    return [
        (path, stack)
        for path, stack in discovery.discover([str(CORPUS)])
        if os.path.basename(path) not in NOT_TEMPLATES
    ]


def _parameters(files: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """Stack name (or "*") -> overrides, from the parameters.json files of the corpus.

    The corpus's own parameters.json applies to every stack ("*"); a sub-folder's applies to
    the templates in that sub-folder, by their stack names.
    """
    overrides: dict[str, dict[str, str]] = {}
    for parameters_file in sorted(CORPUS.rglob(PARAMETERS_FILE)):
        entries = json.loads(parameters_file.read_text())
        values = {str(e["ParameterKey"]): str(e["ParameterValue"]) for e in entries}
        folder = parameters_file.parent.resolve()
        if folder == CORPUS.resolve():
            overrides["*"] = values
            continue
        for path, stack in files:
            if Path(path).resolve().parent == folder:
                assert stack not in overrides, f"two templates of the corpus share stack {stack}"
                overrides[stack] = dict(values)
    return overrides


def _expected() -> dict[Triple, str]:
    entries = json.loads(EXPECTED.read_text())
    expected = {(e["template"], e["rule_id"], e["resource"]): e["why"] for e in entries}
    assert len(expected) == len(entries), "expected.json lists a triple twice"
    return expected


def _triples(findings: list[Finding]) -> set[Triple]:
    return {
        (Path(os.path.relpath(f.template, CORPUS)).as_posix(), f.rule_id, f.resource)
        for f in findings
    }


def _per_rule(expected: set[Triple], found: set[Triple]) -> dict[str, tuple[float, float]]:
    by_rule: dict[str, dict[str, set[Triple]]] = defaultdict(lambda: {"e": set(), "f": set()})
    for triple in expected:
        by_rule[triple[1]]["e"].add(triple)
    for triple in found:
        by_rule[triple[1]]["f"].add(triple)
    scores = {}
    for rule, sets in sorted(by_rule.items()):
        hits = len(sets["e"] & sets["f"])
        recall = hits / len(sets["e"]) if sets["e"] else 1.0
        precision = hits / len(sets["f"]) if sets["f"] else 1.0
        scores[rule] = (round(recall, 3), round(precision, 3))
    return scores


def _report(engine_name: str, expected: dict[Triple, str], found: set[Triple]) -> str:
    lines = [f"{engine_name}: recall/precision per rule {_per_rule(set(expected), found)}"]
    missing = sorted(set(expected) - found)
    extra = sorted(found - set(expected))
    lines.append(f"missing ({len(missing)}):")
    lines += [f"  {t} | {r} | {res or '-'} | {expected[(t, r, res)]}" for t, r, res in missing]
    lines.append(f"extra ({len(extra)}):")
    lines += [f"  {t} | {r} | {res or '-'}" for t, r, res in extra]
    return "\n".join(lines)


def _check(engine_name: str, findings: list[Finding]) -> None:
    expected = _expected()
    found = _triples(findings)
    report = _report(engine_name, expected, found)
    print(report)
    assert found == set(expected), report
    assert set(_per_rule(set(expected), found).values()) == {(1.0, 1.0)}, report


@pytest.fixture(scope="module")
def corpus_files() -> list[tuple[str, str]]:
    files = _files()
    assert len({stack for _, stack in files}) == len(files), "stack names must be unique"
    return files


@pytest.fixture(scope="module")
def local_findings(corpus_files: list[tuple[str, str]]) -> list[Finding]:
    paths = [path for path, _ in corpus_files]
    return engine.audit_paths(paths, overrides=_parameters(corpus_files)).findings


def test_expected_findings_are_reviewable() -> None:
    """Every expected triple names a template of the corpus, a known rule, and says why."""
    from constructs_lib.audit.rules import describe_rules

    rule_ids = {rule_id for rule_id, *_ in describe_rules()}
    templates = {Path(os.path.relpath(p, CORPUS)).as_posix() for p, _ in _files()}
    for (template, rule_id, _resource), why in _expected().items():
        assert template in templates, template
        assert rule_id in rule_ids, rule_id
        assert why.strip().startswith(rule_id), (template, rule_id, why)


def test_engine_recall_and_precision_per_rule(local_findings: list[Finding]) -> None:
    _check("engine", local_findings)


@pytest.mark.spark
def test_spark_recall_and_precision_per_rule(
    spark_audit: EngineAudit, corpus_files: list[tuple[str, str]]
) -> None:
    result = spark_audit(
        AuditInputs(corpus_files), AuditOptions(overrides=_parameters(corpus_files))
    )
    _check("spark", result.findings)


@pytest.mark.spark
def test_spark_and_engine_find_the_same(
    spark_audit: EngineAudit, corpus_files: list[tuple[str, str]], local_findings: list[Finding]
) -> None:
    result = spark_audit(
        AuditInputs(corpus_files), AuditOptions(overrides=_parameters(corpus_files))
    )
    assert sorted(result.findings, key=Finding.sort_key) == sorted(
        local_findings, key=Finding.sort_key
    ), "the Spark job and the single-process engine disagree"
