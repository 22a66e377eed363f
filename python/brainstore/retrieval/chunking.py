"""Records -> evidence chunks: the units the index searches and the Context cites.

A leaf module (imports only :mod:`brainstore.kernels` and the derive data types).

* Messages are turn-sized at most: a chunk never crosses a message, and a message longer than
  :data:`MESSAGE_MAX_TOKENS` is cut at sentence boundaries into runs of sentences under it (a single
  sentence longer than that, about 1 in 100 in conversation, is cut at words). Sentence-sized
  evidence lets the Context cite the sentence of a long turn that answers instead of the whole
  turn: on LoCoMo this raised the share of evidence turns cited in 1,000 tokens from 0.80 to 0.84
  (held-out conversations), the budget buying more distinct turns.
* Documents (and every other kind) are passage-sized: paragraphs are packed together up to
  :data:`PASSAGE_MAX_TOKENS`; a paragraph that is too long alone is split at sentences, and a
  sentence that is too long alone at words.

Spans are exact: ``chunk.text == source.text[chunk.start:chunk.end]``, with leading and trailing
whitespace left out of the span.

``index_text`` is what the lexical lane indexes: the text prefixed by who said it and the day,
``"Caroline (8 May 2023): ..."``, so that "who" and "when" questions share words with the chunk.
:func:`cited_form` is the text the Context returns for a chunk and the one whose tokens are counted
against the budget; it is the same string. :func:`embedding_text` is what the vector lane embeds:
``"Caroline: ..."``, without the day, and with a speaker labelled by a name of several words by the
first name alone (:func:`first_name`). A date string is words to the model, and it drew the vectors of
one day's chunks together rather than those of one topic; dates reach retrieval through the lexical
lane and the periods a query names. On LoCoMo leaving the day out raised the share of evidence turns
cited from 0.851 to 0.857 at 1,000 tokens and from 0.908 to 0.918 at 2,000 (held-out conversations);
leaving the speaker out too lowered it to 0.823 / 0.876. People ask about each other by first
name: with each speaker labelled by a full name ("Caroline Reyes"), embedding the first name instead
raised held-out recall from 0.891 / 0.930 to 0.902 / 0.950 (0.905 / 0.952 with the transcript
naming each speaker in full once, see :func:`first_name`), as high as with first names for labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime

from brainstore import kernels
from brainstore.derive import SourceText, transcript_parts
from brainstore.domain import ChunkDraft

__all__ = [
    "Chunk",
    "ChunkDraft",
    "chunk_record",
    "cited_form",
    "embedding_text",
    "first_name",
    "format_day",
    "index_text_for",
    "leads",
    "line",
    "line_header",
    "redaction",
]

TRUST_LEVELS = ("high", "normal", "low")
# What a chunk's score is multiplied by, by its source's trust level.
TRUST_MULTIPLIER = {"high": 1.1, "normal": 1.0, "low": 0.8}
MESSAGE_MAX_TOKENS = 25
PASSAGE_MAX_TOKENS = 200
VISIBILITIES = ("local_only", "redacted_summary", "shareable")


@dataclass(frozen=True, slots=True)
class Chunk(ChunkDraft):
    """A draft the index has taken in: the same fields plus the id the kernels and hnswlib see."""

    id: int = field(kw_only=True)  # process-unique, assigned by the index

    @classmethod
    def from_draft(cls, chunk_id: int, draft: ChunkDraft) -> Chunk:
        return cls(*[getattr(draft, name) for name in _DRAFT_FIELDS], id=chunk_id)


# A draft's fields in order, read once: dataclasses.fields() at each call made 100,000 chunks in 0.42 s,
# against 0.28.
_DRAFT_FIELDS = tuple(f.name for f in fields(ChunkDraft))


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip


def format_day(when: datetime) -> str:
    """``8 May 2023``: the day, without the time (what "when" questions are answered with). The month's
    English name whatever the process's locale (``strftime('%B')`` follows LC_TIME, and took 3 us)."""
    return f"{when.day} {_MONTHS[when.month - 1]} {when.year}"


def _header(who: str | None, day: datetime | None) -> str:
    """``"<who> (<day>): "``, ``"<who>: "`` without a day, ``"(<day>) "`` without a who, or nothing."""
    if day is None:
        return f"{who}: " if who else ""
    return f"{who} ({format_day(day)}): " if who else f"({format_day(day)}) "


def index_text_for(text: str, *, speaker: str | None, source_name: str | None, occurred_at: datetime) -> str:
    """``"<who> (<day>): <text>"``; who is the speaker, else the source name, else nothing."""
    return _header(speaker or source_name, occurred_at) + text


# Words before a name, not names: "Dr Ana Silva" is not called "Dr".
_TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "rev"})


def first_name(label: str) -> str | None:
    """The first name of a speaker's label that reads as a person's full name: ``"Caroline"`` of
    ``"Caroline Reyes"``. None unless the label is two or more words of letters (two at least each)
    joined by single spaces, the first capitalized, of three letters at least, and not a title:
    ``"Person A"``, ``"Speaker 1"``, ``"user"`` and an address keep their label.

    Questions name people as others address them, by first name: the vector lane embeds a speaker's
    words under it, and a Context's transcript names a speaker in full once, then by it where it
    names no one else in the Brain (:meth:`BrainIndex.short_names`). A label of letters and single
    spaces splits into the same pieces for the tokenizer whatever follows it (a word, then each
    further word with its space), so the full label costs a line exactly the tokens of those
    further words more than its first name does."""
    words = label.split(" ")
    if len(words) < 2 or not all(len(word) >= 2 and word.isalpha() for word in words):
        return None
    first = words[0]
    if len(first) < 3 or not first[0].isupper() or first.lower() in _TITLES:
        return None
    return first


def embedding_text(chunk: ChunkDraft) -> str:
    """``"<who>: <text>"``, the text the vector lane embeds (the module docstring says why no day):
    who is the speaker, by first name where the label is a full name (:func:`first_name`), else the
    source's name."""
    who = chunk.speaker and (first_name(chunk.speaker) or chunk.speaker)
    return _header(who or chunk.source_name, None) + chunk.text


def redaction(who: str | None, when: datetime) -> str:
    """What a ``redacted_summary`` Record is served as: who recorded something, and the day."""
    return f"[redacted summary: {who or 'a source'} recorded something on {format_day(when)}]"


def cited_form(chunk: ChunkDraft) -> str:
    """The text the Context returns for ``chunk``, whose tokens count against the budget: for a
    ``redacted_summary`` chunk its redaction, never its words."""
    if chunk.visibility == "redacted_summary":
        return redaction(chunk.speaker or chunk.source_name, chunk.occurred_at)
    return chunk.index_text


def line_header(chunk: ChunkDraft, *, dated: bool, name: str | None = None) -> str:
    """What heads a chunk's line in a Context's transcript: ``"Caroline: "``, or where the day changes
    ``"Caroline (8 May 2023): "``; the source's name for a speakerless chunk, or the day alone.
    ``name`` stands for the speaker's label (their first name, once the transcript named them in full)."""
    return _header(name or chunk.speaker or chunk.source_name, chunk.occurred_at if dated else None)


def line(chunk: ChunkDraft, *, dated: bool) -> str:
    """A chunk as a line of a Context's transcript (:func:`line_header` and its text); a
    ``redacted_summary`` chunk is its redaction, which always names its day."""
    if chunk.visibility == "redacted_summary":
        return redaction(chunk.speaker or chunk.source_name, chunk.occurred_at)
    return line_header(chunk, dated=dated) + chunk.text


def token_counts(chunks: Sequence[ChunkDraft]) -> tuple[list[int], list[int], list[int]]:
    """The tokens of each chunk's :func:`cited_form`, of ``" " + text`` (the chunk joined to the one
    before it in an evidence item) and of its undated :func:`line`, with one tokenizer pass over the
    texts instead of three.

    cl100k cuts text into pieces by a pattern with no lookbehind before it merges bytes, and never
    merges across pieces; the piece holding a header's closing ``:`` or ``)`` ends there when a space
    follows. So ``header + text`` counts the tokens of the header without its last space plus those
    of ``" " + text``, and a header repeats across chunks (a speaker, a day): each is counted once.
    A chunk whose form is not a header of that shape and its text (a redaction, a line with no one
    to name) is counted whole."""
    joined = kernels.count_tokens([" " + c.text for c in chunks])
    counted_at: dict[str, int] = {}  # each text counted whole, in order, to its place in the counts

    def count_of(head: str, text: str) -> tuple[int, bool]:
        """Where the count of ``head + text`` is found, and whether the text's joined count adds to it."""
        if head.endswith((": ", ") ")):
            return counted_at.setdefault(head[:-1], len(counted_at)), True
        return counted_at.setdefault(head + text, len(counted_at)), False

    cited, lines = [], []
    for chunk in chunks:
        if chunk.visibility == "redacted_summary":
            cited.append(count_of("", redaction(chunk.speaker or chunk.source_name, chunk.occurred_at)))
            lines.append(cited[-1])
            continue
        form, text = chunk.index_text, chunk.text
        cited.append(count_of(form[: len(form) - len(text)], text) if form.endswith(text) else count_of("", form))
        lines.append(count_of(line_header(chunk, dated=False), text))
    counted = kernels.count_tokens(list(counted_at))

    def resolve(places: list[tuple[int, bool]]) -> list[int]:
        return [counted[at] + (j if adds else 0) for (at, adds), j in zip(places, joined, strict=True)]

    return resolve(cited), joined, resolve(lines)


# ------------------------------------------------------------------------------------------ splitting

_PARAGRAPH = re.compile(r"\n\s*\n")
# A sentence ends at . ! ? or an ellipsis (plus closing quotes/brackets) followed by whitespace, or
# at a line break.
# Tried where a run of stops starts only: from inside the run the same end is sought again, which
# was quadratic in a long run of them.
_SENTENCE_END = re.compile(r"(?<![.!?\u2026])[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s)|\n")
_WORD = re.compile(r"\S+")
# Characters a window of text is given per token it must hold: a cl100k token averages about four
# characters of English, and a window that proves too narrow is widened.
_CHARS_A_TOKEN = 8


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _pieces(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Trimmed, non-empty sub-spans of ``[start, end)`` cut after each match of ``pattern``."""
    out: list[tuple[int, int]] = []
    pos = start
    for match in pattern.finditer(text, start, end):
        s, e = _trim(text, pos, match.end())
        if s < e:
            out.append((s, e))
        pos = match.end()
    s, e = _trim(text, pos, end)
    if s < e:
        out.append((s, e))
    return out


def _words(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]


def _pack_spans(text: str, spans: list[tuple[int, int]], max_tokens: int) -> list[tuple[int, int]]:
    """Merge consecutive spans greedily while the merged text stays within ``max_tokens``.

    The count of a merged span is taken as the sum of its parts plus the count of the whitespace that
    joins them (one token for a space, a line break or two), which is an upper bound of the real count
    in practice (BPE merges across a join never add tokens). A long run of spaces is no one-token join:
    counted as one, it let a chunk hold thousands of spaces and many times its tokens.
    """
    if not spans:
        return []
    counts = kernels.count_tokens([text[s:e] for s, e in spans])
    out: list[tuple[int, int]] = []
    cur_s, cur_e = spans[0]
    cur_n = counts[0]
    for (s, e), n in zip(spans[1:], counts[1:], strict=True):
        join = 1 if s - cur_e <= 2 else max(1, kernels.token_count(text[cur_e:s]))
        if cur_n + join + n <= max_tokens:
            cur_e, cur_n = e, cur_n + join + n
        else:
            out.append((cur_s, cur_e))
            cur_s, cur_e, cur_n = s, e, n
    out.append((cur_s, cur_e))
    return out


def _split(
    text: str, start: int, end: int, max_tokens: int, levels: tuple[re.Pattern[str] | None, ...]
) -> list[tuple[int, int]]:
    """Spans covering the words of ``[start, end)``, each within ``max_tokens`` where possible.

    Splits at the first level (paragraphs, then sentences, then words: ``None``), recursing into a
    piece that is still too long, then merges neighbours back up to ``max_tokens``.
    """
    start, end = _trim(text, start, end)
    if start >= end:
        return []
    if kernels.token_count(text[start:end]) <= max_tokens:
        return [(start, end)]
    if not levels:
        # a single "word" longer than max_tokens: cut it by tokens, each piece read from a window of
        # the word wide enough to hold more than max_tokens tokens (tokenizing the whole rest of the
        # word for each piece was quadratic in its length)
        out: list[tuple[int, int]] = []
        pos, window = start, max_tokens * _CHARS_A_TOKEN
        while pos < end:
            upto = min(end, pos + window)
            piece = kernels.truncate_tokens(text[pos:upto], max_tokens) or text[pos : pos + 1]
            if upto < end and pos + len(piece) == upto:
                window *= 2  # all of it fits: the window held too few tokens to cut where they end
                continue
            out.append((pos, pos + len(piece)))
            pos += len(piece)
        return out
    pattern, rest = levels[0], levels[1:]
    pieces = _words(text, start, end) if pattern is None else _pieces(text, start, end, pattern)
    if len(pieces) <= 1:
        return _split(text, start, end, max_tokens, rest)
    fine: list[tuple[int, int]] = []
    for s, e in pieces:
        fine.extend(_split(text, s, e, max_tokens, rest))
    return _pack_spans(text, fine, max_tokens)


def leads(text: str, drafts: Sequence[ChunkDraft]) -> list[str | None]:
    """For drafts of one Record in text order, the whitespace between each and the one before it
    (``""`` for the first): with the drafts' texts it spells a run of them exactly as the Record
    does, so a Context can quote the run without reading the Record. ``None`` where ``text`` no
    longer reads as the draft was cut."""
    out: list[str | None] = []
    previous_end: int | None = None
    for draft in drafts:
        if text[draft.start : draft.end] != draft.text:
            out.append(None)
        else:
            gap = "" if previous_end is None else text[previous_end : draft.start]
            out.append(gap if not gap.strip() else None)
        previous_end = draft.end
    return out


def chunk_record(
    record_id: str,
    source: SourceText,
    *,
    source_name: str | None,
    trust: str,
    visibility: str,
    max_tokens: int | None = None,
) -> list[ChunkDraft]:
    """The chunks of one Record's source text, in text order (empty for a blank text).

    ``max_tokens`` defaults to :data:`MESSAGE_MAX_TOKENS` for messages and
    :data:`PASSAGE_MAX_TOKENS` for every other kind. A document that reads as a transcript
    (:func:`brainstore.derive.transcript_parts`) is chunked as its parts: each turn as a message of
    its speaker, the text before the first turn as a document, each turn dated when it was said (the
    day its stamp gives: "[3/1/22, 10:32 AM] Bob: ..."), as derivation reads its relative dates."""
    if trust not in TRUST_LEVELS:
        raise ValueError(f"trust must be one of {TRUST_LEVELS}, got {trust!r}")
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {VISIBILITIES}, got {visibility!r}")
    if max_tokens is not None and max_tokens < 8:
        raise ValueError(f"max_tokens must be at least 8, got {max_tokens}")
    text = source.text
    # A transcript's turns are chunked as the messages they would be, each under its speaker.
    parts = transcript_parts(source) or [(0, source)]
    drafts = []
    for offset, part in parts:
        if part.kind == "message":
            most = max_tokens or MESSAGE_MAX_TOKENS
            levels: tuple[re.Pattern[str] | None, ...] = (_SENTENCE_END, None)
        else:
            most = max_tokens or PASSAGE_MAX_TOKENS
            levels = (_PARAGRAPH, _SENTENCE_END, None)
        drafts += [
            ChunkDraft(
                record_id=record_id,
                start=offset + s,
                end=offset + e,
                text=text[offset + s : offset + e],
                index_text=index_text_for(
                    text[offset + s : offset + e],
                    speaker=part.speaker,
                    source_name=source_name,
                    occurred_at=part.occurred_at,
                ),
                occurred_at=part.occurred_at,
                speaker=part.speaker,
                source_name=source_name,
                trust=trust,
                visibility=visibility,
            )
            for s, e in _split(part.text, 0, len(part.text), most, levels)
        ]
    return drafts
