"""CDK cloud assemblies (``cdk.out``): the stacks a manifest lists, with their deployed names.

Nested stacks are assets of their parent, not artifacts of the manifest: their templates
(``*.nested.template.json``) are found beside the stacks, and the parent names them in its
``AWS::CloudFormation::Stack`` resource's ``aws:asset:path`` metadata.
"""

from __future__ import annotations

import json
import os

MANIFEST = "manifest.json"
NESTED_SUFFIX = ".nested.template.json"
ASSET_PATH_METADATA = "aws:asset:path"
# A manifest lists stacks, not templates; a real one is a few KB, this bounds a hostile one.
MANIFEST_MAX_BYTES = 16 * 1024 * 1024


def _manifest(folder: str) -> dict[str, object] | None:
    path = os.path.join(folder, MANIFEST)
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MANIFEST_MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _artifacts(folder: str) -> list[tuple[str, dict[str, object]]] | None:
    manifest = _manifest(folder)
    artifacts = manifest.get("artifacts") if manifest is not None else None
    if not isinstance(artifacts, dict):
        return None
    return sorted((str(k), v) for k, v in artifacts.items() if isinstance(v, dict))


def stacks(folder: str) -> list[tuple[str, str]] | None:
    """``(template file, stack name)`` for each stack and nested stack; None if no manifest."""
    artifacts = _artifacts(folder)
    if artifacts is None:
        return None  # not a readable manifest: the caller walks the folder instead
    result: list[tuple[str, str]] = []
    for artifact_id, artifact in artifacts:
        properties = artifact.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        template = properties.get("templateFile")
        if artifact.get("type") == "aws:cloudformation:stack" and isinstance(template, str):
            stack = properties.get("stackName") or artifact.get("displayName") or artifact_id
            result.append((os.path.join(folder, template), str(stack)))
    for name in sorted(os.listdir(folder)):
        if name.endswith(NESTED_SUFFIX):
            result.append((os.path.join(folder, name), name.removesuffix(NESTED_SUFFIX)))
    return result


def nested_assemblies(folder: str) -> list[str]:
    """The folders of nested cloud assemblies (CDK stages) this assembly's manifest lists."""
    result: list[str] = []
    for _artifact_id, artifact in _artifacts(folder) or []:
        properties = artifact.get("properties")
        directory = properties.get("directoryName") if isinstance(properties, dict) else None
        if artifact.get("type") == "cdk:cloud-assembly" and isinstance(directory, str):
            result.append(os.path.join(folder, directory))
    return result
