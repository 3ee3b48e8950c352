"""``Fn::Transform: {Name: AWS::Include, Parameters: {Location: ...}}`` in a SAM template, read as
the SAM CLI reads it before the transform.

An include of a local file is replaced by the file's content when that file is readable in the
template's folder or below it (within the same size, depth and YAML limits as templates; never a
file outside that folder, through ``..`` or a link). An included file is not searched for
includes of its own (so no include can repeat itself), and at most ``MAX_INCLUDES`` files are
read per template: a template cannot make its expansion grow without bound.

An include that is not read (a missing file, as in a templates folder copied without its
``api.yaml``; an S3 location, read by CloudFormation at deployment; a path outside the folder)
costs the property that holds it, never the template: it stays as the translator accepts it,
or becomes a placeholder where the translator would reject the whole template for it, and each
is named in ``Included.unread`` for a QR900 note:

- a ``DefinitionBody`` of an API becomes an empty OpenAPI document (the translator edits the
  body for ``Cors``, ``Auth``, ``Models`` and each function's ``Api`` event, and rejects an
  include it cannot edit);
- an include merged into a mapping with other keys (``Properties: {Timeout: 3, Fn::Transform:
  ...}``) is dropped, the other keys kept; an include that is a whole ``Properties`` or a whole
  section of ``Globals`` becomes an empty mapping: the translator validates their keys;
- anywhere else (an environment variable, a state machine's ``Definition``) it stays as written.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from constructs_lib.audit import optional
from constructs_lib.audit.inputs import reading
from constructs_lib.audit.parse import documents
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

INCLUDE = "AWS::Include"
MAX_INCLUDES = 100  # distinct local files one template may include
# What an API's DefinitionBody becomes when its include is not read: the smallest document the
# translator edits for both REST (Swagger or OpenAPI 3) and HTTP APIs (OpenAPI 3 only).
PLACEHOLDER_DEFINITION_BODY: dict[str, Any] = {
    "openapi": "3.0.1",
    "info": {"title": "placeholder for an AWS::Include not read", "version": "1"},
    "paths": {},
}


@dataclass(frozen=True)
class UnreadInclude:
    """One include that was not read: its ``Location``, where it sits (``Api.Properties.
    DefinitionBody``), the resource it belongs to ("" outside ``Resources``) and why."""

    location: str
    where: str
    resource: str
    reason: str

    def message(self) -> str:
        return (
            f"AWS::Include of {self.location} not read ({self.reason}): {self.where} is judged "
            "without what it holds"
        )


@dataclass(frozen=True)
class Included:
    """The template with its readable includes replaced, and those it could not read."""

    document: dict[str, Any]
    unread: list[UnreadInclude] = field(default_factory=list)


_UNREAD = object()


class _Reader:
    """The files one template includes, each read once."""

    def __init__(self, template_file: str | None, limits: ReadLimits) -> None:
        self.folder = (
            os.path.dirname(os.path.realpath(template_file)) if template_file is not None else None
        )
        self.limits = limits
        self.cache: dict[str, tuple[Any, str]] = {}

    def content(self, location: Any) -> tuple[Any, str]:
        """(the file's document, "") or (``_UNREAD``, why not)."""
        if not isinstance(location, str):
            return _UNREAD, "its Location is not a file name"
        if "://" in location:
            return _UNREAD, "a location CloudFormation reads at deployment"
        if self.folder is None:
            return _UNREAD, "the template is read from object storage, its local files are not"
        if os.path.isabs(location):
            return _UNREAD, "an absolute path: only files in the template's folder are read"
        path = os.path.realpath(os.path.join(self.folder, location))
        if os.path.commonpath([self.folder, path]) != self.folder:
            # A template from someone else's repository names no file outside its own folder
            # (``../../.aws/credentials``, or a link pointing out).
            return _UNREAD, "outside the template's folder"
        if path not in self.cache:
            if len(self.cache) >= MAX_INCLUDES:
                return _UNREAD, f"more than {MAX_INCLUDES} files included by one template"
            try:
                data = reading.read_bytes(path, self.limits)
                self.cache[path] = (documents.load_data(path, data, self.limits), "")
            except (reading.ReadError, documents.TemplateError, optional.MissingExtra) as error:
                self.cache[path] = (_UNREAD, str(error))
        return self.cache[path]


def prepare_includes(
    document: Mapping[str, Any], template_file: str | None, limits: ReadLimits = DEFAULT_LIMITS
) -> Included:
    """``document`` with its ``AWS::Include`` transforms of readable local files replaced by the
    files' content, the others left or replaced by placeholders (the module's docstring), and
    those named. ``template_file`` None: a template in object storage, whose includes are not
    read. The input is not changed."""
    reader = _Reader(template_file, limits)
    unread: list[UnreadInclude] = []

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        if len(path) > limits.max_depth:
            return node
        if isinstance(node, list):
            return [walk(item, (*path, str(i))) for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        transform = node.get("Fn::Transform")
        rest = {k: v for k, v in node.items() if k != "Fn::Transform"}
        if isinstance(transform, dict) and transform.get("Name") == INCLUDE:
            parameters = transform.get("Parameters")
            location = parameters.get("Location") if isinstance(parameters, dict) else None
            included, reason = reader.content(location)
            if included is not _UNREAD:
                if not rest:
                    return copy.deepcopy(included)
                if isinstance(included, dict):  # merged into the mapping that holds it
                    merged = {key: walk(value, (*path, key)) for key, value in rest.items()}
                    return {**merged, **copy.deepcopy(included)}
            else:
                unread.append(_unread(location, path, reason or "not a mapping to merge"))
                return _placeholder(node, rest, path, walk)
        return {key: walk(value, (*path, key)) for key, value in node.items()}

    result: dict[str, Any] = walk(dict(document), ())
    return Included(result, unread)


def _placeholder(
    node: dict[str, Any], rest: dict[str, Any], path: tuple[str, ...], walk: Any
) -> Any:
    """What an include that was not read becomes (the module's docstring)."""
    if rest:
        return {key: walk(value, (*path, key)) for key, value in rest.items()}
    if path and path[-1] == "DefinitionBody":
        return copy.deepcopy(PLACEHOLDER_DEFINITION_BODY)
    if (path and path[-1] == "Properties") or (len(path) == 2 and path[0] == "Globals"):
        return {}
    return node


def _unread(location: Any, path: tuple[str, ...], reason: str) -> UnreadInclude:
    in_resources = len(path) >= 2 and path[0] == "Resources"
    where = ".".join(path[1:] if in_resources else path) or "the template"
    return UnreadInclude(
        location if isinstance(location, str) else repr(location),
        where,
        path[1] if in_resources else "",
        reason,
    )
