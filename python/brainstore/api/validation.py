"""Request validation: bodies and typed query fields, with ``<field>: <reason>`` messages.

Validation decides shape only; the service decides meaning. Everything here raises
invalid_request_body except an unknown content kind, which the spec names unknown_kind.
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import UTC, datetime
from typing import Any

import numpy as np

from brainstore.domain import UNSTORABLE
from brainstore.errors import error, invalid

# Patterns are applied with fullmatch: ``$`` also matches before a trailing newline, so "alice\n"
# would otherwise pass as a Slug and name a Brain distinct from "alice".
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:)(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")
# A character white space in no regex dialect: ECMA-262's (U+FEFF is white space there), Python's (U+001C-U+001F
# and U+0085) or Rust's. The contract's texts name the same set in their pattern, so a text this refuses as
# blank is one every validator of the contract calls blank.
NOT_BLANK = re.compile(r"[^\s\ufeff]")
#: Deepest nesting of arrays and objects accepted in any JSON body: far beyond any contract shape,
#: far below the recursion limit of anything that walks a value (serializers, fingerprints).
MAX_DEPTH = 64
KINDS = ("message", "document", "event", "fact", "correction")
ROLES = ("user", "assistant", "system", "other")
VISIBILITIES = ("local_only", "redacted_summary", "shareable")
TRUST = ("high", "normal", "low")
MAX_TEXT = 200_000
# A name (openapi.yaml's Text200): a Brain's, its self's, an owner filter's, a message's speaker. A
# speaker's name heads their evidence in every Context that cites them, and its words are filed to tell
# the Brain's speakers apart: 100 speakers of 140,000 characters made a Context of their Brain take 224
# ms over HTTP, the first 4.8 s.
MAX_NAME = 200


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def require_object(body: Any, field: str = "body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid(field, "must be a JSON object")
    return body


def reject_unknown(body: dict[str, Any], allowed: tuple[str, ...], prefix: str = "") -> None:
    for name in body:
        if name not in allowed:
            raise invalid(f"{prefix}{name}", f"unknown field; allowed: {', '.join(allowed)}")


def unstorable(text: str) -> str | None:
    """What in ``text`` no store can hold (see UNSTORABLE), or None."""
    found = UNSTORABLE.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "a lone UTF-16 surrogate"


_ESCAPES = {"a NUL character": "\\u0000", "a lone UTF-16 surrogate": "\\ud800-\\udfff"}


def refuse_unstorable(text: str, field: str) -> None:
    """400 naming ``field`` when ``text`` holds what no store can hold."""
    if (found := unstorable(text)) is not None:
        raise invalid(field, f"contains {found} ({_ESCAPES[found]})")


class _NotJson(ValueError):
    """A value Python's json would accept but JSON does not have: the reason is the message."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to inf
        raise _NotJson("a number is out of range of a double")
    return value


#: The largest integer a double reaches: an integer literal beyond it in magnitude is refused, as 1e400
#: is (a JavaScript or Go client, a double column, reads it as Infinity or fails). Taken, 10**400 in an
#: Object's value was held in every Context's trace that quoted it, and made its Brain's traces answer 500.
MAX_DOUBLE_INT = int(sys.float_info.max)
# Digits of MAX_DOUBLE_INT (309): an integer literal of fewer is within a double's range. JSON writes
# no leading zeros, so one of more is beyond it.
_DOUBLE_DIGITS = len(str(MAX_DOUBLE_INT))
# Every digit byte as "0", every other as " ": a run of _DOUBLE_DIGITS digits is then a substring.
_AS_DIGIT_RUNS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_RUN = b"0" * _DOUBLE_DIGITS
_BEYOND_DOUBLE = f"is an integer out of range of a double (at most {sys.float_info.max!r} in magnitude)"


def _holds_long_number(text: str) -> bool:
    """Whether ``text`` holds a run of as many digits as MAX_DOUBLE_INT, in a number or not, at C speed:
    1.5-2 ms a megabyte (a regex took 15-20 ms, more than parsing it)."""
    return len(text) >= _DOUBLE_DIGITS and _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(_AS_DIGIT_RUNS)


def _integer(literal: str) -> int:
    """An integer literal's int, for a text that holds a long run of digits. One of more digits than
    MAX_DOUBLE_INT has is beyond a double whatever they are, and stands for the first integer beyond
    one, which :func:`check_json_value` refuses naming its member (int() would convert no more than
    4300 digits: a ValueError that could name nothing)."""
    if len(literal) - literal.startswith("-") > _DOUBLE_DIGITS:
        return -(MAX_DOUBLE_INT + 1) if literal.startswith("-") else MAX_DOUBLE_INT + 1
    return int(literal)


def parse_json(raw: bytes, field: str = "body", *, max_depth: int = MAX_DEPTH) -> Any:
    """A body's strict JSON (:func:`parse_json_text`), decoded as json.loads decodes bytes: UTF-8, 16 or
    32, told by its first bytes."""
    return parse_json_text(json_text(raw, field), field, max_depth=max_depth)


def json_text(raw: bytes, field: str = "body") -> str:
    """The text of a JSON body, decoded as json.loads decodes bytes (lone surrogates kept, to be refused)."""
    try:
        return raw.decode(json.detect_encoding(raw), "surrogatepass")
    except UnicodeDecodeError:
        raise invalid(field, "is not valid JSON") from None


def parse_json_text(text: str, field: str = "body", *, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON: no NaN or Infinity, finite numbers, integers within a double's range, at most
    ``max_depth`` levels, no lone surrogates or NUL characters.

    Python's json accepts all of these (and raises RecursionError on deep nesting); each would
    otherwise fail later as a 500, or be stored and break every read that serializes it. A bigger
    ``max_depth`` is for a value that wraps a body in levels of its own (an MCP message's arguments).
    """
    # Integers are parsed at C speed unless the text may hold one beyond a double (a Python call for
    # each integer parsed a megabyte of small ones in three times the time).
    long_numbers = _holds_long_number(text)
    value = _loads(text, field, max_depth, long_numbers)
    if long_numbers or _may_be_refused_as_text(text, max_depth):
        check_json_value(value, field, max_depth=max_depth)
    return value


def load_json(text: str, field: str = "body", *, max_depth: int = MAX_DEPTH) -> Any:
    """The syntax part of :func:`parse_json_text`: its value, not yet checked for depth, lone
    surrogates, NUL characters or integers beyond a double (:func:`check_json_value`)."""
    return _loads(text, field, max_depth, _holds_long_number(text))


def _loads(text: str, field: str, max_depth: int, long_numbers: bool) -> Any:
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_integer if long_numbers else int
        )
    except RecursionError:
        raise invalid(field, f"nests arrays or objects deeper than {max_depth} levels") from None
    except _NotJson as exc:
        raise invalid(field, f"is not valid JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise invalid(field, f"is not valid JSON ({exc.msg} at {where})") from None
    except ValueError:  # none known: an integer of more digits than int() converts (4300) is _integer's
        raise invalid(field, "is not valid JSON") from None


# In JSON text: an escape of a NUL or of a UTF-16 surrogate (a pair as one match), after an even run of
# backslashes (an escaped backslash escapes nothing after it).
_SUSPECT_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*\\u(?:(?P<pair>[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|0000|[dD][89a-fA-F][0-9a-fA-F]{2})"
)
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# +1 for a byte that opens an array or object, -1 for one that closes it
_NESTING = np.zeros(256, dtype=np.int32)
_NESTING[list(b"[{")] = 1
_NESTING[list(b"]}")] = -1


def may_be_refused(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """Whether :func:`check_json_value` may refuse what the JSON ``text`` parses to, read off the text
    at C speed: a run of digits as long as a double's largest integer, a NUL or a lone surrogate,
    escaped or not, or brackets (outside strings) nested deeper than ``max_depth``. The check itself
    visits every member in Python: 0.2-0.3 s of the GIL for a megabyte of small members, which a body
    that holds none of these no longer pays (a surrogate pair, an emoji escaped, is none)."""
    return _holds_long_number(text) or _may_be_refused_as_text(text, max_depth)


def _may_be_refused_as_text(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """What :func:`may_be_refused` reads off the text, but a long run of digits (parse_json_text has
    looked for one already)."""
    if UNSTORABLE.search(text):
        return True
    if "\\u" in text and any(m.group("pair") is None for m in _SUSPECT_ESCAPE.finditer(text)):
        return True
    if text.count("[") + text.count("{") <= max_depth:
        return False
    outside = np.frombuffer(_JSON_STRING.sub("", text).encode("ascii", "replace"), dtype=np.uint8)
    return bool(outside.size) and int(np.cumsum(_NESTING[outside]).max()) > max_depth


def _path(field: str, parts: tuple[str | int, ...]) -> str:
    """``a.b[3]`` for a member of the body, ``field.a`` below another field; cut to stay readable."""
    text = "" if field == "body" and parts and isinstance(parts[0], str) else field
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text if len(text) <= 200 else text[:199] + "…"


def check_json_value(value: Any, field: str = "body", *, max_depth: int = MAX_DEPTH) -> None:
    """Depth (at most ``max_depth`` levels), lone surrogates, NUL characters and integers beyond a
    double of a parsed value, iteratively (no recursion to exhaust).

    The message names the offending member: ``value.items[3]: ...``. Each member is held with a link
    to its parent, and its path is spelled only when it is refused: a path built for every member
    took a megabyte of nested lists 0.4-0.9 s of the GIL. Numbers, booleans and nulls are not visited
    but an integer beyond a double, met as its parent is."""
    stack: list[tuple[Any, int, _Link]] = [(value, 0, None)]
    while stack:
        item, depth, link = stack.pop()
        if isinstance(item, str):
            if unstorable(item) is not None:
                refuse_unstorable(item, _path(field, _parts(link)))
            continue
        if isinstance(item, int) and abs(item) > MAX_DOUBLE_INT:
            raise invalid(_path(field, _parts(link)), _BEYOND_DOUBLE)
        if depth >= max_depth and isinstance(item, _CHECKED):
            raise invalid(_path(field, _parts(link)), f"nests arrays or objects deeper than {max_depth} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if (found := unstorable(key)) is not None:
                    raise invalid(field, f"contains a member name with {found}")
                if isinstance(child, _CHECKED) or (isinstance(child, int) and abs(child) > MAX_DOUBLE_INT):
                    stack.append((child, depth + 1, (link, key)))
        elif isinstance(item, list):
            stack.extend(
                (child, depth + 1, (link, index))
                for index, child in enumerate(item)
                if isinstance(child, _CHECKED) or (isinstance(child, int) and abs(child) > MAX_DOUBLE_INT)
            )


def check_parsed_json(value: Any, field: str = "body") -> None:
    """:func:`check_json_value` of a value parsed elsewhere (an MCP tool's arguments), walked only when
    its JSON text may be refused (:func:`may_be_refused`), as a body's is: for a megabyte of small
    members the text costs about 0.1 s in C, the walk about 0.3 s of Python holding the GIL."""
    try:
        text = json.dumps(value, ensure_ascii=False)  # a lone surrogate stays one, for the scan to find
    except (TypeError, ValueError, RecursionError):  # not JSON at all, or nested past any limit
        text = None
    if text is None or may_be_refused(text):
        check_json_value(value, field)


# A member's link: its parent's link and its key or index (None at the top).
_Link = tuple[Any, str | int] | None
_CHECKED = (str, dict, list)


def _parts(link: _Link) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))


def slug(value: Any, field: str) -> str:
    if not _is_str(value) or not SLUG.fullmatch(value):
        raise invalid(field, "must be a Slug: 1-64 letters, digits, '_', '-', '.', starting with a letter or digit")
    return value


def string(value: Any, field: str, *, max_length: int = 1000, allow_empty: bool = False) -> str:
    if not _is_str(value):
        raise invalid(field, "must be a string")
    if not allow_empty and not NOT_BLANK.search(value):
        raise invalid(field, "must not be empty")
    if len(value) > max_length:
        raise invalid(field, f"must be at most {max_length} characters")
    return value


def timestamp(value: Any, field: str) -> datetime:
    """An RFC 3339 date-time. A leap second (second 60, RFC 3339 section 5.6: "23:59:60Z", or in any
    minute, as the grammar allows) is the last instant of its minute that Python can hold: 23:59:60
    and 23:59:60.5 are 23:59:59.999999, in the offset given; before it, datetime refused second 60 and
    the request was a 400 "is not a valid calendar date-time"."""
    match = RFC3339.fullmatch(value) if _is_str(value) else None
    if match is None:
        raise invalid(field, "must be an RFC 3339 date-time with a time zone, e.g. 2024-05-01T12:00:00Z")
    head, second, fraction, offset = match.groups()
    if second == "60":
        second, fraction = "59", ".999999"
    elif fraction and len(fraction) > 7:  # Python keeps microseconds; drop finer digits
        fraction = fraction[:7]
    text = head + second + (fraction or "") + ("+00:00" if offset in ("Z", "z") else offset)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise invalid(field, "is not a valid calendar date-time") from None
    try:
        # 9999-12-31T23:59:59-23:59 is a valid date-time whose UTC instant is in year 10000: every
        # comparison or conversion downstream would overflow.
        parsed.astimezone(UTC)
    except OverflowError:
        raise invalid(field, "is out of range: in UTC it must fall between 0001-01-01 and 9999-12-31") from None
    return parsed


def integer(value: Any, field: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    # JSON does not tell 2000 from 2000.0, and JSON Schema's integer is any number without a fraction
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(field, "must be an integer")
    if minimum is not None and maximum is not None and not minimum <= value <= maximum:
        raise invalid(field, f"must be between {minimum} and {maximum}")
    if minimum is not None and value < minimum:
        raise invalid(field, f"must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise invalid(field, f"must be at most {maximum}")
    return value


def query_limit(raw: str | None, bounds: tuple[int, int, int]) -> int:
    default, low, high = bounds
    if raw is None:
        return default
    # its value in at most 9 digits (leading zeros are the same integer): int() refuses a string of more
    # than 4,300 (a 500), and no longer value is in bounds
    if not re.fullmatch(r"[0-9]+", raw) or len(raw.lstrip("0")) > 9:
        raise invalid("limit", f"must be an integer between {low} and {high}")
    return integer(int(raw.lstrip("0") or "0"), "limit", minimum=low, maximum=high)


IDEMPOTENCY_KEY_MAX = 255


def idempotency_key(raw: str | None) -> str | None:
    """The Idempotency-Key header as the contract bounds it (1-255 characters), None when absent. An
    empty key would make every keyed write of a project that sends one blank collide."""
    if raw is not None and not 1 <= len(raw) <= IDEMPOTENCY_KEY_MAX:
        raise invalid("Idempotency-Key", f"must be 1 to {IDEMPOTENCY_KEY_MAX} characters")
    if raw is not None:
        refuse_unstorable(raw, "Idempotency-Key")  # HTTP servers refuse a NUL in a header; WSGI may not
    return raw


# --- bodies -------------------------------------------------------------------------------------
def brain_create(body: Any) -> dict[str, Any]:
    body = require_object(body)
    reject_unknown(body, ("id", "name", "self"))
    if "id" not in body:
        raise invalid("id", "is required")
    out: dict[str, Any] = {"id": slug(body["id"], "id"), "name": None, "self": None}
    if body.get("name") is not None:
        out["name"] = string(body["name"], "name", max_length=MAX_NAME)
    if body.get("self") is not None:
        entity = require_object(body["self"], "self")
        reject_unknown(entity, ("type", "name"), "self.")
        for name in ("type", "name"):
            if name not in entity:
                raise invalid(f"self.{name}", "is required")
        out["self"] = {
            "type": string(entity["type"], "self.type", max_length=100),
            "name": string(entity["name"], "self.name", max_length=MAX_NAME),
        }
    return out


_CONTENT_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required, optional)
    "message": (("text",), ("role", "speaker")),
    "document": (("text",), ("title",)),
    "event": (("name",), ("text", "data")),
    "correction": (("corrects", "text"), ()),
}


def content(value: Any) -> dict[str, Any]:
    if _is_str(value):
        return {"kind": "document", "text": string(value, "content", max_length=MAX_TEXT)}
    if not isinstance(value, dict):
        raise invalid("content", "must be a string or an object with a kind")
    if "kind" not in value:
        raise invalid("content.kind", "is required")
    kind = value["kind"]
    if not _is_str(kind) or kind not in KINDS:
        raise error("unknown_kind", f"content.kind: {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "fact":
        structured = ("subject", "predicate", "value")
        if any(name in value for name in structured):
            reject_unknown(value, ("kind", *structured), "content.")
            for name in structured:
                if name not in value:
                    raise invalid(f"content.{name}", "is required in a structured fact")
                string(value[name], f"content.{name}", max_length=1000)
            return dict(value)
        required, optional = ("text",), ()
    else:
        required, optional = _CONTENT_FIELDS[kind]
    reject_unknown(value, ("kind", *required, *optional), "content.")
    for name in required:
        # null is no value: a correction with a null text had superseded the Memory it named
        if value.get(name) is None:
            raise invalid(f"content.{name}", "is required")
    for name in ("text", "title", "speaker", "name"):
        if name in value and value[name] is not None:
            string(value[name], f"content.{name}", max_length=MAX_NAME if name == "speaker" else MAX_TEXT)
    if kind == "message" and value.get("role") is not None and value["role"] not in ROLES:
        raise invalid("content.role", f"must be one of {', '.join(ROLES)}")
    if kind == "event" and value.get("data") is not None and not isinstance(value["data"], dict):
        raise invalid("content.data", "must be a JSON object")
    if kind == "correction" and (not _is_str(value["corrects"]) or not value["corrects"].startswith("mem_")):
        raise invalid("content.corrects", "must be a Memory id (mem_...)")
    return {k: v for k, v in value.items() if v is not None}


def record_create(body: Any) -> dict[str, Any]:
    body = require_object(body)
    reject_unknown(body, ("content", "source", "visibility", "occurred_at"))
    if "content" not in body:
        raise invalid("content", "is required")
    out: dict[str, Any] = {
        "content": content(body["content"]),
        "source": None,
        "visibility": "shareable",
        "occurred_at": None,
    }
    if body.get("source") is not None:
        source = require_object(body["source"], "source")
        reject_unknown(source, ("name", "external_id", "trust"), "source.")
        for name in ("name", "external_id"):
            if source.get(name) is not None:
                string(source[name], f"source.{name}", max_length=500)
        if source.get("trust") is not None and source["trust"] not in TRUST:
            raise invalid("source.trust", f"must be one of {', '.join(TRUST)}")
        out["source"] = {"trust": "normal", **{k: v for k, v in source.items() if v is not None}}
    if body.get("visibility") is not None:
        if body["visibility"] not in VISIBILITIES:
            raise invalid("visibility", f"must be one of {', '.join(VISIBILITIES)}")
        out["visibility"] = body["visibility"]
    if body.get("occurred_at") is not None:
        out["occurred_at"] = timestamp(body["occurred_at"], "occurred_at")
    return out


def object_accept(body: Any) -> dict[str, Any]:
    body = require_object(body)
    reject_unknown(body, ("type", "key", "value", "if_version"))
    for name in ("type", "key", "value"):
        if name not in body:
            raise invalid(name, "is required")
    out = {"type": slug(body["type"], "type"), "key": slug(body["key"], "key"), "value": body["value"]}
    if "if_version" in body:
        if body["if_version"] is None:
            out["if_version"] = None
        else:
            out["if_version"] = integer(body["if_version"], "if_version", minimum=0)
    return out


INCLUDE = ("evidence", "memories", "objects", "profile")
MODES = ("fast", "thorough")


def context_request(body: Any) -> dict[str, Any]:
    body = require_object(body)
    reject_unknown(body, ("query", "purpose", "as_of", "budget", "include", "schema", "filter", "mode"))
    if "query" not in body:
        raise invalid("query", "is required")
    out: dict[str, Any] = {
        "query": string(body["query"], "query", max_length=10_000),
        "purpose": "general",
        "as_of": None,
        "budget_tokens": 2000,
        "budget_ms": None,
        "include": ("evidence",),
        "schema": body.get("schema"),
        "filter": {},
        "mode": "fast",
    }
    if body.get("purpose") is not None:
        purpose = body["purpose"]
        if not _is_str(purpose) or not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", purpose):
            raise invalid("purpose", "must be one lowercase word naming a policy, e.g. general")
        out["purpose"] = purpose
    if body.get("as_of") is not None:
        out["as_of"] = timestamp(body["as_of"], "as_of")
    if body.get("budget") is not None:
        budget = require_object(body["budget"], "budget")
        reject_unknown(budget, ("tokens", "ms"), "budget.")
        if budget.get("tokens") is not None:
            out["budget_tokens"] = integer(budget["tokens"], "budget.tokens", minimum=1, maximum=100_000)
        if budget.get("ms") is not None:
            out["budget_ms"] = integer(budget["ms"], "budget.ms", minimum=1, maximum=60_000)
    if body.get("include") is not None:
        include = body["include"]
        if not isinstance(include, list) or not all(_is_str(i) and i in INCLUDE for i in include):
            raise invalid("include", f"must be an array of {', '.join(INCLUDE)}")
        out["include"] = tuple(dict.fromkeys(include))
    if body.get("schema") is not None and not isinstance(body["schema"], dict):
        raise invalid("schema", "must be a JSON object (a JSON Schema)")
    if body.get("mode") is not None:
        if body["mode"] not in MODES:
            raise invalid("mode", f"must be one of {', '.join(MODES)}")
        out["mode"] = body["mode"]
    if body.get("filter") is not None:
        flt = require_object(body["filter"], "filter")
        reject_unknown(flt, ("subjects", "owner", "sources", "since", "until", "sensitivity_lte"), "filter.")
        parsed: dict[str, Any] = {}
        for name in ("subjects", "sources"):
            if flt.get(name) is not None:
                if not isinstance(flt[name], list) or not all(_is_str(v) for v in flt[name]):
                    raise invalid(f"filter.{name}", "must be an array of strings")
                parsed[name] = list(flt[name])
        for name in ("since", "until"):
            if flt.get(name) is not None:
                parsed[name] = timestamp(flt[name], f"filter.{name}")
        if flt.get("owner") is not None:
            parsed["owner"] = string(flt["owner"], "filter.owner", max_length=MAX_NAME)
        if "sensitivity_lte" in flt:
            if flt["sensitivity_lte"] is not None and not _is_str(flt["sensitivity_lte"]):
                raise invalid("filter.sensitivity_lte", "must be a string or null")
            parsed["sensitivity_lte"] = flt["sensitivity_lte"]
        out["filter"] = parsed
    return out
