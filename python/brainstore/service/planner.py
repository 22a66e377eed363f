"""The memory rules: how assertions, corrections and erasures change a Brain's Memories.

The rules work on a :class:`MemoryState`, an overlay over the Memories they read: every revision they
decide on is appended to the state's plan and is visible to the rules that follow (two Records of one
batch that say the same thing make ONE Memory). The rules do no I/O of their own; the state loads the
Memories they ask for through a :class:`MemoryLoader` (the store, inside the transaction that applies
the plan, or a dict in tests) and allocates change sequence numbers through a callable.

Rules kept here, and only here:
- One Memory per distinct assertion. The same assertion from several Records is ONE Memory supported
  by each of them, as long as they agree: an assertion that states another time for it, or that says it
  corrects something ("actually ..., not ..."), never becomes its support. A corrective one supersedes
  it; one that only disagrees on the time is kept as a marked conflict.
- A Memory cites the first MAX_CITATIONS Records that support it; a later supporter is named only by
  its own status (the Record's memory_ids), and the Memory is not revised for it, unless it is served
  more widely than every Record the Memory cites (shareable where they are all redacted_summary or
  local_only, ...): it then takes the newest citation's place, so that a reader who may read one of a
  Memory's supporters is never kept from it by the bound.
- A correction Record supersedes the Memory it names: a new revision closes it (valid_to, superseded_by)
  and the new active Memory cites the correction and names what it supersedes. A correction with no
  statement of its own retracts the Memory: the retraction says the retracted Memory's words, negated
  (RETRACTS), and goes with them when that Memory is erased, or takes its new words when it is
  re-derived.
- A self-correction replaces what the speaker just said, never anyone else's word: a corrective
  statement of a single-valued attribute ("No wait, I live in Boulder") supersedes the value of it the
  same owner told within CORRECTION_WINDOW before, when it names no wrong value of its own ("..., not
  Denver" supersedes Denver, whenever told); a value meant with no clause ("Sorry, I meant Portland, not
  Denver", "*Portland") is the speaker's statement of the value it names (none named: the one just told,
  of any single-valued attribute) said again with it, and supersedes that statement. Found none, it is
  the plain statement it reads as.
- A single-valued attribute stated with a change ("moved to") closes the older value's validity; stated
  without one, the two values conflict: both stay active and name each other in conflicts_with. A change
  at a stated time told after a later one, also a change at a stated time, ends where that one begins,
  as if told in order. The same attribute and value with the opposite polarity ("I love coffee" / "I
  hate coffee") closes the older when a change is stated and conflicts otherwise. A denied value ("I no
  longer work at IBM") neither closes nor conflicts with another value ("works at Google"), held or new.
- A Memory names at most MAX_CONFLICTS others in conflicts_with: a new one names the newest of those it
  disagrees with, and is named back by each of them that names fewer. Every Memory in a conflict names
  one; none is revised more than MAX_CONFLICTS times for conflicts, nor a Record's assertion revises more.
- A new value of a single-valued attribute is weighed against the active ones of the ATTRIBUTE_MEMORIES
  Memories of its subject's attribute (active, or pending re-derivation) whose validity ends latest (a
  change closes those of them still open); one of a many-valued attribute only against its own
  opposite. An assertion is weighed against the ASSERTION_MEMORIES Memories of the same assertion
  (likewise) whose validity ends latest (the one it supports, if stated at the same time, is looked for
  among them). A Record's cost does not grow with
  the history.
- Whatever a Memory did to others is undone when it is erased: Memories it superseded are restored,
  Memories it closed are reopened, a correction of it supersedes nothing, and it leaves every
  conflicts_with list (a revision appended here;
  the store undoes it in their earlier revisions too, see brainstore.store.base.histories_unnamed).
- Forgetting a Record erases the Memories it alone supported and puts the others in pending
  re-derivation; re-derivation keeps only what the surviving Records support (citations, statement,
  valid_from), citing again, up to MAX_CITATIONS, the supporters it did not cite, and the pending
  revisions go (the store erases the earlier revisions that may say the forgotten Record's words or
  time, see brainstore.store.base.without_citations_of). A Record that states a
  Memory pending re-derivation supports it, as it would an active one: one Memory still, not two.
- Every change takes the Brain's next change sequence number, which is what watermarks point at.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from brainstore.derive import SINGLE_VALUED, Assertion, Extractor, SourceText, restated
from brainstore.domain import Citation, MemoryRevision, named_memories, unnamed

# Memories a Memory names in conflicts_with, at most. Each value stated without a change conflicts with
# every other open value of its attribute: unbounded, a self who said "I work at X" 400 times, each X
# new, made each Record revise every earlier Memory with a list naming all the others (80,200
# revisions holding 700 MB of conflict lists on DuckDB, the 400th Record taking over a second).
MAX_CONFLICTS = 16
# Memories of a single-valued attribute a new value is weighed against, at most: those whose validity
# ends latest (the open ones, newest first). A value of a many-valued attribute is weighed only against
# its own opposite ("likes coffee" against "does not like coffee"), found by fingerprint. Reading every
# Memory of the attribute made each Record cost more than the last: 1,500 values of one attribute on
# DuckDB took 50-59 ms a Record to derive.
ATTRIBUTE_MEMORIES = 64
# Memories of one assertion (its fingerprint) a new statement of it is weighed against, at most, in the
# same order. There are several only when it was stated at several times ("I worked at Acme in March
# 1990", then in April 1991, ...): each disputes the others. Reading them all made each Record cost more
# than the last: 1,500 months over HTTP took 42.3 s to derive, then 51 ms a Record.
ASSERTION_MEMORIES = 64
# Records a Memory cites, at most: the first that support it. Every revision carries its citations, so
# citing each supporter made one sentence said N times cost N^2/2 citations: "I love cake." 1,500
# times over HTTP took 57 s to derive and then 223 ms a Record, and growing. A Memory whose citations
# reached the bound holds MORE_SUPPORT in extra: re-derivation then looks for its supporters beyond
# them (Records whose status names it), and forgetting its cited Records does not erase it while
# they remain.
MAX_CITATIONS = 16
MORE_SUPPORT = "more_support"
# How widely a Record's words are served (brainstore.service.visibility): a hosted deployment withholds
# local_only Records, and serves a Memory resting on redacted_summary ones only as a redaction.
SERVED_RANK = {"local_only": 0, "redacted_summary": 1, "shareable": 2}
# In extra of a Memory whose citations reached the bound: the SERVED_RANK of the most widely served
# Record it cites, so that its later supporters are weighed without reading the cited Records.
CITED_RANK = "cited_rank"
# In extra of a retraction (a bare "No, that's wrong." made into the corrected Memory's statement,
# negated): the id of the Memory it retracts, which it supersedes. Its words are that Memory's, so they
# are a forgotten Record's whenever that Memory's are: it is erased with that Memory, and re-worded
# when that Memory is re-derived. Its first citation is its correction.
RETRACTS = "retracts"
# In extra of a value meant ("Sorry, I meant Memorial, not Mercy": the corrected Memory's statement said
# again with the value meant, see _meant): the id of the Memory it restates, which it supersedes. Its words
# but the value are that Memory's, a forgotten Record's whenever that Memory's are: as a retraction's, they
# are erased with that Memory and re-worded when it is re-derived.
RESTATES = "restates"
# How long after a statement a correction that does not name what it corrects ("No wait, I live in
# Boulder", "*Portland") may still be of it: a chat's next message comes within minutes, and a value told
# again an hour later is news (a move, a new job), not a slip of the tongue.
CORRECTION_WINDOW = timedelta(hours=1)
# The attribute a leaving ends when the Record does not say what was left (see _job_left).
LEFT_JOB = "works_at"


def assertion_fingerprint(subject: str, assertion: Assertion) -> str:
    if assertion.attribute:
        identity = [
            "attr",
            subject.casefold(),
            assertion.attribute,
            (assertion.value or "").casefold(),
            assertion.negated,
        ]
    else:
        identity = ["text", " ".join(assertion.statement.casefold().split()).rstrip(".")]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]


def opposite_fingerprint(assertion: Assertion) -> str:
    """The fingerprint of the same subject, attribute and value with the other polarity."""
    return assertion_fingerprint(assertion.subject, replace(assertion, negated=not assertion.negated))


def revision_fingerprint(memory: MemoryRevision) -> str:
    """A stored revision's fingerprint (revisions written before fingerprints were kept recompute it)."""
    return memory.fingerprint or assertion_fingerprint(memory.subject, as_assertion(memory))


def as_assertion(memory: MemoryRevision) -> Assertion:
    return Assertion(
        statement=memory.statement,
        subject=memory.subject,
        owner=memory.owner,
        attribute=memory.attribute,
        value=memory.value,
        single_valued=memory.single_valued,
        change=False,
        negated=memory.negated,
        valid_from=memory.valid_from,
        valid_to=memory.valid_to,
        span=(0, 0),
    )


# "..., not Dallas": a quote that names the value it says is wrong
_NAMES_WRONG = re.compile(r"\bnot\s+(?:in\s+|at\s+)?[\w'\u2019-]", re.I)


def _denies(quote: str, value: str | None) -> bool:
    """Whether ``quote`` says "not <value>" ("I live in Denver, not Dallas")."""
    return bool(value) and re.search(rf"\bnot\s+(?:in\s+|at\s+)?{re.escape(value)}\b", quote, re.I) is not None


def _job_left(state: MemoryState, assertion: Assertion) -> Assertion:
    """``assertion`` as the end of a job when it leaves a place (``Assertion.left``) the subject is known
    to have worked at by then ("I left Google" after "I work at Google" in an earlier Record): its
    employer denied, a change, which closes the job there. Only an employer: one leaves a city for a
    trip as often as for good, and a Record that says nothing more does not tell which."""
    if assertion.left is None or assertion.attribute is not None:
        return assertion
    value = assertion.left.casefold()
    held = state.by_attribute(assertion.subject, LEFT_JOB)
    if not value:
        # "I quit my job", "I got laid off": no employer named, so the job it ends is the one the subject
        # holds then, when there is exactly one; with none or several it stays the plain statement it is
        current = {
            (m.value or "").casefold(): m.value
            for m in held
            if m.status == "active"
            and not m.negated
            and m.valid_from <= assertion.valid_from
            and (m.valid_to is None or m.valid_to > assertion.valid_from)
        }
        if len(current) != 1:
            return assertion
        (employer,) = current.values()
        return replace(
            assertion, attribute=LEFT_JOB, value=employer, single_valued=True, negated=True, change=True, left=None
        )
    if not any(
        m.status == "active" and (m.value or "").casefold() == value and m.valid_from <= assertion.valid_from
        for m in held
    ):
        return assertion
    return replace(assertion, attribute=LEFT_JOB, value=assertion.left, single_valued=True, negated=True, left=None)


def _words_shared(a: list[str], b: list[str]) -> int:
    """How many words ``a`` and ``b`` open on alike."""
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _restating(said: str, restatement: str, rederived: MemoryRevision) -> str | None:
    """``restatement`` (``said`` with another value, see _meant) said again in the words ``rederived``
    now has: the value meant is what it has in place of the words ``said`` and it do not share."""
    old, new = said.split(), restatement.split()
    start = _words_shared(old, new)
    tail = _words_shared(old[start:][::-1], new[start:][::-1])
    meant = " ".join(new[start : len(new) - tail]).rstrip(".!?")
    return restated(rederived.statement, rederived.value or "", meant) if meant else None


def _just_said(held: MemoryRevision, assertion: Assertion) -> bool:
    """Whether ``held`` is what the owner of ``assertion`` told shortly before it (CORRECTION_WINDOW):
    their own word, not hearsay, and told at the time it was said, not at a time its text names."""
    return (
        held.owner is not None
        and held.owner == assertion.owner
        and not held.extra.get("time_stated")
        and not assertion.time_stated
        and timedelta(0) <= assertion.valid_from - held.valid_from <= CORRECTION_WINDOW
    )


def _meant(state: MemoryState, assertion: Assertion) -> tuple[Assertion, MemoryRevision | None]:
    """``assertion`` as the statement it corrects said again with the value meant (``Assertion.meant``),
    and that statement's Memory: the subject's own value it names, else the one the owner just told of any
    single-valued attribute. Unchanged, and None, when it has no such value, or none is known."""
    if assertion.meant is None or assertion.attribute is not None or assertion.owner is None:
        return assertion, None
    meant, wrong = assertion.meant
    if wrong == "":
        return assertion, None
    value = re.sub(r"^(?:a|an|the)\s+", "", " ".join(meant.split()), flags=re.I).casefold()
    held = [
        m
        for m in state.by_attributes(assertion.subject, sorted(SINGLE_VALUED))
        if m.status == "active"
        and m.owner == assertion.owner
        and not m.negated
        and m.value
        and m.value.casefold() != value
        and (m.value.casefold() == wrong if wrong else _just_said(m, assertion))
    ]
    if not held:
        return assertion, None
    corrected = max(held, key=lambda m: (m.valid_from, m.memory_id))
    statement = restated(corrected.statement, corrected.value or "", meant)
    if statement is None:
        return assertion, None
    said = replace(
        assertion,
        statement=statement,
        attribute=corrected.attribute,
        value=value,
        single_valued=True,
        corrective=True,
        meant=None,
    )
    return said, corrected


def _supersede(state: MemoryState, corrected: MemoryRevision, by: str, valid_from: datetime, at: datetime) -> None:
    """``corrected`` replaced by the Memory ``by`` (a correction of it, starting ``valid_from``), its
    valid_to stashed so that erasing ``by`` puts it back."""
    state.revise(
        corrected,
        at,
        status="superseded",
        superseded_by=by,
        valid_to=corrected.valid_to or max(valid_from, corrected.valid_from),
        extra=_stash_valid_to(corrected),
    )


def _without(extra: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if k not in keys}


def _stash_valid_to(memory: MemoryRevision) -> dict[str, Any]:
    """``memory.extra`` plus its current valid_to, for when another Memory closes it: erasing that
    one puts this valid_to back."""
    return {**memory.extra, "valid_to_before": memory.valid_to.isoformat() if memory.valid_to else None}


def first_by_fingerprint(assertions: Iterable[Assertion]) -> dict[str, Assertion]:
    """The first of ``assertions`` of each fingerprint (what re-deriving a Memory looks for in a text)."""
    found: dict[str, Assertion] = {}
    for assertion in assertions:
        found.setdefault(assertion_fingerprint(assertion.subject, assertion), assertion)
    return found


def _unsupported_without(memory: MemoryRevision, record_id: str) -> bool:
    """Whether no Record but ``record_id`` supports ``memory``: it cites no other, and no other is known
    to state it (MORE_SUPPORT)."""
    return all(c.record_id == record_id for c in memory.citations) and not memory.extra.get(MORE_SUPPORT)


def _retracting(statement: str) -> str:
    return f"Not so: {statement.rstrip('. ')}."


def same_time(a: datetime, b: datetime) -> bool:
    """Whether two stated times name the same period, at the coarsest grain a text names (a month)."""
    return (a.year, a.month) == (b.year, b.month)


class MemoryLoader(Protocol):
    """What the rules may read: current revisions (the newest of each Memory), by what they need."""

    def memories(self, memory_ids: Sequence[str]) -> dict[str, MemoryRevision]:
        """The current revision of each of ``memory_ids`` the Brain holds."""
        ...

    def by_fingerprints(self, fingerprints: Sequence[str]) -> list[MemoryRevision]:
        """The active Memories of these fingerprints, at most ASSERTION_MEMORIES of each: those whose
        validity ends latest (see brainstore.store.base.latest_ending)."""
        ...

    def by_attributes(self, keys: Sequence[tuple[str, str]]) -> list[MemoryRevision]:
        """The active Memories of these (subject, attribute) keys, at most ATTRIBUTE_MEMORIES of each:
        those whose validity ends latest (see brainstore.store.base.latest_ending)."""
        ...

    def citing(self, record_id: str) -> list[MemoryRevision]: ...
    def referencing(self, memory_ids: Sequence[str]) -> list[MemoryRevision]:
        """The current Memories that name any of ``memory_ids`` (superseded by, closed by, or in
        conflict with one): a superset is fine, the state narrows it."""
        ...

    def visibilities(self, record_ids: Sequence[str]) -> dict[str, str]:
        """The visibility of each of ``record_ids`` that is a live Record."""
        ...


@dataclass
class MemoryPlan:
    """The writes a batch of rules decided on, in order."""

    revisions: list[MemoryRevision] = field(default_factory=list)
    erased: list[tuple[str, int]] = field(default_factory=list)  # (memory_id, seq)
    rederive: list[str] = field(default_factory=list)  # memory ids placed in pending re-derivation
    # memory ids re-derived: their pending revisions, which may say what the forgotten Record said, go
    rederived: list[str] = field(default_factory=list)
    # retractions given their Memory's re-derived words (RETRACTS): their earlier revisions, which said
    # the old ones, go
    reworded: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.revisions or self.erased)


class MemoryState:
    """The Memories of one Brain as the rules see them: loaded on demand, overlaid with the plan."""

    def __init__(self, brain_uid: str, loader: MemoryLoader, next_seq: Callable[[], int]) -> None:
        self.brain_uid = brain_uid
        self.loader = loader
        self.next_seq = next_seq
        self.plan = MemoryPlan()
        self._current: dict[str, MemoryRevision | None] = {}  # memory_id -> newest (None: erased)
        # What has been read from the loader already: every Memory matching these is in _current.
        self._fingerprints: set[str] = set()
        self._attributes: set[tuple[str, str]] = set()
        self._referenced: set[str] = set()  # memory ids whose referencing Memories were read
        # memory id -> the ids of the Memories in _current whose newest revision names it (named_memories):
        # forgetting a Record that supported a thousand Memories looked for each one's referrers
        # among all of them.
        self._named_by: dict[str, set[str]] = {}

    def prefetch(self, assertions: Iterable[Assertion]) -> None:
        """Read every Memory that ``assertions`` may touch (same fingerprint, same subject and
        attribute) in two reads instead of two per assertion."""
        fingerprints, keys = set(), set()
        for assertion in assertions:
            fingerprints.add(assertion_fingerprint(assertion.subject, assertion))
            if assertion.attribute and assertion.single_valued:
                keys.add((assertion.subject.casefold(), assertion.attribute))
            elif assertion.left is not None:
                keys.add((assertion.subject.casefold(), LEFT_JOB))
            elif assertion.meant is not None:
                keys |= {(assertion.subject.casefold(), attribute) for attribute in SINGLE_VALUED}
            elif assertion.attribute:
                fingerprints.add(opposite_fingerprint(assertion))
        self._load_fingerprints(fingerprints)
        self._load_attributes(keys)

    def _load_fingerprints(self, fingerprints: set[str]) -> None:
        missing = fingerprints - self._fingerprints
        if missing:
            self._seen(self.loader.by_fingerprints(sorted(missing)))
            self._fingerprints |= missing

    def _load_attributes(self, keys: set[tuple[str, str]]) -> None:
        missing = keys - self._attributes
        if missing:
            self._seen(self.loader.by_attributes(sorted(missing)))
            self._attributes |= missing

    def _seen(self, found: Iterable[MemoryRevision]) -> list[MemoryRevision]:
        out = []
        for memory in found:
            if memory.memory_id not in self._current:
                self._hold(memory.memory_id, memory)
            held = self._current[memory.memory_id]
            if held is not None:
                out.append(held)
        return out

    def _hold(self, memory_id: str, memory: MemoryRevision | None) -> None:
        """``memory`` becomes the newest state of ``memory_id`` here (None: erased)."""
        before = self._current.get(memory_id)
        if before is not None:
            for named in named_memories(before):
                self._named_by[named].discard(memory_id)
        self._current[memory_id] = memory
        if memory is not None:
            for named in named_memories(memory):
                self._named_by.setdefault(named, set()).add(memory_id)

    def _matching(
        self, found: Iterable[MemoryRevision], keep: Callable[[MemoryRevision], bool]
    ) -> list[MemoryRevision]:
        """Loaded matches overlaid with the plan's, newest state of each, ordered by id."""
        merged = {m.memory_id: m for m in self._seen(found)}
        for memory in self._current.values():
            if memory is not None:
                merged[memory.memory_id] = memory
        return sorted((m for m in merged.values() if keep(m)), key=lambda m: m.memory_id)

    def served_rank(self, citations: Sequence[Citation]) -> int:
        """How widely the most widely served of the cited Records is served (SERVED_RANK); -1: none."""
        visibilities = self.loader.visibilities(sorted({c.record_id for c in citations}))
        return max((SERVED_RANK.get(v, 0) for v in visibilities.values()), default=-1)

    def get(self, memory_id: str) -> MemoryRevision | None:
        self.prefetch_memories([memory_id])
        return self._current[memory_id]

    def prefetch_memories(self, memory_ids: Iterable[str]) -> None:
        """Read the Memories of ``memory_ids`` in one read instead of one each: re-deriving a batch of
        them read each alone in the write transaction, 5 ms apiece on DuckDB."""
        missing = sorted({m for m in memory_ids if m not in self._current})
        if missing:
            found = self.loader.memories(missing)
            for memory_id in missing:
                self._hold(memory_id, found.get(memory_id))

    def by_fingerprint(self, fingerprint: str) -> list[MemoryRevision]:
        self._load_fingerprints({fingerprint})
        return self._matching((), lambda m: m.fingerprint == fingerprint)

    def by_attribute(self, subject: str, attribute: str) -> list[MemoryRevision]:
        key = subject.casefold()
        self._load_attributes({(key, attribute)})
        return self._matching((), lambda m: m.attribute == attribute and m.subject.casefold() == key)

    def by_attributes(self, subject: str, attributes: Iterable[str]) -> list[MemoryRevision]:
        """The Memories of several of ``subject``'s attributes, in one read."""
        key, wanted = subject.casefold(), set(attributes)
        self._load_attributes({(key, attribute) for attribute in wanted})
        return self._matching((), lambda m: m.attribute in wanted and m.subject.casefold() == key)

    def citing(self, record_id: str) -> list[MemoryRevision]:
        return self._matching(
            self.loader.citing(record_id), lambda m: any(c.record_id == record_id for c in m.citations)
        )

    def prefetch_referencing(self, memory_ids: Iterable[str]) -> None:
        """Read the Memories that name any of ``memory_ids`` in one read instead of one each."""
        missing = set(memory_ids) - self._referenced
        if missing:
            self._seen(self.loader.referencing(sorted(missing)))
            self._referenced |= missing

    def referencing(self, memory_id: str) -> list[MemoryRevision]:
        """The Memories whose newest state names ``memory_id``, by id."""
        self.prefetch_referencing([memory_id])
        found = (self._current[m] for m in self._named_by.get(memory_id, ()))
        return sorted((m for m in found if m is not None), key=lambda m: m.memory_id)

    def write(self, revision: MemoryRevision) -> MemoryRevision:
        self._hold(revision.memory_id, revision)
        self.plan.revisions.append(revision)
        return revision

    def revise(self, memory: MemoryRevision, at: datetime, **changes: Any) -> MemoryRevision:
        """Append the next revision of ``memory`` with ``changes``; nothing is updated in place."""
        current = self.get(memory.memory_id) or memory
        return self.write(
            replace(current, version=current.version + 1, recorded_at=at, seq=self.next_seq(), **changes)
        )

    def erase(self, memory_id: str) -> None:
        self._hold(memory_id, None)
        self.plan.erased.append((memory_id, self.next_seq()))


class MemoryRules:
    """The rules of the module docstring, over a :class:`MemoryState`."""

    def __init__(self, clock: Callable[[], datetime], new_id: Callable[[str], str]) -> None:
        self.clock = clock
        self.new_id = new_id

    # --- deriving ------------------------------------------------------------------------------------
    def apply(
        self,
        state: MemoryState,
        record_id: str,
        text: str,
        assertion: Assertion,
        corrects: str | None = None,
        visibility: str = "shareable",
        *,
        chat: bool = True,
    ) -> str:
        """Fold one assertion of a Record (whose visibility is ``visibility``) into the Brain's Memories;
        returns the Memory id it supports."""
        now = self.clock()
        assertion = _job_left(state, assertion)
        assertion, meant = _meant(state, assertion)
        start, end = assertion.span
        citation = Citation(record_id, start, end, text[start:end])
        fingerprint = assertion_fingerprint(assertion.subject, assertion)
        time_stated = assertion.time_stated
        # hearsay (a message's claim with no owner established, not a correction Record, which is the
        # self's word) may be kept beside a Memory whose owner is established, and conflict with it, but
        # never close, end or supersede it: Bob's "Alice moved to Boulder" leaves Alice's "I moved to
        # Denver". An application's own document, event or fact (``chat`` False) is no hearsay: its
        # "Alice moved to Austin in April" ends her home as it always did.
        hearsay = chat and assertion.owner is None and corrects is None

        def outranks(held: MemoryRevision) -> bool:
            return hearsay and held.owner is not None

        disputed: list[MemoryRevision] = []
        ended: list[MemoryRevision] = []  # held open, said over by this assertion
        if corrects is None:
            for held in state.by_fingerprint(fingerprint):
                # awaiting re-derivation (see forget_record): supported like an active Memory, and
                # re-derivation then reads this Record with the others; never disputed, as it is not served
                rederiving = held.status == "pending" and not held.superseded_by
                if held.status != "active" and not rederiving:
                    continue
                if any(c.record_id == record_id for c in held.citations):
                    return held.memory_id
                if (held.valid_to is None) != (assertion.valid_to is None):
                    # a state over ("I used to live in Rome") is no support of it held open ("lives in
                    # Rome"), nor the reverse: supported, the Memory stayed open, or over, for good
                    if held.valid_to is None and not rederiving and held.valid_from < assertion.valid_to:
                        (disputed if outranks(held) else ended).append(held)
                    continue
                agrees = not (
                    time_stated
                    and held.extra.get("time_stated")
                    and not same_time(held.valid_from, assertion.valid_from)
                )
                if agrees and not assertion.corrective:
                    self._support(state, held, citation, SERVED_RANK.get(visibility, 0), now)
                    return held.memory_id
                if not rederiving:
                    disputed.append(held)
        memory_id = self.new_id("mem")
        conflicts: list[str] = []
        supersedes = None
        valid_from = assertion.valid_from
        targets = [state.get(corrects)] if corrects is not None else []
        if meant is not None:
            targets.append(meant)
        if assertion.corrective:
            # "actually ..., not ...": the new statement replaces the held one (hearsay only hearsay)
            targets += [m for m in disputed if not outranks(m)]
            disputed = [m for m in disputed if outranks(m)]
        for corrected in targets:
            if corrected is not None and corrected.status == "active":
                supersedes = supersedes or corrected.memory_id
                _supersede(state, corrected, memory_id, valid_from, now)
        for over in ended:
            # over by the time this was said (or when it says): closed, and why remembered, so that
            # erasing this Memory reopens it
            state.revise(
                over, now, valid_to=assertion.valid_to, extra={**_stash_valid_to(over), "closed_by": memory_id}
            )
        disagreeing = list(disputed)  # the same assertion at another time: both kept, each naming the other
        disputed_ids = {m.memory_id for m in disputed}
        valid_to, closed_by = assertion.valid_to, None
        if assertion.attribute:
            weighed = (
                state.by_attribute(assertion.subject, assertion.attribute)
                if assertion.single_valued
                else state.by_fingerprint(opposite_fingerprint(assertion))
            )
            opposed, corrected_too, just_said = [], [], []
            for other in weighed:
                if other.status != "active" or other.memory_id == supersedes or other.memory_id in disputed_ids:
                    continue
                same_value = (other.value or "").casefold() == (assertion.value or "").casefold()
                if same_value and other.negated == assertion.negated:
                    continue
                if not same_value and (not assertion.single_valued or assertion.negated or other.negated):
                    # many values at once (likes coffee, likes tea), or one denied ("no longer works at
                    # IBM" beside "works at Google"): a denial says nothing of any other value
                    continue
                if other.valid_to is not None and other.valid_to <= valid_from:
                    continue  # already over before this one starts: history, not disagreement
                if (
                    assertion.corrective
                    and not other.negated
                    and not outranks(other)
                    and _denies(citation.quote, other.value)
                ):
                    # "Actually I live in Denver, not Dallas", "I'm 35, not 34": the value held was wrong,
                    # not over (it was kept beside the correction, both served as in conflict)
                    corrected_too.append(other)
                    continue
                if (
                    assertion.corrective
                    and assertion.single_valued
                    and not same_value
                    and not other.negated
                    and _just_said(other, assertion)
                ):
                    just_said.append(other)
                opposed.append(other)
            if just_said and not corrected_too and not _NAMES_WRONG.search(citation.quote):
                # "No wait, I live in Boulder" right after "I live in Denver": what was just said was
                # wrong, not over (a wrong value named, "..., not Dallas", is what it corrects instead)
                last = max(just_said, key=lambda m: (m.valid_from, m.memory_id))
                opposed.remove(last)
                corrected_too.append(last)
            for corrected in corrected_too:
                supersedes = supersedes or corrected.memory_id
                _supersede(state, corrected, memory_id, valid_from, now)
            if assertion.change and time_stated and valid_to is None:
                # a change learned after a later one ("I moved to Paris in 2019" after "I moved to Berlin
                # in 2021"): over when the first of those began, as if told in order. Only a change at a
                # stated time ends it: one without says only that it came by when it was said
                later = [
                    m
                    for m in opposed
                    if m.extra.get("change") and m.extra.get("time_stated") and m.valid_from > valid_from
                ]
                if later:
                    first = min(later, key=lambda m: (m.valid_from, m.memory_id))
                    valid_to, closed_by = first.valid_from, first.memory_id
            for other in opposed:
                if valid_to is not None and (valid_to <= other.valid_from or not time_stated):
                    # over before the other began ("in the 90s", or where a later change held begins),
                    # or over at a time the text leaves open ("I used to live in Dublin": only before it
                    # was said): history too
                    continue
                if assertion.change and other.valid_from <= valid_from and not outranks(other):
                    # the world changed: close the old value, and remember why, so erasing this
                    # Memory reopens it
                    state.revise(
                        other,
                        now,
                        valid_to=valid_from,
                        extra={**_stash_valid_to(other), "closed_by": memory_id},
                    )
                    continue
                disagreeing.append(other)
        # the newest: the latest valid_from, then the latest made (ids grow with time)
        newest = sorted(disagreeing, key=lambda m: (m.valid_from, m.memory_id), reverse=True)
        named = {m.memory_id for m in newest[:MAX_CONFLICTS]}
        for other in disagreeing:
            if other.memory_id in named:
                conflicts.append(other.memory_id)
                if len(other.extra.get("conflicts_with", ())) < MAX_CONFLICTS:
                    self._add_conflict(state, other, memory_id, now)
        extra: dict[str, Any] = {}
        if assertion.retraction and supersedes is not None:
            extra[RETRACTS] = supersedes
        if meant is not None and supersedes == meant.memory_id:
            extra[RESTATES] = supersedes
        if conflicts:
            extra["conflicts_with"] = conflicts
        if time_stated:
            extra["time_stated"] = True
        if assertion.change:
            extra["change"] = True  # one told later but stated for before it ends where it begins
        if closed_by is not None:
            extra.update(valid_to_before=None, closed_by=closed_by)
        state.write(
            MemoryRevision(
                memory_id=memory_id,
                brain_uid=state.brain_uid,
                version=1,
                statement=assertion.statement,
                subject=assertion.subject,
                owner=assertion.owner,
                attribute=assertion.attribute,
                value=assertion.value,
                valid_from=valid_from,
                valid_to=valid_to,
                recorded_at=now,
                status="active",
                citations=(citation,),
                supersedes=supersedes,
                superseded_by=None,
                seq=state.next_seq(),
                single_valued=assertion.single_valued,
                negated=assertion.negated,
                extra=extra,
                fingerprint=fingerprint,
            )
        )
        return memory_id

    @staticmethod
    def _support(state: MemoryState, held: MemoryRevision, citation: Citation, rank: int, at: datetime) -> None:
        """One more Record (its SERVED_RANK ``rank``) supports ``held``: cited while there is room, else
        in the newest citation's place when served more widely than every Record cited, else named only
        by the Record's status (see the module docstring)."""
        if len(held.citations) < MAX_CITATIONS:
            citations = (*held.citations, citation)
            extra = held.extra
            if len(citations) == MAX_CITATIONS:
                extra = {**extra, MORE_SUPPORT: True, CITED_RANK: state.served_rank(citations)}
            state.revise(held, at, citations=citations, extra=extra)
            return
        cited_rank = held.extra.get(CITED_RANK)
        if cited_rank is None:  # cited in full before the bound
            cited_rank = state.served_rank(held.citations)
        if rank > cited_rank:
            # the Record in the newest citation's place still names the Memory in its status
            citations = (*held.citations[: MAX_CITATIONS - 1], citation)
            state.revise(held, at, citations=citations, extra={**held.extra, MORE_SUPPORT: True, CITED_RANK: rank})
        elif not held.extra.get(MORE_SUPPORT) or CITED_RANK not in held.extra:
            # cited in full before the bound, so never marked: marked now, once
            state.revise(held, at, extra={**held.extra, MORE_SUPPORT: True, CITED_RANK: cited_rank})

    @staticmethod
    def _add_conflict(state: MemoryState, memory: MemoryRevision, other_id: str, at: datetime) -> None:
        names = sorted({*memory.extra.get("conflicts_with", []), other_id})
        state.revise(memory, at, extra={**memory.extra, "conflicts_with": names})

    def retraction(
        self, corrected: MemoryRevision, record_id: str, text: str, occurred_at: datetime
    ) -> Assertion:
        """A correction with no statement of its own: the corrected Memory, negated, cited to it."""
        return replace(
            as_assertion(corrected),
            statement=_retracting(corrected.statement),
            change=True,
            negated=not corrected.negated,
            valid_from=occurred_at,
            valid_to=None,
            span=(0, len(text)),
            retraction=True,
        )

    # --- erasing ---------------------------------------------------------------------------------------
    def erase(self, state: MemoryState, memory_id: str) -> None:
        """Erase a Memory and undo what it did to others (see the module docstring)."""
        now = self.clock()
        state.erase(memory_id)
        for other in state.referencing(memory_id):
            if other.memory_id == memory_id:
                continue
            # a retraction of it says its words: they go with it, and the retraction with them unless a
            # Record states the same on its own (re-derived from that Record then)
            if other.extra.get(RESTATES) == memory_id:
                self.erase(state, other.memory_id)  # its words were the erased Memory's (RESTATES)
                continue
            retraction = other.extra.get(RETRACTS) == memory_id
            correction = other.citations[0].record_id if retraction else ""
            if retraction and _unsupported_without(other, correction):
                self.erase(state, other.memory_id)
                continue
            undone = unnamed(other, {memory_id})
            if undone is not None:
                state.revise(
                    other, now, status=undone.status, supersedes=undone.supersedes, superseded_by=undone.superseded_by,
                    valid_to=undone.valid_to, extra=_without(undone.extra, RETRACTS) if retraction else undone.extra,
                )  # fmt: skip
            if retraction:
                self.withdraw(state, state.get(other.memory_id) or other, correction, now, rederive=True)

    def forget_record(self, state: MemoryState, record_id: str) -> dict[str, int]:
        """The cascade of forgetting a Record: erased or pending re-derivation, by what survives."""
        now = self.clock()
        citing = state.citing(record_id)
        # what erasing those it leaves unsupported may undo, in one read
        state.prefetch_referencing(m.memory_id for m in citing if _unsupported_without(m, record_id))
        for cited in citing:
            # as the withdrawals before left it: erasing a Memory erases or withdraws its retraction
            memory = state.get(cited.memory_id)
            if memory is not None and any(c.record_id == record_id for c in memory.citations):
                self.withdraw(state, memory, record_id, now, rederive=True)
        erased = {memory_id for memory_id, _ in state.plan.erased}
        return {"memories": len(erased), "rederiving": len(set(state.plan.rederive) - erased)}

    def withdraw(
        self, state: MemoryState, memory: MemoryRevision, record_id: str, at: datetime, *, rederive: bool
    ) -> str:
        """Take ``record_id``'s citations out of ``memory``: "erased" when no other Record supports it;
        "rederiving" (pending re-derivation) when only Records it does not cite do (MORE_SUPPORT), or,
        with ``rederive``, when any other does; else "kept" with the other citations."""
        if _unsupported_without(memory, record_id):
            self.erase(state, memory.memory_id)
            return "erased"
        survivors = tuple(c for c in memory.citations if c.record_id != record_id)
        extra = _without(memory.extra, CITED_RANK)  # its citations change: counted again when full
        if memory.citations[0].record_id == record_id:
            extra = _without(extra, RETRACTS)  # its correction gone, what is left is no retraction
        if survivors and not rederive:
            state.revise(memory, at, citations=survivors, extra=extra)
            return "kept"
        state.revise(memory, at, status="pending", citations=survivors, extra=extra)
        state.plan.rederive.append(memory.memory_id)
        return "rederiving"

    def rederive(
        self,
        state: MemoryState,
        memory: MemoryRevision,
        sources: Sequence[tuple[str, SourceText]],
        extractor: Extractor,
        self_name: str | None,
        *,
        more_sources: bool = False,
        read: Mapping[str, Mapping[str, Assertion]] | None = None,
    ) -> None:
        """Re-derive a pending Memory from the surviving Records ``sources`` ((record id, text)): those
        it cites first, then its other supporters, oldest first. It cites the first MAX_CITATIONS that
        still state it; ``more_sources``: more supporters exist than ``sources`` names. ``read``: what
        ``extractor`` found in some of them already (:func:`first_by_fingerprint`), by record id."""
        fingerprint = revision_fingerprint(memory)
        citations: list[Citation] = []
        statement: str | None = None
        valid_from: datetime | None = None
        examined = 0
        for record_id, text in sources:
            if len(citations) >= MAX_CITATIONS:
                break
            examined += 1
            said = read.get(record_id) if read is not None else None
            if said is None:
                said = first_by_fingerprint(extractor.extract(text, self_name=self_name))
            assertion = said.get(fingerprint)
            if assertion is not None:
                start, end = assertion.span
                citations.append(Citation(record_id, start, end, text.text[start:end]))
                statement = statement or assertion.statement
                valid_from = assertion.valid_from if valid_from is None else min(valid_from, assertion.valid_from)
            else:
                # The extractor no longer finds it there (it changed since): keep the stored span.
                kept = [c for c in memory.citations if c.record_id == record_id]
                citations.extend(kept)
                if kept:
                    valid_from = text.occurred_at if valid_from is None else min(valid_from, text.occurred_at)
        if not citations:
            self.erase(state, memory.memory_id)
            return
        citations = citations[:MAX_CITATIONS]
        extra = _without(memory.extra, MORE_SUPPORT, CITED_RANK)
        if more_sources or examined < len(sources) or len(citations) == MAX_CITATIONS:
            extra[MORE_SUPPORT] = True
        if len(citations) == MAX_CITATIONS:
            extra[CITED_RANK] = state.served_rank(citations)
        now = self.clock()
        rederived = state.revise(
            memory,
            now,
            status="superseded" if memory.superseded_by else "active",
            citations=tuple(citations),
            statement=statement or memory.statement,
            valid_from=valid_from or memory.valid_from,
            fingerprint=fingerprint,
            extra=extra,
        )
        state.plan.rederived.append(memory.memory_id)
        retraction = state.get(memory.superseded_by) if memory.superseded_by else None
        if retraction is not None and retraction.extra.get(RETRACTS) == memory.memory_id:
            worded = _retracting(rederived.statement)
            if retraction.statement != worded:
                state.revise(retraction, now, statement=worded)
                state.plan.reworded.append(retraction.memory_id)
        if retraction is not None and retraction.extra.get(RESTATES) == memory.memory_id:
            worded = _restating(memory.statement, retraction.statement, rederived)
            if worded is None:
                self.erase(state, retraction.memory_id)  # no words of its own left to say it in
            elif retraction.statement != worded:
                state.revise(retraction, now, statement=worded)
                state.plan.reworded.append(retraction.memory_id)
