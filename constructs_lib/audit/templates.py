"""The path one template takes: read -> parse -> dialect -> flat rows.

- ``reading``: the file's bytes, read safely (``objects`` for an ``s3://`` URL);
- ``parsing``: bytes -> a document (JSON, or YAML with CloudFormation's short forms);
- ``dialects``: SAM is expanded to CloudFormation (``dialects/sam.py``); every template then
  becomes rows (``dialects/cloudformation.py``), its intrinsic functions normalized by
  ``intrinsics.py``.

Which files to read is ``inputs/discovery.py``'s job. Nothing here raises for a bad file: it
becomes an "unparseable" file row, reported as QR901, and the rest of the fleet is still judged.
"""

from __future__ import annotations

from constructs_lib.audit import parameters
from constructs_lib.audit.dialects import cloudformation, sam
from constructs_lib.audit.inputs import objects
from constructs_lib.audit.inputs.reading import ReadError, SkippedFile, read_bytes
from constructs_lib.audit.model import FileRow, ParsedTemplate
from constructs_lib.audit.parameters import Overrides
from constructs_lib.audit.parsing import TemplateError, load_located
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

# A file not read on purpose (not a regular file, over the size cap): reported like an
# unparseable one (QR901), and counted apart in the summary.
SKIPPED = "skipped"


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
    except TemplateError as error:
        return unparseable(file, stack, str(error))
    except MemoryError:  # the parsing worker reports it and is replaced (isolation.py)
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
