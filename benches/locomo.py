"""LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, research use only): loader and retrieval scorer.

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

import json
import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_ROOT",
    "HELD_OUT",
    "TUNING",
    "Conversation",
    "Question",
    "Turn",
    "evidence_turns",
    "load_conversations",
    "score",
    "turn_text",
]

DEFAULT_ROOT = Path("/work/shared/data/locomo")
#: Conversations the retrieval pipeline was tuned on, and those it was only measured on.
TUNING = ("26", "30", "41", "42", "43")
HELD_OUT = ("44", "47", "48", "49", "50")

_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)


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


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's text as a Record would carry it: the utterance plus its image caption, if any."""
    text = str(turn.get("text") or "").strip()
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
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(value, list)
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


def _from_objects(objects: Iterable[tuple[str, dict[str, Any]]]) -> list[Conversation]:
    out: list[Conversation] = []
    for name, obj in objects:
        if "conversation" in obj:  # locomo10.json layout
            out.append(
                _conversation(
                    _sample_number(str(obj.get("sample_id", name))), obj["conversation"], obj.get("qa", [])
                )
            )
        else:  # v2 layout: the conversation fields at top level
            out.append(_conversation(name, obj, obj.get("qa", [])))
    out.sort(key=lambda c: int(c.sample_id) if c.sample_id.isdigit() else 10**9)
    return out


def load_conversations(root: Path = DEFAULT_ROOT) -> list[Conversation]:
    """Every conversation found at ``root`` (see the module docstring); ``[]`` when there is none."""
    root = Path(root)
    if root.is_dir():
        for candidate in (root / "locomo10_v2", root / "locomo10.json", root / "locomo10.zip"):
            if candidate.exists():
                return load_conversations(candidate)
        files = sorted(root.glob("*.json"))
        return _from_objects((f.stem, json.loads(f.read_text(encoding="utf-8"))) for f in files)
    if not root.is_file():
        return []
    if root.suffix == ".zip":
        with zipfile.ZipFile(root) as zf:
            objects = []
            for name in zf.namelist():
                if name.endswith(".json") and "locomo10_v2/" in name:
                    objects.append((Path(name).stem, json.loads(zf.read(name))))
                elif name.endswith("locomo10.json"):
                    data = json.loads(zf.read(name))
                    objects.extend((str(o.get("sample_id", i)), o) for i, o in enumerate(data))
            return _from_objects(objects)
    data = json.loads(root.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return _from_objects((str(o.get("sample_id", i)), o) for i, o in enumerate(data))
    return _from_objects([(root.stem, data)])


def evidence_turns(qa: Question | dict[str, Any], turn_ids: set[str]) -> set[str]:
    """The turn ids a question's evidence points to: every ``D<s>:<t>`` in each evidence string,
    leading zeros dropped, ids that match no turn dropped."""
    raw = qa.evidence if isinstance(qa, Question) else qa.get("evidence") or ()
    out: set[str] = set()
    for item in raw:
        for s, t in _EVIDENCE_ID.findall(str(item)):
            dia_id = f"D{int(s)}:{int(t)}"
            if dia_id in turn_ids:
                out.add(dia_id)
    return out


def score(selected_turn_ids: Iterable[str], evidence: set[str] | Sequence[str]) -> float:
    """Share of ``evidence`` among ``selected_turn_ids`` (callers skip empty evidence)."""
    evidence = set(evidence)
    if not evidence:
        raise ValueError("a question without evidence is not scored")
    return len(evidence & set(selected_turn_ids)) / len(evidence)


def scored_questions(conversation: Conversation) -> list[tuple[Question, set[str]]]:
    """The questions that count (categories 1-4 with evidence), with their evidence turn ids."""
    out = []
    for q in conversation.qa:
        if q.category not in (1, 2, 3, 4):
            continue
        ev = evidence_turns(q, conversation.turn_ids)
        if ev:
            out.append((q, ev))
    return out
