"""A template file's bytes, read as a file from someone else's repository: never trusted."""

from __future__ import annotations


class ReadError(OSError):
    """A file the audit will not or cannot read; the message says why."""


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise ReadError(f"cannot read the file: {error.strerror}") from error
