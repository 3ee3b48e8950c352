"""A deprecated name announced through a construct: the warning at synth, the Python warning, and
what both say (docs/releases.md, the deprecation policy)."""

from __future__ import annotations

import inspect
import warnings

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match
from constructs import Construct

from constructs_lib.synth import deprecations
from constructs_lib.synth.deprecations import Deprecation

RENAMED_LIMIT = Deprecation(
    key="gadget-limit",
    old="Gadget(limit=...)",
    new="Gadget(max_items=...)",
    since="1.1.0",
    removed_in="2.0.0",
)


class Gadget(Construct):
    """A construct with one renamed prop, as a construct of this library would announce it."""

    def __init__(
        self, scope: Construct, construct_id: str, *, max_items: int = 1, limit: int | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        if limit is not None:
            deprecations.announce(self, RENAMED_LIMIT)
            max_items = limit
        self.max_items = max_items


def test_the_old_name_warns_at_synth_with_a_stable_id(stack: cdk.Stack) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        Gadget(stack, "Gadget", limit=3)

    Annotations.from_stack(stack).has_warning(
        "/TestStack/Gadget",
        Match.string_like_regexp(
            r"^Gadget\(limit=\.\.\.\) is deprecated since 1\.1\.0 and will be removed in "
            r"2\.0\.0: use Gadget\(max_items=\.\.\.\) instead.*"
            r"\[ack: constructs_lib:deprecated-gadget-limit\]$"
        ),
    )


def test_the_new_name_does_not_warn(stack: cdk.Stack) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        Gadget(stack, "Gadget", max_items=3)

    Annotations.from_stack(stack).has_no_warning("*", Match.any_value())


def test_the_old_name_raises_a_deprecation_warning_at_the_callers_line(stack: cdk.Stack) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        call_line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        gadget = Gadget(stack, "Gadget", limit=3)

    assert gadget.max_items == 3
    [warning] = caught.list
    assert str(warning.message) == RENAMED_LIMIT.message
    assert "removed in 2.0.0" in str(warning.message)
    assert (warning.filename, warning.lineno) == (__file__, call_line)


def test_an_acknowledged_deprecation_warns_no_more_at_synth(stack: cdk.Stack) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        gadget = Gadget(stack, "Gadget", limit=3)
    cdk.Annotations.of(gadget).acknowledge_warning(
        RENAMED_LIMIT.warning_id, "moving to max_items in the next sprint"
    )

    Annotations.from_stack(stack).has_no_warning("*", Match.any_value())


@pytest.mark.parametrize(
    ("since", "removed_in", "expected"),
    [
        ("1.1.0", "1.2.0", "removed only in a major release"),
        ("1.1.0", "1.0.0", "removed only in a major release"),
        ("1.1.0", "2.1.0", "removed only in a major release"),
        ("2.0.0", "2.0.0", "use '3.0.0' or later"),
        ("1.1", "2.0.0", "since='1.1': a release is MAJOR.MINOR.PATCH"),
        ("1.1.0", "v2.0.0", "removed_in='v2.0.0': a release is MAJOR.MINOR.PATCH"),
    ],
)
def test_fails_a_removal_outside_a_later_major_release(
    since: str, removed_in: str, expected: str
) -> None:
    with pytest.raises(ValueError, match=expected):
        Deprecation(key="gadget-limit", old="a", new="b", since=since, removed_in=removed_in)


@pytest.mark.parametrize("key", ["Gadget-Limit", "gadget_limit", "-gadget", "gadget--limit", ""])
def test_fails_a_key_that_is_not_a_lowercase_hyphenated_id(key: str) -> None:
    with pytest.raises(ValueError, match=f"key={key!r}"):
        Deprecation(key=key, old="a", new="b", since="1.1.0", removed_in="2.0.0")
