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
"10:32 Ann: ..."), then a colon and the words said; lines that open no turn continue the turn before
them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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

_OPENER = re.compile(
    r"[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*|\(?\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[AaPp][Mm])?\)?[ \t]*-?[ \t]*)?"
    r"(?P<name>[^\W\d_][\w'\u2019.-]{0,39}(?:[ \t][^\W_][\w'\u2019.-]{0,39}){0,3})[ \t]*:[ \t]+(?P<said>\S)"
)


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str
    start: int  # the words said: [start, end) of the document's text, its speaker's name left out
    end: int


def transcript_turns(text: str, sender: str | None = None) -> list[Turn] | None:
    """The turns of ``text`` when it reads as a transcript (see the module docstring), else None.
    ``sender``: who sent it, when it is a message."""
    openers: list[tuple[str, int]] = []  # (speaker, where the words said start)
    ends: list[int] = []  # where each turn's last non-blank line ends
    lines = 0
    pos = 0
    for raw in text.splitlines(keepends=True):
        line_start, pos = pos, pos + len(raw)
        if not raw.strip():
            continue
        lines += 1
        body_end = line_start + len(raw.rstrip())
        m = _OPENER.match(raw)
        name = m.group("name") if m else None
        if name is not None and len(name) <= MAX_NAME_CHARS:
            openers.append((name, line_start + m.start("said")))  # type: ignore[union-attr]
            ends.append(body_end)
        elif ends:
            ends[-1] = body_end  # a line that opens no turn continues the one before
    speakers = [name.casefold() for name, _ in openers]
    distinct = set(speakers)
    own = _own_voices(sender)
    anchored = not own.isdisjoint(distinct) and not distinct <= own
    fewest = 2 if anchored else MIN_TURNS
    if not fewest <= len(openers) <= MAX_TURNS or 2 * len(openers) <= lines:
        return None
    if len(distinct) < 2 or (len(distinct) == len(speakers) and not anchored):
        return None
    return [Turn(name, start, end) for (name, start), end in zip(openers, ends, strict=True)]


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
    text, when = source.text, source.occurred_at
    own = _own_voices(sender)

    def authors(part: str) -> SourceText:
        return SourceText(part, source.kind, source.speaker, source.role, when)

    parts: list[tuple[int, SourceText]] = []
    preamble = text[: text.rfind("\n", 0, turns[0].start) + 1]
    if preamble.strip():
        parts.append((0, authors(preamble)))
    for turn in turns:
        said = text[turn.start : turn.end]
        speaker = turn.speaker.casefold()
        if speaker in own:
            parts.append((turn.start, authors(said)))
        else:
            role = speaker if speaker in _ROLES else None
            parts.append((turn.start, SourceText(said, "message", turn.speaker, role, when)))
    return parts
