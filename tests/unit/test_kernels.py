"""Tests of brainstore.kernels, brainstore's door to the Rust core: the library brainstore_core,
re-exported (mirrors rust/core/src/*.rs). The library's own surface, stubs and GIL release are tested in
tests/unit/test_core_library.py."""

from __future__ import annotations

import array
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore import kernels

# The tokenizer loads its ranks on first use; no example should be timed against that. Other
# settings (max_examples) come from the profile the test run loaded.
KERNELS = settings(deadline=None)

SECRET = b"server-secret"


# --- tokens ---------------------------------------------------------------------------------


def test_tokenizer_name() -> None:
    assert kernels.TOKENIZER_NAME == "cl100k_base"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello world", 2),
        ("Hello, world!", 4),
        ("tiktoken is great!", 6),
        ("The quick brown fox jumps over the lazy dog.", 10),
        # Special-token strings in user text are ordinary characters.
        ("<|endoftext|>", 7),
    ],
)
def test_token_count_matches_cl100k(text: str, expected: int) -> None:
    assert kernels.token_count(text) == expected


def test_count_tokens_batch_matches_single() -> None:
    texts = ["hello world", "", "Hello, world!", "日本語のテキスト 🎉"]
    assert kernels.count_tokens(texts) == [kernels.token_count(t) for t in texts]
    assert kernels.count_tokens(()) == []


def test_truncate_keeps_whole_chars() -> None:
    text = "🎉🎉🎉 party"
    assert kernels.truncate_tokens(text, 1000) == text
    assert kernels.truncate_tokens(text, 0) == ""
    assert kernels.truncate_tokens(text, -3) == ""
    for n in range(kernels.token_count(text) + 1):
        cut = kernels.truncate_tokens(text, n)
        assert text.startswith(cut)
        assert kernels.token_count(cut) <= n


@KERNELS
@given(st.text(max_size=300), st.integers(min_value=0, max_value=80))
def test_truncate_is_a_fitting_prefix(text: str, max_tokens: int) -> None:
    cut = kernels.truncate_tokens(text, max_tokens)
    assert text.startswith(cut)
    assert kernels.token_count(cut) <= max_tokens
    if kernels.token_count(text) <= max_tokens:
        assert cut == text


# --- pack -----------------------------------------------------------------------------------


def test_pack_greedy_skip_and_continue() -> None:
    assert kernels.pack([8, 5, 3], [0.5, 0.9, 0.1], 9) == [1, 2]


def test_pack_ties_nan_and_negative_scores() -> None:
    assert kernels.pack([1, 1, 1, 1], [math.nan, 1.0, 1.0, -3.0], 10) == [1, 2, 3, 0]


def test_pack_nonpositive_budget() -> None:
    assert kernels.pack([1, 2], [1.0, 2.0], 0) == []
    assert kernels.pack([1, 2], [1.0, 2.0], -(2**70)) == []
    assert kernels.pack([1, 2], [1.0, 2.0], 2**70) == [1, 0]


def test_pack_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="token_counts"):
        kernels.pack([1, 2], [1.0], 5)
    with pytest.raises(ValueError, match="negative"):
        kernels.pack([1, -1], [1.0, 1.0], 5)
    with pytest.raises(ValueError, match="together"):
        kernels.pack([1, 2], [1.0, 2.0], 5, prev=[-1, 0])
    with pytest.raises(ValueError, match="runs"):
        kernels.pack([1, 2], [1.0, 2.0], 5, prev=[-1, 0], joined=[1, 3])


def test_pack_charges_a_run_member_its_joined_count() -> None:
    # 1 follows 0: once 0 is in, 1 costs 3 instead of 10, so both fit 13
    assert kernels.pack([10, 10], [0.9, 0.8], 13) == [0]
    assert kernels.pack([10, 10], [0.9, 0.8], 13, prev=[-1, 0], joined=[4, 3]) == [0, 1]


scores = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.5))


@KERNELS
@given(
    st.lists(st.tuples(st.integers(min_value=0, max_value=400), scores), max_size=60),
    st.integers(min_value=-5, max_value=3000),
)
def test_pack_never_exceeds_budget(items: list[tuple[int, float]], budget: int) -> None:
    counts = [c for c, _ in items]
    item_scores = [s for _, s in items]
    chosen = kernels.pack(counts, item_scores, budget)
    assert sum(counts[i] for i in chosen) <= max(budget, 0)
    assert len(set(chosen)) == len(chosen)
    assert chosen == kernels.pack(counts, item_scores, budget)


# --- watermark ------------------------------------------------------------------------------


def test_watermark_shape_and_round_trip() -> None:
    token = kernels.encode_watermark(SECRET, "brain-a", 42)
    assert token.startswith("wm_")
    assert "=" not in token
    assert kernels.decode_watermark(SECRET, "brain-a", token) == 42


def test_watermark_rejections() -> None:
    token = kernels.encode_watermark(SECRET, "brain-a", 42)
    assert kernels.decode_watermark(SECRET, "brain-b", token) is None
    assert kernels.decode_watermark(b"other", "brain-a", token) is None
    assert kernels.decode_watermark(SECRET, "brain-a", "wm_garbage") is None
    assert kernels.decode_watermark(SECRET, "brain-a", "\ud800") is None
    with pytest.raises(ValueError):
        kernels.encode_watermark(b"", "brain-a", 1)
    with pytest.raises(ValueError):
        kernels.encode_watermark(SECRET, "brain-a", -1)
    with pytest.raises(ValueError):
        kernels.encode_watermark(SECRET, "brain-a", 2**64)


@KERNELS
@given(
    st.binary(min_size=1, max_size=64),
    st.text(max_size=40),
    st.integers(min_value=0, max_value=2**64 - 1),
)
def test_watermark_round_trip(secret: bytes, brain_key: str, seq: int) -> None:
    # Brain keys are valid UTF-8 in practice; lone surrogates cannot be encoded by design.
    brain_key = brain_key.encode("utf-8", "replace").decode("utf-8")
    token = kernels.encode_watermark(secret, brain_key, seq)
    assert kernels.decode_watermark(secret, brain_key, token) == seq


@KERNELS
@given(st.text(alphabet=st.characters(codec=None), max_size=80))
def test_decode_never_raises(token: str) -> None:
    assert kernels.decode_watermark(SECRET, "brain", token) is None
    assert kernels.decode_watermark(SECRET, "brain", "wm_" + token) is None


@KERNELS
@given(st.integers(min_value=0, max_value=2**64 - 1), st.data())
def test_tampered_watermark_rejected(seq: int, data: st.DataObject) -> None:
    token = kernels.encode_watermark(SECRET, "brain", seq)
    pos = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=.é"
    replacement = data.draw(st.sampled_from([c for c in alphabet if c != token[pos]]))
    tampered = token[:pos] + replacement + token[pos + 1 :]
    assert kernels.decode_watermark(SECRET, "brain", tampered) is None


# --- lexical --------------------------------------------------------------------------------


def make_index() -> kernels.LexicalIndex:
    index = kernels.LexicalIndex()
    index.add(
        [10, 20, 30],
        [
            "Alice moved to Paris and works at the Louvre museum",
            "Bob prefers tea over coffee in the mornings",
            "The quarterly budget meeting was moved to Thursday",
        ],
    )
    return index


def test_lexical_ranks_matching_doc_first() -> None:
    index = make_index()
    assert len(index) == 3
    hits = index.search("where does Alice work?", 5)
    assert hits[0][0] == 10
    assert all(score > 0 for _, score in hits)
    # Stemming: "meetings" finds "meeting".
    assert index.search("budget meetings", 5)[0][0] == 30
    assert index.search("the and of", 5) == []
    assert index.search("alice", 0) == []


def test_lexical_allowed_filter() -> None:
    index = make_index()
    assert sorted(doc for doc, _ in index.search("moved", 5)) == [10, 30]
    assert [doc for doc, _ in index.search("moved", 5, allowed=[30])] == [30]
    assert index.search("moved", 5, allowed=[]) == []


@settings(deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), st.sampled_from(["q", "int64", "uint64", "strided"]))
def test_lexical_allowed_as_an_array_is_the_same_as_a_list(extra: list[int], kind: str) -> None:
    index = kernels.LexicalIndex()
    index.add(range(40), [f"word{i % 3} shared" for i in range(40)])
    ids = list(range(0, 40, 3)) + extra
    if kind == "q":
        allowed = array.array("q", ids)
    elif kind == "strided":  # a view that is not contiguous
        allowed = np.repeat(np.asarray(ids, dtype=np.int64), 2)[::2]
    elif kind == "uint64":  # not a signed array: read as a sequence, negative ids cannot be in it
        ids = [i for i in ids if i >= 0]
        allowed = np.asarray(ids, dtype=np.uint64)
    else:
        allowed = np.asarray(ids, dtype=np.int64)
    assert index.search("shared word1", 50, allowed) == index.search("shared word1", 50, ids)


def test_lexical_replace_and_remove() -> None:
    index = make_index()
    index.add([10], ["nothing about cities"])
    assert len(index) == 3
    assert index.search("Paris", 5) == []
    index.remove([10, 20, 999])
    assert len(index) == 1
    assert index.search("coffee", 5) == []
    with pytest.raises(ValueError):
        index.add([1, 2], ["one"])


def test_lexical_order_is_score_then_id() -> None:
    index = kernels.LexicalIndex()
    index.add([3, 1, 2], ["apple pie", "apple pie", "apple pie"])
    hits = index.search("apple", 10)
    assert [doc for doc, _ in hits] == [1, 2, 3]


def test_lexical_concurrent_search() -> None:
    index = kernels.LexicalIndex()
    docs = [f"document {i} mentions topic{i % 17} and shared words" for i in range(2000)]
    index.add(list(range(2000)), docs)

    def ids(topic: int) -> list[int]:
        return [doc for doc, _ in index.search(f"topic{topic}", 20)]

    # Ids, not scores: the writer's add/remove changes N, so idf moves while it runs.
    expected = {t: ids(t) for t in range(17)}
    barrier = threading.Barrier(4)

    def worker(offset: int) -> bool:
        barrier.wait()
        ok = True
        for round_ in range(30):
            topic = (offset + round_) % 17
            ok &= ids(topic) == expected[topic]
        return ok

    def writer() -> bool:
        barrier.wait()
        for i in range(30):
            index.add([10_000 + i], [f"unrelated filler {i}"])
            index.remove([10_000 + i])
        return True

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = [pool.submit(worker, n) for n in range(3)] + [pool.submit(writer)]
        assert all(f.result() for f in results)
    assert len(index) == 2000


@KERNELS
@given(
    st.lists(st.text(alphabet="abcdefgh ", max_size=40), min_size=1, max_size=20),
    st.integers(min_value=0, max_value=19),
)
def test_lexical_unique_word_ranks_first(docs: list[str], target: int) -> None:
    target %= len(docs)
    docs = list(docs)
    docs[target] += " zyxwvut"
    index = kernels.LexicalIndex()
    index.add(range(len(docs)), docs)
    assert index.search("zyxwvut", 3)[0][0] == target
    index.remove([target])
    assert index.search("zyxwvut", 3) == []


# --- scores ---------------------------------------------------------------------------------


def test_rrf_fuse() -> None:
    fused = kernels.rrf_fuse([[1, 2, 3], [3, 2]], [1.0, 1.0])
    assert [doc for doc, _ in fused] == [3, 2, 1]
    assert fused[2][1] == pytest.approx(1 / 61)
    weighted = kernels.rrf_fuse([[1], [2]], [1.0, 2.0], k=0.0)
    assert weighted == [(2, pytest.approx(2.0)), (1, pytest.approx(1.0))]
    assert kernels.rrf_fuse([], []) == []
    with pytest.raises(ValueError):
        kernels.rrf_fuse([[1]], [])


def test_final_scores() -> None:
    out = kernels.final_scores([2.0, 2.0], [0.5, 5.0], [0.5, 1.0], 1.0)
    assert out == [pytest.approx(1.5), pytest.approx(4.0)]
    with pytest.raises(ValueError):
        kernels.final_scores([1.0], [], [1.0], 1.0)


def test_near_duplicates() -> None:
    texts = [
        "Alice moved to Paris in 2021 and loves it",
        "alice moved to Paris in 2021, and loves it!",
        "Bob stays in Berlin",
        "hi there",
        "There hi",
    ]
    assert kernels.near_duplicates(texts) == [1, 4]
    assert kernels.near_duplicates(texts, threshold=1.0) == [1, 4]
    assert kernels.near_duplicates([]) == []
    with pytest.raises(ValueError):
        kernels.near_duplicates(texts, threshold=1.5)


# --- pattern ----------------------------------------------------------------------------------


def test_pattern_is_an_unanchored_ecma_search() -> None:
    assert kernels.Pattern("b").is_match("abc")
    assert not kernels.Pattern("^b").is_match("abc")
    assert kernels.Pattern("^[A-Z]{2}-\\d{3}$").is_match("AB-123")
    assert not kernels.Pattern("^\\d$").is_match("\u0663")  # \d is ASCII in ECMA-262
    assert not kernels.Pattern("^.$").is_match("\n")
    assert kernels.Pattern("^(?<y>\\d{4})-(?:0[1-9]|1[0-2])$").is_match("2024-11")
    assert kernels.Pattern("x").source == "x"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("(a)\\1", "backreferences"),
        ("(?<n>a)\\k<n>", "backreferences"),
        ("a(?=b)", "lookahead"),
        ("(?<!a)b", "lookbehind"),
        ("(?i)abc", "inline flags"),
        ("a**", "nothing to repeat"),
        ("[abc", "unclosed"),
        ("((a{100}){100}){100}", "compiles to more than"),
        ("a" * (kernels.MAX_PATTERN_CHARS + 1), "longer than 256"),
    ],
)
def test_pattern_refusals_name_the_reason(source: str, reason: str) -> None:
    with pytest.raises(ValueError, match="invalid pattern") as caught:
        kernels.Pattern(source)
    assert reason in str(caught.value)


def test_catastrophic_pattern_finishes() -> None:
    # On a backtracking engine (Python's re, the jsonschema library) this never finishes: 23
    # characters took 0.7 s and each more doubles it. Here it is linear in the text, about 0.1 ms
    # measured; 2 s is a bound no loaded CI machine misses, and the only timing check, because a
    # regression to backtracking would not take seconds but forever.
    import time

    pattern = kernels.Pattern("^(a+)+$")
    text = "a" * 50_000 + "b"
    started = time.perf_counter()
    assert pattern.matches([text, text[:-1]]) == [False, True]
    assert time.perf_counter() - started < 2.0


def test_pattern_never_raises_for_a_str() -> None:
    pattern = kernels.Pattern("^a\ufffd+b$")
    assert pattern.is_match("a\ud800b")  # a lone surrogate is matched as replacement characters
    assert pattern.matches(["a\udfffb", "ab"]) == [True, False]


def test_pattern_shared_between_threads() -> None:
    pattern = kernels.Pattern("^[a-z]+@[a-z]+\\.[a-z]{2,}$")
    texts = [f"user{i}@example.com" if i % 3 else f"user@example{i % 7}.org" for i in range(3000)]
    expected = pattern.matches(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(result == expected for result in pool.map(lambda _: pattern.matches(texts), range(8)))


_ATOM = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", "\\d", "\\w", "1"])


@st.composite
def _regex(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(_ATOM)
    kind = draw(st.sampled_from(["concat", "alt", "star", "plus", "opt", "count", "anchor"]))
    inner = draw(_regex(depth - 1))
    if kind == "concat":
        return f"(?:{inner})(?:{draw(_regex(depth - 1))})"
    if kind == "alt":
        return f"(?:{inner}|{draw(_regex(depth - 1))})"
    if kind == "count":
        low = draw(st.integers(0, 3))
        return f"(?:{inner}){{{low},{low + draw(st.integers(0, 2))}}}"
    if kind == "anchor":
        return f"^{inner}$"
    return f"(?:{inner}){dict(star='*', plus='+', opt='?')[kind]}"


@KERNELS
@given(_regex(), st.lists(st.text(alphabet="ab1_ -", max_size=8), min_size=1, max_size=6))
def test_pattern_agrees_with_python_re_on_short_ascii(source: str, texts: list[str]) -> None:
    # Python's backtracking re is a fine reference on short texts without line terminators, where
    # its ASCII classes and ECMA-262's agree.
    import re

    reference = re.compile(source, re.ASCII)
    assert kernels.Pattern(source).matches(texts) == [reference.search(t) is not None for t in texts]


@KERNELS
@given(st.text(max_size=80), st.text(max_size=40))
def test_arbitrary_patterns_compile_or_raise_value_error(source: str, text: str) -> None:
    try:
        pattern = kernels.Pattern(source)
    except ValueError as exc:
        assert str(exc).startswith("invalid pattern: ")
        return
    assert pattern.matches([text]) == [pattern.is_match(text)]
