"""Generated fleets with a chosen share of queues whose context crosses templates.

``generate_templates.py --cross-stack FRACTION`` puts that share of the fleet's queues into
cross-stack pairs: a DLQ exported (or named by a literal ARN) to its source's stack, or a
function whose mappings read a queue of its own stack and one of another. The share is counted
here from the written templates, not taken from the generator; the findings must be the ground
truth on the local engine, and the same on Spark.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.model import Finding
from tests.audit.conftest import JOIN_WAYS
from tests.conftest import REPO_ROOT
from tests.support.scripts import load_script

FLEET_SIZE = 300

SHARES = (0.0, 0.1, 0.5)
# The generator starts a pair whenever the crossing queues so far fall below the share, so the
# share never strays from it by more than one pair's two crossing queues; at 300 templates
# (430-580 queues) that is under 0.5 %. The rest is the fleet's end, where no pair fits.
TOLERANCE = 0.02

Triple = tuple[str, str, str]  # (template relative to the fleet, rule id, resource)
Place = tuple[str, str]  # (template relative to the fleet, logical id)


@pytest.fixture(scope="module", params=SHARES, ids=lambda share: f"cross-{share}")
def fleet(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("cross-fleet")
    generated = load_script(REPO_ROOT / "bench" / "generate_templates.py").write(
        str(out), FLEET_SIZE, seed=11, cross_stack=request.param
    )
    truth = json.loads((out / "ground-truth.json").read_text())["findings"]
    expected = {(t["template"], t["rule_id"], t["resource"]) for t in truth}
    root = out / "templates"
    return request.param, root, expected, generated, engine.audit_paths([str(root)])


def _triples(root: Path, findings: Any) -> set[Triple]:
    return {(os.path.relpath(f.template, root), f.rule_id, f.resource) for f in findings}


def _json_templates(root: Path) -> dict[str, dict[str, Any]]:
    """The JSON templates that parse (every cross-stack pair is written as JSON)."""
    templates = {}
    for path in sorted(root.rglob("*.template.json")):
        try:
            templates[str(path.relative_to(root))] = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue  # a truncated file: no queue
    return templates


def _crossing_queues(root: Path) -> set[Place]:
    """Queues whose context holds a resource of another template: a dead-letter queue and its
    source in two stacks, a queue read by another stack's function, and the queues that
    function reads in its own stack."""
    templates = _json_templates(root)
    by_name: dict[str, Place] = {}
    exports: dict[str, Place] = {}
    for path, template in templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::SQS::Queue":
                by_name[resource["Properties"]["QueueName"]] = (path, logical_id)
        for output in template.get("Outputs", {}).values():
            exports[output["Export"]["Name"]] = (path, output["Value"]["Fn::GetAtt"][0])

    def elsewhere(path: str, reference: Any) -> Place | None:
        if isinstance(reference, dict) and "Fn::ImportValue" in reference:
            target = exports.get(reference["Fn::ImportValue"])
        elif isinstance(reference, str):
            target = by_name.get(reference.rsplit(":", 1)[-1])
        else:
            return None  # a reference within the template
        return target if target is not None and target[0] != path else None

    crossing: set[Place] = set()
    for path, template in templates.items():
        local_reads: dict[str, set[Place]] = defaultdict(set)
        remote_readers: set[str] = set()
        for logical_id, resource in template["Resources"].items():
            properties = resource.get("Properties", {})
            redrive = properties.get("RedrivePolicy", {}).get("deadLetterTargetArn")
            if (dlq := elsewhere(path, redrive)) is not None:
                crossing |= {dlq, (path, logical_id)}
            if resource["Type"] != "AWS::Lambda::EventSourceMapping":
                continue
            function = properties["FunctionName"]["Ref"]
            source = properties["EventSourceArn"]
            if (queue := elsewhere(path, source)) is not None:
                crossing.add(queue)
                remote_readers.add(function)
            elif "Fn::GetAtt" in source:
                local_reads[function].add((path, source["Fn::GetAtt"][0]))
        for function in remote_readers:
            crossing |= local_reads[function]
    return crossing


def test_the_share_of_crossing_queues_is_the_one_asked_for(fleet: Any) -> None:
    share, root, _, generated, result = fleet
    crossing = len(_crossing_queues(root))
    # The generator's own counts agree with the templates and with the audit's queue count.
    assert (generated.cross_queues, generated.queues) == (crossing, result.queues)
    if share == 0.0:
        assert crossing == 0
    assert abs(crossing / result.queues - share) <= TOLERANCE, (crossing, result.queues)


def test_the_local_engine_finds_the_ground_truth(fleet: Any) -> None:
    _, root, expected, _, result = fleet
    found = _triples(root, result.findings)
    assert found == expected, {
        "missed": sorted(expected - found)[:10],
        "extra": sorted(found - expected)[:10],
    }


def _spark_agrees(spark: Any, join_bytes: int, fleet: Any) -> None:
    from constructs_lib.audit.engines.spark.job import SparkEngine

    _, root, expected, _, local = fleet
    inputs = AuditInputs(discovery.discover([str(root)]))
    result = SparkEngine(spark, join_bytes).audit(inputs, AuditOptions())
    findings: list[Finding] = list(result.findings)
    assert _triples(root, findings) == _triples(root, local.findings)
    assert result.queues == local.queues
    # The join stage judged exactly the queues whose context crosses templates, and the queues
    # with a reference no template resolves (an import nothing exports, an allow-list entry
    # naming a queue of no template: their QR900), which only the fleet can tell; and it read
    # only their templates. Every other queue was judged where its template was parsed.
    joined = _crossing_queues(root) | {(t, r) for t, rule, r in expected if rule == "QR900"}
    assert result.cross_template == {
        "queues": len(joined),
        "templates": len({template for template, _ in joined}),
    }


@pytest.mark.spark
def test_spark_joining_on_the_driver_finds_what_the_local_engine_finds(
    spark: Any, fleet: Any
) -> None:
    _spark_agrees(spark, JOIN_WAYS["driver"], fleet)


# A fleet with no crossing queue gives the executors' joins nothing to join: they run on the
# fleets that cross.
@pytest.mark.spark
@pytest.mark.parametrize(
    "fleet", [share for share in SHARES if share > 0], indirect=True, ids=lambda s: f"cross-{s}"
)
def test_spark_joining_on_the_executors_finds_what_the_local_engine_finds(
    spark: Any, fleet: Any
) -> None:
    _spark_agrees(spark, JOIN_WAYS["executors"], fleet)
