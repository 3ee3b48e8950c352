"""Which files to audit: template files and folders (cloud assemblies or trees of templates).

The driver runs this; it lists paths and never reads a template's body, so a hostile file costs
nothing here. Reading is ``reading``'s job (``objects``'s for ``s3://``), parsing
``parse.documents``'s; which names are templates is ``template_names``'s, shared with ``objects``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from constructs_lib.audit.inputs import objects, template_names
from constructs_lib.audit.parse.dialects import cdk_assembly


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
            found.setdefault(path, template_names.stack_name_for(path))
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
        dirs[:] = sorted(d for d in dirs if not template_names.is_skipped_folder(d))
        for name in sorted(files):
            if template_names.is_template_name(name):
                path = os.path.join(root, name)
                result.append((path, template_names.stack_name_for(path)))
    return result
