"""The job's own code, packed for Spark executors that do not have ``constructs_lib`` installed.

A cluster's executors run the Python functions of the job (parsing, rules), so they must import
this package. Following Spark's Python packaging guidance, the job adds a zip of the package to
the session as a Python artifact (``SparkSession.addArtifacts(..., pyfile=True)``, which works on
classic sessions and on Spark Connect alike); Spark puts it on every executor's ``sys.path``.
Third-party packages the audit imports on executors (PyYAML, and aws-sam-translator and boto3
where SAM templates or ``s3://`` inputs are read) are the cluster's: installed on its image or
shipped as a packed environment with ``--archives`` (docs/audit/spark.md, "On a cluster").
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parents[3]
# Only what the executors run: the package's sources and the files they read at run time.
_SHIPPED_SUFFIXES = (".py", ".properties", ".typed")


def _sources() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE_DIR.rglob("*")
        if path.is_file() and path.suffix in _SHIPPED_SUFFIXES and "__pycache__" not in path.parts
    )


def package_zip(directory: str | None = None) -> str:
    """A zip of the package, named by its content: the same code gives the same file name, so
    adding it to a session twice ships it once, and a changed package is never mistaken for it."""
    sources = _sources()
    digest = hashlib.sha256()
    for path in sources:
        digest.update(str(path.relative_to(PACKAGE_DIR.parent)).encode())
        digest.update(path.read_bytes())
    target = (
        Path(directory or tempfile.gettempdir()) / f"constructs_lib-{digest.hexdigest()[:16]}.zip"
    )
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sources:
                archive.write(path, str(path.relative_to(PACKAGE_DIR.parent)))
        partial.replace(target)  # atomic: a concurrent run never ships half a zip
    return str(target)


def ship(spark: Any) -> None:
    """Make the package importable on the session's executors (classic or Connect)."""
    spark.addArtifacts(package_zip(), pyfile=True)
