"""What a new user meets first: a wrong path and a missing optional module are usage errors
(exit 2) with one line that names the path or the extra to install; never a finding per file,
never a traceback.

Missing modules are simulated in a child process by ``sys.modules[name] = None``, which makes
``import name`` raise ``ImportError`` exactly as an absent package does (the Python language
reference, "The module cache"): an honest stand-in for an environment without the package, in
which the command runs unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from constructs_lib.audit import cli, optional
from tests.audit.conftest import healthy, write

RUN_HIDING = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from constructs_lib.audit import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def run_without(modules: list[str], args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN_HIDING, ",".join(modules), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def error_line(stderr: str) -> str:
    """The one line argparse prints after the usage text for a usage error."""
    lines = [line for line in stderr.splitlines() if line.startswith("queue-audit: error: ")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture
def yaml_tree(tmp_path: Path) -> Path:
    write(tmp_path, "stacks/a.yaml", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n")
    write(tmp_path, "stacks/b.yaml", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n")
    return tmp_path


# --- A path that does not exist ------------------------------------------------------------


def test_fails_missing_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nosuchdir"
    with pytest.raises(SystemExit) as raised:
        cli.main([str(missing), "--engine", "local"])
    assert raised.value.code == 2
    captured = capsys.readouterr()
    assert f"queue-audit: error: no such file or folder: {missing};" in captured.err
    assert captured.out == ""  # no report, so no QR901


def test_fails_missing_path_among_good_ones_names_only_the_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "good.template.json", healthy("good"))
    missing = tmp_path / "typo.template.json"
    with pytest.raises(SystemExit) as raised:
        cli.main([str(good), str(missing), "--engine", "local"])
    assert raised.value.code == 2
    line = error_line(capsys.readouterr().err)
    assert str(missing) in line
    assert str(good) not in line


def test_dangling_symlink_is_still_audited_as_a_file_that_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a path that exists as a link: a file the run reports (QR901), not a typo
    link = tmp_path / "gone.template.json"
    link.symlink_to(tmp_path / "deleted.template.json")
    assert cli.main([str(link), "--engine", "local", "--format", "json"]) == 1
    assert '"QR901"' in capsys.readouterr().out


# --- A missing optional module ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("hidden", "extra"),
    [(["yaml"], "audit"), (["samtranslator"], "audit"), (["boto3"], "audit")],
    ids=["pyyaml", "aws-sam-translator", "boto3"],
)
def test_fails_missing_audit_module_is_one_line_naming_the_extra(
    yaml_tree: Path, hidden: list[str], extra: str
) -> None:
    completed = run_without(hidden, [str(yaml_tree), "--engine", "local"])
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    line = error_line(completed.stderr)
    assert line.endswith(f"not installed: pip install 'constructs-lib[{extra}]'")
    assert f"module {hidden[0]}" in line
    assert completed.stdout == ""  # no report: no QR901 per file


def test_fails_yaml_suppressions_file_without_pyyaml(yaml_tree: Path) -> None:
    # Today's crash: the suppressions file was parsed before anything checked for PyYAML.
    suppressions = write(yaml_tree, "accepted.yaml", "suppressions: []\n")
    completed = run_without(
        ["yaml"], [str(yaml_tree / "stacks"), "--suppressions", str(suppressions)]
    )
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    assert "pip install 'constructs-lib[audit]'" in error_line(completed.stderr)


@pytest.mark.parametrize("hidden", ["pyspark", "pyarrow", "pandas"])
def test_fails_spark_engine_without_spark_modules_names_the_spark_extra(
    yaml_tree: Path, hidden: str
) -> None:
    completed = run_without([hidden], [str(yaml_tree), "--engine", "spark"])
    assert completed.returncode == 2, completed.stderr
    line = error_line(completed.stderr)
    assert "the Spark engine" in line
    assert line.endswith("pip install 'constructs-lib[spark]'")


def test_fails_output_dir_without_pyarrow_before_the_run(yaml_tree: Path, tmp_path: Path) -> None:
    completed = run_without(
        ["pyarrow"],
        [str(yaml_tree), "--engine", "local", "--output-dir", str(tmp_path / "out")],
    )
    assert completed.returncode == 2, completed.stderr
    line = error_line(completed.stderr)
    assert "--output-dir (Parquet) needs pyarrow" in line
    assert not (tmp_path / "out").exists()


def test_local_engine_needs_no_spark_module(yaml_tree: Path) -> None:
    # GIVEN only the audit extra: no pyspark, pyarrow or pandas
    completed = run_without(
        ["pyspark", "pyarrow", "pandas"], [str(yaml_tree), "--engine", "local", "--quiet"]
    )
    # THEN the local engine runs (the queues have findings: exit 1) with nothing on stderr
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr == ""
    assert "QR001" in completed.stdout


def test_require_names_the_purpose_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # hidden as a missing install would leave it, even when an earlier test imported it
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(optional.MissingExtra) as raised:
        optional.require("pyarrow.parquet", "writing Parquet")
    assert str(raised.value) == (
        "writing Parquet needs pyarrow (module pyarrow), which is not installed: "
        "pip install 'constructs-lib[spark]'"
    )
    assert raised.value.extra == "spark"


def test_require_refuses_a_module_that_is_not_optional() -> None:
    with pytest.raises(ValueError, match="json is not one of the audit's optional modules"):
        optional.require("json", "anything")
