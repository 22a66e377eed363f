"""Structured context: a safe subset of JSON Schema, and filling it from cited facts.

A Context request may carry a ``schema``. It comes from a caller, so it is treated as hostile:

- :func:`compile_schema` accepts a documented subset (docs/structured.md) and refuses everything
  else with :class:`SchemaRefused`, whose ``reason`` names the keyword or limit. Nothing is ever
  fetched or read: ``$ref`` resolves only local ``#/...`` pointers, and ``$id``, ``$dynamicRef``
  and their kin are refused. Size, nesting, property, enum and pattern counts are bounded, and
  ``pattern`` runs on the linear-time kernel (:class:`brainstore.kernels.Pattern`).
- :meth:`StructuredSchema.validate` is iterative (an explicit stack), so a deep value cannot
  exhaust the Python stack, and visits each element of the value a bounded number of times.
- :func:`fill` builds a value from :class:`Fact` s only: every filled property carries the sources
  that support it, and a property no fact supports is left out and listed in ``unfilled``. It
  asserts nothing of its own.

Invariants: every function here either returns or raises :class:`SchemaRefused` for any JSON
input (no other exception, no unbounded recursion); a filled value is valid against its
property's schema; :func:`fill` makes at most one call to ``embed``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar
from urllib.parse import unquote

import numpy as np

from brainstore import kernels

__all__ = [
    "LIMITS",
    "Fact",
    "FillResult",
    "Limits",
    "SchemaRefused",
    "StructuredSchema",
    "compile_schema",
    "fill",
]


@dataclass(frozen=True)
class Limits:
    """Bounds on a schema. A schema over any of them is refused, never truncated."""

    serialized_bytes: int = 16 * 1024  # the schema as compact UTF-8 JSON
    json_depth: int = 32  # nesting of JSON arrays and objects anywhere in the schema document
    schema_depth: int = 8  # nesting of subschemas through properties and items, refs followed
    ref_hops: int = 8  # $ref -> $ref -> ... chain length
    properties: int = 64  # declared properties, summed over the whole schema
    enum_values: int = 64  # values of one enum
    patterns: int = 16  # pattern keywords in the whole schema
    reasons: int = 20  # validation reasons reported at most


LIMITS = Limits()

# 2020-12 and the drafts before it, by the URIs they publish (with or without the empty fragment).
KNOWN_DRAFTS = frozenset(
    f"{scheme}://json-schema.org/{draft}{fragment}"
    for scheme in ("http", "https")
    for draft in (
        "draft-04/schema",
        "draft-06/schema",
        "draft-07/schema",
        "draft/2019-09/schema",
        "draft/2020-12/schema",
    )
    for fragment in ("", "#")
)
TYPE_NAMES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "$comment", "format"})
_CONTAINERS = frozenset({"$defs", "definitions"})
_ASSERTIONS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "pattern",
        "$ref",
    }
)
# Keywords that identify or locate schemas by URI: the doors to fetching, refused by name.
_IDENTITY = frozenset(
    {
        "$id",
        "id",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
        "$vocabulary",
    }
)


class SchemaRefused(Exception):
    """The schema is outside the supported subset or over a limit; ``reason`` says which.

    The Context answers ``structured: {status: "unavailable", reason}``, never an HTTP error.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_MISSING = object()


@dataclass(eq=False)
class _Node:
    """One compiled subschema. ``always`` is set for the boolean schemas ``true`` / ``false``."""

    pointer: str
    always: bool | None = None
    types: frozenset[str] | None = None
    properties: dict[str, _Node] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    additional: bool = True
    items: _Node | None = None
    enum: tuple[Any, ...] | None = None
    const: Any = _MISSING
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | int | None = None
    maximum: float | int | None = None
    exclusive_minimum: float | int | None = None
    exclusive_maximum: float | int | None = None
    min_items: int | None = None
    max_items: int | None = None
    pattern: kernels.Pattern | None = None
    ref: _Node | None = None
    title: str | None = None
    description: str | None = None
    height: int = 1  # subschema levels below and including this one, refs followed
    hops: int = 0  # $ref chain length from here
    spread: int = 0  # properties below this one, each counted every time a $ref reaches it


def _where(pointer: str) -> str:
    """A schema location for humans: ``schema.properties.city.type``."""
    return "schema" + "".join(f".{part}" for part in pointer.split("/")[1:] if part != "")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_document(raw: Any, limits: Limits) -> None:
    """JSON values only, finite numbers, bounded depth and size; iterative, stops at the first excess."""
    stack: list[tuple[Any, int]] = [(raw, 1)]
    budget = limits.serialized_bytes  # every node costs at least one byte once serialized
    while stack:
        value, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise SchemaRefused(f"schema: larger than {limits.serialized_bytes} bytes")
        if depth > limits.json_depth:
            raise SchemaRefused(f"schema: nested deeper than {limits.json_depth} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SchemaRefused("schema: object keys must be strings")
                budget -= len(key)
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            budget -= len(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise SchemaRefused("schema: numbers must be finite")
        elif not (value is None or isinstance(value, bool | int)):
            raise SchemaRefused(f"schema: {type(value).__name__} is not a JSON value")
    try:
        size = len(
            json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        )
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an int too long to print
        raise SchemaRefused(f"schema: not serializable as JSON ({exc})") from None
    if size > limits.serialized_bytes:
        raise SchemaRefused(f"schema: larger than {limits.serialized_bytes} bytes ({size})")


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1; recursion bounded by the schema side's depth."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return False


class _Compiler:
    def __init__(self, raw: Any, limits: Limits) -> None:
        self.raw = raw
        self.limits = limits
        self.done: dict[str, _Node] = {}
        self.active: list[str] = []  # pointers being compiled: a $ref back into one is a cycle
        self.property_count = 0
        self.pattern_count = 0

    def resolve(self, ref: str, at: str) -> tuple[str, Any]:
        if not isinstance(ref, str):
            raise SchemaRefused(f"{_where(at)}.$ref: must be a string")
        if not ref.startswith("#"):
            raise SchemaRefused(
                f"{_where(at)}.$ref: only local references (#/...) are supported; {ref[:80]!r} is never fetched"
            )
        fragment = unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            raise SchemaRefused(
                f"{_where(at)}.$ref: {ref[:80]!r} is an anchor; only JSON pointers (#/...) are supported"
            )
        target = self.raw
        for part in fragment.split("/")[1:] if fragment else []:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and key in target:
                target = target[key]
            elif isinstance(target, list) and _INDEX.fullmatch(key) and int(key) < len(target):
                target = target[int(key)]
            else:
                raise SchemaRefused(f"{_where(at)}.$ref: {ref[:80]!r} points at nothing in the schema")
        return fragment, target

    def node(self, raw: Any, pointer: str) -> _Node:
        if pointer in self.done:
            return self.done[pointer]
        if pointer in self.active:
            chain = " -> ".join(
                ["#" + p for p in self.active[self.active.index(pointer) :]] + ["#" + pointer]
            )
            raise SchemaRefused(f"{_where(self.active[-1])}.$ref: reference cycle ({chain})")
        self.active.append(pointer)
        try:
            node = self.build(raw, pointer)
        finally:
            self.active.pop()
        children = [*node.properties.values(), *([node.items] if node.items else [])]
        node.height = 1 + max((c.height for c in children), default=0)
        node.spread = sum(1 + c.spread for c in node.properties.values())
        if node.ref is not None:
            node.height = max(node.height, node.ref.height)
            node.hops = node.ref.hops + 1
            node.spread += node.ref.spread
        # fill() makes a property of each, references followed: eight properties referencing a
        # definition of eight, six deep, were 1,693 bytes and made 262,144 (a Context of 20 s and 28 MB)
        if node.spread > self.limits.properties:
            raise SchemaRefused(
                f"{_where(pointer)}.properties: more than {self.limits.properties} properties in the schema, "
                "references followed"
            )
        if node.height > self.limits.schema_depth:
            raise SchemaRefused(
                f"{_where(pointer)}: subschemas nested deeper than {self.limits.schema_depth} levels"
            )
        if node.hops > self.limits.ref_hops:
            raise SchemaRefused(
                f"{_where(pointer)}.$ref: more than {self.limits.ref_hops} references in a chain"
            )
        self.done[pointer] = node
        return node

    def build(self, raw: Any, pointer: str) -> _Node:
        here = _where(pointer)
        if isinstance(raw, bool):
            return _Node(pointer, always=raw)
        if not isinstance(raw, dict):
            raise SchemaRefused(f"{here}: a schema must be an object or a boolean")
        node = _Node(pointer)
        for key in raw:
            if key in _IDENTITY:
                raise SchemaRefused(
                    f"{here}.{key}: not supported; schemas are never identified or fetched by URI"
                )
            if key == "$schema":
                if pointer != "":
                    raise SchemaRefused(f"{here}.$schema: accepted only at the root")
                if not isinstance(raw[key], str) or raw[key] not in KNOWN_DRAFTS:
                    raise SchemaRefused(
                        f"{here}.$schema: {str(raw[key])[:80]!r} is not a known JSON Schema draft URI"
                    )
            elif key not in _ASSERTIONS and key not in _ANNOTATIONS and key not in _CONTAINERS:
                raise SchemaRefused(f"{here}: keyword {key[:60]!r} is not supported (see docs/structured.md)")
        self.annotations(raw, node, here)
        for container in _CONTAINERS & raw.keys():
            defs = raw[container]
            if not isinstance(defs, dict):
                raise SchemaRefused(f"{here}.{container}: must be an object of schemas")
            for name, sub in defs.items():
                self.node(sub, f"{pointer}/{container}/{_escape(name)}")
        if "type" in raw:
            node.types = self.types(raw["type"], here)
        self.object_keywords(raw, node, pointer, here)
        if "items" in raw:
            if isinstance(raw["items"], list):
                raise SchemaRefused(f"{here}.items: an array of schemas (tuple validation) is not supported")
            node.items = self.node(raw["items"], f"{pointer}/items")
        if "enum" in raw:
            values = raw["enum"]
            if not isinstance(values, list) or not values:
                raise SchemaRefused(f"{here}.enum: must be a non-empty array")
            if len(values) > self.limits.enum_values:
                raise SchemaRefused(f"{here}.enum: more than {self.limits.enum_values} values")
            node.enum = tuple(values)
        if "const" in raw:
            node.const = raw["const"]
        node.min_length = self.count(raw, "minLength", here)
        node.max_length = self.count(raw, "maxLength", here)
        node.min_items = self.count(raw, "minItems", here)
        node.max_items = self.count(raw, "maxItems", here)
        for key, attr in (
            ("minimum", "minimum"),
            ("maximum", "maximum"),
            ("exclusiveMinimum", "exclusive_minimum"),
            ("exclusiveMaximum", "exclusive_maximum"),
        ):
            if key in raw:
                if not _is_number(raw[key]):
                    hint = (
                        " (the draft-04 boolean form is not supported)" if isinstance(raw[key], bool) else ""
                    )
                    raise SchemaRefused(f"{here}.{key}: must be a number{hint}")
                setattr(node, attr, raw[key])
        if "pattern" in raw:
            self.pattern_count += 1
            if self.pattern_count > self.limits.patterns:
                raise SchemaRefused(
                    f"{here}.pattern: more than {self.limits.patterns} patterns in the schema"
                )
            if not isinstance(raw["pattern"], str):
                raise SchemaRefused(f"{here}.pattern: must be a string")
            try:
                node.pattern = kernels.Pattern(raw["pattern"])
            except ValueError as exc:
                raise SchemaRefused(f"{here}.pattern: {exc}") from None
        if "$ref" in raw:
            target_pointer, target = self.resolve(raw["$ref"], pointer)
            node.ref = self.node(target, target_pointer)
        return node

    @staticmethod
    def annotations(raw: dict[str, Any], node: _Node, here: str) -> None:
        for key in ("title", "description", "$comment", "format"):
            if key in raw and not isinstance(raw[key], str):
                raise SchemaRefused(f"{here}.{key}: must be a string")
        if "examples" in raw and not isinstance(raw["examples"], list):
            raise SchemaRefused(f"{here}.examples: must be an array")
        node.title = raw.get("title")
        node.description = raw.get("description")

    @staticmethod
    def types(value: Any, here: str) -> frozenset[str]:
        names = value if isinstance(value, list) else [value]
        if not names or not all(isinstance(n, str) and n in TYPE_NAMES for n in names):
            raise SchemaRefused(
                f"{here}.type: must be one of {', '.join(sorted(TYPE_NAMES))}, or a non-empty list of them"
            )
        if len(set(names)) != len(names):
            raise SchemaRefused(f"{here}.type: lists a type twice")
        return frozenset(names)

    def object_keywords(self, raw: dict[str, Any], node: _Node, pointer: str, here: str) -> None:
        if "properties" in raw:
            props = raw["properties"]
            if not isinstance(props, dict):
                raise SchemaRefused(f"{here}.properties: must be an object of schemas")
            self.property_count += len(props)
            if self.property_count > self.limits.properties:
                raise SchemaRefused(
                    f"{here}.properties: more than {self.limits.properties} properties in the schema"
                )
            node.properties = {
                name: self.node(sub, f"{pointer}/properties/{_escape(name)}") for name, sub in props.items()
            }
        if "required" in raw:
            req = raw["required"]
            if (
                not isinstance(req, list)
                or not all(isinstance(r, str) for r in req)
                or len(set(req)) != len(req)
            ):
                raise SchemaRefused(f"{here}.required: must be an array of distinct property names")
            if len(req) > self.limits.properties:
                raise SchemaRefused(f"{here}.required: more than {self.limits.properties} names")
            node.required = tuple(req)
        if "additionalProperties" in raw:
            if not isinstance(raw["additionalProperties"], bool):
                raise SchemaRefused(f"{here}.additionalProperties: only true or false is supported")
            node.additional = raw["additionalProperties"]

    @staticmethod
    def count(raw: dict[str, Any], key: str, here: str) -> int | None:
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SchemaRefused(f"{here}.{key}: must be a non-negative integer")
        return value


# An array index in a JSON pointer (RFC 6901): ASCII digits, no leading zero. str.isdigit() also took
# "²", which int() refuses (a 500), and "01" or an Arabic-Indic "1" named the member "1" names.
_INDEX = re.compile(r"0|[1-9][0-9]*")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _type_of(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else None
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _has_type(value: Any, types: frozenset[str]) -> bool:
    kind = _type_of(value)
    if kind is None:
        return False
    if kind in types:
        return True
    if kind == "integer" and "number" in types:
        return True
    return kind == "number" and "integer" in types and float(value).is_integer()


def _show(value: Any) -> str:
    """A short rendering of a value for a reason: scalars as JSON, containers by their type."""
    kind = _type_of(value)
    if kind in ("array", "object") or kind is None:
        return kind or type(value).__name__
    try:
        text = json.dumps(value, ensure_ascii=False)
    except ValueError:  # an integer too long to print
        return "a number"
    return text if len(text) <= 40 else text[:37] + "..."


class StructuredSchema:
    """A compiled schema of the supported subset. Immutable; safe to share between threads."""

    def __init__(self, root: _Node, raw: Any, limits: Limits) -> None:
        self._root = root
        self.raw = raw
        self.limits = limits

    def validate(self, value: Any) -> list[str]:
        """Why ``value`` does not satisfy the schema (``[]`` when it does), at most ``limits.reasons``.

        Each reason reads ``<where>: <why>``, ``where`` a path like ``value.pets[2]``. Iterative;
        each element of ``value`` is checked against at most ``ref_hops + 1`` subschemas.
        """
        return _validate(self._root, value, self.limits.reasons)


def _validate(root: _Node, value: Any, cap: int) -> list[str]:
    reasons: list[str] = []
    pending: list[tuple[kernels.Pattern, str, str]] = []  # (pattern, text, where): matched in batches
    stack: list[tuple[_Node, Any, str]] = [(root, value, "value")]
    while stack and len(reasons) < cap:
        node, item, where = stack.pop()
        if node.ref is not None:
            stack.append((node.ref, item, where))
        if node.always is not None:
            if not node.always:
                reasons.append(f"{where}: no value is allowed here (schema false)")
            continue
        if node.types is not None and not _has_type(item, node.types):
            reasons.append(f"{where}: {_show(item)} is not of type {' or '.join(sorted(node.types))}")
            continue
        if node.enum is not None and not any(_json_equal(item, option) for option in node.enum):
            reasons.append(f"{where}: {_show(item)} is not one of the enum values")
        if node.const is not _MISSING and not _json_equal(item, node.const):
            reasons.append(f"{where}: {_show(item)} is not the const value")
        if isinstance(item, str):
            _check_string(node, item, where, reasons, pending)
        elif _is_number(item):
            _check_number(node, item, where, reasons)
        elif isinstance(item, list):
            if node.min_items is not None and len(item) < node.min_items:
                reasons.append(f"{where}: fewer than {node.min_items} items")
            if node.max_items is not None and len(item) > node.max_items:
                reasons.append(f"{where}: more than {node.max_items} items")
            if node.items is not None:
                stack.extend((node.items, sub, f"{where}[{i}]") for i, sub in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            for name in node.required:
                if name not in item:
                    reasons.append(f"{where}: required property {name!r} is missing")
            for name, sub in item.items():
                child = node.properties.get(name)
                if child is not None:
                    stack.append((child, sub, f"{where}.{name}"))
                elif not node.additional:
                    reasons.append(f"{where}: property {str(name)[:60]!r} is not allowed")
    by_pattern: dict[int, list[tuple[kernels.Pattern, str, str]]] = {}
    for entry in pending:
        by_pattern.setdefault(id(entry[0]), []).append(entry)
    for entries in by_pattern.values():
        results = entries[0][0].matches([text for _, text, _ in entries])
        reasons.extend(
            f"{where}: does not match the pattern {pattern.source!r}"
            for (pattern, _, where), ok in zip(entries, results, strict=True)
            if not ok
        )
    return reasons[:cap]


def _check_string(
    node: _Node, item: str, where: str, reasons: list[str], pending: list[tuple[kernels.Pattern, str, str]]
) -> None:
    if node.min_length is not None and len(item) < node.min_length:
        reasons.append(f"{where}: shorter than {node.min_length} characters")
    if node.max_length is not None and len(item) > node.max_length:
        reasons.append(f"{where}: longer than {node.max_length} characters")
    if node.pattern is not None:
        pending.append((node.pattern, item, where))


def _check_number(node: _Node, item: float, where: str, reasons: list[str]) -> None:
    if isinstance(item, float) and not math.isfinite(item):
        reasons.append(f"{where}: not a finite number")
        return
    if node.minimum is not None and item < node.minimum:
        reasons.append(f"{where}: less than the minimum {node.minimum}")
    if node.maximum is not None and item > node.maximum:
        reasons.append(f"{where}: greater than the maximum {node.maximum}")
    if node.exclusive_minimum is not None and item <= node.exclusive_minimum:
        reasons.append(f"{where}: not greater than {node.exclusive_minimum}")
    if node.exclusive_maximum is not None and item >= node.exclusive_maximum:
        reasons.append(f"{where}: not less than {node.exclusive_maximum}")


def compile_schema(raw: Any, limits: Limits = LIMITS) -> StructuredSchema:
    """Compile a caller's schema, or raise :class:`SchemaRefused` saying why it is refused.

    Never raises anything else for any JSON value (and refuses non-JSON values), never recurses
    without bound, never touches the network or the disk.
    """
    _check_document(raw, limits)
    compiler = _Compiler(raw, limits)
    try:
        root = compiler.node(raw, "")
    except RecursionError:  # unreachable under the depth limits; a refusal rather than a 500 if not
        raise SchemaRefused("schema: nested too deeply") from None
    return StructuredSchema(root, raw, limits)


# ------------------------------------------------------------------------------------------ filling


T = TypeVar("T")


# Not frozen: a schema over 20,000 Memories makes a fact of each, and a frozen dataclass took 22.6 ms
# to make them against 8.6 for a slotted one. Nothing here changes a fact.
@dataclass(slots=True)
class Fact:
    """One piece of cited material a property may be filled from.

    ``source`` is opaque here (the caller maps it back to a Memory id or a citation id).
    ``attribute``/``value`` are a Memory's normalized predicate and value when it has them;
    ``owner_is_self`` says the Brain's self is whose fact it is; ``valid_from`` (Unix seconds)
    orders facts, newest preferred; ``negated`` marks "no longer"/"not" facts, which never supply a
    value (only a ``false`` boolean).
    """

    text: str
    source: str
    attribute: str | None = None
    value: str | None = None
    owner_is_self: bool = False
    valid_from: float = 0.0
    negated: bool = False


class LazyFacts(Generic[T]):
    """Facts made only as :func:`fill` reads them: a schema on a Brain of 20,000 Memories viewed every
    Memory and made it a fact (about 45 ms) to read the newest few hundred.

    ``items`` are anything; ``times[i]`` is the time the fact of ``items[i]`` would have (Unix
    seconds), ``attributes[i]`` its attribute, and ``make(items)`` the facts of ``items``, in their
    order, None for one that may not be read. Items are read newest first, equal times in their order,
    in blocks of :data:`LAZY_FACTS_BLOCK` and then twice as many, each made at most once.
    """

    def __init__(
        self,
        items: Sequence[T],
        *,
        times: Sequence[float],
        attributes: Sequence[str | None],
        make: Callable[[list[T]], list[Fact | None]],
    ) -> None:
        if not len(items) == len(times) == len(attributes):
            raise ValueError(f"{len(items)} items, {len(times)} times and {len(attributes)} attributes")
        self._items = items
        self._attributes = attributes
        self._make = make
        # reverse=True keeps equal times in their order, as fill()'s sort does
        self._newest = sorted(range(len(items)), key=times.__getitem__, reverse=True)
        self._by_attribute: dict[str, list[int]] | None = None
        self._made: dict[int, Fact | None] = {}

    def newest(self) -> Iterator[tuple[int, Fact]]:
        """(place among the items, fact) of every item that may be read, newest first."""
        return self._read(self._newest)

    def newest_with(self, attribute: str) -> Iterator[tuple[int, Fact]]:
        """As :meth:`newest`, of the items with ``attribute`` only."""
        if self._by_attribute is None:
            self._by_attribute = {}
            attributes = self._attributes
            for i in self._newest:
                if (name := attributes[i]) is not None:
                    self._by_attribute.setdefault(name, []).append(i)
        return self._read(self._by_attribute.get(attribute, []))

    def _read(self, order: list[int]) -> Iterator[tuple[int, Fact]]:
        start, size = 0, LAZY_FACTS_BLOCK
        while start < len(order):
            block = order[start : start + size]
            unmade = [i for i in block if i not in self._made]
            if unmade:
                made = self._make([self._items[i] for i in unmade])
                if len(made) != len(unmade):
                    raise ValueError(f"make returned {len(made)} facts for {len(unmade)} items")
                self._made.update(zip(unmade, made, strict=True))
            for i in block:
                fact = self._made[i]
                if fact is not None:
                    yield i, fact
            start, size = start + size, size * 2


@dataclass(frozen=True)
class FillResult:
    """``value`` holds only the properties some fact supports, each valid against its schema;
    ``provenance`` maps each filled property (a dotted path for nested objects) to the sources
    that support it; ``unfilled`` lists the rest (for the Context's unknowns) and
    ``missing_required`` the required ones among them."""

    value: dict[str, Any]
    provenance: dict[str, list[str]]
    unfilled: list[str]
    missing_required: list[str]


# Property names (normalized: lowercase words joined by "_") to the extractor's attributes
# (brainstore.derive: lives_in, works_at, job, studies_at, from, age, married_to, has_pet,
# birthday, name, likes). The attributes' own names map to themselves.
SYNONYMS: dict[str, str] = {
    **{k: "lives_in" for k in ("city", "location", "home", "residence", "home_city", "current_city", "hometown_now", "address", "lives", "place")},
    **{k: "works_at" for k in ("employer", "company", "workplace", "organization", "organisation", "works_for", "work_place")},
    **{k: "job" for k in ("occupation", "role", "profession", "job_title", "title", "position", "work")},
    **{k: "studies_at" for k in ("school", "university", "college", "alma_mater", "studies")},
    **{k: "from" for k in ("hometown", "origin", "home_town", "birthplace", "country_of_origin", "comes_from")},
    **{k: "married_to" for k in ("spouse", "partner", "husband", "wife", "married")},
    **{k: "has_pet" for k in ("pet", "pets", "animal", "animals", "has_pets")},
    **{k: "birthday" for k in ("birth_date", "date_of_birth", "dob", "born", "born_on")},
    **{k: "likes" for k in ("likes", "like", "interests", "interest", "hobby", "hobbies", "favorite", "favourite", "favorites", "favourites", "preferences")},
    **{k: "name" for k in ("full_name", "first_name", "called")},
    **{k: "age" for k in ("years_old", "age_years")},
}  # fmt: skip
ATTRIBUTES = frozenset({"lives_in", "works_at", "job", "studies_at", "from", "age", "married_to", "has_pet", "birthday", "name", "likes"})  # fmt: skip

# Cosine similarity (all-MiniLM-L6-v2, L2-normalized) a candidate phrase needs with a property's
# name and description to fill it, and how far below the best a newer candidate may score and
# still be preferred. Measured on the examples in tests/unit/test_structured.py; see docs/structured.md.
SIMILARITY_THRESHOLD = 0.42
RECENCY_MARGIN = 0.1
# The embedding call is the cost of a fill: about 4 ms a phrase on this 2-core machine when it is
# busy. The newest facts are mined first and distinct phrases are embedded once.
MAX_FACTS = 32  # newest facts mined for phrases
MAX_CANDIDATES = 64  # distinct phrases embedded per fill, at most
# What one property reads, whatever the Brain holds: a schema of 64 properties on a Brain of 20,000
# Memories read each of them for every property (a boolean's words by two regular expressions, an
# attribute's value coerced to the property's type), and an array compared every value with every
# other: 2.3 s of CPU for 64 booleans, 12 s for one array of cities and 92 s for eight.
MAX_PROPERTY_FACTS = 512  # newest facts a property reads: those of its attribute, or for a boolean's words
MAX_ARRAY_VALUES = 64  # distinct values an array takes from attributes, at most (then its maxItems)
# Characters of the newest facts' texts that booleans' words and phrases are looked for in: a Memory's
# statement may be 175,000 characters (a message of one unpunctuated sentence), and 64 booleans over 40
# such statements took 19 s.
MINED_CHARS = 20_000
# Items a LazyFacts makes facts of at once, first: about what one property reads.
LAZY_FACTS_BLOCK = 512

_WORD = re.compile(r"[^\W_]+(?:[-'\u2019][^\W_]+)*")
_CLAUSE = re.compile(
    r"[.!?;:,()\[\]\"\u201c\u201d]+|\s[-\u2013\u2014]\s|\b(?:and|or|but|because|so|while|when|then)\b", re.I
)
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "a dozen": 12, "dozen": 12,
}  # fmt: skip
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?!\w)|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.I)


def _word_list(text: str) -> list[str]:
    return text.split()


_FUNCTION_WORDS = frozenset(
    _word_list(
        """a an the this that these those my your his her its our their mine yours hers ours theirs i me you he she it we they
    them us myself yourself himself herself itself ourselves themselves who whom whose which what where when why how
    there here some any no not never all both each every few many much more most other such own same so than too very
    just also only even still already again ever yet now then once soon lately recently really quite rather pretty
    almost about above after against along among around as at before behind below beneath beside between beyond by
    down during except for from in inside into like near of off on onto out outside over past since through to toward
    towards under until up upon with within without and or but nor because if while although though whether
    am is are was were be been being have has had having do does did doing done will would shall should can could may
    might must ought gonna wanna lot lots bit thing things stuff something anything nothing everything someone anyone
    everyone day days week weeks month months year years today yesterday tomorrow tonight ago last next new old good
    great nice little big well yes yeah ok okay oh hey hi hello thanks thank please sure maybe probably definitely
    actually currently finally honestly recently usually always often sometimes"""
    )
)
_VERBS = _word_list(
    """be have do go get make take start begin learn move live work love like enjoy play want need try use say tell
think know feel see look come give find keep let put seem call ask become leave bring hold run stop visit buy join finish
plan hope study teach read write watch listen eat drink cook travel adopt own practice practise decide spend meet share
hate prefer miss help show grow change turn open pick pay send talk speak drive fly win lose build hear sit stand wear
sell choose graduate retire marry divorce relocate settle quit celebrate attend spend rent ride walk bike swim sing
dance paint draw climb hike bake fix clean wash sleep wake wait stay return arrive reach happen include allow create
develop manage lead follow carry catch teach train care feel"""
)
_IRREGULAR = _word_list(
    """went gone got gotten made took taken began begun learnt did done had has was were been is am are said told
thought knew known felt saw seen came gave given found kept left brought held ran bought met spent taught wrote written
ate eaten drank drunk grew grown spoke spoken drove driven became paid sent chose chosen sold won lost built heard sat
stood wore worn flew flown"""
)


def _inflections(verb: str) -> Iterator[str]:
    yield verb
    yield verb + ("es" if verb.endswith(("s", "sh", "ch", "x", "o")) else "s")
    stem = verb[:-1] if verb.endswith("e") and not verb.endswith("ee") else verb
    yield stem + "ing"
    yield verb + ("d" if verb.endswith("e") else "ed")
    if (
        len(verb) <= 4
        and verb[-1] not in "aeiouwxy"
        and verb[-2:-1] in tuple("aeiou")
        and verb[-3:-2] not in tuple("aeiou")
    ):
        yield verb + verb[-1] + "ing"
        yield verb + verb[-1] + "ed"
    if verb.endswith("y") and verb[-2:-1] not in tuple("aeiou"):
        yield verb[:-1] + "ies"
        yield verb[:-1] + "ied"


_STOP = _FUNCTION_WORDS | {form for verb in _VERBS for form in _inflections(verb)} | frozenset(_IRREGULAR)
_BOOLEAN_CUE = r"(?:am|is|are|was|were|'m|\u2019m|'s|\u2019s|'re|\u2019re|have|has|own|owns|got)"
_NEGATION = re.compile(r"\b(?:not|no|never|n't|n\u2019t|no\s+longer|anymore)\b", re.I)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w for w in re.split(r"[^0-9A-Za-z]+", spaced.lower()) if w]


_NAMED = frozenset({"married_to", "name"})  # attributes whose values are people's names
_SPELLING = {
    "favourite": "favorite",
    "colour": "color",
    "neighbour": "neighbor",
    "organisation": "organization",
}


def _stems(word: str) -> set[str]:
    """Crude stems, for telling whether a phrase repeats a property's name: "named" ~ "name",
    and words sharing their first five letters ("allergic" ~ "allergy")."""
    word = _SPELLING.get(word, word)
    stems = {word[:5] if len(word) > 5 else word}
    stems.update(
        word[: -len(suffix)]
        for suffix in ("ing", "ed", "es", "s", "d")
        if word.endswith(suffix) and len(word) - len(suffix) >= 3
    )
    return stems


def _attribute_for(name: str) -> str | None:
    key = "_".join(_words(name))
    if key in ATTRIBUTES:
        return key
    if key in SYNONYMS:
        return SYNONYMS[key]
    for prefix in ("current_", "my_", "user_", "self_", "favorite_", "favourite_"):
        if key.startswith(prefix) and key[len(prefix) :] in SYNONYMS:
            return SYNONYMS[key[len(prefix) :]]
    return None


@dataclass
class _Slot:
    """A leaf property to fill: where it goes, what it is, what may fill it."""

    path: tuple[str, ...]
    node: _Node
    kind: str  # string | number | integer | boolean | enum | array
    item_kind: str | None  # an array's item kind (string, number, integer, enum)
    text: str  # what the property means, for embedding
    attribute: str | None

    @property
    def key(self) -> str:
        return ".".join(self.path)


def _chain(node: _Node) -> Iterator[_Node]:
    """The node and the nodes it references, in order (bounded by the compiler's ref_hops)."""
    current: _Node | None = node
    while current is not None:
        yield current
        current = current.ref


def _first(node: _Node, attr: str) -> Any:
    for link in _chain(node):
        value = getattr(link, attr)
        if value is not None and value != {}:
            return value
    return None


def _kind_of(node: _Node) -> str | None:
    """The one kind of value a slot takes, or None when it cannot be filled from text."""
    if _first(node, "enum") is not None:
        return "enum"
    types = _first(node, "types") or frozenset()
    for kind in ("array", "integer", "number", "boolean", "string"):
        if kind in types:
            return kind
    if any(link.const is not _MISSING for link in _chain(node)):
        return None
    return "string" if not types else None


def _slots(
    node: _Node, path: tuple[str, ...], out: list[_Slot], objects: list[tuple[tuple[str, ...], _Node]]
) -> None:
    """Leaf slots under an object node (nested objects recurse; depth is bounded by the compiler)."""
    objects.append((path, node))
    props: dict[str, _Node] = {}
    for link in reversed(list(_chain(node))):
        props.update(link.properties)
    for name, child in props.items():
        child_types = _first(child, "types") or frozenset()
        child_props = any(link.properties for link in _chain(child))
        if child_props and (not child_types or "object" in child_types):
            _slots(child, (*path, name), out, objects)
            continue
        kind = _kind_of(child)
        if kind is None:
            out.append(_Slot((*path, name), child, "none", None, name, None))
            continue
        item_kind = None
        if kind == "array":
            items = _first(child, "items")
            item_kind = _kind_of(items) if items is not None else "string"
            if item_kind in ("array", "boolean", None):
                kind = "none"
        words = " ".join(_words(name)) or name
        described = _first(child, "description") or _first(child, "title")
        text = f"{words}: {described}" if described else words
        out.append(_Slot((*path, name), child, kind, item_kind, text[:300], _attribute_for(name)))


def _parse_number(text: str) -> float | int | None:
    low = text.lower()
    if low in _NUMBER_WORDS:
        return _NUMBER_WORDS[low]
    try:
        number = float(text.replace(",", ""))
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _recase(value: str, text: str) -> str:
    """The attribute's lowercased value as the fact's text spells it ("lisbon" -> "Lisbon")."""
    found = re.search(re.escape(value), text, re.I)
    return found.group(0) if found else value


def _coerce(kind: str, node: _Node, raw: str) -> Any:
    """``raw`` as a value of ``kind`` valid against ``node``, or None."""
    value: Any
    if kind == "enum":
        options = _first(node, "enum") or ()
        folded = raw.casefold().strip()
        value = next((o for o in options if isinstance(o, str) and o.casefold() == folded), None)
        if value is None:
            value = next((o for o in options if _is_number(o) and _parse_number(raw) == o), None)
        if value is None:
            return None
    elif kind in ("number", "integer"):
        match = _NUMBER.search(raw)
        value = _parse_number(match.group(0)) if match else None
        if value is None or (kind == "integer" and not float(value).is_integer()):
            return None
        value = int(value) if kind == "integer" else value
    elif kind == "string":
        value = raw.strip()
        if not value:
            return None
    else:
        return None
    return value if not _validate(node, value, 1) else None


@dataclass
class _Candidate:
    phrase: str  # what is embedded
    raw: str  # what becomes the value
    fact: int  # index into the ordered facts
    numeric: bool


def _candidates(facts: list[Fact], exclude: set[str]) -> list[_Candidate]:
    """Noun-like phrases and numbers with the words after them, newest fact first.

    A phrase is a run of content words (not function words, common verbs or numbers): the run's
    last three words (a head-final noun phrase: "golden retriever"), its last two, and each word
    alone. At most :data:`MAX_CANDIDATES` distinct phrases; a phrase seen in an older fact again is
    kept once per fact, since each fact is its own source.
    """
    out: list[_Candidate] = []
    distinct: set[str] = set()
    seen: set[tuple[str, int]] = set()

    def add(phrase: str, raw: str, index: int, numeric: bool) -> None:
        key = phrase.casefold()
        if (key, index) in seen or (key not in distinct and len(distinct) >= MAX_CANDIDATES):
            return
        seen.add((key, index))
        distinct.add(key)
        out.append(_Candidate(phrase, raw, index, numeric))

    for index, fact in enumerate(facts):
        for clause in _CLAUSE.split(fact.text):
            run: list[str] = []
            for word in [*_WORD.findall(clause), ""]:
                if (
                    word
                    and word.lower() not in _STOP
                    and word.casefold() not in exclude
                    and not _NUMBER.fullmatch(word)
                ):
                    run.append(word)
                    continue
                for phrase in dict.fromkeys([" ".join(run[-3:]), " ".join(run[-2:]), *run]):
                    if phrase:
                        add(phrase, phrase, index, False)
                run = []
            for match in _NUMBER.finditer(clause):
                after = _WORD.findall(clause[match.end() :])[:2]
                add(" ".join([match.group(0), *after]), match.group(0), index, True)
    return out


def _boolean(slot: _Slot, attributed: Fact | None, facts: list[Fact]) -> tuple[bool, Fact] | None:
    """A boolean only when a fact states it outright: the newest fact of an attribute the property maps
    to (has_pet, married_to: ``attributed``) present or negated, or "<be/have> [not] [a] <term>" for the
    property's own term ("is_vegan": vegan) in one of ``facts``."""
    if attributed is not None:
        return (not attributed.negated), attributed
    words = _words(slot.path[-1])
    while words and words[0] in ("is", "has", "have", "owns", "can", "does", "likes", "was"):
        words = words[1:]
    if not words:
        return None
    term = r"\s+".join(re.escape(w) for w in words)
    cue = re.compile(rf"\b{_BOOLEAN_CUE}\s+((?:not|no|never|no\s+longer)\s+)?(?:an?\s+)?{term}\b", re.I)
    dont = re.compile(
        rf"\b(?:do|does|did)(?:n't|n\u2019t|\s+not)\s+(?:have|own)\s+(?:an?\s+|any\s+)?{term}", re.I
    )
    for fact in facts:
        if dont.search(fact.text):
            return False, fact
        found = cue.search(fact.text)
        if found:
            # The fact's negated flag comes from the same words ("not married"), so either says no.
            return (found.group(1) is None and not fact.negated), fact
    return None


def fill(
    schema: StructuredSchema,
    facts: Sequence[Fact],
    embed: Callable[[list[str]], np.ndarray],
    *,
    self_name: str | None = None,
    mine: Callable[[], LazyFacts[Any]] | None = None,
    others: Callable[[], LazyFacts[Any]] | None = None,
) -> FillResult:
    """Fill ``schema``'s properties from ``facts``; see the module docstring and docs/structured.md.

    The root must be an object schema with properties (else :class:`SchemaRefused`). Facts of the
    Brain's self are used when there are any (other people's facts would misattribute); otherwise
    all facts. Besides ``facts``, ``mine()`` gives the self's facts and ``others()`` other people's,
    both read only as far as the bounds below reach (:func:`_read_lazily`), and ``others()`` asked for
    only when no fact of the self's has words: a caller need not make a fact of every Memory of a
    Brain. Newest first. A property is filled from (1) a fact whose attribute its name maps to
    (:data:`SYNONYMS`), (2) for booleans, a fact stating it outright, (3) otherwise a phrase of a
    fact's text whose embedding is close enough (:data:`SIMILARITY_THRESHOLD`) to the property's
    name and description. ``embed`` is called at most once, with every text to embed.
    ``self_name`` is never offered as a phrase (a fact's subject is not its object).
    """
    root = schema._root  # this module owns the compiled form
    root_types = _first(root, "types")
    if (root_types is not None and "object" not in root_types) or not any(
        link.properties for link in _chain(root)
    ):
        raise SchemaRefused("schema: the root must be an object schema with properties to be filled")
    slots: list[_Slot] = []
    objects: list[tuple[tuple[str, ...], _Node]] = []
    _slots(root, (), slots, objects)
    _refuse_ambiguous_paths([s.path for s in slots] + [path for path, _ in objects if path])

    readable = [f for f in facts if _has_words(f)]
    if mine is not None:
        readable += _read_lazily(mine(), slots)
    if others is not None and not any(f.owner_is_self for f in readable):
        readable += _read_lazily(others(), slots)
    if any(f.owner_is_self for f in readable):
        readable = [f for f in readable if f.owner_is_self]
    ordered = sorted(readable, key=lambda f: -float(f.valid_from))
    positive = [f for f in ordered if not f.negated]
    # each property reads only the facts of its attribute, newest first
    with_value: dict[str, list[Fact]] = {}
    for fact in ordered:
        if fact.attribute is not None and fact.value:
            with_value.setdefault(fact.attribute, []).append(fact)

    stating = _leading_text(ordered[:MAX_PROPERTY_FACTS]) if any(s.kind == "boolean" for s in slots) else []

    chosen: dict[str, tuple[Any, list[str]]] = {}
    denied: set[str] = set()
    for slot in slots:
        attributed = with_value.get(slot.attribute, []) if slot.attribute is not None else []
        if slot.kind == "boolean":
            stated = _boolean(slot, attributed[0] if attributed else None, stating)
            found = (stated[0], [stated[1].source]) if stated else None
        else:
            found = _from_attributes(slot, [f for f in attributed if not f.negated][:MAX_PROPERTY_FACTS])
            if found is None and attributed and attributed[0].negated:
                # "I quit my job at Acme": the newest fact of the attribute denies it, so no phrase of
                # a passage (the same sentence's "job") may stand in for a value
                denied.add(slot.key)
        if found is not None:
            chosen[slot.key] = found

    wanted = [s for s in slots if s.key not in chosen and s.key not in denied and s.kind not in ("boolean", "none")]
    if wanted:
        exclude = {self_name.casefold()} if self_name else set()
        candidates = _candidates(_leading_text(positive[:MAX_FACTS]), exclude)
        if candidates:
            phrases = list(dict.fromkeys(c.phrase.casefold() for c in candidates))
            column = {phrase: i for i, phrase in enumerate(phrases)}
            vectors = np.asarray(embed([s.text for s in wanted] + phrases), dtype=np.float32)
            if vectors.shape[0] != len(wanted) + len(phrases):
                raise ValueError(
                    f"embed returned {vectors.shape[0]} vectors for {len(wanted) + len(phrases)} texts"
                )
            by_phrase = vectors[: len(wanted)] @ vectors[len(wanted) :].T
            similarity = by_phrase[:, [column[c.phrase.casefold()] for c in candidates]]
            for row, slot in enumerate(wanted):
                found = _from_phrases(slot, candidates, similarity[row], positive)
                if found is not None:
                    chosen[slot.key] = found

    result = _assemble(root, slots, objects, chosen)
    # Each property's value is valid, a nested object's as a whole too, but the root's own assertions (a
    # const, an enum, a false schema it references) were not checked: "ready" answered a value the
    # schema refuses. Missing required properties are the caller's to report.
    if not result.missing_required and (reasons := _validate(root, result.value, 1)):
        raise SchemaRefused(f"schema: no value from the cited material satisfies the schema ({reasons[0][:200]})")
    return result


def _refuse_ambiguous_paths(paths: list[tuple[str, ...]]) -> None:
    """Refuse two properties with one dotted path (a property "work.city" beside "city" in "work"): the
    value's citations and the unknowns name a property by it, and a value found for one was given to both."""
    named: dict[str, tuple[str, ...]] = {}
    for path in paths:
        other = named.setdefault(".".join(path), path)
        if other != path:
            raise SchemaRefused(
                f"schema: properties {' > '.join(other)[:80]!r} and {' > '.join(path)[:80]!r} have one dotted path, "
                f"{'.'.join(path)[:80]!r}"
            )


def _read_lazily(facts: LazyFacts[Any], slots: list[_Slot]) -> list[Fact]:
    """The facts of ``facts`` that fill() could read among all of them, in their order: the newest
    :data:`MAX_PROPERTY_FACTS` with words, and further back until :data:`MAX_FACTS` of them are not
    negated (the words of booleans, the phrases); of each property's attribute, the newest up to
    :data:`MAX_PROPERTY_FACTS` that are not negated and have a value. Any fact older than those is
    beyond every bound, whatever other facts add to them."""
    taken: dict[int, Fact] = {}
    read = positive = 0
    for place, fact in facts.newest():
        if not _has_words(fact):
            continue
        taken[place] = fact
        read, positive = read + 1, positive + (not fact.negated)
        if read >= MAX_PROPERTY_FACTS and positive >= MAX_FACTS:
            break
    for attribute in dict.fromkeys(s.attribute for s in slots if s.attribute is not None):
        kept = 0
        for place, fact in facts.newest_with(attribute):
            if _has_words(fact) and fact.value:
                taken[place] = fact
                kept += not fact.negated
                if kept >= MAX_PROPERTY_FACTS:
                    break
    return [taken[place] for place in sorted(taken)]


_BEFORE_LAST_SPACE = re.compile(r"(?s)(.*\S)\s")


def _leading_text(facts: list[Fact], chars: int = MINED_CHARS) -> list[Fact]:
    """The first of ``facts`` whose texts hold ``chars`` characters in all, the text that would pass the
    bound cut at its last space before it (never within a word)."""
    out: list[Fact] = []
    for fact in facts:
        if len(fact.text) > chars:
            head = _BEFORE_LAST_SPACE.match(fact.text, 0, chars + 1)
            if head is not None:
                out.append(replace(fact, text=head.group(1)))
            break
        out.append(fact)
        chars -= len(fact.text)
    return out


def _has_words(fact: Fact) -> bool:
    return isinstance(fact.text, str) and bool(fact.text.strip())


def _from_attributes(slot: _Slot, facts: list[Fact]) -> tuple[Any, list[str]] | None:
    if slot.attribute is None:
        return None
    kind = slot.item_kind if slot.kind == "array" else slot.kind
    node = _first(slot.node, "items") if slot.kind == "array" else slot.node
    if kind is None or node is None:
        return None
    values: list[Any] = []
    sources: list[str] = []
    for fact in facts:
        value = _coerce(kind, node, _recase(fact.value or "", fact.text))
        if value is None:
            continue
        if slot.kind != "array":
            return value, [fact.source]
        if not any(_json_equal(value, v) for v in values):
            values.append(value)
            sources.append(fact.source)
            if len(values) == MAX_ARRAY_VALUES:
                break
    return _as_array(slot, values, sources)


def _from_phrases(
    slot: _Slot, candidates: list[_Candidate], scores: np.ndarray, facts: list[Fact]
) -> tuple[Any, list[str]] | None:
    kind = slot.item_kind if slot.kind == "array" else slot.kind
    node = _first(slot.node, "items") if slot.kind == "array" else slot.node
    if kind is None or node is None:
        return None
    numeric = kind in ("number", "integer")
    own_words = {stem for w in _words(slot.path[-1]) for stem in _stems(w)}
    # A name ("pet_name", "partnerName", a spouse) is written capitalised: "cat" is close to
    # "pet name" and "wife" to "spouse", but neither is one.
    wants_name = "name" in _words(slot.path[-1]) or slot.attribute in _NAMED
    passing: list[tuple[float, int, Any]] = []
    for i, candidate in enumerate(candidates):
        score = float(scores[i])
        if candidate.numeric != numeric or score < SIMILARITY_THRESHOLD:
            continue
        # A phrase that repeats the property's own name ("favourite color" for favorite_color)
        # is close to it for that reason alone, and is not its value.
        if not numeric and any(own_words & _stems(w) for w in _WORD.findall(candidate.phrase.lower())):
            continue
        if wants_name and not candidate.raw[:1].isupper():
            continue
        value = _coerce(kind, node, candidate.raw)
        if value is not None:
            passing.append((score, candidate.fact, value))
    if not passing:
        return None
    best = max(score for score, _, _ in passing)
    # Newest first among the candidates close to the best; then the better score.
    passing.sort(key=lambda p: (p[0] < best - RECENCY_MARGIN, p[1], -p[0]))
    if slot.kind != "array":
        _, fact, value = passing[0]
        return value, [facts[fact].source]
    values: list[Any] = []
    sources: list[str] = []
    for _, fact, value in passing:
        if not any(_json_equal(value, v) for v in values) and not any(
            isinstance(value, str) and isinstance(v, str) and value.casefold() in v.casefold() for v in values
        ):
            values.append(value)
            sources.append(facts[fact].source)
    return _as_array(slot, values, sources)


def _as_array(slot: _Slot, values: list[Any], sources: list[str]) -> tuple[Any, list[str]] | None:
    max_items = _first(slot.node, "max_items")
    if max_items is not None:
        values, sources = values[:max_items], sources[:max_items]
    if not values or _validate(slot.node, values, 1):
        return None
    return values, list(dict.fromkeys(sources))


def _assemble(
    root: _Node,
    slots: list[_Slot],
    objects: list[tuple[tuple[str, ...], _Node]],
    chosen: dict[str, tuple[Any, list[str]]],
) -> FillResult:
    value: dict[str, Any] = {}
    provenance: dict[str, list[str]] = {}
    for slot in slots:
        if slot.key not in chosen:
            continue
        filled, sources = chosen[slot.key]
        if _validate(slot.node, filled, 1):
            continue
        target = value
        for part in slot.path[:-1]:
            target = target.setdefault(part, {})
        target[slot.path[-1]] = filled
        provenance[slot.key] = sources
    # A nested object that came out invalid as a whole (a required member missing) is dropped.
    for path, node in sorted(objects, key=lambda o: -len(o[0])):
        if not path:
            continue
        parent = value
        for part in path[:-1]:
            parent = parent.get(part, {})
        if path[-1] in parent and _validate(node, parent[path[-1]], 1):
            del parent[path[-1]]
            prefix = ".".join(path) + "."
            for key in [k for k in provenance if k.startswith(prefix)]:
                del provenance[key]
    unfilled = [s.key for s in slots if s.key not in provenance]
    required = [name for link in _chain(root) for name in link.required]
    missing = [name for name in dict.fromkeys(required) if name not in value]
    return FillResult(value, provenance, unfilled, missing)
