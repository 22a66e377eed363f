"""A document that is a transcript: lines opened by who says them ("Caroline: I adopted a dog.").

People paste a chat, a meeting's notes or a call's transcript into one document. Read as prose, every
"I" in it would be the author's and its passages would mix several people's words; read as its turns,
each is what its speaker said, as if each had come as a message Record of its own. Derivation
(attributing what is said) and chunking (who says each piece of evidence) both read it that way.

A message can hold one too: "Tom texted me this:\nTom: I quit my job\nMe: why??" read as its
sender's words made the sender the one who quit.

What counts as a transcript is kept narrow, so that ordinary texts with a few "Note: ..." or
"Title: ..." lines are not one: at least :data:`MIN_TURNS` lines open a turn (and at most
:data:`MAX_TURNS`), they are more than half of the text's non-blank lines, at least two different
speakers take turns, and some speaker takes more than one (a block of "Title: / Author: / Date:"
fields names each once). Two turns are enough when one of them is the author's own, opened by "Me"
or by the message's sender: a field is never called that, so the other line is a person's too. A line opens a turn with a name of at most four words and
:data:`MAX_NAME_CHARS` characters, optionally after a time or a bracketed stamp ("[10:32] Ann: ...",
"10:32 Ann: ...", "3/1/22, 10:32 AM - Ann: ..."), then a colon and the words said; lines that open no
turn continue the turn before them. Two more shapes are chat copies with no colon: IRC's ("<ann> hi",
"[10:32] <@ann> hi"), and a chat app's that puts who speaks and when on a line of its own above their
words (Slack's "Ann Smith  10:32 AM", Discord's "Ann — Today at 10:32 AM"). A text with two or more
such heading lines is read by its headings only, so that "Note: ..." inside a message opens no turn,
and the lines below a heading are its turn's, however many.

A turn whose stamp gives its day ("[3/1/22, 10:32:01 AM] Bob: I moved last week.", an export's) was
said then, not when the Record came: its relative dates are read from it, and its evidence is dated so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from .attribution import KIN_NAMES, PERSON_NOUNS
from .model import SourceText

__all__ = ["Turn", "transcript_parts", "transcript_turns"]

MIN_TURNS = 3
# Each turn is a chunk of evidence at least, however short: a document of more turns is read as prose,
# so that one Record's chunks (each indexed and embedded) stay within what a long message makes. A
# 1 MB body of "A: x" lines would otherwise be 200,000 chunks, against 4,000 passages read as prose.
MAX_TURNS = 10_000
MAX_NAME_CHARS = 40
# Speakers whose name is a role of MessageContent whose words are no person's own: their turns are
# read as messages of that role.
_ROLES = frozenset({"assistant", "system"})
# What the author calls themself in a transcript they paste ("Me: why??").
_OWN_VOICE = "me"
# Who asks and who answers in a Q&A ("Q: Where do you live?\nA: I live in Denver."): roles, nobody's
# name; what they say is an unnamed person's, as a message with no speaker is.
_UNNAMED = frozenset({"q", "a", "question", "answer"})
# A pronoun that opens a turn ("Her: I quit"): the paster's word for someone they do not name, and "You"
# is the paster themself in some chat apps' copies and the one they write to in others. Nobody's name:
# what is said after it is an unnamed person's, as after _UNNAMED.
_PRONOUNS = frozenset({"he", "him", "she", "her", "they", "them", "you", "u"})
# A turn opened by a relation ("Mom: ...", "My sister: ..."): the paster's relation, no name of its own
_RELATION = re.compile(r"(?:my[ \t]+)?(?P<noun>[\w-]+)", re.I)
# A turn that asks the one it is put to something: a question in the second person, at the turn's end.
_ASKED = re.compile(r"\b(?:you|your|u)\b[^\n]*\?\s*$", re.I)

_NAME = r"(?P<name>[^\W\d_][\w'\u2019.-]{0,39}(?:[ \t][^\W_][\w'\u2019.-]{0,39}){0,3})"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[AaPp][Mm])?"
# the day of an export's stamp ("[3/1/22, 10:32:01 AM]", "3/1/22, 10:32 - Bob: ...", "[2022-03-01 10:32]")
_DATE = r"(?:\d{1,2}[/.]\d{1,2}[/.](?:\d{4}|\d\d)|\d{4}-\d\d-\d\d)"
_STAMP_DAY = re.compile(r"(?<!\d)(?:(\d{1,2})[/.](\d{1,2})[/.](\d{4}|\d\d)|(\d{4})-(\d\d)-(\d\d))(?!\d)")
_STAMP_TIME = re.compile(r"(?<!\d)(\d{1,2}):(\d{2})(?::(\d{2}))?(?:[ \t]?([AaPp])[Mm])?")
# A stamp before the name: bracketed ("[3/1/22, 10:32:01 AM]"), a time ("10:32 -"), or Android's day and
# time before a dash ("3/1/22, 10:32 AM - "; without the dash a dated line is a log's or a diary's).
# Or a time in brackets after the name ("Bob (10:02 AM): ...", a chat app's copy).
_OPENER = re.compile(
    rf"[ \t]*(?:\[(?P<stamp>[^\]\n]{{1,40}})\][ \t]*|(?P<dated>{_DATE},?[ \t]+{_TIME})[ \t]+-[ \t]+"
    rf"|\(?(?P<time>{_TIME})\)?[ \t]*-?[ \t]*)?{_NAME}"
    rf"(?:[ \t]*[(\[](?P<after>(?:{_DATE},?[ \t]+)?{_TIME})[)\]])?[ \t]*:[ \t]+(?P<said>\S)"
)

# IRC and its kin: the nick in angle brackets (after an op's or voice's sigil), optionally stamped
_NICK_OPENER = re.compile(
    rf"[ \t]*(?:\[(?P<stamp>[^\]\n]{{1,40}})\][ \t]*|(?P<time>{_TIME})[ \t]+)?"
    r"<[@+%~&]?(?P<name>[^\W\d][\w\[\]\\`^{}|.-]{0,31})>[ \t]+(?P<said>\S)"
)
# A heading line: a name, then when, and nothing else (Slack's "Ann Smith  10:32 AM", Discord's "Ann —
# Today at 10:32 AM" or "Ann — 03/01/2022 10:32 AM"). The words said follow on the lines below it.
_HEADING = re.compile(
    rf"[ \t]*{_NAME}[ \t]+(?:[\u2014\u2013-][ \t]+)?[(\[]?"
    rf"(?P<stamp>(?:(?:[Tt]oday|[Yy]esterday)[ \t]+at[ \t]+|{_DATE},?[ \t]+)?{_TIME})[)\]]?[ \t]*$"
)


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str
    start: int  # the words said: [start, end) of the document's text, its speaker's name left out
    end: int
    stamp: str | None = None  # the time its line gives it, as written ("3/1/22, 10:32:01 AM")


def transcript_turns(text: str, sender: str | None = None) -> list[Turn] | None:
    """The turns of ``text`` when it reads as a transcript (see the module docstring), else None.
    ``sender``: who sent it, when it is a message."""
    openers: list[tuple[str, int, str | None]] = []  # (speaker, where the words said start, stamp)
    ends: list[int] = []  # where each turn's last non-blank line ends
    lines = 0
    logged = True  # every turn stamped as a chat log stamps it (see below)
    pos = 0
    raws = text.splitlines(keepends=True)
    headed = _headed(raws)
    heading: tuple[str, str] | None = None  # the speaker and stamp of a heading whose words come next
    for raw in raws:
        line_start, pos = pos, pos + len(raw)
        if not raw.strip():
            continue
        body_end = line_start + len(raw.rstrip())
        if headed:
            h = _heading(raw)
            if h is not None:
                lines += 1
                heading = (h.group("name"), h.group("stamp"))
            elif heading is not None:  # the first line of a heading's words: one line of a turn with it
                openers.append((heading[0], line_start + len(raw) - len(raw.lstrip()), heading[1]))
                ends.append(body_end)
                heading = None
            elif ends:
                ends[-1] = body_end  # a message's further lines: the heading opened them all
            else:
                lines += 1  # before the first heading
            continue
        lines += 1
        m = _OPENER.match(raw) if ":" in raw else None  # (no turn opens without its colon)
        if m is None and "<" in raw:
            m = _NICK_OPENER.match(raw)
        name = m.group("name") if m else None
        if name is not None and len(name) <= MAX_NAME_CHARS:
            assert m is not None
            groups = m.groupdict()
            stamp = groups.get("stamp") or groups.get("dated") or groups.get("after") or groups.get("time")
            logged = logged and (groups.get("stamp") or groups.get("dated") or groups.get("after")) is not None
            openers.append((name, line_start + m.start("said"), stamp))
            ends.append(body_end)
        elif ends:
            ends[-1] = body_end  # a line that opens no turn continues the one before
    logged = logged and not headed  # a heading's time is a chat app's, and a schedule's line too
    speakers = [name.casefold() for name, _, _ in openers]
    distinct = set(speakers)
    own = _own_voices(sender)
    anchored = not own.isdisjoint(distinct) and not distinct <= own
    # a question put to someone ("Interviewer: Where did you grow up?") that another speaker's turn
    # answers, in a text of nothing but turns: no field's value asks the next field anything
    answered = lines == len(openers) and any(
        _ASKED.search(text, start, end) and speakers[k] != speakers[k + 1]
        for k, ((_, start, _), end) in enumerate(zip(openers[:-1], ends, strict=False))
    )
    # A stamp in brackets, or a dated one, is a chat log's: no field, heading or schedule line is written
    # "[10:02] Bob: ..." or "Bob (10:02 AM): ...", so one such turn, of one speaker, is a transcript too.
    # (A bare "10:30 Standup: ..." may be a schedule's line: that takes the rules above.)
    if logged and 1 <= len(openers) <= MAX_TURNS and 2 * len(openers) > lines:
        return [Turn(name, start, end, stamp) for (name, start, stamp), end in zip(openers, ends, strict=True)]
    fewest = 2 if anchored or answered else MIN_TURNS
    if not fewest <= len(openers) <= MAX_TURNS or 2 * len(openers) <= lines:
        return None
    if len(distinct) < 2 or (len(distinct) == len(speakers) and not (anchored or answered)):
        return None
    return [Turn(name, start, end, stamp) for (name, start, stamp), end in zip(openers, ends, strict=True)]


def _headed(raws: list[str]) -> bool:
    """Whether the text is a chat app's copy: two or more heading lines (see _HEADING)."""
    headings = 0
    for raw in raws:
        if _heading(raw) is not None:
            headings += 1
            if headings == 2:
                return True
    return False


def _heading(raw: str) -> re.Match[str] | None:
    m = _HEADING.match(raw.rstrip()) if ":" in raw else None  # (every time has its colon)
    return m if m is not None and len(m.group("name")) <= MAX_NAME_CHARS else None


def _own_voices(sender: str | None) -> set[str]:
    return {_OWN_VOICE} | ({sender.casefold()} if sender else set())


def transcript_parts(source: SourceText) -> list[tuple[int, SourceText]] | None:
    """A transcript (a document, or a person's message) as what its parts would be as Records of
    their own, each with the offset of its text in the whole: the text before the first turn (a title,
    a preamble) and the author's own turns as the author's, then each other turn as a message of its
    speaker. None when ``source`` does not read as a transcript."""
    own_kind = source.kind in ("document", "message") and source.role not in _ROLES
    if not own_kind or source.triple is not None:
        return None
    sender = source.speaker if source.kind == "message" else None
    turns = transcript_turns(source.text, sender)
    if turns is None:
        return None
    text = source.text
    own = _own_voices(sender)

    def authors(part: str, when: datetime) -> SourceText:
        return SourceText(part, source.kind, source.speaker, source.role, when)

    parts: list[tuple[int, SourceText]] = []
    preamble = text[: text.rfind("\n", 0, turns[0].start) + 1]
    if preamble.strip():
        parts.append((0, authors(preamble, source.occurred_at)))
    for turn, when in zip(turns, _said_at([turn.stamp for turn in turns], source.occurred_at), strict=True):
        said = text[turn.start : turn.end]
        speaker = turn.speaker.casefold()
        if speaker in own:
            parts.append((turn.start, authors(said, when)))
        elif speaker in _UNNAMED or speaker in _PRONOUNS:
            parts.append((turn.start, SourceText(said, "message", None, "other", when)))
        else:
            role = speaker if speaker in _ROLES else None
            who = _relation_of(turn.speaker, source) or turn.speaker
            parts.append((turn.start, SourceText(said, "message", who, role, when)))
    return parts


def _relation_of(label: str, source: SourceText) -> str | None:
    """ "Alice's mom" for a turn its paster Alice opens with "Mom" or "My mom"; None for a name, or when
    no one knows who pasted it (whose mom "the author's mom" is, nobody could tell apart)."""
    m = _RELATION.fullmatch(label)
    if m is None or source.speaker is None:
        return None
    noun = m.group("noun").lower()
    if not (noun in KIN_NAMES or (label[:2].lower() == "my" and noun in PERSON_NOUNS)):
        return None
    return f"{source.speaker}'s {noun}"


def _said_at(stamps: list[str | None], occurred_at: datetime) -> list[datetime]:
    """When each turn was said: the day its stamp gives (with its time, if given), in the Record's time
    zone; the Record's time where the stamp gives no day, cannot be read or falls after the Record.
    Whether "3/1/22" is 3 January or 1 March, the export's stamps decide together: a number above 12
    is the day, and so is the first of a date written with dots ("03.01.22", as the locales that put
    the day first write it); else the month comes first, as :mod:`.timeexpr` reads a numeric date.
    Stamps that no one order reads ("13/1/22" and "1/13/22") give none of them their day."""
    days = [_STAMP_DAY.search(stamp) if stamp else None for stamp in stamps]
    numeric = [(int(m[1]), int(m[2]), "." in m[0]) for m in days if m is not None and m[1]]
    day_first = any(first > 12 or dotted for first, _, dotted in numeric)
    if day_first and any(second > 12 for _, second, _ in numeric):
        return [occurred_at] * len(stamps)
    return [
        _stamped(stamp, day, day_first, occurred_at) if stamp and day else occurred_at
        for stamp, day in zip(stamps, days, strict=True)
    ]


def _stamped(stamp: str, day: re.Match[str], day_first: bool, occurred_at: datetime) -> datetime:
    if day[1]:
        first, second = int(day[1]), int(day[2])
        year, month, dom = int(day[3]), *((second, first) if day_first else (first, second))
        year += 2000 if year < 100 else 0
    else:
        year, month, dom = int(day[4]), int(day[5]), int(day[6])
    hour = minute = seconds = 0
    clock = _STAMP_TIME.search(stamp[day.end() :]) or _STAMP_TIME.search(stamp[: day.start()])
    if clock is not None:
        hour, minute, seconds = int(clock[1]), int(clock[2]), int(clock[3] or 0)
        if clock[4] and 1 <= hour <= 12:
            hour = hour % 12 + (12 if clock[4] in "pP" else 0)
    try:
        when = datetime(year, month, dom, hour, minute, seconds, tzinfo=occurred_at.tzinfo)
    except ValueError:  # "31/2/22", "25:70"
        return occurred_at
    if when.date() > occurred_at.date():
        return occurred_at  # said after the Record that holds it: misread
    return min(when, occurred_at)
