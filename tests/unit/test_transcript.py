"""A document that is a transcript, read as its speakers' turns (brainstore.derive.transcript), by
derivation (who said what) and by chunking (who says each piece of evidence)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brainstore.derive import RuleExtractor, SourceText, source_text, transcript, transcript_parts
from brainstore.derive.transcript import transcript_turns
from brainstore.retrieval.chunking import chunk_record, leads

NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
CALL = (
    "Team sync, 8 May\n"
    "\n"
    "Caroline: I adopted a beagle last week.\n"
    "Melanie: That is great! I painted a lake sunrise.\n"
    "Caroline: My sister moved to Porto.\n"
    "  She loves it there.\n"
    "Assistant: I live in the cloud.\n"
)


def document(text: str) -> SourceText:
    return source_text({"kind": "document", "text": text}, self_name=None, occurred_at=NOW)


def test_a_transcript_s_turns_are_its_speakers_words_continuation_lines_included() -> None:
    turns = transcript_turns(CALL)
    assert turns is not None
    assert [(t.speaker, CALL[t.start : t.end]) for t in turns] == [
        ("Caroline", "I adopted a beagle last week."),
        ("Melanie", "That is great! I painted a lake sunrise."),
        ("Caroline", "My sister moved to Porto.\n  She loves it there."),
        ("Assistant", "I live in the cloud."),
    ]
    stamped = "[10:32] Ann Lee: hi there\n10:33 PM - Bob: hey\n[10:34] Ann Lee: ok then"
    assert [t.speaker for t in transcript_turns(stamped) or []] == ["Ann Lee", "Bob", "Ann Lee"]
    handles = "user_81: I adopted a beagle.\nuser_92: Hey Audrey!\nuser_81: Thanks."
    assert [t.speaker for t in transcript_turns(handles) or []] == ["user_81", "user_92", "user_81"]
    diarized = "Speaker 1: So the launch moved.\nSpeaker 2: To when?\nSpeaker 1: June: the 12th."
    assert [diarized[t.start : t.end] for t in transcript_turns(diarized) or []][-1] == "June: the 12th."


def test_a_document_with_a_few_labelled_lines_is_no_transcript() -> None:
    assert (
        transcript_turns("Title: Q3 plan\nAuthor: Ann\nDate: 8 May\n\nWe ship in June.") is None
    )  # each once
    assert (
        transcript_turns("Note: read this.\nSome prose.\nMore prose here.\nMore.\nNote: again.\nAnn: hi")
        is None
    )
    assert transcript_turns("Ann: one.\nAnn: two.\nAnn: three.") is None  # nobody takes turns with Ann
    assert transcript_turns("Ann: hi.\nBob: hey.") is None  # too short to tell
    assert transcript_turns("Note: I called the client.\nTodo: I need to send the contract.") is None
    assert transcript_turns("Me: one.\nMe: two.") is None  # the author alone takes no turns
    assert transcript_parts(SourceText(CALL, "message", "assistant", "assistant", NOW)) is None  # nobody's own


def test_two_turns_make_a_transcript_when_one_is_the_author_s_own() -> None:
    exchange = "Ann: I got the job!\nDana: Congrats! I moved to Oslo."
    assert transcript_turns(exchange) is None
    assert [t.speaker for t in transcript_turns(exchange, sender="ann") or []] == ["Ann", "Dana"]
    assert [t.speaker for t in transcript_turns("Me: why??\nTom: I quit.") or []] == ["Me", "Tom"]


def test_a_question_put_to_someone_and_answered_makes_two_turns_a_transcript() -> None:
    interview = "Interviewer: Where did you grow up?\nAna: In Porto. I moved to London in 2019."
    assert [t.speaker for t in transcript_turns(interview) or []] == ["Interviewer", "Ana"]
    # before: "The author moved to London in 2019."
    assert statements(document(interview)) == {("Ana moved to London in 2019.", "Ana")}
    # a field's value that asks something, or a question in a text of more than turns, is no exchange
    assert transcript_turns("Title: Are you ready for Q3?\nAuthor: Ann\n\nWe ship in June.") is None
    assert transcript_turns("Subject: Where is the party?\nFrom: Ann") is None  # put to no one
    assert transcript_turns("Ann: Are you there?\nAnn: Hello?") is None  # nobody answers


def test_the_q_and_a_of_a_q_and_a_are_roles_not_people_named_q_and_a() -> None:
    qa = "Q: Where do you live?\nA: I live in Denver.\nQ: And where do you work?\nA: I work at Google."
    # before: "A lives in Denver.", "A works at Google.", owned by a person called "A"
    assert statements(document(qa)) == {("The speaker lives in Denver.", None), ("The speaker works at Google.", None)}


def statements(source: SourceText) -> set[tuple[str, str | None]]:
    return {(a.statement, a.owner) for a in RuleExtractor().extract(source, self_name="Alice")}


def test_a_transcript_pasted_in_a_message_is_its_speakers_words_not_the_sender_s() -> None:
    pasted = "Alice: I got the job at Stripe!\nDana: Congrats! I moved to Oslo last month."
    found = statements(source_text({"kind": "message", "text": pasted}, self_name="Alice", occurred_at=NOW))
    # before: "Alice moved to Oslo in April 2023.", owned by Alice
    assert found == {
        ("Alice got the job at Stripe.", "Alice"),
        ("Dana moved to Oslo in April 2023.", "Dana"),
    }
    forwarded = "lol my brother just texted me this:\nTom: I quit my job today\nMe: what?? why"
    found = statements(source_text({"kind": "message", "text": forwarded}, self_name="Alice", occurred_at=NOW))
    assert ("Tom quit Tom's job on 8 May 2023.", "Tom") in found
    assert not any("Alice quit" in statement for statement, _ in found)


def test_me_in_a_pasted_exchange_is_its_author_not_a_person_called_me() -> None:
    exchange = "Me: I got the job at Stripe!\nDana: Congrats! I moved to Oslo last month."
    assert statements(document(exchange)) == {
        ("The author got the job at Stripe.", None),  # before: "Me got the job at Stripe.", owned by "Me"
        ("Dana moved to Oslo in April 2023.", "Dana"),
    }
    parts = transcript_parts(source_text({"kind": "message", "text": exchange}, self_name="Alice", occurred_at=NOW))
    assert [(p.kind, p.speaker) for _, p in parts or []] == [("message", "Alice"), ("message", "Dana")]


def test_a_turn_of_the_self_that_someone_else_pastes_is_not_the_self_s_own() -> None:
    pasted = "Me: hi\nAlice: I moved to Denver\nMe: ok"
    by_bob = source_text({"kind": "message", "text": pasted, "speaker": "Bob"}, self_name="Alice", occurred_at=NOW)
    # before: owned by Alice, as if she had said it: ownership is a first-person statement by the self
    assert statements(by_bob) == {("Alice moved to Denver.", None)}
    by_alice = source_text({"kind": "message", "text": pasted}, self_name="Alice", occurred_at=NOW)
    assert statements(by_alice) == {("Alice moved to Denver.", "Alice")}
    exchange = "Dana: I moved to Oslo\nAlice: I live in Paris\nDana: nice"
    assert statements(document(exchange)) == {("Dana moved to Oslo.", "Dana"), ("Alice lives in Paris.", None)}


@pytest.mark.parametrize("label", ["Her", "Him", "Them", "You"])
def test_a_turn_opened_by_a_pronoun_is_an_unnamed_person_s(label: str) -> None:
    pasted = f"Me: so where are you now?\n{label}: I work at Apple in Denver\nMe: nice"
    found = statements(source_text({"kind": "message", "text": pasted}, self_name="Alice", occurred_at=NOW))
    # before: "Her works at Apple in Denver.", owned by a person called "Her"
    assert found == {("The speaker works at Apple in Denver.", None)}


@pytest.mark.parametrize(("label", "subject"), [("Mom", "Alice's mom"), ("My sister", "Alice's sister")])
def test_a_turn_opened_by_a_relation_is_its_paster_s_relation(label: str, subject: str) -> None:
    pasted = f"Me: hey\n{label}: I moved to Ohio\nMe: since when?"
    found = statements(source_text({"kind": "message", "text": pasted}, self_name="Alice", occurred_at=NOW))
    # before: "Mom moved to Ohio.", "My sister moved to Ohio.": anyone's, said as a name
    assert found == {(f"{subject} moved to Ohio.", subject)}


def test_one_or_two_turns_stamped_as_a_chat_log_stamps_them_are_a_transcript() -> None:
    """A stamp in brackets or a dated one is no field's, heading's or schedule's: "Bob (10:02 AM): I moved
    to Denver last month." pasted alone was Alice's move, and so was Carol's Austin below."""
    one = "Bob (10:02 AM): I moved to Denver last month."
    found = statements(source_text({"kind": "message", "text": one}, self_name="Alice", occurred_at=NOW))
    assert found == {("Bob moved to Denver in April 2023.", "Bob")}
    for two in (
        "[10:02] Bob: I moved to Denver.\n[10:03] Carol: I live in Austin.",
        "12/03/2022, 10:02 - Bob: I moved to Denver.\n12/03/2022, 10:03 - Carol: I live in Austin.",
        "Bob [10:02]: I moved to Denver.\nCarol (3/1/22, 10:03 PM): I live in Austin.",
    ):
        assert [t.speaker for t in transcript_turns(two) or []] == ["Bob", "Carol"], two
        found = statements(source_text({"kind": "message", "text": two}, self_name="Alice", occurred_at=NOW))
        assert found == {("Bob moved to Denver.", "Bob"), ("Carol lives in Austin.", "Carol")}, two
    # a time alone before a name may be a schedule's line; most lines must still open a turn
    assert transcript_turns("10:30 Standup: I present the roadmap.") is None
    assert transcript_turns("[10:02] Bob: hi\nSome prose.\nMore prose.") is None


SLACK = (
    "Ann Smith  10:32 AM\n"
    "I moved to Denver last month.\n"
    "Note: I hate the snow.\n"
    "Bob Jones  10:33 AM\n"
    "Congrats! I just started at Stripe.\n"
    "Ann Smith  10:34 AM\n"
    "Nice!"
)


def test_a_chat_app_s_copy_with_who_and_when_on_a_line_of_its_own_is_a_transcript() -> None:
    """Slack and Discord put the speaker and the time on a heading line above the words said: pasted, every
    turn was the sender's, so Bob's new job was Alice's."""
    turns = transcript_turns(SLACK)
    assert [(t.speaker, SLACK[t.start : t.end], t.stamp) for t in turns or []] == [
        ("Ann Smith", "I moved to Denver last month.\nNote: I hate the snow.", "10:32 AM"),  # "Note:" is Ann's
        ("Bob Jones", "Congrats! I just started at Stripe.", "10:33 AM"),
        ("Ann Smith", "Nice!", "10:34 AM"),
    ]
    found = statements(source_text({"kind": "message", "text": SLACK}, self_name="Alice", occurred_at=NOW))
    # before: each of them Alice's
    assert found == {
        ("Ann Smith moved to Denver in April 2023.", "Ann Smith"),
        ("Ann Smith hates the snow.", "Ann Smith"),
        ("Bob Jones just started at Stripe.", "Bob Jones"),
    }
    discord = "Ann — Today at 10:32 AM\nI moved to Denver.\nBob — 03/01/2022 10:33 AM\nI live in Austin.\nAnn — Yesterday at 9:15 PM\nok"
    assert [(t.speaker, t.stamp) for t in transcript_turns(discord) or []] == [
        ("Ann", "Today at 10:32 AM"),
        ("Bob", "03/01/2022 10:33 AM"),
        ("Ann", "Yesterday at 9:15 PM"),
    ]
    # one heading over prose, or headings of one speaker, make no transcript
    assert transcript_turns("Standup 9:00 AM\nI present the roadmap.\nThen questions.") is None
    assert transcript_turns("Ann 9:00\nI moved.\nAnn 9:05\nI quit.") is None


def test_an_irc_log_is_a_transcript_its_nicks_the_speakers() -> None:
    log = "[10:32] <ann> I moved to Denver last month.\n[10:33] <@bob> congrats! I just started at Stripe.\n"
    assert [(t.speaker, t.stamp) for t in transcript_turns(log) or []] == [("ann", "10:32"), ("bob", "10:33")]
    unstamped = "<ann> I moved to Denver.\n<bob> congrats! I just started at Stripe.\n<ann> thanks"
    found = statements(source_text({"kind": "message", "text": unstamped}, self_name="Alice", occurred_at=NOW))
    assert found == {("Ann moved to Denver.", "ann"), ("Bob just started at Stripe.", "bob")}  # before: Alice's
    assert transcript_turns("<b>Hello</b> world.\nSome prose.") is None  # markup is no nick


EXPORT = (
    "[3/1/22, 10:32:01 AM] Bob: I moved to Berlin last week.\n"
    "[3/1/22, 10:33:11 AM] Carol: I started at Google yesterday.\n"
    "[3/1/22, 10:34:00 AM] Bob: Nice!"
)


def test_a_turn_of_a_chat_export_is_dated_by_its_own_stamp() -> None:
    found = statements(source_text({"kind": "message", "text": EXPORT}, self_name="Alice", occurred_at=NOW))
    # before: "in the week of 1 May 2023" and "on 7 May 2023", the Record's time
    assert found == {
        ("Bob moved to Berlin in the week of 21 February 2022.", "Bob"),
        ("Carol started at Google on 28 February 2022.", "Carol"),
    }
    parts = transcript_parts(document(EXPORT)) or []
    assert [p.occurred_at.minute for _, p in parts] == [32, 33, 34]
    drafts = chunk_record("r", document(EXPORT), source_name=None, trust="normal", visibility="shareable")
    assert drafts[0].index_text == "Bob (1 March 2022): I moved to Berlin last week."
    assert drafts[0].occurred_at == datetime(2022, 3, 1, 10, 32, 1, tzinfo=UTC)
    # a title above the turns keeps the Record's time
    titled = chunk_record("r", document("Chat with Bob\n" + EXPORT), source_name=None, trust="normal", visibility="shareable")
    assert [d.occurred_at.year for d in titled] == [2023, 2022, 2022, 2022]
    log = "2022-03-01 10:32:01 INFO: I moved.\n2022-03-01 10:32:02 WARN: Disk.\n2022-03-01 10:32:03 INFO: Ok."
    assert transcript_turns(log) is None  # a day and a time with no dash before the name: a log's line
    android = EXPORT.replace("[", "").replace("] ", " - ")  # "3/1/22, 10:32:01 AM - Bob: ..."
    assert [(p.speaker, p.occurred_at.day) for _, p in transcript_parts(document(android)) or []] == [
        ("Bob", 1),
        ("Carol", 1),
        ("Bob", 1),
    ]


@pytest.mark.parametrize(
    ("stamps", "day"),
    [
        (("3/1/22, 10:32", "4/1/22, 9:00"), datetime(2022, 3, 1, 10, 32, tzinfo=UTC)),  # the month first
        (("3/1/22, 10:32", "13/1/22, 9:00"), datetime(2022, 1, 3, 10, 32, tzinfo=UTC)),  # a day above 12
        (("3/1/22 10:32 PM", "4/1/22"), datetime(2022, 3, 1, 22, 32, tzinfo=UTC)),
        (("12/1/22 12:05 AM", "4/1/22"), datetime(2022, 12, 1, 0, 5, tzinfo=UTC)),
        (("2022-03-01 10:32", "2022-03-02 10:32"), datetime(2022, 3, 1, 10, 32, tzinfo=UTC)),
        (("03.01.22, 10:32:05", "04.01.22, 9:00"), datetime(2022, 1, 3, 10, 32, 5, tzinfo=UTC)),  # dots: day first
        (("3/13/22", "13/1/22"), NOW),  # no one order reads both
        (("10:32", "10:33"), NOW),  # no day
        (("31/2/22", "1/2/22"), NOW),  # no such day
        (("6/1/23", "6/2/23"), NOW),  # after the Record that holds it
        (("5/8/23, 11:00 PM", "5/8/23"), NOW),  # on its day but later than the Record: the Record's
    ],
)
def test_the_stamps_of_an_export_decide_together_which_number_is_the_day(
    stamps: tuple[str, str], day: datetime
) -> None:
    text = f"[{stamps[0]}] Ann: I moved.\n[{stamps[1]}] Bob: Nice.\n[{stamps[1]}] Ann: Thanks."
    parts = transcript_parts(document(text)) or []
    assert parts[0][1].occurred_at == day


def test_a_document_of_more_turns_than_a_record_may_chunk_is_read_as_prose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transcript, "MAX_TURNS", 10)
    lines = "\n".join(f"{'Ann' if n % 2 else 'Bob'}: x" for n in range(11))
    assert transcript_turns(lines) is None
    assert (
        len(chunk_record("r", document(lines), source_name=None, trust="normal", visibility="shareable")) == 1
    )
    assert len(transcript_turns(lines.rsplit("\n", 1)[0]) or []) == 10


def test_each_turn_of_a_transcript_is_attributed_to_its_speaker() -> None:
    src = document(CALL)
    found = {
        (a.statement, a.owner, src.text[a.span[0] : a.span[1]])
        for a in RuleExtractor().extract(src, self_name=None)
    }
    assert ("Melanie painted a lake sunrise.", "Melanie", "I painted a lake sunrise") in found
    assert any(owner == "Caroline" and quote.startswith("I adopted a beagle") for _, owner, quote in found)
    assert not any(
        "author" in statement.lower() for statement, _, _ in found
    )  # before: "The author painted ..."
    assert not any("cloud" in statement for statement, _, _ in found)  # an assistant's words are no one's own


def test_a_transcript_is_chunked_as_its_speakers_messages() -> None:
    src = document(CALL)
    drafts = chunk_record("r1", src, source_name="notes", trust="normal", visibility="shareable")
    assert all(CALL[d.start : d.end] == d.text for d in drafts)
    assert [(d.speaker, d.text) for d in drafts] == [
        (None, "Team sync, 8 May"),
        ("Caroline", "I adopted a beagle last week."),
        ("Melanie", "That is great! I painted a lake sunrise."),
        ("Caroline", "My sister moved to Porto.\n  She loves it there."),
        ("Assistant", "I live in the cloud."),
    ]
    assert drafts[2].index_text == "Melanie (8 May 2023): That is great! I painted a lake sunrise."
    # between two turns lies the next speaker's name: no lead joins them into one quote
    assert leads(CALL, drafts) == ["", None, None, None, None]


_NAMES = st.sampled_from(["Ann", "Bob", "Dr. Lee", "user_81"])
_SAID = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@given(st.lists(st.tuples(_NAMES, _SAID), min_size=1, max_size=12), st.text(max_size=30))
def test_a_transcript_s_parts_lie_in_order_inside_its_text(
    turns: list[tuple[str, str]], preamble: str
) -> None:
    text = preamble + "\n" + "\n".join(f"{name}: {said}" for name, said in turns)
    parts = transcript_parts(document(text))
    if parts is None:
        return
    end = 0
    for offset, part in parts:
        assert offset >= end and text[offset : offset + len(part.text)] == part.text
        assert part.text.strip() and (part.kind == "message") == (part.speaker is not None)
        end = offset + len(part.text)
    drafts = chunk_record("r", document(text), source_name=None, trust="normal", visibility="shareable")
    assert all(text[d.start : d.end] == d.text for d in drafts)
    assert [d.start for d in drafts] == sorted(d.start for d in drafts)
