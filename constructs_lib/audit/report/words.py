"""How the reports and the command say a count: ``1 finding``, ``2 findings``, ``1,000 files``.

Every count a person reads goes through ``plural``, so no line says ``1 findings``."""

from __future__ import annotations

# Nouns whose plural is not the noun and an ``s``; "info" (a severity) stays as it is.
_IRREGULAR = {"info": "info", "is": "are", "has": "have"}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in its plural unless ``count`` is 1: ``1 queue``,
    ``0 queues``, ``12,000 files``. ``many`` is the plural form when it is not ``noun + "s"``
    (default: the irregular forms above, else ``noun + "s"``)."""
    return f"{count:,} {noun_for(count, noun, many)}"


def noun_for(count: int, noun: str, many: str | None = None) -> str:
    """The noun alone, as ``plural`` writes it (for a count written elsewhere)."""
    if count == 1:
        return noun
    return many or _IRREGULAR.get(noun, f"{noun}s")
