"""Memories through the contract: derivation, time, attribution, corrections, conflicts, deletion, sync."""

from __future__ import annotations

from typing import Any

import pytest

from brainstore.api.app import create_app
from brainstore.derive import Assertion, RuleExtractor, SourceText
from brainstore.domain import MemoryRevision
from brainstore.service import Service
from brainstore.service.visibility import Visibility
from tests.conftest import Api, assert_error
from tests.reopen import Engine, reopenable_engine  # noqa: F401  (the fixture "engine")


def say(
    api: Api, service: Service, text: str, at: str, *, brain: str = "alice", **content: Any
) -> dict[str, Any]:
    body = {"kind": "message", "role": "user", "text": text, **content}
    rec = api.remember(brain, body, occurred_at=at).body
    assert service.wait_idle()
    return api.get(f"/brains/{brain}/records/{rec['id']}").body


def memories(api: Api, brain: str = "alice", **params: str) -> list[dict[str, Any]]:
    r = api.get(f"/brains/{brain}/memories", params=params)
    assert r.status == 200, r.body
    return r.body["data"]


def only(items: list[dict[str, Any]], needle: str) -> dict[str, Any]:
    found = [m for m in items if needle in m["statement"]]
    assert len(found) == 1, [m["statement"] for m in items]
    return found[0]


@pytest.fixture
def alice(api: Api) -> Api:
    api.brain("alice", self_name="Alice")
    return api


def test_a_first_person_statement_becomes_a_cited_self_contained_memory(alice: Api, service: Service) -> None:
    record = say(alice, service, "I moved to Lisbon last March.", "2024-05-08T10:00:00Z")
    assert record["status"] == "ready" and len(record["memory_ids"]) == 1
    memory = alice.get(f"/brains/alice/memories/{record['memory_ids'][0]}").body
    assert "Alice" in memory["statement"] and "Lisbon" in memory["statement"]
    assert memory["subject"] == "Alice" and memory["owner"] == "Alice"
    assert memory["valid_from"].startswith("2024-03-01")
    citation = memory["citations"][0]
    assert citation["record_id"] == record["id"]
    text = record["content"]["text"]
    assert text[citation["span"]["start"] : citation["span"]["end"]] == citation["quote"]
    assert memory["evidence"][0]["record_id"] == record["id"]
    assert memory["revisions"][0]["version"] == 1


def test_facts_that_change_over_time_keep_their_history(alice: Api, service: Service) -> None:
    say(alice, service, "I live in Lisbon.", "2022-01-10T10:00:00Z")
    say(alice, service, "I moved to Porto last March.", "2024-05-08T10:00:00Z")
    lisbon = only(memories(alice), "Lisbon")
    porto = only(memories(alice), "Porto")
    assert lisbon["valid_to"] is not None and lisbon["valid_to"].startswith("2024-03-01")
    assert porto["valid_to"] is None and not porto["conflicts_with"]
    then = memories(alice, as_of="2023-01-01T00:00:00Z")
    assert any("Lisbon" in m["statement"] for m in then) and not any("Porto" in m["statement"] for m in then)
    now = memories(alice, as_of="2024-06-01T00:00:00Z")
    assert any("Porto" in m["statement"] for m in now) and not any("Lisbon" in m["statement"] for m in now)
    profile = alice.get("/brains/alice/profile").body
    statements = [line["statement"] for line in profile["lines"]]
    assert any("Porto" in s for s in statements) and not any("Lisbon" in s for s in statements)
    assert all(line["citations"] for line in profile["lines"])


def test_nothing_is_attributed_to_the_self_without_ownership(alice: Api, service: Service) -> None:
    say(alice, service, "My sister loves sushi.", "2024-01-01T10:00:00Z")
    say(
        alice,
        service,
        "You should try yoga. You mentioned you like hiking.",
        "2024-01-01T10:01:00Z",
        role="assistant",
    )
    alice.remember("alice", {"kind": "document", "text": "Bob said he likes tea."})
    say(alice, service, "I love painting.", "2024-01-01T10:02:00Z", speaker="Carol", role="other")
    assert service.wait_idle()
    everything = memories(alice)
    sushi = only(everything, "sushi")
    assert sushi["owner"] != "Alice" and "sister" in sushi["subject"]
    assert only(everything, "tea")["owner"] == "Bob"
    assert only(everything, "painting")["owner"] == "Carol"
    assert not any(
        "yoga" in m["statement"] or "hiking" in m["statement"] for m in everything if m["owner"] == "Alice"
    )
    assert memories(alice, owner="Alice") == []
    assert alice.get("/brains/alice/profile").body["lines"] == []


def test_hearsay_never_ends_what_the_self_said_of_herself(alice: Api, service: Service) -> None:
    # Bob's word on Alice's home closed her own "I moved to Denver" and took its place as current
    say(alice, service, "I moved to Denver.", "2024-05-01T10:00:00Z")
    say(alice, service, "Alice moved to Boulder.", "2024-05-02T10:00:00Z", speaker="Bob", role="other")
    denver, boulder = only(memories(alice), "Denver"), only(memories(alice), "Boulder")
    assert boulder["owner"] is None and denver["owner"] == "Alice"
    assert denver["valid_to"] is None and denver["conflicts_with"] == [boulder["id"]]
    assert any("Denver" in m["statement"] for m in memories(alice, as_of="2024-06-01T00:00:00Z"))
    # her own word still closes hearsay
    say(alice, service, "Alice moved to Rome.", "2024-05-03T10:00:00Z", speaker="Bob", role="other")
    say(alice, service, "I moved to Oslo.", "2024-05-04T10:00:00Z")
    rome = only(memories(alice), "Rome")
    assert rome["valid_to"] is not None and rome["valid_to"].startswith("2024-05-04")
    assert only(memories(alice), "Denver")["valid_to"].startswith("2024-05-04")


def test_a_question_to_someone_is_no_fact_of_theirs(alice: Api, service: Service) -> None:
    # Bob's check ended Alice's own home; two speakers' "you" were one "other person" in conflict
    say(alice, service, "I moved to Denver.", "2024-05-01T10:00:00Z", speaker="Alice")
    say(alice, service, "Alice, you live in Boulder now, right?", "2024-05-01T10:01:00Z", speaker="Bob")
    say(alice, service, "You moved to Denver last year, right?", "2024-05-01T10:02:00Z", speaker="Carol")
    say(alice, service, "You live in Austin, don't you?", "2024-05-01T10:03:00Z", speaker="Erin")
    everything = memories(alice)
    denver = only(everything, "Alice moved to Denver")
    assert denver["valid_to"] is None and not denver["conflicts_with"]
    assert not any(m["conflicts_with"] for m in everything)
    lines = alice.get("/brains/alice/profile").body["lines"]
    assert not any("Boulder" in line["statement"] or "Austin" in line["statement"] for line in lines)


def test_a_move_at_an_age_leaves_the_home_held_now(alice: Api, service: Service) -> None:
    # "when I was 25" was dated when said: Boulder closed then and Denver made current, the order inverted
    say(alice, service, "I live in Boulder.", "2023-01-01T10:00:00Z")
    say(alice, service, "I moved to Denver when I was 25.", "2023-05-01T10:00:00Z")
    boulder = only(memories(alice), "Boulder")
    assert boulder["valid_to"] is None and not boulder["conflicts_with"]
    lines = alice.get("/brains/alice/profile").body["lines"]
    assert any("Boulder" in line["statement"] for line in lines)
    assert not only(memories(alice), "Denver")["valid_from"].startswith("2023")  # at a time not said
    # "since the wedding": some time before it was said, so true before then too
    say(alice, service, "I've worked at Acme since the wedding.", "2023-05-01T10:01:00Z")
    assert any("Acme" in m["statement"] for m in memories(alice, as_of="2023-01-01T00:00:00Z"))


def test_an_application_s_own_note_is_no_hearsay(alice: Api, service: Service) -> None:
    # an application's document or fact has no owner either, but it is no other speaker's claim: "Alice
    # moved to Austin" in a note ends the home she told of, as it did before hearsay was kept apart
    say(alice, service, "I live in Boulder.", "2023-01-01T10:00:00Z")
    alice.remember("alice", {"kind": "document", "text": "Alice moved to Austin in April 2023."})
    assert service.wait_idle()
    boulder, austin = only(memories(alice), "Boulder"), only(memories(alice), "Austin")
    assert austin["owner"] is None and austin["valid_to"] is None
    assert boulder["valid_to"] is not None and boulder["valid_to"].startswith("2023-04-01")


def test_a_move_learned_after_a_later_one_ends_where_that_one_begins(alice: Api, service: Service) -> None:
    # told in this order both stayed open, in conflict, and as_of 2022 served both homes
    told_first = say(alice, service, "I moved to Berlin in 2021.", "2023-01-01T10:00:00Z")
    say(alice, service, "I moved to Paris in 2019.", "2023-05-08T10:00:00Z")
    berlin, paris = only(memories(alice), "Berlin"), only(memories(alice), "Paris")
    assert paris["valid_to"] is not None and paris["valid_to"].startswith("2021-01-01")
    assert berlin["valid_to"] is None and not berlin["conflicts_with"] and not paris["conflicts_with"]
    assert [m["statement"] for m in memories(alice, as_of="2020-01-01T00:00:00Z")] == [paris["statement"]]
    assert [m["statement"] for m in memories(alice, as_of="2022-01-01T00:00:00Z")] == [berlin["statement"]]
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert statements == [berlin["statement"]]
    assert alice.delete(f"/brains/alice/records/{told_first['id']}").status == 200  # what ended it is gone
    assert service.wait_idle()
    reopened = alice.get(f"/brains/alice/memories/{paris['id']}").body
    assert reopened["valid_to"] is None and all(r["valid_to"] is None for r in reopened["revisions"])


def test_a_move_from_one_place_to_another_closes_the_old_home(alice: Api, service: Service) -> None:
    # "moved from X to Y" was no move at all: the profile kept both homes
    say(alice, service, "I live in Lisbon.", "2022-01-10T10:00:00Z")
    say(alice, service, "I moved from Lisbon to Porto last March.", "2024-05-08T10:00:00Z")
    lisbon = only(memories(alice), "lives in Lisbon")
    assert lisbon["valid_to"] is not None and lisbon["valid_to"].startswith("2024-03-01")
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert any("Porto" in s for s in statements) and not any("lives in Lisbon" in s for s in statements)


def test_a_move_told_under_a_label_closes_the_old_home(alice: Api, service: Service) -> None:
    # "Update: I moved to Porto" made nothing (a label before a colon hid the clause): Lisbon stayed home
    say(alice, service, "I live in Lisbon.", "2022-01-10T10:00:00Z")
    say(alice, service, "Update: I moved to Porto.", "2024-05-08T10:00:00Z")
    lisbon = only(memories(alice), "lives in Lisbon")
    assert lisbon["valid_to"] is not None and lisbon["valid_to"].startswith("2024-05-08")
    # a date as the label: the move was then
    say(alice, service, "2024-06-03: I moved to Oslo.", "2024-06-10T10:00:00Z")
    porto = only(memories(alice), "moved to Porto")
    assert porto["valid_to"] is not None and porto["valid_to"].startswith("2024-06-03")


def test_a_move_in_a_pasted_letter_is_its_signer_s_and_leaves_the_user_s_home(alice: Api, service: Service) -> None:
    # Carol's letter was read as Alice's words: "Alice is moving to Denver" closed Alice's home in Boulder
    say(alice, service, "I live in Boulder.", "2023-01-10T10:00:00Z")
    email = "Can you help me reply to this email?\n\nHi Alice,\n\nI'm moving to Denver next month.\n\nBest,\nCarol"
    say(alice, service, email, "2023-05-08T10:00:00Z")
    items = memories(alice)
    assert only(items, "lives in Boulder")["valid_to"] is None
    denver = only(items, "Denver")
    assert denver["owner"] == "Carol" and denver["subject"] == "Carol"


def test_a_move_after_a_lead_in_naming_its_source_is_theirs_and_leaves_the_user_s_home(
    alice: Api, service: Service
) -> None:
    # Bob's pasted words were read as Alice's: "Alice is moving to Denver" closed Alice's home in Boulder
    say(alice, service, "I live in Boulder.", "2023-01-10T10:00:00Z")
    say(alice, service, "Here's what Bob sent me:\nI'm moving to Denver next month.", "2023-05-08T10:00:00Z")
    items = memories(alice)
    assert only(items, "lives in Boulder")["valid_to"] is None
    assert only(items, "Denver")["owner"] == "Bob"


def test_a_move_after_a_fronted_time_of_day_closes_the_old_home(alice: Api, service: Service) -> None:
    # "Yesterday morning I moved to Porto" made nothing, and "Yesterday morning Bob moved to Oslo" was
    # Alice's statement about "yesterday morning Bob", no home: the old homes stayed current
    say(alice, service, "I live in Lisbon. Bob lives in Rome.", "2022-01-10T10:00:00Z")
    say(alice, service, "Yesterday morning I moved to Porto.", "2024-05-08T10:00:00Z")
    say(alice, service, "Yesterday morning Bob moved to Oslo.", "2024-05-08T10:00:00Z")
    lisbon, rome = only(memories(alice), "lives in Lisbon"), only(memories(alice), "lives in Rome")
    assert lisbon["valid_to"].startswith("2024-05-07") and rome["valid_to"].startswith("2024-05-07")
    assert only(memories(alice), "Oslo")["owner"] == "Bob"


@pytest.mark.parametrize(
    ("person", "said", "moved"),
    [
        ("Bob", "Bob's moved to Oslo.", "moved to Oslo"),  # was Bob's "moved", no clause
        ("Carol", '"I moved to Spain," Carol said.', "moved to Spain"),  # the quotation before its frame made nothing
    ],
)
def test_a_move_told_of_another_closes_their_old_home(
    alice: Api, service: Service, person: str, said: str, moved: str
) -> None:
    # their home stayed Rome
    say(alice, service, f"{person} lives in Rome.", "2022-01-10T10:00:00Z")
    say(alice, service, said, "2024-05-08T10:00:00Z")
    rome = only(memories(alice), "lives in Rome")
    assert rome["valid_to"] is not None and rome["valid_to"].startswith("2024-05-08")
    assert only(memories(alice), moved)["owner"] == person


@pytest.mark.parametrize(
    ("held", "correction", "wrong", "right"),
    [
        ("I live in Dallas.", "Actually I live in Denver, not Dallas.", "lives in Dallas", "Denver"),
        ("I'm 34.", "I'm 35, not 34.", "is 34", "35"),
    ],
)
def test_a_value_said_to_be_wrong_is_superseded_not_in_conflict(
    alice: Api, service: Service, held: str, correction: str, wrong: str, right: str
) -> None:
    # "..., not Dallas" left "Alice lives in Dallas" served beside Denver, both marked as in conflict
    # ("I'm 35, not 34" made nothing at all)
    say(alice, service, held, "2023-01-10T10:00:00Z")
    corrected = say(alice, service, correction, "2023-05-08T10:00:00Z")
    old, new = only(memories(alice), wrong), only(memories(alice), right)
    assert old["status"] == "superseded" and new["supersedes"] == old["id"] and not new["conflicts_with"]
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert not any(wrong in s for s in statements) and any(right in s for s in statements)
    assert alice.delete(f"/brains/alice/records/{corrected['id']}").status == 200  # the correction gone
    assert service.wait_idle()
    restored = alice.get(f"/brains/alice/memories/{old['id']}").body
    assert restored["status"] == "active" and restored["valid_to"] is None


@pytest.mark.parametrize(
    ("held", "correction", "wrong", "right"),
    [
        ("I live in Denver.", "Sorry, I meant Portland, not Denver.", "lives in Denver", "lives in Portland"),
        ("I live in Denver.", "No wait, I live in Boulder", "lives in Denver", "lives in Boulder"),
        ("I live in Denver.", "Actually, I live in Boulder, not Denver", "lives in Denver", "lives in Boulder"),
        ("I work at Google.", "Correction: I work at Stripe, not Google", "works at Google", "works at Stripe"),
        ("I live in Denver.", "I mean Portland", "lives in Denver", "lives in Portland"),
        ("I live in Denver.", "*Portland", "lives in Denver", "lives in Portland"),
        ("I'm 30.", "Oops, I'm 31, not 30", "is 30", "is 31"),
        # (was "Alice is a a doctor.": the article said again)
        ("I'm a nurse.", "Sorry, I meant a doctor.", "is a nurse", "is a doctor"),
    ],
)
def test_a_self_correction_in_the_next_message_supersedes_what_was_just_said(
    alice: Api, service: Service, held: str, correction: str, wrong: str, right: str
) -> None:
    # "Sorry, I meant Portland, not Denver" made "Alice meant Portland, not Denver." and left Denver
    # current; "No wait, I live in Boulder" kept Denver beside Boulder as in conflict
    say(alice, service, held, "2024-05-08T10:00:00Z")
    corrected = say(alice, service, correction, "2024-05-08T10:01:00Z")
    old, new = only(memories(alice), wrong), only(memories(alice), right)
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    assert new["status"] == "active" and new["supersedes"] == old["id"] and not new["conflicts_with"]
    assert (new["owner"], new["valid_to"]) == ("Alice", None) and new["citations"][0]["record_id"] == corrected["id"]
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert not any(wrong in s for s in statements) and any(right in s for s in statements)
    assert alice.delete(f"/brains/alice/records/{corrected['id']}").status == 200  # the correction gone
    assert service.wait_idle()
    restored = alice.get(f"/brains/alice/memories/{old['id']}").body
    assert restored["status"] == "active" and restored["valid_to"] is None


def test_a_self_correction_is_only_of_the_speakers_own_recent_word(alice: Api, service: Service) -> None:
    say(alice, service, "I live in Denver.", "2024-05-08T10:00:00Z")
    # Bob's correction is of Bob's word, never Alice's
    say(alice, service, "Sorry, I meant Portland, not Denver.", "2024-05-08T10:01:00Z", speaker="Bob", role="other")
    say(alice, service, "*Portland", "2024-05-08T10:02:00Z", speaker="Bob", role="other")
    denver = only(memories(alice), "lives in Denver")
    assert denver["status"] == "active" and denver["valid_to"] is None
    assert not any("lives in Portland" in m["statement"] for m in memories(alice))
    # a value told a day before is no slip of the tongue: kept beside the new one, as in conflict
    say(alice, service, "I work at Globex.", "2024-05-07T10:00:00Z")
    initech = say(alice, service, "No wait, I work at Initech.", "2024-05-08T10:03:00Z")
    globex = only(memories(alice), "works at Globex")
    assert globex["status"] == "active" and globex["conflicts_with"] == initech["memory_ids"]
    # "not Denver" alone says nothing meant; a correction of nothing held is still the fact it states
    say(alice, service, "not Denver", "2024-05-08T10:04:00Z")
    assert only(memories(alice), "lives in Denver")["status"] == "active"
    say(alice, service, "Actually, I'm a nurse, not a teacher.", "2024-05-08T10:05:00Z")
    assert only(memories(alice), "is a nurse")["status"] == "active"


def test_a_self_correction_within_a_message_says_only_what_was_meant(alice: Api, service: Service) -> None:
    record = say(alice, service, "I live in Denver, sorry, Portland", "2024-05-08T10:00:00Z")
    assert [m["statement"] for m in memories(alice)] == ["Alice lives in Portland."]
    assert memories(alice)[0]["citations"][0]["record_id"] == record["id"]


def test_a_denied_value_leaves_the_value_held(alice: Api, service: Service) -> None:
    # "I no longer work at IBM" ended "works at Google": as_of and the profile served only the denial
    say(alice, service, "I work at Google.", "2023-01-01T10:00:00Z")
    say(alice, service, "I no longer work at IBM.", "2023-05-08T10:00:00Z")
    say(alice, service, "I live in Paris.", "2023-01-01T10:00:00Z")
    say(alice, service, "I don't live in Berlin.", "2023-05-08T10:00:00Z")
    held = [only(memories(alice), needle) for needle in ("works at Google", "lives in Paris")]
    assert all(m["valid_to"] is None and not m["conflicts_with"] for m in held)
    now = [m["statement"] for m in memories(alice, as_of="2023-05-10T00:00:00Z")]
    assert any("works at Google" in s for s in now) and any("lives in Paris" in s for s in now)
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert any("works at Google" in s for s in statements) and any("lives in Paris" in s for s in statements)


def test_a_relatives_contracted_denial_is_no_support(alice: Api, service: Service) -> None:
    # "My brother doesn't live in Rome anymore" lost its "n't": one Memory "lives in Rome", still open,
    # cited by the denial as support
    say(alice, service, "My brother lives in Rome.", "2023-05-01T10:00:00Z")
    say(alice, service, "My brother doesn't live in Rome anymore.", "2023-05-07T10:00:00Z")
    rome = only(memories(alice), "brother lives in Rome")
    assert rome["valid_to"] is not None and rome["valid_to"].startswith("2023-05-07")
    assert [c["quote"] for c in rome["citations"]] == ["My brother lives in Rome"]
    denial = only(memories(alice), "doesn't live in Rome")
    assert denial["owner"] == "Alice's brother"


def test_a_relatives_fact_after_and_is_no_memory_of_the_speaker(alice: Api, service: Service) -> None:
    # "I'm a nurse and my brother is a teacher" was one Memory of Alice's, with her brother's job in it
    say(alice, service, "I'm a nurse and my brother is a teacher.", "2023-05-08T10:00:00Z")
    nurse, teacher = only(memories(alice), "Alice is a nurse"), only(memories(alice), "brother is a teacher")
    assert (nurse["statement"], nurse["owner"]) == ("Alice is a nurse.", "Alice")
    assert (teacher["statement"], teacher["owner"]) == ("Alice's brother is a teacher.", "Alice's brother")


def test_leaving_an_employer_in_a_later_record_ends_the_job(alice: Api, service: Service) -> None:
    # "I left Google" was a plain statement unless the same Record named the next employer: the job
    # stayed current, served by the profile and as_of, after the speaker said they had left it
    say(alice, service, "I work at Google as an engineer.", "2023-01-10T10:00:00Z")
    say(alice, service, "I left Google last week.", "2023-05-08T10:00:00Z")
    google = only(memories(alice), "works at Google")
    assert google["valid_to"] is not None and google["valid_to"].startswith("2023-05-01")
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert not any("works at Google" in s for s in statements)
    quit_too = say(alice, service, "I quit my job at Google.", "2023-05-09T10:00:00Z")
    assert quit_too["memory_ids"] == [only(memories(alice), "left Google")["id"]]  # the same ending, supported
    # a city left is as often a trip as a move: the home stays
    say(alice, service, "I live in Berlin.", "2023-01-10T10:00:00Z")
    say(alice, service, "I left Berlin this morning.", "2023-05-10T10:00:00Z")
    assert only(memories(alice), "lives in Berlin")["valid_to"] is None


def test_a_job_ended_without_naming_the_employer_ends_the_one_held(alice: Api, service: Service) -> None:
    # "I got laid off today" after "I work at Acme" was a plain statement: Acme stayed the current job
    say(alice, service, "I quit my job.", "2022-06-01T10:00:00Z")  # no job held yet: nothing to end
    say(alice, service, "I work at Acme.", "2023-01-10T10:00:00Z")
    assert only(memories(alice), "works at Acme")["valid_to"] is None
    say(alice, service, "I got laid off today.", "2023-05-08T10:00:00Z")
    acme = only(memories(alice), "works at Acme")
    assert acme["valid_to"] is not None and acme["valid_to"].startswith("2023-05-08")
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert not any("Acme" in s for s in statements)
    # another person's job ends theirs, never the speaker's; two jobs held at once: which one is not said
    say(alice, service, "Bob works at Initech.", "2023-01-10T10:00:00Z")
    say(alice, service, "Carol works at Globex.", "2023-01-10T10:00:00Z")
    say(alice, service, "Carol works at Hooli.", "2023-01-10T10:01:00Z")
    say(alice, service, "I work at Umbrella.", "2023-05-09T10:00:00Z")
    say(alice, service, "Bob quit his job.", "2023-05-10T10:00:00Z")
    say(alice, service, "Carol quit her job.", "2023-05-10T10:01:00Z")
    assert only(memories(alice), "works at Initech")["valid_to"].startswith("2023-05-10")
    assert only(memories(alice), "works at Umbrella")["valid_to"] is None
    assert only(memories(alice), "works at Globex")["valid_to"] is None
    assert only(memories(alice), "works at Hooli")["valid_to"] is None


def test_joining_someone_for_lunch_ends_no_job(alice: Api, service: Service) -> None:
    # "I joined Bob for lunch" was works_at Bob, a change: it closed "Alice works at Acme"
    say(alice, service, "I work at Acme.", "2023-05-01T10:00:00Z")
    say(alice, service, "I joined Bob for lunch.", "2023-05-07T10:00:00Z")
    assert only(memories(alice), "works at Acme")["valid_to"] is None
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert any("works at Acme" in s for s in statements)


def test_a_move_within_the_home_or_a_time_of_work_ends_nothing(alice: Api, service: Service) -> None:
    # "I moved to the couch" was a move to a home "couch", closing Lisbon; "I work at night" the employer
    # "night", beside Acme
    say(alice, service, "I live in Lisbon.", "2023-05-01T10:00:00Z")
    say(alice, service, "I work at Acme.", "2023-05-01T10:01:00Z")
    say(alice, service, "I moved to the couch because my back hurts.", "2023-05-07T10:00:00Z")
    say(alice, service, "I work at night.", "2023-05-07T10:01:00Z")
    assert only(memories(alice), "lives in Lisbon")["valid_to"] is None
    assert only(memories(alice), "works at Acme")["valid_to"] is None
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert any("lives in Lisbon" in s for s in statements) and any("works at Acme" in s for s in statements)
    assert only(memories(alice), "couch")["attribute"] is None and only(memories(alice), "at night")["attribute"] is None


def test_an_ending_denied_keeps_the_value_held(alice: Api, service: Service) -> None:
    # "I never quit my job at Google" ended the job ("quit" read as the ending it denies), and "I moved
    # out of Berlin" closed nothing
    say(alice, service, "I work at Google.", "2023-01-01T10:00:00Z")
    say(alice, service, "I never quit my job at Google.", "2023-05-08T10:00:00Z")
    assert only(memories(alice), "works at Google")["valid_to"] is None
    say(alice, service, "I live in Berlin.", "2023-01-01T10:00:00Z")
    say(alice, service, "I haven't moved out of Berlin yet.", "2023-05-08T10:00:00Z")
    assert only(memories(alice), "lives in Berlin")["valid_to"] is None
    say(alice, service, "I moved out of Berlin last month.", "2023-06-08T10:00:00Z")
    berlin = only(memories(alice), "lives in Berlin")
    assert berlin["valid_to"] is not None and berlin["valid_to"].startswith("2023-05-01")


def test_a_move_a_count_of_weeks_ahead_closes_the_old_home_when_it_happens(alice: Api, service: Service) -> None:
    # "in two weeks" dated the move at the Record's time: Paris closed on 8 May, Berlin held from then
    say(alice, service, "I live in Paris.", "2023-01-01T10:00:00Z")
    say(alice, service, "I'm moving to Berlin in two weeks.", "2023-05-08T10:00:00Z")
    paris = only(memories(alice), "Paris")
    assert paris["valid_to"] is not None and paris["valid_to"].startswith("2023-05-22")
    assert only(memories(alice), "Berlin")["statement"] == "Alice is moving to Berlin in the week of 22 May 2023."
    before = [m["statement"] for m in memories(alice, as_of="2023-05-10T00:00:00Z")]
    assert before == ["Alice lives in Paris."]


@pytest.mark.parametrize(
    ("plan", "closed", "statement"),
    [
        # a plan with no time ended Lisbon when it was said, as if Alice lived in Oslo from then
        ("I'm moving to Oslo soon.", None, "Alice is moving to Oslo soon."),
        ("I'll move to Oslo.", None, "Alice will move to Oslo."),
        # with a time, the move closes Lisbon then (were also closed on 8 May: the times were not read)
        ("I'm moving to Oslo in the fall.", "2023-09-01", "Alice is moving to Oslo in the fall of 2023."),
        ("I'm moving to Oslo after Christmas.", "2023-12-25", "Alice is moving to Oslo after Christmas 2023."),
    ],
)
def test_a_plan_ends_the_value_held_only_when_it_says_when(
    alice: Api, service: Service, plan: str, closed: str | None, statement: str
) -> None:
    say(alice, service, "I live in Lisbon.", "2023-05-01T10:00:00Z")
    say(alice, service, plan, "2023-05-08T10:00:00Z")
    lisbon = only(memories(alice), "Lisbon")
    assert (lisbon["valid_to"] or "")[:10] == (closed or "")
    assert only(memories(alice), "Oslo")["statement"] == statement
    if closed is None:  # kept as said, and Alice still lives in Lisbon
        now = [m["statement"] for m in memories(alice, as_of="2023-06-01T00:00:00Z")]
        assert "Alice lives in Lisbon." in now


def test_a_state_said_to_be_over_closes_the_one_held_open(alice: Api, service: Service) -> None:
    # "I used to live in Rome" was taken as support of "Alice lives in Rome": still open, now citing both
    say(alice, service, "I live in Rome.", "2020-01-10T10:00:00Z")
    ended = say(alice, service, "I used to live in Rome.", "2024-05-08T10:00:00Z")
    rome = [m for m in memories(alice) if "Rome" in m["statement"]]
    held = only(rome, "lives in Rome")
    assert held["valid_to"] is not None and held["valid_to"].startswith("2024-05-08")
    assert [c["record_id"] for c in held["citations"]] != [ended["id"]] and len(held["citations"]) == 1
    assert all(m["valid_to"] is not None for m in rome)
    statements = [line["statement"] for line in alice.get("/brains/alice/profile").body["lines"]]
    assert not any("lives in Rome" in s for s in statements)
    assert alice.delete(f"/brains/alice/records/{ended['id']}").status == 200  # what closed it is gone
    assert service.wait_idle()
    assert alice.get(f"/brains/alice/memories/{held['id']}").body["valid_to"] is None


def test_a_liking_said_to_be_over_closes_the_one_held_open(alice: Api, service: Service) -> None:
    # "I used to love sushi" stayed open from the Record's time, beside "Alice loves sushi", also open
    say(alice, service, "I love sushi.", "2023-01-07T10:00:00Z")
    say(alice, service, "I used to love sushi.", "2023-05-07T10:00:00Z")
    loves = only(memories(alice), "loves sushi")
    assert loves["valid_to"] is not None and loves["valid_to"].startswith("2023-05-07")
    over = only(memories(alice), "used to love sushi")
    assert over["valid_to"] is not None and over["valid_to"].startswith("2023-05-07")
    assert not any("sushi" in m["statement"] for m in memories(alice, as_of="2023-06-01T00:00:00Z"))


def test_a_state_held_over_is_not_supported_by_one_said_to_hold_again(alice: Api, service: Service) -> None:
    say(alice, service, "I used to live in Rome.", "2019-01-10T10:00:00Z")
    say(alice, service, "I live in Rome.", "2020-05-08T10:00:00Z")
    current = [m for m in memories(alice) if "Rome" in m["statement"] and m["valid_to"] is None]
    assert len(current) == 1 and "lives in Rome" in current[0]["statement"]


def test_a_call_made_is_no_name_and_ends_none(alice: Api, service: Service) -> None:
    # "I called Carol" was the name "carol", held from the beginning of time until the Record: it closed
    # "goes by Ally", and a read as_of any earlier time served it
    say(alice, service, "I go by Ally.", "2023-05-01T10:00:00Z")
    say(alice, service, "I called Carol.", "2023-05-07T10:00:00Z")
    assert only(memories(alice), "goes by Ally")["valid_to"] is None
    call = only(memories(alice), "called Carol")
    assert call["valid_from"].startswith("2023-05-07") and call["valid_to"] is None
    assert not any("Carol" in m["statement"] for m in memories(alice, as_of="2023-01-01T00:00:00Z"))


def test_a_correction_supersedes_and_a_second_one_conflicts(alice: Api, service: Service) -> None:
    wrong = say(alice, service, "I live in Lisbon.", "2024-01-01T10:00:00Z")["memory_ids"][0]
    fix = alice.remember(
        "alice", {"kind": "correction", "corrects": wrong, "text": "Actually I live in Porto."}
    ).body
    assert service.wait_idle()
    old = alice.get(f"/brains/alice/memories/{wrong}").body
    assert old["status"] == "superseded" and old["superseded_by"] and old["valid_to"] is not None
    new = alice.get(f"/brains/alice/memories/{old['superseded_by']}").body
    assert new["status"] == "active" and new["supersedes"] == wrong and "Porto" in new["statement"]
    assert new["citations"][0]["record_id"] == fix["id"]
    before = alice.get("/brains/alice/census").body["counts"]["records"]
    err = assert_error(
        alice.post(
            "/brains/alice/records",
            {"content": {"kind": "correction", "corrects": wrong, "text": "No, Madrid."}},
        ),
        409,
        "correction_conflict",
    )
    assert wrong in err["message"]
    assert_error(
        alice.post(
            "/brains/alice/records", {"content": {"kind": "correction", "corrects": "mem_nope", "text": "x"}}
        ),
        404,
        "corrected_memory_not_found",
    )
    assert alice.get("/brains/alice/census").body["counts"]["records"] == before


def test_a_replayed_correction_answers_its_original_202(alice: Api, service: Service) -> None:
    # The correction was checked before its stored reply was looked up: once it had superseded the
    # Memory (409 correction_conflict), or that Memory's Record was forgotten (404), a client retrying
    # with the same Idempotency-Key was told its write had failed.
    acme = say(alice, service, "I work at Acme.", "2024-01-01T10:00:00Z")
    wrong = acme["memory_ids"][0]
    correction = {"content": {"kind": "correction", "corrects": wrong, "text": "Actually I work at Initech."}}
    key = {"Idempotency-Key": "fix-employer"}
    first = alice.post("/brains/alice/records", correction, headers=key)
    assert first.status == 202
    assert service.wait_idle()
    assert alice.get(f"/brains/alice/memories/{wrong}").body["status"] == "superseded"
    replayed = alice.post("/brains/alice/records", correction, headers=key)
    assert (replayed.status, replayed.body) == (202, first.body)
    assert alice.delete(f"/brains/alice/records/{acme['id']}").status == 200
    assert service.wait_idle()
    replayed = alice.post("/brains/alice/records", correction, headers=key)
    assert (replayed.status, replayed.body) == (202, first.body)
    # without the key it is a new correction, checked as ever
    assert_error(alice.post("/brains/alice/records", correction), 404, "corrected_memory_not_found")


def test_forgetting_a_correction_restores_what_it_superseded(alice: Api, service: Service) -> None:
    wrong = say(alice, service, "I live in Lisbon.", "2024-01-01T10:00:00Z")["memory_ids"][0]
    fix = alice.remember("alice", {"kind": "correction", "corrects": wrong, "text": "Actually I live in Porto."}).body
    assert service.wait_idle()
    porto = alice.get(f"/brains/alice/memories/{wrong}").body["superseded_by"]
    assert alice.delete(f"/brains/alice/records/{fix['id']}").status == 200
    assert service.wait_idle()
    restored = alice.get(f"/brains/alice/memories/{wrong}").body
    assert restored["status"] == "active" and restored["superseded_by"] is None and restored["valid_to"] is None
    assert alice.get(f"/brains/alice/memories/{porto}").status == 404
    again = alice.post("/brains/alice/records", {"content": {"kind": "correction", "corrects": wrong, "text": "I live in Madrid."}})
    assert again.status == 202, again.body  # the fact can be fixed again


def test_a_contradicting_message_never_becomes_support(alice: Api, service: Service) -> None:
    march = say(alice, service, "I moved to Lisbon in March 2026.", "2026-05-02T10:00:00Z")["memory_ids"][0]
    fix = say(alice, service, "Actually I moved to Lisbon in April, not March.", "2026-05-03T10:00:00Z")
    old = alice.get(f"/brains/alice/memories/{march}").body
    assert len(old["citations"]) == 1 and old["citations"][0]["record_id"] != fix["id"]
    assert old["status"] == "superseded" and old["superseded_by"] in fix["memory_ids"]
    new = alice.get(f"/brains/alice/memories/{old['superseded_by']}").body
    assert new["status"] == "active" and "Lisbon" in new["statement"]
    assert new["valid_from"].startswith("2026-04") and new["citations"][0]["record_id"] == fix["id"]
    active = [
        m["statement"] for m in memories(alice) if "Lisbon" in m["statement"] and m["status"] == "active"
    ]
    assert len(active) == 1, active


def test_the_same_fact_at_another_time_is_a_marked_conflict(alice: Api, service: Service) -> None:
    first = say(alice, service, "I moved to Lisbon in March 2026.", "2026-05-02T10:00:00Z")["memory_ids"][0]
    second = say(alice, service, "I moved to Lisbon in June 2025.", "2026-05-03T10:00:00Z")["memory_ids"][0]
    assert first != second
    one, other = (alice.get(f"/brains/alice/memories/{m}").body for m in (first, second))
    assert one["status"] == other["status"] == "active"
    assert one["conflicts_with"] == [second] and other["conflicts_with"] == [first]
    assert len(one["citations"]) == len(other["citations"]) == 1


def test_a_memory_names_at_most_sixteen_conflicts_the_newest(alice: Api, service: Service) -> None:
    """Twenty employers, no change stated: each Memory in conflict names some, none more than 16 (the
    contract's maxItems), the newest first named; a Memory stored with a longer list (derived before the
    bound) is served with its newest 16."""
    made = [
        say(alice, service, f"I work at Company{i}.", f"2024-01-{i + 1:02d}T10:00:00Z")["memory_ids"][0] for i in range(20)
    ]
    served = {m["id"]: m for m in memories(alice, limit="100") if m["id"] in made}
    assert len(served) == 20
    assert all(1 <= len(m["conflicts_with"]) <= 16 for m in served.values())
    assert set(served[made[-1]]["conflicts_with"]) == set(made[-17:-1])
    brain = service.store.get_brain("test:acme", "alice")
    assert brain is not None
    held = service.store.memory(brain.uid, made[0])
    assert isinstance(held, MemoryRevision)
    legacy = sorted(f"mem_{i:026d}" for i in range(30))
    from dataclasses import replace

    service.store.insert_memory_revision(
        replace(held, version=held.version + 1, extra={**held.extra, "conflicts_with": legacy}), held.fingerprint
    )
    assert alice.get(f"/brains/alice/memories/{made[0]}").body["conflicts_with"] == legacy[-16:]


def test_a_bare_denial_withdraws_the_corrected_memory(alice: Api, service: Service) -> None:
    wrong = say(alice, service, "I work at Acme.", "2024-01-01T10:00:00Z")["memory_ids"][0]
    alice.remember("alice", {"kind": "correction", "corrects": wrong, "text": "No, that's wrong."})
    assert service.wait_idle()
    old = alice.get(f"/brains/alice/memories/{wrong}").body
    assert old["status"] == "superseded"
    denial = alice.get(f"/brains/alice/memories/{old['superseded_by']}").body
    assert denial["statement"].startswith("Not so:") and "Acme" in denial["statement"]
    assert not any(
        "Acme" in m["statement"] and m["status"] == "active" and not m["statement"].startswith("Not so")
        for m in memories(alice)
    )


def test_disagreeing_sources_are_both_kept_as_conflicts(alice: Api, service: Service) -> None:
    for city, source in (("Lisbon", "crm"), ("Madrid", "hr")):
        alice.remember(
            "alice",
            {"kind": "fact", "subject": "Alice", "predicate": "lives in", "value": city},
            source={"name": source},
            occurred_at="2024-01-01T00:00:00Z",
        )
    assert service.wait_idle()
    lisbon, madrid = only(memories(alice), "Lisbon"), only(memories(alice), "Madrid")
    assert lisbon["status"] == madrid["status"] == "active"
    assert madrid["id"] in lisbon["conflicts_with"] and lisbon["id"] in madrid["conflicts_with"]
    census = alice.get("/brains/alice/census").body
    assert census["counts"]["conflicts"] == 2


def test_what_she_says_of_someones_wife_is_no_job_of_his(alice: Api, service: Service) -> None:
    # was "Tom is a teacher.": Tom's two jobs both active, in conflict
    say(alice, service, "Tom is a software engineer.", "2023-05-01T10:00:00Z")
    say(alice, service, "I met Tom's wife at the party. She's a teacher.", "2023-05-02T10:00:00Z")
    everything = memories(alice)
    engineer, teacher = only(everything, "software engineer"), only(everything, "teacher")
    assert engineer["subject"] == "Tom" and engineer["status"] == "active" and not engineer["conflicts_with"]
    assert teacher["subject"] == "Tom's wife" and not teacher["conflicts_with"]


def test_mom_is_each_speakers_own_mom(alice: Api, service: Service) -> None:
    # were three unlinked Memories about one "Mom": Alice's mom's home never changed
    say(alice, service, "My mom lives in Ohio.", "2023-05-01T10:00:00Z")
    say(alice, service, "Mom is moving to Florida!", "2023-05-02T10:00:00Z", speaker="Bob")
    say(alice, service, "Mom just moved to Arizona.", "2023-05-03T10:00:00Z")
    everything = memories(alice)
    ohio, arizona = only(everything, "Ohio"), only(everything, "Arizona")
    assert ohio["subject"] == arizona["subject"] == "Alice's mom"
    assert ohio["valid_to"] is not None and ohio["valid_to"].startswith("2023-05-03")
    assert arizona["valid_to"] is None and not arizona["conflicts_with"]
    assert only(everything, "Florida")["subject"] == "Bob's mom"


def test_the_same_assertion_from_several_records_is_one_memory(alice: Api, service: Service) -> None:
    a = say(alice, service, "I work at Acme.", "2024-01-01T10:00:00Z")
    b = say(alice, service, "I work at Acme.", "2024-02-01T10:00:00Z")
    assert a["memory_ids"] == b["memory_ids"]
    memory = alice.get(f"/brains/alice/memories/{a['memory_ids'][0]}").body
    assert {c["record_id"] for c in memory["citations"]} == {a["id"], b["id"]}
    assert alice.get("/brains/alice/census").body["counts"]["duplicates"] == 1


class UnreadableWhenBroken(RuleExtractor):
    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if "BROKEN" in source.text:
            raise ValueError("cannot read this")
        return super().extract(source, self_name=self_name)


def test_a_census_counts_failed_and_low_trust_records_and_names_the_first_five(engine: Engine) -> None:
    service = engine.open(UnreadableWhenBroken())
    api = Api(create_app(service))
    api.brain("feed")
    posted = []
    for n in range(13):
        text = ("BROKEN: " if n % 2 == 0 else "") + f"I moved to a town called Place{n}."
        source = {"name": "crawler", "trust": "low"} if n % 3 == 0 else {"name": "crm", "trust": "high"}
        posted.append(api.remember("feed", text, source=source).body["id"])
    assert service.wait_idle()
    forgotten = posted.pop(0)  # failed, and from the low-trust source
    assert api.delete(f"/brains/feed/records/{forgotten}").status == 200
    census = api.get("/brains/feed/census").body
    failed = [rid for n, rid in enumerate(posted, start=1) if n % 2 == 0]
    low_trust = [rid for n, rid in enumerate(posted, start=1) if n % 3 == 0]
    counts = census["counts"]
    assert (counts["records"], counts["records_failed"], counts["low_trust_records"]) == (12, 6, 4)
    noise = {item["kind"]: item for item in census["noise"]}
    assert noise["failed_records"] == {"kind": "failed_records", "count": 6, "examples": failed[:5]}
    assert noise["low_trust_sources"] == {"kind": "low_trust_sources", "count": 4, "examples": low_trust}


def test_forgetting_shared_evidence_rederives_and_forgetting_all_deletes(
    alice: Api, service: Service
) -> None:
    a = say(alice, service, "I work at Acme.", "2024-01-01T10:00:00Z")
    b = say(alice, service, "I work at Acme.", "2024-02-01T10:00:00Z")
    solo = say(alice, service, "I love jazz.", "2024-02-02T10:00:00Z")
    shared = a["memory_ids"][0]

    service.derivation.stop()  # hold re-derivation so the pending state is observable
    receipt = alice.delete(f"/brains/alice/records/{a['id']}").body
    assert receipt["rederiving"]["memories"] == 1 and receipt["deleted"]["memories"] == 0
    assert_error(alice.get(f"/brains/alice/memories/{shared}"), 404, "memory_pending_rederivation")
    assert shared not in [m["id"] for m in memories(alice)]

    service.start()  # resumes the pending re-derivation from the store
    assert service.wait_idle()
    rederived = alice.get(f"/brains/alice/memories/{shared}").body
    assert [c["record_id"] for c in rederived["citations"]] == [b["id"]]

    receipt = alice.delete(f"/brains/alice/records/{b['id']}").body
    assert receipt["deleted"]["memories"] == 1 and receipt["rederiving"]["memories"] == 0
    assert_error(alice.get(f"/brains/alice/memories/{shared}"), 404, "memory_not_found")
    alice.delete(f"/brains/alice/records/{solo['id']}")
    assert_error(alice.get(f"/brains/alice/memories/{solo['memory_ids'][0]}"), 404, "memory_not_found")
    assert memories(alice) == []


def test_a_record_saying_what_awaits_rederivation_supports_it_instead_of_making_another(
    alice: Api, service: Service
) -> None:
    a = say(alice, service, "I work at Acme.", "2024-01-01T10:00:00Z")
    b = say(alice, service, "I work at Acme.", "2024-02-01T10:00:00Z")
    shared = a["memory_ids"][0]
    service.derivation.stop()  # re-derivation held: the Memory stays pending while another Record says it
    alice.delete(f"/brains/alice/records/{a['id']}")
    c = alice.remember("alice", {"kind": "message", "role": "user", "text": "I work at Acme."}).body
    service.start()
    assert service.wait_idle()
    assert alice.get(f"/brains/alice/records/{c['id']}").body["memory_ids"] == [shared]
    assert [m["id"] for m in memories(alice)] == [shared]
    rederived = alice.get(f"/brains/alice/memories/{shared}").body
    assert [x["record_id"] for x in rederived["citations"]] == [b["id"], c["id"]]


@pytest.mark.parametrize("view", [{}, {"as_of": "2025-01-01T00:00:00Z"}, {"owner": "Alice", "subject": "Alice"}])
def test_delta_sync_replays_into_the_full_read(alice: Api, service: Service, view: dict[str, str]) -> None:
    """With as_of, the move ends the Lisbon Memory before it: the delta read that brings its new
    revision lists it in deleted, or a mirror would keep a copy the full read no longer has."""
    replica: dict[str, dict[str, Any]] = {}
    watermark = alice.get("/brains/alice/memories", params={"limit": "1", **view}).body["watermark"]

    def sync() -> None:
        nonlocal watermark
        while True:
            page = alice.get(
                "/brains/alice/memories", params={"since_watermark": watermark, "limit": "2", **view}
            ).body
            assert page["next_cursor"] is None
            for memory in page["data"]:
                replica[memory["id"]] = memory
            for memory_id in page["deleted"]:
                replica.pop(memory_id, None)
            watermark = page["watermark"]
            if not page["has_more"]:
                break
        full = alice.get("/brains/alice/memories", params={"limit": "500", **view}).body["data"]
        assert replica == {m["id"]: m for m in full}
        assert full, "the scenario must leave something to compare"

    first = say(alice, service, "I live in Lisbon. I work at Acme. I love jazz.", "2023-01-01T10:00:00Z")
    sync()
    say(alice, service, "I moved to Porto last March.", "2024-05-08T10:00:00Z")
    alice.remember(
        "alice", {"kind": "correction", "corrects": first["memory_ids"][1], "text": "I work at Globex."}
    )
    assert service.wait_idle()
    sync()
    alice.delete(f"/brains/alice/records/{first['id']}")
    assert service.wait_idle()
    sync()


def test_full_reads_page_by_id(alice: Api, service: Service) -> None:
    say(
        alice,
        service,
        "I love jazz. I love tea. I love chess. I love maps. I love rain.",
        "2024-01-01T10:00:00Z",
    )
    seen, cursor = [], None
    while True:
        params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = alice.get("/brains/alice/memories", params=params).body
        seen.extend(m["id"] for m in page["data"])
        cursor = page["next_cursor"]
        if not page["has_more"]:
            assert cursor is None
            break
    assert seen == sorted(seen) and len(seen) == len(set(seen)) >= 5


@pytest.mark.parametrize("change", ["correct", "forget", "add"])
def test_a_mirror_built_from_a_full_read_hears_of_changes_made_during_the_read(
    alice: Api, service: Service, change: str
) -> None:
    """A client reads every page of a full read, then reads deltas from the watermark it was given:
    its mirror is what a full read returns. A Memory on a page already read that is corrected or erased
    during the walk was behind both the cursor and each page's own, newer watermark, and the mirror
    kept its old copy (for a forgotten Record, the erased words)."""
    lives = say(alice, service, "I live in Dallas.", "2020-01-01T10:00:00Z")
    say(alice, service, "I work at Acme.", "2020-01-02T10:00:00Z")
    say(alice, service, "I love jazz.", "2020-01-03T10:00:00Z")
    mirror: dict[str, dict[str, Any]] = {}
    first = alice.get("/brains/alice/memories", params={"limit": "1"}).body
    assert [m["id"] for m in first["data"]] == lives["memory_ids"] and first["has_more"]
    mirror.update((m["id"], m) for m in first["data"])
    if change == "correct":
        alice.remember("alice", {"kind": "correction", "corrects": lives["memory_ids"][0], "text": "I live in Denver."})
    elif change == "forget":
        alice.delete(f"/brains/alice/records/{lives['id']}")
    else:
        say(alice, service, "I love tea.", "2020-01-04T10:00:00Z")
    assert service.wait_idle()
    page, watermarks = first, [first["watermark"]]
    while page["has_more"]:
        page = alice.get("/brains/alice/memories", params={"limit": "1", "cursor": page["next_cursor"]}).body
        mirror.update((m["id"], m) for m in page["data"])
        watermarks.append(page["watermark"])
    watermark, deleted = page["watermark"], []
    while True:
        delta = alice.get("/brains/alice/memories", params={"since_watermark": watermark, "limit": "1"}).body
        mirror.update((m["id"], m) for m in delta["data"])
        for memory_id in delta["deleted"]:
            mirror.pop(memory_id, None)
        deleted += delta["deleted"]
        watermark = delta["watermark"]
        if not delta["has_more"]:
            break
    full = alice.get("/brains/alice/memories", params={"limit": "500"}).body["data"]
    assert mirror == {m["id"]: m for m in full}
    if change == "forget":
        assert deleted == lives["memory_ids"]
        assert all("Dallas" not in m["statement"] for m in mirror.values())
    assert set(watermarks) == {first["watermark"]}, "every page of one full read returns its first page's watermark"


def test_a_full_read_never_serves_what_was_erased_after_its_first_page(alice: Api, service: Service) -> None:
    say(alice, service, "I live in Dallas.", "2020-01-01T10:00:00Z")
    works = say(alice, service, "I work at Acme.", "2020-01-02T10:00:00Z")
    first = alice.get("/brains/alice/memories", params={"limit": "1"}).body
    alice.delete(f"/brains/alice/records/{works['id']}")
    assert service.wait_idle()
    rest = alice.get("/brains/alice/memories", params={"limit": "500", "cursor": first["next_cursor"]}).body
    assert rest["data"] == [] and not rest["has_more"] and rest["watermark"] == first["watermark"]
    delta = alice.get("/brains/alice/memories", params={"since_watermark": rest["watermark"]}).body
    assert delta["deleted"] == works["memory_ids"]


def test_a_full_read_cursor_is_bound_to_its_brain_and_cannot_be_altered(alice: Api, service: Service) -> None:
    import base64
    import json

    say(alice, service, "I live in Dallas. I work at Acme.", "2020-01-01T10:00:00Z")
    alice.brain("bob", self_name="Bob")
    say(alice, service, "I live in Oslo. I work at Globex.", "2020-01-01T10:00:00Z", brain="bob")
    cursor = alice.get("/brains/alice/memories", params={"limit": "1"}).body["next_cursor"]
    theirs = alice.get("/brains/bob/memories", params={"limit": "1"}).body["next_cursor"]
    document = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert set(document) == {"after", "watermark"}
    their_watermark = json.loads(base64.urlsafe_b64decode(theirs + "=" * (-len(theirs) % 4)))["watermark"]
    mine = document["watermark"]
    altered = [
        {**document, "watermark": their_watermark},
        {**document, "watermark": mine[:-2] + ("AA" if not mine.endswith("AA") else "BB")},
        {**document, "watermark": "wm_garbage"},
        {**document, "watermark": 5},
        {**document, "watermark": None},
        {**document, "watermark": ""},
    ]
    for bad in altered:
        forged = base64.urlsafe_b64encode(json.dumps(bad).encode()).decode().rstrip("=")
        err = assert_error(alice.get("/brains/alice/memories", params={"cursor": forged}), 400, "invalid_request_body")
        assert err["message"].startswith("cursor: ")
    err = assert_error(alice.get("/brains/alice/memories", params={"cursor": theirs}), 400, "invalid_request_body")
    assert err["message"].startswith("cursor: ")
    assert alice.get("/brains/alice/memories", params={"cursor": cursor}).status == 200


def test_watermark_and_cursor_rules(alice: Api, api: Api) -> None:
    api.brain("other")
    theirs = api.get("/brains/other/memories").body["watermark"]
    mine = alice.get("/brains/alice/memories").body["watermark"]
    err = assert_error(
        alice.get("/brains/alice/memories", params={"since_watermark": mine, "cursor": "abc"}),
        400,
        "conflicting_parameters",
    )
    assert "since_watermark" in err["message"] and "cursor" in err["message"]
    for bad in (theirs, "wm_garbage", mine[:-2] + ("AA" if not mine.endswith("AA") else "BB"), "hello"):
        assert_error(
            alice.get("/brains/alice/memories", params={"since_watermark": bad}), 400, "invalid_watermark"
        )
    assert_error(alice.get("/brains/alice/memories", params={"cursor": "nope"}), 400, "invalid_request_body")
    assert_error(alice.get("/brains/alice/memories", params={"as_of": "May 5"}), 400, "invalid_request_body")


def test_a_memory_without_lineage_is_never_served(alice: Api, service: Service) -> None:
    record = say(alice, service, "I love jazz.", "2024-01-01T10:00:00Z")
    memory_id = record["memory_ids"][0]
    brain = service.store.get_brain("test:acme", "alice")
    assert brain is not None
    held = service.store.memory(brain.uid, memory_id)
    assert isinstance(held, MemoryRevision)
    from dataclasses import replace

    service.store.insert_memory_revision(replace(held, version=held.version + 1, citations=()), "fp")
    assert_error(alice.get(f"/brains/alice/memories/{memory_id}"), 500, "memory_without_lineage")


def test_a_page_that_as_of_filters_reads_a_bounded_share_of_the_brain(
    alice: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page reads at most SCAN_MEMORIES Memories whatever as_of leaves out, and answers a short
    page with a cursor past them; following the cursors still gives every eligible Memory once."""
    from brainstore.service import memories as reads

    say(alice, service, "I love jazz. I love tea. I love chess. I love maps. I love rain.", "2020-01-01T10:00:00Z")
    say(alice, service, "I love opera. I love soup. I love golf. I love kites. I love snow.", "2024-01-01T10:00:00Z")
    everything = memories(alice, limit="500")
    eligible = [m["id"] for m in memories(alice, limit="500", as_of="2022-01-01T00:00:00Z")]
    assert 5 <= len(eligible) < len(everything) >= 10
    monkeypatch.setattr(reads, "SCAN_MEMORIES", 3)
    read: list[int] = []
    list_memories = service.store.list_memories

    def counted(*args: Any, **kwargs: Any) -> list[MemoryRevision]:
        page = list_memories(*args, **kwargs)
        read.append(len(page))
        return page

    monkeypatch.setattr(service.store, "list_memories", counted)
    for as_of, expected in (("0001-01-01T00:00:00Z", []), ("2022-01-01T00:00:00Z", eligible)):
        seen, cursor, pages = [], None, 0
        while True:
            read.clear()
            params = {"limit": "1", "as_of": as_of, **({"cursor": cursor} if cursor else {})}
            page = alice.get("/brains/alice/memories", params=params).body
            assert sum(read) <= 3 and len(page["data"]) <= 1
            seen.extend(m["id"] for m in page["data"])
            cursor, pages = page["next_cursor"], pages + 1
            if not page["has_more"]:
                assert cursor is None
                break
            assert cursor is not None
        assert seen == expected
        assert pages >= len(everything) // 3


def test_a_value_meant_goes_with_the_words_of_the_forgotten_record_it_restates(alice: Api, service: Service) -> None:
    # "Sorry, I meant Memorial" said the corrected Memory's statement again with Memorial: after the Record
    # it rested on was forgotten, "Alice is a cardiac nurse at Memorial." stayed, citing only the
    # correction, with the forgotten Record's words in it
    first = say(alice, service, "I'm a cardiac nurse at Mercy Hospital.", "2024-05-08T10:00:00Z")
    say(alice, service, "Sorry, I meant Memorial, not Mercy Hospital.", "2024-05-08T10:01:00Z")
    assert only(memories(alice), "at Memorial")["status"] == "active"
    assert alice.delete(f"/brains/alice/records/{first['id']}").status == 200
    assert service.wait_idle()
    assert not any("cardiac" in m["statement"] for m in memories(alice))


def test_a_value_meant_takes_the_words_its_memory_is_re_derived_in(alice: Api, service: Service) -> None:
    # the Memory it restates, re-derived from another Record that says it, gives it that Record's words
    first = say(alice, service, "I'm a cardiac nurse at Mercy Hospital.", "2024-05-08T10:00:00Z")
    say(alice, service, "I work as a nurse at Mercy Hospital.", "2024-05-08T10:00:30Z")
    say(alice, service, "Sorry, I meant Memorial, not Mercy Hospital.", "2024-05-08T10:01:00Z")
    assert alice.delete(f"/brains/alice/records/{first['id']}").status == 200
    assert service.wait_idle()
    statements = [m["statement"] for m in memories(alice)]
    assert not any("cardiac" in s for s in statements)
    assert only(memories(alice), "at Memorial")["statement"] == "Alice works as a nurse at Memorial."


def test_a_profile_builds_the_views_of_the_lines_it_serves_only(
    alice: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile of limit 1 on a Brain whose self owns thousands of Memories built every one's view
    (0.7 s of the GIL for 12,000) and served one: a key repeating it held the GIL every other tenant's
    requests need. Only the lines served are viewed (and one more, which says has_more)."""
    text = " ".join(f"I like the color number {n} very much." for n in range(60))
    say(alice, service, text, "2024-05-08T10:00:00Z")
    everything = alice.get("/brains/alice/profile", params={"limit": "100"}).body
    assert len(everything["lines"]) == 60 and not everything["has_more"]
    viewed: list[str] = []
    real = Visibility.view
    monkeypatch.setattr(Visibility, "view", lambda self, memory, *a: viewed.append(memory.memory_id) or real(self, memory, *a))
    first = alice.get("/brains/alice/profile", params={"limit": "2"}).body
    assert first["lines"] == everything["lines"][:2] and first["has_more"]
    assert len(viewed) == 3
