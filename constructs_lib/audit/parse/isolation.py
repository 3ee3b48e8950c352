"""Parse files in worker processes, so that a file that crashes or hangs the parser costs itself.

The limits in ``safety`` stop every hostile file we know of before it does harm; this stops
the ones we do not know of yet (a bug in a C parser, a pathological input that is slow but
within every limit). ``parse_files`` hands batches of files to a few long-lived worker
processes, which read and parse each file (``pipeline.read_and_parse``) and send its rows back
as soon as it is done. So the parent always knows which file a worker is on:

- a worker that dies (a segmentation fault, the OOM killer) costs the file it was on, which
  becomes a QR901; a new worker takes the rest of the batch;
- a file still unfinished after ``parse_timeout_s`` has its worker killed and becomes a QR901;
- a worker's address space is capped (``max_parse_memory_bytes`` above what it started with),
  so a parser that allocates without bound gets MemoryError there, not the machine's OOM killer.

Workers are forked when this process has a single thread (cheap: no interpreter start, nothing
imported again), and started as a new interpreter otherwise (forking a process with threads can
deadlock the child). They die with their parent.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

from constructs_lib.audit.inputs import objects
from constructs_lib.audit.model import ParsedTemplate
from constructs_lib.audit.parse import pipeline
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.safety import BATCH_FILES, DEFAULT_LIMITS, ReadLimits, size_text

_Item = tuple[int, str, str]  # (position in the input, file, stack)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_MAX_IDLE_DEATHS = 3  # workers dying before any file: a broken environment, not a bad file
_PROGRESS = struct.Struct("q")  # 1 + position of the file a worker is on; 0 before the first


# --- the worker ----------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when its parent dies, however it dies."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _cap_memory(extra: int) -> None:
    """Cap the address space at what the worker has plus ``extra``; no core files (a crashing
    file must not fill the disk, nor take seconds to dump)."""
    with contextlib.suppress(Exception):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))

        with open("/proc/self/statm", encoding="ascii") as handle:
            current = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = current + extra
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def serve(reader: Connection, writer: Connection, progress: mmap.mmap) -> None:
    """A worker's life: the limits, then batches of files until told to stop (None) or orphaned.

    Before each file the worker writes its position to ``progress`` (shared memory the parent
    reads), and sends the batch's results in one message at the end: per-file accounting with
    one exchange per batch. After a MemoryError it sends what it has, with (position, None) for
    that file, and exits (its heap may be left fragmented); the parent replaces it.
    """
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    limits: ReadLimits
    overrides: Overrides
    limits, overrides, cwd = reader.recv()
    _cap_memory(limits.max_parse_memory_bytes)
    unseen = _enter(cwd)
    while True:
        try:
            batch: list[_Item] | None = reader.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        done: list[tuple[int, ParsedTemplate | None]] = []
        for position, file, stack in batch:
            _PROGRESS.pack_into(progress, 0, position + 1)
            if unseen and not os.path.isabs(file) and not objects.is_object_url(file):
                done.append((position, pipeline.unparseable(file, stack, unseen)))
                continue
            try:
                done.append((position, pipeline.read_and_parse(file, stack, limits, overrides)))
            except MemoryError:
                done.append((position, None))
                break
        writer.send(done)
        if done[-1][1] is None:
            return


def _enter(cwd: str | None) -> str:
    """Work in ``cwd``, the directory relative input paths were given from (on a cluster, the
    driver's: an executor starts in a work directory of its own). Where this machine has no such
    directory, the reason every relative path will be unreadable; else ""."""
    if cwd is None:
        return ""
    try:
        os.chdir(cwd)
    except OSError as error:
        return (
            f"cannot read a relative path here: the directory it is relative to ({cwd}) "
            f"is not on this machine ({error.strerror}); on a cluster give s3:// URLs or "
            "absolute paths on a filesystem every executor mounts"
        )
    return ""


# --- the parent ----------------------------------------------------------------------------------


class _Worker:
    """One worker process and its two pipes; ``remaining`` is the batch it is working through."""

    def __init__(self, limits: ReadLimits, overrides: Overrides, cwd: str | None) -> None:
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        with tempfile.TemporaryFile() as shared:
            shared.truncate(_PROGRESS.size)
            self.progress = mmap.mmap(shared.fileno(), _PROGRESS.size)
            shared_fd = shared.fileno()
            self._start(from_parent, to_parent, shared_fd)
        os.close(from_parent)
        os.close(to_parent)
        self.to_child = Connection(to_child, readable=False)
        self.from_child = Connection(from_child, writable=False)
        self.remaining: deque[_Item] = deque()
        self.stopped = False
        self.exit_code: int | None = None
        self.seen = 0
        self.since = 0.0
        self.to_child.send((limits, dict(overrides), cwd))

    def _start(self, from_parent: int, to_parent: int, shared_fd: int) -> None:
        self.popen: subprocess.Popen[bytes] | None = None
        self.pid = 0
        if threading.active_count() == 1 and hasattr(os, "fork"):
            pid = os.fork()
            if pid == 0:  # the worker
                code = 0
                try:
                    _close_all_but(from_parent, to_parent)
                    serve(
                        Connection(from_parent, writable=False),
                        Connection(to_parent, readable=False),
                        self.progress,
                    )
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            self.pid = pid
        else:
            self.popen = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WORKER_MAIN,
                    str(from_parent),
                    str(to_parent),
                    str(shared_fd),
                ],
                pass_fds=(from_parent, to_parent, shared_fd),
                stdin=subprocess.DEVNULL,
                # The new interpreter must import this package from where this one did: on a
                # Spark executor that is the archive the job shipped, not an installed copy.
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
            self.pid = self.popen.pid

    def give(self, batch: list[_Item]) -> None:
        self.remaining = deque(batch)
        _PROGRESS.pack_into(self.progress, 0, 0)
        self.seen = 0
        self.since = time.monotonic()
        self.to_child.send(batch)

    def moved(self, now: float) -> None:
        """Note when the worker last started a new file (the time bound counts from there)."""
        current = _PROGRESS.unpack_from(self.progress, 0)[0]
        if current != self.seen:
            self.seen = current
            self.since = now

    def current(self) -> int:
        """The position of the file the worker is on (it was on when it died)."""
        return int(_PROGRESS.unpack_from(self.progress, 0)[0]) - 1

    def stop(self, kill: bool = False) -> int | None:
        """Stop the process (kill it when asked or when it does not stop); its exit code."""
        if self.stopped:
            return self.exit_code
        self.stopped = True
        if not kill:
            with contextlib.suppress(OSError):
                self.to_child.send(None)
        for connection in (self.to_child, self.from_child):
            connection.close()
        self.progress.close()
        if kill:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        self.exit_code = self._reap()
        return self.exit_code

    def _reap(self) -> int | None:
        if self.popen is not None:
            try:
                return self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                return self.popen.wait()
        deadline = time.monotonic() + 10
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            time.sleep(0.01)


def _close_all_but(*keep: int) -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"the parser crashed on this file ({signal.Signals(-code).name})"
    return f"the parser crashed on this file (exit status {code})"


def parse_files(
    files: Iterable[tuple[str, str]],
    limits: ReadLimits = DEFAULT_LIMITS,
    workers: int | None = None,
    overrides: Overrides | None = None,
    cwd: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[ParsedTemplate]:
    """Every ``(file, stack)`` read and parsed within ``limits``, in input order; one
    ParsedTemplate per file whatever happens to the file (a QR901 when it crashed the parser,
    ran past the time bound or past the memory cap). Relative paths are read from ``cwd``
    (default: this process's working directory); ``progress`` is told how many files are done
    each time a batch comes back."""
    overrides = overrides or {}
    items: list[_Item] = [(i, file, stack) for i, (file, stack) in enumerate(files)]
    results: list[ParsedTemplate | None] = [None] * len(items)
    if not items:
        return []
    size = max(1, min(BATCH_FILES, -(-len(items) // (2 * (workers or os.cpu_count() or 1)))))
    pending: deque[list[_Item]] = deque(items[i : i + size] for i in range(0, len(items), size))
    count = max(1, min(workers or os.cpu_count() or 1, len(pending)))
    pool: list[_Worker] = []
    start = functools.partial(_Worker, limits, overrides, cwd)
    try:
        pool = [start() for _ in range(count)]
        _Run(pool, pending, results, limits, start, progress or (lambda _done: None)).until_done()
    finally:
        for worker in pool:
            worker.stop(kill=bool(worker.remaining))
    return [r for r in results if r is not None]


@dataclass
class _Run:
    """One ``parse_files`` call at work: its pool, batches not yet handed out, results so far."""

    pool: list[_Worker]
    pending: deque[list[_Item]]
    results: list[ParsedTemplate | None]
    limits: ReadLimits
    start: Callable[[], _Worker]
    progress: Callable[[int], None]
    strikes: int = 0  # workers in a row that died before their first file
    finished_count: int = 0

    def until_done(self) -> None:
        """Hand out batches and wait for workers to send back or overstay, until all are done."""
        timeout = self.limits.parse_timeout_s
        # Wake at least this often to see whether a worker still moves from file to file.
        tick = min(1.0, timeout / 4)
        while True:
            self._hand_out()
            busy = [w for w in self.pool if w.remaining]
            if not busy:
                return
            ready = set(wait([w.from_child for w in busy], tick))
            now = time.monotonic()
            for worker in busy:
                if worker.from_child in ready:
                    self._collect(worker)
                    continue
                worker.moved(now)
                if now - worker.since >= timeout:
                    self._lose(
                        worker,
                        f"parsing did not finish: over the limit of {timeout:g} s "
                        "(raise it with --parse-timeout)",
                        kill=True,
                    )

    def _hand_out(self) -> None:
        """A batch to every idle worker, while batches are pending."""
        for index, worker in enumerate(self.pool):
            if not worker.remaining and self.pending:
                batch = self.pending.popleft()
                try:
                    worker.give(batch)
                except OSError:  # it died while idle: a new one takes the batch
                    worker.remaining.clear()
                    worker.stop(kill=True)
                    self.pool[index] = self.start()
                    self.pool[index].give(batch)

    def _collect(self, worker: _Worker) -> None:
        """A worker's batch results; the worker is lost if it died or stopped on a MemoryError."""
        try:
            done: list[tuple[int, ParsedTemplate | None]] = worker.from_child.recv()
        except (EOFError, OSError):
            self._lose(worker, "", kill=False)
            return
        finished = {position: parsed for position, parsed in done if parsed is not None}
        for position, parsed in finished.items():
            self.results[position] = parsed
        self.finished_count += len(finished)
        self.progress(self.finished_count)
        worker.remaining = deque(i for i in worker.remaining if i[0] not in finished)
        if worker.remaining:  # it stopped on a MemoryError
            self._lose(
                worker,
                "the parser ran out of memory on this file: over the limit of "
                f"{size_text(self.limits.max_parse_memory_bytes)} "
                "(raise it with --max-parse-memory)",
                kill=False,
            )

    def _lose(self, worker: _Worker, reason: str, kill: bool) -> None:
        """The file ``worker`` is on becomes a QR901; the rest of its batch (the files before it,
        whose rows died with the worker, and those after) goes to a new worker."""
        culprit = worker.current()
        code = worker.stop(kill=kill)
        if all(position != culprit for position, _f, _s in worker.remaining):
            self.strikes += 1  # it died before its first file: the worker is at fault, not a file
            if self.strikes > _MAX_IDLE_DEATHS:
                raise RuntimeError(f"parsing workers die before reading a file ({_died(code)})")
        else:
            self.strikes = 0
        rest = [item for item in worker.remaining if item[0] != culprit]
        for position, file, stack in worker.remaining:
            if position == culprit:
                self.results[position] = pipeline.unparseable(file, stack, reason or _died(code))
        worker.remaining.clear()
        if rest:
            self.pending.appendleft(rest)
        self.pool[self.pool.index(worker)] = self.start()


_WORKER_MAIN = (
    "import sys; from constructs_lib.audit.parse.isolation import _main; _main(sys.argv[1:])"
)


def _main(argv: Sequence[str]) -> None:
    """A worker started as its own interpreter, with READ_FD WRITE_FD SHARED_FD."""
    reader_fd, writer_fd, shared_fd = (int(a) for a in argv)
    progress = mmap.mmap(shared_fd, _PROGRESS.size)
    serve(Connection(reader_fd, writable=False), Connection(writer_fd, readable=False), progress)
