"""Memory quality on LoCoMo: are the Memories worth reading, owned by the right person, cited right?

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, research use only; see
``/work/shared/data/locomo/SOURCE.md``) carries, per session, observations: short statements about one
speaker, each with the turn ids it rests on (``session_<n>_observation: {speaker: [[text, "D1:3"],
...]}``). They were written by gpt-3.5 from the dialogue, not by hand, so they are a reference, not
gold: a Memory can be right and still miss them, and some say more than a turn does.

Each conversation is ingested through the real service over its HTTP API, in process (the memory
engine behind the Falcon app, the Python client on a WSGI transport): one Brain whose self is the
first speaker, one message Record per turn with its speaker and the session time as occurred_at. Once
every Record is ready (getRecord), every Memory is read with listMemories (all pages). Then, with the
offline MiniLM embedder and a cosine threshold of 0.6 ("says the same thing"):

- coverage: share of observations with a Memory that cites one of the observation's evidence turns
  and says the same thing;
- right owner: the same, and that Memory's owner is the observation's speaker;
- misattribution: share of the Memories owned by a speaker that cite only Records said by the other
  speaker;
- precision proxy: share of Memories that say what some observation of the conversation says;
- Memories per turn, the extractor's own time per turn (median, called directly on each turn) and
  the end-to-end ingestion rate (Records posted and derived per second).

``--stress`` posts the conversation as one of the perturbations of :data:`locomo.STRESSES` (each
session one transcript document, speakers labelled by full names or neutral labels, a Record a
sentence, ...). Where a stress relabels the speakers, a Memory's owner and the labels in its
statement are read as the speakers' own names before they are compared with the observations, which
name people by first name.

Run as a bench (``.venv/bin/python -m pytest benches/test_memory_quality_bench.py --benchmark-enable
-s``) or as a script (``.venv/bin/python -m benches.memory_quality [--conversations 44,47] [--stress
transcripts]``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benches.locomo import (
    DEFAULT_ROOT,
    HELD_OUT,
    STRESSES,
    TUNING,
    Conversation,
    Message,
    content,
    evidence_turns,
    load_conversations,
    stressed,
    turns_cited,
)

__all__ = [
    "SAME_THING",
    "ConversationQuality",
    "Ingested",
    "Observation",
    "extractor_times",
    "ingest",
    "load_observations",
    "measure",
    "run",
    "score",
    "table",
]

#: Cosine (MiniLM, normalised) at or above which a Memory and an observation say the same thing.
SAME_THING = 0.6
KEY = "sk_test_bench_memoryquality01"


@dataclass(frozen=True)
class Observation:
    speaker: str  # whom it is about (the key it is listed under)
    text: str
    evidence: frozenset[str]  # dia_ids that match a turn of the conversation


@dataclass
class Ingested:
    """What the service derived from one conversation, read back through the API."""

    memories: list[dict[str, Any]]
    sent: dict[str, Message]  # by record id: one turn, or a session's transcript
    turn_speaker: dict[str, str]  # dia_id -> speaker
    seconds: float  # from the first post to the last Record ready
    names: dict[str, str] = field(default_factory=dict)  # a speaker's label as posted -> their name

    def named(self, text: str) -> str:
        """``text`` with each speaker's label as posted written as their name."""
        for label, name in self.names.items():
            text = text.replace(label, name)
        return text

    def turns_of(self, citation: dict[str, Any]) -> set[str]:
        """The turns a citation quotes."""
        message = self.sent.get(citation["record_id"])
        return set() if message is None else turns_cited(message, citation["span"]["start"], citation["span"]["end"])


@dataclass
class ConversationQuality:
    sample_id: str
    observations: int
    memories: int
    turns: int
    covered: int
    right_owner: int
    speaker_owned: int
    misattributed: int
    matching: int  # Memories that say what some observation says
    extract_ms: list[float] = field(default_factory=list)
    ingest_s: float = 0.0
    misses: list[str] = field(default_factory=list)  # examples, for reading
    wrong: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        return self.covered / self.observations if self.observations else 0.0

    @property
    def owner_share(self) -> float:
        return self.right_owner / self.observations if self.observations else 0.0

    @property
    def misattribution(self) -> float:
        return self.misattributed / self.speaker_owned if self.speaker_owned else 0.0

    @property
    def precision(self) -> float:
        return self.matching / self.memories if self.memories else 0.0


# ------------------------------------------------------------------------------------------ loading


def _raw_objects(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(sample id, conversation object) for the layouts benches.locomo reads."""
    root = Path(root)
    if root.is_dir():
        for candidate in (root / "locomo10_v2", root / "locomo10.json", root / "locomo10.zip"):
            if candidate.exists():
                return _raw_objects(candidate)
        return [(f.stem, json.loads(f.read_text(encoding="utf-8"))) for f in sorted(root.glob("*.json"))]
    if not root.is_file():
        return []
    if root.suffix == ".zip":
        out: list[tuple[str, dict[str, Any]]] = []
        with zipfile.ZipFile(root) as zf:
            for name in zf.namelist():
                if name.endswith(".json") and "locomo10_v2/" in name:
                    out.append((Path(name).stem, json.loads(zf.read(name))))
                elif name.endswith("locomo10.json"):
                    out.extend(
                        (str(o.get("sample_id", i)), o) for i, o in enumerate(json.loads(zf.read(name)))
                    )
        return out
    data = json.loads(root.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [(str(o.get("sample_id", i)), o) for i, o in enumerate(data)]
    return [(root.stem, data)]


def _observation_fields(obj: dict[str, Any]) -> dict[str, Any]:
    # locomo10.json nests them under "observation"; the v2 files keep them at the top level
    nested = obj.get("observation")
    return nested if isinstance(nested, dict) else obj


def load_observations(
    conversations: Sequence[Conversation], root: Path = DEFAULT_ROOT
) -> dict[str, list[Observation]]:
    """Each conversation's observations whose evidence names at least one of its turns."""
    by_id = {c.sample_id: c for c in conversations}
    out: dict[str, list[Observation]] = {}
    for name, obj in _raw_objects(root):
        sample_id = name.rsplit("-", 1)[-1]
        conversation = by_id.get(sample_id)
        if conversation is None:
            continue
        observations: list[Observation] = []
        for key, value in _observation_fields(obj).items():
            if not (key.startswith("session_") and key.endswith("_observation")) or not isinstance(
                value, dict
            ):
                continue
            for speaker, items in value.items():
                for item in items or ():
                    if not isinstance(item, list | tuple) or len(item) < 2:
                        continue
                    raw = item[1] if isinstance(item[1], list) else [item[1]]
                    ev = evidence_turns({"evidence": [str(e) for e in raw]}, conversation.turn_ids)
                    if ev:
                        observations.append(Observation(str(speaker), str(item[0]), frozenset(ev)))
        out[sample_id] = observations
    return out


# ---------------------------------------------------------------------------------------- ingestion


def ingest(
    client: Any,
    conversation: Conversation,
    *,
    stress: str | None = None,
    poll_s: float = 0.02,
    timeout_s: float = 900.0,
) -> Ingested:
    """Post every turn through the API (or as ``stress`` has it), wait until each Record is ready,
    read every Memory."""
    messages = list(stressed(conversation, stress))
    speaker_of = {t.dia_id: t.speaker for t in conversation.turns}
    names = {m.speaker: speaker_of[m.dia_id] for m in messages if m.speaker and m.dia_id in speaker_of}
    names = {label: name for label, name in names.items() if label != name}
    me = next((label for label, name in names.items() if name == conversation.speakers[0]), conversation.speakers[0])
    brain = f"quality-{conversation.sample_id}"
    client.create_brain(brain, self={"type": "person", "name": me})
    sent: dict[str, Message] = {}
    started = time.perf_counter()
    for m in messages:
        rec = client.remember_record(brain, content(m), occurred_at=m.occurred_at.isoformat().replace("+00:00", "Z"))
        sent[rec["id"]] = m
    deadline = time.monotonic() + timeout_s
    # Derivation runs in order, so polling the Records in order mostly finds them ready at once.
    for record_id in sent:
        while (status := client.get_record(brain, record_id)["status"]) == "processing":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{record_id} still processing after {timeout_s} s")
            time.sleep(poll_s)
        if status != "ready":
            raise RuntimeError(f"{record_id} ended {status}")
    seconds = time.perf_counter() - started
    memories = list(client.iter_memories(brain, limit=500))
    return Ingested(memories, sent, speaker_of, seconds, names)


def extractor_times(conversation: Conversation) -> list[float]:
    """Milliseconds the default extractor takes on each turn, called directly (no service)."""
    from brainstore.derive import default_extractor, source_text

    extractor = default_extractor()
    self_name = conversation.speakers[0]
    times: list[float] = []
    for turn in conversation.turns:
        content = {"kind": "message", "text": turn.text, "speaker": turn.speaker}
        started = time.perf_counter()
        extractor.extract(
            source_text(content, self_name=self_name, occurred_at=turn.occurred_at), self_name=self_name
        )
        times.append((time.perf_counter() - started) * 1000)
    return times


# ------------------------------------------------------------------------------------------ scoring


def _normalised(embedder: Any, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    m = np.asarray(embedder.embed(texts), dtype=np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def score(
    sample_id: str,
    observations: list[Observation],
    ingested: Ingested,
    speakers: tuple[str, str],
    embedder: Any,
    *,
    examples: int = 0,
) -> ConversationQuality:
    memories = [
        {**m, "owner": ingested.named(m["owner"] or ""), "statement": ingested.named(m["statement"])}
        for m in ingested.memories
    ]
    sims = (
        _normalised(embedder, [o.text for o in observations])
        @ _normalised(embedder, [m["statement"] for m in memories]).T
    )
    turns_of = [{t for c in m["citations"] for t in ingested.turns_of(c)} for m in memories]
    by_turn: dict[str, list[int]] = {}
    for j, turns in enumerate(turns_of):
        for t in turns:
            if t is not None:
                by_turn.setdefault(t, []).append(j)
    covered = right = 0
    misses: list[str] = []
    for i, o in enumerate(observations):
        candidates = sorted({j for t in o.evidence for j in by_turn.get(t, ())})
        same = [j for j in candidates if sims[i, j] >= SAME_THING]
        if same:
            covered += 1
            if any((memories[j]["owner"] or "").casefold() == o.speaker.casefold() for j in same):
                right += 1
        elif len(misses) < examples:
            best = max(candidates, key=lambda j: sims[i, j], default=None)
            near = (
                f"{memories[best]['statement']!r} ({sims[i, best]:.2f})" if best is not None else "no Memory"
            )
            misses.append(f"{sorted(o.evidence)} {o.text!r} -> {near}")
    names = {s.casefold(): s for s in speakers}
    owned = mis = 0
    wrong: list[str] = []
    for m, turns in zip(memories, turns_of, strict=True):
        owner = (m["owner"] or "").casefold()
        if owner not in names:
            continue
        owned += 1
        said_by = {ingested.turn_speaker.get(t, "").casefold() for t in turns}
        if said_by and owner not in said_by:
            mis += 1
            if len(wrong) < examples:
                wrong.append(f"{sorted(turns)} {m['statement']!r} owner {m['owner']}")
    matching = int((sims.max(axis=0) >= SAME_THING).sum()) if len(observations) and len(memories) else 0
    return ConversationQuality(
        sample_id,
        observations=len(observations),
        memories=len(memories),
        turns=len(ingested.turn_speaker),
        covered=covered,
        right_owner=right,
        speaker_owned=owned,
        misattributed=mis,
        matching=matching,
        ingest_s=ingested.seconds,
        misses=misses,
        wrong=wrong,
    )


def _total(label: str, rows: Iterable[ConversationQuality]) -> ConversationQuality:
    rows = list(rows)
    total = ConversationQuality(label, *(sum(getattr(r, f) for r in rows) for f in (
        "observations", "memories", "turns", "covered", "right_owner", "speaker_owned", "misattributed", "matching"
    )))  # fmt: skip
    total.extract_ms = [x for r in rows for x in r.extract_ms]
    total.ingest_s = sum(r.ingest_s for r in rows)
    return total


def table(rows: Sequence[ConversationQuality]) -> str:
    """Per conversation, then per split (tuning, held-out) and overall."""
    head = f"{'conv':>9} {'obs':>5} {'mem':>5} {'cover':>6} {'owner':>6} {'misatt':>7} {'prec':>6} {'mem/turn':>8} {'ext ms':>7} {'rec/s':>6}"
    lines = [head, "-" * len(head)]

    def line(r: ConversationQuality) -> str:
        ext = statistics.median(r.extract_ms) if r.extract_ms else float("nan")
        rate = r.turns / r.ingest_s if r.ingest_s else float("nan")
        return (
            f"{r.sample_id:>9} {r.observations:>5} {r.memories:>5} {r.coverage:>6.3f} {r.owner_share:>6.3f}"
            f" {r.misattribution:>7.2%} {r.precision:>6.3f} {r.memories / max(r.turns, 1):>8.2f} {ext:>7.3f} {rate:>6.0f}"
        )

    lines += [line(r) for r in rows]
    lines.append("-" * len(head))
    for label, ids in (("tuning", TUNING), ("held-out", HELD_OUT)):
        part = [r for r in rows if r.sample_id in ids]
        if part:
            lines.append(line(_total(label, part)))
    lines.append(line(_total("all", rows)))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- runs


def run(
    client: Any,
    conversations: Sequence[Conversation],
    observations: dict[str, list[Observation]],
    embedder: Any,
    *,
    examples: int = 0,
    stress: str | None = None,
) -> list[ConversationQuality]:
    rows = []
    for conversation in conversations:
        ingested = ingest(client, conversation, stress=stress)
        row = score(
            conversation.sample_id,
            observations.get(conversation.sample_id, []),
            ingested,
            conversation.speakers,
            embedder,
            examples=examples,
        )
        row.extract_ms = extractor_times(conversation)
        rows.append(row)
    return rows


def measure(
    wanted: Sequence[str] | None = None, *, examples: int = 0, stress: str | None = None
) -> list[ConversationQuality]:
    """Every wanted conversation (default: all) through a fresh in-process memory-engine service,
    posted as ``stress`` has it (one of :data:`locomo.STRESSES`; None: a message Record a turn)."""
    import httpx

    from brainstore.api.app import create_app
    from brainstore.client import Client
    from brainstore.config import Config
    from brainstore.retrieval.embedder import load_embedder
    from brainstore.service import Service
    from brainstore.store.memory import MemoryStore

    conversations = load_conversations()
    if wanted:
        conversations = [c for c in conversations if c.sample_id in wanted]
    if not conversations:
        return []
    observations = load_observations(conversations)
    service = Service(MemoryStore(), config=Config(engine="memory", rate_limit_per_minute=0))
    service.start()
    try:
        client = Client("http://bench/v1", KEY, transport=httpx.WSGITransport(app=create_app(service)))
        return run(client, conversations, observations, load_embedder(), examples=examples, stress=stress)
    finally:
        service.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--conversations", help="comma-separated sample ids, or 'tuning' / 'held-out' (default: all)"
    )
    parser.add_argument(
        "--examples", type=int, default=0, help="print this many misses and misattributions per conversation"
    )
    parser.add_argument("--stress", choices=STRESSES, default=None, help="post the turns as this stress of locomo.py has it")
    args = parser.parse_args(argv)
    wanted: Sequence[str] | None = None
    if args.conversations == "tuning":
        wanted = TUNING
    elif args.conversations == "held-out":
        wanted = HELD_OUT
    elif args.conversations:
        wanted = args.conversations.split(",")
    rows = measure(wanted, examples=args.examples, stress=args.stress)
    if not rows:
        print("LoCoMo data not present", file=sys.stderr)
        return 1
    print(table(rows))
    for r in rows:
        for text in r.misses:
            print(f"{r.sample_id} miss: {text}")
        for text in r.wrong:
            print(f"{r.sample_id} misattributed: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
