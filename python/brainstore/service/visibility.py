"""Visibility, decided once for every read path.

A Record's visibility is fixed when it is written:
- ``shareable``: served as it is.
- ``redacted_summary``: its words are never served. Evidence, citation quotes and every Memory that
  rests on it alone are served as a redaction naming who recorded something and when.
- ``local_only``: on a hosted deployment it is absent from every read path (evidence, citations,
  Memories, the Profile, structured values, listMemories, getMemory); getRecord answers
  local_only_record. A Memory that also rests on served Records is served with those citations only.
  getCensus neither counts it nor names it.

Every component that returns user text asks this module, so there is one rule and one place to read it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from brainstore.domain import Citation, MemoryRevision
from brainstore.retrieval.chunking import redaction
from brainstore.service.planner import MAX_CITATIONS
from brainstore.service.views import citation_view, memory_view

LOCAL_ONLY = "local_only"
REDACTED = "redacted_summary"
SHAREABLE = "shareable"
REDACTED_QUOTE = "[redacted]"


@dataclass(frozen=True)
class Visibility:
    hosted: bool

    def withheld(self, visibility: str | None) -> bool:
        """Absent from this deployment's read paths. An unknown Record (None: erased) is withheld too."""
        return visibility is None or (self.hosted and visibility == LOCAL_ONLY)

    @property
    def withheld_visibilities(self) -> frozenset[str]:
        """The visibilities withheld(): what a store leaves out where it counts Records without reading
        their visibility back (a census)."""
        return frozenset({LOCAL_ONLY}) if self.hosted else frozenset()

    @staticmethod
    def redacted(visibility: str | None) -> bool:
        return visibility == REDACTED

    def citations(
        self, citations: tuple[Citation, ...], visibilities: Mapping[str, str]
    ) -> list[dict[str, Any]]:
        """The citations a reader may see: withheld Records left out, redacted quotes replaced; the
        first MAX_CITATIONS (a Memory derived before the bound may cite more)."""
        out = []
        for c, redacted in itertools.islice(self._readable(citations, visibilities), MAX_CITATIONS):
            view = citation_view(c)
            if redacted:
                view["quote"] = REDACTED_QUOTE
                view["redacted"] = True
            out.append(view)
        return out

    def quotes(self, citations: tuple[Citation, ...], visibilities: Mapping[str, str]) -> list[str]:
        """The quotes of citations(), without building their views."""
        return [REDACTED_QUOTE if redacted else c.quote for c, redacted in self._readable(citations, visibilities)]

    def _readable(
        self, citations: tuple[Citation, ...], visibilities: Mapping[str, str]
    ) -> Iterator[tuple[Citation, bool]]:
        """Each citation a reader may see, and whether its quote is redacted."""
        for c in citations:
            visibility = visibilities.get(c.record_id)
            if not self.withheld(visibility):
                yield c, self.redacted(visibility)

    def serving(self, memory: MemoryRevision, visibilities: Mapping[str, str]) -> str | None:
        """How memory() serves ``memory``, without building its view: None when none of its Records may
        be read, REDACTED when only redacted ones may (its words are not served), else SHAREABLE."""
        # one pass, no list: a census or a schema asks this of every Memory of the Brain
        readable = False
        for citation in memory.citations:
            visibility = visibilities.get(citation.record_id)
            if self.withheld(visibility):
                continue
            if visibility != REDACTED:
                return SHAREABLE
            readable = True
        return REDACTED if readable else None

    def memory(self, memory: MemoryRevision, visibilities: Mapping[str, str]) -> dict[str, Any] | None:
        """The Memory as this deployment serves it, or None when none of its Records may be read."""
        serving = self.serving(memory, visibilities)
        return None if serving is None else self.view(memory, serving, visibilities)

    def view(self, memory: MemoryRevision, serving: str, visibilities: Mapping[str, str]) -> dict[str, Any]:
        """The view of ``memory`` served as ``serving`` (SHAREABLE or REDACTED, from serving()).

        A Memory resting only on redacted Records says only that something was recorded: its
        statement and value came from words that are never served.
        """
        view = memory_view(memory)
        view["citations"] = self.citations(memory.citations, visibilities)
        if serving == REDACTED:
            view["statement"] = self.statement_as(memory, serving)
            view["attribute"] = None
            view["redacted"] = True
        return view

    @staticmethod
    def statement_as(memory: MemoryRevision, serving: str) -> str:
        """The statement view() serves for ``memory`` served as ``serving``."""
        return redaction(memory.subject, memory.valid_from) if serving == REDACTED else memory.statement
