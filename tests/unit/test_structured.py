"""Structured context (brainstore.service.structured): the safe JSON Schema subset and filling it
from cited facts. The real embedder is used where filling quality is measured; unit tests of the
rules use a fake ``embed`` whose similarities are chosen by the test."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from brainstore.derive import RuleExtractor, SourceText
from brainstore.service.structured import (
    LIMITS,
    SIMILARITY_THRESHOLD,
    Fact,
    LazyFacts,
    SchemaRefused,
    StructuredSchema,
    compile_schema,
    fill,
)

OBJ = {"type": "object"}


def refusal(raw: Any) -> str:
    with pytest.raises(SchemaRefused) as caught:
        compile_schema(raw)
    assert caught.value.reason == str(caught.value)
    return caught.value.reason


def schema(**properties: Any) -> StructuredSchema:
    return compile_schema({"type": "object", "properties": properties})


# --- the subset -------------------------------------------------------------------------------


def test_the_documented_subset_compiles() -> None:
    compiled = compile_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "profile",
            "description": "who the user is",
            "type": "object",
            "required": ["city"],
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 80, "examples": ["Lisbon"]},
                "age": {"type": ["integer", "null"], "minimum": 0, "exclusiveMaximum": 150, "default": None},
                "score": {"type": "number", "maximum": 1, "exclusiveMinimum": 0, "$comment": "a ratio"},
                "pets": {"type": "array", "items": {"$ref": "#/$defs/pet"}, "minItems": 1, "maxItems": 5},
                "diet": {"enum": ["vegan", "vegetarian", "omnivore"]},
                "kind": {"const": "person"},
                "zip": {"type": "string", "pattern": "^\\d{4}-\\d{3}$", "format": "postal-code"},
                "legacy": {"$ref": "#/definitions/flag"},
            },
            "$defs": {"pet": {"type": "string", "title": "a pet's kind"}},
            "definitions": {"flag": {"type": "boolean"}},
        }
    )
    good = {"city": "Lisbon", "age": 34, "score": 0.5, "pets": ["cat"], "diet": "vegan", "kind": "person",
            "zip": "1000-001", "legacy": True}  # fmt: skip
    assert compiled.validate(good) == []
    assert compiled.validate({**good, "age": None}) == []


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"$ref": "http://127.0.0.1:9/x"}, "$ref: only local references"),
        ({"$ref": "file:///etc/passwd"}, "never fetched"),
        ({"properties": {"x": {"$ref": "https://example.com/s.json#/a"}}}, "schema.properties.x.$ref"),
        ({"$ref": "#anchor"}, "anchor"),
        ({"$ref": "#/$defs/missing"}, "points at nothing"),
        ({"$ref": 3}, "$ref: must be a string"),
        ({"$id": "https://example.com/s"}, "schema.$id: not supported"),
        ({"$dynamicRef": "#meta"}, "$dynamicRef"),
        ({"$anchor": "a"}, "$anchor"),
        ({"allOf": [OBJ]}, "keyword 'allOf' is not supported"),
        ({"properties": {"x": {"formatt": "date"}}}, "schema.properties.x: keyword 'formatt'"),
        ({"$schema": "http://evil.example/schema"}, "not a known JSON Schema draft URI"),
        ({"$schema": {}}, "not a known JSON Schema draft URI"),
        (
            {"properties": {"x": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}},
            "only at the root",
        ),
        ({"type": "text"}, "schema.type: must be one of"),
        ({"type": []}, "schema.type"),
        ({"type": ["string", "string"]}, "twice"),
        ({"properties": {"x": {"type": 12}}}, "schema.properties.x.type"),
        ({"items": [OBJ]}, "tuple validation"),
        ({"additionalProperties": OBJ}, "only true or false"),
        ({"maximum": 3, "exclusiveMaximum": True}, "draft-04 boolean form"),
        ({"minLength": -1}, "non-negative integer"),
        ({"minItems": True}, "non-negative integer"),
        ({"enum": []}, "non-empty array"),
        ({"required": ["a", "a"]}, "distinct"),
        ({"pattern": "(a)\\1"}, "schema.pattern: invalid pattern: backreferences"),
        ({"pattern": "(?<=a)b"}, "lookbehind"),
        ({"pattern": 5}, "pattern: must be a string"),
        ({"description": 5}, "description: must be a string"),
        ({"examples": "x"}, "examples: must be an array"),
        ("string", "must be an object or a boolean"),
        ({"minimum": float("nan")}, "finite"),
    ],
)
def test_refusals_name_the_keyword_or_limit(raw: Any, named: str) -> None:
    assert named in refusal(raw)


def test_limits_are_refused_not_truncated() -> None:
    assert "larger than 16384 bytes" in refusal({"description": "x" * 17_000})
    props = {f"p{i}": {"type": "string"} for i in range(LIMITS.properties + 1)}
    assert "more than 64 properties" in refusal({"properties": props})
    assert "more than 64 values" in refusal({"enum": list(range(65))})
    many = {f"p{i}": {"type": "string", "pattern": "a"} for i in range(LIMITS.patterns + 1)}
    assert "more than 16 patterns" in refusal({"properties": many})
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(LIMITS.schema_depth):
        deep = {"type": "object", "properties": {"x": deep}}
    assert "nested deeper than 8 levels" in refusal(deep)
    assert "nested deeper than 32 levels" in refusal({"default": json.loads("[" * 40 + "]" * 40)})
    # Deeper than Python's recursion limit: refused by the iterative walk, not a RecursionError.
    very_deep: Any = []
    for _ in range(100_000):
        very_deep = [very_deep]
    assert "nested deeper" in refusal({"default": very_deep})


def test_ref_cycles_and_chains_are_refused() -> None:
    assert "reference cycle" in refusal({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}})
    assert "reference cycle" in refusal({"properties": {"self": {"$ref": "#"}}})
    tree = {
        "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    assert "reference cycle" in refusal(tree)
    chain = {
        "$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(10)} | {"d10": {"type": "string"}}
    }
    assert "more than 8 references in a chain" in refusal(chain)
    # A definition shared by many properties is compiled once (no blow-up), and ~0 / ~1 escapes work.
    shared = {"$defs": {"a/b~c": {"type": "string"}}, "type": "object",
              "properties": {f"p{i}": {"$ref": "#/$defs/a~1b~0c"} for i in range(60)}}  # fmt: skip
    assert compile_schema(shared).validate({"p1": 3}) == ["value.p1: 3 is not of type string"]



@pytest.mark.parametrize("index", ["\u00b2", "\u0661", "01", "-0", "+1", " 1"])
def test_a_pointer_into_an_array_takes_only_an_rfc_6901_index(index: str) -> None:
    # "²" passed str.isdigit() and int() refused it: a ValueError, a Context's 500
    schema = {"type": "object", "properties": {"a": {"$ref": f"#/examples/{index}"}},
              "examples": [{"type": "string"}, {"type": "integer"}]}  # fmt: skip
    assert "points at nothing in the schema" in refusal(schema)
    schema["properties"]["a"]["$ref"] = "#/examples/1"
    assert compile_schema(schema).validate({"a": "x"}) == ['value.a: "x" is not of type integer']


    # 64 properties declared, 8 ** 7 filled: every property of d0 holds all of d1's, and so on
    defs: dict[str, Any] = {"d6": {"type": "object", "properties": {f"p{j}": {"type": "string"} for j in range(8)}}}
    for i in reversed(range(6)):
        defs[f"d{i}"] = {"type": "object", "properties": {f"p{j}": {"$ref": f"#/$defs/d{i + 1}"} for j in range(8)}}
    started = time.perf_counter()
    assert "more than 64 properties in the schema, references followed" in refusal({"$defs": defs, "$ref": "#/$defs/d0"})
    assert time.perf_counter() - started < 0.5
    # a definition reached a few times stays within the limit
    address = {"type": "object", "properties": {n: {"type": "string"} for n in ("street", "city", "zip")}}
    reused = {"$defs": {"address": address}, "type": "object",
              "properties": {"home": {"$ref": "#/$defs/address"}, "work": {"$ref": "#/$defs/address"}}}  # fmt: skip
    assert compile_schema(reused).validate({"home": {"city": 1}}) == ["value.home.city: 1 is not of type string"]


def test_nothing_is_fetched_or_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("compile_schema reached outside")

    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(urllib.request, "urlopen", forbidden)
    monkeypatch.setattr("builtins.open", forbidden)
    for ref in ("http://127.0.0.1:1/x", "file:///etc/passwd", "/etc/passwd", "s.json", "urn:x"):
        assert "only local references" in refusal({"$ref": ref})


def test_hostile_pattern_validates_in_linear_time() -> None:
    # The reported attack: ^(a+)+$ on a backtracking engine took 0.7 s at 23 characters and
    # doubled with each one. The kernel is linear (about 0.1 ms here); 2 s is only a generous
    # bound for a loaded machine, the one timing check.
    compiled = schema(x={"type": "string", "pattern": "^(a+)+$"})
    started = time.perf_counter()
    reasons = compiled.validate({"x": "a" * 50_000 + "b"})
    assert time.perf_counter() - started < 2.0
    assert reasons == ["value.x: does not match the pattern '^(a+)+$'"]


# --- validation -------------------------------------------------------------------------------


def test_validation_reasons() -> None:
    compiled = compile_schema(
        {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 3},
                "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 5},
                "tags": {"type": "array", "items": {"enum": ["a", 1]}, "maxItems": 2},
                "code": {"type": "string", "pattern": "[0-9]"},
                "fixed": {"const": {"k": [1, 2]}},
                "nothing": False,
                "anything": True,
            },
        }
    )
    assert compiled.validate({"name": "abc", "n": 4.0, "tags": ["a", 1.0], "code": "x9y",
                              "fixed": {"k": [1.0, 2]}, "anything": [None]}) == []  # fmt: skip
    reasons = compiled.validate({"n": 5, "tags": ["b", True, 1], "code": "xyz", "fixed": {"k": [2, 1]},
                                 "nothing": 0, "extra": 1})  # fmt: skip
    assert sorted(reasons) == sorted(
        [
            "value: required property 'name' is missing",
            "value.n: not less than 5",
            "value.tags: more than 2 items",
            'value.tags[0]: "b" is not one of the enum values',
            "value.tags[1]: true is not one of the enum values",
            "value.code: does not match the pattern '[0-9]'",
            "value.fixed: object is not the const value",
            "value.nothing: no value is allowed here (schema false)",
            "value: property 'extra' is not allowed",
        ]
    )
    assert compiled.validate({"name": "é" * 3}) == []  # lengths count characters, not bytes
    assert compiled.validate({"name": True})[0] == "value.name: true is not of type string"
    assert compiled.validate([]) == ["value: array is not of type object"]
    # Values JSON cannot carry are reasons, not exceptions.
    assert compile_schema({"type": "string"}).validate(10**5000) == ["value: a number is not of type string"]
    assert compile_schema({"type": "number"}).validate(float("nan")) == ["value: float is not of type number"]


def test_validation_is_iterative_and_capped() -> None:
    compiled = compile_schema({"type": "array", "items": {"type": "array"}})
    deep: Any = []
    for _ in range(200_000):
        deep = [deep]
    assert compiled.validate(deep) == []
    many = compile_schema({"type": "array", "items": {"type": "string"}})
    assert len(many.validate(list(range(10_000)))) == LIMITS.reasons


# --- hostile input: anything JSON -------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=40,
)
KEYWORDS = st.sampled_from(
    ["type", "properties", "required", "additionalProperties", "items", "enum", "const", "minLength", "maxLength",
     "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "pattern", "$ref",
     "$defs", "definitions", "title", "description", "$schema", "$id", "allOf", "x"]
)  # fmt: skip
VALUES = st.sampled_from(
    ["string", "object", "array", "integer", ["string", "null"], "#", "#/$defs/a", "#/properties/a", "http://x/",
     "^(a+)+$", "(a)\\1", "[", 0, -1, 3, 1.5, True, False, None, [], ["a"]]
)  # fmt: skip
SCHEMAS = st.recursive(
    st.booleans() | st.dictionaries(KEYWORDS, VALUES, max_size=4),
    lambda children: st.dictionaries(
        KEYWORDS,
        children | VALUES | st.dictionaries(st.sampled_from(["a", "b", "city"]), children, max_size=3),
        max_size=5,
    ),
    max_leaves=30,
)


def fake_embed(texts: list[str]) -> np.ndarray:
    rng = np.random.default_rng(len(texts))
    vectors = rng.normal(size=(len(texts), 8)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@settings(deadline=None)
@given(st.one_of(JSON, SCHEMAS), JSON)
def test_any_json_compiles_or_is_refused_and_never_raises_otherwise(raw: Any, value: Any) -> None:
    try:
        compiled = compile_schema(raw)
    except SchemaRefused as refused:
        assert refused.reason.startswith("schema")
        return
    assert all(isinstance(r, str) for r in compiled.validate(value))
    facts = [Fact("I moved to Lisbon and play the cello.", "s1", "lives_in", "lisbon", True, 1.0)]
    try:
        result = fill(compiled, facts, fake_embed)
    except SchemaRefused as refused:
        assert "root must be an object schema" in refused.reason
        return
    assert compiled.validate(result.value) == [] or result.missing_required


# --- filling: the rules, with a fake embedder -------------------------------------------------

CONCEPTS = {
    "instrument": 0, "cello": 0, "violin": 0, "piano": 0,
    "city": 1, "lisbon": 1, "porto": 1,
    "pet name": 2, "luna": 2,
    "children": 3, "kids": 3,
    "car": 4, "tesla": 4,
}  # fmt: skip


class ConceptEmbed:
    """Texts that name a concept share an axis (similarity 1); others get their own axis (0)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 64 + len(texts)), dtype=np.float32)
        for i, text in enumerate(texts):
            key = text.split(":")[0].lower()
            axis = next((a for word, a in CONCEPTS.items() if word == key or word in key.split()), None)
            out[i, axis if axis is not None else 64 + i] = 1.0
        return out


def fact(text: str, source: str, *, attribute: str | None = None, value: str | None = None,
         mine: bool = True, day: int = 0, negated: bool = False) -> Fact:  # fmt: skip
    return Fact(text, source, attribute, value, mine, float(day * 86_400), negated)


def test_attribute_first_recased_from_the_text_and_newest() -> None:
    facts = [
        fact("Ann moved to Lisbon.", "m2", attribute="lives_in", value="lisbon", day=2),
        fact("Ann lives in Porto.", "m1", attribute="lives_in", value="porto", day=1),
        fact("Ann works at ACME Corp.", "m3", attribute="works_at", value="acme corp"),
    ]
    embed = ConceptEmbed()
    result = fill(
        schema(city={"type": "string"}, employer={"type": "string"}, job={"type": "string"}), facts, embed
    )
    assert result.value == {"city": "Lisbon", "employer": "ACME Corp"}
    assert result.provenance == {"city": ["m2"], "employer": ["m3"]}
    assert result.unfilled == ["job"]
    assert len(embed.calls) == 1  # job was looked for among the phrases, in one call


def test_phrases_fill_only_what_a_fact_supports() -> None:
    facts = [fact("Ann started learning the cello.", "m1"), fact("Ann moved to Lisbon.", "m2", day=1)]
    embed = ConceptEmbed()
    result = fill(schema(instrument={"type": "string"}, city={"type": "string"}, car={"type": "string"}),
                  facts, embed, self_name="Ann")  # fmt: skip
    assert result.value == {"instrument": "cello", "city": "Lisbon"}
    assert result.provenance == {"instrument": ["m1"], "city": ["m2"]}
    assert result.unfilled == ["car"]
    assert len(embed.calls) == 1
    assert "Ann" not in embed.calls[0] and "ann" not in embed.calls[0]


def test_no_embedding_when_nothing_needs_it() -> None:
    embed = ConceptEmbed()
    facts = [fact("Ann lives in Lisbon.", "m1", attribute="lives_in", value="lisbon")]
    assert fill(schema(city={"type": "string"}), facts, embed).value == {"city": "Lisbon"}
    assert fill(schema(car={"type": "string"}), [], embed).unfilled == ["car"]
    assert embed.calls == []


def test_the_selfs_facts_win_and_others_are_a_fallback_only_without_them() -> None:
    theirs = fact("Ann's brother plays the violin.", "m1", mine=False, day=3)
    mine = fact("Ann plays the piano.", "m2", day=1)
    compiled = schema(instrument={"type": "string"})
    assert fill(compiled, [theirs, mine], ConceptEmbed()).value == {"instrument": "piano"}
    assert fill(compiled, [theirs], ConceptEmbed()).value == {"instrument": "violin"}
    assert fill(compiled, [theirs, fact("Ann moved to Porto.", "m3")], ConceptEmbed()).unfilled == [
        "instrument"
    ]


FACT_TEXTS = [
    "Ann plays the piano.", "Ann's brother plays the violin.", "Ann lives in Porto.", "Bo moved to Lisbon.",
    "Ann has a cat called Luna.", "I drive a Tesla.", "Ann is not married.", "  ", "",
]  # fmt: skip
FACTS = st.builds(
    Fact,
    st.sampled_from(FACT_TEXTS),
    st.sampled_from(["m1", "m2", "c1", "c2"]),
    st.sampled_from([None, "lives_in", "married_to", "has_pet"]),
    st.sampled_from([None, "", "porto", "lisbon", "luna"]),
    st.booleans(),
    st.integers(0, 3).map(float),  # ties, so that the order among equal times counts too
    st.booleans(),
)


class Lazily:
    """Facts for fill() to read lazily (all the self's, or all other people's), counting how often they
    are asked for and which are made."""

    def __init__(self, facts: list[Fact], *, mine: bool) -> None:
        self.facts = [Fact(f.text, f.source, f.attribute, f.value, mine, f.valid_from, f.negated) for f in facts]
        self.asked = 0
        self.made: list[Fact] = []

    def __call__(self) -> LazyFacts[Fact]:
        self.asked += 1
        times, attributes = [f.valid_from for f in self.facts], [f.attribute for f in self.facts]
        return LazyFacts(self.facts, times=times, attributes=attributes, make=self._make)

    def _make(self, items: list[Fact]) -> list[Fact | None]:
        self.made += items
        return list(items)


LAZY_SCHEMA = dict(
    instrument={"type": "string"}, city={"type": "string"}, pet_name={"type": "string"},
    is_married={"type": "boolean"}, has_pet={"type": "boolean"}, car={"type": "string"},
    lives_in={"type": "array", "items": {"type": "string"}},
)  # fmt: skip


@settings(max_examples=300)
@given(st.lists(FACTS, max_size=8), st.lists(FACTS, max_size=8))
def test_others_are_read_only_without_the_selfs_facts_and_fill_alike(given_: list[Fact], more: list[Fact]) -> None:
    theirs = Lazily(more, mine=False)
    compiled = schema(**LAZY_SCHEMA)
    lazily = fill(compiled, given_, ConceptEmbed(), self_name="Ann", others=theirs)
    assert lazily == fill(compiled, given_ + theirs.facts, ConceptEmbed(), self_name="Ann")
    assert theirs.asked == (not any(f.owner_is_self and f.text.strip() for f in given_))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(FACTS, max_size=6),
    st.lists(FACTS, max_size=40),
    st.lists(FACTS, max_size=40),
    st.integers(1, 4),
    st.integers(1, 3),
)
@example(  # the newest fact of an attribute is negated: the attribute is read on to one that is not
    [],
    [],
    [
        fact("Bo moved to Lisbon.", "m1", day=3),
        fact("Ann lives in Porto.", "m2", attribute="lives_in", value="porto", day=2, negated=True),
        fact("Ann has a cat called Luna.", "m3", attribute="lives_in", value="luna", day=1),
    ],
    1,
    1,
)
@example(  # a boolean's words in the newest facts, though a newer one already gives phrases enough
    [],
    [fact("Bo moved to Lisbon.", "m1", day=3), fact("Ann is not married.", "m2", day=2)],
    [],
    4,
    1,
)
def test_facts_read_up_to_the_bounds_fill_as_all_of_them(
    given_: list[Fact], self_facts: list[Fact], other_facts: list[Fact], per_property: int, mined: int
) -> None:
    """Small bounds, many facts: reading the self's facts and the other people's only as far as the
    bounds reach fills exactly what making every one of them does."""
    import brainstore.service.structured as structured

    mine, theirs = Lazily(self_facts, mine=True), Lazily(other_facts, mine=False)
    compiled = schema(**LAZY_SCHEMA)
    bounds = {"MAX_PROPERTY_FACTS": per_property, "MAX_FACTS": mined, "LAZY_FACTS_BLOCK": 2}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in bounds.items():
            patch.setattr(structured, name, value)
        lazily = fill(compiled, given_, ConceptEmbed(), self_name="Ann", mine=mine, others=theirs)
        everything = given_ + mine.facts + theirs.facts
        assert lazily == fill(compiled, everything, ConceptEmbed(), self_name="Ann")


def test_facts_are_made_only_as_far_as_the_bounds_reach() -> None:
    from brainstore.service.structured import LAZY_FACTS_BLOCK, MAX_PROPERTY_FACTS

    older = [fact(f"Bo{i} went out.", f"m{i}", day=-i) for i in range(20 * LAZY_FACTS_BLOCK)]
    porto = fact("Bo lives in Porto.", "p", attribute="lives_in", value="porto", day=-50_000)
    for mine in (True, False):
        facts = Lazily([*older, porto], mine=mine)
        lazily = {"mine": facts} if mine else {"others": facts}
        result = fill(schema(city={"type": "string"}), [], ConceptEmbed(), **lazily)  # type: ignore[arg-type]
        assert result.value == {"city": "Porto"} and result.provenance == {"city": ["p"]}
        # the newest block, then the one fact of the attribute far back
        assert [f.source for f in facts.made] == [f"m{i}" for i in range(LAZY_FACTS_BLOCK)] + ["p"]
    assert MAX_PROPERTY_FACTS <= LAZY_FACTS_BLOCK


def test_a_property_reads_a_bounded_number_of_the_newest_facts() -> None:
    """A schema's cost does not grow with the Brain: each property reads at most MAX_PROPERTY_FACTS
    facts (those of its attribute, or any for a boolean's words) and an array takes at most
    MAX_ARRAY_VALUES values (64 properties on 20,000 Memories took 2.3 s; an array of cities 12 s)."""
    from brainstore.service.structured import MAX_ARRAY_VALUES, MAX_PROPERTY_FACTS

    def older(n: int, **kw: Any) -> list[Fact]:
        return [fact(f"Bo{i} lives in Town{i}.", f"m{i}", mine=False, day=-i, **kw) for i in range(n)]

    vegan = fact("Ann is vegan.", "v", mine=False, day=-10_000)
    limit = MAX_PROPERTY_FACTS
    compiled = schema(is_vegan={"type": "boolean"})
    assert fill(compiled, [*older(limit - 1), vegan], ConceptEmbed()).value == {"is_vegan": True}
    assert fill(compiled, [*older(limit), vegan], ConceptEmbed()).unfilled == ["is_vegan"]

    town = fact("Ann lives in 12.", "t", mine=False, day=-10_000, attribute="lives_in", value="12")
    compiled = schema(city={"type": "integer"})
    towns = older(limit - 1, attribute="lives_in", value="town")
    assert fill(compiled, [*towns, town], ConceptEmbed()).value == {"city": 12}
    towns = older(limit, attribute="lives_in", value="town")
    assert fill(compiled, [*towns, town], ConceptEmbed()).unfilled == ["city"]

    cities = [fact(f"Bo{i} lives in Town{i}.", f"m{i}", mine=False, day=-i, attribute="lives_in", value=f"town{i}")
              for i in range(5_000)]  # fmt: skip
    taken = fill(schema(city={"type": "array", "items": {"type": "string"}}), cities, ConceptEmbed())
    assert taken.value["city"] == [f"Town{i}" for i in range(MAX_ARRAY_VALUES)]
    assert taken.provenance["city"] == [f"m{i}" for i in range(MAX_ARRAY_VALUES)]


def test_words_are_looked_for_in_a_bounded_number_of_characters_never_within_a_word() -> None:
    """Booleans' words and phrases are mined from the newest facts' first MINED_CHARS characters (a
    statement may be 175,000 characters; 64 booleans over 40 of them took 19 s), cut at a space."""
    from brainstore.service.structured import MINED_CHARS, _leading_text

    long = fact("plain " * (MINED_CHARS // 6 + 1), "long", mine=False, day=5)
    vegan = fact("Ann is vegan.", "v", mine=False, day=1)
    compiled = schema(is_vegan={"type": "boolean"})
    assert fill(compiled, [long, vegan], ConceptEmbed()).unfilled == ["is_vegan"]
    assert fill(compiled, [replace(long, valid_from=0.0), vegan], ConceptEmbed()).value == {"is_vegan": True}

    texts = [f.text for f in _leading_text([fact("aaa bbb  ccc", "a"), fact("dd", "d")], chars=8)]
    assert texts == ["aaa bbb"]
    assert [f.text for f in _leading_text([fact("aaa bbb", "a"), fact("dd ee", "d")], chars=8)] == ["aaa bbb"]
    assert [f.text for f in _leading_text([fact("aaa bbb", "a"), fact("dd ee", "d")], chars=9)] == ["aaa bbb", "dd"]
    assert _leading_text([fact("abcdefghij", "a")], chars=5) == []



    facts = [fact("Ann no longer lives in Porto.", "m1", attribute="lives_in", value="porto", negated=True)]
    assert fill(schema(city={"type": "string"}), facts, ConceptEmbed()).unfilled == ["city"]


def test_a_property_whose_newest_fact_denies_it_takes_no_phrase_of_the_denial() -> None:
    # the cited sentence of "I quit my job at Acme" filled employer with its own word "job"; here the
    # passage that says Ann left Lisbon would fill city with "Lisbon"
    denial = fact("Ann no longer lives in Lisbon.", "m1", attribute="lives_in", value="lisbon", day=2, negated=True)
    passage = fact("I no longer live in Lisbon.", "c1", day=2)
    result = fill(schema(city={"type": "string"}), [denial, passage], ConceptEmbed(), self_name="Ann")
    assert result.unfilled == ["city"]
    # a value of the attribute told after the denial still fills it
    moved = fact("Ann moved to Porto.", "m2", attribute="lives_in", value="porto", day=3)
    assert fill(schema(city={"type": "string"}), [moved, denial, passage], ConceptEmbed()).value == {"city": "Porto"}


def test_values_respect_the_property_schema() -> None:
    facts = [fact("Ann moved to Lisbon.", "m1", attribute="lives_in", value="lisbon")]
    assert fill(schema(city={"type": "string", "maxLength": 3}), facts, ConceptEmbed()).unfilled == ["city"]
    assert fill(schema(city={"type": "string", "pattern": "^P"}), facts, ConceptEmbed()).unfilled == ["city"]
    assert fill(schema(city={"enum": ["Lisbon", "Porto"]}), facts, ConceptEmbed()).value == {"city": "Lisbon"}
    assert fill(schema(city={"enum": ["Porto"]}), facts, ConceptEmbed()).unfilled == ["city"]
    assert fill(schema(city={"type": "integer"}), facts, ConceptEmbed()).unfilled == ["city"]


def test_numbers_booleans_names_and_arrays() -> None:
    facts = [
        fact("Ann has two kids and a cat named Luna.", "m1", day=3),
        fact("Ann is 34 years old.", "m2", attribute="age", value="34", day=2),
        fact("Ann is not married.", "m3", day=1, negated=True),
        fact("Ann is vegan.", "m4", day=0),
        fact("Ann likes jazz.", "m5", attribute="likes", value="jazz"),
        fact("Ann likes hiking.", "m6", attribute="likes", value="hiking", day=1),
    ]
    compiled = schema(
        children={"type": "integer"},
        age={"type": "integer", "minimum": 0},
        married={"type": "boolean"},
        is_vegan={"type": "boolean"},
        is_smoker={"type": "boolean"},
        pet_name={"type": "string"},
        hobbies={"type": "array", "items": {"type": "string"}},
    )
    result = fill(compiled, facts, ConceptEmbed())
    assert result.value == {"children": 2, "age": 34, "married": False, "is_vegan": True, "pet_name": "Luna",
                            "hobbies": ["hiking", "jazz"]}  # fmt: skip
    assert result.provenance["hobbies"] == ["m6", "m5"]
    assert result.unfilled == ["is_smoker"]


def test_nested_objects_and_required() -> None:
    facts = [fact("Ann moved to Lisbon.", "m1", attribute="lives_in", value="lisbon")]
    compiled = compile_schema(
        {
            "type": "object",
            "required": ["home", "age"],
            "properties": {
                "home": {"type": "object", "properties": {"city": {"type": "string"}}},
                "work": {"type": "object", "required": ["employer"],
                         "properties": {"employer": {"type": "string"}, "city": {"type": "string"}}},
                "age": {"type": "integer"},
            },
        }
    )  # fmt: skip
    result = fill(compiled, facts, ConceptEmbed())
    # work.city could be filled, but work without its required employer would be invalid.
    assert result.value == {"home": {"city": "Lisbon"}}
    assert result.provenance == {"home.city": ["m1"]}
    assert result.unfilled == ["work.employer", "work.city", "age"]
    assert result.missing_required == ["age"]


@pytest.mark.parametrize(
    "root",
    [{"const": {"city": "Porto"}}, {"enum": [{"city": "Porto"}]}, {"$ref": "#/$defs/never", "$defs": {"never": False}}],
)
def test_a_value_the_root_schema_refuses_is_never_ready(root: dict[str, Any]) -> None:
    facts = [fact("Ann moved to Lisbon.", "m1", attribute="lives_in", value="lisbon")]
    compiled = compile_schema({"type": "object", "properties": {"city": {"type": "string"}}, **root})
    with pytest.raises(SchemaRefused, match="no value from the cited material satisfies the schema"):
        fill(compiled, facts, ConceptEmbed())
    # the value the root allows is answered
    if "const" in root:
        porto = [fact("Ann moved to Porto.", "m2", attribute="lives_in", value="porto")]
        assert fill(compiled, porto, ConceptEmbed()).value == {"city": "Porto"}


def test_two_properties_of_one_dotted_path_are_refused() -> None:
    # "work.city" was given the value found for city in work, which no fact said of it
    facts = [fact("Ann moved to Lisbon.", "m1", attribute="lives_in", value="lisbon")]
    office = {"type": "string", "description": "the city of the employer's head office"}
    work = {"type": "object", "properties": {"city": {"type": "string"}}}
    for properties in ({"work.city": office, "work": work}, {"work": work, "work.city": office}):
        compiled = compile_schema({"type": "object", "properties": properties})
        with pytest.raises(SchemaRefused, match=r"have one dotted path, 'work\.city'"):
            fill(compiled, facts, ConceptEmbed())
    # a dot in a name is no ambiguity by itself
    result = fill(compile_schema({"type": "object", "properties": {"home.city": {"type": "string"}}}), facts, ConceptEmbed())
    assert result.value == {"home.city": "Lisbon"} and result.provenance == {"home.city": ["m1"]}


def test_root_must_be_an_object_with_properties() -> None:
    for raw in ({"type": "string"}, {"type": "object"}, True):
        with pytest.raises(SchemaRefused, match="root must be an object schema"):
            fill(compile_schema(raw), [], ConceptEmbed())
    ref_root = compile_schema(
        {"$ref": "#/$defs/p", "$defs": {"p": {"type": "object", "properties": {"city": {}}}}}
    )
    facts = [fact("Ann moved to Lisbon.", "m1", attribute="lives_in", value="lisbon")]
    assert fill(ref_root, facts, ConceptEmbed()).value == {"city": "Lisbon"}


# --- filling with the real embedder: measured examples ----------------------------------------

STR, INT, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
ARR = {"type": "array", "items": {"type": "string"}}
DIET = {"type": "string", "enum": ["vegan", "vegetarian", "omnivore"]}

# (the self's statements, another speaker's, properties, acceptable values per property; a property
# missing from the last is one no statement supports). TUNE chose SIMILARITY_THRESHOLD; HELD_OUT
# was written at the same time and is reported separately (docs/structured.md).
TUNE = [
    (["I started learning the cello", "I moved to Lisbon"], [], {"instrument": STR, "city": STR},
     {"instrument": {"cello"}, "city": {"Lisbon"}}),
    (["I work at Google as a software engineer.", "I'm 34 years old.", "I adopted a golden retriever last spring."], [],
     {"employer": STR, "age": INT, "pet": STR}, {"employer": {"Google"}, "age": {34}, "pet": {"golden retriever", "retriever", "dog"}}),
    (["I drive a Tesla Model 3.", "I play tennis every Sunday.", "I speak Portuguese and Spanish."], [],
     {"car": STR, "sport": STR, "languages": ARR},
     {"car": {"Tesla Model 3", "Tesla", "Tesla Model"}, "sport": {"tennis"},
      "languages": {("Portuguese", "Spanish"), ("Spanish", "Portuguese"), ("Portuguese",), ("Spanish",)}}),
    (["I studied at Harvard.", "My favourite color is blue.", "I have two kids."], [],
     {"university": STR, "favorite_color": STR, "children": INT}, {"university": {"Harvard"}, "favorite_color": {"blue"}, "children": {2}}),
    (["I'm vegan.", "I live in Berlin."], [], {"is_vegan": BOOL, "diet": DIET, "city": STR},
     {"is_vegan": {True}, "diet": {"vegan"}, "city": {"Berlin"}}),
    (["I started learning the cello"], [], {"pet": STR, "car": STR, "employer": STR}, {}),
    (["I used to live in Porto.", "Last year I moved to Lisbon."], [], {"city": STR}, {"city": {"Lisbon"}}),
    (["I like jazz."], ["My brother plays the drums."], {"instrument": STR, "music_genre": STR}, {"music_genre": {"jazz"}}),
    (["I'm reading Dune right now.", "I have a cat named Luna."], [], {"book": STR, "pet_name": STR},
     {"book": {"Dune"}, "pet_name": {"Luna"}}),
    (["I don't have any pets.", "I'm not married."], [], {"has_pets": BOOL, "married": BOOL}, {"has_pets": {False}, "married": {False}}),
]  # fmt: skip
HELD_OUT = [
    (["I took up the violin last month.", "I relocated to Toronto in March."], [], {"instrument": STR, "city": STR},
     {"instrument": {"violin"}, "city": {"Toronto"}}),
    (["I work for Spotify.", "I'm a data scientist.", "I turned 29 in May."], [], {"company": STR, "job": STR, "age": INT},
     {"company": {"Spotify"}, "job": {"data scientist"}, "age": {29}}),
    (["I have a parrot named Kiwi.", "I ride a Vespa to work."], [], {"pet_name": STR, "vehicle": STR},
     {"pet_name": {"Kiwi"}, "vehicle": {"Vespa"}}),
    (["I play basketball on weekends.", "I speak French."], [], {"sport": STR, "language": STR},
     {"sport": {"basketball"}, "language": {"French"}}),
    (["I'm vegetarian.", "I grew up in Dublin."], [], {"diet": DIET, "hometown": STR},
     {"diet": {"vegetarian"}, "hometown": {"Dublin"}}),
    (["I love hiking and painting."], [], {"hobbies": ARR},
     {"hobbies": {("hiking",), ("hiking", "painting"), ("painting", "hiking")}}),
    (["I took up the violin last month."], [], {"employer": STR, "car": STR, "university": STR}, {}),
    (["I'm studying at MIT.", "I have three sisters."], [], {"school": STR, "siblings": INT}, {"school": {"MIT"}, "siblings": {3}}),
    (["My wife Sarah is a doctor.", "I live in Austin."], [], {"city": STR, "spouse": STR}, {"city": {"Austin"}, "spouse": {"Sarah"}}),
    (["I drink green tea every morning.", "I'm allergic to peanuts."], [], {"favorite_drink": STR, "allergy": STR},
     {"favorite_drink": {"green tea", "tea"}, "allergy": {"peanuts"}}),
]  # fmt: skip

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def conversation_facts(mine: list[str], others: list[str]) -> list[Fact]:
    """What a Context would hand over: each turn as evidence, and the Memories derived from it."""
    extractor, facts, n = RuleExtractor(), [], 0
    for speaker, texts in (("Ann", mine), ("Bob", others)):
        for text in texts:
            n += 1
            source = SourceText(
                text, "message", speaker, "user" if speaker == "Ann" else "other", T0 + timedelta(days=n)
            )
            facts.append(Fact(text, f"rec_{n}", None, None, speaker == "Ann", source.occurred_at.timestamp()))
            for a in extractor.extract(source, self_name="Ann"):
                facts.append(Fact(a.statement, f"mem_{n}", a.attribute, a.value, (a.owner or "").casefold() == "ann",
                                  a.valid_from.timestamp(), a.negated))  # fmt: skip
    return facts


def score(examples: list[Any], embed: Any) -> tuple[int, int, int, int]:
    """(correct, wrong fills, misses, properties): a miss leaves a supported property unfilled."""
    correct = wrong = missed = total = 0
    for mine, others, properties, expected in examples:
        result = fill(schema(**properties), conversation_facts(mine, others), embed, self_name="Ann")
        for name in properties:
            total += 1
            got, want = result.value.get(name), expected.get(name)
            if got is None:
                correct, missed = correct + (want is None), missed + (want is not None)
            elif want is not None and (tuple(got) if isinstance(got, list) else got) in want:
                correct += 1
                assert result.provenance[name]
            else:
                wrong += 1
    return correct, wrong, missed, total


@pytest.fixture(scope="module")
def embed() -> Any:
    from brainstore.retrieval.embedder import load_embedder

    return load_embedder("onnx").embed


def test_the_reported_example_is_filled_with_its_sources(embed: Any) -> None:
    facts = conversation_facts(["I started learning the cello", "I moved to Lisbon"], [])
    result = fill(
        schema(instrument={"type": "string"}, city={"type": "string"}), facts, embed, self_name="Ann"
    )
    assert result.value == {"instrument": "cello", "city": "Lisbon"}
    assert result.provenance["city"] == ["mem_2"]  # the Memory's attribute, before any phrase
    assert result.provenance["instrument"] in (["rec_1"], ["mem_1"])
    assert result.unfilled == []


def test_measured_accuracy_holds(embed: Any) -> None:
    # Measured when SIMILARITY_THRESHOLD (0.42) was chosen: tune 23/24 correct, held-out 17/21,
    # neither with a wrong fill (misses only). A wrong value is worse than none: no wrong fills.
    assert SIMILARITY_THRESHOLD == 0.42
    correct, wrong, _, total = score(TUNE, embed)
    assert (correct, wrong, total) == (23, 0, 24)
    correct, wrong, _, total = score(HELD_OUT, embed)
    assert (correct, wrong, total) == (17, 0, 21)
