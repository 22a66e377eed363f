"""brainstore's native kernels as a library: token counts, budgeted packing, BM25, rank fusion, the
ranking pass after the lanes, watermarks, linear-time patterns. No Python dependencies.

This module is the typed face of the Rust crate ``brainstore-core`` (``rust/core``); its private
extension ``brainstore_core._native`` (``rust/py``) only converts values, releases the GIL and maps
errors. Batch functions take a whole candidate list per call: call them once per request, never per
item in a Python loop. Every call marked "GIL released" lets other Python threads run while Rust works.

Invariants, each checked by property tests in Rust (proptest) and Python (hypothesis):

- Token counts use a real BPE tokenizer, :data:`TOKENIZER_NAME` (``cl100k_base``); special-token
  strings in text count as ordinary text.
- :func:`pack` never chooses items whose charged token counts add up to more than ``budget``.
- ``decode_watermark(s, b, encode_watermark(s, b, n)) == n``; :func:`decode_watermark` never raises
  for a ``str`` token, and anything not minted with the same secret and brain key gives ``None``.
- Orderings are deterministic: scores descending (NaN last), ties by the lower id or index.
- :class:`Pattern` matches in time linear in the text, whatever the pattern (no backtracking).
- No input makes the Rust code panic. Arguments of the wrong type raise :class:`TypeError` (a bare
  ``str`` where a sequence of texts belongs too, rather than being read as its characters); ids and
  token counts are 64-bit signed integers, and larger ones raise :class:`OverflowError`; caller
  mistakes (parallel sequences of different lengths, negative token counts, an empty secret,
  out-of-range arguments, a refused pattern) raise :class:`ValueError`. Should a kernel panic all the
  same (a bug, here or in a dependency), the call raises :class:`RuntimeError`, never pyo3's
  ``PanicException`` (a ``BaseException`` that ends the process serving it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from brainstore_core import _native

__all__ = [
    "MAX_PATTERN_CHARS",
    "TOKENIZER_NAME",
    "ChunkTable",
    "LexicalIndex",
    "Pattern",
    "count_tokens",
    "decode_watermark",
    "encode_watermark",
    "final_scores",
    "near_duplicates",
    "pack",
    "rrf_fuse",
    "token_count",
    "truncate_tokens",
]

#: The distribution's version, which is also the Rust crates' (one Cargo workspace version).
__version__: str = _native.__version__
#: The BPE encoding every token count uses.
TOKENIZER_NAME: str = _native.TOKENIZER_NAME
#: The longest :class:`Pattern` source accepted, in characters.
MAX_PATTERN_CHARS: int = _native.MAX_PATTERN_CHARS

_I64_MAX = 2**63 - 1
_U64_LIMIT = 2**64


def _texts(texts: Sequence[str]) -> list[str]:
    # A str is itself a sequence of str: read as one, it would count or index each character.
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, not a single str")
    return list(texts)


def _ids(ids: Sequence[int] | None) -> list[int] | bytes | None:
    """Ids as the extension takes them: an array of signed 8-byte integers as its native-endian bytes
    (one copy of its memory), anything else as a list."""
    if ids is None:
        return None
    try:
        view = memoryview(ids)  # type: ignore[arg-type]
    except TypeError:
        return list(ids)
    if view.ndim == 1 and view.itemsize == 8 and view.format in ("q", "l"):
        return view.tobytes()
    return list(ids)


def token_count(text: str) -> int:
    """Number of ``cl100k_base`` tokens in ``text``; 0 exactly for the empty string. GIL released."""
    return _native.token_count(text)


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Token counts of many texts, in input order: ``count_tokens(ts)[i] == token_count(ts[i])``.

    GIL released.
    """
    return _native.count_tokens(_texts(texts))


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens.

    Invariants: ``text.startswith(result)``, ``token_count(result) <= max(max_tokens, 0)``, and
    ``result == text`` whenever ``text`` fits. The cut falls on a character boundary at or before the
    token boundary, so the result is always valid text (an emoji split across tokens is dropped
    whole). Any integer ``max_tokens`` is accepted; ``<= 0`` gives ``""``. GIL released.
    """
    if max_tokens <= 0:
        return ""
    return _native.truncate_tokens(text, min(max_tokens, _I64_MAX))


def pack(
    token_counts: Sequence[int],
    scores: Sequence[float],
    budget: int,
    *,
    prev: Sequence[int] | None = None,
    joined: Sequence[int] | None = None,
    groups: Sequence[tuple[Sequence[int], Sequence[int]]] = (),
) -> list[int]:
    """Indices of the items to include, in the order chosen (best score first).

    Greedy by score descending (NaN last, ties by lower index); an item that does not fit is
    skipped and later, smaller items may still fit. Invariants: the charged counts of the chosen
    items never sum above ``budget``; each index appears at most once; ``budget <= 0`` chooses
    nothing; the same input always gives the same output. GIL released.

    Runs (both or neither): ``prev[i]`` is the item whose text item ``i`` directly follows (-1 for
    none, each item followed by at most one); an item packed next to a chosen neighbour is charged
    ``joined[i]`` (at most ``token_counts[i]``) instead of its full count, since it is rendered
    under the neighbour's header.

    Groups: each ``(group, group_cost)`` of ``groups`` is a grouping of the items, ``group[i]`` item
    ``i``'s group in it, an index into ``group_cost``, or -1 for none. The first chosen item of a
    group is also charged ``group_cost[group]`` (at least 0), a header its group's items share (the
    day over a transcript's lines of that day); an item pays the header of each grouping it opens.
    """
    clamped = max(0, min(budget, _I64_MAX))
    return _native.pack(
        list(token_counts),
        list(scores),
        clamped,
        None if prev is None else list(prev),
        None if joined is None else list(joined),
        [(list(group), list(group_cost)) for group, group_cost in groups],
    )


def encode_watermark(secret: bytes, brain_key: str, seq: int) -> str:
    """``wm_`` + base64url(version | seq | brain key hash | truncated HMAC-SHA256).

    Invariant: ``decode_watermark(secret, brain_key, encode_watermark(secret, brain_key, seq)) == seq``.
    The token is deterministic and URL-safe. ``seq`` must fit in an unsigned 64-bit integer and
    ``secret`` must not be empty (:class:`ValueError` otherwise).
    """
    if not 0 <= seq < _U64_LIMIT:
        raise ValueError(f"watermark seq must be within [0, 2**64), got {seq}")
    return _native.encode_watermark(bytes(secret), brain_key, seq)


def decode_watermark(secret: bytes, brain_key: str, token: str) -> int | None:
    """The sequence number in ``token``, or ``None`` when it is garbage, tampered, from another
    brain key, signed with another secret, or of an unknown version.

    Invariants: the inverse of :func:`encode_watermark` for the same secret and brain key; never
    raises for a ``str`` (lone surrogates included), and a non-``str`` token gives ``None``.
    """
    if not isinstance(token, str):
        return None
    return _native.decode_watermark(bytes(secret), brain_key, token)


class ChunkTable:
    """What ranking reads of each chunk of one Brain's index, and the ranking pass after the lanes.

    Per chunk: when it was said (POSIX seconds), its source and (lowercased) speaker, its trust
    multiplier, its token counts, the chunk before it in its Record's text, its Record's first and
    last chunk (lowest and highest id), and the chunks of its source right before and after it: by
    time, then by id (the index gives ids in the order chunks come), so a conversation keeps its order
    however many clients post it at once and whatever other sources add in between.

    Invariants: one entry per id (adding a present or repeated id raises :class:`ValueError` and adds
    nothing); removing a chunk splices it out of its source's order as if it had never been added; a
    source or speaker name no live chunk carries is dropped with its last chunk; :meth:`rank` is
    deterministic (score descending, then id ascending). Thread-safe: one internal read-write lock.
    """

    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table = _native.ChunkTable()

    def add(
        self,
        ids: Sequence[int],
        ts: Sequence[float],
        sources: Sequence[str | None],
        speakers: Sequence[str | None],
        trusts: Sequence[float],
        tokens: Sequence[int],
        joined: Sequence[int],
        lines: Sequence[int] | None = None,
    ) -> None:
        """Add chunks (one value per id in every column), each at its place in its source's order;
        each is its own Record's only chunk until :meth:`link`. ``lines``: each chunk's tokens as a
        line of a transcript that names its day on an earlier line (default: ``tokens``). GIL released."""
        self._table.add(
            list(ids), list(ts), list(sources), list(speakers), list(trusts), list(tokens), list(joined),
            None if lines is None else list(lines),
        )  # fmt: skip

    def link(self, ordered: Sequence[int]) -> None:
        """One Record's chunks in text order: each points at the one before it, all at the Record's
        first and last chunk. GIL released."""
        self._table.link(list(ordered))

    def remove(self, ids: Sequence[int]) -> None:
        """Forget chunks; unknown ids are ignored. GIL released."""
        self._table.remove(list(ids))

    def previous(self, chunk_id: int) -> int | None:
        """The chunk of the same source right before ``chunk_id`` (by time, then id), if any."""
        return self._table.previous(chunk_id)

    def turns(self, chunk_ids: Sequence[int], gap: float) -> list[int]:
        """For each chunk, the first chunk of its turn: its speaker's run of Records in its source
        (each within ``gap`` seconds of the next, bounded by another speaker's Record, at most 8)
        where each Record was said later than the one before, else its own Record; an id not in the
        table is its own. GIL released."""
        return self._table.turns(list(chunk_ids), gap)

    def token_counts(self, chunk_id: int) -> tuple[int, int] | None:
        """``(tokens, joined)`` of the chunk, or ``None`` when it is not in the table."""
        return self._table.token_counts(chunk_id)

    def line_tokens(self, ids: Sequence[int]) -> list[int | None]:
        """The ``lines`` count :meth:`add` took for each chunk, ``None`` for one not in the table.

        GIL released.
        """
        return self._table.line_tokens(list(ids))

    def names(self) -> int:
        """The number of distinct source and speaker names held."""
        return self._table.names()

    def __len__(self) -> int:
        """The number of chunks held."""
        return len(self._table)

    def rank(
        self,
        fused: Sequence[tuple[int, float]],
        vector: Sequence[tuple[int, float]],
        lexical: Sequence[tuple[int, float]],
        *,
        vector_weight: float,
        lexical_weight: float,
        named: Sequence[str],
        speaker_boost: float,
        focus: Sequence[tuple[float, float]],
        time_boost: float,
        neighbor_weights: Sequence[float],
        neighbor_gap: float,
        next_factor: float,
        neighbor_sources: int,
        since: float | None,
        until: float | None,
        sources: Collection[str] | None,
        excluded: Collection[int],
        now: float,
        decay: float,
        recency_weight: float,
        max_candidates: int,
        kin: Collection[str] = (),
        stranger_factor: float = 1.0,
    ) -> list[tuple[int, float, int, int, int | None]]:
        """The best ``max_candidates`` of the ``fused`` (id, score) pairs and the neighbouring turns
        they spread score to, as ``(id, score, tokens, joined, before)``, best first, ties by id. Fused ids not
        in the table are left out. GIL released.

        A fused chunk scores ``fused + (vector_weight * cosine if cosine > 0) + lexical_weight * bm25``,
        times ``speaker_boost`` when ``named`` holds its speaker, else ``stranger_factor`` when
        ``named`` is not empty and neither it nor ``kin`` (who talks with the named speakers) holds its
        speaker (a chunk with no speaker is nobody's stranger), and times ``time_boost`` when it was said
        within a ``[start, end)`` of ``focus``. The best ``neighbor_sources`` of them give
        ``neighbor_weights[k]`` of their score to the turn ``k + 1`` turns before their Record (times
        ``next_factor`` after it), walking while the turns share the source and lie within
        ``neighbor_gap`` seconds; only chunks said within ``[since, until]`` from one of ``sources``
        (``None`` leaves a condition out) and not in ``excluded`` receive it. The final score is ``score * trust * (1 + recency_weight * exp(-decay * age))`` at ``now``.
        """
        return self._table.rank(
            list(fused),
            list(vector),
            list(lexical),
            vector_weight=vector_weight,
            lexical_weight=lexical_weight,
            named=list(named),
            speaker_boost=speaker_boost,
            focus=list(focus),
            time_boost=time_boost,
            neighbor_weights=list(neighbor_weights),
            neighbor_gap=neighbor_gap,
            next_factor=next_factor,
            neighbor_sources=max(neighbor_sources, 0),
            since=since,
            until=until,
            sources=None if sources is None else list(sources),
            excluded=list(excluded),
            now=now,
            decay=decay,
            recency_weight=recency_weight,
            max_candidates=max(max_candidates, 0),
            kin=list(kin),
            stranger_factor=stranger_factor,
        )


class LexicalIndex:
    """A BM25 index (k1=1.2, b=0.75) over stemmed, stopword-filtered words ("meetings" finds "meeting").

    Invariants: at most one document per id (re-adding replaces); searches are deterministic (score
    descending, then id ascending) and only return documents that share a term with the query. It
    holds the terms of the documents it holds and no others: a removed or replaced text leaves no word.
    Thread-safe: one internal read-write lock; searches share it and run with the GIL released,
    so threads search concurrently. Ids are 64-bit signed integers.
    """

    __slots__ = ("_index",)

    def __init__(self) -> None:
        self._index = _native.LexicalIndex()

    def add(self, doc_ids: Sequence[int], texts: Sequence[str]) -> None:
        """Index documents (``doc_ids[i]`` holds ``texts[i]``); re-adding an existing id replaces its
        text. Sequences of different lengths raise :class:`ValueError`. GIL released."""
        self._index.add(list(doc_ids), _texts(texts))

    def remove(self, doc_ids: Sequence[int]) -> None:
        """Forget documents; unknown ids are ignored. GIL released."""
        self._index.remove(list(doc_ids))

    def search(
        self, query: str, k: int, allowed: Sequence[int] | None = None, excluded: Sequence[int] = ()
    ) -> list[tuple[int, float]]:
        """The ``k`` best ``(doc_id, score)`` pairs, score descending then id ascending.

        ``allowed`` restricts results to those ids (an empty sequence allows nothing); an array of
        signed 8-byte integers (numpy's int64, ``array("q")``) is passed as its bytes, without a Python
        int per id. Ids in ``excluded`` are never returned. Only documents sharing a term with the
        query are returned, so fewer than ``k`` may come back; ``k <= 0`` returns nothing. GIL released.
        """
        if k <= 0:
            return []
        return self._index.search(query, min(k, _I64_MAX), _ids(allowed), list(excluded))

    def __len__(self) -> int:
        """The number of documents indexed."""
        return len(self._index)

    def term_count(self) -> int:
        """The number of distinct terms held: those of the documents indexed."""
        return self._index.term_count()


def rrf_fuse(
    lanes: Sequence[Sequence[int]], weights: Sequence[float], k: float = 60.0
) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion of ranked id lists (best first), one weight per lane.

    ``score(id) = sum_l weights[l] / (k + rank_l(id) + 1)`` with ranks from 0; an id repeated in
    one lane counts at its best rank only. Invariants: every id of every lane comes back exactly
    once, best first, ties by id ascending. GIL released.
    """
    return _native.rrf_fuse([list(lane) for lane in lanes], list(weights), k)


def final_scores(
    base: Sequence[float], recency: Sequence[float], trust: Sequence[float], recency_weight: float
) -> list[float]:
    """``base_i * trust_i * (1 + recency_weight * recency_i)``, recency clamped to [0, 1].

    One score per item, in input order; the three sequences must have the same length. GIL released.
    """
    return _native.final_scores(list(base), list(recency), list(trust), recency_weight)


def near_duplicates(texts: Sequence[str], threshold: float = 0.9) -> list[int]:
    """Indices (ascending) of texts that are near-duplicates of ANY earlier text.

    Similarity is the Jaccard index of word 3-shingles (lowercased alphanumeric words); texts
    with fewer than 3 words compare word sets; texts without words duplicate each other. Invariants:
    index 0 is never returned; an exact repeat of an earlier text always is. ``threshold`` must be
    within [0, 1]. GIL released.
    """
    return _native.near_duplicates(_texts(texts), threshold)


class Pattern:
    """A JSON Schema ``pattern``: an ECMA-262 regular expression, compiled once, matched in linear time.

    Semantics are JSON Schema's: an unanchored search (``Pattern("b").is_match("abc")`` is true;
    anchor with ``^`` and ``$``). ``\\d``, ``\\w`` and ``\\b`` are ASCII and ``.`` stops at line
    terminators, as in ECMA-262. Matching runs on finite automata, so ``^(a+)+$`` against 50,000
    ``a`` and a ``b`` takes about 0.1 ms instead of never finishing.

    Raises :class:`ValueError` naming the reason when the source is refused: longer than
    :data:`MAX_PATTERN_CHARS`, not ECMA-262 syntax, a feature a finite automaton lacks
    (backreferences, lookahead, lookbehind) or inline flags, nested too deep, or too large once
    compiled (``((a{100}){100}){100}``). Invariants: any ``str`` source either compiles or raises
    :class:`ValueError`; matching never raises for a ``str`` (lone surrogates are matched as if they
    were replacement characters, U+FFFD). Thread-safe: one compiled pattern serves every thread.
    """

    __slots__ = ("_pattern",)

    def __init__(self, source: str) -> None:
        """Compiles ``source`` once; compiling is bounded (length, nesting, compiled size). GIL released."""
        if not isinstance(source, str):
            raise ValueError(f"invalid pattern: must be a string, not {type(source).__name__}")
        if len(source) > MAX_PATTERN_CHARS:
            # Checked here too so a huge string is never copied into Rust only to be refused.
            raise ValueError(f"invalid pattern: longer than {MAX_PATTERN_CHARS} characters ({len(source)})")
        self._pattern = _native.Pattern(source)

    @property
    def source(self) -> str:
        """The pattern as given."""
        return self._pattern.source

    def is_match(self, text: str) -> bool:
        """Whether the pattern occurs anywhere in ``text``. GIL released."""
        return self._pattern.is_match(text)

    def matches(self, texts: Sequence[str]) -> list[bool]:
        """:meth:`is_match` of each text, in input order, in one native call. GIL released."""
        return self._pattern.matches(_texts(texts))

    def __repr__(self) -> str:
        return f"Pattern({self.source!r})"
