"""Which files to audit: template files and folders (cloud assemblies or trees of templates).

The driver runs this; it lists paths and never reads a template's body, so a hostile file costs
nothing here. Reading is ``reading.py``'s job, parsing ``parsing.py``'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from constructs_lib.audit import objects
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


def is_template_name(name: str) -> bool:
    """Whether a file of this base name, met while walking a folder (or listing a prefix in
    object storage), may be a template: JSON or YAML, and not one of a project's or a cloud
    assembly's own files."""
    if name in _NOT_TEMPLATES or name.endswith(".assets.json"):
        return False
    return name.endswith(_TEMPLATE_SUFFIXES) or name.endswith(_DATA_SUFFIXES)


def is_skipped_folder(name: str) -> bool:
    """Whether a folder of this name is never walked: dependencies, tool state, and a cloud
    assembly's asset folders (Lambda code, whose JSON files are not templates)."""
    return name in _SKIPPED_DIRS or name.startswith("asset.")


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
    An ``s3://`` URL is one object or a prefix listed like a folder (``objects.list_templates``;
    ``objects.ObjectStoreError`` when it cannot be listed).
    """
    found: dict[str, str] = {}
    for path in paths:
        if objects.is_object_url(path):
            for url, stack in objects.list_templates(path):
                found.setdefault(url, stack)
        elif os.path.isdir(path):
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
        dirs[:] = sorted(d for d in dirs if not is_skipped_folder(d))
        for name in sorted(files):
            if is_template_name(name):
                path = os.path.join(root, name)
                result.append((path, stack_name_for(path)))
    return result
