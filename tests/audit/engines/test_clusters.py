"""Smoke tests for the cluster fixtures: real executors, a real Connect server, a lost worker.

Each Spark client runs in a child process: this pytest process already holds the classic local
session of ``conftest.spark``, and one process can have only one SparkContext.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.clusters import ConnectServer, StandaloneCluster
from tests.support.scripts import load_script

pytestmark = pytest.mark.cluster

REPO_ROOT = Path(__file__).resolve().parents[3]
CLIENT_TIMEOUT = 300

# The client, run as `python -c CLIENT CONFIG_JSON`. Its probe runs inside the Python workers and
# reports who ran it: pid, host, working directory, the chain of parent pids (to tell which worker
# JVM it ran under), whether constructs_lib is importable there, and the AWS variables it sees.
CLIENT = r"""
import json, os, socket, sys, time

SCHEMA = (
    "partition long, pid long, host string, cwd string, ancestors string, rows long, "
    "total long, has_constructs_lib boolean, aws string"
)


def make_probe(sleep, markers, release):
    def ancestors():
        pids, pid = [], os.getpid()
        while pid > 1:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
            pids.append(pid)
        return pids

    def probe(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        try:
            import constructs_lib  # noqa: F401
        except ModuleNotFoundError:
            has_constructs_lib = False
        else:
            has_constructs_lib = True
        partition = TaskContext.get().partitionId()
        chain = ancestors()
        if markers:
            # Written before the work starts, so the test sees where a task is running now.
            tmp = os.path.join(markers, f".{partition}-{os.getpid()}")
            with open(tmp, "w") as out:
                json.dump(chain, out)
            os.replace(tmp, tmp.replace(os.sep + ".", os.sep))
        if release:
            # Hold every task until the test says so (bounded, should the test die first).
            deadline = time.monotonic() + 120
            while not os.path.exists(release) and time.monotonic() < deadline:
                time.sleep(0.05)
        rows = total = 0
        for batch in batches:
            ids = batch.column("id").to_pylist()
            rows += len(ids)
            total += sum(ids)
        time.sleep(sleep)
        aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        yield pa.RecordBatch.from_pylist([{
            "partition": partition, "pid": os.getpid(), "host": socket.gethostname(),
            "cwd": os.getcwd(), "ancestors": json.dumps(chain), "rows": rows, "total": total,
            "has_constructs_lib": has_constructs_lib, "aws": json.dumps(aws),
        }])

    return probe


config = json.loads(sys.argv[1])
from pyspark.sql import SparkSession, functions as F

if "remote" in config:
    spark = SparkSession.builder.remote(config["remote"]).getOrCreate()
else:
    builder = SparkSession.builder.master(config["master"]).appName("cluster-smoke")
    for key, value in config["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

data = spark.range(0, config["rows"], numPartitions=config["partitions"])
probes = data.mapInArrow(make_probe(config["sleep"], config.get("markers"), config.get("release")), SCHEMA)
result = {"driver_pid": os.getpid(), "probes": [row.asDict() for row in probes.collect()]}
if config.get("group"):
    groups = data.groupBy((F.col("id") % 3).alias("k")).agg(F.count("*").alias("n"), F.sum("id").alias("s"))
    result["groups"] = [row.asDict() for row in groups.orderBy("k").collect()]
print("RESULT " + json.dumps(result), flush=True)
spark.stop()
"""


def _classic_conf() -> dict[str, str]:
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.memory": "1g",
        # Standalone starts tasks as soon as one executor registers; wait for both (2 cores) so
        # the work really spreads over the two workers.
        "spark.cores.max": "2",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    }


def _client_env() -> dict[str, str]:
    dropped = {"PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_CONNECT_MODE"}
    return {k: v for k, v in os.environ.items() if k not in dropped}


def _parse(stdout: str, stderr: str, logs: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    tail = "\n".join(stderr.splitlines()[-60:])
    pytest.fail(f"client printed no result\nstdout:\n{stdout}\nstderr:\n{tail}\n{logs}")


def _run_client(config: dict[str, Any], env: dict[str, str], cwd: Path, logs: Any) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, json.dumps(config)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )
    result = _parse(done.stdout, done.stderr, logs())
    assert done.returncode == 0, done.stderr[-4000:]
    return result


def _check_complete(probes: list[dict[str, Any]], rows: int, partitions: int) -> None:
    assert sorted(p["partition"] for p in probes) == list(range(partitions))
    assert sum(p["rows"] for p in probes) == rows
    assert sum(p["total"] for p in probes) == rows * (rows - 1) // 2


def _ran_under(probe: dict[str, Any], pid: int) -> bool:
    return pid in json.loads(probe["ancestors"])


def _check_aws(probes: list[dict[str, Any]], s3_env: dict[str, str]) -> None:
    for probe in probes:
        seen = json.loads(probe["aws"])
        assert {k: seen.get(k) for k in s3_env} == dict(s3_env)


def test_standalone_executors_on_both_workers(
    standalone_cluster: StandaloneCluster, s3_server: Any, tmp_path: Path
) -> None:
    """Executors on both workers run the Arrow function, without our package, with the S3 env."""
    cluster = standalone_cluster
    rows, partitions = 1000, 6
    config = {
        "master": cluster.master_url,
        "conf": _classic_conf(),
        "rows": rows,
        "partitions": partitions,
        "sleep": 0.5,
    }
    result = _run_client(config, dict(cluster.env), tmp_path, cluster.log_tail)
    probes = result["probes"]

    _check_complete(probes, rows, partitions)
    assert not any(p["has_constructs_lib"] for p in probes), "executors import constructs_lib"
    assert all(p["host"] and p["pid"] != result["driver_pid"] for p in probes)
    for index, (pid, work_dir) in enumerate(
        zip(cluster.worker_pids, cluster.work_dirs, strict=True)
    ):
        mine = [p for p in probes if _ran_under(p, pid)]
        assert mine, f"worker {index} (pid {pid}) ran no task: {probes}"
        assert all(Path(p["cwd"]).is_relative_to(work_dir.resolve()) for p in mine)
    _check_aws(probes, s3_server.env)


def test_connect_server_runs_python_without_our_package(
    connect_server: ConnectServer, s3_server: Any, tmp_path: Path
) -> None:
    """A Connect client's Arrow function and groupBy run in the server, without our package."""
    rows, partitions = 999, 4
    config = {
        "remote": connect_server.url,
        "rows": rows,
        "partitions": partitions,
        "sleep": 0,
        "group": True,
    }
    result = _run_client(config, _client_env(), tmp_path, connect_server.log_tail)
    probes = result["probes"]

    _check_complete(probes, rows, partitions)
    assert not any(p["has_constructs_lib"] for p in probes), "server workers see constructs_lib"
    assert all(_ran_under(p, connect_server.pid) for p in probes)
    assert not any(Path(p["cwd"]).resolve().is_relative_to(REPO_ROOT) for p in probes)
    expected = [
        {"k": k, "n": len(range(k, rows, 3)), "s": sum(range(k, rows, 3))} for k in range(3)
    ]
    assert result["groups"] == expected
    _check_aws(probes, s3_server.env)


def _wait_for(condition: Any, what: str, timeout: float, logs: Any) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"{what} not within {timeout} s\n{logs()}")


def test_job_survives_a_killed_worker(
    standalone_cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """Worker 1 dies mid-job (JVM, executor and Python workers); worker 0 redoes its task."""
    cluster = standalone_cluster
    rows, partitions = 600, 6
    markers = tmp_path / "markers"
    markers.mkdir()
    config = {
        "master": cluster.master_url,
        "conf": _classic_conf(),
        "rows": rows,
        "partitions": partitions,
        "sleep": 0.5,
        "markers": str(markers),
        # Tasks wait for this file, so the one on worker 1 is surely mid-flight when it dies.
        "release": str(tmp_path / "release"),
    }
    victim = cluster.worker_pids[1]
    apps_before = set(cluster.work_dirs[1].iterdir())
    # Output to files: nobody reads a pipe while the test waits, and a full one would block it.
    out, err = tmp_path / "client.out", tmp_path / "client.err"
    with out.open("w") as stdout_file, err.open("w") as stderr_file:
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, json.dumps(config)],
            env=dict(cluster.env),
            cwd=tmp_path,
            stdout=stdout_file,
            stderr=stderr_file,
            start_new_session=True,
        )
    try:
        # In use means: this app has an executor folder on worker 1 and a task runs under it.
        _wait_for(
            lambda: set(cluster.work_dirs[1].iterdir()) - apps_before,
            "an app folder in worker 1's work dir",
            120,
            cluster.log_tail,
        )

        def running_on_victim() -> list[int]:
            found = []
            for marker in markers.glob("[0-9]*"):
                if victim in json.loads(marker.read_text()):
                    found.append(int(marker.name.split("-")[0]))
            return found

        busy = _wait_for(running_on_victim, "a task on worker 1", 120, cluster.log_tail)
        executors = cluster.executor_pids(1)
        assert executors, "no executor JVM found under worker 1"
        killed = cluster.kill_worker(1)
        assert set(executors) <= set(killed)
        (tmp_path / "release").touch()

        client.wait(CLIENT_TIMEOUT)
        stdout, stderr = out.read_text(), err.read_text()
        result = _parse(stdout, stderr, cluster.log_tail())
        assert client.returncode == 0, stderr[-4000:]
        probes = result["probes"]
        _check_complete(probes, rows, partitions)
        # The task cut off by the kill was run again, on the surviving worker.
        survivor = cluster.worker_pids[0]
        rerun = [p for p in probes if p["partition"] in busy]
        assert rerun and all(_ran_under(p, survivor) for p in rerun), rerun
        assert "Lost executor" in stderr, stderr[-4000:]
    finally:
        if client.poll() is None:
            os.killpg(client.pid, signal.SIGKILL)
            client.wait()
        # The rest of the session expects two workers.
        cluster.restart_worker(1)
    assert len(cluster.alive_workers()) == 2


def test_a_pinned_launch_and_what_it_starts_run_on_its_core_only(tmp_path: Path) -> None:
    """``StandaloneCluster(pinned=True)`` launches worker ``i`` on core ``i`` only, for the
    benches' one-core workers: the launched process and its children must inherit that core."""
    from tests.support import clusters

    script = "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    proc = clusters._launch(
        [sys.executable, "-c", script], os.environ, tmp_path, tmp_path / "log", cpu=0
    )
    try:
        deadline = time.monotonic() + 10
        while not clusters._descendants(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        (child,) = clusters._descendants(proc.pid)
        assert os.sched_getaffinity(proc.pid) == {0}
        assert child.cpu_affinity() == [0]
        assert os.sched_getaffinity(0) != {0} or os.cpu_count() == 1  # this process: unchanged
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_bench_with_code_runs_that_checkout_s_package(tmp_path: Path) -> None:
    """``--code DIR`` measures another commit's package: a run's environment must import it
    from DIR ahead of the installed checkout (its executors and Python workers inherit that
    environment), and a folder without the package is refused."""
    import argparse

    bench = load_script(REPO_ROOT / "bench" / "audit_bench.py")
    other = tmp_path / "other"
    (other / "constructs_lib").mkdir(parents=True)
    (other / "constructs_lib" / "__init__.py").write_text("MARK = 'other checkout'\n")
    with bench.target(
        "spark", "local[1]", tmp_path / "daemons", code=bench.checkout(str(other))
    ) as where:
        env = where.env
    # A script, as the benches' runs are: its own folder, not the working one, leads the path.
    probe = tmp_path / "probe.py"
    probe.write_text("import constructs_lib\nprint(constructs_lib.MARK)\n")
    imported = subprocess.run(
        [sys.executable, str(probe)], env=env, capture_output=True, text=True, check=True,
        timeout=60,
    )  # fmt: skip
    assert imported.stdout.strip() == "other checkout"
    with bench.target("spark", "local[1]", tmp_path / "daemons") as where:
        assert "PYTHONPATH" not in where.env or str(other) not in where.env["PYTHONPATH"]
    with pytest.raises(argparse.ArgumentTypeError, match="no constructs_lib package"):
        bench.checkout(str(tmp_path))
