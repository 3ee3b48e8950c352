"""Hostile and broken files next to ordinary templates: no crash, no hang, bounded memory, every
file accounted for, on both engines.

The whole-run tests start ``queue-audit`` as a child process under a timeout (a hang fails the
test instead of stalling the suite) and sample the memory of its whole process tree with psutil.
Bounds are generous: they catch a run that hangs or grows by gigabytes, not a slow machine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from constructs_lib.audit import cli
from constructs_lib.audit.engines import AuditInputs, AuditOptions
from constructs_lib.audit.engines import local as engine
from constructs_lib.audit.inputs import discovery, reading
from constructs_lib.audit.model import AuditResult
from constructs_lib.audit.parse import documents as parsing
from constructs_lib.audit.parse import isolation
from constructs_lib.audit.parse import pipeline as templates
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits, parse_size
from tests.audit.conftest import EngineAudit, healthy, props, write
from tests.audit.parse.test_templates import YAML_PIPELINE
from tests.support import hostile
from tests.support.cases import CASES

# A whole hostile run, Spark start-up included: 300 s ran out on a 2-core machine at load 17.
RUN_TIMEOUT_S = 1800
LOCAL_PEAK_BYTES = 1 * 2**30  # the unbounded cases grow by gigabytes a minute
SPARK_PEAK_BYTES = 4 * 2**30  # the JVM alone takes 1-1.5 GiB (docs/performance.md)

# Every hostile file -> a piece of the reason its QR901 must give.
EXPECTED_REASONS = {
    "deep-flow.yaml": "(raise it with --max-depth)",
    "deep.template.json": "(raise it with --max-depth)",
    "alias-bomb.yaml": "(raise it with --max-yaml-nodes)",
    "merge-bomb.yaml": "(raise it with --max-yaml-nodes)",
    "zero.json": "a character device, not a regular file",
    "pipe.yaml": "a named pipe (FIFO), not a regular file",
    "sock.json": "a socket, not a regular file",
    "loop-a.yaml": "a symbolic link loop",
    "loop-b.yaml": "a symbolic link loop",
    "dangling.yaml": "No such file or directory",
    "unreadable.json": "Input/output error",
    "huge-number.template.json": "4300 digits",
    "huge-number.yaml": "4300 digits",
    "latin1.template.json": "not UTF-8",
    "python-tag.yaml": "could not determine a constructor for the tag",  # no code runs
}
SKIPPED = {"zero.json", "pipe.yaml", "sock.json"}
# Read whole (under the cap) and not a template: counted and named, no QR901 (/proc/self/maps,
# whose size is 0 when checked and larger when read).
NOT_TEMPLATES = {"grows.json"}


def _ordinary(folder: Path) -> None:
    """Templates with known findings, a clean one behind a BOM, and duplicate keys."""
    for case in CASES[:12]:
        write(folder, f"{case.id}.template.json", case.build(case.id))
    write(folder, "pipeline.yaml", YAML_PIPELINE)
    hostile.bom_template(folder, healthy("bom"), "bom.template.json")
    # Duplicate keys: the last one wins, as in Python's json and PyYAML (the audit judges the
    # queue as written last: unencrypted).
    (folder / "duplicate-keys.yaml").write_text(
        "Resources:\n"
        "  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: dup\n"
        "  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: dup\n"
        "      SqsManagedSseEnabled: false\n"
    )


def _hostile(folder: Path) -> None:
    hostile.deep_flow_yaml(folder)
    hostile.deep_json(folder)
    hostile.alias_bomb(folder)
    hostile.merge_key_bomb(folder)
    hostile.dev_zero(folder)
    hostile.fifo(folder)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(folder / "sock.json"))
    hostile.symlink_loop(folder)
    os.symlink("nowhere.yaml", folder / "dangling.yaml")
    hostile.unreadable(folder)
    hostile.stat_lies(folder)
    hostile.huge_numbers(folder)
    hostile.invalid_utf8(folder)
    hostile.python_tag(folder)
    os.symlink("..", folder / "up")  # a folder loop: discovery does not follow it
    assert sorted(os.listdir(folder)) == sorted([*EXPECTED_REASONS, *NOT_TEMPLATES, "up"])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("hostile-fleet")
    _ordinary(root / "ordinary")
    (root / "hostile").mkdir()
    _hostile(root / "hostile")
    yield root
    for name in os.listdir(root / "hostile"):  # FIFOs, sockets and links to devices go first
        os.unlink(root / "hostile" / name)


@pytest.fixture(scope="module")
def reference(fleet: Path) -> set[tuple[str, str, str, str]]:
    """The ordinary templates' findings, audited on their own."""
    result = engine.audit_paths([str(fleet / "ordinary")])
    assert all(f.status == "ok" for f in result.files)
    assert ("QR012", "Q") in {(f.rule_id, f.resource) for f in result.findings}  # the duplicate
    return {
        (f.rule_id, os.path.basename(f.template), f.resource, f.message) for f in result.findings
    }


def run_measured(
    command: list[str], timeout: float
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``command``; its result and the peak resident memory of its whole process tree."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(process.pid)
        while not stop.is_set():
            total = 0
            try:
                for member in [parent, *parent.children(recursive=True)]:
                    try:
                        total += member.memory_info().rss
                    except psutil.Error:
                        continue
            except psutil.Error:
                return
            peak = max(peak, total)
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for child in psutil.Process(process.pid).children(recursive=True):
            child.kill()
        process.kill()
        process.communicate()
        pytest.fail(f"the run did not end within {timeout} s: {command}")
    finally:
        stop.set()
        sampler.join()
    return subprocess.CompletedProcess(command, process.returncode, out, err), peak


def check_report(fleet: Path, report: dict[str, Any], reference: set[tuple[str, ...]]) -> None:
    summary = report["summary"]
    ordinary = sorted(os.listdir(fleet / "ordinary"))
    assert summary["files_read"] == len(ordinary) + len(EXPECTED_REASONS) + len(NOT_TEMPLATES)
    assert summary["reconciled"] is True
    assert summary["files_read"] == (
        summary["files_clean"]
        + summary["files_with_findings"]
        + summary["files_unparseable"]
        + summary["files_not_templates"]
    )
    assert summary["files_unparseable"] == len(EXPECTED_REASONS)
    assert {os.path.basename(f) for f in summary["not_templates"]} == NOT_TEMPLATES
    assert summary["files_skipped"] == len(SKIPPED)
    unreadable = {
        os.path.basename(f["template"]): f["message"]
        for f in report["findings"]
        if f["rule_id"] == "QR901"
    }
    assert set(unreadable) == set(EXPECTED_REASONS)
    for name, reason in EXPECTED_REASONS.items():
        assert reason in unreadable[name], (name, unreadable[name])
    found = {
        (f["rule_id"], os.path.basename(f["template"]), f["resource"], f["message"])
        for f in report["findings"]
        if f["rule_id"] != "QR901"
    }
    assert found == reference
    assert not (fleet / "python-tag-ran").exists()


@pytest.mark.parametrize(
    ("engine_args", "peak_bound"),
    [
        pytest.param(["--engine", "local"], LOCAL_PEAK_BYTES, id="local"),
        pytest.param(
            ["--engine", "spark", "--master", "local[2]"],
            SPARK_PEAK_BYTES,
            id="spark",
            marks=pytest.mark.spark,
        ),
    ],
)
def test_hostile_files_cost_only_themselves(
    fleet: Path, reference: set[tuple[str, ...]], engine_args: list[str], peak_bound: int
) -> None:
    if "spark" in engine_args:
        pytest.importorskip("pyspark")
    command = [sys.executable, "-m", "constructs_lib.audit", str(fleet), *engine_args]
    completed, peak = run_measured([*command, "--format", "json", "--quiet"], RUN_TIMEOUT_S)
    assert completed.returncode == 1, completed.stderr[-3000:]  # QR901 and QR012 are errors
    check_report(fleet, json.loads(completed.stdout), reference)
    assert peak < peak_bound, f"peak RSS of the process tree {peak / 2**20:.0f} MiB"


# --- what slips past the limits: isolation --------------------------------------------------


NO_LIMITS = ReadLimits(max_depth=10**6, max_yaml_nodes=10**12)


@pytest.fixture
def unguarded(tmp_path: Path) -> Path:
    """The crashing and the exploding files, for runs whose limits let them through."""
    write(tmp_path, "ok.template.json", healthy("ok"))
    hostile.deep_flow_yaml(tmp_path)
    hostile.alias_bomb(tmp_path)
    write(tmp_path, "after.template.json", healthy("after"))
    return tmp_path


def _status(result: AuditResult) -> dict[str, str]:
    return {os.path.basename(f.file): f.error or f.status for f in result.files}


def _files(folder: Path, *names: str) -> list[tuple[str, str]]:
    return [(str(folder / name), name) for name in names]


@pytest.mark.parametrize("start", ["as is", "with a second thread"])
def test_parser_crash_costs_one_file_local(unguarded: Path, start: str) -> None:
    limits = ReadLimits(max_depth=10**6, parse_timeout_s=120)
    blocker = threading.Event()
    if start == "with a second thread":  # then workers are new interpreters, never forked
        threading.Thread(target=blocker.wait, daemon=True).start()
    try:
        files = _files(unguarded, "ok.template.json", "deep-flow.yaml", "after.template.json")
        result = engine.audit_files(files, limits, workers=1)
    finally:
        blocker.set()
    status = _status(result)
    assert status["deep-flow.yaml"] == "the parser crashed on this file (SIGSEGV)"
    assert status["ok.template.json"] == status["after.template.json"] == "ok"
    assert [f.rule_id for f in result.findings] == ["QR901"]


def test_parser_hang_costs_one_file_local(unguarded: Path) -> None:
    limits = ReadLimits(max_yaml_nodes=10**12, parse_timeout_s=3)
    files = _files(unguarded, "ok.template.json", "alias-bomb.yaml", "after.template.json")
    started = time.monotonic()
    result = engine.audit_files(files, limits, workers=1)
    assert time.monotonic() - started < 120
    status = _status(result)
    assert status["alias-bomb.yaml"] == (
        "parsing did not finish: over the limit of 3 s (raise it with --parse-timeout)"
    )
    assert status["ok.template.json"] == status["after.template.json"] == "ok"


def test_memory_cap_turns_an_explosion_into_one_file(unguarded: Path) -> None:
    limits = ReadLimits(
        max_depth=10**6, max_yaml_nodes=10**12, parse_timeout_s=120, max_parse_memory_bytes=2**28
    )
    result = engine.audit_files([(str(unguarded / "alias-bomb.yaml"), "bomb")], limits)
    (only,) = result.files
    assert only.error == (
        "the parser ran out of memory on this file: over the limit of 256 MiB "
        "(raise it with --max-parse-memory)"
    )


@pytest.mark.spark
def test_parser_crash_and_explosion_cost_one_file_each_spark(
    spark_audit: EngineAudit, unguarded: Path
) -> None:
    limits = ReadLimits(
        max_depth=10**6, max_yaml_nodes=10**12, parse_timeout_s=120, max_parse_memory_bytes=2**28
    )
    result = spark_audit(
        AuditInputs(discovery.discover([str(unguarded)])), AuditOptions(limits=limits)
    )
    status = _status(result)
    assert status["deep-flow.yaml"] == "the parser crashed on this file (SIGSEGV)"
    assert status["alias-bomb.yaml"] == (
        "the parser ran out of memory on this file: over the limit of 256 MiB "
        "(raise it with --max-parse-memory)"
    )
    assert status["ok.template.json"] == status["after.template.json"] == "ok"


def _broken_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers that exit before reading a file (a broken environment, not a bad file), whether
    they are forked or started as a new interpreter."""
    monkeypatch.setattr(isolation, "serve", lambda *_: os._exit(3))
    monkeypatch.setattr(isolation, "_WORKER_MAIN", "import os; os._exit(3)")


def test_workers_that_die_before_any_file_stop_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "ok.template.json", healthy("ok"))
    _broken_workers(monkeypatch)
    with pytest.raises(RuntimeError, match="parsing workers die before reading a file"):
        isolation.parse_files(_files(tmp_path, "ok.template.json"))


# --- the size cap, before and while reading ----------------------------------------------------


def test_growing_files_stop_at_the_cap_local(tmp_path: Path) -> None:
    limits = ReadLimits(max_file_bytes=4096)
    with hostile.growing_file(tmp_path) as name:
        hostile.wait_larger(tmp_path / name, limits.max_file_bytes)
        maps = hostile.stat_lies(tmp_path)  # size 0 when checked, tens of KiB when read
        result = engine.audit_files(_files(tmp_path, name, maps), ReadLimits(max_file_bytes=4096))
    grown, lied = result.files
    assert grown.status == lied.status == "skipped"
    assert grown.error.endswith("over the limit of 4 KiB (raise it with --max-file-size)")
    assert lied.error == (
        "not read to the end: the file grew past the size cap: over the limit of 4 KiB "
        "(raise it with --max-file-size)"
    )


@pytest.mark.spark
def test_growing_files_stop_at_the_cap_spark(spark_audit: EngineAudit, tmp_path: Path) -> None:
    name = hostile.stat_lies(tmp_path)  # size 0 when checked, tens of KiB when read
    write(tmp_path, "ok.template.json", json.dumps(healthy("ok")))  # under 4 KiB
    limits = ReadLimits(max_file_bytes=4096)
    with hostile.growing_file(tmp_path) as growing:
        hostile.wait_larger(tmp_path / growing, limits.max_file_bytes)
        result = spark_audit(
            AuditInputs(discovery.discover([str(tmp_path)])), AuditOptions(limits=limits)
        )
    status = _status(result)
    assert status[growing].endswith("over the limit of 4 KiB (raise it with --max-file-size)")
    assert status[growing].startswith("not read")
    assert status[name] == (
        "not read to the end: the file grew past the size cap: over the limit of 4 KiB "
        "(raise it with --max-file-size)"
    )
    assert status["ok.template.json"] == "ok"


@pytest.mark.parametrize(("extra", "status"), [(-1, "ok"), (0, "ok"), (1, "skipped")])
def test_size_cap_boundary(tmp_path: Path, extra: int, status: str) -> None:
    body = json.dumps(healthy("cap")).encode()
    path = write(tmp_path, "cap.template.json", body)
    limits = ReadLimits(max_file_bytes=len(body) - extra)
    parsed = templates.read_and_parse(str(path), "cap", limits)
    assert parsed.file.status == status
    if status == "skipped":
        assert parsed.file.error == (
            f"not read: the file has {len(body):,} bytes: over the limit of "
            f"{len(body) - 1:,} bytes (raise it with --max-file-size)"
        )


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    name = hostile.fifo(tmp_path)
    try:
        with pytest.raises(reading.SkippedFile, match="a named pipe"):
            reading.read_bytes(str(tmp_path / name))
    finally:
        os.unlink(tmp_path / name)


# --- depth and expanded nodes, at their boundaries --------------------------------------------


def _nested(depth: int, kind: str) -> bytes:
    """A template whose deepest collection is at ``depth`` (the root mapping is level 1)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    if kind == "json":
        return ('{"Resources": {"Q": ' + inner + "}}").encode()
    return ("Resources: {Q: " + inner + "}\n").encode()


@pytest.mark.parametrize("kind", ["json", "yaml"])
@pytest.mark.parametrize(("depth", "passes"), [(9, True), (10, True), (11, False)])
def test_depth_boundary(kind: str, depth: int, passes: bool) -> None:
    limits = ReadLimits(max_depth=10)
    if passes:
        assert parsing.load_document(f"t.{kind}", _nested(depth, kind), limits)["Resources"]
    else:
        with pytest.raises(parsing.TemplateError) as raised:
            parsing.load_document(f"t.{kind}", _nested(depth, kind), limits)
        assert str(raised.value) == (
            "nested too deeply: over the limit of 10 levels (raise it with --max-depth)"
        )


def test_default_depth_is_exact_for_json() -> None:
    assert parsing.load_document("t.json", _nested(DEFAULT_LIMITS.max_depth, "json"))
    with pytest.raises(parsing.TemplateError, match="--max-depth"):
        parsing.load_document("t.json", _nested(DEFAULT_LIMITS.max_depth + 1, "json"))


def _nested_beside(depth: int) -> bytes:
    """A template whose deepest collection, at ``depth``, is a top-level value beside
    Resources (the located walk decodes those one level up from the resources)."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return ('{"Resources": {"Q": {}}, "Metadata": ' + inner + "}").encode()


@pytest.mark.parametrize("where", ["in a resource", "beside Resources"])
@pytest.mark.parametrize("max_depth", [3, 10, DEFAULT_LIMITS.max_depth])
def test_depth_boundary_is_exact_with_positions(where: str, max_depth: int) -> None:
    """With positions, JSON is read in one walk that decodes each resource on its own: the
    limit holds at the same depth, and a template at the limit still has its positions."""
    limits = ReadLimits(max_depth=max_depth)
    nested = _nested if where == "in a resource" else lambda depth, _: _nested_beside(depth)
    document, spots = parsing.load_located("t.json", nested(max_depth, "json"), limits)
    assert document["Resources"]["Q"] is not None
    assert spots["Q"].line == 1
    with pytest.raises(parsing.TemplateError) as raised:
        parsing.load_located("t.json", nested(max_depth + 1, "json"), limits)
    assert str(raised.value) == (
        f"nested too deeply: over the limit of {max_depth} levels (raise it with --max-depth)"
    )


# Every collection and scalar (keys too) is a node; an alias counts what it names. The root, the
# "Resources" key, its mapping, "Q", [x, x] (3 nodes), "R", and [*q, *q] (1 + 3 + 3): 15.
ALIASED = b"Resources: {Q: &q [x, x], R: [*q, *q]}\n"


@pytest.mark.parametrize(("budget", "passes"), [(16, True), (15, True), (14, False)])
def test_yaml_node_budget_boundary(budget: int, passes: bool) -> None:
    limits = ReadLimits(max_yaml_nodes=budget)
    if passes:
        parsing.load_document("t.yaml", ALIASED, limits)
    else:
        with pytest.raises(parsing.TemplateError) as raised:
            parsing.load_document("t.yaml", ALIASED, limits)
        assert str(raised.value) == (
            "too many YAML nodes once aliases and merge keys (<<) are expanded: over the limit "
            "of 14 nodes (raise it with --max-yaml-nodes)"
        )


def test_merge_keys_count_what_they_merge() -> None:
    text = b"base: &b {x: 1, y: 2}\nResources: {Q: {<<: *b, z: 3}}\n"
    # root, "base", {x: 1, y: 2} (5), "Resources", its mapping, "Q", and {<<: *b, z: 3}
    # (1 + "<<" + the 5 nodes merged + "z" + 3): 1 + 1 + 5 + 1 + 1 + 1 + 9 = 19
    parsing.load_document("t.yaml", text, ReadLimits(max_yaml_nodes=19))
    with pytest.raises(parsing.TemplateError, match="--max-yaml-nodes"):
        parsing.load_document("t.yaml", text, ReadLimits(max_yaml_nodes=18))


# --- options and exit status ------------------------------------------------------------------


def test_limit_options_reach_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "ok.template.json", healthy("ok"))
    code = cli.main(
        [str(tmp_path), "--engine", "local", "--format", "json", "--max-file-size", "1K"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    (finding,) = report["findings"]
    assert finding["message"].endswith("over the limit of 1 KiB (raise it with --max-file-size)")
    assert report["summary"]["files_skipped"] == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-depth", "1001"],
        ["--max-depth", "0"],
        ["--max-file-size", "lots"],
        ["--parse-timeout", "0"],
        ["--max-yaml-nodes", "-5"],
    ],
)
def test_fails_bad_limit_option_exits_2(tmp_path: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        cli.main([str(tmp_path), "--engine", "local", *argv])
    assert raised.value.code == 2


@pytest.mark.parametrize(
    ("text", "size"), [("16M", 16 * 2**20), ("512k", 512 * 1024), ("100", 100), ("1GiB", 2**30)]
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_fails_run_that_cannot_finish_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "ok.template.json", healthy("ok"))
    _broken_workers(monkeypatch)
    assert cli.main([str(tmp_path), "--engine", "local", "--format", "json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""  # no report: never a clean fleet
    assert "the run could not finish" in captured.err


def test_queue_judged_as_written_last_with_duplicate_keys(tmp_path: Path) -> None:
    template = healthy("dup")
    props(template, "Source")["SqsManagedSseEnabled"] = "false"
    text = json.dumps(template)
    # The same key twice in JSON: the first (encrypted) is overridden by the second.
    text = text.replace(
        '"SqsManagedSseEnabled"', '"SqsManagedSseEnabled": true, "SqsManagedSseEnabled"'
    )
    write(tmp_path, "dup.template.json", text)
    result = engine.audit_paths([str(tmp_path)])
    assert [f.rule_id for f in result.findings] == ["QR012"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_file_name_that_is_not_utf8_is_named_in_the_report(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "ok.template.json", healthy("ok"))
    name = os.fsdecode(b"bad\xff.json")  # the undecodable byte becomes a lone surrogate
    (tmp_path / name).write_text('{"Resources": not json')  # a broken template
    command = [sys.executable, "-m", "constructs_lib.audit", str(tmp_path), "--engine", "local"]
    completed = subprocess.run(
        [*command, "--format", fmt], capture_output=True, timeout=120, check=False
    )
    assert completed.returncode == 1, completed.stderr  # the QR901, not a traceback
    report = completed.stdout.decode("utf-8")  # valid UTF-8
    assert "bad\\udcff.json" in report
