"""The audit's optional modules, and the one error that names the extra to install.

The package installs with aws-cdk-lib and constructs only; the audit's parsers and engines come
with extras (pyproject.toml):

- ``audit``: what the local engine needs: PyYAML (YAML templates and suppressions files),
  aws-sam-translator (SAM templates) and boto3 (``s3://`` inputs; the translator requires it too);
- ``spark``: the ``audit`` extra and what the Spark engine adds: PySpark with its Spark Connect
  client, pandas and pyarrow (Arrow batches, and Parquet for ``--output-dir``).

Every place the audit imports one of these goes through ``require``, so a missing module is one
``MissingExtra`` that names the module, what needed it and the command that installs it; the
command reports it as a usage error before any file is read.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

DISTRIBUTION = "constructs-lib"
AUDIT = "audit"
SPARK = "spark"


@dataclass(frozen=True)
class OptionalModule:
    """An importable module, the distribution that provides it and the extra that installs it."""

    module: str
    distribution: str
    extra: str


MODULES: dict[str, OptionalModule] = {
    "yaml": OptionalModule("yaml", "PyYAML", AUDIT),
    "samtranslator": OptionalModule("samtranslator", "aws-sam-translator", AUDIT),
    "boto3": OptionalModule("boto3", "boto3", AUDIT),
    "botocore": OptionalModule("botocore", "boto3", AUDIT),
    "pyspark": OptionalModule("pyspark", "pyspark", SPARK),
    "pyarrow": OptionalModule("pyarrow", "pyarrow", SPARK),
    "pandas": OptionalModule("pandas", "pandas", SPARK),
}


def install_command(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class MissingExtra(ImportError):
    """An optional module the run needs is not installed."""

    def __init__(self, module: str, purpose: str) -> None:
        entry = MODULES[_top(module)]
        self.module = module
        self.extra = entry.extra
        super().__init__(
            f"{purpose} needs {entry.distribution} (module {entry.module}), which is not "
            f"installed: {install_command(entry.extra)}",
            name=module,
        )


def _top(module: str) -> str:
    return module.partition(".")[0]


def require(module: str, purpose: str) -> ModuleType:
    """``import module``, or ``MissingExtra`` naming ``purpose`` (what needs it) and the extra.

    ``module`` may be a submodule (``pyarrow.parquet``); its top-level package must be one of
    ``MODULES``."""
    if _top(module) not in MODULES:
        raise ValueError(f"{module} is not one of the audit's optional modules: {sorted(MODULES)}")
    try:
        return importlib.import_module(module)
    except ImportError as error:
        # Only the module itself missing is an install problem: an ImportError raised inside
        # an installed module is a broken installation, reported as it is.
        if error.name is not None and _top(error.name) != _top(module):
            raise
        raise MissingExtra(module, purpose) from error


def check(module: str, purpose: str) -> None:
    """``MissingExtra`` unless ``module`` can be imported, without importing it (cheap: the
    command checks what a run will need before it reads any file)."""
    if _top(module) not in MODULES:
        raise ValueError(f"{module} is not one of the audit's optional modules: {sorted(MODULES)}")
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or hidden (None in sys.modules)
        found = False
    if not found:
        raise MissingExtra(module, purpose)
