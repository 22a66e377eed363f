"""The strict JSON of every body (brainstore.api.validation.parse_json): what the text says of a value
before it is walked (may_be_refused) never lets through a value the walk refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore.api.validation import (
    MAX_DEPTH,
    MAX_DOUBLE_INT,
    check_json_value,
    check_parsed_json,
    may_be_refused,
    parse_json,
)
from brainstore.errors import BrainstoreError

# Strings of the characters that matter: NUL, surrogates (lone, paired), backslashes and quotes (which
# the text escapes), brackets (which must not count inside a string), what looks like an escape, and a
# run of digits as long as the largest integer a double reaches (which the text cannot tell from one).
_PIECES = st.sampled_from(
    ["a", "\x00", "\ud800", "\udc00", "\ud83d\ude00", "\U0001f600", "\\", '"', "[", "]", "{", "\\u0000", "\\ud800", "é", " ", "9" * 309]
)
# Integers at either side of the largest a double reaches, and far beyond it.
_BIG = st.sampled_from([10**307, MAX_DOUBLE_INT, MAX_DOUBLE_INT + 1, 10**400]).flatmap(lambda n: st.sampled_from([n, -n]))
_TEXTS = st.lists(_PIECES, max_size=6).map("".join)


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _BIG, _TEXTS),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_TEXTS, children, max_size=3)),
    max_leaves=12,
)


def _refused(value: Any) -> bool:
    try:
        check_json_value(value)
    except BrainstoreError:
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.integers(0, MAX_DEPTH + 2), st.booleans())
def test_a_value_the_walk_refuses_is_one_its_text_may_be_refused_for(value: Any, depth: int, ascii_only: bool) -> None:
    text = json.dumps(_nested(depth, value), ensure_ascii=ascii_only)
    sent = json.loads(text)  # escaped, two surrogates of a pair are one character
    if _refused(sent):
        assert may_be_refused(text)
    # the text a client sends is the text parse_json checks, whatever it escapes
    try:
        parsed = parse_json(text.encode("utf-8", "surrogatepass"))
    except BrainstoreError:
        assert _refused(sent)
    else:
        assert parsed == sent and not _refused(sent)


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.integers(0, MAX_DEPTH + 2))
def test_a_parsed_value_is_refused_exactly_as_the_walk_refuses_it(value: Any, depth: int) -> None:
    """check_parsed_json (an MCP tool's arguments) skips the walk when the text clears the value: it
    refuses what the walk refuses, with the same message, and nothing else."""
    nested = _nested(depth, value)
    try:
        check_json_value(nested)
    except BrainstoreError as walked:
        with pytest.raises(BrainstoreError) as screened:
            check_parsed_json(nested)
        assert screened.value.message == walked.message
    else:
        check_parsed_json(nested)


@pytest.mark.parametrize(
    ("text", "refusable"),
    [
        ('["plain", {"a": [1, 2]}]', False),
        ('"\\ud83d\\ude00"', False),  # an emoji escaped as its surrogate pair
        ('"\\\\ud800"', False),  # an escaped backslash, then the letters "ud800"
        ('"\\\\\\ud800"', True),  # an escaped backslash, then a lone surrogate
        ('"\\u0000"', True),
        ('"\\uDC00"', True),
        ('"\\udc00\\udc00"', True),  # two low halves are no pair
        ('"\\udc00\\ud800"', True),
        ('"\\ud800\\ud800\\udc00"', True),
        ('"' + "[" * (MAX_DEPTH + 5) + '"', False),  # brackets in a string nest nothing
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, False),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), True),
        (f"[{10**307}, {-(10**307)}]", False),  # 308 digits: within a double
        (f"[{MAX_DOUBLE_INT}]", True),  # as many digits as the largest: may be beyond it
        (f'"{10**400}"', True),  # a string of digits is not an integer, but the text cannot tell
    ],
)
def test_what_a_text_may_be_refused_for(text: str, refusable: bool) -> None:
    assert may_be_refused(text) is refusable


@pytest.mark.parametrize("max_depth", [1, MAX_DEPTH, MAX_DEPTH + 3])
def test_a_bigger_depth_limit_holds_exactly(max_depth: int) -> None:
    """An MCP message may nest its own levels above a tool's arguments (brainstore.mcp.server.MESSAGE_DEPTH)."""
    deepest, too_deep = "[" * max_depth + "]" * max_depth, "[" * (max_depth + 1) + "]" * (max_depth + 1)
    assert not may_be_refused(deepest, max_depth) and may_be_refused(too_deep, max_depth)
    assert parse_json(deepest.encode(), max_depth=max_depth) == _nested(max_depth - 1, [])
    with pytest.raises(BrainstoreError) as refused:
        parse_json(too_deep.encode(), max_depth=max_depth)
    assert refused.value.message.endswith(f": nests arrays or objects deeper than {max_depth} levels")
    with pytest.raises(BrainstoreError):
        check_json_value(_nested(max_depth, []), max_depth=max_depth)
    check_json_value(_nested(max_depth - 1, []), max_depth=max_depth)
