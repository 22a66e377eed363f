"""The memory rules, on an in-memory loader: agreement, contradiction, correction, change, erasure."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import example, given, settings
from hypothesis import strategies as st

from brainstore.derive import Assertion, SourceText
from brainstore.domain import Citation, MemoryRevision, named_memories
from brainstore.service.planner import (
    ASSERTION_MEMORIES,
    ATTRIBUTE_MEMORIES,
    MAX_CITATIONS,
    MAX_CONFLICTS,
    MORE_SUPPORT,
    MemoryRules,
    MemoryState,
)
from brainstore.store.base import latest_ending

T = datetime(2026, 3, 10, tzinfo=UTC)


def said(
    statement: str,
    *,
    attribute: str | None = "lives_in",
    value: str | None = "lisbon",
    at: datetime = T,
    change: bool = False,
    negated: bool = False,
    single: bool = True,
    until: datetime | None = None,
    **extra: bool,
) -> Assertion:
    return Assertion(
        statement=statement,
        subject="Alice",
        owner="Alice",
        attribute=attribute,
        value=value,
        single_valued=single,
        change=change,
        negated=negated,
        valid_from=at,
        valid_to=until,
        span=(0, len(statement)),
        **extra,
    )


class Loader:
    """The store's reads, over what the plans of earlier steps wrote."""

    def __init__(self) -> None:
        self.current: dict[str, MemoryRevision] = {}
        self.visibility: dict[str, str] = {}  # record id -> its visibility, when not shareable
        self.visibility_reads = 0

    def memories(self, memory_ids: list[str]) -> dict[str, MemoryRevision]:
        return {m: self.current[m] for m in memory_ids if m in self.current}

    def by_fingerprints(self, fingerprints: list[str]) -> list[MemoryRevision]:
        found = [m for m in self.current.values() if m.fingerprint in fingerprints]
        return latest_ending(found, ASSERTION_MEMORIES, key=lambda m: m.fingerprint)

    def by_attributes(self, keys: list[tuple[str, str]]) -> list[MemoryRevision]:
        found = [m for m in self.current.values() if (m.subject.casefold(), m.attribute) in keys]
        return latest_ending(found, ATTRIBUTE_MEMORIES)

    def citing(self, record_id: str) -> list[MemoryRevision]:
        return [m for m in self.current.values() if any(c.record_id == record_id for c in m.citations)]

    def referencing(self, memory_ids: list[str]) -> list[MemoryRevision]:
        return list(self.current.values())

    def visibilities(self, record_ids: list[str]) -> dict[str, str]:
        self.visibility_reads += 1
        return {r: self.visibility.get(r, "shareable") for r in record_ids}


class World:
    def __init__(self) -> None:
        self.loader = Loader()
        ids = itertools.count(1)
        self.rules = MemoryRules(lambda: T, lambda prefix: f"{prefix}_{next(ids):03d}")
        self.seq = itertools.count(1)

    def state(self) -> MemoryState:
        return MemoryState("brn_1", self.loader, lambda: next(self.seq))

    def commit(self, state: MemoryState) -> None:
        for revision in state.plan.revisions:
            self.loader.current[revision.memory_id] = revision
        for memory_id, _ in state.plan.erased:
            self.loader.current.pop(memory_id, None)

    def say(self, record_id: str, assertion: Assertion, corrects: str | None = None) -> str:
        state = self.state()
        memory_id = self.rules.apply(state, record_id, assertion.statement, assertion, corrects)
        self.commit(state)
        return memory_id

    def forget(self, record_id: str) -> dict[str, int]:
        state = self.state()
        counts = self.rules.forget_record(state, record_id)
        self.commit(state)
        return counts

    def __getitem__(self, memory_id: str) -> MemoryRevision:
        return self.loader.current[memory_id]


def test_the_same_assertion_twice_is_one_memory_with_both_citations() -> None:
    world = World()
    first = world.say("rec_1", said("Alice lives in Lisbon."))
    assert world.say("rec_2", said("Alice lives in Lisbon.")) == first
    assert [c.record_id for c in world[first].citations] == ["rec_1", "rec_2"]


def test_one_batch_sees_its_own_writes() -> None:
    world = World()
    state = world.state()
    a = world.rules.apply(state, "rec_1", "x", said("Alice lives in Lisbon."))
    b = world.rules.apply(state, "rec_2", "x", said("Alice lives in Lisbon."))
    assert a == b and len({r.memory_id for r in state.plan.revisions}) == 1


def test_memories_asked_for_at_once_are_read_in_one_read_and_each_only_once() -> None:
    world = World()
    lisbon = world.say("rec_1", said("Alice lives in Lisbon."))
    paris = world.say("rec_2", said("Alice works in Paris.", attribute="works_in", value="paris"))
    reads: list[list[str]] = []
    real = world.loader.memories
    world.loader.memories = lambda ids: reads.append(list(ids)) or real(ids)  # type: ignore[method-assign]
    state = world.state()
    state.prefetch_memories([paris, "mem_gone", lisbon, paris])
    assert reads == [sorted([lisbon, paris, "mem_gone"])]
    assert state.get(lisbon) == world[lisbon] and state.get(paris) == world[paris]
    assert state.get("mem_gone") is None
    state.prefetch_memories([lisbon, "mem_gone"])
    assert len(reads) == 1  # each held since, the unknown one as known to be missing


def test_a_corrective_statement_supersedes_instead_of_supporting() -> None:
    world = World()
    march = world.say("rec_1", said("Alice moved to Lisbon in March 2026.", at=datetime(2026, 3, 1, tzinfo=UTC), time_stated=True))
    april = world.say(
        "rec_2",
        said("Alice moved to Lisbon in April 2026.", at=datetime(2026, 4, 1, tzinfo=UTC), time_stated=True, corrective=True),
    )
    assert april != march
    assert world[march].status == "superseded" and world[march].superseded_by == april
    assert [c.record_id for c in world[march].citations] == ["rec_1"]  # never its support
    assert world[april].supersedes == march


def test_another_stated_time_without_a_correction_is_a_marked_conflict() -> None:
    world = World()
    march = world.say("rec_1", said("Alice moved to Lisbon in March.", at=datetime(2026, 3, 1, tzinfo=UTC), time_stated=True))
    april = world.say("rec_2", said("Alice moved to Lisbon in April.", at=datetime(2026, 4, 1, tzinfo=UTC), time_stated=True))
    assert april != march
    assert world[march].status == world[april].status == "active"
    assert world[march].extra["conflicts_with"] == [april] and world[april].extra["conflicts_with"] == [march]


def test_the_same_time_stated_again_is_support() -> None:
    world = World()
    first = world.say("rec_1", said("Alice moved to Lisbon in March.", at=datetime(2026, 3, 1, tzinfo=UTC), time_stated=True))
    again = world.say("rec_2", said("Alice moved to Lisbon on 16 March.", at=datetime(2026, 3, 16, tzinfo=UTC), time_stated=True))
    assert again == first


def test_opposite_polarity_on_the_same_value_conflicts_or_closes() -> None:
    world = World()
    love = world.say("rec_1", said("Alice loves coffee.", attribute="likes", value="coffee", single=False))
    hate = world.say("rec_2", said("Alice hates coffee.", attribute="likes", value="coffee", single=False, negated=True))
    assert world[love].extra["conflicts_with"] == [hate]
    tea = world.say("rec_3", said("Alice likes tea.", attribute="likes", value="tea", single=False))
    assert "conflicts_with" not in world[tea].extra  # liking many things is no disagreement
    stopped = world.say(
        "rec_4", said("Alice stopped liking tea.", attribute="likes", value="tea", single=False, negated=True, change=True)
    )
    assert world[tea].valid_to == T and world[tea].extra["closed_by"] == stopped


def test_a_denied_value_says_nothing_of_another_value() -> None:
    """A denial of one value of a single-valued attribute is no statement of another: "I no longer work
    at IBM" ended "works at Google", and "I don't live in Berlin" conflicted with "lives in Paris"."""
    world = World()
    job = dict(attribute="works_at", value="google", at=datetime(2026, 1, 1, tzinfo=UTC))
    google = world.say("rec_1", said("Alice works at Google.", **job))
    ibm = world.say("rec_2", said("Alice no longer works at IBM.", attribute="works_at", value="ibm", negated=True, change=True))
    paris = world.say("rec_3", said("Alice lives in Paris.", value="paris", at=datetime(2026, 1, 1, tzinfo=UTC)))
    berlin = world.say("rec_4", said("Alice doesn't live in Berlin.", value="berlin", negated=True))
    moved = world.say("rec_5", said("Alice didn't move to Berlin.", value="berlin", negated=True, change=True))
    rome = world.say("rec_6", said("Alice doesn't live in Rome.", value="rome", negated=True))
    for memory_id in (google, ibm, paris, berlin, moved, rome):
        memory = world[memory_id]
        assert memory.valid_to is None and "closed_by" not in memory.extra and "conflicts_with" not in memory.extra
    # held denied, then another value stated, with or without a change
    lisbon = world.say("rec_7", said("Alice moved to Lisbon.", value="lisbon", change=True))
    assert all(world[m].valid_to is None for m in (berlin, moved, rome)) and "conflicts_with" not in world[lisbon].extra
    # the same value denied still ends it, or disputes it
    assert world[paris].extra["closed_by"] == lisbon
    world.say("rec_8", said("Alice no longer lives in Lisbon.", negated=True, change=True))
    assert world[lisbon].valid_to == T


def test_a_change_learned_after_a_later_one_ends_where_that_one_begins() -> None:
    """A change at a stated time ends where the first later change at a stated time held begins, as told
    in order: "I moved to Berlin in 2021", then "I moved to Paris in 2019" left both open, each naming the
    other. Beside a change whose time is unstated, or a state, it still conflicts."""
    world = World()

    def year(n: int) -> datetime:
        return datetime(n, 1, 1, tzinfo=UTC)

    def moved(record_id: str, city: str, at: datetime, **kind: bool) -> str:
        assertion = said(f"Alice moved to {city}.", value=city.lower(), at=at, change=True, time_stated=True)
        return world.say(record_id, replace(assertion, **kind))

    berlin = moved("rec_1", "Berlin", year(2021))
    rome = moved("rec_2", "Rome", year(2022))
    paris = moved("rec_3", "Paris", year(2019))
    assert world[paris].valid_to == year(2021) and world[paris].extra["closed_by"] == berlin
    assert world[berlin].valid_to == year(2022) and world[rome].valid_to is None
    assert not any("conflicts_with" in world[m].extra for m in (berlin, rome, paris))
    world.forget("rec_1")  # what ended it is gone, and with it the end
    assert world[paris].valid_to is None and "closed_by" not in world[paris].extra

    world = World()
    unstated = moved("rec_1", "Berlin", year(2021), time_stated=False)
    state = world.say("rec_2", said("Alice has lived in Oslo since 2021.", value="oslo", at=year(2021), time_stated=True))
    paris = moved("rec_3", "Paris", year(2019))
    assert world[paris].valid_to is None and sorted(world[paris].extra["conflicts_with"]) == [unstated, state]


def test_a_value_already_over_is_history_beside_the_current_one() -> None:
    world = World()
    seattle = world.say("rec_1", said("Alice lives in Seattle.", value="seattle"))
    # "I lived in Tokyo in the 90s": over long before; "I used to live in Dublin": over by when said
    tokyo = world.say(
        "rec_2",
        said("Alice lived in Tokyo in the 90s.", value="tokyo", at=datetime(1990, 1, 1, tzinfo=UTC),
             until=datetime(2000, 1, 1, tzinfo=UTC), time_stated=True),
    )  # fmt: skip
    dublin = world.say(
        "rec_3", said("Alice used to live in Dublin.", value="dublin", at=datetime.min.replace(tzinfo=UTC), until=T, change=True)
    )
    for memory_id in (seattle, tokyo, dublin):
        assert world[memory_id].status == "active" and "conflicts_with" not in world[memory_id].extra
    assert world[seattle].valid_to is None
    # a stated end after the current value began is a real disagreement
    oslo = world.say(
        "rec_4", said("Alice lived in Oslo until 2030.", value="oslo", at=datetime(2020, 1, 1, tzinfo=UTC),
                      until=datetime(2030, 1, 1, tzinfo=UTC), time_stated=True),
    )  # fmt: skip
    assert seattle in world[oslo].extra["conflicts_with"]


def test_a_value_meant_restates_the_speakers_own_statement_it_corrects() -> None:
    """ "Sorry, I meant Portland, not Denver" (no clause of its own) after "I live in Denver" made a
    statement of its own and left Denver current."""
    world = World()

    def meant(value: str, wrong: str | None, *, owner: str | None = "Alice", at: datetime = T) -> Assertion:
        statement = f"Alice meant {value}."
        return replace(said(statement, attribute=None, value=None, single=False, at=at), owner=owner, corrective=True, meant=(value, wrong))  # fmt: skip

    denver = world.say("rec_1", said("Alice lives in Denver.", value="denver"))
    age = world.say("rec_2", said("Alice is 30.", attribute="age", value="30", at=datetime(2026, 3, 9, tzinfo=UTC)))
    # hearsay corrects no one's word
    world.say("rec_3", meant("Portland", "denver", owner=None))
    assert world[denver].status == "active"
    portland = world.say("rec_4", meant("Portland", "denver"))
    assert (world[portland].statement, world[portland].attribute, world[portland].value) == ("Alice lives in Portland.", "lives_in", "portland")  # fmt: skip
    assert world[denver].status == "superseded" and world[denver].superseded_by == portland
    assert world[portland].supersedes == denver and world[portland].status == "active"
    # none named: the value the speaker told last, within the window, of any attribute
    world = World()
    age = world.say("rec_1", said("Alice is 30.", attribute="age", value="30", at=datetime(2026, 3, 9, tzinfo=UTC)))
    denver = world.say("rec_2", said("Alice lives in Denver.", value="denver", at=datetime(2026, 3, 9, 23, 40, tzinfo=UTC)))
    portland = world.say("rec_3", meant("Portland", None))
    assert world[portland].statement == "Alice lives in Portland." and world[denver].superseded_by == portland
    assert world[age].status == "active"
    # two hours on, nothing was just told: the plain statement it reads as
    plain = world.say("rec_4", meant("31", None, at=datetime(2026, 3, 10, 2, tzinfo=UTC)))
    assert (world[plain].statement, world[plain].attribute) == ("Alice meant 31.", None)
    assert world[age].status == "active" and world[portland].status == "active"


def test_hearsay_never_closes_ends_or_supersedes_a_memory_whose_owner_is_established() -> None:
    """Bob's "Alice, you live in Boulder now, right?" (no owner) closed Alice's own "I moved to Denver".
    Hearsay is kept beside the subject's own word and conflicts with it; the reverse still closes, and a
    correction Record (the self's word) still supersedes."""
    world = World()

    def heard(assertion: Assertion) -> Assertion:
        return replace(assertion, owner=None)

    denver = world.say("rec_1", said("Alice moved to Denver.", value="denver", change=True, at=datetime(2026, 1, 1, tzinfo=UTC)))
    boulder = world.say("rec_2", heard(said("Alice moved to Boulder.", value="boulder", change=True)))
    assert world[denver].valid_to is None and "closed_by" not in world[denver].extra
    assert world[denver].extra["conflicts_with"] == [boulder] and world[boulder].extra["conflicts_with"] == [denver]
    # nor does hearsay that it is over end it, nor "actually ..., not Denver" supersede it
    world.say("rec_3", heard(said("Alice used to live in Denver.", value="denver", until=T, change=True)))
    world.say("rec_4", heard(said("Actually Alice lives in Rome, not Denver.", value="rome", corrective=True)))
    assert world[denver].status == "active" and world[denver].valid_to is None
    march = world.say("rec_5", said("Alice moved to Oslo in March.", value="oslo", at=datetime(2026, 3, 1, tzinfo=UTC), time_stated=True))
    april = world.say(
        "rec_6",
        heard(said("Actually Alice moved to Oslo in April.", value="oslo", at=datetime(2026, 4, 1, tzinfo=UTC), time_stated=True, corrective=True)),
    )  # fmt: skip
    assert world[march].status == "active" and april in world[march].extra["conflicts_with"]
    # the owner's own word closes hearsay, and hearsay still closes hearsay
    world = World()
    boulder = world.say("rec_1", heard(said("Alice moved to Boulder.", value="boulder", change=True)))
    rome = world.say("rec_2", heard(said("Alice moved to Rome.", value="rome", change=True)))
    assert world[boulder].extra["closed_by"] == rome
    denver = world.say("rec_3", said("Alice moved to Denver.", value="denver", change=True))
    assert world[rome].extra["closed_by"] == denver
    # a correction Record naming an owned Memory supersedes it whatever its assertion's owner
    fixed = world.say("rec_4", heard(said("Alice lives in Paris.", value="paris", corrective=True)), corrects=denver)
    assert world[denver].status == "superseded" and world[denver].superseded_by == fixed


def test_a_memory_names_a_bounded_number_of_the_values_it_conflicts_with() -> None:
    """Each new value stated without a change conflicts with every open one: a Memory names the newest
    MAX_CONFLICTS and is named back by those with room, so no Record revises more than that many and no
    list grows past it (unbounded, 400 values wrote 80,200 revisions)."""
    world = World()
    days = [datetime(2026, 1, 1 + i % 28, tzinfo=UTC) for i in range(3 * MAX_CONFLICTS)]
    made = []
    for i, day in enumerate(days):
        state = world.state()
        made.append(world.rules.apply(state, f"rec_{i}", "x", said(f"Alice works at C{i}.", attribute="works_at", value=f"c{i}", at=day)))
        assert len(state.plan.revisions) <= MAX_CONFLICTS + 1
        world.commit(state)
        newest = sorted(made[:-1], key=lambda m: (world[m].valid_from, m), reverse=True)[:MAX_CONFLICTS]
        assert sorted(world[made[-1]].extra.get("conflicts_with", [])) == sorted(newest)
    for memory_id in made:
        memory = world[memory_id]
        assert memory.status == "active" and 1 <= len(memory.extra["conflicts_with"]) <= MAX_CONFLICTS
        assert memory.version <= MAX_CONFLICTS + 1
    # a Memory named by others it does not name leaves their lists when it is erased
    named_one_way = [
        (i, x) for i, x in enumerate(made) for m in made
        if x in world[m].extra.get("conflicts_with", ()) and m not in world[x].extra["conflicts_with"]
    ]  # fmt: skip
    i, x = named_one_way[0]
    world.forget(f"rec_{i}")
    assert not any(x in m.extra.get("conflicts_with", ()) for m in world.loader.current.values())


def test_a_value_is_weighed_against_a_bounded_number_of_its_attributes_memories() -> None:
    """A single-valued attribute's new value reads the ATTRIBUTE_MEMORIES whose validity ends latest; a
    many-valued one only its own opposite, however many other values there are."""
    world = World()
    likes = [world.say(f"rec_l{i}", said(f"Alice likes t{i}.", attribute="likes", value=f"t{i}", single=False)) for i in range(100)]
    hates = world.say("rec_h", said("Alice hates t0.", attribute="likes", value="t0", single=False, negated=True))
    assert world[hates].extra["conflicts_with"] == [likes[0]] and world[likes[0]].extra["conflicts_with"] == [hates]
    assert all("conflicts_with" not in world[m].extra for m in likes[1:])

    count = ATTRIBUTE_MEMORIES + 10
    days = [datetime(2025, 1, 1, tzinfo=UTC) + (T - datetime(2025, 1, 1, tzinfo=UTC)) * i / count for i in range(count)]
    jobs = [world.say(f"rec_j{i}", said(f"Alice works at C{i}.", attribute="works_at", value=f"c{i}", at=day)) for i, day in enumerate(days)]
    state = world.state()
    moved = world.rules.apply(state, "rec_m", "x", said("Alice started at D.", attribute="works_at", value="d", change=True))
    world.commit(state)
    closed = [m for m in jobs if world[m].extra.get("closed_by") == moved]
    assert closed == jobs[-ATTRIBUTE_MEMORIES:]  # the newest open values
    assert len(state.plan.revisions) == ATTRIBUTE_MEMORIES + 1


def test_an_assertion_is_weighed_against_a_bounded_number_of_its_memories() -> None:
    """Stated at many times, one assertion is many Memories, each disputing the others: a new statement
    reads the ASSERTION_MEMORIES of them whose validity ends latest, supports the one of its time among
    them, and is a new Memory when that one is older than all of them."""
    world = World()
    months = [datetime(1900 + i // 12, 1 + i % 12, 1, tzinfo=UTC) for i in range(ASSERTION_MEMORIES + 10)]
    made = [world.say(f"rec_{i}", said("Alice worked at Acme.", attribute="works_at", value="acme", at=m, time_stated=True)) for i, m in enumerate(months)]  # fmt: skip
    assert len(set(made)) == len(months)
    state = world.state()
    again = world.rules.apply(state, "rec_again", "x", said("Alice worked at Acme.", attribute="works_at", value="acme", at=months[-1], time_stated=True))  # fmt: skip
    assert again == made[-1] and [c.record_id for c in world[again].citations] == [f"rec_{len(months) - 1}"]
    assert [c.record_id for c in state.get(again).citations] == [f"rec_{len(months) - 1}", "rec_again"]
    loaded = [m for m in state._current.values() if m is not None]
    assert len(loaded) == ASSERTION_MEMORIES
    # the oldest month is past the bound: stated again, it is a Memory of its own
    state = world.state()
    oldest = world.rules.apply(state, "rec_old", "x", said("Alice worked at Acme.", attribute="works_at", value="acme", at=months[0], time_stated=True))  # fmt: skip
    assert oldest not in made


def test_erasing_a_correction_restores_what_it_superseded() -> None:
    world = World()
    wrong = world.say("rec_1", said("Alice lives in Lisbon."))
    fixed = world.say("rec_2", said("Alice lives in Porto.", value="porto"), corrects=wrong)
    assert world[wrong].status == "superseded"
    assert world.forget("rec_2") == {"memories": 1, "rederiving": 0}
    restored = world[wrong]
    assert restored.status == "active" and restored.superseded_by is None and restored.valid_to is None
    assert fixed not in world.loader.current


def test_a_retraction_goes_with_the_memory_it_retracts_unless_a_record_states_it_on_its_own() -> None:
    world = World()
    wrong = world.say("rec_1", said("Alice lives in Lisbon."))
    denial = "No, that's wrong."
    retraction = world.say("rec_2", world.rules.retraction(world[wrong], "rec_2", denial, T), corrects=wrong)
    assert world[retraction].statement == "Not so: Alice lives in Lisbon." and world[retraction].supersedes == wrong
    assert world.forget("rec_1") == {"memories": 2, "rederiving": 0}
    assert world.loader.current == {}
    wrong = world.say("rec_3", said("Alice lives in Lisbon."))
    retraction = world.say("rec_4", world.rules.retraction(world[wrong], "rec_4", denial, T), corrects=wrong)
    world.say("rec_5", said("Alice does not live in Lisbon.", negated=True))  # the same, on its own
    assert [c.record_id for c in world[retraction].citations] == ["rec_4", "rec_5"]
    assert world.forget("rec_3") == {"memories": 1, "rederiving": 1}
    left = world[retraction]
    assert left.status == "pending" and [c.record_id for c in left.citations] == ["rec_5"]
    assert left.supersedes is None and not named_memories(left) and "retracts" not in left.extra
    assert world.forget("rec_4") == {"memories": 0, "rederiving": 0}  # no retraction left to withdraw


def test_erasing_a_change_reopens_what_it_closed_and_leaves_every_conflict_list() -> None:
    world = World()
    lisbon = world.say("rec_1", said("Alice lives in Lisbon.", at=datetime(2025, 1, 1, tzinfo=UTC)))
    porto = world.say("rec_2", said("Alice moved to Porto.", value="porto", change=True))
    assert world[lisbon].valid_to == T
    madrid = world.say("rec_3", said("Alice lives in Madrid.", value="madrid"))
    assert madrid in world[porto].extra["conflicts_with"]
    world.forget("rec_3")
    assert "conflicts_with" not in world[porto].extra
    world.forget("rec_2")
    assert world[lisbon].valid_to is None and "closed_by" not in world[lisbon].extra


def test_forgetting_a_record_erases_what_it_alone_supported_and_rederives_the_rest() -> None:
    world = World()
    shared = world.say("rec_1", said("Alice works at Acme.", attribute="works_at", value="acme"))
    world.say("rec_2", said("Alice works at Acme.", attribute="works_at", value="acme"))
    solo = world.say("rec_3", said("Alice loves jazz.", attribute="likes", value="jazz", single=False))
    state = world.state()
    assert world.rules.forget_record(state, "rec_1") == {"memories": 0, "rederiving": 1}
    assert state.plan.rederive == [shared]
    world.commit(state)
    assert world[shared].status == "pending" and [c.record_id for c in world[shared].citations] == ["rec_2"]
    assert world.forget("rec_3") == {"memories": 1, "rederiving": 0} and solo not in world.loader.current



def test_a_record_stating_a_memory_pending_rederivation_supports_it() -> None:
    """Between forgetting a Record and re-deriving what it supported, a Record saying the same made a
    second Memory of one assertion, both active once re-derived. It supports the pending one, which
    stays pending (never served before re-derivation) and is re-derived with its citation."""
    world = World()
    march = datetime(2026, 3, 1, tzinfo=UTC)
    acme = said("Alice joined Acme in March.", attribute="works_at", value="acme", at=march, time_stated=True)
    shared = world.say("rec_1", acme)
    world.say("rec_2", acme)
    world.forget("rec_1")
    assert world[shared].status == "pending"
    assert world.say("rec_3", acme) == shared
    assert world[shared].status == "pending"
    assert [c.record_id for c in world[shared].citations] == ["rec_2", "rec_3"]
    assert list(world.loader.current) == [shared]
    # stated at another time it is a Memory of its own, in conflict with none that is not served
    june = world.say("rec_4", replace(acme, valid_from=datetime(2026, 6, 1, tzinfo=UTC)))
    assert june != shared and "conflicts_with" not in world[june].extra
    # a superseded Memory pending re-derivation is left alone, as a superseded one is
    world.loader.current[shared] = replace(world[shared], superseded_by="mem_999")
    again = world.say("rec_5", acme)
    assert again not in (shared, june) and world[again].extra["conflicts_with"] == [june]


class SaysCake:
    """An extractor that finds the one repeated sentence in every text."""

    def extract(self, text: SourceText, self_name: str | None = None) -> list[Assertion]:
        return [said("Alice loves cake.", attribute=None, value=None)]


def source(text: str) -> SourceText:
    return SourceText(text, "message", "Alice", "user", T)


def test_a_memory_cites_its_first_supporters_and_is_not_revised_for_later_ones() -> None:
    """One sentence said again and again: unbounded, every Record revised the Memory with every
    citation so far (N^2/2 citations); it cites the first MAX_CITATIONS and is then left alone."""
    world = World()
    cake = said("Alice loves cake.", attribute=None, value=None)
    first = world.say("rec_00", cake)
    for i in range(1, 3 * MAX_CITATIONS):
        state = world.state()
        assert world.rules.apply(state, f"rec_{i:02d}", "Alice loves cake.", cake) == first
        assert len(state.plan.revisions) == (1 if i < MAX_CITATIONS else 0)
        world.commit(state)
    memory = world[first]
    assert [c.record_id for c in memory.citations] == [f"rec_{i:02d}" for i in range(MAX_CITATIONS)]
    assert memory.version == MAX_CITATIONS and memory.extra[MORE_SUPPORT] is True


def test_past_the_bound_a_more_widely_served_supporter_takes_the_newest_citations_place() -> None:
    """A Memory whose first supporters are all local_only would never be served on a hosted deployment,
    whatever Records said it later: one served more widely than all it cites replaces its newest
    citation (that Record still names the Memory), one served no more widely changes nothing."""
    world = World()
    cake = said("Alice loves cake.", attribute=None, value=None)

    def say(record_id: str, visibility: str) -> list[str]:
        world.loader.visibility[record_id] = visibility
        state = world.state()
        world.rules.apply(state, record_id, "Alice loves cake.", cake, visibility=visibility)
        world.commit(state)
        return [c.record_id for c in world[memory_id].citations]

    first = [f"rec_{i:02d}" for i in range(MAX_CITATIONS)]
    memory_id = world.say(first[0], cake)
    for record_id in first:
        say(record_id, "local_only")
    assert say("rec_private", "local_only") == first
    assert say("rec_redacted", "redacted_summary") == [*first[:-1], "rec_redacted"]
    version = world[memory_id].version
    assert say("rec_redacted_2", "redacted_summary") == [*first[:-1], "rec_redacted"]
    cited = say("rec_shared", "shareable")
    assert cited == [*first[:-1], "rec_shared"] and world[memory_id].version == version + 1
    reads = world.loader.visibility_reads
    assert say("rec_shared_2", "shareable") == cited and world[memory_id].version == version + 1
    assert world.loader.visibility_reads == reads  # the Memory holds how widely its citations are served


def test_a_memory_cited_in_full_before_the_bound_is_marked_by_its_next_supporter() -> None:
    world = World()
    cake = said("Alice loves cake.", attribute=None, value=None)
    memory_id = world.say("rec_00", cake)
    cited = tuple(Citation(f"rec_{i:02d}", 0, 5, "Alice") for i in range(MAX_CITATIONS + 4))
    world.loader.current[memory_id] = replace(world[memory_id], citations=cited, extra={})
    world.say("rec_new", cake)
    assert world[memory_id].citations == cited and world[memory_id].extra[MORE_SUPPORT] is True
    for record_id in [c.record_id for c in cited]:
        world.forget(record_id)
    assert world[memory_id].status == "pending"  # not erased: rec_new still says it


def test_a_memory_outlives_its_cited_records_while_uncited_ones_support_it() -> None:
    """Forgetting every Record a full Memory cites leaves it pending, not erased; re-derivation cites
    the supporters it did not cite, the first MAX_CITATIONS of them, and keeps the mark only while more
    remain."""
    world = World()
    cake = said("Alice loves cake.", attribute=None, value=None)
    said_by = {world.say(f"rec_{i:02d}", cake) for i in range(MAX_CITATIONS + 3)}
    assert len(said_by) == 1
    memory_id = said_by.pop()
    for i in range(MAX_CITATIONS):
        assert world.forget(f"rec_{i:02d}") == {"memories": 0, "rederiving": 1}
    pending = world[memory_id]
    assert pending.status == "pending" and pending.citations == () and pending.extra[MORE_SUPPORT]

    def rederive(record_ids: list[str], more: bool = False) -> MemoryRevision:
        state = world.state()
        sources = [(r, source("Alice loves cake.")) for r in record_ids]
        world.rules.rederive(state, world[memory_id], sources, SaysCake(), "Alice", more_sources=more)
        world.commit(state)
        return world[memory_id]

    rest = [f"rec_{i:02d}" for i in range(MAX_CITATIONS, MAX_CITATIONS + 3)]
    rederived = rederive(rest)
    assert rederived.status == "active" and [c.record_id for c in rederived.citations] == rest
    assert MORE_SUPPORT not in rederived.extra  # every supporter is cited again
    world.loader.current[memory_id] = replace(rederived, status="pending", extra={MORE_SUPPORT: True})
    many = [f"rec_x{i:02d}" for i in range(MAX_CITATIONS + 5)]
    assert [c.record_id for c in rederive(many).citations] == many[:MAX_CITATIONS]
    assert world[memory_id].extra[MORE_SUPPORT] is True
    world.loader.current[memory_id] = replace(world[memory_id], status="pending", extra={})
    assert rederive(many[:2], more=True).extra[MORE_SUPPORT] is True  # more supporters than were read
    # with no supporter left, forgetting the last cited Record erases it as before
    world.loader.current[memory_id] = replace(world[memory_id], status="active", extra={})
    assert world.forget("rec_x00") == {"memories": 0, "rederiving": 1}
    world.loader.current[memory_id] = replace(world[memory_id], status="active")
    assert world.forget("rec_x01") == {"memories": 1, "rederiving": 0} and memory_id not in world.loader.current


# --- who names whom, as the state tracks it --------------------------------------------------------------

_IDS = [f"mem_{n}" for n in range(3)]  # few, so that Memories name each other often
_NAMING = st.tuples(
    st.none() | st.sampled_from(_IDS),  # superseded_by
    st.lists(st.sampled_from(_IDS), max_size=3),  # conflicts_with
    st.none() | st.sampled_from(_IDS),  # closed_by
)


def _naming(memory_id: str, version: int, naming: tuple[str | None, list[str], str | None]) -> MemoryRevision:
    superseded_by, conflicts, closed_by = naming
    extra: dict[str, object] = {}
    if conflicts:
        extra["conflicts_with"] = conflicts
    if closed_by is not None:
        extra["closed_by"] = closed_by
    return MemoryRevision(
        memory_id, "brn_1", version, f"{memory_id} v{version}", "Alice", "Alice", "lives_in", "lisbon", T, None, T,
        "superseded" if superseded_by else "active", (Citation("rec_1", 0, 4, "text"),), None, superseded_by, version, extra,
    )  # fmt: skip


@settings(max_examples=500, deadline=None)
@example(  # read, then written to name another: no longer among the first one's namers
    stored={"mem_1": ("mem_2", [], None)},
    ops=[("get", "mem_1", (None, [], None)), ("write", "mem_1", (None, ["mem_0"], None)), ("referencing", "mem_2", (None, [], None))],
)
@given(
    stored=st.dictionaries(st.sampled_from(_IDS), _NAMING, max_size=3),
    ops=st.lists(
        st.tuples(st.sampled_from(["get", "write", "erase", "referencing", "prefetch"]), st.sampled_from(_IDS), _NAMING),
        max_size=25,
    ),
)
def test_the_memories_naming_one_are_its_namers_in_the_newest_state_of_each(
    stored: dict[str, tuple[str | None, list[str], str | None]], ops: list[tuple[str, str, tuple]]
) -> None:
    """referencing() is what scanning every Memory's newest state (the plan's over the store's) finds,
    whatever the state read and wrote before: the reads it skips are covered by its own bookkeeping."""
    loader = Loader()
    loader.current = {m: _naming(m, 1, naming) for m, naming in stored.items()}
    state = MemoryState("brn_1", loader, itertools.count(100).__next__)
    newest: dict[str, MemoryRevision | None] = dict(loader.current)
    for op, memory_id, naming in ops:
        if op == "get":
            assert state.get(memory_id) == newest.get(memory_id)
        elif op == "write":
            revision = _naming(memory_id, 2, naming)
            state.write(revision)
            newest[memory_id] = revision
        elif op == "erase":
            state.erase(memory_id)
            newest[memory_id] = None
        elif op == "prefetch":
            state.prefetch_referencing([memory_id, _IDS[0]])
        else:
            expected = sorted(
                (m for m in newest.values() if m is not None and memory_id in named_memories(m)), key=lambda m: m.memory_id
            )
            assert state.referencing(memory_id) == expected
