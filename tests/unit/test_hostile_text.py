"""Reading a Record costs time linear in its length, whatever its text (brainstore.derive, chunking,
the index).

A Record's text is read on the derivation worker every tenant shares (texts under
``LONG_TEXT_CHARS``), so a text that makes reading it quadratic is a way for one key to stall every
Brain. Each family below was quadratic once: 19,000 spaces after "hello, jon" took 8.6 s to read.
The sentence splitters, which read a whole text and so were guarded against it, are checked here
against their plain forms, match for match; within a sentence no long run of spaces is left to read.
"""

import re
import time
from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore import kernels
from brainstore.derive import extract
from brainstore.derive.extract import default_extractor, extract_record
from brainstore.retrieval import chunking
from brainstore.retrieval.chunking import chunk_record
from brainstore.retrieval.index import BrainIndex

UTC = timezone.utc  # noqa: UP017
WHEN = datetime(2024, 1, 1, tzinfo=UTC)

# (what is repeated, the Record's kind, text before it): each made reading quadratic in its length
HOSTILE = [
    (" ", "message", "hello, jon"),  # spaces, which many patterns read with "\s*" on both sides
    ("\t", "document", "Jon said "),
    ("\u00a0", "message", "We live in Paris"),  # a place's words, cut where a clause of time may begin
    (" ", "message", "Keep going"),  # the promise searched for after an urging
    ("\U0001f600", "message", "I went"),  # the sentence splitter's emoji
    (".", "message", "I went"),  # runs of stops, in the sentence splitter and the chunker
    ("\u2026", "document", "I went"),
    ("?", "message", "Jon said "),
    ("St. ", "message", "We "),  # the abbreviation looked for before each stop
    ("\u2014", "message", "hello, Jon"),  # the list of words read again from each split
    (")", "message", ""),
    ("so ", "message", "I went"),  # the clause's words read again at each split passed over
    ("a- ", "message", "Jon said "),  # the clause end searched for again from each dash
    ("5/", "message", "I went"),  # one long word, cut by tokens
    (" ", "message", "hi"),  # a chunk's spaces after a greeting, read for the name it addresses
    # a list's items, each walked up from to the time heading the list: dated by it, and whose dropped
    # subject its words may name
    ("- I ran\n", "message", "Yesterday:\n"),
    ("- ran\n", "message", "Yesterday:\n"),
    # one long capitalised word, read as a name before "said:" from each of its letters (8,000 "A": 5 s)
    ("A", "message", "I went"),
    ("Ab", "document", "I went"),
    ("A'", "message", "I went"),
    ("A-", "message", "I went"),
    (", turning 3 in June", "message", "I am 29"),  # the time of an age to come, read to the sentence's end
    ("Ann Lee  10:32 AM\nI went.\nBob  9:01 PM\n", "document", ""),  # a chat app's copy, turn by turn
    ("<ann> I went.\n<@bob> ok\n", "message", ""),  # an IRC log's
    ("Me: hi\nMy sister: I went.\nHer: ok\n", "message", ""),  # turns a relation or a pronoun opens
    ('I read "your x" ', "message", ""),  # words in quotation marks, looked for in each clause
    ('I read "your x ', "message", ""),  # ... and a closing mark looked for after each opening one
    ('I read "I Am X" ', "message", ""),  # a title told from a quotation by the words before it
    ('"', "message", "I love "),  # the marks a clause's end counts before it keeps a closing one
    ("honestly speaking, ", "message", ""),  # a run of stances read away before the subject
    (" named Rex and a dog", "message", "I have a dog"),  # each pet of a list, past the name it is given
    (" from the 3rd to the 5th", "message", "I will be in Paris"),  # ranges of days, each told by the tense
    (" I Am X", "message", "I read"),  # a title looked for after each "I" of a clause
    (" and Tuesday", "message", "I swim every Monday"),  # the days a recurrence lists
    (" was like you", "message", "Tom"),  # a quoting "was like" looked for at each clause's verb
    # times joined by "and" in one sentence: the times before each time read again, and the spans
    # taken before each (128,000 characters: 25 s)
    (" and on Monday I", "message", "I went"),
    (", sorry, a b", "message", "I'm a nurse"),  # a thing meant in place of one said, looked for at each comma
    (" but on Monday I", "message", "I went"),  # a time and a subject after each conjunction, a clause each
    ("I live in Boston. Just kidding, ", "message", ""),  # each sentence taking back the one before
    (", a cat and a dog", "message", "I have a parrot"),  # each pet of a list after the first
    ("-a", "message", "My ex"),  # the words a hyphen joins, after "my"
    (" before  ", "message", "I was a nurse"),  # a clause of time looked for after a predicate
    ("a kid, ", "message", "I have "),  # what is had before a pet, item by item
    (" in  ", "message", "I was born on June 3"),  # the place looked for after a birthday's date
]


def _read(text: str, kind: str) -> float:
    """Seconds to read ``text`` as the worker does (extraction, chunking, then indexing the chunks,
    the embedder left out), the best of two."""
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        source, _ = extract_record(
            default_extractor(), {"kind": kind, "text": text, "speaker": "Jon"}, self_name="Jon", occurred_at=WHEN
        )
        drafts = chunk_record("r", source, source_name=None, trust="normal", visibility="shareable")
        BrainIndex(4, "unit").add(drafts, np.eye(len(drafts), 4, dtype=np.float32) + 0.5)
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize(("piece", "kind", "before"), HOSTILE)
def test_reading_a_hostile_text_takes_time_linear_in_its_length(piece: str, kind: str, before: str) -> None:
    short, long = (before + piece * (n // len(piece)) + "I went home." for n in (4_000, 16_000))
    short_s, long_s = _read(short, kind), _read(long, kind)
    # Four times the text: about four times the time when linear, sixteen when quadratic. A small
    # absolute time passes too, where the machine's noise outweighs the ratio.
    assert long_s < 0.25 or long_s / short_s < 9, (short_s, long_s)


# Families whose cost grows too slowly to show at the sizes above (a list copied, not a pattern run
# again): read at eight times their length, 5 s at 128,000 characters before the fix
HOSTILE_SLOWER = [
    ("Kate, Bob, ", "message", ""),  # the rest of a sentence's tokens copied for each name opening it
    (" and on Monday", "message", "I went"),  # the clause's words up to each "and" (30 s)
]


@pytest.mark.parametrize(("piece", "kind", "before"), HOSTILE_SLOWER)
def test_reading_a_long_hostile_text_takes_time_linear_in_its_length(piece: str, kind: str, before: str) -> None:
    short, long = (before + piece * (n // len(piece)) + "I went home." for n in (16_000, 128_000))
    short_s, long_s = _read(short, kind), _read(long, kind)
    # eight times the text: about eight times the time when linear, sixty-four when quadratic
    assert long_s < 0.25 or long_s / short_s < 20, (short_s, long_s)


def _time_readings(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many times extracting ``text`` looks for time expressions."""
    calls = 0
    find = extract.find_time_expressions

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return find(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(extract, "find_time_expressions", counted)
        extract_record(default_extractor(), {"kind": "message", "text": text}, self_name="Jon", occurred_at=WHEN)
    return calls


# (text before, what is repeated): the same words read for a time again and again
SAME_TIMES = [
    ("I went", " and on Monday"),  # the words after each "and", for a time opening a clause of its own
    ("I went", " but in May we"),
    ("Yesterday:\n", "- ran\n"),  # the time heading a list, for each of its items
]


@pytest.mark.parametrize(("before", "piece"), SAME_TIMES)
def test_the_same_words_are_read_for_a_time_once(before: str, piece: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A tenth of a millisecond each time: half the time of reading 128,000 characters of " and on Monday"
    # (2.2 s of CPU, 1.0 s read once), a fifth of a list's under "Yesterday:" (4.4 s, 3.6 s)
    short, long = (_time_readings(before + piece * (n // len(piece)) + "I went home.", monkeypatch) for n in (16_000, 128_000))
    assert long < 2 * short, (short, long)


def test_the_words_after_each_and_are_read_for_a_time_only_before_a_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each "and" of a long sentence had its 40 characters read for a time opening a clause of its own,
    # though no word a subject opens on followed it: read once for each distinct window, a sentence
    # whose windows all differ still read every one (128,000 characters: 1.7 s of CPU, 1.0 s without)
    def numbered(n: int) -> str:
        return "I went" + "".join(f" and on Monday w{k}" for k in range(n // 17)) + " I went home."

    short, long = (_time_readings(numbered(n), monkeypatch) for n in (16_000, 128_000))
    assert long < 2 * short, (short, long)


# The plain forms of the guarded sentence ends: the guards only skip starts that cannot match.
_PLAIN_SENTENCE_END = re.compile(
    r"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s|$)|\n\s*|(?:\s*[\U0001F300-\U0001FAFF\u2600-\u27BF]\ufe0f?)+(?=\s|$)"
    r"|\s{8,}"
)
_PLAIN_CHUNK_SENTENCE_END = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s)|\n")

_PIECES = [" ", "  ", "     ", "\t", "\n", ".", "!", "?", "\u2026", '"', "'", ")", "(", "]", ";", ",", "-", "--", "\u2014",
           "\u2013", "\U0001f600", "\ufe0f", "\u2600", "I", "i", "i.e.", "we", "and", "so", "even", "though", "x",
           "Jon", "a"]  # fmt: skip
TEXTS = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_guarded_sentence_ends_are_the_plain_ones(text: str) -> None:
    assert _spans(extract._SENT_END, text) == _spans(_PLAIN_SENTENCE_END, text)
    assert _spans(chunking._SENTENCE_END, text) == _spans(_PLAIN_CHUNK_SENTENCE_END, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ1\u00e9\u6771\U0001f600\u0301-.", min_size=1, max_size=600))
def test_a_long_word_is_cut_into_pieces_that_fit(word: str) -> None:
    pieces = chunking._split(word, 0, len(word), 25, ())
    assert "".join(word[s:e] for s, e in pieces) == word
    assert all(s < e for s, e in pieces)
    assert all(n <= 25 for n in kernels.count_tokens([word[s:e] for s, e in pieces]))


@pytest.mark.parametrize("gap", [" " * 5_000, "\t" * 3_000, "\u3000" * 500, " \n" * 1_000])
def test_chunks_joined_across_a_run_of_spaces_stay_within_their_tokens(gap: str) -> None:
    source, _ = extract_record(
        default_extractor(), {"kind": "message", "text": f"hi{gap}there"}, self_name="Jon", occurred_at=WHEN
    )
    drafts = chunk_record("r", source, source_name=None, trust="normal", visibility="shareable")
    assert [d.text for d in drafts] == ["hi", "there"]
    assert all(n <= chunking.MESSAGE_MAX_TOKENS for n in kernels.count_tokens([d.text for d in drafts]))
