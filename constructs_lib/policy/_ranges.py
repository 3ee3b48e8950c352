"""The range check the validations share: a value outside its bounds is one ``Problem`` naming
them and the fix; an unknown value (``None``) is not judged."""

from __future__ import annotations

from constructs_lib.errors import Problem


def out_of_range(
    prop: str, value: int | float | None, low: int, high: int, unit: str, fix: str
) -> list[Problem]:
    if value is None or low <= value <= high:
        return []
    return [Problem(prop, value, f"must be between {low} and {high}{unit}", fix)]
