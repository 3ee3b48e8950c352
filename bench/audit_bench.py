"""Benchmark the fleet audit: templates/s, peak memory and stage times, with peers on a sample.

    python bench/audit_bench.py --sizes 1000 10000 --runs 3 --out bench/results/audit

For each size, a corpus from bench/generate_templates.py (known injected faults) is audited by:
- the Spark job (``--master``, default local[*]) and
- the single-process engine (the same parse -> resolve -> evaluate without Spark),
each in a fresh child process, ``--runs`` times; the median run is reported. Peak memory is the
largest sum of RSS over the child's whole process tree (Python driver, JVM, Python workers),
sampled from /proc every 0.2 s. Each run's findings are checked against the ground truth.

On a ``--peer-sample`` sized corpus, cfn-lint (this environment) and checkov (its own virtual
environment, ``.bench-venvs/checkov``) run over the same files; a peer "catches" an injected
fault when, in a template with that single fault, it reports a check it does not report on the
same resource of a fault-free template (so checks that fire on every queue are not counted).
Results: a JSON file and a Markdown table in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import generate_templates as generator  # noqa: E402

CHECKOV = REPO / ".bench-venvs" / "checkov" / "bin" / "checkov"


# --- process-tree memory -------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            tree[int(fields[1])].append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return tree


def _tree_rss(root: int) -> int:
    """Bytes of resident memory of ``root`` and all its descendants."""
    tree = _children()
    total, stack = 0, [root]
    page = os.sysconf("SC_PAGE_SIZE")
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
                total += int(handle.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total


def measure(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``command``; wall time, peak process-tree RSS, exit code and stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env or os.environ.copy())
        peak = 0
        while process.poll() is None:
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.2)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return {
            "wall_s": wall,
            "peak_rss_mb": peak / 2**20,
            "returncode": process.returncode,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace")[-2000:],
        }


# --- child: one audit run ------------------------------------------------------------------------


def child(engine_name: str, corpus: Path, master: str, report_path: str) -> None:
    started = time.perf_counter()
    from constructs_lib.audit import discovery, engine, report

    files = discovery.discover([str(corpus / generator.TEMPLATES_DIR)])
    imported = time.perf_counter()
    if engine_name == "spark":
        from constructs_lib.audit import job

        spark = job.create_session(master)
        session = time.perf_counter()
        result = job.run(spark, files)
    else:
        session = time.perf_counter()
        result = engine.audit_files(files)
    mark = time.perf_counter()
    with open(report_path, "w", encoding="utf-8") as handle:
        handle.write(report.render_json(result))
    result.timings["write"] = result.timings.get("write", 0.0) + time.perf_counter() - mark
    root = str(corpus / generator.TEMPLATES_DIR)
    found = {(os.path.relpath(f.template, root), f.rule_id, f.resource) for f in result.findings}
    truth = json.loads((corpus / "ground-truth.json").read_text())["findings"]
    expected = {(t["template"], t["rule_id"], t["resource"]) for t in truth}
    print(
        json.dumps(
            {
                "files": len(result.files),
                "findings": len(result.findings),
                "timings": result.timings,
                "startup_s": session - started,
                "import_s": imported - started,
                "audit_s": time.perf_counter() - session,
                "missed": len(expected - found),
                "extra": len(found - expected),
            }
        )
    )


# --- peers ---------------------------------------------------------------------------------------


def _cfn_lint(files: list[Path]) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    command = [
        str(Path(sys.executable).parent / "cfn-lint"),
        "--format",
        "json",
        "--",
        *map(str, files),
    ]
    measured = measure(command)
    matches = json.loads(measured["stdout"] or "[]")
    found = []
    for match in matches:
        path = match.get("Location", {}).get("Path") or []
        resource = str(path[1]) if len(path) > 1 and path[0] == "Resources" else ""
        found.append((match["Filename"], resource, match["Rule"]["Id"]))
    return measured, found


def _checkov(folder: Path) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    command = [
        str(CHECKOV),
        "-d",
        str(folder),
        "--framework",
        "cloudformation",
        "-o",
        "json",
        "--quiet",
        "--compact",
        "--skip-download",
    ]
    measured = measure(command)
    text = measured["stdout"]
    found: list[tuple[str, str, str]] = []
    try:
        document = json.loads(
            text[text.index("{") if text.lstrip().startswith("{") else text.index("[") :]
        )
    except ValueError:
        return measured, found
    reports = document if isinstance(document, list) else [document]
    for item in reports:
        for check in item.get("results", {}).get("failed_checks", []):
            resource = str(check.get("resource", "")).split(".", 1)[-1]
            file_path = str(folder) + check.get("file_path", "")
            found.append((file_path, resource, check["check_id"]))
        # Files checkov cannot parse are only counted in its summary, not named: no catches.
    return measured, found


def peers(corpus: Path, sample: int) -> dict[str, Any]:
    """cfn-lint and checkov on the corpus, with their catches of the injected faults."""
    root = corpus / generator.TEMPLATES_DIR
    files = sorted(p for p in root.rglob("*") if p.is_file())[:sample]
    truth = json.loads((corpus / "ground-truth.json").read_text())["findings"]
    in_sample = {str(p.relative_to(root)) for p in files}
    expected = [t for t in truth if t["template"] in in_sample]
    # Fault-free baselines: which checks a peer reports on healthy resources anyway.
    with tempfile.TemporaryDirectory() as baseline_dir:
        base = Path(baseline_dir)
        (base / "standard.template.json").write_text(json.dumps(generator.healthy("base")))
        (base / "fifo.template.json").write_text(json.dumps(generator.healthy("basefifo", True)))
        results: dict[str, Any] = {}
        for name, run in (
            ("cfn-lint", lambda: _cfn_lint(files)),
            ("checkov", lambda: _checkov(root)),
        ):
            if name == "checkov" and not CHECKOV.exists():
                results[name] = {"skipped": "checkov is not installed in .bench-venvs/checkov"}
                continue
            baseline_run = (
                _cfn_lint(sorted(base.iterdir())) if name == "cfn-lint" else _checkov(base)
            )[1]
            noise = {(resource, check) for _, resource, check in baseline_run}
            measured, found = run()
            by_place: dict[tuple[str, str], set[str]] = defaultdict(set)
            for file_name, resource, check in found:
                if (resource, check) in noise:
                    continue
                relative = os.path.relpath(os.path.abspath(file_name), root)
                by_place[(relative, resource)].add(check)
                by_place[(relative, "*")].add(check)
            # Count only templates with a single injected fault: any check there that the
            # fault-free template does not get is that fault's catch, wherever it is reported.
            caught: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            checks_used: dict[str, set[str]] = defaultdict(set)
            for fault in expected:
                if "+" in fault["faults"]:
                    continue
                caught[fault["rule_id"]][1] += 1
                if by_place.get((fault["template"], "*")):
                    caught[fault["rule_id"]][0] += 1
                    checks_used[fault["rule_id"]] |= by_place[(fault["template"], "*")]
            results[name] = {
                "files": len(files),
                "wall_s": measured["wall_s"],
                "peak_rss_mb": measured["peak_rss_mb"],
                "templates_per_s": len(files) / measured["wall_s"],
                "caught": {rule: f"{c}/{n}" for rule, (c, n) in sorted(caught.items())},
                "checks": {rule: sorted(v) for rule, v in sorted(checks_used.items())},
            }
    return results


# --- parent --------------------------------------------------------------------------------------


def run_engine(engine_name: str, corpus: Path, runs: int, master: str) -> dict[str, Any]:
    samples = []
    for _ in range(runs):
        with tempfile.NamedTemporaryFile(suffix=".json") as report_file:
            measured = measure(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    engine_name,
                    "--corpus",
                    str(corpus),
                    "--master",
                    master,
                    "--report",
                    report_file.name,
                ]
            )
        if measured["returncode"] != 0:
            raise SystemExit(f"{engine_name} run failed:\n{measured['stderr']}")
        detail = json.loads(measured["stdout"].strip().splitlines()[-1])
        samples.append({**measured, **detail})
    median = sorted(samples, key=lambda s: s["wall_s"])[len(samples) // 2]
    files = median["files"]
    return {
        "engine": engine_name,
        "files": files,
        "runs": runs,
        "wall_s_median": statistics.median(s["wall_s"] for s in samples),
        "wall_s_all": [round(s["wall_s"], 1) for s in samples],
        "audit_s_median": statistics.median(s["audit_s"] for s in samples),
        "templates_per_s": files / statistics.median(s["wall_s"] for s in samples),
        "templates_per_s_audit_only": files / statistics.median(s["audit_s"] for s in samples),
        "peak_rss_mb_max": max(s["peak_rss_mb"] for s in samples),
        "stages_s": {k: round(v, 2) for k, v in median["timings"].items()},
        "startup_s": round(median["startup_s"], 2),
        "findings": median["findings"],
        "missed": median["missed"],
        "extra": median["extra"],
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| templates | engine | median wall s | templates/s (wall) | templates/s (audit only) "
        "| peak RSS MiB | startup s | parse s | resolve s | evaluate s | write s | missed/extra |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["engines"]:
        stages = row["stages_s"]
        lines.append(
            f"| {row['files']:,} | {row['engine']} | {row['wall_s_median']:.1f} "
            f"| {row['templates_per_s']:.0f} | {row['templates_per_s_audit_only']:.0f} "
            f"| {row['peak_rss_mb_max']:.0f} | {row['startup_s']:.1f} "
            f"| {stages.get('parse', 0):.1f} | {stages.get('resolve', 0):.1f} "
            f"| {stages.get('evaluate', 0):.1f} | {stages.get('write', 0):.1f} "
            f"| {row['missed']}/{row['extra']} |"
        )
    if results.get("peers"):
        lines += [
            "",
            "| peer | templates | wall s | templates/s | peak RSS MiB | injected faults "
            "caught per rule |",
            "|---|---|---|---|---|---|",
        ]
        for name, peer in results["peers"].items():
            if "skipped" in peer:
                lines.append(f"| {name} | - | - | - | - | {peer['skipped']} |")
                continue
            caught = ", ".join(f"{rule} {value}" for rule, value in peer["caught"].items())
            lines.append(
                f"| {name} | {peer['files']} | {peer['wall_s']:.1f} "
                f"| {peer['templates_per_s']:.0f} | {peer['peak_rss_mb']:.0f} | {caught} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["spark", "python"])
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--peer-sample", type=int, default=1000, help="0 to skip the peers")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "audit"))
    parser.add_argument("--child", choices=["spark", "python"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.corpus), args.master, args.report)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "engines": [],
        "peers": {},
    }
    for size in args.sizes:
        corpus = out / f"corpus-{size}"
        if not (corpus / "ground-truth.json").exists():
            generator.write(str(corpus), size)
        for engine_name in args.engines:
            row = run_engine(engine_name, corpus, args.runs, args.master)
            results["engines"] = [
                r
                for r in results["engines"]
                if (r["files"], r["engine"]) != (row["files"], row["engine"])
            ] + [row]
            results["engines"].sort(key=lambda r: (r["files"], r["engine"] != "spark"))
            print(json.dumps(row), flush=True)
            (out / "results.json").write_text(json.dumps(results, indent=1))
    if args.peer_sample:
        corpus = out / f"corpus-{args.peer_sample}"
        if not (corpus / "ground-truth.json").exists():
            generator.write(str(corpus), args.peer_sample)
        results["peers"] = peers(corpus, args.peer_sample)
        print(json.dumps(results["peers"]), flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
