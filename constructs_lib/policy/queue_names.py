"""Queue names: the dead-letter queue's name from the source's, and a name checked with the
suffixes the library adds to it (SQS's characters and length)."""

from __future__ import annotations

from constructs_lib import limits
from constructs_lib.errors import Problem

DEAD_LETTER_SUFFIX = "-dlq"


def dead_letter_queue_name(source_name: str, fifo: bool) -> str:
    """``orders`` -> ``orders-dlq``; ``orders.fifo`` -> ``orders-dlq.fifo``."""
    return (
        f"{strip_fifo_suffix(source_name)}{DEAD_LETTER_SUFFIX}{limits.FIFO_SUFFIX if fifo else ''}"
    )


def strip_fifo_suffix(name: str) -> str:
    return name.removesuffix(limits.FIFO_SUFFIX)


def queue_name_problems(
    prop: str, name: str | None, fifo: bool, dead_letter: bool
) -> list[Problem]:
    """A name for the source queue, checked with the suffixes the library will add to it."""
    if name is None:
        return []
    base = strip_fifo_suffix(name)
    problems: list[Problem] = []
    if not limits.QUEUE_NAME_PATTERN.match(base):
        problems.append(
            Problem(
                prop,
                name,
                "may contain only letters, digits, hyphens and underscores (plus '.fifo' at the end of a FIFO queue)",
                "remove the other characters",
            )
        )
    full_length = (
        len(base)
        + (len(DEAD_LETTER_SUFFIX) if dead_letter else 0)
        + (len(limits.FIFO_SUFFIX) if fifo else 0)
    )
    if full_length > limits.QUEUE_NAME_MAX_LENGTH:
        counted = "with the '-dlq' suffix of its dead-letter queue" if dead_letter else "as given"
        if fifo:
            counted += " and '.fifo'"
        allowed = limits.QUEUE_NAME_MAX_LENGTH - (full_length - len(base))
        problems.append(
            Problem(
                prop,
                name,
                f"is {full_length} characters {counted}, above SQS's limit of {limits.QUEUE_NAME_MAX_LENGTH}",
                f"shorten the name to at most {allowed} characters before the suffixes",
            )
        )
    return problems
