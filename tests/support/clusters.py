"""Session fixtures: a real standalone Spark cluster and a Spark Connect server, on loopback.

Both are started from the pyspark distribution's own launchers (``bin/spark-class``,
``bin/spark-submit``), so they are the same Spark the job runs on, not a local-mode imitation.
Their Python workers run ``worker_python``: the project's third-party libraries without
``constructs_lib``, like a cluster image that has the libraries but not our package, so a job
that forgets to ship its own code fails here as it would on a real fleet.

Every process gets its own process group and logs to files under pytest's tmp dir; teardown ends
them by process id. Clients must run in child processes: this pytest process already holds the
classic local SparkSession of ``conftest.spark``, and a process can have one SparkContext only.
A client started with a fixture's ``env`` binds to loopback and ships Python work to
``worker_python``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import TEST_JVM_OPTIONS

LOOPBACK = "127.0.0.1"
# Generous: a 2-core CI runner starts several JVMs at once (each launcher is itself a JVM).
START_TIMEOUT = 180.0
STOP_GRACE = 5.0
# A port picked free can be taken by someone else before the JVM binds it. Daemons are told not
# to drift to the next port (they would then be unreachable at the address we hand out), so a
# lost race is an early exit with a bind error, answered by a relaunch on fresh ports.
PORT_ATTEMPTS = 3
NO_PORT_DRIFT = "-Dspark.port.maxRetries=0"
# tests/conftest.py's JVM options (C1 only, the serial collector), set again for every JVM the
# fixtures start, executors included (they inherit the worker's environment), and for clients
# using `env`, whatever the caller's environment says: with 5+ JVMs on 2 cores, the C2 compiler
# and parallel GC threads crowd each other out (measured: cluster start 10 s -> 6 s, a small job
# 27 s -> 15 s).
JAVA_TOOL_OPTIONS = TEST_JVM_OPTIONS
# Client-side variables that would turn a child's classic session into a Connect one, or point
# daemons at a Python path that sees the repository.
_DROPPED_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "SPARK_REMOTE",
    "SPARK_LOCAL_REMOTE",
    "SPARK_CONNECT_MODE_ENABLED",
    "PYSPARK_DRIVER_PYTHON",
)
_WORKER_PYTHON_CHECK = """
import sys
import boto3, pandas, pyarrow, pyspark, samtranslator, yaml
try:
    import constructs_lib
except ModuleNotFoundError:
    pass
else:
    sys.exit("constructs_lib is importable from " + str(constructs_lib.__file__))
print(f"{sys.version_info.major}.{sys.version_info.minor}")
"""

Proc = subprocess.Popen[bytes]


def _require_java() -> None:
    # The only reason to skip: everything else missing is a broken set-up and must show as one.
    if shutil.which("java") is None:
        pytest.skip("java is not on PATH: a Spark cluster or Connect server cannot be started")


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _base_env(s3_env: Mapping[str, str], python: str, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(s3_env)
    env["SPARK_HOME"] = str(_spark_home())
    env["SPARK_LOCAL_IP"] = LOOPBACK
    env["PYSPARK_PYTHON"] = python
    # Scratch space (block managers, shuffle files) inside the test's tmp dir, not /tmp.
    env["SPARK_LOCAL_DIRS"] = str(root / "local")
    env["JAVA_TOOL_OPTIONS"] = JAVA_TOOL_OPTIONS
    return env


def _free_ports(count: int) -> list[int]:
    # All sockets stay open until every port is picked, so the ports are distinct.
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((LOOPBACK, 0))
            ports.append(sock.getsockname()[1])
        return ports


def _listening(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself listens on ``port`` (not just anyone)."""
    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in connections)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"==> {path.name}: (no log yet)"
    return f"==> {path.name} <==\n" + "\n".join(text.splitlines()[-lines:])


def _bind_failed(log: Path) -> bool:
    try:
        text = log.read_text(errors="replace")
    except FileNotFoundError:
        return False
    return "BindException" in text or "Address already in use" in text


def _launch(
    cmd: list[str], env: Mapping[str, str], cwd: Path, log: Path, cpu: int | None = None
) -> Proc:
    """``cmd`` started in its own session, its output appended to ``log``; with ``cpu``, it and
    everything it starts (an executor, its Python workers) run on that core only."""
    log.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    pinned = None if cpu is None else functools.partial(os.sched_setaffinity, 0, {cpu})
    with log.open("ab") as out:
        # A new session makes the process a group leader: teardown and kill_worker can signal the
        # JVM and everything it forks by one id. spark-class execs the JVM, so pid == JVM pid.
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=pinned,
        )


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        children: list[psutil.Process] = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return children


def _kill_all(leader: int, tree: list[psutil.Process]) -> None:
    """SIGKILL a launched process's group, every descendant in ``tree`` and their groups.

    A group kill alone is not enough: pyspark's daemon (the parent of the Python workers under an
    executor) moves itself into a process group of its own. ``tree`` must be collected while the
    leader lives: once it dies its descendants are re-parented and no longer found under it.
    """
    own_group = os.getpgid(0)
    groups = {leader}
    for child in tree:
        with contextlib.suppress(psutil.Error, OSError):
            groups.add(os.getpgid(child.pid))
    groups.discard(own_group)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    for child in tree:
        with contextlib.suppress(psutil.Error):
            child.kill()


def _wait_gone(tree: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until every process has exited; those still running after ``timeout``.

    A zombie counts as gone: re-parented processes are reaped by init, which in some containers
    takes its time (psutil.wait_procs would wait for the reaping).
    """

    def running(p: psutil.Process) -> bool:
        try:
            return bool(p.is_running() and p.status() != psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + timeout
    left = [p for p in tree if running(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if running(p)]
    return left


def _stop(proc: Proc) -> None:
    """SIGTERM first so the JVM's shutdown hooks stop its children, then SIGKILL what is left."""
    tree = _descendants(proc.pid)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_GRACE)
    _kill_all(proc.pid, tree)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(STOP_GRACE)
    _wait_gone(tree, STOP_GRACE)


def _wait(
    ready: Callable[[], bool],
    what: str,
    check: Callable[[], None],
    log_tail: Callable[[], str],
    timeout: float = START_TIMEOUT,
) -> None:
    """Poll ``ready``; ``check`` fails (or relaunches) when a process has exited meanwhile."""
    deadline = time.monotonic() + timeout
    while not ready():
        check()
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s\n{log_tail()}", pytrace=False)
        time.sleep(0.2)


def _exited(what: str, proc: Proc, log_tail: Callable[[], str]) -> None:
    pytest.fail(
        f"{what} (pid {proc.pid}) exited with status {proc.returncode}\n{log_tail()}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def worker_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with the project's libraries but without constructs_lib, for executors.

    A venv whose only site-packages entry is a ``.pth`` naming this venv's site-packages as a plain
    path: a plain entry is appended to sys.path without running the ``.pth`` files inside that
    folder, so the editable install's ``_constructs_lib.pth`` (which adds the repository) is never
    processed. Same base interpreter, so the Python version matches the driver's as Spark demands.
    """
    root = tmp_path_factory.mktemp("worker-python")
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    # Its own site-packages is where the .pth must go; ask it rather than guess the layout.
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    ).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(own, "_main_site_packages.pth").write_text("".join(f"{p}\n" for p in ours))

    # Checked from a directory outside the repository, as executors run in their work dir: the
    # current directory is on sys.path for `python -c` and `python -m pyspark.daemon` alike.
    elsewhere = root / "cwd"
    elsewhere.mkdir()
    check = subprocess.run(
        [str(python), "-c", _WORKER_PYTHON_CHECK],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    driver_version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if check.returncode != 0 or check.stdout.strip() != driver_version:
        pytest.fail(
            f"worker Python {python} is not usable (want Python {driver_version}, the libraries, "
            f"no constructs_lib):\n{check.stdout}{check.stderr}",
            pytrace=False,
        )
    return str(python)


class StandaloneCluster:
    """A standalone master and its workers, each one JVM started by ``bin/spark-class``."""

    def __init__(self, root: Path, env: dict[str, str], workers: int, pinned: bool = False) -> None:
        """``pinned``: worker ``i`` and its executors run on core ``i`` only (modulo the
        machine's cores), as on a machine of one core each: an unpinned one-core worker's JVM
        still collects garbage and compiles on the other cores."""
        self.root = root
        self.pinned = pinned
        self.log_dir = root / "logs"
        self.env = env
        self.master_url = ""
        self.webui_url = ""
        self.work_dirs = [root / f"worker-{i}" for i in range(workers)]
        self.worker_ports = [0] * workers
        self.startup_seconds = 0.0
        self._master: Proc | None = None
        self._master_log = self.log_dir / "master.log"
        self._workers: list[Proc | None] = [None] * workers
        self._worker_logs = [self.log_dir / f"worker-{i}.log" for i in range(workers)]
        self._relaunches = 0
        # Pids of workers killed on purpose: their exit is not a failure.
        self._killed: set[int] = set()
        # Loopback only: never send these requests to a proxy from the environment.
        self._http = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def master_pid(self) -> int:
        assert self._master is not None
        return self._master.pid

    @property
    def worker_pids(self) -> list[int]:
        """The JVM pid of each worker by index (a killed one keeps its pid until restarted)."""
        return [p.pid if p is not None else 0 for p in self._workers]

    def _spark_class(self, *args: str) -> list[str]:
        return [str(Path(self.env["SPARK_HOME"], "bin", "spark-class")), *args]

    def start(self) -> None:
        began = time.monotonic()
        self._launch_master()
        # Ready means leader: a worker that registers with a master still in STANDBY is ignored
        # and retries only after 5-15 s.
        _wait(
            lambda: self.master_status().get("status") == "ALIVE",
            f"Spark master at {self.master_url} did not become ALIVE",
            lambda: self._check_master(relaunch=True),
            self.log_tail,
        )
        for index in range(len(self._workers)):
            self._start_worker(index)
        self._wait_workers()
        self.startup_seconds = time.monotonic() - began

    def _launch_master(self) -> None:
        port, webui = _free_ports(2)
        self.master_url = f"spark://{LOOPBACK}:{port}"
        self.webui_url = f"http://{LOOPBACK}:{webui}"
        env = dict(self.env)
        # REST submissions are on by default and bind the fixed port 6066, which two sessions on
        # one machine (pytest-xdist, parallel CI jobs) would fight over; nothing here uses them.
        env["SPARK_MASTER_OPTS"] = f"{NO_PORT_DRIFT} -Dspark.master.rest.enabled=false"
        self._master = _launch(
            self._spark_class(
                "org.apache.spark.deploy.master.Master",
                "--host",
                LOOPBACK,
                "--port",
                str(port),
                "--webui-port",
                str(webui),
            ),
            env,
            self.root,
            self._master_log,
        )

    def _check_master(self, relaunch: bool = False) -> None:
        proc = self._master
        assert proc is not None
        if proc.poll() is None:
            return
        if relaunch and _bind_failed(self._master_log) and self._relaunches < PORT_ATTEMPTS:
            self._relaunches += 1
            self._master_log.rename(self._master_log.with_suffix(f".{proc.pid}.log"))
            self._launch_master()
            return
        _exited("Spark master", proc, self.log_tail)

    def _start_worker(self, index: int) -> None:
        # The worker's entry in the master's JSON is found by this port; a fresh one per start so a
        # restarted worker never collides with the address of the dead one the master still lists.
        (self.worker_ports[index],) = _free_ports(1)
        self.work_dirs[index].mkdir(parents=True, exist_ok=True)
        env = dict(self.env)
        env["SPARK_WORKER_OPTS"] = NO_PORT_DRIFT
        self._workers[index] = _launch(
            self._spark_class(
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host",
                LOOPBACK,
                "--port",
                str(self.worker_ports[index]),
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(self.work_dirs[index]),
                "--webui-port",
                "0",
            ),
            env,
            self.work_dirs[index],
            self._worker_logs[index],
            index % (os.cpu_count() or 1) if self.pinned else None,
        )

    def _check_workers(self) -> None:
        self._check_master()
        for index, proc in enumerate(self._workers):
            if proc is None or proc.pid in self._killed or proc.poll() is None:
                continue
            log = self._worker_logs[index]
            if _bind_failed(log) and self._relaunches < PORT_ATTEMPTS:
                self._relaunches += 1
                log.rename(log.with_suffix(f".{proc.pid}.log"))
                self._start_worker(index)
                continue
            _exited(f"Spark worker {index}", proc, self.log_tail)

    def _wait_workers(self, timeout: float = START_TIMEOUT) -> None:
        def registered() -> bool:
            alive = {w.get("port") for w in self.alive_workers()}
            return all(port in alive for port in self.worker_ports)

        _wait(
            registered,
            f"{len(self._workers)} workers did not register ALIVE with {self.master_url}",
            self._check_workers,
            self.log_tail,
            timeout,
        )

    def master_status(self) -> dict[str, Any]:
        """The master's JSON status page; empty while it is not up (or is not ours)."""
        try:
            with self._http.open(f"{self.webui_url}/json/", timeout=5) as response:
                status: dict[str, Any] = json.load(response)
        except (OSError, ValueError):
            return {}
        return status if status.get("url") == self.master_url else {}

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the master lists as ALIVE (dead ones stay listed, as DEAD)."""
        workers = self.master_status().get("workers", [])
        return [w for w in workers if w.get("state") == "ALIVE"]

    def _descendant_pids(self, index: int, matches: Callable[[str], bool]) -> list[int]:
        """Processes under worker ``index`` with a command-line argument that ``matches``."""
        proc = self._workers[index]
        if proc is None:
            return []
        pids = []
        for child in _descendants(proc.pid):
            with contextlib.suppress(psutil.Error):
                if any(matches(part) for part in child.cmdline()):
                    pids.append(child.pid)
        return pids

    def executor_pids(self, index: int) -> list[int]:
        """Executor JVMs that worker ``index`` launched (its children running the backend)."""
        return self._descendant_pids(index, lambda part: "CoarseGrainedExecutorBackend" in part)

    def python_worker_pids(self, index: int) -> list[int]:
        """pyspark's Python processes under worker ``index``'s executors: the daemon and the
        workers it forks appear once a task that runs Python starts there."""
        return self._descendant_pids(index, lambda part: part.startswith("pyspark."))

    def kill_worker(self, index: int) -> list[int]:
        """SIGKILL worker ``index``, its executors and their Python workers; return their pids.

        Executors are children of the worker JVM; a SIGKILLed worker cannot stop them itself.
        """
        proc = self._workers[index]
        if proc is None or proc.poll() is not None:
            raise ValueError(f"worker {index} is not running")
        self._killed.add(proc.pid)
        tree = _descendants(proc.pid)
        _kill_all(proc.pid, tree)
        proc.wait(30)
        survivors = _wait_gone(tree, 30)
        if survivors:
            raise RuntimeError(f"still running after SIGKILL: {[p.pid for p in survivors]}")
        return [proc.pid, *(p.pid for p in tree)]

    def restart_worker(self, index: int, timeout: float = START_TIMEOUT) -> int:
        """Start a replacement for worker ``index``, wait until every worker is ALIVE; its pid."""
        proc = self._workers[index]
        if proc is not None:
            if proc.poll() is None:
                self.kill_worker(index)
            # The old worker's log keeps its name with its pid; the new one starts a fresh file.
            log = self._worker_logs[index]
            if log.exists():
                log.rename(log.with_suffix(f".{proc.pid}.log"))
        self._start_worker(index)
        self._wait_workers(timeout)
        return self.worker_pids[index]

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(_tail(log, lines) for log in sorted(self.log_dir.glob("*.log")))

    def stop(self) -> None:
        # Workers first, so the master does not spend the teardown re-scheduling their apps.
        for proc in [*self._workers, self._master]:
            # A worker killed on purpose was seen dead with all its children: nothing to stop.
            if proc is not None and proc.pid not in self._killed:
                _stop(proc)


@pytest.fixture(scope="session")
def standalone_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StandaloneCluster]:
    """A standalone master and two workers (1 core, 1g each) on 127.0.0.1 with free ports.

    Worker and executor environments carry ``s3_server.env``, so executors reach the test S3.
    """
    _require_java()
    # Requested after the java check, so a machine without java does not start the S3 emulator.
    s3 = request.getfixturevalue("s3_server")
    python = request.getfixturevalue("worker_python")
    root = tmp_path_factory.mktemp("standalone")
    env = _base_env(s3.env, python, root)
    # The master and worker daemons schedule only; they need far less than the 1g default heap.
    env["SPARK_DAEMON_MEMORY"] = "512m"
    cluster = StandaloneCluster(root, env, workers=2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


class ConnectServer:
    """A Spark Connect server (local[2] inside) started by ``bin/spark-submit``."""

    CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.port = 0
        self.url = ""
        self.log = root / "logs" / "connect-server.log"
        self.startup_seconds = 0.0
        self._proc: Proc | None = None
        self._relaunches = 0

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def start(self) -> None:
        began = time.monotonic()
        self._launch()
        _wait(
            lambda: _listening(self.pid, self.port),
            "Spark Connect server did not listen",
            self._check,
            self.log_tail,
        )
        self.startup_seconds = time.monotonic() - began

    def _launch(self) -> None:
        (self.port,) = _free_ports(1)
        self.url = f"sc://{LOOPBACK}:{self.port}"
        submit = Path(self.env["SPARK_HOME"], "bin", "spark-submit")
        confs = {
            "spark.connect.grpc.binding.address": LOOPBACK,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.connect.grpc.port.maxRetries": "0",
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
            # No web UI: nobody looks at it, and it would take port 4040 or the next free one.
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
        }
        cmd = [str(submit), "--class", self.CLASS, "--name", "queue-audit-tests-connect"]
        cmd += ["--master", "local[2]"]
        for key, value in confs.items():
            cmd += ["--conf", f"{key}={value}"]
        # The server's Python workers inherit its working directory; keep the repository (and
        # with it constructs_lib) off their sys.path.
        self._proc = _launch(cmd, self.env, self.root / "cwd", self.log)

    def _check(self) -> None:
        proc = self._proc
        assert proc is not None
        if proc.poll() is None:
            return
        if _bind_failed(self.log) and self._relaunches < PORT_ATTEMPTS:
            self._relaunches += 1
            self.log.rename(self.log.with_suffix(f".{proc.pid}.log"))
            self._launch()
            return
        _exited("Spark Connect server", proc, self.log_tail)

    def log_tail(self, lines: int = 60) -> str:
        return _tail(self.log, lines)

    def stop(self) -> None:
        if self._proc is not None:
            _stop(self._proc)


@pytest.fixture(scope="session")
def connect_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConnectServer]:
    """A Spark Connect server on 127.0.0.1 whose Python workers run ``worker_python``.

    Connect UDFs run the interpreter named by the server's PYSPARK_PYTHON, not the client's.
    """
    _require_java()
    s3 = request.getfixturevalue("s3_server")
    python = request.getfixturevalue("worker_python")
    root = tmp_path_factory.mktemp("connect")
    env = _base_env(s3.env, python, root)
    # As sbin/start-connect-server.sh does: the launcher must build a classic server command.
    env["SPARK_CONNECT_MODE"] = "0"
    server = ConnectServer(root, env)
    try:
        server.start()
        yield server
    finally:
        server.stop()
