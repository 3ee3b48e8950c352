"""Benchmark the fleet audit: templates/s, CPU time, peak memory, stage times and COST, with peers
on a sample.

    python bench/audit_bench.py --sizes 1000 10000 --runs 3 --out bench/results/audit
    python bench/audit_bench.py --sizes 1000 --engines local spark cluster connect --peer-sample 0
    python bench/audit_bench.py --sizes 10000 100000 --runs 3 --peer-sample 0 \
        --engines local-1 local-2 spark cluster-1 cluster-2 --cross-stack 0.1

For each size, a corpus from bench/generate_templates.py (known injected faults; with
``--cross-stack FRACTION``, that share of its queues in cross-stack pairs) is audited by each
engine of ``--engines``:
- ``local``: the local engine (``engine.audit``: parse -> resolve -> evaluate without
  Spark, parsing in worker processes on this machine, one per core), as ``queue-audit --engine
  local``; ``python``, its former name here, is accepted as an alias; ``local-1`` and
  ``local-2``: the same with one and with two parsing workers (``workers=N``);
- ``spark``: the Spark job on a classic local session (``--master``, default local[2]);
- ``cluster-1``, ``cluster-2``: the Spark job with its driver in the child, on a standalone
  cluster of 1 or 2 workers x 1 core, 1g each (daemons with a 512m heap, as the test fixture
  gives them); ``cluster`` is an alias of ``cluster-2``;
- ``connect``: the Spark job through a Spark Connect server running ``--master local[2]``.
The clusters and the server run on 127.0.0.1, started from the pyspark distribution by
``StandaloneCluster`` and ``ConnectServer`` of tests/support/clusters.py, once per invocation: each
runs only while its own engine is measured (all sizes), so that idle JVMs take no memory or CPU
from the other engines, and is stopped when that engine is done or the bench fails (logs, work
and scratch directories: ``--out``/daemons/ENGINE, replaced on each invocation). Their
executors and Python workers run this interpreter: the bench measures speed, not packaging.
Unlike in the tests, no JVM gets the fixtures' JAVA_TOOL_OPTIONS (C1 compiler only, serial GC:
they favour the start-up of short test jobs); the variable is removed from the environment of
every child and daemon, so all JVMs run with their default JIT compilers and collectors.

Each engine audits each corpus ``--runs`` times, each time in a fresh child process (the client);
the median run is reported. Wall time is the whole child: interpreter, imports, session, audit,
JSON report and, for Spark, stopping the session (which releases it on a Connect server); the
cluster's and the server's own start-up is not in it (reported apart). Each run's findings are
checked against the ground truth (by this parent, from the report file, so that the check
costs the measured child nothing), and the bench stops at the first run that misses one or finds
one too many. Memory is sampled from /proc every 0.2 s while the child runs:
- peak RSS: the largest sum of RSS over the child's whole process tree: the Python driver and
  what it starts (the local engine's parsing workers; a classic session's driver JVM, and with a
  local master its Python workers). For ``cluster`` and ``connect`` this is the client only: the
  cluster's daemons and executors are not the child's descendants;
- driver peak RSS: the child Python process alone, which writes the report as queue-audit
  does (on Spark: findings streamed from the executors, counts computed by Spark);
- cluster peak RSS (``cluster``, ``connect``): the largest sum of RSS over the process trees of
  the master and the workers (the executor JVMs and their Python workers are the workers'
  descendants), or of the Connect server (its JVM and Python workers), in the same samples;
  the JSON also has their sum just before the child starts (``cluster_idle_rss_mb``).
CPU time is user + system seconds, the child's whole tree (client): its rusage once reaped
(``os.wait4``), which holds every descendant it reaped (parsing workers, a classic session's
JVM and Python workers), plus the processes that outlive it (a driver JVM still stopping),
sampled until they exit. For ``cluster-N`` and ``connect`` also the daemons' trees (cluster):
from /proc, each process's own and reaped ticks just before the child starts and just after it
exits, so executors that exit meanwhile count in the worker that reaped them.
Stage times are each engine's own (``AuditResult.timings``); the Spark job has no resolve stage
apart (its joins run lazily inside evaluate), shown as "-".
"Throughput vs local" ("vs local-1") is the median wall of ``local`` (``local-1``) divided by
the engine's, for the same corpus in the same invocation. The Spark job reports the share of the
fleet it judged in its join stage (``AuditResult.cross_template``: queues judged there over all
queues, templates whose rows it read over all files; "-" for the local engine or a job that does
not report it).

COST (McSherry et al., "Scalability! But at what COST?"), per corpus: the fewest Spark cores
(``spark`` local[N]: N; ``cluster-N``: N; ``connect``: 2) whose median wall beats ``local-1``'s,
or "none measured"; with the throughput ratios the Spark job aims at: ``spark`` vs ``local-1``,
``spark`` vs ``local-2`` (target >= 0.8) and ``cluster-2`` vs ``cluster-1`` (target >= 1.8).

On a ``--peer-sample`` sized corpus, cfn-lint (this environment) and checkov (its own virtual
environment, ``.bench-venvs/checkov``) run over the same files; a peer "catches" an injected
fault when, in a template with that single fault, it reports a check it does not report on the
same resource of a fault-free template (so checks that fire on every queue are not counted).
Results: a JSON file and a Markdown table in ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import generate_templates as generator  # noqa: E402

CHECKOV = REPO / ".bench-venvs" / "checkov" / "bin" / "checkov"
# Table order; the engines that need daemons come last.
ENGINES = ("local", "local-1", "local-2", "spark", "cluster-1", "cluster-2", "connect")
ALIASES = {"python": "local", "cluster": "cluster-2"}
# The local engine's parsing workers (None: one per core, as queue-audit runs it).
LOCAL_WORKERS: dict[str, int | None] = {"local": None, "local-1": 1, "local-2": 2}
# Standalone clusters: workers of one core each.
CLUSTER_WORKERS = {"cluster-1": 1, "cluster-2": 2}
# The Connect server's session runs local[2] (tests/support/clusters.py).
CONNECT_CORES = 2
# COST's baseline: the local engine on one worker, and the ratios the Spark job aims at.
COST_BASELINE = "local-1"
TARGET_SPARK_VS_LOCAL_2 = 0.8
TARGET_CLUSTER_SPEEDUP = 1.8
# Set by the test fixtures for fast JVM start-up; removed so the JVMs run as they would in use.
DROPPED_ENV = ("JAVA_TOOL_OPTIONS",)
PIN_HELP = (
    "run each cluster worker, its executor and their Python workers on a core of their own, as "
    "on machines of one core: unpinned, a one-core worker's JVM also collects garbage and "
    "compiles on the other cores, which a second worker then needs"
)
CODE_HELP = (
    "run the package of another checkout (a worktree of another commit) instead of this one's: "
    "its path goes first on PYTHONPATH for every run, and for a cluster's executors and Python "
    "workers, so one bench measures the code before and after a change"
)
SAMPLE_S = 0.2


# --- process-tree memory and CPU ----------------------------------------------------------------


@dataclass
class Scan:
    """One pass over /proc: each process's parent, and its CPU ticks (user + system) of its own
    and of the children it has reaped (the kernel adds a child's whole total to its reaper's
    when it is waited for: a tree's CPU survives its processes' exits)."""

    tree: dict[int, list[int]]
    own: dict[int, int]
    reaped: dict[int, int]

    def cpu(self, pid: int) -> int:
        return self.own.get(pid, 0) + self.reaped.get(pid, 0)


def _scan() -> Scan:
    scan = Scan(defaultdict(list), {}, {})
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                # After the command name: state, ppid, ...; utime, stime, cutime, cstime are
                # the stat file's fields 14-17 (proc(5)).
                fields = handle.read().rsplit(")", 1)[1].split()
            pid = int(entry)
            scan.tree[int(fields[1])].append(pid)
            scan.own[pid] = int(fields[11]) + int(fields[12])
            scan.reaped[pid] = int(fields[13]) + int(fields[14])
        except (OSError, IndexError, ValueError):
            continue
    return scan


def _rss(pid: int) -> int:
    """Bytes of resident memory of ``pid`` (0 once it has gone)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def _descendants(tree: dict[int, list[int]], roots: Iterable[int]) -> set[int]:
    """``roots`` and all their descendants in ``tree``."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        stack.extend(tree.get(pid, []))
    return seen


def _tree_rss(tree: dict[int, list[int]], roots: Iterable[int]) -> int:
    """Bytes of resident memory of ``roots`` and all their descendants in ``tree``."""
    return sum(_rss(pid) for pid in _descendants(tree, roots))


def _cpu_between(before: Scan, after: Scan, roots: list[int]) -> float:
    """CPU seconds the trees of ``roots`` (alive throughout: the daemons) used from ``before`` to
    ``after``: every process of the trees then, own and reaped ticks, less what they had
    before; a process that exited in between counts in its reaper's reaped ticks, less the
    ticks it had before (an executor of an earlier run that the worker reaps meanwhile)."""
    now = _descendants(after.tree, roots)
    then = _descendants(before.tree, roots)
    ticks = sum(after.cpu(pid) - before.cpu(pid) for pid in now)
    ticks -= sum(before.cpu(pid) for pid in then - now)
    return ticks / os.sysconf("SC_CLK_TCK")


ORPHAN_WAIT_S = 30.0


def _orphans_cpu(seen: set[int], last: dict[int, int]) -> float:
    """CPU seconds of the processes of the child's tree that outlived it (a Spark driver JVM
    still stopping, which the child did not wait for): not reaped by the child, so not in its
    rusage. Sampled until they exit (at most ORPHAN_WAIT_S); their last known own ticks."""
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while time.monotonic() < deadline:
        scan = _scan()
        alive = seen & scan.own.keys()
        if not alive:
            break
        last.update({pid: scan.own[pid] for pid in alive})
        seen |= _descendants(scan.tree, alive)
        time.sleep(SAMPLE_S)
    return sum(last.get(pid, 0) for pid in seen) / os.sysconf("SC_CLK_TCK")


def measure(
    command: list[str], env: dict[str, str] | None = None, daemons: Iterable[int] = ()
) -> dict[str, Any]:
    """Run ``command``; wall time, CPU time of its process tree, peak RSS of the tree and of its
    own process, exit code and output; with ``daemons``, also the peak RSS of their trees while
    it runs (and before) and the CPU time they used meanwhile."""
    daemons = list(daemons)
    before = _scan()
    idle = _tree_rss(before.tree, daemons) if daemons else 0
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env or os.environ.copy())
        peak = driver = cluster = 0
        descendants: set[int] = set()
        while True:
            # wait4: the child's rusage holds its own CPU and that of every descendant it reaped.
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            # One scan of /proc per sample: the sums describe the same moment.
            scan = _scan()
            tree = _descendants(scan.tree, [process.pid])
            descendants |= tree - {process.pid}
            peak = max(peak, sum(_rss(p) for p in tree))
            driver = max(driver, _rss(process.pid))
            if daemons:
                cluster = max(cluster, _tree_rss(scan.tree, daemons))
            time.sleep(SAMPLE_S)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        daemons_cpu = _cpu_between(before, _scan(), daemons) if daemons else None
        cpu = usage.ru_utime + usage.ru_stime + _orphans_cpu(descendants, {})
        out.seek(0)
        err.seek(0)
        return {
            "wall_s": wall,
            "cpu_s": cpu,
            "cluster_cpu_s": daemons_cpu,
            "peak_rss_mb": peak / 2**20,
            "driver_peak_rss_mb": driver / 2**20,
            "cluster_peak_rss_mb": cluster / 2**20 if daemons else None,
            "cluster_idle_rss_mb": idle / 2**20 if daemons else None,
            "returncode": process.returncode,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace")[-2000:],
        }


# --- child: one audit run ------------------------------------------------------------------------


def child(
    engine_name: str, corpus: Path, master: str | None, remote: str | None, report_path: str
) -> None:
    started = time.perf_counter()
    from constructs_lib.audit import report
    from constructs_lib.audit.engines import AuditInputs, AuditOptions
    from constructs_lib.audit.engines import local as engine
    from constructs_lib.audit.inputs import discovery

    files = discovery.discover([str(corpus / generator.TEMPLATES_DIR)])
    imported = time.perf_counter()
    spark = None
    if engine_name not in LOCAL_WORKERS:
        from constructs_lib.audit.engines.spark import job
        from constructs_lib.audit.engines.spark.session import create_session

        spark = create_session(master=None if remote else master, remote=remote)
        session = time.perf_counter()
        # As queue-audit runs it: findings streamed into the report, counts computed by Spark.
        result = job.SparkEngine(spark).audit(AuditInputs(files), AuditOptions(gather=False))
    else:
        session = time.perf_counter()
        result = engine.audit(AuditInputs(files), AuditOptions(workers=LOCAL_WORKERS[engine_name]))
    mark = time.perf_counter()
    with open(report_path, "w", encoding="utf-8") as handle:
        for piece in report.STREAMS["json"](result):
            handle.write(piece)
    summary = report.summarize(result)
    result.timings["write"] = result.timings.get("write", 0.0) + time.perf_counter() - mark
    audited = time.perf_counter()
    if spark is not None:
        # A Connect server keeps a session (its artifacts, its Python workers) until it is
        # released or times out; stopping every Spark engine's session keeps them comparable.
        spark.stop()
    # The ground truth is checked by the parent, from the report: the driver's memory measured
    # here is what queue-audit itself needs.
    print(
        json.dumps(
            {
                "files": summary["files_read"],
                "findings": summary["findings"],
                "queues": result.queues,
                # The Spark job's join stage: {"queues": N, "templates": M}; None locally.
                "cross_template": result.cross_template,
                "timings": result.timings,
                "startup_s": session - started,
                "import_s": imported - started,
                "audit_s": audited - session,
            }
        )
    )


def check_report(report_path: str, corpus: Path) -> dict[str, Any]:
    """Missed and extra findings of a JSON report against the corpus's ground truth."""
    root = str(corpus / generator.TEMPLATES_DIR)
    with open(report_path, encoding="utf-8") as handle:
        findings = json.load(handle)["findings"]
    found = {(os.path.relpath(f["template"], root), f["rule_id"], f["resource"]) for f in findings}
    truth = json.loads((corpus / "ground-truth.json").read_text())["findings"]
    expected = {(t["template"], t["rule_id"], t["resource"]) for t in truth}
    return {
        "missed": len(expected - found),
        "extra": len(found - expected),
        # A few of each, so a failed check names what differs.
        "missed_sample": sorted(expected - found)[:5],
        "extra_sample": sorted(found - expected)[:5],
    }


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


@dataclass
class Target:
    """Where an engine's children run: their environment, the arguments that name the session,
    and the daemons (cluster or server) whose memory is sampled while they run."""

    env: dict[str, str]
    args: list[str]
    daemon_pids: list[int] = field(default_factory=list)
    startup_s: float | None = None
    log_tail: Callable[[], str] = lambda: ""


def checkout(text: str) -> Path:
    """``--code``'s value: a folder holding the package, as a checkout of this repository does."""
    folder = Path(text)
    if not (folder / "constructs_lib" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(
            f"{text}: no constructs_lib package in it; give a checkout of another commit "
            "(git worktree add DIR COMMIT)"
        )
    return folder


def _without_dropped(env: dict[str, str], code: Path | None = None) -> dict[str, str]:
    """``env`` without the test fixtures' settings; with ``code``, that checkout first on the
    path of the runs, and of a cluster's executors and Python workers, which inherit it."""
    kept = {k: v for k, v in env.items() if k not in DROPPED_ENV}
    if code is not None:
        kept["PYTHONPATH"] = str(code.resolve())
    return kept


@contextlib.contextmanager
def target(
    engine_name: str, master: str, root: Path, pinned: bool = False, code: Path | None = None
) -> Iterator[Target]:
    """The engine's target; for ``cluster-N`` and ``connect``, daemons started under ``root`` and
    stopped on leaving, however the runs ended. ``pinned``: each worker of a cluster on a core of
    its own (``StandaloneCluster``). ``code``: the package of that checkout runs (``CODE_HELP``)."""
    if engine_name in (*LOCAL_WORKERS, "spark"):
        env = _without_dropped(dict(os.environ), code)
        yield Target(env, ["--engine", "spark", "--master", master])
        return
    if shutil.which("java") is None:
        raise SystemExit(f"{engine_name}: java is not on PATH, no Spark daemon can start")
    # The daemons are the tests' own, imported rather than copied, so the bench measures the
    # set-up the tests check; imported here only, so children never load pytest.
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.support import clusters

    # Logs, work and scratch directories of this invocation only.
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = _without_dropped(clusters._base_env({}, sys.executable, root), code)
    if engine_name in CLUSTER_WORKERS:
        # As the fixture: the master and workers only schedule; executors keep their 1g.
        env["SPARK_DAEMON_MEMORY"] = "512m"
        workers = CLUSTER_WORKERS[engine_name]
        cluster = clusters.StandaloneCluster(root, env, workers=workers, pinned=pinned)
        try:
            cluster.start()
            yield Target(
                cluster.env,
                ["--engine", "spark", "--master", cluster.master_url],
                [cluster.master_pid, *cluster.worker_pids],
                cluster.startup_seconds,
                cluster.log_tail,
            )
        finally:
            cluster.stop()
    else:
        # As the fixture and sbin/start-connect-server.sh: the launcher builds a classic server.
        env["SPARK_CONNECT_MODE"] = "0"
        server = clusters.ConnectServer(root, env)
        try:
            server.start()
            yield Target(
                server.env,
                ["--engine", "spark", "--remote", server.url],
                [server.pid],
                server.startup_seconds,
                server.log_tail,
            )
        finally:
            server.stop()


def run_engine(engine_name: str, corpus: Path, runs: int, where: Target) -> dict[str, Any]:
    samples = []
    for index in range(runs):
        with tempfile.NamedTemporaryFile(suffix=".json") as report_file:
            measured = measure(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    engine_name,
                    "--corpus",
                    str(corpus),
                    "--report",
                    report_file.name,
                    *where.args,
                ],
                where.env,
                where.daemon_pids,
            )
            if measured["returncode"] != 0:
                raise SystemExit(
                    f"{engine_name} run failed:\n{measured['stderr']}\n{where.log_tail()}".rstrip()
                )
            detail = json.loads(measured["stdout"].strip().splitlines()[-1])
            detail.update(check_report(report_file.name, corpus))
        if detail["missed"] or detail["extra"]:
            raise SystemExit(
                f"{engine_name} on {corpus.name}, run {index + 1}: findings differ from the "
                f"ground truth: {detail['missed']} missed (e.g. {detail['missed_sample']}), "
                f"{detail['extra']} extra (e.g. {detail['extra_sample']})"
            )
        samples.append({**measured, **detail})
    median = sorted(samples, key=lambda s: s["wall_s"])[len(samples) // 2]
    files = median["files"]
    daemons = bool(where.daemon_pids)
    cross = median["cross_template"]
    return {
        "engine": engine_name,
        "files": files,
        "runs": runs,
        "spark_cores": spark_cores(engine_name, where.args),
        "wall_s_median": statistics.median(s["wall_s"] for s in samples),
        "wall_s_all": [round(s["wall_s"], 1) for s in samples],
        # CPU: the child's tree (client), and the cluster's or server's trees meanwhile.
        "cpu_s_median": statistics.median(s["cpu_s"] for s in samples),
        "cluster_cpu_s_median": (
            statistics.median(s["cluster_cpu_s"] for s in samples) if daemons else None
        ),
        "queues": median["queues"],
        "cross_template": cross,
        "cross_queue_share": cross["queues"] / median["queues"] if cross else None,
        "cross_template_share": cross["templates"] / files if cross else None,
        "audit_s_median": statistics.median(s["audit_s"] for s in samples),
        "templates_per_s": files / statistics.median(s["wall_s"] for s in samples),
        "templates_per_s_audit_only": files / statistics.median(s["audit_s"] for s in samples),
        "peak_rss_mb_max": max(s["peak_rss_mb"] for s in samples),
        "driver_peak_rss_mb_max": max(s["driver_peak_rss_mb"] for s in samples),
        "cluster_peak_rss_mb_max": (
            max(s["cluster_peak_rss_mb"] for s in samples) if daemons else None
        ),
        "cluster_idle_rss_mb": (round(median["cluster_idle_rss_mb"]) if daemons else None),
        "stages_s": {k: round(v, 2) for k, v in median["timings"].items()},
        "startup_s": round(median["startup_s"], 2),
        "findings": median["findings"],
        "missed": median["missed"],
        "extra": median["extra"],
    }


def spark_cores(engine_name: str, args: list[str]) -> int | None:
    """The cores a Spark engine's executors have: local[N], the cluster's one-core workers, the
    Connect server's local[2]; None for the local engine or a master of unknown size."""
    if engine_name in CLUSTER_WORKERS:
        return CLUSTER_WORKERS[engine_name]
    if engine_name == "connect":
        return CONNECT_CORES
    if engine_name != "spark":
        return None
    master = args[args.index("--master") + 1]
    if master == "local":
        return 1
    inside = master.removeprefix("local[").removesuffix("]")
    if master.startswith("local[") and inside.isdigit():
        return int(inside)
    return os.cpu_count() if master == "local[*]" else None


def _wall(rows: list[dict[str, Any]], files: int, engine_name: str) -> float | None:
    for row in rows:
        if (row["files"], row["engine"]) == (files, engine_name):
            return float(row["wall_s_median"])
    return None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator and denominator else None


def _add_ratios(rows: list[dict[str, Any]]) -> None:
    """Throughput vs the local engine (default workers) and vs ``COST_BASELINE`` on the same
    corpus: their median wall over the row's."""
    for row in rows:
        wall = row["wall_s_median"]
        row["throughput_vs_local"] = _ratio(_wall(rows, row["files"], "local"), wall)
        row["throughput_vs_local_1"] = _ratio(_wall(rows, row["files"], COST_BASELINE), wall)


def cost(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per corpus: COST, the fewest Spark cores whose configuration beats the local engine on
    one worker (wall time), and the throughput ratios the Spark job aims at."""
    table = []
    for files in sorted({r["files"] for r in rows}):
        baseline = _wall(rows, files, COST_BASELINE)
        beating = [
            (r["spark_cores"], r["engine"])
            for r in rows
            if r["files"] == files
            and r["spark_cores"] is not None
            and baseline is not None
            and r["wall_s_median"] < baseline
        ]
        spark = _wall(rows, files, "spark")
        table.append(
            {
                "files": files,
                "cost_cores": min(beating)[0] if beating else None,
                "cost_engine": min(beating)[1] if beating else None,
                "baseline_measured": baseline is not None,
                "spark_vs_local_1": _ratio(baseline, spark),
                "spark_vs_local_2": _ratio(_wall(rows, files, "local-2"), spark),
                "spark_vs_local_2_target": TARGET_SPARK_VS_LOCAL_2,
                "cluster_2_vs_cluster_1": _ratio(
                    _wall(rows, files, "cluster-1"), _wall(rows, files, "cluster-2")
                ),
                "cluster_2_vs_cluster_1_target": TARGET_CLUSTER_SPEEDUP,
            }
        )
    return table


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _stage(stages: dict[str, float], name: str) -> str:
    # The Spark job times no resolve stage of its own: its joins run lazily inside evaluate.
    return f"{stages[name]:.1f}" if name in stages else "-"


def _fixed(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(row: dict[str, Any]) -> str:
    """The join stage's share: queues judged there / all queues, templates read / all."""
    if row.get("cross_queue_share") is None:
        return "-"
    return f"{row['cross_queue_share']:.0%} / {row['cross_template_share']:.0%}"


def _engine_rows(results: dict[str, Any]) -> list[str]:
    lines = [
        "| templates | engine | Spark cores | median wall s | templates/s (wall) "
        "| throughput vs local-1 | throughput vs local | templates/s (audit only) "
        "| CPU s (client) | CPU s (cluster) | peak RSS MiB | driver peak RSS MiB "
        "| cluster peak RSS MiB | joined queues / templates | startup s | parse s | resolve s "
        "| evaluate s | write s | missed/extra |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["engines"]:
        stages = row["stages_s"]
        lines.append(
            f"| {row['files']:,} | {row['engine']} | {row['spark_cores'] or '-'} "
            f"| {row['wall_s_median']:.1f} | {row['templates_per_s']:.0f} "
            f"| {_fixed(row.get('throughput_vs_local_1'))} "
            f"| {_fixed(row.get('throughput_vs_local'))} "
            f"| {row['templates_per_s_audit_only']:.0f} | {row['cpu_s_median']:.1f} "
            f"| {_fixed(row['cluster_cpu_s_median'], 1)} "
            f"| {_mib(row['peak_rss_mb_max'])} | {_mib(row['driver_peak_rss_mb_max'])} "
            f"| {_mib(row['cluster_peak_rss_mb_max'])} | {_share(row)} "
            f"| {row['startup_s']:.1f} | {_stage(stages, 'parse')} "
            f"| {_stage(stages, 'resolve')} | {_stage(stages, 'evaluate')} "
            f"| {_stage(stages, 'write')} | {row['missed']}/{row['extra']} |"
        )
    return lines


def _cost_rows(results: dict[str, Any]) -> list[str]:
    lines = [
        f"| templates | COST: fewest Spark cores beating {COST_BASELINE} "
        f"| spark vs local-1 | spark vs local-2 (target >= {TARGET_SPARK_VS_LOCAL_2}) "
        f"| cluster-2 vs cluster-1 (target >= {TARGET_CLUSTER_SPEEDUP}) |",
        "|---|---|---|---|---|",
    ]
    for row in results["cost"]:
        if not row["baseline_measured"]:
            verdict = f"{COST_BASELINE} not measured"
        elif row["cost_cores"] is None:
            verdict = "none measured"
        else:
            verdict = f"{row['cost_cores']} ({row['cost_engine']})"
        lines.append(
            f"| {row['files']:,} | {verdict} | {_fixed(row['spark_vs_local_1'])} "
            f"| {_fixed(row['spark_vs_local_2'])} | {_fixed(row['cluster_2_vs_cluster_1'])} |"
        )
    return lines


def markdown(results: dict[str, Any]) -> str:
    started = ", ".join(
        f"{name} {seconds:.1f} s" for name, seconds in results.get("daemons_startup_s", {}).items()
    )
    lines = [
        "Peak RSS: the child's whole process tree; for cluster and connect that is the client "
        "only (the Python driver and, for classic sessions, its driver JVM): the cluster's "
        "daemons and executors are not its descendants. Driver peak RSS: the child Python "
        "process alone. Cluster peak RSS: master, workers, executor JVMs and their Python "
        "workers (cluster), or the Connect server and its Python workers (connect), sampled "
        "while the child runs. CPU: user + system seconds of the child's process tree "
        "(client) and of the cluster's or server's trees during the run (cluster). "
        "Throughput vs local-1 (local): the local engine's median wall on one worker (on one "
        "worker per core) / this engine's. Joined queues / templates: the share of the queues "
        "the Spark job judged in its join stage, and of the templates whose rows it read "
        "there." + (f" Daemon start-up, not in any wall time: {started}." if started else ""),
        "",
        *_engine_rows(results),
    ]
    if results.get("cost"):
        lines += [
            "",
            f"COST (McSherry et al.): the fewest Spark cores (spark local[N]: N; cluster-N: N "
            f"one-core workers; connect: {CONNECT_CORES}) whose median wall beats the local "
            f"engine's on one worker ({COST_BASELINE}); ratios are throughputs (the other's "
            "median wall / this one's).",
            "",
            *_cost_rows(results),
        ]
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


def corpus_at(out: Path, size: int, cross_stack: float | None) -> Path:
    """The generated corpus of ``size`` templates under ``out``, written unless it is there."""
    corpus = out / (f"corpus-{size}" if cross_stack is None else f"corpus-{size}-x{cross_stack}")
    if not (corpus / "ground-truth.json").exists():
        generator.write(str(corpus), size, cross_stack=cross_stack)
    return corpus


def _engine_name(text: str) -> str:
    name = ALIASES.get(text, text)
    if name not in ENGINES:
        raise argparse.ArgumentTypeError(
            f"invalid engine {text!r} (choose from {', '.join([*ENGINES, *ALIASES])})"
        )
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--engines",
        type=_engine_name,
        nargs="+",
        default=["local", "spark"],
        metavar="ENGINE",
        help=f"of {', '.join(ENGINES)} ('python' is an alias of local, 'cluster' of "
        "cluster-2; default: local spark)",
    )
    parser.add_argument(
        "--cross-stack",
        type=float,
        metavar="FRACTION",
        help="generate corpora with this share of queues in cross-stack pairs (0 to 1; "
        "generate_templates.py --cross-stack); default: the bench corpus's",
    )
    parser.add_argument(
        "--master", default="local[2]", help="the spark engine's master (default: local[2])"
    )
    parser.add_argument("--peer-sample", type=int, default=1000, help="0 to skip the peers")
    parser.add_argument("--pin-workers", action="store_true", help=PIN_HELP)
    parser.add_argument("--code", type=checkout, help=CODE_HELP)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "audit"))
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    parser.add_argument("--remote", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.corpus), args.master, args.remote, args.report)
        return
    # Absolute: the cluster's executors and the Connect server read the corpus from elsewhere.
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "engines": [],
        "daemons_startup_s": {},
        "peers": {},
    }

    def save() -> None:
        results["engines"].sort(key=lambda r: (r["files"], ENGINES.index(r["engine"])))
        _add_ratios(results["engines"])
        results["cost"] = cost(results["engines"])
        (out / "results.json").write_text(json.dumps(results, indent=1))

    corpora = [corpus_at(out, size, args.cross_stack) for size in dict.fromkeys(args.sizes)]
    results["cross_stack"] = args.cross_stack
    # Engine by engine, so that a cluster or server runs only while its own engine is measured.
    for engine_name in dict.fromkeys(args.engines):
        daemons = out / "daemons" / engine_name
        with target(engine_name, args.master, daemons, args.pin_workers, args.code) as where:
            if where.startup_s is not None:
                results["daemons_startup_s"][engine_name] = round(where.startup_s, 1)
            for corpus in corpora:
                row = run_engine(engine_name, corpus, args.runs, where)
                results["engines"] = [
                    r
                    for r in results["engines"]
                    if (r["files"], r["engine"]) != (row["files"], row["engine"])
                ] + [row]
                print(json.dumps(row), flush=True)
                save()
    if args.peer_sample:
        corpus = corpus_at(out, args.peer_sample, None)
        results["peers"] = peers(corpus, args.peer_sample)
        print(json.dumps(results["peers"]), flush=True)
    save()
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
