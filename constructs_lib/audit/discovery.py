"""Which files to audit: template files and folders (cloud assemblies or trees of templates).

The driver runs this; it lists paths and never reads a template's body, so a hostile file costs
nothing here. Reading is ``reading.py``'s job, parsing ``parsing.py``'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from constructs_lib.audit.dialects import cdk_assembly

_TEMPLATE_SUFFIXES = (".template.json", ".template.yaml", ".template.yml", ".template")
_DATA_SUFFIXES = (".json", ".yaml", ".yml")
# Files in a project or a cloud assembly that are never CloudFormation templates.
_NOT_TEMPLATES = {
    "manifest.json",
    "tree.json",
    "cdk.json",
    "cdk.context.json",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
}
_SKIPPED_DIRS = {"node_modules", ".git", ".venv", "__pycache__"}


# --- Finding the input files --------------------------------------------------------------------


def stack_name_for(path: str) -> str:
    """The stack name of a template outside a cloud assembly: its file name without suffixes."""
    name = os.path.basename(path)
    for suffix in (*_TEMPLATE_SUFFIXES, *_DATA_SUFFIXES):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def discover(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Every template under ``paths`` as ``(file, stack name)``, in a stable order.

    A folder with a ``manifest.json`` is read as a cloud assembly (stack names from the
    manifest, nested stage assemblies followed); other folders are walked for JSON and YAML.
    A path that does not exist is kept, so that it is reported (QR901) rather than dropped.
    """
    found: dict[str, str] = {}
    for path in paths:
        if os.path.isdir(path):
            for file, stack in _discover_dir(path):
                found.setdefault(file, stack)
        else:
            found.setdefault(path, stack_name_for(path))
    return sorted(found.items())


def _discover_dir(folder: str) -> list[tuple[str, str]]:
    if os.path.isfile(os.path.join(folder, cdk_assembly.MANIFEST)):
        stacks = cdk_assembly.stacks(folder)
        if stacks is not None:
            return stacks + [
                pair
                for sub in cdk_assembly.nested_assemblies(folder)
                for pair in _discover_dir(sub)
            ]
    result: list[tuple[str, str]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("asset."))
        for name in sorted(files):
            if name in _NOT_TEMPLATES or name.endswith(".assets.json"):
                continue
            if name.endswith(_TEMPLATE_SUFFIXES) or name.endswith(_DATA_SUFFIXES):
                path = os.path.join(root, name)
                result.append((path, stack_name_for(path)))
    return result
