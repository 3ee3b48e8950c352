"""The limits a hostile or broken file meets, each with its default, its reason and its option.

A fleet audit reads files from many teams' repositories: any one of them may be huge, deeply
nested, an alias bomb, a named pipe or a device. Every limit below turns such a file into one
QR901 finding that names the limit and the ``queue-audit`` option that raises it; the rest of
the fleet is still judged. ``docs/audit/index.md`` ("Limits and safety") lists them for users.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# CloudFormation accepts at most 1 MB from S3 (51,200 bytes inline); cdk.out templates of a few
# MB exist before CDK splits them into nested stacks. 16 MiB leaves room for any real template.
MAX_FILE_BYTES: Final = 16 * 2**20
# Real templates nest about 20 levels deep (Resources > id > Properties > ... > Fn::If > Fn::Join);
# PyYAML's C composer overflows the C stack at some thousands of levels and Python's json module
# stops at the recursion limit (1,000): 100 is far from both and far above any template.
MAX_DEPTH: Final = 100
# YAML aliases and merge keys (<<) repeat nodes: this bounds the nodes of the document once every
# alias is expanded. A 1 MB template (CloudFormation's largest) has at most ~500,000 nodes (two
# bytes each); 4x that. About 100-200 MB of Python objects at the worst.
MAX_YAML_NODES: Final = 2_000_000
# Parsing one real template takes milliseconds and a 16 MiB one a few seconds; 30 s stops a file
# that hangs the parser without cutting a slow machine short.
PARSE_TIMEOUT_S: Final = 30.0
# Address space a parsing worker may add to what it started with; a parser that allocates beyond
# this fails with MemoryError in the worker (one QR901), not in the machine's OOM killer.
MAX_PARSE_MEMORY_BYTES: Final = 2 * 2**30
# Files handed to a parsing worker at a time: large enough that the exchange costs little per
# file, small enough that both workers stay busy to the end.
BATCH_FILES: Final = 64


@dataclass(frozen=True)
class ReadLimits:
    """What one file may cost. Options: ``--max-file-size``, ``--max-depth``,
    ``--max-yaml-nodes``, ``--parse-timeout``, ``--max-parse-memory``."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_depth: int = MAX_DEPTH
    max_yaml_nodes: int = MAX_YAML_NODES
    parse_timeout_s: float = PARSE_TIMEOUT_S
    max_parse_memory_bytes: int = MAX_PARSE_MEMORY_BYTES


DEFAULT_LIMITS: Final = ReadLimits()


class LimitExceeded(ValueError):
    """A file over one of the limits; the message names the limit and the option that raises it."""

    def __init__(self, what: str, limit: str, option: str) -> None:
        super().__init__(f"{what}: over the limit of {limit} (raise it with {option})")


def size_text(count: int) -> str:
    """Bytes as a person reads them: 16 MiB, 300 KiB, 12 bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count:,} bytes"


def parse_size(text: str) -> int:
    """``--max-file-size`` and ``--max-parse-memory`` values: bytes, or a K/M/G (binary) suffix."""
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(value[-1:], 1)
    number = value[:-1] if scale != 1 else value
    try:
        result = int(float(number) * scale)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (bytes, or a number with K, M or G)") from None
    if result <= 0:
        raise ValueError(f"not a size: {text!r} (must be positive)")
    return result
