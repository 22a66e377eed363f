"""Tests of the evidence index and retrieval pipeline (brainstore.retrieval.chunking/index/pipeline).

Vectors are made by hand (no embedding model): tests pick the geometry they need.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore.derive import SourceText
from brainstore.retrieval.chunking import (
    MESSAGE_MAX_TOKENS,
    VISIBILITIES,
    Chunk,
    ChunkDraft,
    chunk_record,
    cited_form,
    embedding_text,
    first_name,
    index_text_for,
    leads,
    line,
    token_counts,
)
from brainstore.retrieval.index import BrainIndex, ChunkFilter, ChunkTally, Selection
from brainstore.retrieval.pipeline import content_terms, embedded_query, lexical_query, retrieve

DIM = 16
MODEL = "test-model"
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def msg(text: str, speaker: str | None = "Caroline", when: datetime = T0) -> SourceText:
    return SourceText(text, "message", speaker, "user", when)


def doc(text: str, when: datetime = T0) -> SourceText:
    return SourceText(text, "document", None, None, when)


def unit(seed: int, dim: int = DIM) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def drafts_for(record_id: str, text: str, **kw) -> list[ChunkDraft]:
    return chunk_record(
        record_id, msg(text, **kw), source_name="chat", trust="normal", visibility="shareable"
    )


def build(texts: dict[str, str], seeds: dict[str, int] | None = None, **chunk_kw) -> BrainIndex:
    index = BrainIndex(DIM, MODEL)
    for n, (rid, text) in enumerate(texts.items()):
        drafts = drafts_for(rid, text, **chunk_kw)
        seed = (seeds or {}).get(rid, 1000 + n)
        index.add(drafts, np.stack([unit(seed + i) for i in range(len(drafts))]))
    return index


def far_deadline() -> float:
    return time.monotonic() + 60


# ------------------------------------------------------------------------------------------ chunking


def test_message_is_one_chunk_with_speaker_and_day() -> None:
    text = "  I went to a LGBTQ support group yesterday and it was so powerful.\n"
    [d] = drafts_for("r1", text)
    assert text[d.start : d.end] == d.text == text.strip()
    assert d.index_text == f"Caroline (8 May 2023): {d.text}"
    assert cited_form(d) == d.index_text
    assert embedding_text(d) == f"Caroline: {d.text}"  # the day is left to the lexical lane
    assert d.speaker == "Caroline" and d.occurred_at == T0 and d.record_id == "r1"


def test_embedding_text_names_the_source_when_no_one_speaks() -> None:
    [from_wiki] = chunk_record("r1", doc("Porto lies on the Douro."), source_name="wiki", trust="normal",
                               visibility="shareable")  # fmt: skip
    assert embedding_text(from_wiki) == "wiki: Porto lies on the Douro."
    [anonymous] = chunk_record("r2", doc("Porto lies on the Douro."), source_name=None, trust="normal",
                               visibility="shareable")  # fmt: skip
    assert embedding_text(anonymous) == "Porto lies on the Douro."
    assert anonymous.index_text == "(8 May 2023) Porto lies on the Douro."


def test_a_full_name_s_first_name_and_labels_that_are_not_one() -> None:
    assert first_name("Caroline Reyes") == "Caroline"
    assert first_name("Mary Ann Lee") == "Mary"
    assert first_name("Zoë Åberg") == "Zoë"
    for label in ("Caroline", "Person A", "Speaker 1", "caroline reyes", "Dr Ana Silva", "Mrs Reyes",
                  "Jo Reyes", "Anne-Marie Roy", "Caroline  Reyes", "ana@acme.com", "J. Smith", "Ann O Lee"):
        assert first_name(label) is None, label  # fmt: skip


def test_a_speaker_labelled_by_a_full_name_is_embedded_by_first_name() -> None:
    [d] = drafts_for("r1", "I went to the support group.", speaker="Caroline Reyes")
    assert embedding_text(d) == "Caroline: I went to the support group."
    assert d.index_text == "Caroline Reyes (8 May 2023): I went to the support group."  # the lexical lane's
    [p] = drafts_for("r2", "Hi.", speaker="Person A")
    assert embedding_text(p) == "Person A: Hi."


_NAME_WORDS = st.text(st.characters(categories=("Lu", "Ll", "Lo")), min_size=2, max_size=9)


@settings(max_examples=300, deadline=None)
@given(
    st.from_regex(r"[A-Z]", fullmatch=True),
    _NAME_WORDS,
    st.lists(_NAME_WORDS, min_size=1, max_size=3),
    st.text(max_size=60),
    st.booleans(),
)
def test_a_line_by_first_name_costs_the_further_words_of_the_name_less(
    initial: str, rest: str, further: list[str], text: str, dated: bool
) -> None:
    from brainstore import kernels

    label = " ".join([initial + rest, *further])
    name = first_name(label)
    if name is None:  # a title, or a first word of another case
        return
    [d] = drafts_for("r1", "Hi.", speaker=label)
    d = replace(d, text=text)
    full, short = line(d, dated=dated), line(replace(d, speaker=name), dated=dated)
    assert kernels.token_count(full) - kernels.token_count(short) == kernels.token_count(label) - kernels.token_count(name)


# Pieces the tokenizer's pre-split treats apart: spaces and line breaks in runs, contractions, digits,
# punctuation next to a header's colon, letters of several scripts, a control-token lookalike.
_TEXT_PIECES = st.sampled_from(
    [*list("ab :)(.!?'\n\r\t 0123"), "  ", " \n", "'s", "'ll", "é", "東", "🙂", "<|endoftext|>", "Hello", "\u00a0"]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_TEXT_PIECES, max_size=12).map("".join),
    st.one_of(st.none(), st.lists(_TEXT_PIECES, min_size=1, max_size=5).map("".join)),
    st.one_of(st.none(), st.lists(_TEXT_PIECES, min_size=1, max_size=5).map("".join)),
    st.sampled_from(VISIBILITIES),
    st.one_of(st.none(), st.lists(_TEXT_PIECES, max_size=5).map("".join)),
)
def test_counting_each_form_of_a_chunk_from_its_text_and_its_header_counts_the_form_itself(
    text: str, speaker: str | None, source: str | None, visibility: str, stored_head: str | None
) -> None:
    from brainstore import kernels

    draft = ChunkDraft(
        "r1", 0, len(text), text, index_text_for(text, speaker=speaker, source_name=source, occurred_at=T0),
        T0, speaker, source, "normal", visibility,
    )  # fmt: skip
    if stored_head is not None:  # an index text stored in another shape, by hand or an older version
        draft = replace(draft, index_text=stored_head + text)
    other = replace(draft, text=text + ".", index_text=draft.index_text + " x")
    cited, joined, lines = token_counts([draft, other, draft])
    for i, d in enumerate([draft, other, draft]):
        assert cited[i] == kernels.token_count(cited_form(d))
        assert joined[i] == kernels.token_count(" " + d.text)
        assert lines[i] == kernels.token_count(line(d, dated=False))


def test_blank_text_has_no_chunks() -> None:
    assert drafts_for("r", "   \n ") == []


def test_long_message_splits_at_sentences() -> None:
    text = " ".join(f"Sentence number {i} talks about the garden and the dog." for i in range(60))
    drafts = drafts_for("r", text)
    assert len(drafts) > 1
    for d in drafts:
        assert text[d.start : d.end] == d.text
        assert d.text.endswith(".")
    from brainstore import kernels

    assert all(kernels.token_count(d.text) <= MESSAGE_MAX_TOKENS for d in drafts)


def test_message_chunks_are_runs_of_sentences_within_one_turn() -> None:
    text = (
        "Hey Mel! Last week I finally signed up for the pottery class downtown on Fifth Street. "
        "The teacher says my first bowl is lopsided but honest. Can't wait for next week!"
    )
    drafts = drafts_for("r", text)
    assert [d.text for d in drafts] == [
        "Hey Mel! Last week I finally signed up for the pottery class downtown on Fifth Street.",
        "The teacher says my first bowl is lopsided but honest. Can't wait for next week!",
    ]
    assert all(d.index_text == f"Caroline (8 May 2023): {d.text}" for d in drafts)
    # a short turn stays whole, and documents keep passage-sized chunks
    assert len(drafts_for("r", "Thanks! See you soon. Bye!")) == 1
    assert len(chunk_record("d", doc(text), source_name="notes", trust="normal", visibility="shareable")) == 1


def test_document_packs_paragraphs_under_max_tokens() -> None:
    paragraphs = [
        f"Paragraph {i}. " + "Words about moving to Sweden in spring. " * (3 + i % 4) for i in range(25)
    ]
    text = "\n\n".join(paragraphs)
    drafts = chunk_record(
        "d", doc(text), source_name="notes.md", trust="high", visibility="local_only", max_tokens=80
    )
    from brainstore import kernels

    assert len(drafts) > 3
    for d in drafts:
        assert text[d.start : d.end] == d.text
        assert kernels.token_count(d.text) <= 80
        assert d.index_text.startswith("notes.md (8 May 2023): ")
    # spans are in order and do not overlap
    assert all(a.end <= b.start for a, b in itertools.pairwise(drafts))


@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from([*list("abc xyz.!?\n\t"), "é", "東", "🙂", "word ", ". ", "\n\n", "Hello there! "]),
        max_size=300,
    ).map("".join),
    st.sampled_from(["message", "document", "event"]),
    st.integers(8, 60),
)
def test_chunk_spans_are_exact(text: str, kind: str, max_tokens: int) -> None:
    src = SourceText(text, kind, "Bo" if kind == "message" else None, None, T0)
    drafts = chunk_record(
        "r", src, source_name=None, trust="low", visibility="redacted_summary", max_tokens=max_tokens
    )
    covered = []
    for d in drafts:
        assert 0 <= d.start < d.end <= len(text)
        assert text[d.start : d.end] == d.text
        assert d.text == d.text.strip()
        covered.append((d.start, d.end))
    assert covered == sorted(covered)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(covered))
    # every non-space character is in some chunk
    inside = set()
    for s, e in covered:
        inside.update(range(s, e))
    assert all(ch.isspace() for i, ch in enumerate(text) if i not in inside)


def test_chunk_record_validates_labels() -> None:
    with pytest.raises(ValueError):
        chunk_record("r", msg("hi"), source_name=None, trust="very", visibility="shareable")
    with pytest.raises(ValueError):
        chunk_record("r", msg("hi"), source_name=None, trust="high", visibility="public")


# --------------------------------------------------------------------------------------------- index


def test_add_assigns_unique_ids_and_searches_both_lanes() -> None:
    index = build(
        {"a": "I adopted a puppy named Biscuit.", "b": "We went camping by the lake."}, {"a": 1, "b": 2}
    )
    assert len(index) == 2
    ids = [c.id for c in index.chunks()]
    assert len(set(ids)) == 2
    [(top, score)] = index.lexical("puppy", 5)
    assert index.get(top).record_id == "a" and score > 0
    hits = index.vector(unit(2), 2)
    assert index.get(hits[0][0]).record_id == "b"
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_add_checks_embedding_shape() -> None:
    index = BrainIndex(DIM, MODEL)
    with pytest.raises(ValueError):
        index.add(drafts_for("a", "hello there"), np.zeros((1, DIM + 1), dtype=np.float32))


def random_index(n: int, seed: int) -> tuple[BrainIndex, list[Chunk], np.ndarray]:
    """An index of ``n`` one-chunk notes with random unit vectors."""
    index = BrainIndex(DIM, MODEL)
    drafts = [d for i in range(n) for d in drafts_for(f"r{i}", f"note {i} about topic{i % 7}")]
    vectors = np.random.default_rng(seed).standard_normal((len(drafts), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return index, index.add(drafts, vectors), vectors


def test_a_tally_counts_the_chunks_of_the_indexes_counting_into_it_as_they_come_and_go() -> None:
    tally, other = ChunkTally(), ChunkTally()
    one = build({"a": "We went hiking. The lake was cold.", "b": "I paint on Sundays."})
    two = build({"c": "The gate code is 3050."})
    one.count_into(tally)
    two.count_into(tally)
    assert int(tally) == len(one) + len(two) == 3
    one.add(drafts_for("d", "Melanie ran a charity race."), np.stack([unit(7)]))
    assert int(tally) == 4
    one.remove_record("a")
    one.remove_record("missing")
    assert int(tally) == len(one) + len(two) == 3
    two.count_into(other)  # moved: taken back from the first
    assert (int(tally), int(other)) == (len(one), len(two)) == (2, 1)
    one.count_into(None)
    one.add(drafts_for("e", "A note nobody counts."), np.stack([unit(8)]))
    assert int(tally) == 0 and int(other) == 1


def test_index_grows_past_initial_capacity() -> None:
    index, chunks, vectors = random_index(1500, seed=0)
    assert len(index) == 1500
    hits = index.vector(vectors[1234], 1)
    assert hits[0][0] == chunks[1234].id


def test_removing_every_record_leaves_nothing_in_the_ranking_table() -> None:
    index = build({"a": "I adopted a puppy named Biscuit.", "b": "The puppy chewed my shoes."})
    assert len(index.table) == len(index) == 2 and index.table.names() == 2  # "chat" and the speaker
    for record_id in ("a", "b"):
        index.remove_record(record_id)
    assert (len(index.table), index.table.names()) == (0, 0)


def test_a_forgotten_record_s_source_name_leaves_the_filter_columns(tmp_path: Path) -> None:
    """The filter columns hold a source's name while a live chunk has it: a forgotten Record's
    ``source.name`` stays nowhere (the Rust table drops it too, see above). A freed code taken by a
    new source, its old rows still waiting to be dropped, filters as exactly as before."""

    def add(record_id: str, source: str | None, seed: int) -> None:
        drafts = chunk_record(record_id, msg(f"note {record_id}"), source_name=source, trust="normal",
                              visibility="shareable")  # fmt: skip
        index.add(drafts, unit(seed)[None, :])

    def sources(*names: str | None) -> set[str]:
        return {index.get(i).record_id for i in index.select(ChunkFilter(sources=frozenset(names))).ids.tolist()}

    index = BrainIndex(DIM, MODEL)
    add("a", "crm-export-jane-doe", 1)
    add("b", "chat", 2)
    add("c", "chat", 3)
    assert sources("crm-export-jane-doe") == {"a"}  # the columns are current: codes are in their rows
    index.remove_record("a")
    assert set(index._columns.source_codes) == {"chat"}
    index.remove_record("b")  # "chat" stays while "c" has it
    assert set(index._columns.source_codes) == {"chat"}
    add("d", "mail", 4)  # takes the freed code while a's row, dropped, is not yet out of the arrays
    assert sources("mail") == {"d"} and sources("crm-export-jane-doe") == set() and sources("chat") == {"c"}
    index.save(tmp_path / "saved")
    loaded = BrainIndex.load(tmp_path / "saved")
    assert loaded is not None and set(loaded._columns.source_codes) == {"chat", "mail"}
    for record_id in ("c", "d"):
        index.remove_record(record_id)
    assert index._columns.source_codes == {} and sources("chat", "mail", None) == set()
    add("e", None, 5)
    assert sources(None) == {"e"} and set(index._columns.source_codes) == {None}


def test_remove_record_removes_from_both_lanes() -> None:
    index = build(
        {"a": "I adopted a puppy named Biscuit.", "b": "The puppy chewed my shoes."}, {"a": 1, "b": 2}
    )
    [a_id] = index.record_chunks("a")
    assert index.remove_record("a") == [a_id]
    assert index.remove_record("a") == []
    assert a_id not in index and index.get(a_id) is None and len(index) == 1
    assert [index.get(i).record_id for i, _ in index.lexical("puppy", 10)] == ["b"]
    assert all(i != a_id for i, _ in index.vector(unit(1), 10))
    assert all(i != a_id for i, _ in index.vector(unit(1), 10, Selection([a_id, *index.record_chunks("b")])))
    # the freed slot is reused
    index.add(drafts_for("c", "A new puppy arrived."), unit(3)[None, :])
    assert len(index) == 2


def test_vector_with_allowed_set() -> None:
    texts = {f"r{i}": f"turn {i}" for i in range(50)}
    index = build(texts, {f"r{i}": i for i in range(50)})
    allowed = Selection([c.id for c in index.chunks() if int(c.record_id[1:]) % 2 == 0])
    hits = index.vector(unit(3), 10, allowed)
    assert hits and all(i in allowed for i, _ in hits)
    assert index.vector(unit(3), 10, Selection([])) == []
    assert index.lexical("turn", 10, []) == []


def test_excluded_ids_never_come_back_and_speakers_are_counted() -> None:
    index = BrainIndex(DIM, MODEL)
    secret = chunk_record("s", msg("The vault code is 4471.", speaker="Dave"), source_name="chat",
                          trust="normal", visibility="local_only")  # fmt: skip
    [secret_chunk] = index.add(secret, unit(7)[None, :])
    index.add(drafts_for("o", "The vault is in the basement."), unit(8)[None, :])
    assert index.local_only() == {secret_chunk.id}
    assert index.is_speaker("dave") and index.is_speaker("CAROLINE") and not index.is_speaker("vault")
    excluded = index.local_only()
    assert [index.get(i).record_id for i, _ in index.lexical("vault", 10, excluded=excluded)] == ["o"]
    assert [index.get(i).record_id for i, _ in index.vector(unit(7), 10, excluded=excluded)] == ["o"]
    r = retrieve(index, "vault code", unit(7), budget_tokens=500, deadline=far_deadline(), excluded=excluded)
    assert [c.chunk.record_id for c in r.candidates] == ["o"]
    index.remove_record("s")
    assert index.local_only() == frozenset() and not index.is_speaker("dave")


def _turns(
    index: BrainIndex,
    turns: list[tuple[str, str, str]],
    source: str = "chat",
    when: dict[str, datetime] | None = None,
    visibility: dict[str, str] | None = None,
) -> None:
    """(record id, speaker, text) said at T0 unless ``when`` says otherwise, shareable unless
    ``visibility`` does."""
    for n, (rid, speaker, text) in enumerate(turns):
        drafts = chunk_record(
            rid, msg(text, speaker=speaker, when=(when or {}).get(rid, T0)), source_name=source, trust="normal",
            visibility=(visibility or {}).get(rid, "shareable"),
        )  # fmt: skip
        index.add(drafts, np.stack([unit(100 + n + i) for i in range(len(drafts))]))


def _toward_all(index: BrainIndex) -> np.ndarray:
    """A query vector near every chunk of ``index``."""
    query = index.vectors([c.id for c in index.chunks()]).sum(axis=0)
    return query / np.linalg.norm(query)


#: Two people on their dogs, a line each, in the order said.
_DOG_TALK = [
    ("Caroline", "I adopted a puppy."),
    ("Melanie", "What a lovely dog!"),
    ("Caroline", "She sleeps on my bed."),
    ("Melanie", "Mine snores all night."),
    ("Caroline", "We walk by the river."),
    ("Melanie", "Send me a photo soon."),
]


def _said(said: list[tuple[str, str]]) -> BrainIndex:
    """An index of (speaker, text) lines, each its own Record, a minute apart from T0."""
    index = BrainIndex(DIM, MODEL)
    _turns(
        index,
        [(f"r{n}", who, text) for n, (who, text) in enumerate(said)],
        when={f"r{n}": T0 + timedelta(minutes=n) for n in range(len(said))},
    )
    return index


def test_a_name_others_address_a_speaker_by_names_that_speaker(tmp_path: Path) -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [
        ("t1", "user", "I adopted a second dog last week."),
        ("t2", "assistant", "Hey Audrey! That's wonderful news."),
        ("t3", "user", "Thanks, she is a beagle."),
        ("t4", "assistant", "Beagles are lovely, Audrey!"),
        ("t5", "user", "Hi there, Paris was great."),  # "there" is no name; Paris addresses no one
    ])  # fmt: skip
    assert index.speaker_named("Audrey") == "user" and index.is_speaker("AUDREY")
    assert index.speaker_named("there") is None and index.speaker_named("Paris") is None
    assert index.speaker_named("assistant") == "assistant"
    # the alias is a speaker's name to the lexical query and to the speaker boost
    assert lexical_query("What dog did Audrey adopt?", index.is_speaker) == "dog adopt"
    r = retrieve(index, "What did Audrey's dog do?", None, budget_tokens=500, deadline=far_deadline())
    assert r.selected and r.selected[0].chunk.speaker == "user"
    index.save(tmp_path)
    loaded = BrainIndex.load(tmp_path)
    assert loaded is not None and loaded.speaker_named("audrey") == "user"
    index.remove_record("t4")
    assert index.speaker_named("Audrey") is None  # once: not enough to tell


def test_a_capitalized_word_of_one_speaker_s_display_name_names_that_speaker() -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [
        ("c1", "Caroline Reyes", "I went to the support group."),
        ("m1", "Melanie Okafor", "I painted a lake at the support group."),
        ("s1", "Customer Support", "Your order has shipped."),
        ("j1", "Jo Okafor", "Hi."),
    ])  # fmt: skip
    assert index.speaker_named("Caroline") == index.speaker_named("Reyes") == "caroline reyes"
    assert index.speaker_named("Support") == "customer support"
    assert index.speaker_named("support") is None  # a word of the question, not a name
    assert index.speaker_named("Okafor") is None  # two speakers' names hold it
    assert index.speaker_named("Jo") is None  # too short to tell a name by
    assert lexical_query("What did Caroline's support group do?", index.is_speaker) == "support group"
    r = retrieve(index, "What did Caroline do at the support group?", None, budget_tokens=500, deadline=far_deadline())
    assert r.selected[0].chunk.speaker == "Caroline Reyes"
    index.remove_record("c1")
    assert index.speaker_named("Caroline") is None  # forgotten with the speaker's last chunk
    index.remove_record("j1")
    assert index.speaker_named("Okafor") == "melanie okafor"


def test_a_full_name_is_shortened_where_its_first_name_names_no_one_else() -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [
        ("c1", "Caroline Reyes", "I went to the support group."),
        ("j1", "John Smith", "Hi."),
        ("j2", "John Doe", "Hello."),
        ("a1", "Ana Lopez", "Hey."),
        ("a2", "Ana", "Hey!"),
        ("m1", "Melanie Okafor", "Morning."),
        ("u0", "assistant", "How can I help?"),
        ("u1", "user", "Thanks, Melanie!"),
        ("u2", "assistant", "Any time."),
        ("u3", "user", "Hey Melanie!"),
        ("p1", "Person A", "Hi."),
    ])  # fmt: skip
    labels = ["Caroline Reyes", "John Smith", "John Doe", "Ana Lopez", "Melanie Okafor", "Person A", "user"]
    # two Johns; an Ana of her own; "Melanie" is what the user calls the assistant too
    assert index.short_names(labels) == {"Caroline Reyes": "Caroline"}
    index.remove_record("j2")
    index.remove_record("a2")
    for rid in ("u1", "u3"):
        index.remove_record(rid)
    assert index.short_names(labels) == {
        "Caroline Reyes": "Caroline", "John Smith": "John", "Ana Lopez": "Ana", "Melanie Okafor": "Melanie"
    }  # fmt: skip


def test_the_transcript_names_a_speaker_in_full_once_then_by_first_name() -> None:
    from brainstore import kernels

    full = {"Caroline": "Caroline Reyes", "Melanie": "Melanie Okafor"}
    said = [(full[who], text) for who, text in _DOG_TALK]
    index = _said([*said, ("Person A", "Nice."), ("Person B", "Indeed.")])
    r = retrieve(index, "zzz", _toward_all(index), budget_tokens=2000, deadline=far_deadline())
    assert [p.text for p in r.selected] == [
        "Caroline Reyes (8 May 2023): I adopted a puppy.",
        "Melanie Okafor: What a lovely dog!",
        "Caroline: She sleeps on my bed.",
        "Melanie: Mine snores all night.",
        "Caroline: We walk by the river.",
        "Melanie: Send me a photo soon.",
        "Person A: Nice.",
        "Person B: Indeed.",
    ]
    assert [p.tokens for p in r.selected] == kernels.count_tokens([p.text for p in r.selected])
    # the six lines of the two named in full fit a budget their full names on every line would not
    budget = sum(p.tokens for p in r.selected[:6])
    every_line_in_full = [line(c, dated=i == 0) for i, c in enumerate(c for p in r.selected[:6] for c in p.chunks)]
    assert sum(kernels.count_tokens(every_line_in_full)) > budget
    index = _said(said)
    r = retrieve(index, "zzz", _toward_all(index), budget_tokens=budget, deadline=far_deadline())
    assert len(r.selected) == 6
    assert r.tokens_used == sum(kernels.count_tokens([p.text for p in r.selected])) <= budget
    # told again without its first line (its Record forgotten meanwhile), the next names her in full
    from brainstore.retrieval.pipeline import Candidate, transcript

    runs = [[Candidate(c, p.score) for c in p.chunks] for p in r.selected[1:]]
    again = transcript(runs, r.tokens_used, r.short_names)
    assert [p.text for p in again][:2] == ["Melanie Okafor (8 May 2023): What a lovely dog!", "Caroline Reyes: She sleeps on my bed."]


def test_packing_charges_a_full_name_once_so_what_it_chooses_is_served_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from brainstore.retrieval import pipeline

    full = {"Caroline": "Caroline Reyes", "Melanie": "Melanie Okafor"}
    index = _said([(full[who], text) for who, text in _DOG_TALK] + [("Person A", "Nice.")])
    told, real = [], pipeline.transcript

    def noting(runs, budget, short_names=None):  # type: ignore[no-untyped-def]
        passages = real(runs, budget, short_names)
        told.append((len(runs), len(passages)))
        return passages

    monkeypatch.setattr(pipeline, "transcript", noting)
    for budget in range(20, 90):
        retrieve(index, "zzz", _toward_all(index), budget_tokens=budget, deadline=far_deadline())
    # charged a line by first name alone, the budget would overflow and the weakest line be dropped
    assert told and all(runs == served for runs, served in told)


def test_a_question_is_embedded_with_the_label_of_a_speaker_it_names_otherwise() -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [
        ("t1", "Person A", "I adopted a second dog last week."),
        ("t2", "Person B", "Hey Audrey! That's wonderful news."),
        ("t3", "Person A", "Thanks, she is a beagle."),
        ("t4", "Person B", "Beagles are lovely, Audrey!"),
    ])  # fmt: skip
    _turns(index, [("c1", "Caroline Reyes", "I went to the support group.")], source="mail")
    # the passages are embedded as "Person A: ...": so is a question about Audrey, possessive kept
    assert embedded_query(index, "What did Audrey\u2019s dog do?") == "What did Person A\u2019s dog do?"
    assert embedded_query(index, "Did Audrey adopt a dog, Audrey?") == "Did Person A adopt a dog, Person A?"
    # a label that says the name already, a label itself, and a word that is no name stay as written
    assert embedded_query(index, "What did Caroline do?") == "What did Caroline do?"
    assert embedded_query(index, "What did Person B say?") == "What did Person B say?"
    assert embedded_query(index, "did audrey adopt?") == "did audrey adopt?"
    index.remove_record("t4")  # Audrey addressed once: no longer anyone's name
    assert embedded_query(index, "What did Audrey adopt?") == "What did Audrey adopt?"
    # a full name's passages are embedded by first name, and so is a question calling them otherwise
    _turns(index, [
        ("r1", "Robert Lane", "I moved to Porto."),
        ("r2", "Ann", "Hey Bob! Welcome to Porto."),
        ("r3", "Robert Lane", "Thanks, it is lovely."),
        ("r4", "Ann", "Good to see you, Bob!"),
    ], source="sms")  # fmt: skip
    assert embedded_query(index, "Where did Bob move?") == "Where did Robert move?"


def test_a_transcript_s_turns_are_turns_of_their_own_in_its_one_record() -> None:
    text = (
        "user_1: Have you tried the new bakery downtown?\n"
        "user_2: Hey Ann! Not yet, is it good?\n"
        "user_2: Thanks, Ann!\n"
        "user_1: The rye bread is the best in town.\n"
        "user_2: My cat sleeps all day.\nuser_1: We painted the fence.\nuser_2: The train was late again.\n"
    )
    drafts = chunk_record("t", doc(text), source_name="chat", trust="normal", visibility="shareable")
    index = BrainIndex(DIM, MODEL)
    index.add(drafts, np.stack([unit(300 + i) for i in range(len(drafts))]), leads(text, drafts))
    assert index.speaker_named("Ann") == "user_1"  # addressed in the lines after hers, though one Record
    # the turns after the one that names the bakery are lifted as a conversation's replies are (two
    # lines of one speaker in a row are one turn to spreading, as a burst of messages is)
    r = retrieve(index, "bakery downtown", None, budget_tokens=2000, deadline=far_deadline())
    assert [(p.chunk.speaker, p.body) for p in r.selected] == [
        ("user_1", "Have you tried the new bakery downtown?"),
        ("user_2", "Hey Ann! Not yet, is it good?"),
        ("user_1", "The rye bread is the best in town."),
    ]
    # every line its own passage under its own speaker: two lines of user_2 are never joined into one
    r = retrieve(index, "bakery", _toward_all(index), budget_tokens=2000, deadline=far_deadline())
    assert len(r.selected) == len(drafts) and all(len(p.chunks) == 1 for p in r.selected)


def test_a_question_naming_someone_prefers_the_people_they_talk_with_to_strangers() -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [("a1", "Ann", "Morning!"), ("b1", "Bob", "Morning, how was the trip?"), ("a2", "Ann", "Great.")])
    _turns(index, [("c1", "Cy", "I adopted a puppy."), ("d1", "Di", "I adopted a puppy too.")], source="mail")
    _turns(index, [("b2", "Bob", "I adopted a puppy.")], when={"b2": T0 + timedelta(days=9)})
    assert index.kin({"ann"}) == {"bob"} and index.kin({"cy"}) == {"di"} and index.kin({"zed"}) == set()
    # Cy's and Di's words match as well as Bob's, and further back in the lanes; yet Bob talks with Ann
    r = retrieve(index, "Did Ann hear about a puppy adopted?", None, budget_tokens=500, deadline=far_deadline())
    ranked = [c.chunk.record_id for c in r.candidates]
    assert ranked.index("b2") < ranked.index("c1") and ranked.index("b2") < ranked.index("d1")
    index.remove_record("b1")
    index.remove_record("b2")
    # forgotten with Bob's last chunk, though Ann's turns that followed his are still there
    assert index.kin({"ann"}) == set() and "bob" not in index._talks
    assert not index._talk_pairs.keys() - {c.id for c in index.chunks()}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["Ann", "Bob", "Cy", None]), st.sampled_from(["chat", "mail"]), st.integers(0, 3)),
        max_size=12,
    ),
    st.sets(st.integers(0, 11)),
)
def test_who_talks_with_whom_holds_only_live_chunks_and_speakers(turns: list, forgotten: set[int]) -> None:
    index = BrainIndex(DIM, MODEL)
    for n, (speaker, source, hours) in enumerate(turns):  # said out of the order they come in, at times
        when = {f"r{n}": T0 + timedelta(hours=hours)}
        _turns(index, [(f"r{n}", speaker, f"Turn number {n}.")], source=source, when=when)
    for n in forgotten:
        index.remove_record(f"r{n}")
    live = {c.id: c for c in index.chunks()}
    recount: dict[str, dict[str, int]] = {}
    befores: dict[int, set[int]] = {}
    for after, (before, one, two) in index._talk_pairs.items():
        assert after in live and before in live
        befores.setdefault(before, set()).add(after)
        for a, b in ((one, two), (two, one)):
            recount.setdefault(a, {}).setdefault(b, 0)
            recount[a][b] += 1
    assert {a: dict(c) for a, c in index._talks.items()} == recount
    assert set(index._talks) <= {c.speaker.lower() for c in live.values() if c.speaker}
    held = {b: set(a) if isinstance(a, tuple) else {a} for b, a in index._talk_before.items()}
    assert held == befores


def _strings(value: object) -> Iterator[str]:
    """Every string held in ``value``, through dicts, lists, tuples, sets and dataclasses."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _strings(v)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            yield from _strings(getattr(value, name))


def test_a_speaker_whose_records_are_all_forgotten_leaves_no_name_in_the_index() -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [
        ("a1", "Ann", "Hey Zed! How was the trip?"),
        ("z1", "Zed Quill", "Great, thanks Ann!"),
        ("a2", "Ann", "Thanks, Zed!"),
        ("z2", "Zed Quill", "Hey Ann, the photos are up."),
    ])  # fmt: skip
    assert index.kin({"ann"}) == {"zed quill"} and index.speaker_named("Quill") == "zed quill"
    for record in ("z1", "z2", "a1", "a2"):  # Ann's turns name Zed: they go too
        index.remove_record(record)
    _turns(index, [("a3", "Ann", "Hello again.")])
    held = [text.lower() for name, value in vars(index).items() if name != "_table" for text in _strings(value)]
    assert not any("zed" in text or "quill" in text for text in held), held


def test_an_alias_needs_one_clear_addressee_in_the_same_source() -> None:
    index = BrainIndex(DIM, MODEL)
    _turns(index, [
        ("a1", "Ann", "Hello."), ("b1", "Bob", "Hey Sam!"),
        ("a2", "Ann", "Hi."), ("b2", "Bob", "Hey Sam!"),
        ("b3", "Bob", "Hi."), ("a3", "Ann", "Hey Sam!"),
        ("a4", "Ann", "Hi."), ("b4", "Ann", "Thanks, Sam!"),  # the same speaker twice: addresses no one
    ])  # fmt: skip
    assert index.speaker_named("Sam") == "ann"
    _turns(index, [("b5", "Bob", "Hi."), ("a5", "Ann", "Hey Sam!")])
    assert index.speaker_named("Sam") is None  # as often Ann as Bob
    other = BrainIndex(DIM, MODEL)
    _turns(other, [("x1", "Ann", "Hello.")], source="mail")
    _turns(other, [("y1", "Bob", "Hey Sam!"), ("y2", "Ann", "Hi."), ("y3", "Bob", "Hey Sam!")], source="chat")
    assert other.speaker_named("Sam") is None  # y1 follows a turn of another source: only y3 counts
    _turns(other, [("y4", "Ann", "Hi."), ("y5", "Bob", "Thanks, Sam!")], source="chat")
    assert other.speaker_named("Sam") == "ann"


def test_a_turn_lifts_the_two_turns_on_either_side_of_it_in_its_conversation() -> None:
    long_turn = " ".join(f"Sentence {n} of a long reply that goes on and on about the weather." for n in range(4))
    texts = {f"r{i}": f"Filler turn {i} says nothing here." for i in range(7)}
    texts["r3"] = "Have you tried the new bakery downtown?"
    texts["r2"] = texts["r4"] = long_turn  # several chunks each: spreading skips whole turns
    index = build(texts)
    assert len(index.record_chunks("r4")) > 1
    result = retrieve(index, "bakery", None, budget_tokens=2000, deadline=far_deadline())
    scores = {c.chunk.record_id: c.score for c in result.candidates}
    assert set(scores) == {"r1", "r2", "r3", "r4", "r5"}  # r0 and r6 are three turns away
    assert scores["r3"] > scores["r4"] > scores["r2"]  # a reply earns more than what came before
    assert scores["r5"] > scores["r1"]


def test_spreading_follows_the_brain_s_own_order_while_other_brains_take_ids_in_between() -> None:
    index, other = BrainIndex(DIM, MODEL), BrainIndex(DIM, MODEL)
    texts = ["Filler turn zero.", "Filler turn one.", "Have you tried the new bakery downtown?", "Not yet!", "Soon."]
    for n, text in enumerate(texts):
        index.add(drafts_for(f"r{n}", text), unit(n)[None, :])
        other.add(drafts_for(f"x{n}", "Another Brain's turn."), unit(50 + n)[None, :])
    result = retrieve(index, "bakery", None, budget_tokens=2000, deadline=far_deadline())
    assert {c.chunk.record_id for c in result.candidates} == {"r0", "r1", "r2", "r3", "r4"}
    index.remove_record("r3")  # the turns either side become neighbours
    result = retrieve(index, "bakery", None, budget_tokens=2000, deadline=far_deadline())
    assert {c.chunk.record_id for c in result.candidates} == {"r0", "r1", "r2", "r4"}


def test_spreading_stays_in_its_conversation_and_session() -> None:
    index = BrainIndex(DIM, MODEL)
    turns = [
        ("b1", "other chat", "Filler from another conversation.", T0),
        ("a1", "chat", "Have you tried the new bakery downtown?", T0),
        ("a2", "chat", "Not yet, is it good?", T0),
        ("a3", "chat", "Filler said two days later.", T0 + timedelta(days=2)),
    ]
    for rid, source, text, when in turns:
        drafts = chunk_record(rid, msg(text, when=when), source_name=source, trust="normal", visibility="shareable")
        index.add(drafts, np.stack([unit(len(index.chunks()) + i) for i in range(len(drafts))]))
    result = retrieve(index, "bakery", None, budget_tokens=2000, deadline=far_deadline())
    assert {c.chunk.record_id for c in result.candidates} == {"a1", "a2"}


def test_a_conversation_s_neighbours_are_reached_over_other_sources_records() -> None:
    index = BrainIndex(DIM, MODEL)
    turns = [
        ("a1", "chat", "Have you tried the new bakery downtown?"),
        ("f1", "feed", "Your weekly backup completed."),
        ("a2", "chat", "Not yet, is it good?"),
        ("f2", "feed", "Your monthly report is ready."),
        ("a3", "chat", "Their croissants are the best."),
    ]
    for rid, source, text in turns:
        drafts = chunk_record(rid, msg(text), source_name=source, trust="normal", visibility="shareable")
        index.add(drafts, np.stack([unit(len(index.chunks()) + i) for i in range(len(drafts))]))
    result = retrieve(index, "bakery", None, budget_tokens=2000, deadline=far_deadline())
    assert {c.chunk.record_id for c in result.candidates} == {"a1", "a2", "a3"}


def test_a_conversation_posted_out_of_order_has_the_neighbours_its_times_give() -> None:
    index = BrainIndex(DIM, MODEL)
    turns = [  # as clients posting at once deliver them
        ("a3", "Melanie", "Their croissants are the best.", T0 + timedelta(minutes=2)),
        ("a1", "Caroline", "Have you tried the new bakery downtown?", T0),
        ("a5", "Melanie", "We moved to a new house last month.", T0 + timedelta(minutes=4)),
        ("a2", "Melanie", "Yes, last week!", T0 + timedelta(minutes=1)),
        ("a4", "Caroline", "Anyway, how are you?", T0 + timedelta(minutes=3)),
    ]
    for rid, speaker, text, when in turns:
        drafts = chunk_record(rid, msg(text, speaker=speaker, when=when), source_name="chat", trust="normal",
                              visibility="shareable")  # fmt: skip
        index.add(drafts, np.stack([unit(len(index.chunks()) + i) for i in range(len(drafts))]))
    result = retrieve(index, "bakery", None, budget_tokens=2000, deadline=far_deadline())
    # a1 lifts the two turns said after it: Melanie's a2 and a3 (one turn, lifted at its first Record)
    # and a4; not a5, three turns on, nor a3 for having arrived first
    assert {c.chunk.record_id for c in result.candidates} == {"a1", "a2", "a4"}


def test_packed_neighbours_become_one_passage_within_the_exact_budget() -> None:
    from brainstore import kernels

    text = (
        "I restored an old Mustang in my garage this winter. The Mustang engine purrs now. "
        "Next I want to learn pottery with my friends on weekends."
    )
    index = BrainIndex(DIM, MODEL)
    drafts = drafts_for("r", text)
    assert len(drafts) == 2
    index.add(drafts, np.stack([unit(1), unit(2)]))
    index.add(drafts_for("o", "The garage door is red."), unit(3)[None, :])
    r = retrieve(index, "Mustang garage winter engine pottery", None, budget_tokens=500, deadline=far_deadline())
    [passage] = [p for p in r.selected if p.chunk.record_id == "r"]
    assert [c.text for c in passage.chunks] == [d.text for d in drafts]
    assert passage.text == f"{drafts[0].index_text} {drafts[1].text}"
    assert passage.tokens == kernels.token_count(passage.text)
    assert r.tokens_used == sum(p.tokens for p in r.selected) <= 500
    # a budget that fits only one sentence and its header never gets the pair
    one = kernels.token_count(drafts[0].index_text)
    r = retrieve(index, "Mustang garage winter engine pottery", None, budget_tokens=one, deadline=far_deadline())
    assert all(len(p.chunks) == 1 for p in r.selected) and r.tokens_used <= one


def _two_chunks_and_another(
    source: SourceText, other: SourceText
) -> tuple[BrainIndex, list[Chunk], Chunk, np.ndarray]:
    """An index of a Record of two chunks and one of another Record, and a query vector that ranks the
    Record's chunks first and second and the other one third."""
    index = BrainIndex(DIM, MODEL)
    first = chunk_record(
        "r", source, source_name="chat", trust="normal", visibility="shareable", max_tokens=25
    )
    second = chunk_record(
        "o", other, source_name="chat", trust="normal", visibility="shareable", max_tokens=25
    )
    assert (len(first), len(second)) == (2, 1)
    index.add(first, np.stack([unit(1), unit(2)]))
    index.add(second, unit(3)[None, :])
    query = unit(1) + 0.9 * unit(2) + 0.8 * unit(3)
    ordered = sorted(index._chunks.values(), key=lambda c: (c.record_id != "r", c.start))
    return index, ordered[:2], ordered[2], query / np.linalg.norm(query)


TWO_SENTENCES = (
    "I restored an old Mustang in my garage this winter with my brother. "
    "Next I want to learn pottery with my friends on weekends at the studio."
)


@pytest.mark.parametrize("penalty", [0.0, 1.0])
def test_a_turn_s_second_sentence_packs_after_another_turn_s_best(penalty: float) -> None:
    from dataclasses import replace

    from brainstore import kernels
    from brainstore.retrieval.pipeline import DEFAULT_CONFIG

    index, (r1, r2), other, query = _two_chunks_and_another(
        msg(TWO_SENTENCES),
        msg("The garage door is red and old.", speaker="Melanie", when=T0 + timedelta(hours=1)),
    )
    pair = kernels.token_count(f"{r1.index_text} {r2.text}")
    budget = kernels.token_count(r1.index_text) + kernels.token_count(other.index_text)
    budget = max(budget, pair)
    config = replace(DEFAULT_CONFIG, turn_penalty=penalty, neighbor_weights=())
    r = retrieve(index, "zzz", query, budget_tokens=budget, deadline=far_deadline(), config=config)
    assert [c.chunk.id for c in r.candidates] == [r1.id, r2.id, other.id]
    packed = {c.id for p in r.selected for c in p.chunks}
    # the other turn has the budget's second place only when a turn's later chunks yield it
    assert packed == ({r1.id, other.id} if penalty else {r1.id, r2.id})


def test_the_evidence_is_a_transcript_that_names_each_day_once() -> None:
    from brainstore import kernels

    index = BrainIndex(DIM, MODEL)
    _turns(
        index,
        [
            ("b1", "Caroline", "The puppy chewed my shoes."),
            ("a2", "Melanie", "What a lovely dog!"),
            ("a1", "Caroline", "I adopted a puppy."),
            ("s", "Melanie", "My diary says so."),
        ],
        when={"b1": T0 + timedelta(days=1), "a2": T0 + timedelta(hours=1), "s": T0 + timedelta(days=1, hours=2)},
        visibility={"b1": "redacted_summary"},
    )
    # a note of no speaker and no source: without its day it would read as said by "Agenda"
    note = chunk_record("n", doc("Agenda: walk the puppy.", when=T0 + timedelta(hours=2)), source_name=None,
                        trust="normal", visibility="shareable")  # fmt: skip
    index.add(note, unit(5)[None, :])
    r = retrieve(index, "zzz", _toward_all(index), budget_tokens=2000, deadline=far_deadline())
    # in the order said; a day's first line names it, as a redaction always does
    assert [p.text for p in r.selected] == [
        "Caroline (8 May 2023): I adopted a puppy.",
        "Melanie: What a lovely dog!",
        "(8 May 2023) Agenda: walk the puppy.",
        "[redacted summary: Caroline recorded something on 9 May 2023]",
        "Melanie: My diary says so.",
    ]
    assert [p.tokens for p in r.selected] == kernels.count_tokens([p.text for p in r.selected])
    assert r.tokens_used == sum(p.tokens for p in r.selected)


def test_a_day_s_lines_share_its_header_so_the_budget_takes_more_of_them() -> None:
    from brainstore import kernels

    index = _said(_DOG_TALK)
    dated = [kernels.token_count(c.index_text) for c in sorted(index._chunks.values(), key=lambda c: c.id)]
    budget = sum(dated[:3])  # three lines that each named the day
    r = retrieve(index, "zzz", _toward_all(index), budget_tokens=budget, deadline=far_deadline())
    assert len(r.selected) > 3
    assert r.selected[0].text.startswith("Caroline (8 May 2023): ")
    assert all(p.text.startswith(("Caroline: ", "Melanie: ")) for p in r.selected[1:])
    assert r.tokens_used == sum(kernels.count_tokens([p.text for p in r.selected])) <= budget


@pytest.mark.parametrize("apart", [timedelta(seconds=1), timedelta(0)])
def test_a_burst_of_one_speaker_s_messages_is_one_turn_where_their_times_order_it(apart: timedelta) -> None:
    from dataclasses import replace

    from brainstore import kernels
    from brainstore.retrieval.pipeline import DEFAULT_CONFIG

    index = BrainIndex(DIM, MODEL)
    burst = [("r1", "I restored an old Mustang this winter.", T0), ("r2", "With my brother, in the garage.", T0 + apart)]
    for n, (rid, text, when) in enumerate(burst, start=1):
        index.add(drafts_for(rid, text, when=when), unit(n)[None, :])
    index.add(drafts_for("o", "The garage door is red.", speaker="Melanie", when=T0 + timedelta(minutes=1)), unit(3)[None, :])
    by_record = {c.record_id: c for c in index._chunks.values()}
    first, second, other = by_record["r1"], by_record["r2"], by_record["o"]
    budget = kernels.token_count(first.index_text) + max(
        kernels.token_count(second.index_text), kernels.token_count(other.index_text)
    )
    query = unit(1) + 0.9 * unit(2) + 0.8 * unit(3)
    config = replace(DEFAULT_CONFIG, turn_penalty=1.0, neighbor_weights=())
    r = retrieve(index, "zzz", query / np.linalg.norm(query), budget_tokens=budget, deadline=far_deadline(), config=config)
    assert [c.chunk.id for c in r.candidates] == [first.id, second.id, other.id]
    packed = {c.id for p in r.selected for c in p.chunks}
    # said a second apart, the two messages are one turn of Caroline's and Melanie's reply comes
    # second; said at one time, their order is only the order they came in, and each is a turn
    assert packed == ({first.id, other.id} if apart else {first.id, second.id})


def test_a_document_s_passages_are_not_held_back_for_another_document() -> None:
    from dataclasses import replace

    from brainstore import kernels
    from brainstore.retrieval.pipeline import DEFAULT_CONFIG

    index, (d1, d2), other, query = _two_chunks_and_another(
        doc(TWO_SENTENCES), doc("The garage door is red and old.")
    )
    budget = max(
        kernels.token_count(f"{d1.index_text} {d2.text}"),
        kernels.token_count(d1.index_text) + kernels.token_count(other.index_text),
    )
    config = replace(DEFAULT_CONFIG, turn_penalty=1.0, neighbor_weights=())
    r = retrieve(index, "zzz", query, budget_tokens=budget, deadline=far_deadline(), config=config)
    assert {c.id for p in r.selected for c in p.chunks} == {d1.id, d2.id}


def test_leads_spell_a_run_of_chunks_exactly_as_the_record_does() -> None:
    text = (
        "First one here, and it is long enough to fill most of a chunk by itself alone.\n\n"
        "Second one follows.  Third one ends it all now, at last.\n"
    ) * 3
    drafts = drafts_for("r1", text)
    assert len(drafts) > 3
    found = leads(text, drafts)
    assert found[0] == "" and all(lead is not None and not lead.strip() for lead in found)
    assert {"\n", "  "} <= set(found)  # whatever whitespace the Record has between them
    spelled = drafts[0].text + "".join(lead + d.text for lead, d in zip(found[1:], drafts[1:], strict=True))
    assert spelled == text[drafts[0].start : drafts[-1].end]
    assert leads(text.replace("Second", "Later"), drafts)[1] is None  # the text no longer reads so

    index = BrainIndex(DIM, MODEL)
    chunks = index.add(drafts, np.stack([unit(i) for i in range(len(drafts))]), found)
    assert index.quote(chunks[1:3]) == text[drafts[1].start : drafts[2].end]
    bare = BrainIndex(DIM, MODEL)
    unknown = bare.add(drafts, np.stack([unit(i) for i in range(len(drafts))]))
    assert bare.quote(unknown[:1]) == drafts[0].text and bare.quote(unknown[:2]) is None
    index.remove_record("r1")
    assert index.quote(chunks[1:3]) is None


def test_save_load_round_trip(tmp_path: Path) -> None:
    index = build({"a": "I adopted a puppy named Biscuit.", "b": "We went camping.", "c": "Pottery class!"},
                  {"a": 1, "b": 2, "c": 3})  # fmt: skip
    index.remove_record("c")
    long_text = "We drove to the lake.  It rained all day long, so we stayed in the cabin and read books. " * 2
    run = drafts_for("d", long_text)
    index.add(run, np.stack([unit(10 + i) for i in range(len(run))]), leads(long_text, run))
    index.save(tmp_path)
    loaded = BrainIndex.load(tmp_path)
    assert loaded is not None
    assert loaded.model_name == MODEL and loaded.dimension == DIM
    assert sorted(loaded.chunks(), key=lambda c: c.id) == sorted(index.chunks(), key=lambda c: c.id)
    assert loaded.lexical("puppy", 3) == index.lexical("puppy", 3)
    assert [i for i, _ in loaded.vector(unit(2), 2)] == [i for i, _ in index.vector(unit(2), 2)]
    assert loaded.record_chunks("c") == []
    assert loaded.is_speaker("caroline")
    d_chunks = sorted((c for c in loaded.chunks() if c.record_id == "d"), key=lambda c: c.start)
    assert loaded.quote(d_chunks) == long_text[d_chunks[0].start : d_chunks[-1].end]
    # new ids never collide with loaded ones
    [new] = loaded.add(drafts_for("d", "Another one."), unit(4)[None, :])
    assert new.id not in {c.id for c in index.chunks()}


def _as_rows(directory: Path, version: int) -> None:
    """Rewrite a saved index's chunks as a file of format ``version`` (2 or 3) held them: a row a chunk, in
    the columns' order; format 3 added each chunk's count as a line that does not name its day."""
    from brainstore.retrieval.index import _COLUMNS

    meta = json.loads((directory / "chunks.json").read_text())
    names = _COLUMNS if version == 3 else _COLUMNS[:-1]
    meta["format"] = version
    meta["chunks"] = [list(row) for row in zip(*(meta["chunks"][name] for name in names), strict=True)]
    (directory / "chunks.json").write_text(json.dumps(meta))


def test_files_of_the_row_format_load_alike_and_are_written_again_as_columns(tmp_path: Path) -> None:
    index = build({"a": "I adopted a puppy named Biscuit. It was in May.", "b": "We went camping.", "c": "Hi."})
    index.save(tmp_path)
    current = BrainIndex.load(tmp_path)
    assert current is not None and not current.unsaved
    _as_rows(tmp_path, 3)
    loaded = BrainIndex.load(tmp_path)
    assert loaded is not None and loaded.unsaved  # to be written in the current format
    assert [(c, loaded.table.token_counts(c.id), loaded.table.line_tokens([c.id])) for c in loaded.chunks()] == [
        (c, current.table.token_counts(c.id), current.table.line_tokens([c.id])) for c in current.chunks()
    ]
    assert [i for i, _ in loaded.vector(unit(1000), 3)] == [i for i, _ in current.vector(unit(1000), 3)]
    loaded.save(tmp_path)
    assert isinstance(json.loads((tmp_path / "chunks.json").read_text())["chunks"], dict)


def test_files_of_the_previous_format_load_with_each_line_counted_again(tmp_path: Path) -> None:
    from brainstore import kernels

    index = build({"a": "I adopted a puppy named Biscuit.", "b": "We went camping."})
    index.save(tmp_path)
    _as_rows(tmp_path, 2)
    loaded = BrainIndex.load(tmp_path)
    assert loaded is not None
    for chunk in loaded.chunks():
        assert loaded.table.token_counts(chunk.id)[0] == kernels.token_count(f"Caroline (8 May 2023): {chunk.text}")
        assert loaded.table.line_tokens([chunk.id]) == [kernels.token_count(f"Caroline: {chunk.text}")]
    assert loaded.unsaved  # to be written in the current format
    loaded.save(tmp_path)
    again = BrainIndex.load(tmp_path)
    assert again is not None and not again.unsaved
    assert [again.table.line_tokens([c.id]) for c in again.chunks()] == [loaded.table.line_tokens([c.id]) for c in again.chunks()]


def test_an_index_knows_whether_its_files_hold_what_it_holds(tmp_path: Path) -> None:
    index = build({"a": "I adopted a puppy named Biscuit.", "b": "We went camping."})
    assert index.unsaved  # in no file yet
    index.save(tmp_path)
    assert not index.unsaved
    assert index.remove_record("nothing") == [] and not index.unsaved
    index.remove_record("b")
    assert index.unsaved
    index.save(tmp_path)
    loaded = BrainIndex.load(tmp_path)
    assert loaded is not None and not loaded.unsaved
    loaded.add(drafts_for("c", "Pottery class!"), unit(3)[None, :])
    assert loaded.unsaved


def test_loading_makes_files_saved_readable_by_others_private(tmp_path: Path) -> None:
    import stat

    build({"a": "I adopted a puppy named Biscuit."}).save(tmp_path)
    for saved in tmp_path.iterdir():
        saved.chmod(0o644)  # as versions before the umask wrote them
    assert BrainIndex.load(tmp_path) is not None
    assert sorted(oct(stat.S_IMODE(p.stat().st_mode)) for p in tmp_path.iterdir()) == ["0o600", "0o600"]


def test_index_files_that_cannot_be_made_private_still_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build({"a": "I adopted a puppy named Biscuit."}).save(tmp_path)
    for saved in tmp_path.iterdir():
        saved.chmod(0o644)

    def refuse(self: Path, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted", str(self))

    monkeypatch.setattr(Path, "chmod", refuse)  # another owner's files, or a read-only mount
    loaded = BrainIndex.load(tmp_path)
    assert loaded is not None and len(loaded) == 1


@pytest.mark.parametrize("graph", [True, False], ids=["graph", "flat"])
def test_a_saved_graph_holds_no_vector_of_a_removed_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, graph: bool) -> None:
    """Neither the file a save writes nor the index in memory holds a removed chunk's vector, whether
    a small Brain's matrix or a graph (a Brain past FLAT_MAX), which hnswlib would keep it in."""
    import pickle

    import hnswlib

    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 0 if graph else index_module.FLAT_MAX)
    index = build({"a": "I adopted a puppy named Biscuit.", "b": "We went camping."}, {"a": 1, "b": 2})
    assert index.build_graph()
    erased, kept = unit(1).tobytes(), unit(2).tobytes()
    ids = {c.record_id: c.id for c in index.chunks()}
    index.remove_record("a")
    # hnswlib keeps a deleted element's vector: a graph saved as it is holds the erased one.
    raw = hnswlib.Index(space="ip", dim=DIM)
    raw.init_index(max_elements=4, allow_replace_deleted=True)
    raw.add_items(np.stack([unit(1), unit(2)]), np.asarray([ids["a"], ids["b"]], dtype=np.uint64))
    raw.mark_deleted(ids["a"])
    raw.save_index(str(tmp_path / "raw.hnsw"))
    assert erased in (tmp_path / "raw.hnsw").read_bytes()
    if graph:
        assert isinstance(index._hnsw, hnswlib.Index)
        held = pickle.dumps(index._hnsw)  # every byte of the graph in memory, deleted elements too
        assert erased not in held and kept in held
    else:
        assert erased not in index._hnsw._matrix.tobytes()
    index.save(tmp_path / "saved")
    saved = (tmp_path / "saved" / "vectors.hnsw").read_bytes()
    assert erased not in saved and kept in saved
    loaded = BrainIndex.load(tmp_path / "saved")
    assert loaded is not None and [c.record_id for c in loaded.chunks()] == ["b"]
    assert [i for i, _ in loaded.vector(unit(1), 5)] == [c.id for c in loaded.chunks()]
    # A graph an older version saved with the vector in it is cleaned when it is loaded.
    (tmp_path / "saved" / "vectors.hnsw").write_bytes((tmp_path / "raw.hnsw").read_bytes())
    meta = json.loads((tmp_path / "saved" / "chunks.json").read_text())
    meta["hnsw_bytes"] = (tmp_path / "raw.hnsw").stat().st_size
    (tmp_path / "saved" / "chunks.json").write_text(json.dumps(meta))
    assert BrainIndex.load(tmp_path / "saved") is not None
    assert erased not in (tmp_path / "saved" / "vectors.hnsw").read_bytes()


def test_a_removed_text_leaves_no_word_in_the_lexical_lanes() -> None:
    """The BM25 indexes hold the terms of what they hold: a forgotten Record's words leave the chunk
    index, and a Memory's old statement's words leave the Memory lane when it is restated or removed."""
    from brainstore.retrieval.memory_lane import LaneEntry, MemoryLane

    index = build({"a": "I adopted a puppy named Biscuit in Zanzibar.", "b": "We went camping."})
    rest = build({"b": "We went camping."})
    assert index._lexical.term_count() > rest._lexical.term_count()
    index.remove_record("a")
    assert index._lexical.term_count() == rest._lexical.term_count()
    assert not index.lexical("Biscuit Zanzibar", 5)

    lane = MemoryLane()
    entry = LaneEntry("mem_1", (("rec_1", 0, 10),), 0.0, None)
    lane.upsert(entry, "Caroline owns a puppy named Biscuit")
    lane.upsert(LaneEntry("mem_2", (("rec_2", 0, 10),), 0.0, None), "Caroline went camping")
    lane.upsert(entry, "Caroline owns a cat")  # restated: Biscuit and puppy go
    assert lane._lexical.term_count() == len({"carolin", "own", "cat", "went", "camp"})
    lane.remove("mem_1")
    lane.remove("mem_2")
    assert lane._lexical.term_count() == 0


def test_a_graph_searches_right_after_its_removed_vectors_are_zeroed_and_their_slots_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Zeroing a removed element updates it in place (hnswlib re-links its neighbours): the graph still
    finds every live chunk by its own vector, never a removed one, and new chunks take the slots."""
    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 0)
    texts = {f"rec_{n}": f"Note number {n} about the garden." for n in range(60)}
    index = build(texts, {rid: 10 * n for n, rid in enumerate(texts)})
    assert index.build_graph()
    for n in range(0, 60, 3):
        index.remove_record(f"rec_{n}")
    for n in range(60, 80):
        index.add(drafts_for(f"rec_{n}", f"Note number {n} about the garden."), unit(10 * n)[None, :])
    live = {c.id: c.record_id for c in index.chunks()}
    assert len(live) == 60 and not any(int(rid[4:]) % 3 == 0 and int(rid[4:]) < 60 for rid in live.values())
    for chunk_id, rid in live.items():
        found = index.vector(unit(10 * int(rid[4:])), 5)
        assert found[0][0] == chunk_id and all(i in live for i, _ in found)


def test_a_graph_built_beside_changes_holds_what_the_index_holds_and_no_vector_removed_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """build_graph works a slice at a time off the write lock: a chunk removed meanwhile, whether its
    slice was already in the graph or not, is neither found nor left in the graph's bytes; one added
    meanwhile is found; a build told to stop leaves the matrix answering."""
    import pickle

    import hnswlib

    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 4)
    monkeypatch.setattr(index_module, "_GRAPH_SLICE", 3)
    texts = {f"r{n}": f"Note number {n} about the garden." for n in range(12)}
    index = build(texts, {rid: n for n, rid in enumerate(texts)})
    assert index.needs_graph
    assert not index.build_graph(stop=lambda: True) and isinstance(index._hnsw, index_module._FlatVectors)

    asked = 0

    def change_between_slices() -> bool:
        nonlocal asked
        asked += 1
        if asked == 3:  # r0..r5 are in the graph, r6.. are not yet
            index.remove_record("r1")
            index.remove_record("r10")
            index.add(drafts_for("r12", "A late note about the garden."), unit(12)[None, :])
        return False

    assert index.build_graph(stop=change_between_slices) and asked == 4 + 1  # then r12, added meanwhile
    assert isinstance(index._hnsw, hnswlib.Index) and not index.needs_graph
    held = pickle.dumps(index._hnsw)
    assert unit(1).tobytes() not in held and unit(10).tobytes() not in held and unit(11).tobytes() in held
    by_record = {c.id: c.record_id for c in index.chunks()}
    assert sorted(by_record.values()) == sorted({*texts, "r12"} - {"r1", "r10"})
    for chunk_id, rid in by_record.items():
        found = index.vector(unit(int(rid[1:])), 12)
        assert found[0][0] == chunk_id and {i for i, _ in found} <= by_record.keys()


def test_a_graph_that_took_over_takes_as_many_chunks_as_the_index_made_room_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index grows its graph only past the room it made (its capacity), which the matrix took up
    during the build: the graph that takes over has that room too, erased elements' slots counted."""
    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 4)
    monkeypatch.setattr(index_module, "_INITIAL_CAPACITY", 8)
    monkeypatch.setattr(index_module, "_GRAPH_SLICE", 4)
    index = BrainIndex(DIM, MODEL)
    for n in range(8):
        index.add(drafts_for(f"r{n}", f"Note number {n}."), unit(n)[None, :])
    asked = 0

    def grow_between_slices() -> bool:
        nonlocal asked
        asked += 1
        if asked == 2:  # r0..r3 in the graph: two erased there, two more in the room they left
            index.remove_record("r1")
            index.remove_record("r2")
            for n in range(8, 10):
                index.add(drafts_for(f"r{n}", f"Note number {n}."), unit(n)[None, :])
        return False

    assert index.build_graph(stop=grow_between_slices)
    for n in range(10, 40):  # within the room the index made, then past it
        index.add(drafts_for(f"r{n}", f"Note number {n}."), unit(n)[None, :])
    by_record = {c.id: c.record_id for c in index.chunks()}
    assert len(by_record) == 38
    assert all(by_record[index.vector(unit(n), 1)[0][0]] == f"r{n}" for n in range(40) if n not in (1, 2))


def test_a_graph_built_on_another_thread_while_chunks_come_and_go_holds_exactly_the_live_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the interleaving of a build on its own thread with removals and additions on this one,
    the graph that takes over finds every live chunk by its vector and holds no removed one's."""
    import pickle

    import hnswlib

    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 50)
    monkeypatch.setattr(index_module, "_GRAPH_SLICE", 16)
    index = BrainIndex(DIM, MODEL)
    for n in range(300):
        index.add(drafts_for(f"r{n}", f"Note number {n}."), unit(n)[None, :])
    slices = threading.Semaphore(0)

    def pause() -> bool:  # between slices: the changes land while the graph is being built
        slices.release()
        time.sleep(0.003)
        return False

    builder = threading.Thread(target=index.build_graph, kwargs={"stop": pause})
    builder.start()
    for _ in range(8):  # the first chunks are in the graph already
        assert slices.acquire(timeout=10)
    during = 0
    for n in range(0, 300, 3):
        index.remove_record(f"r{n}")
        index.add(drafts_for(f"r{300 + n}", f"Note number {300 + n}."), unit(300 + n)[None, :])
        during += index.needs_graph
    builder.join(60)
    assert during  # some changes landed while the graph was being built
    assert not builder.is_alive() and isinstance(index._hnsw, hnswlib.Index)
    held = pickle.dumps(index._hnsw)
    assert not any(unit(n).tobytes() in held for n in range(0, 300, 3))
    for chunk in index.chunks():
        assert index.vector(unit(int(chunk.record_id[1:])), 1)[0][0] == chunk.id
    assert len(index.chunks()) == 300


def test_a_filtered_search_answers_alike_before_and_after_the_graph_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Among a filter's chunks, or without excluded ones, the matrix a grown Brain keeps until its graph
    is built finds what the graph finds after (a graph this small is walked whole)."""
    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 4)
    monkeypatch.setattr(index_module, "_BRUTE_FORCE_MAX", 2)
    index = BrainIndex(DIM, MODEL)
    for n in range(12):
        when = datetime(2023, 1 + n % 12, 1, tzinfo=UTC)
        index.add(drafts_for(f"r{n}", f"Note number {n} about the garden.", when=when), unit(n)[None, :])
    allowed = index.select(ChunkFilter(since=datetime(2023, 4, 1, tzinfo=UTC).timestamp()))
    assert index.needs_graph and 2 < len(allowed) < 12
    hidden = frozenset(c.id for c in index.chunks() if int(c.record_id[1:]) % 4 == 1)  # as local_only ones

    def searches() -> list[list[tuple[int, float]]]:
        return [index.vector(unit(n), 3, allowed) for n in range(12)] + [
            index.vector(unit(n), 3, excluded=hidden) for n in range(12)
        ]

    before = searches()
    assert index.build_graph()
    after = searches()
    assert [[i for i, _ in found] for found in after] == [[i for i, _ in found] for found in before]
    assert [s for found in after for _, s in found] == pytest.approx([s for found in before for _, s in found], abs=1e-5)
    assert all(i in allowed for found in before[:12] for i, _ in found)
    assert not any(i in hidden for found in before[12:] for i, _ in found) and all(len(found) == 3 for found in before)


def test_a_small_brain_scores_a_matrix_and_a_grown_one_walks_a_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to FLAT_MAX chunks the vectors are a matrix scored exactly (no hnswlib index: 2.5 MiB each
    however small); past it they move into a graph when build_graph is called, the matrix answering
    until then. Both answer alike, and removals made before the move stay removed; a saved Brain loads
    back into the form its size calls for."""
    import hnswlib

    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FLAT_MAX", 6)
    index = BrainIndex(DIM, MODEL)
    texts = {f"r{n}": f"Note number {n} about the garden." for n in range(10)}
    for n, (rid, text) in enumerate(texts.items()):
        [draft] = drafts_for(rid, text)
        index.add([draft], unit(n)[None, :])
        if n == 2:
            index.remove_record("r1")
        assert index.needs_graph == (n == 7)  # 7 live chunks once r1 is gone
        if n == 7:
            by_record = {c.id: c.record_id for c in index.chunks()}
            assert by_record[index.vector(unit(n), 1)[0][0]] == rid
            assert index.build_graph() and not index.needs_graph
        assert isinstance(index._hnsw, hnswlib.Index) == (n >= 7)
        by_record = {c.id: c.record_id for c in index.chunks()}
        best = [by_record[i] for i, _ in index.vector(unit(n), 3)]
        assert best[0] == rid and (n < 2 or "r1" not in best)
    assert "r1" not in [c.record_id for c in index.chunks()] and len(index) == 9
    index.save(tmp_path / "big")
    index.remove_record("r0")
    for name in ("r2", "r3", "r4"):
        index.remove_record(name)
    index.save(tmp_path / "small")
    big, small = BrainIndex.load(tmp_path / "big"), BrainIndex.load(tmp_path / "small")
    assert big is not None and small is not None
    assert isinstance(big._hnsw, hnswlib.Index) and not isinstance(small._hnsw, hnswlib.Index)
    for loaded in (big, small):
        by_record = {c.id: c.record_id for c in loaded.chunks()}
        assert by_record[loaded.vector(unit(9), 1)[0][0]] == "r9"
        assert np.allclose(loaded.vectors([c.id for c in loaded.chunks() if c.record_id == "r9"])[0], unit(9))


def test_load_refuses_other_model_and_corrupt_files(tmp_path: Path) -> None:
    assert BrainIndex.load(tmp_path / "missing") is None
    build({"a": "hello world"}).save(tmp_path)
    assert BrainIndex.load(tmp_path, "another-model") is None
    assert BrainIndex.load(tmp_path, MODEL) is not None
    meta = tmp_path / "chunks.json"
    data = json.loads(meta.read_text())
    data["model_name"] = "other"
    meta.write_text(json.dumps(data))
    assert BrainIndex.load(tmp_path, MODEL) is None
    data["model_name"] = MODEL
    data["chunks"]["text"].pop()  # columns of different lengths
    meta.write_text(json.dumps(data))
    assert BrainIndex.load(tmp_path) is None
    meta.write_text("{not json")
    assert BrainIndex.load(tmp_path) is None
    build({"a": "hello world"}).save(tmp_path)
    (tmp_path / "vectors.hnsw").write_bytes(b"garbage")
    assert BrainIndex.load(tmp_path) is None


# ------------------------------------------------------------------------------------------ pipeline


def test_query_words() -> None:
    assert lexical_query("When did Caroline go to the LGBTQ support group?") == "Caroline LGBTQ support group"
    assert lexical_query("What is it?") == "What is it?"
    # speakers' names go (the speaker boost handles them), other names stay
    def speakers(word: str) -> bool:  # asked of the word as written
        return word.lower() in {"caroline", "melanie"}

    assert lexical_query("Did Caroline meet Melanie's friend Toby?", speakers) == "meet friend Toby"
    assert lexical_query("Who is Caroline?", speakers) == "Who is Caroline?"
    assert content_terms("What did Melanie's kids like about the dinosaur exhibit?") == [
        "Melanie", "kids", "like", "dinosaur", "exhibit",
    ]  # fmt: skip


def conversation_index() -> tuple[BrainIndex, dict[str, int]]:
    turns = {
        "t1": ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        "t2": ("Melanie", "That's great! I painted a sunrise last year, want to see it?"),
        "t3": ("Caroline", "Yes please! I'm researching adoption agencies these days."),
        "t4": ("Melanie", "We went camping with the kids and roasted marshmallows."),
        "t5": ("Caroline", "Thanks!"),
        "t6": ("Melanie", "The dinosaur exhibit at the museum was the kids' favourite."),
    }
    index = BrainIndex(DIM, MODEL)
    seeds = {}
    for n, (rid, (speaker, text)) in enumerate(turns.items()):
        when = T0 + timedelta(days=30 * n)
        drafts = chunk_record(rid, msg(text, speaker=speaker, when=when), source_name="chat", trust="normal",
                              visibility="shareable")  # fmt: skip
        index.add(drafts, unit(n)[None, :])
        seeds[rid] = n
    return index, seeds


def test_retrieve_finds_lexical_and_vector_matches() -> None:
    index, seeds = conversation_index()
    r = retrieve(index, "When did Caroline go to the support group?", unit(seeds["t4"]), budget_tokens=2000,
                 deadline=far_deadline())  # fmt: skip
    records = [c.chunk.record_id for c in r.selected]
    assert "t1" in records and "t4" in records
    assert max(r.selected, key=lambda p: p.score).chunk.record_id in {"t1", "t4"}
    top = next(c for c in r.candidates if c.chunk.record_id == "t1")
    assert r.lane_ranks([top.chunk.id])[0]["lexical"]["rank"] == 0
    assert [lane["name"] for lane in r.lanes] == ["lexical", "vector"]
    assert not any(lane["cut"] for lane in r.lanes)
    assert r.tokens_used == sum(c.tokens for c in r.selected)
    # a transcript: in the order said
    said = [(p.chunk.occurred_at, p.chunk.id) for p in r.selected]
    assert said == sorted(said)


def test_a_named_period_lifts_what_was_said_in_it() -> None:
    index = BrainIndex(DIM, MODEL)
    # The same words said twice, a year apart: recency prefers the later, the query names the earlier.
    for n, (rid, when) in enumerate([("early", T0), ("late", T0 + timedelta(days=365))]):
        drafts = chunk_record(rid, msg("We adopted a puppy from the shelter.", when=when), source_name="chat",
                              trust="normal", visibility="shareable")  # fmt: skip
        index.add(drafts, unit(n)[None, :])
    start = datetime(2023, 5, 1, tzinfo=UTC)
    focus = [(start.timestamp(), (start + timedelta(days=31)).timestamp())]

    def scores(**kw) -> dict[str, float]:
        r = retrieve(index, "What did Caroline adopt?", unit(7), budget_tokens=2000, deadline=far_deadline(),
                     now=T0 + timedelta(days=400), **kw)  # fmt: skip
        return {c.chunk.record_id: c.score for c in r.candidates}

    score, boosted = scores(), scores(focus=focus)
    assert max(score, key=score.__getitem__) == "late"
    assert boosted["late"] == score["late"] and boosted["early"] > score["early"]
    assert max(boosted, key=boosted.__getitem__) == "early"


def test_the_first_person_of_a_query_names_the_asker() -> None:
    index = BrainIndex(DIM, MODEL)
    # Both said the same words; the later turn (Melanie's) wins on recency unless the asker is named.
    for n, (rid, speaker) in enumerate([("mine", "Caroline Reyes"), ("theirs", "Melanie")]):
        drafts = chunk_record(rid, msg("We adopted a puppy from the shelter.", speaker=speaker,
                                       when=T0 + timedelta(days=n)),
                              source_name="chat", trust="normal", visibility="shareable")  # fmt: skip
        index.add(drafts, unit(n)[None, :])

    def scores(query: str, asker: str | None) -> dict[str, float]:
        r = retrieve(index, query, unit(7), budget_tokens=2000, deadline=far_deadline(),
                     now=T0 + timedelta(days=30), asker=asker)  # fmt: skip
        return {c.chunk.record_id: c.score for c in r.candidates}

    plain = scores("When did I adopt my puppy?", None)
    assert max(plain, key=plain.__getitem__) == "theirs"
    for asker in ("Caroline Reyes", "caroline reyes", "Caroline"):  # the self's name, as the Brain holds it
        asked = scores("When did I adopt my puppy?", asker)
        assert asked["theirs"] == plain["theirs"] and max(asked, key=asked.__getitem__) == "mine"
    assert scores("When did we adopt the puppy?", "Caroline") == plain  # no first person: nobody named
    assert scores("When did I adopt my puppy?", "Dave") == plain  # a self who never spoke here
    # "I" stays out of the lexical query either way: the boost, not the word, prefers the asker
    assert lexical_query("When did I adopt my puppy?") == "adopt puppy"


@settings(deadline=None, max_examples=30)
@given(st.integers(0, 400), st.sampled_from(["camping kids", "adoption", "sunrise painting", "zzz"]))
def test_packing_never_exceeds_budget(budget: int, query: str) -> None:
    index, seeds = conversation_index()
    r = retrieve(index, query, unit(seeds["t2"]), budget_tokens=budget, deadline=far_deadline())
    assert r.tokens_used <= budget
    assert r.tokens_used == sum(c.tokens for c in r.selected)
    from brainstore import kernels

    assert all(c.tokens == kernels.token_count(cited_form(c.chunk)) for c in r.selected)


def test_eligible_filter_is_applied_before_ranking() -> None:
    index, seeds = conversation_index()

    # the turns are 30 days apart from T0: t3 and t4 fall in [T0 + 50 days, T0 + 100 days]
    window = ChunkFilter(since=(T0 + timedelta(days=50)).timestamp(), until=(T0 + timedelta(days=100)).timestamp())
    r = retrieve(index, "support group adoption camping", unit(seeds["t1"]), budget_tokens=2000,
                 deadline=far_deadline(), eligible=window)  # fmt: skip
    assert r.selected
    assert {c.chunk.record_id for c in r.candidates} <= {"t3", "t4"}
    r = retrieve(index, "support group", unit(seeds["t1"]), budget_tokens=2000, deadline=far_deadline(),
                 eligible=ChunkFilter(sources=frozenset({"elsewhere"})))  # fmt: skip
    assert r.selected == [] and r.candidates == [] and r.tokens_used == 0


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.tuples(st.sampled_from(["chat", "mail"]), st.integers(0, 30)), min_size=1, max_size=24),
    st.none() | st.integers(0, 30),
    st.none() | st.integers(0, 30),
    st.none() | st.sets(st.sampled_from(["chat", "mail", "web"])),
    st.sets(st.integers(0, 23), max_size=4),
)
def test_spread_score_reaches_only_chunks_the_selection_admits(
    turns: list[tuple[str, int]], since: int | None, until: int | None, sources: set[str] | None, hidden: set[int]
) -> None:
    """A filter's rules are stated twice: BrainIndex.select (numpy columns) gives the lanes their
    allowed ids, ChunkTable.rank (Rust) admits neighbours by them. A neighbour the selection does not
    hold must never become a candidate."""
    index = BrainIndex(DIM, MODEL)
    ids = []
    for n, (source, minute) in enumerate(turns):  # minutes apart: every turn is a neighbour of the next
        drafts = chunk_record(f"r{n}", msg(f"camping turn {n}", when=T0 + timedelta(minutes=minute)),
                              source_name=source, trust="normal", visibility="shareable")  # fmt: skip
        ids += [c.id for c in index.add(drafts, unit(n)[None, :])]
    minute = lambda m: None if m is None else (T0 + timedelta(minutes=m)).timestamp()  # noqa: E731
    flt = ChunkFilter(since=minute(since), until=minute(until), sources=None if sources is None else frozenset(sources))
    excluded = frozenset(ids[i] for i in hidden if i < len(ids))
    admitted = set(index.select(flt, excluded).ids.tolist())
    r = retrieve(index, "camping turn", unit(0), budget_tokens=2000, deadline=far_deadline(), eligible=flt,
                 excluded=excluded)  # fmt: skip
    assert {c.chunk.id for c in r.candidates} <= admitted


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["chat", "mail", None])), min_size=0, max_size=30),
    st.one_of(st.none(), st.integers(0, 40)),
    st.one_of(st.none(), st.integers(0, 40)),
    st.one_of(st.none(), st.frozensets(st.sampled_from(["chat", "mail", "web"]))),
    st.data(),
)
def test_select_admits_exactly_what_the_filter_says(records, since, until, sources, data) -> None:
    index = BrainIndex(DIM, MODEL)
    for n, (day, source) in enumerate(records):
        drafts = chunk_record(f"r{n}", msg(f"turn {n}", when=T0 + timedelta(days=day)), source_name=source,
                              trust="normal", visibility="shareable")  # fmt: skip
        index.add(drafts, unit(n)[None, :])
    live = index.chunks()
    for gone in data.draw(st.lists(st.sampled_from([c.record_id for c in live]), max_size=3) if live else st.just([])):
        index.remove_record(gone)  # the arrays follow removals
    excluded = frozenset(c.id for c in index.chunks()[::3])
    day = lambda d: None if d is None else (T0 + timedelta(days=d)).timestamp()  # noqa: E731
    flt = ChunkFilter(since=day(since), until=day(until), sources=sources)
    expected = {
        c.id
        for c in index.chunks()
        if (since is None or c.occurred_at >= T0 + timedelta(days=since))
        and (until is None or c.occurred_at <= T0 + timedelta(days=until))
        and (sources is None or c.source_name in sources)
        and c.id not in excluded
    }
    selection = index.select(flt, excluded)
    assert set(selection.ids.tolist()) == expected and len(selection) == len(expected)
    assert all(c.id in selection for c in index.chunks() if c.id in expected)
    assert not any(c.id in selection for c in index.chunks() if c.id not in expected)


def test_a_record_forgotten_while_the_lanes_run_is_left_out() -> None:
    index, seeds = conversation_index()

    def forget_t1() -> list[tuple[int, float]]:
        index.remove_record("t1")  # as a concurrent forgetRecord would, after the first two lanes
        return []

    r = retrieve(index, "support group", unit(seeds["t1"]), budget_tokens=2000, deadline=far_deadline(),
                 extra_lanes=[("memory", forget_t1, 1.0)])  # fmt: skip
    assert r.selected and all(p.chunk.record_id != "t1" for p in r.selected)
    assert all(c.chunk.record_id != "t1" for c in r.candidates)


def test_deadline_cuts_a_lane() -> None:
    index, seeds = conversation_index()
    r = retrieve(index, "support group", unit(seeds["t1"]), budget_tokens=2000, deadline=time.monotonic() - 1)
    assert [(lane["name"], lane["cut"]) for lane in r.lanes] == [("lexical", True), ("vector", True)]
    assert r.selected == []
    assert "support" in r.unknowns

    # without a query vector there is no vector lane at all
    r = retrieve(index, "support group", None, budget_tokens=2000, deadline=far_deadline())
    assert [(lane["name"], lane["cut"]) for lane in r.lanes] == [("lexical", False)]


def test_deadline_between_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    index, seeds = conversation_index()
    original = index.lexical

    def slow_lexical(*args, **kwargs):
        time.sleep(0.05)
        return original(*args, **kwargs)

    monkeypatch.setattr(index, "lexical", slow_lexical)
    r = retrieve(
        index, "support group", unit(seeds["t4"]), budget_tokens=2000, deadline=time.monotonic() + 0.02
    )
    assert [(lane["name"], lane["cut"]) for lane in r.lanes] == [("lexical", False), ("vector", True)]
    assert [c.chunk.record_id for c in r.selected] == ["t1"]


def test_trust_and_near_duplicates() -> None:
    index = BrainIndex(DIM, MODEL)
    text = "My sister lives in Lisbon and works as a nurse there."
    for rid, trust in (("low", "low"), ("high", "high")):
        drafts = chunk_record(rid, msg(text), source_name=None, trust=trust, visibility="shareable")
        index.add(drafts, unit(5)[None, :])
    r = retrieve(index, "sister Lisbon", unit(5), budget_tokens=2000, deadline=far_deadline())
    assert next(c.chunk.record_id for c in r.candidates) == "high"
    assert [c.chunk.record_id for c in r.selected] == ["high"]  # the low-trust copy is a near duplicate


def test_unknowns_are_terms_no_selected_chunk_has() -> None:
    index, _seeds = conversation_index()
    r = retrieve(index, "Did Melanie visit the dinosaur exhibit in Tokyo?", None, budget_tokens=2000,
                 deadline=far_deadline())  # fmt: skip
    assert any(c.chunk.record_id == "t6" for c in r.selected)
    assert r.unknowns == ["visit", "Tokyo"]


def test_filtered_graph_search_on_a_large_allowed_set() -> None:
    index, chunks, vectors = random_index(3000, seed=1)
    allowed = Selection([c.id for n, c in enumerate(chunks) if n % 2 == 0])
    hits = index.vector(vectors[10], 20, allowed)
    assert len(hits) == 20 and all(i in allowed for i, _ in hits)
    assert hits[0][0] == chunks[10].id
    hits = index.vector(vectors[11], 5, allowed)
    assert chunks[11].id not in {i for i, _ in hits}
    exact = sorted(
        ((float(vectors[n] @ vectors[11]), c.id) for n, c in enumerate(chunks) if c.id in allowed), reverse=True
    )
    assert [i for i, _ in hits] == [i for _, i in exact[:5]]


def test_filtered_search_when_the_filter_shuns_the_query_s_neighbourhood() -> None:
    # Nothing near the query is admitted: the filtered graph walk must go far for its answer, which
    # holds only admitted chunks, best first.
    index, chunks, vectors = random_index(6000, seed=2)
    similarity = vectors @ vectors[0]
    far = Selection([c.id for c, sim in zip(chunks, similarity, strict=True) if sim < np.median(similarity)])
    hits = index.vector(vectors[0], 50, far)
    assert len(hits) == 50 and all(i in far for i, _ in hits)
    assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)
    best_far = max(float(sim) for c, sim in zip(chunks, similarity, strict=True) if c.id in far)
    assert hits[0][1] == pytest.approx(best_far, abs=1e-5)


def test_select_keeps_up_across_batched_additions_and_removals(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainstore.retrieval import index as index_module

    monkeypatch.setattr(index_module, "_COLUMN_BATCH", 3)
    index = BrainIndex(DIM, MODEL)
    for n in range(20):
        drafts = chunk_record(f"r{n}", msg(f"turn {n}", when=T0 + timedelta(days=n)), source_name="chat",
                              trust="normal", visibility="shareable")  # fmt: skip
        index.add(drafts, unit(n)[None, :])
        if n % 4 == 3:
            index.remove_record(f"r{n - 1}")
        if n == 10:
            assert len(index.select(ChunkFilter())) == len(index)
    since = ChunkFilter(since=(T0 + timedelta(days=8)).timestamp())
    expected = {c.id for c in index.chunks() if c.occurred_at >= T0 + timedelta(days=8)}
    assert set(index.select(since).ids.tolist()) == expected and len(expected) == 9


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(1, 40),
    removed=st.sets(st.integers(0, 39), max_size=10),
    k=st.integers(1, 12),
    admit_every=st.integers(1, 3),
    seed=st.integers(0, 1000),
    twins=st.booleans(),
)
def test_the_matrix_lane_answers_exactly_what_scoring_every_vector_does(
    n: int, removed: set[int], k: int, admit_every: int, seed: int, twins: bool
) -> None:
    """Best first by inner product, ties by id (``twins``: vectors in equal pairs), removed vectors
    never, a filter's refusals skipped."""
    from brainstore.retrieval.index import _FlatVectors

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    if twins:
        vectors[1::2] = vectors[0::2][: n // 2]
    ids = np.arange(100, 100 + n, dtype=np.int64)
    flat = _FlatVectors(8)
    flat.add_items(vectors[: n // 2], ids[: n // 2])
    flat.add_items(vectors[n // 2 :], ids[n // 2 :])  # in two calls: the matrix grows between them
    gone = {100 + r for r in removed if r < n}
    for chunk_id in gone:
        flat.mark_deleted(chunk_id)
    query = rng.standard_normal(8).astype(np.float32)
    admits = (lambda i: i % admit_every == 0) if admit_every > 1 else None
    labels, distances = flat.knn_query(query, k=k, filter=admits)
    expected = sorted(
        (i for i in ids.tolist() if i not in gone and (admits is None or admits(i))),
        key=lambda i: (-float(vectors[i - 100] @ query), i),
    )[:k]
    assert labels[0].tolist() == expected
    assert np.allclose(1.0 - distances[0], [vectors[i - 100] @ query for i in expected], atol=1e-5)
    assert sorted(flat.get_ids_list()) == sorted(set(ids.tolist()) - gone)
    # the same among a Selection's ids (which may name removed ones, and ids beyond the matrix's)
    admitted = [i for i in range(90, 150) if admits is None or admits(i)]
    among, _ = flat.knn_among(query, k, Selection(np.asarray(admitted, dtype=np.int64)).holds)
    assert among[0].tolist() == expected


def test_a_records_chunks_around_a_span_are_the_first_few_holding_it() -> None:
    """What the memory lane lifts of a Record a Memory cites: the whole Record when it is a turn of a few
    chunks, else the first ``whole`` chunks holding the cited words, found by bisection."""
    sentences = [f"Sentence number {i} tells about the garden and the river." for i in range(40)]
    text = " ".join(sentences)
    index = build({"long": text, "short": "I planted tomatoes. They grew fast."})
    chunks = index.record_chunks("long")
    spans = [(index._chunks[i].start, index._chunks[i].end) for i in chunks]
    assert len(chunks) > 8 and spans == sorted(spans)
    assert index.record_chunks("short", around=(0, 1), whole=8) == index.record_chunks("short")
    for start, end in [(0, 1), (spans[5][0] + 3, spans[9][1] - 2), (spans[-1][0], len(text)), (spans[3][1] - 1, spans[3][1] - 1)]:
        holding = [i for i, (s, e) in zip(chunks, spans, strict=True) if s < max(end, start + 1) and e > start]
        assert index.record_chunks("long", around=(start, end), whole=8) == holding[:8], (start, end)
    assert index.record_chunks("long", around=(0, len(text)), whole=8) == chunks[:8]
    assert index.record_chunks("long", around=(spans[2][0], spans[2][1]), whole=1) == [chunks[2]]
