"""What ``brainstore bench`` measures on: LoCoMo conversations, or JSON Lines of questions of your own.

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, research use only) comes in three layouts and
:func:`load_conversations` reads each: the release zip (``locomo10.zip``), a folder of ``<n>.json``
files (``locomo10_v2/``), or one JSON file (a single conversation, or the later ``locomo10.json`` list
of ``{"sample_id", "conversation", "qa"}``). A folder holding one of those layouts is read as that
layout. A turn's text is its ``text`` (or ``clean_text``, which some copies carry instead), with an
image caption appended. Nothing found is ``[]``: the caller decides whether that is an error.

Files are UTF-8. Whatever they hold, reading them ends in a conversation or query or in a
:class:`BenchDataError` naming the file (and line) and what is wrong, never in another exception: the
command answers that one with ``brainstore bench: <reason>``, where a Latin-1 byte, deep nesting, a
5,000-digit number or a list of strings had ended it in a traceback.

Evidence follows the baselines in NOTES.md: every ``D<s>:<t>`` found in each evidence string, leading
zeros dropped, ids matching no turn dropped; only categories 1-4 count (category 5 is adversarial: its
evidence is the turn a false premise is built on), and a question left without evidence is skipped.

JSON Lines (:func:`load_queries`): one ``{"query": str, "evidence": [external_id, ...], "category"?:
str | int}`` per line, asked of a Brain whose Records were imported with those external ids. Lines end
at "\n" only: a U+2028 in a string is JSON, not a line break.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = [
    "LOCOMO_CATEGORIES",
    "BenchDataError",
    "Conversation",
    "Query",
    "Question",
    "Turn",
    "evidence_turns",
    "is_jsonl",
    "load_conversations",
    "load_queries",
    "parse_session_date",
    "score",
    "scored_questions",
    "turn_text",
]

#: The LoCoMo categories that are scored: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
LOCOMO_CATEGORIES = (1, 2, 3, 4)

_EVIDENCE_ID = re.compile(r"D\s*:?\s*([0-9]+)\s*:\s*([0-9]+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_SESSION = re.compile(r"session_(\d+)")


class BenchDataError(ValueError):
    """The data given to the bench cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Turn:
    dia_id: str  # "D<session>:<turn>"
    session: int
    speaker: str
    text: str  # the utterance, with an image caption appended as "[shares a photo of ...]"
    occurred_at: datetime  # the session's date and time (UTC: the data has no zone)


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]  # raw evidence strings, as in the file
    answer: Any = None


@dataclass
class Conversation:
    sample_id: str  # "26" ... "50"
    speakers: tuple[str, str]
    turns: list[Turn]
    qa: list[Question]
    turn_ids: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.turn_ids = {t.dia_id for t in self.turns}


@dataclass(frozen=True)
class Query:
    """One scored question, whatever the data: evidence are the keys its answer lives under (LoCoMo
    dialogue ids, or the external ids of imported Records)."""

    text: str
    evidence: frozenset[str]
    category: str | None = None


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's text as a Record would carry it: the utterance plus its image caption, if any."""
    text = str(turn.get("text") or turn.get("clean_text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        caption = str(caption).strip()
        text = f"{text} [shares a photo of {caption}]" if text else f"[shares a photo of {caption}]"
    return text


def parse_session_date(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> 2023-05-08 13:56 UTC."""
    m = _DATE.search(value)
    if not m:
        raise ValueError(f"unrecognised LoCoMo session date {value!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    parsed = datetime.strptime(f"{day} {month[:3]} {year}", "%d %b %Y")
    return parsed.replace(hour=h, minute=int(minute), tzinfo=UTC)


def _conversation(sample_id: str, conv: dict[str, Any], qa: list[dict[str, Any]]) -> Conversation:
    sessions = sorted(
        int(m.group(1)) for key, value in conv.items()
        if (m := _SESSION.fullmatch(key)) and isinstance(value, list)
    )  # fmt: skip
    turns: list[Turn] = []
    for n in sessions:
        when = parse_session_date(conv[f"session_{n}_date_time"])
        for raw in conv[f"session_{n}"]:
            turns.append(Turn(str(raw["dia_id"]), n, str(raw["speaker"]), turn_text(raw), when))
    questions = [
        Question(
            str(q["question"]),
            int(q["category"]),
            tuple(str(e) for e in q.get("evidence") or ()),
            q.get("answer", q.get("adversarial_answer")),
        )
        for q in qa
    ]
    return Conversation(sample_id, (str(conv["speaker_a"]), str(conv["speaker_b"])), turns, questions)


def _sample_number(sample_id: str) -> str:
    return sample_id.rsplit("-", 1)[-1]


def _from_objects(objects: Iterable[tuple[str, Any]]) -> list[Conversation]:
    out: list[Conversation] = []
    for name, obj in objects:
        if not isinstance(obj, dict):
            raise BenchDataError(f"{name}: not a LoCoMo conversation (a {type(obj).__name__}, not a JSON object)")
        try:
            if "conversation" in obj:  # locomo10.json layout
                sample_id = _sample_number(str(obj.get("sample_id", name)))
                out.append(_conversation(sample_id, obj["conversation"], obj.get("qa", [])))
            else:  # v2 layout: the conversation fields at top level
                out.append(_conversation(name, obj, obj.get("qa", [])))
        # AttributeError: a member of the wrong type (a list where the sessions' object should be)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            raise BenchDataError(f"{name}: not a LoCoMo conversation ({type(exc).__name__}: {exc})") from None
    out.sort(key=lambda c: _numeric_first(c.sample_id))
    return out


def _numeric_first(sample_id: str) -> tuple[int, int, str]:
    """Numbers in numeric order, then other ids. Compared as ASCII digit strings: int() refuses more than
    4,300 digits, and digits that isdigit() accepts but int() does not ("²")."""
    if sample_id.isascii() and sample_id.isdigit():
        digits = sample_id.lstrip("0")
        return (0, len(digits), digits)
    return (1, 0, sample_id)


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a byte order mark is no part of the JSON
    except UnicodeDecodeError as exc:
        raise BenchDataError(f"{name}: not UTF-8 (byte {exc.start + 1} is 0x{data[exc.start]:02x})") from None


def _json(data: bytes, name: str) -> Any:
    text = _text(data, name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchDataError(f"{name}: not JSON ({exc})") from None
    except RecursionError:
        raise BenchDataError(f"{name}: arrays or objects nested too deeply to read") from None
    except ValueError:  # the other ValueError json.loads raises on text: int() refusing a long integer
        raise BenchDataError(
            f"{name}: a number of more than {sys.get_int_max_str_digits()} digits, more than Python reads"
        ) from None


def _objects(data: Any, name: str) -> list[tuple[str, Any]]:
    """A file's conversations: a list of them (locomo10.json) or one."""
    if isinstance(data, list):
        return [
            (str(o.get("sample_id", i)) if isinstance(o, dict) else str(i), o) for i, o in enumerate(data)
        ]
    if isinstance(data, dict):
        return [(name, data)]
    raise BenchDataError(f"{name}: expected a JSON object or list, got {type(data).__name__}")


def _from_zip(path: Path) -> list[Conversation]:
    objects: list[tuple[str, Any]] = []
    with _unzipping(str(path)):
        zf = zipfile.ZipFile(path)
    with zf:
        for name in sorted(zf.namelist()):
            member = PurePosixPath(name)
            # macOS archivers add resource forks beside every file.
            if member.suffix != ".json" or "__MACOSX" in member.parts or member.name.startswith("._"):
                continue
            with _unzipping(f"{path}:{name}"):
                data = zf.read(name)
            objects.extend(_objects(_json(data, f"{path}:{name}"), member.stem))
    return _from_objects(objects)


@contextmanager
def _unzipping(name: str) -> Iterator[None]:
    """A damaged archive or member (a bad CRC or deflate stream, cut short) or one zipfile cannot read
    (encrypted, an unknown compression) as a BenchDataError."""
    try:
        yield
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise BenchDataError(f"{name}: not readable from the archive ({type(exc).__name__}: {exc})") from None


def load_conversations(root: Path | str) -> list[Conversation]:
    """Every LoCoMo conversation found at ``root`` (see the module docstring); ``[]`` when none is."""
    root = Path(root)
    if root.is_dir():
        for candidate in (root / "locomo10_v2", root / "locomo10.json", root / "locomo10.zip"):
            if candidate.exists():
                return load_conversations(candidate)
        objects: list[tuple[str, Any]] = []
        for f in sorted(root.glob("*.json")):
            objects.extend(_objects(_json(f.read_bytes(), str(f)), f.stem))
        return _from_objects(objects)
    if not root.is_file():
        return []
    if zipfile.is_zipfile(root):
        return _from_zip(root)
    return _from_objects(_objects(_json(root.read_bytes(), str(root)), root.stem))


def evidence_turns(qa: Question | dict[str, Any], turn_ids: set[str]) -> set[str]:
    """The turn ids a question's evidence points to: every ``D<s>:<t>`` in each evidence string,
    leading zeros dropped, ids that match no turn dropped."""
    raw = qa.evidence if isinstance(qa, Question) else qa.get("evidence") or ()
    out: set[str] = set()
    for item in raw:
        for s, t in _EVIDENCE_ID.findall(str(item)):
            # leading zeros dropped from the digits, not by int(): it refuses more than 4,300 of them
            dia_id = f"D{s.lstrip('0') or '0'}:{t.lstrip('0') or '0'}"
            if dia_id in turn_ids:
                out.add(dia_id)
    return out


def score(selected_turn_ids: Iterable[str], evidence: set[str] | frozenset[str] | Sequence[str]) -> float:
    """Share of ``evidence`` among ``selected_turn_ids`` (callers skip empty evidence)."""
    evidence = set(evidence)
    if not evidence:
        raise ValueError("a question without evidence is not scored")
    return len(evidence & set(selected_turn_ids)) / len(evidence)


def scored_questions(conversation: Conversation) -> list[tuple[Question, set[str]]]:
    """The questions that count (categories 1-4 with evidence), with their evidence turn ids."""
    out = []
    for q in conversation.qa:
        if q.category not in LOCOMO_CATEGORIES:
            continue
        ev = evidence_turns(q, conversation.turn_ids)
        if ev:
            out.append((q, ev))
    return out


def conversation_queries(conversation: Conversation) -> list[Query]:
    """A conversation's scored questions in the bench's shape: evidence keyed by dialogue id."""
    return [Query(q.question, frozenset(ev), str(q.category)) for q, ev in scored_questions(conversation)]


def is_jsonl(path: Path | str) -> bool:
    """Whether ``--data`` names JSON Lines of questions (by suffix) rather than LoCoMo conversations."""
    return Path(path).suffix.lower() in (".jsonl", ".ndjson")


def load_queries(path: Path | str) -> tuple[list[Query], int]:
    """The questions of a JSON Lines file, and how many lines had no evidence (they are not scored).

    Raises :class:`BenchDataError` naming the line of the first malformed one.
    """
    path = Path(path)
    try:
        # at "\n" only: str.splitlines() also broke a line at a U+2028 inside a JSON string
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        raise BenchDataError(f"{path}: cannot read ({exc.strerror})") from None
    queries: list[Query] = []
    without_evidence = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        item = _json(line, where)
        if not isinstance(item, dict):
            raise BenchDataError(f"{where}: expected a JSON object")
        query, evidence, category = item.get("query"), item.get("evidence"), item.get("category")
        if not isinstance(query, str) or not query.strip():
            raise BenchDataError(f"{where}: query: must be a non-empty string")
        if not isinstance(evidence, list) or not all(isinstance(e, str) and e for e in evidence):
            raise BenchDataError(f"{where}: evidence: must be a list of external ids (non-empty strings)")
        if category is not None and (isinstance(category, bool) or not isinstance(category, str | int)):
            raise BenchDataError(f"{where}: category: must be a string or an integer")
        if not evidence:
            without_evidence += 1
            continue
        queries.append(Query(query, frozenset(evidence), None if category is None else str(category)))
    return queries, without_evidence
