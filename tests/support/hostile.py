"""Hostile and broken files, built in a test's folder: what one team's repository may hold.

Each builder writes one file (or FIFO, or symlink) and returns its name. ``HOSTILE`` maps every
name to a piece of the reason its QR901 must give. Nothing here opens a FIFO or a device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def deep_flow_yaml(folder: Path, name: str = "deep-flow.yaml", size: int = 100_000) -> str:
    """``Resources: [[[[...]]]]``, 100 KB: segfaults PyYAML's C composer when not limited."""
    half = size // 2
    (folder / name).write_text("Resources: " + "[" * half + "]" * half + "\n")
    return name


def alias_bomb(folder: Path, name: str = "alias-bomb.yaml") -> str:
    """Billion laughs: nine levels of nine aliases (9^9 strings), under 1 KB, as a queue's tags,
    so that anything walking the properties expands it."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(8):
        this, below = chr(98 + level), chr(97 + level)
        lines.append(f"{this}: &{this} [" + ",".join([f"*{below}"] * 9) + "]")
    lines.append("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Tags: *i")
    text = "\n".join(lines) + "\n"
    assert len(text) < 1024
    (folder / name).write_text(text)
    return name


def merge_key_bomb(folder: Path, name: str = "merge-bomb.yaml") -> str:
    """Merge keys (<<) merging the level below nine times, nine levels deep."""
    lines = ["m0: &m0 {" + ", ".join(f"k{i}: {i}" for i in range(9)) + "}"]
    for level in range(1, 10):
        lines.append(f"m{level}: &m{level} {{<<: [" + ", ".join([f"*m{level - 1}"] * 9) + "]}")
    lines.append("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Tags: *m9")
    (folder / name).write_text("\n".join(lines) + "\n")
    return name


def dev_zero(folder: Path, name: str = "zero.json") -> str:
    os.symlink("/dev/zero", folder / name)
    return name


def fifo(folder: Path, name: str = "pipe.yaml") -> str:
    os.mkfifo(folder / name)
    return name


def deep_json(folder: Path, name: str = "deep.template.json", depth: int = 100_000) -> str:
    (folder / name).write_text('{"Resources": {"Q": ' + "[" * depth + "]" * depth + "}}")
    return name


def huge_numbers(folder: Path) -> list[str]:
    """Integers of 100,000 digits, in JSON and in YAML (Python refuses over 4,300 digits)."""
    digits = "9" * 100_000
    queue = '{"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": ' + digits + "}}"
    (folder / "huge-number.template.json").write_text('{"Resources": {"Q": ' + queue + "}}")
    (folder / "huge-number.yaml").write_text(
        f"Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n"
        f"      VisibilityTimeout: {digits}\n"
    )
    return ["huge-number.template.json", "huge-number.yaml"]


def invalid_utf8(folder: Path, name: str = "latin1.template.json") -> str:
    (folder / name).write_bytes(b'{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "x": "\xe9"}}}')
    return name


def python_tag(folder: Path, name: str = "python-tag.yaml") -> str:
    """A YAML tag that would run a command under an unsafe loader: refused, never run."""
    marker = folder.parent / "python-tag-ran"
    (folder / name).write_text(
        f'Resources:\n  Q: !!python/object/apply:os.system ["touch {marker}"]\n'
    )
    return name


def symlink_loop(folder: Path) -> str:
    os.symlink("loop-b.yaml", folder / "loop-a.yaml")
    os.symlink("loop-a.yaml", folder / "loop-b.yaml")
    return "loop-a.yaml"


def unreadable(folder: Path, name: str = "unreadable.json") -> str:
    """A regular file that even root cannot read: /proc/self/mem at offset 0 gives EIO.

    (Tests run as root, for whom chmod 000 changes nothing.)"""
    os.symlink("/proc/self/mem", folder / name)
    return name


def stat_lies(folder: Path, name: str = "grows.json") -> str:
    """A regular file whose size is 0 when checked and larger when read (/proc/self/maps)."""
    os.symlink("/proc/self/maps", folder / name)
    return name


@contextmanager
def growing_file(folder: Path, name: str = "growing.template.json") -> Iterator[str]:
    """A regular file that another process keeps appending to (about 800 KB/s) while the audit
    runs; the writer is killed on exit."""
    path = folder / name
    path.write_text('{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"x": "')
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "with open(sys.argv[1], 'a') as f:\n"
            "    while True:\n"
            "        f.write('x' * 4096); f.flush(); time.sleep(0.005)\n",
            str(path),
        ]
    )
    try:
        yield name
    finally:
        writer.kill()
        writer.wait(timeout=30)


def wait_larger(path: Path, size: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while path.stat().st_size <= size:
        assert time.monotonic() < deadline, f"{path} did not grow past {size} bytes"
        time.sleep(0.05)


def bom_template(folder: Path, template: dict[str, object], name: str) -> str:
    """A valid template behind a UTF-8 byte order mark: read like any other."""
    (folder / name).write_bytes(b"\xef\xbb\xbf" + json.dumps(template).encode())
    return name
