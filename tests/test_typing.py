"""The package is typed (PEP 561): a user's mypy sees its annotations, and a call with a wrong
type fails type-checking before the app ever runs.

The calls themselves are in ``tests/typing_checks/user_app.py``, which ``make typecheck`` checks
with mypy --strict (one run, beside the package's own: analysing aws-cdk-lib's annotations takes
most of a minute, so a second mypy run here would pay it again). Each wrong call there carries
``type: ignore[arg-type]``; strict mode reports an ignore that is no longer needed, so the check
fails once the package accepts a wrong type. The tests here hold the wiring of that check.
"""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO_ROOT

USER_APP = REPO_ROOT / "tests" / "typing_checks" / "user_app.py"


def test_the_package_ships_the_pep_561_marker() -> None:
    assert (REPO_ROOT / "constructs_lib" / "py.typed").is_file()


def test_make_typecheck_checks_the_users_calls_strictly() -> None:
    mypy = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["strict"] is True  # strict implies warn_unused_ignores
    assert "tests/typing_checks" in mypy["files"]
    assert not any("typing_checks" in str(o.get("module")) for o in mypy.get("overrides", []))
    assert re.search(r"^typecheck:.*\n\tmypy$", (REPO_ROOT / "Makefile").read_text(), re.M)


def test_each_wrong_call_is_one_the_package_must_reject() -> None:
    text = USER_APP.read_text()
    wrong = re.findall(r"^(.*)  # type: ignore\[(\S+)\]$", text, re.M)
    assert len(wrong) == 3
    assert {code for _, code in wrong} == {"arg-type"}
    ignores = [line for line in text.splitlines() if "# type: ignore" in line]
    assert len(ignores) == len(wrong)  # no blanket ignore hides anything else
