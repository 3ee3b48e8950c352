"""The path one template takes: read -> parse -> dialect -> flat rows.

- ``inputs.reading``: the file's bytes, read safely (``inputs.objects`` for an ``s3://`` URL);
- ``documents``: bytes -> a document (JSON, or YAML with CloudFormation's short forms);
- ``dialects``: SAM is expanded to CloudFormation (``dialects.sam``); every template then
  becomes rows (``dialects.cloudformation``), its intrinsic functions normalized by
  ``intrinsics``.

Which files to read is ``inputs.discovery``'s job. Nothing here raises for a bad file: it
becomes an "unparseable" file row, reported as QR901, and the rest of the fleet is still judged.
A file that is no template (a workflow, a site's configuration, a compose file met while walking
a repository) becomes a "not_template" file row: counted and listed in the summary, no finding.
"""

from __future__ import annotations

import re

from constructs_lib.audit.inputs import objects, template_names
from constructs_lib.audit.inputs.reading import ReadError, SkippedFile, read_bytes
from constructs_lib.audit.model import FileRow, ParsedTemplate
from constructs_lib.audit.parse import parameters
from constructs_lib.audit.parse.dialects import cloudformation, sam
from constructs_lib.audit.parse.documents import (
    TEMPLATE_KEYS,
    InvalidSyntax,
    NotATemplate,
    TemplateError,
    load_located,
)
from constructs_lib.audit.parse.parameters import Overrides
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

# A file not read on purpose (not a regular file, over the size cap): reported like an
# unparseable one (QR901), and counted apart in the summary.
SKIPPED = "skipped"
# A JSON or YAML file that does not claim to be a template: no finding, counted and listed.
NOT_TEMPLATE = "not_template"

# A template key as a key: at the start of a line ("Resources:"), or after a JSON brace or comma
# ('{"Resources": {'): what a template that fails to parse still shows of itself.
_CLAIMED_KEY = re.compile(
    r"(?:^|[{,])[ \t]*[\"']?(?:" + "|".join(TEMPLATE_KEYS) + r")[\"']?[ \t]*:", re.MULTILINE
)


def claims_template(file: str, data: bytes) -> bool:
    """Whether a file that is not valid JSON or YAML still claims to be a template: its name says
    so (``*.template.json``, ``*.template``), or a line of it starts with a template's top-level
    key. A broken template is a QR901; a Helm chart's Go-templated YAML or a JSON file with
    comments, met while walking a repository, is not a template at all."""
    if template_names.is_template_suffix(file):
        return True
    return _CLAIMED_KEY.search(data.decode("utf-8", "replace")) is not None


def unparseable(file: str, stack: str, reason: str, status: str = "unparseable") -> ParsedTemplate:
    return ParsedTemplate(FileRow(file, stack, status, reason, 0))


def parse_template(
    file: str,
    stack: str,
    data: bytes,
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
    located: bool = True,
) -> ParsedTemplate:
    """One file's bytes -> rows, with the parameter ``overrides`` that apply to its stack, and
    where each resource is written (``located``: default on; off only to measure its cost)."""
    values = parameters.for_stack(overrides, stack)
    try:
        document, spots = load_located(file, data, limits, located)
        if sam.is_sam(document):
            return sam.extract(file, stack, document, values, spots)
        return cloudformation.extract(file, stack, document, overrides=values, spots=spots)
    except NotATemplate as error:
        # a file named as a template (a cloud assembly's, ``*.template.json``) must be one
        status = "unparseable" if template_names.is_template_suffix(file) else NOT_TEMPLATE
        return unparseable(file, stack, str(error), status)
    except InvalidSyntax as error:
        if claims_template(file, data):
            return unparseable(file, stack, str(error))
        return unparseable(file, stack, f"not a CloudFormation template: {error}", NOT_TEMPLATE)
    except TemplateError as error:
        return unparseable(file, stack, str(error))
    except MemoryError:  # the parsing worker reports it and is replaced (``isolation``)
        raise
    except Exception as error:  # a template shape no one foresaw must not stop the fleet
        return unparseable(
            file, stack, f"could not interpret the template: {type(error).__name__}: {error}"
        )


def read_and_parse(
    file: str,
    stack: str,
    limits: ReadLimits = DEFAULT_LIMITS,
    overrides: Overrides | None = None,
) -> ParsedTemplate:
    """One file, in this process, within ``limits`` (``isolation.parse_files`` adds a time bound
    and survives a crash of the parser)."""
    try:
        if objects.is_object_url(file):
            data = objects.read_object(file, limits)
        else:
            data = read_bytes(file, limits)
    except SkippedFile as error:
        return unparseable(file, stack, str(error), SKIPPED)
    except ReadError as error:
        return unparseable(file, stack, str(error))
    return parse_template(file, stack, data, limits, overrides)
