"""Which names are templates: the rules a folder walk (``discovery``) and an object listing
(``objects``) share, so that ``s3://bucket/fleet/`` and a copy of it on disk list the same
templates under the same stack names."""

from __future__ import annotations

import os

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


def is_template_name(name: str) -> bool:
    """Whether a file of this base name, met while walking a folder (or listing a prefix in
    object storage), may be a template: JSON or YAML, and not one of a project's or a cloud
    assembly's own files."""
    if name in _NOT_TEMPLATES or name.endswith(".assets.json"):
        return False
    return name.endswith(_TEMPLATE_SUFFIXES) or name.endswith(_DATA_SUFFIXES)


def is_template_suffix(name: str) -> bool:
    """Whether a file's name says it is a template (``orders.template.json``), not only data."""
    return name.endswith(_TEMPLATE_SUFFIXES)


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
