"""LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, research use only) for the benches: where the data
is, which conversations were tuned on, and the loader and scorer of :mod:`brainstore.bench.loader`
(the one LoCoMo loader; ``brainstore bench`` uses it too).

The data is never part of this repository. :func:`load_conversations` reads any of the three layouts
described in ``/work/shared/data/locomo/SOURCE.md``: the ``locomo10_v2/`` directory of ``<n>.json``
files, the upstream ``locomo10.zip``, or a ``locomo10.json`` list; ``root`` may be any of them or a
directory holding one. It returns ``[]`` when nothing is found, so benches can skip.

Scoring follows SOURCE.md and the baselines in NOTES.md: evidence ids are every ``D<s>:<t>`` found in
each evidence string, leading zeros dropped, ids matching no turn dropped; questions of categories
1-4 only, and questions left without evidence are skipped. A question's score is the share of its
evidence turns that were selected.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brainstore.bench import loader
from brainstore.bench.loader import (
    Conversation,
    Question,
    Turn,
    evidence_turns,
    parse_session_date,
    score,
    scored_questions,
    turn_text,
)

__all__ = [
    "DEFAULT_ROOT",
    "HELD_OUT",
    "STRESSES",
    "TUNING",
    "Conversation",
    "Message",
    "Question",
    "Turn",
    "content",
    "evidence_turns",
    "load_conversations",
    "parse_session_date",
    "score",
    "scored_questions",
    "stressed",
    "turn_text",
    "turns_cited",
]

DEFAULT_ROOT = Path("/work/shared/data/locomo")
#: Conversations the retrieval pipeline was tuned on, and those it was only measured on.
TUNING = ("26", "30", "41", "42", "43")
HELD_OUT = ("44", "47", "48", "49", "50")


def load_conversations(root: Path = DEFAULT_ROOT) -> list[Conversation]:
    """Every conversation found at ``root`` (see the module docstring); ``[]`` when there is none."""
    return loader.load_conversations(root)


#: Perturbations that take away LoCoMo's conventions, to see what retrieval is worth where they are
#: absent (data nobody tuned on rarely has them):
#:
#: * ``undated``: every turn carries one and the same time (conversations imported without dates);
#: * ``anonymous``: the speakers' names are replaced by neutral labels in the turns' speaker field
#:   only (the questions still name the people, as a user would);
#: * ``surnamed``: each speaker's field carries a surname too ("Caroline Reyes"), as an account's
#:   display name does, while the questions name people by first name;
#: * ``chat``: each turn is sent as a burst of messages, one Record a sentence, each a second after
#:   the session's message before it, as people write in a messaging app; a question's evidence turn
#:   counts as cited when any of its messages is;
#: * ``paced``: a session's turns are spread over its day instead of sharing its one time, as people
#:   answer a message at once or hours later: after each turn a pause of about a minute (80%), about
#:   20 minutes (15%) or 1-8 hours (5%), drawn with a seed per conversation.
#: * ``first_person``: the turns are unchanged, the Brain's self is the conversation's first speaker,
#:   and the questions about that speaker are asked in the first person ("When did I go to the support
#:   group?", "What are my goals?"), as the user of a personal assistant asks about themselves
#:   (:func:`asked`).
#: * ``interleaved``: Records of another source arrive between the conversation's turns, as a user's
#:   Brain hears from several channels at once (a feed, another chat): after each turn, with a seeded
#:   chance of one half, a speakerless Record of source ``feed`` at the same time.
#: * ``concurrent``: the paced conversation posted by 8 clients at once, as a bulk import is: its
#:   Records arrive shuffled within each run of 8 (seeded), their times those of ``paced``.
#: * ``concurrent_sessions``: the same arrival with LoCoMo's own times, one a session: a history that
#:   knows only each session's date, posted by 8 clients at once. Nothing in the Records tells their
#:   order then (a known limit, see the README).
#: * ``transcripts``: each session is one document Record, its turns lines of ``Speaker: text``, as a
#:   chat export or a call's transcript is pasted; a turn counts as cited when a citation's span
#:   overlaps its text (:func:`turns_cited`).
#: * ``lowercase``: each turn's text in lower case, as many people type in chat (the speakers' labels
#:   and the questions as they were).
#: * ``typos``: one in twenty lower-case words of four letters or more mistyped once (two letters
#:   swapped, one dropped, one doubled, or one struck on a neighbouring key), drawn with a seed per
#:   turn, as people type fast in chat; names (capitalised words) and the questions as they were.
STRESSES = (
    "undated", "anonymous", "surnamed", "chat", "paced", "first_person", "interleaved", "concurrent",
    "concurrent_sessions", "transcripts", "lowercase", "typos",
)  # fmt: skip
CLIENTS = 8
#: The source of the conversation's own Records, and of the interleaved stress's other Records.
SOURCE, FEED = "locomo", "feed"
UNDATED = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
SURNAMES = ("Reyes", "Okafor")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Message:
    """A Record to send for a turn: ``dia_id`` is the turn it belongs to (what evidence names)."""

    dia_id: str
    speaker: str | None
    text: str
    occurred_at: datetime
    source: str = SOURCE
    # A document of several turns (the transcripts stress): each turn's dia_id and its [start, end)
    # in ``text``.
    turns: tuple[tuple[str, int, int], ...] = ()


def content(message: Message, me: str | None = None) -> dict[str, str]:
    """The Record content a message is sent as: a transcript as a document, a turn as a message of its
    speaker (role ``user`` when the speaker is ``me``, the Brain's self)."""
    if message.turns:
        return {"kind": "document", "text": message.text}
    sent = {"kind": "message", "text": message.text, "role": "user" if message.speaker == me else "other"}
    if message.speaker is not None:
        sent["speaker"] = message.speaker
    return sent


def turns_cited(message: Message, start: int, end: int) -> set[str]:
    """The turns a citation of ``[start, end)`` of ``message``'s text quotes: the message's one turn,
    or those of a transcript whose words it overlaps."""
    if not message.turns:
        return {message.dia_id}
    return {dia_id for dia_id, s, e in message.turns if s < end and start < e}


def _transcripts(conversation: Conversation) -> Iterator[Message]:
    sessions: dict[int, list[Turn]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.session, []).append(turn)
    for session, turns in sessions.items():
        text, spans = "", []
        for turn in turns:
            text += f"{turn.speaker}: "
            spans.append((turn.dia_id, len(text), len(text) + len(turn.text)))
            text += turn.text + "\n"
        yield Message(f"D{session}", None, text, turns[0].occurred_at, turns=tuple(spans))


def stressed(conversation: Conversation, stress: str | None) -> Iterator[Message]:
    """The conversation's turns as Records, in order, under ``stress`` (one of STRESSES, or None)."""
    if stress is not None and stress not in STRESSES:
        raise ValueError(f"unknown stress {stress!r}; one of {', '.join(STRESSES)}")
    if stress == "transcripts":
        yield from _transcripts(conversation)
        return
    if stress in ("concurrent", "concurrent_sessions"):
        times = "paced" if stress == "concurrent" else None
        arrivals, shuffle = list(stressed(conversation, times)), random.Random(f"{conversation.sample_id}-arrival")
        for at in range(0, len(arrivals), CLIENTS):
            window = arrivals[at : at + CLIENTS]
            shuffle.shuffle(window)
            yield from window
        return
    names: dict[str, str] = {}
    if stress == "anonymous":
        names = {s: f"Person {chr(65 + i)}" for i, s in enumerate(conversation.speakers)}
    elif stress == "surnamed":
        names = {s: f"{s} {SURNAMES[i % len(SURNAMES)]}" for i, s in enumerate(conversation.speakers)}
    pauses, session, into_session, feed = random.Random(conversation.sample_id), None, 0.0, 0
    for turn in conversation.turns:
        when = UNDATED if stress == "undated" else turn.occurred_at
        if turn.occurred_at != session:
            session, into_session = turn.occurred_at, 0.0
        texts = [turn.text.lower() if stress == "lowercase" else _mistyped(turn) if stress == "typos" else turn.text]
        if stress == "chat":
            texts = [m for m in SENTENCE_END.split(turn.text) if m.strip()] or texts
        for text in texts:
            # a session's messages a second apart, each after the one before it, as a chat sends them
            yield Message(turn.dia_id, names.get(turn.speaker, turn.speaker), text, when + timedelta(seconds=into_session))
            into_session += 1.0 if stress == "chat" else 0.0
        if stress == "paced":
            into_session += _pause(pauses)
        if stress == "interleaved" and pauses.random() < 0.5:
            feed += 1
            yield Message(f"{FEED}-{feed}", None, f"Feed item {feed}: the weekly backup of your files completed.", when, FEED)


TYPO_RATE = 0.05
_TYPABLE = re.compile(r"\b[a-z]{4,}\b")
_KEY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbour_keys(letter: str) -> str:
    """The letters beside ``letter`` on its row of a QWERTY keyboard."""
    row = next(r for r in _KEY_ROWS if letter in r)
    at = row.index(letter)
    return row[max(at - 1, 0) : at] + row[at + 1 : at + 2]


def _mistyped(turn: Turn) -> str:
    """``turn``'s text with ``TYPO_RATE`` of its typable words mistyped once (see ``typos`` above)."""
    rng = random.Random(f"{turn.dia_id}-typos")

    def typo(match: re.Match[str]) -> str:
        word = match[0]
        if rng.random() >= TYPO_RATE:
            return word
        at = rng.randrange(1, len(word) - 1)  # people rarely miss a word's first letter
        kind = rng.randrange(4)
        if kind == 0:
            return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        if kind == 1:
            return word[:at] + word[at + 1 :]
        if kind == 2:
            return word[:at] + word[at] + word[at:]
        return word[:at] + rng.choice(_neighbour_keys(word[at])) + word[at + 1 :]

    return _TYPABLE.sub(typo, turn.text)


def _pause(rng: random.Random) -> float:
    """Seconds between two turns of a paced session (see ``paced`` above)."""
    draw = rng.random()
    if draw < 0.8:
        return rng.expovariate(1 / 60)
    if draw < 0.95:
        return rng.expovariate(1 / 1200)
    return rng.uniform(3600, 8 * 3600)


def brain_self(conversation: Conversation, stress: str | None) -> str | None:
    """The name of the Brain's self under ``stress``: who "I" is in the questions, if anyone."""
    return conversation.speakers[0] if stress == "first_person" else None


# "does Caroline" -> "do I", "Caroline has" -> "I have"; a name after these words is an object: "me"
_FIRST_PERSON_VERB = {"is": "am", "has": "have", "does": "do"}
_AUXILIARY = r"does|has|is|was|did|would|will|can|could|should|might"
_BEFORE_OBJECT = r"to|with|for|about|from|of|at|by|on|than|like|gave|give|gift|gifted|told|tell|help|helped|visit|visited|meet|met|join|joined"


def _first_person_verb(verb: str) -> str:
    said = _FIRST_PERSON_VERB.get(verb.lower(), verb.lower())
    return said.capitalize() if verb[:1].isupper() else said


def asked(conversation: Conversation, question: str, stress: str | None) -> str:
    """``question`` as it is asked under ``stress``: about the Brain's self in the first person."""
    me = brain_self(conversation, stress)
    if me is None or not re.search(rf"\b{re.escape(me)}\b", question):
        return question
    name = re.escape(me)
    q = re.sub(rf"\b{name}(?:'s|`s|\u2019s|'(?!\w))", "my", question)
    q = re.sub(rf"\b({_AUXILIARY})\s+{name}\b", lambda m: _first_person_verb(m[1]) + " I", q, flags=re.IGNORECASE)
    q = re.sub(rf"\b{name}\s+(is|has|does)\b", lambda m: "I " + _FIRST_PERSON_VERB[m[1]], q)
    q = re.sub(rf"\b({_BEFORE_OBJECT})\s+{name}\b", r"\1 me", q, flags=re.IGNORECASE)
    q = re.sub(rf"\b{name}\b", "I", q)
    if not any(re.search(rf"\b{re.escape(other)}\b", q) for other in conversation.speakers if other != me):
        # about the self alone: the question's third-person pronouns are the self too
        q = re.sub(r"\b(?:his|her)(?=\s+(?!a\b|an\b|the\b|to\b|that\b|this\b)[a-z])", "my", q)
        q = re.sub(r"\b(?:him|her)\b", "me", q)
        q = re.sub(r"\b(?:he|she)\b", "I", q)
        q = re.sub(r"\b(?:him|her)self\b", "myself", q)
    return q
