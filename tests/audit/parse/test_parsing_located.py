"""Located JSON parsing: the one decode that builds the document and records where each
resource is written (``positions.walk_json``) accepts exactly what ``json.loads`` accepts, builds
the same document, and finds the same positions as an independent reader (PyYAML's marks: JSON
is YAML)."""

from __future__ import annotations

import json
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from constructs_lib.audit import model
from constructs_lib.audit.parse import documents as parsing
from constructs_lib.audit.parse import positions

ROOT = Path(__file__).parents[3]
# Limits far above anything below: these tests are about syntax, test_hostile.py about depth.
GENEROUS = {positions.TOP_VALUES: 10**4, positions.RESOURCES: 10**4}


def json_verdict(text: str) -> Any:
    """What json.loads makes of ``text``: the document, or the type of its error."""
    try:
        return json.loads(text)
    except ValueError as error:
        return type(error)


def walk_verdict(text: str) -> Any:
    """What the walk makes of ``text``: the document, or None when it leaves it to json.loads."""
    walk = positions.walk_json(text, GENEROUS)
    return None if walk is None else walk.document


def assert_same_as_json(text: str) -> None:
    expected, got = json_verdict(text), walk_verdict(text)
    if isinstance(expected, dict):
        assert got == expected, text
        assert list(got) == list(expected), text  # the same key order
        if isinstance(expected.get("Resources"), dict):
            assert list(got["Resources"]) == list(expected["Resources"]), text
    else:  # rejected by json.loads, or not an object: the walk declines it
        assert got is None, text


# Each of these is malformed, an edge json.loads still accepts, or not an object at all.
EDGES = {
    "empty": "",
    "blanks only": " \n\t ",
    "array": '[{"Resources": {}}]',
    "scalar": '"Resources"',
    "empty object": "{}",
    "empty object, blanks": " \r\n{ \t} \n",
    "empty Resources": '{"Resources": {}}',
    "trailing comma, top": '{"Resources": {},}',
    "trailing comma, Resources": '{"Resources": {"Q": {},}}',
    "trailing comma, in a resource": '{"Resources": {"Q": {"Type": "x",}}}',
    "lone comma, top": "{,}",
    "lone comma, Resources": '{"Resources": {,}}',
    "missing comma, top": '{"Resources": {} "A": 1}',
    "missing comma, Resources": '{"Resources": {"Q": {} "R": {}}}',
    "missing colon, top": '{"Resources" {}}',
    "missing colon, Resources": '{"Resources": {"Q" {}}}',
    "missing value": '{"Resources": }',
    "missing resource value": '{"Resources": {"Q": }}',
    "non-string key": '{1: {}, "Resources": {}}',
    "non-string logical id": '{"Resources": {1: {}}}',
    "single-quoted key": "{'Resources': {}}",
    "single-quoted logical id": "{\"Resources\": {'Q': {}}}",
    "bare key": "{Resources: {}}",
    "unterminated": '{"Resources": {"Q": {}}',
    "unterminated key": '{"Resources',
    "unterminated logical id": '{"Resources": {"Q',
    "extra data": '{"Resources": {}} {}',
    "extra data, one letter": '{"Resources": {}}x',
    "form feed after": '{"Resources": {}}\f',
    "no-break space before": '\u00a0{"Resources": {}}',
    "byte order mark": '\ufeff{"Resources": {}}',
    "NUL after": '{"Resources": {}}\x00',
    "control character in a key": '{"Resou\trces": {}}',
    "control character in a logical id": '{"Resources": {"Q\n": {}}}',
    "escaped key": '{"Res\\u006fur\\u0063es": {"Q": {}}}',
    "escaped logical id": '{"Resources": {"Q\\"uote\\\\": {}, "\\u00e9": {}}}',
    "bad escape in a key": '{"Re\\xsources": {}}',
    "bad escape in a logical id": '{"Resources": {"\\q": {}}}',
    "lone surrogate escape": '{"Resources": {"\\ud800": {}}}',
    "non-ASCII logical id": '{"Resources": {"Fila\u00e9\u4e2d": {"Type": "AWS::SQS::Queue"}}}',
    "NaN and Infinity": '{"Resources": {"Q": {"A": NaN, "B": -Infinity}}}',
    "repeated Resources": '{"Resources": {"A": {}}, "Resources": {"B": {}}}',
    "repeated Resources, then not an object": '{"Resources": {"A": {}}, "Resources": 1}',
    "repeated logical id": '{"Resources": {"A": {"n": 1}, "B": {}, "A": {"n": 2}}}',
    "Resources not an object": '{"Resources": [1, 2]}',
    "Resources a string": '{"Resources": "{"}',
    "nested malformed": '{"Resources": {"Q": {"Properties": [1, 2,]}}}',
    "malformed after Resources": '{"Resources": {}, "Outputs": {"a": tru}}',
    "number keys' values": '{"Resources": {}, "A": -0.0, "B": 1e400, "C": 01}',
    "blanks everywhere": ' {\r\n"Resources"\t:\n{ "Q" :{} ,\n"R":\t[] } , "A" : 1 }\n\t',
    "comment": '{"Resources": {}} // no',
}


@pytest.mark.parametrize("text", list(EDGES.values()), ids=list(EDGES))
def test_the_walk_accepts_exactly_what_json_loads_accepts(text: str) -> None:
    assert_same_as_json(text)


@pytest.mark.parametrize(
    "name", [n for n, t in EDGES.items() if not isinstance(json_verdict(t), dict)]
)
def test_fails_as_json_loads_fails_when_located(name: str) -> None:
    """Malformed JSON gets json's own message, positions or not."""
    data = EDGES[name].encode()
    results = []
    for located in (False, True):
        try:
            results.append(("ok", parsing.load_located("t.json", data, located=located)[0]))
        except parsing.TemplateError as error:
            results.append((type(error).__name__, str(error)))
    assert results[0] == results[1]


# --- generated documents --------------------------------------------------------------------

KEYS = st.sampled_from(["Resources", "Outputs", "Type", "Properties", "a", "\u00e9", 'q"', "\\"])


def templates(texts: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Template-shaped documents: audited and other resources, positioned properties and
    others, any values (strings from ``texts``) around them."""
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS | texts, inner),
        max_leaves=12,
    )
    resource = st.fixed_dictionaries(
        {"Type": st.sampled_from([*sorted(model.AUDITED_TYPES), "AWS::SNS::Topic"])},
        optional={
            "Properties": st.dictionaries(
                st.sampled_from([*sorted(positions.POSITIONED_PROPERTIES), "QueueName"]), values
            ),
            "Metadata": st.dictionaries(KEYS, values),
        },
    )
    top = st.dictionaries(
        st.sampled_from(["AWSTemplateFormatVersion", "Outputs", "Metadata", "Resources", "\u00e9"]),
        values,
    )
    return top.flatmap(
        lambda top: st.dictionaries(texts.filter(bool), resource, max_size=5).map(
            lambda resources: {**top, "Resources": resources}
        )
    )


TEMPLATES = templates(st.text(max_size=30))
# PyYAML reads a surrogate pair escape as two characters: the YAML comparison keeps to the BMP.
BMP_TEMPLATES = templates(
    st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=30)
)
LAYOUTS = st.sampled_from(
    [
        {"indent": None},
        {"indent": 1},
        {"indent": "\t", "separators": (",", ":")},
        {"indent": None, "separators": (" ,\r\n", " :\t")},
        {"indent": 2, "ensure_ascii": False},
    ]
)


@settings(max_examples=200, deadline=None)
@given(document=TEMPLATES, layout=LAYOUTS)
def test_the_walk_builds_json_loads_document(document: dict[str, Any], layout: Any) -> None:
    assert_same_as_json(json.dumps(document, **layout))


@settings(max_examples=300, deadline=None)
@given(
    document=TEMPLATES,
    at=st.floats(min_value=0, max_value=1),
    edit=st.sampled_from(["delete", *',:{}[]"\\ \t\x00ae1-']),
)
def test_an_edited_template_is_judged_as_json_loads_judges_it(
    document: dict[str, Any], at: float, edit: str
) -> None:
    """One character deleted or inserted anywhere: most results are malformed somewhere."""
    text = json.dumps(document, indent=1)
    where = int(at * len(text))
    if edit == "delete":
        edited = text[:where] + text[where + 1 :]
    else:
        edited = text[:where] + edit + text[where:]
    assert_same_as_json(edited)


# --- the same positions as an independent reader --------------------------------------------


def yaml_positions(text: str) -> positions.Spots:
    """Positions read by PyYAML from the same text (JSON without tabs or non-ASCII is YAML),
    kept to what JSON positions hold: the keys of the positioned properties of audited types."""
    document = json.loads(text)
    found = positions.yaml_spots(yaml.compose(text, Loader=yaml.SafeLoader))
    kept: positions.Spots = {}
    for logical_id, spot in found.items():
        body = document["Resources"][logical_id]
        audited = isinstance(body, dict) and body.get("Type") in model.AUDITED_TYPES
        properties = {
            k: v
            for k, v in spot.properties.items()
            if audited and k in positions.POSITIONED_PROPERTIES
        }
        kept[logical_id] = positions.Spot(spot.line, spot.column, properties)
    return kept


def located(text: str) -> positions.Spots:
    walk = positions.walk_json(text, GENEROUS)
    assert walk is not None, text
    return positions.spots_of(text, walk)


@settings(max_examples=200, deadline=None)
@given(document=BMP_TEMPLATES, indent=st.sampled_from([None, 1, 4]))
def test_positions_match_yaml_marks_on_generated_documents(
    document: dict[str, Any], indent: int | None
) -> None:
    text = json.dumps(document, indent=indent)
    assert located(text) == yaml_positions(text)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Generated templates (the benchmark's) and the repository's JSON test fixtures."""
    folder = tmp_path_factory.mktemp("generated")
    generator = ROOT / "bench" / "generate_templates.py"
    command = [sys.executable, str(generator), "--count", "300", "--out", str(folder)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    generated = sorted((folder / "templates").rglob("*.json"))
    fixtures = sorted((ROOT / "tests").rglob("*.json"))
    assert len(generated) > 200 and fixtures
    return generated + fixtures


def test_the_corpus_decodes_as_json_loads_decodes_it(corpus: list[Path]) -> None:
    for path in corpus:
        assert_same_as_json(path.read_bytes().decode("utf-8-sig", errors="replace"))


def test_the_corpus_positions_match_yaml_marks(corpus: list[Path]) -> None:
    compared = 0
    for path in corpus:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
        document = json_verdict(text)
        if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
            continue
        if "\t" in text or not text.isascii():  # YAML reads those differently from JSON
            continue
        assert located(text) == yaml_positions(text), path
        compared += 1
    assert compared > 200


def test_plain_keys_are_read_as_scanstring_reads_them() -> None:
    """The fast key pattern takes a key's text as it is only when json's scanner would."""
    for char in map(chr, range(0x80)):
        text = '{"Resources": {"a' + char + 'b": {}}}'
        assert_same_as_json(text)
    assert set(string.whitespace) - set(" \t\n\r")  # \f and \v: blanks to YAML, not to JSON
