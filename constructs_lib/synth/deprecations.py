"""Announcing a deprecated public name: a warning at synth and a Python ``DeprecationWarning``.

The policy (docs/releases.md): a public name, a prop, or a logical id the constructs generate is
announced at least one minor release before the major release that removes or changes it. While
it still works, every use of it says so twice: a warning annotation on the construct that was
given it (``cdk synth`` prints it, with a stable id that ``Annotations.of(scope)
.acknowledge_warning(id)`` can acknowledge), and a ``DeprecationWarning`` pointing at the
caller's line (shown by ``python -W error::DeprecationWarning``, by pytest, and for code run as
``__main__``). Both name the old thing, the new thing and the release that removes the old.

A construct announces one with ``announce(self, SOME_DEPRECATION)`` where it reads the old
name; the deprecations themselves are module constants of the construct that owns the name.
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import jsii
from aws_cdk import Annotations
from constructs import IConstruct

WARNING_ID_PREFIX: Final = "constructs_lib:deprecated-"
"""The annotation id of a deprecation is this prefix and its ``key``."""

# Where a frame of this package or of jsii's runtime comes from (``_user_frame``).
_PACKAGE_DIR: Final = str(Path(__file__).parent.parent) + "/"
_JSII_DIR: Final = str(Path(jsii.__file__).parent) + "/"
_KEY = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def _release(field: str, value: str) -> tuple[int, int, int]:
    match = _VERSION.match(value)
    if match is None:
        raise ValueError(
            f"Deprecation {field}={value!r}: a release is MAJOR.MINOR.PATCH (e.g. '2.0.0'); "
            f"give the release number as the CHANGELOG names it."
        )
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


@dataclass(frozen=True)
class Deprecation:
    """One deprecated public name and what replaces it.

    :param key: the stable part of the annotation id (``constructs_lib:deprecated-<key>``):
        lowercase words joined by hyphens, e.g. ``"queue-alarm-actions"``.
    :param old: the deprecated name as a user writes it, e.g. ``"ResilientQueue(alarm_actions=...)"``.
    :param new: what to write instead, e.g. ``"critical_actions and warning_actions"``.
    :param since: the minor release that announced it, e.g. ``"1.1.0"``.
    :param removed_in: the major release that removes it, e.g. ``"2.0.0"``: a later major than
        ``since`` (removal only in a major release, announced at least one minor before).
    """

    key: str
    old: str
    new: str
    since: str
    removed_in: str

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(
                f"Deprecation key={self.key!r}: the annotation id's suffix is lowercase letters "
                f"and digits joined by single hyphens; write it like 'queue-alarm-actions'."
            )
        since = _release("since", self.since)
        removed = _release("removed_in", self.removed_in)
        if removed[1:] != (0, 0) or removed[0] <= since[0]:
            raise ValueError(
                f"Deprecation {self.key}: removed_in={self.removed_in!r} with since="
                f"{self.since!r}; a deprecated name is removed only in a major release after "
                f"the one that announced it: use '{since[0] + 1}.0.0' or later."
            )

    @property
    def warning_id(self) -> str:
        """The annotation's id, stable across releases: acknowledge it by this id."""
        return f"{WARNING_ID_PREFIX}{self.key}"

    @property
    def message(self) -> str:
        """What both warnings say: the old name, the new one and the release that removes it."""
        return (
            f"{self.old} is deprecated since {self.since} and will be removed in "
            f"{self.removed_in}: use {self.new} instead (docs/releases.md, Upgrading)."
        )


def announce(scope: IConstruct, deprecation: Deprecation) -> None:
    """Say at synth (a warning annotation on ``scope``) and now (a ``DeprecationWarning``) that
    ``deprecation``'s old name was used.

    :param scope: the construct that was given the deprecated name; the annotation names its path.
    :param deprecation: what was used and what replaces it.
    """
    Annotations.of(scope).add_warning_v2(deprecation.warning_id, deprecation.message)
    warnings.warn(deprecation.message, DeprecationWarning, stacklevel=_user_frame(scope))


def _user_frame(scope: IConstruct) -> int:
    """The ``stacklevel`` of the line that used the old name: past ``scope``'s own methods, this
    package and jsii (which calls a construct's ``__init__`` from its metaclass, so no fixed
    level is right for every construct)."""
    skipped = (_PACKAGE_DIR, _JSII_DIR)
    frame = sys._getframe(2)  # the caller of announce
    level = 2  # announce is 1
    while frame.f_back is not None and (
        frame.f_locals.get("self") is scope or frame.f_code.co_filename.startswith(skipped)
    ):
        frame = frame.f_back
        level += 1
    return level
