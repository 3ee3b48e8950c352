"""A template file's bytes, read as a file from someone else's repository: never trusted.

Only regular files are read (symlinks are followed only to regular files; a loop is reported).
A FIFO, socket or device is reported and never opened: opening a FIFO blocks until a writer
comes, and reading a device such as /dev/zero never ends. The size cap is checked before reading
and enforced while reading, so a file that grows while it is read stops at the cap.
"""

from __future__ import annotations

import errno
import os
import stat

from constructs_lib.audit.safety import DEFAULT_LIMITS, LimitExceeded, ReadLimits, size_text

_CHUNK = 1 << 20


class ReadError(OSError):
    """A file the audit will not or cannot read; the message says why."""


class SkippedFile(ReadError):
    """A file the audit does not open or read to the end on purpose (not regular, over the cap)."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def over_cap(limits: ReadLimits, what: str) -> SkippedFile:
    """The SkippedFile for input over ``--max-file-size`` (a file here, an object in
    ``objects``): ``what`` says how much there was, the rest names the limit and the option."""
    over = LimitExceeded(
        what, size_text(limits.max_file_bytes), "--max-file-size"
    )  # one message shape for every limit
    return SkippedFile(str(over))


def read_bytes(path: str, limits: ReadLimits = DEFAULT_LIMITS) -> bytes:
    """The file's bytes, or ReadError (SkippedFile for what is refused on purpose)."""
    try:
        before = os.stat(path)  # follows symlinks; ELOOP for a loop
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ReadError("cannot read the file: a symbolic link loop") from error
        raise ReadError(f"cannot read the file: {error.strerror}") from error
    if not stat.S_ISREG(before.st_mode):
        raise SkippedFile(f"not read: {_kind(before.st_mode)}, not a regular file")
    if before.st_size > limits.max_file_bytes:
        raise over_cap(limits, f"not read: the file has {before.st_size:,} bytes")
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open does not block.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise ReadError(f"cannot read the file: {error.strerror}") from error
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise SkippedFile(f"not read: {_kind(opened.st_mode)}, not a regular file")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, limits.max_file_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limits.max_file_bytes:
                raise over_cap(limits, "not read to the end: the file grew past the size cap")
        return b"".join(chunks)
    except SkippedFile:
        raise
    except OSError as error:
        raise ReadError(f"cannot read the file: {error.strerror}") from error
    finally:
        os.close(fd)
