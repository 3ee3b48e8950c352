"""How often each rule fires on a fleet: the evidence behind the audit's default profile.

    python bench/noise_bench.py                       # the real-shapes corpus of the tests
    python bench/noise_bench.py PATH [PATH ...]       # any templates, folders or cdk.out

For every rule: its findings, the queues it names (share of all queues audited), the templates
it names, and its severity under each profile (docs/audit/ci.md, "Profiles"). A rule that fires on
nearly every queue of a fleet written by careful authors is noise at ``warning``: the profile
table in the docs is read from this output. Counts, not timings: one run is the measurement.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from constructs_lib.audit import model, rules
from constructs_lib.audit.accept import profiles
from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery
from constructs_lib.audit.parse import isolation
from constructs_lib.audit.resolve import graph, nesting

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "audit" / "corpus_real_shapes"
NOT_TEMPLATES = {"expected.json", "parameters.json"}


def _populations(files: list[tuple[str, str]]) -> dict[str, int]:
    """How many queues (or mappings) each rule can fire on, from the same contexts the rules
    judge: a rule that fires on all of its population fires on every queue it could."""
    parsed = isolation.parse_files(files)
    # nested stacks whose parent passes plain values are judged as parsed again, as the engine does
    again, child_overrides = nesting.children((n for p in parsed for n in p.nested), files, None)
    if again:
        by_file = {p.file.file: p for p in isolation.parse_files(again, overrides=child_overrides)}
        parsed = [by_file.get(p.file.file, p) for p in parsed]
    resources = {r.uid: r for p in parsed for r in p.resources}
    resolved, _missing = graph.resolve(
        [e for p in parsed for e in p.edges],
        [k for p in parsed for k in p.keys],
        [x for p in parsed for x in p.exports],
    )
    queue_uids = sorted(uid for uid, r in resources.items() if r.type == model.QUEUE)
    groups: dict[str, list[tuple[str, str, model.ResourceRow]]] = defaultdict(list)
    for row in graph.members(queue_uids, resolved):
        if row.uid in resources:
            groups[row.queue_uid].append((row.member, row.detail, resources[row.uid]))
    counts = {"queues": 0, "sources": 0, "dead-letter queues": 0, "in a redrive": 0}
    counts["batch-failure mappings"] = 0
    for uid in queue_uids:
        ctx = model.build_context(uid, groups[uid])
        if ctx is None:
            continue
        counts["queues"] += 1
        dead_letter = ctx.is_dead_letter_queue
        counts["dead-letter queues"] += dead_letter
        counts["sources"] += not dead_letter
        counts["in a redrive"] += bool(ctx.dead_letter_queues or ctx.sources)
        for consumer in ctx.consumers:
            kinds = consumer.mapping.prop("FunctionResponseTypes")
            counts["batch-failure mappings"] += bool(
                isinstance(kinds, list) and "ReportBatchItemFailures" in kinds
            )
    return counts


# The population each noisy rule is judged on (the others: every queue).
POPULATION = {
    "QR001": "sources",
    "QR009": "sources",
    "QR010": "dead-letter queues",
    "QR004": "dead-letter queues",
    "QR025": "in a redrive",
    "QR015": "batch-failure mappings",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(CORPUS)])
    args = parser.parse_args(argv)
    files = [
        (path, stack)
        for path, stack in discovery.discover(args.paths)
        if Path(path).name not in NOT_TEMPLATES
    ]
    result = engine.audit(AuditInputs(files), AuditOptions())
    queues_of: dict[str, set[tuple[str, str]]] = defaultdict(set)
    count: dict[str, int] = defaultdict(int)
    for finding in result.findings:
        count[finding.rule_id] += 1
        if finding.queue:
            queues_of[finding.rule_id].add((finding.template, finding.queue))
    populations = _populations(files)
    names = profiles.PROFILES
    print(
        f"{len(files)} templates, {len(result.findings)} findings; "
        + ", ".join(f"{count} {what}" for what, count in populations.items())
    )
    header = f"{'rule':6} {'catalog':8} " + " ".join(f"{n:12}" for n in names)
    print(f"{header} {'findings':>8} {'queues':>6} {'of':>4} {'share':>6}  population")
    for rule_id, severity, _title, _fix in rules.describe_rules():
        if not count[rule_id]:
            continue
        levels = " ".join(f"{profiles.level(n, rule_id, severity):12}" for n in names)
        population = POPULATION.get(rule_id, "queues")
        hit = count[rule_id] if rule_id == "QR015" else len(queues_of[rule_id])
        total = max(populations[population], 1)
        print(
            f"{rule_id:6} {severity:8} {levels} {count[rule_id]:8} "
            f"{hit:6} {total:4} {hit / total:6.0%}  {population}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
