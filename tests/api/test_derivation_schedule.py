"""How derivation schedules long work: a long document's extraction runs off the worker, so another
tenant's short Record is derived meanwhile, and the document is derived once it is read."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from brainstore.api.app import create_app
from brainstore.derive import Assertion, RuleExtractor, SourceText, default_extractor
from brainstore.retrieval.embedder import BACKGROUND_NICE, Embedder
from brainstore.service import Service
from brainstore.service import derivation as derivation_module
from brainstore.service import service as service_module
from brainstore.service.derivation import APPLY_ATTEMPTS, BATCH_RECORDS, LONG_TEXT_CHARS, READER_ENDINGS
from tests.conftest import KEY, OTHER_PROJECT_KEY, Api
from tests.reopen import Engine, reopenable_engine  # noqa: F401  (the fixture "engine")


class HeldLongTexts:
    """The default extractor, except that a long text waits until the test lets it go."""

    def __init__(self) -> None:
        self.inner = default_extractor()
        self.name = self.inner.name
        self.started, self.release = threading.Event(), threading.Event()

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if len(source.text) >= LONG_TEXT_CHARS:
            self.started.set()
            assert self.release.wait(60)
        return self.inner.extract(source, self_name=self_name)


def status(api: Api, brain: str, record: str) -> str:
    response = api.get(f"/brains/{brain}/records/{record}")
    assert response.status == 200, response.body
    value: str = response.body["status"]
    return value


def wait_for(api: Api, brain: str, record: str, wanted: str = "ready", timeout: float = 60) -> bool:
    """Polls less often as it waits, so that a long wait stays within the key's rate limit."""
    deadline = time.monotonic() + timeout
    pause = 0.02
    while time.monotonic() < deadline:
        if status(api, brain, record) == wanted:
            return True
        time.sleep(pause)
        pause = min(pause * 1.5, 0.25)
    return False


def two_tenants(service: Service) -> tuple[Api, Api]:
    """Two projects on one service: a bulk tenant with the Brain "docs", a quiet one with "notes"."""
    app = create_app(service)
    bulk, quiet = Api(app, KEY), Api(app, OTHER_PROJECT_KEY)
    bulk.brain("docs")
    quiet.brain("notes")
    return bulk, quiet


PARAGRAPH = "Alice moved to Lisbon in March and works at a bakery near the river. "
LONG = PARAGRAPH * (LONG_TEXT_CHARS // len(PARAGRAPH) + 1)


# Each shape's source text is long, wherever its words are: a Record whose length derivation misjudged
# as a turn's went to the express lane and was read there, holding up every other tenant's short Records.
@pytest.mark.parametrize(
    "content",
    [
        pytest.param(LONG, id="document"),
        pytest.param({"kind": "event", "name": LONG}, id="event-name"),
    ],
)
def test_a_short_record_is_derived_while_another_tenants_long_document_is_still_read(
    engine: Engine, content: Any
) -> None:
    extractor = HeldLongTexts()
    service = engine.open(extractor)  # type: ignore[arg-type]
    bulk, quiet = two_tenants(service)
    document = bulk.remember("docs", content).body["id"]
    assert extractor.started.wait(30)  # the document is being read, and stays so until released
    short = quiet.remember("notes", "I had tea with Sam today.").body["id"]
    try:
        assert wait_for(quiet, "notes", short, timeout=20)
        assert status(bulk, "docs", document) == "processing"
    finally:
        extractor.release.set()
    assert wait_for(bulk, "docs", document)
    assert service.wait_idle()
    memories = bulk.get("/brains/docs/memories", params={"limit": "10"}).body["data"]
    assert any("Lisbon" in m["statement"] for m in memories)


def test_the_rules_read_a_long_document_in_a_process_of_their_own(engine: Engine) -> None:
    service = engine.open()  # the default extractor: pure Python, so off the GIL the API threads share
    app = create_app(service)
    api = Api(app, KEY)
    api.brain("docs")
    paragraph = "Alice moved to Lisbon in March and works at a bakery near the river. "
    document = api.remember("docs", paragraph * (LONG_TEXT_CHARS // len(paragraph) + 1)).body["id"]
    assert wait_for(api, "docs", document, timeout=120)
    reader = service.derivation._reader
    assert reader is not None
    child = reader._process
    assert child is not None and child.pid != os.getpid()
    memories = api.get("/brains/docs/memories", params={"limit": "10"}).body["data"]
    assert any("Lisbon" in m["statement"] for m in memories)

    # Its process killed (out of memory, say): the next long text gets a new one and is derived.
    child.kill()
    child.join(10)
    other = paragraph.replace("Lisbon", "Porto")
    second = api.remember("docs", other * (LONG_TEXT_CHARS // len(other) + 1)).body["id"]
    assert wait_for(api, "docs", second, timeout=120)
    memories = api.get("/brains/docs/memories", params={"limit": "50"}).body["data"]
    assert any("Porto" in m["statement"] for m in memories)


class RulesKilledByPoison(RuleExtractor):
    """The offline rules, except that reading a text with POISON in it kills the process reading it, and
    one with GREEDY in it asks for 4 GiB (only ever in a child: the test's own process never reads them)."""

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if multiprocessing.parent_process() is not None:
            if "POISON" in source.text:
                os.kill(os.getpid(), signal.SIGKILL)
            if "GREEDY" in source.text:
                assert bytearray(4 << 30)
        return super().extract(source, self_name=self_name)


def test_a_text_that_kills_the_process_reading_it_fails_after_a_few_tries_and_the_others_are_read(
    engine: Engine,
) -> None:
    service = engine.open(RulesKilledByPoison())
    bulk, quiet = two_tenants(service)
    poison = bulk.remember("docs", "POISON. " + LONG).body["id"]
    innocent = quiet.remember("notes", LONG.replace("Lisbon", "Porto")).body["id"]
    assert wait_for(quiet, "notes", innocent, timeout=120)
    assert wait_for(bulk, "docs", poison, wanted="failed", timeout=120)
    error = bulk.get(f"/brains/docs/records/{poison}").body["error"]
    assert error["code"] == "extraction_failed"
    assert f"ended the process reading it {READER_ENDINGS} times" in error["message"]
    assert "killed by signal 9" in error["message"]
    after = bulk.remember("docs", LONG.replace("Lisbon", "Faro")).body["id"]  # a new process reads it
    assert wait_for(bulk, "docs", after, timeout=120)


def test_a_text_that_needs_more_memory_than_the_reader_may_take_fails_at_once(engine: Engine) -> None:
    service = engine.open(RulesKilledByPoison())
    api = Api(create_app(service), KEY)
    api.brain("docs")
    greedy = api.remember("docs", "GREEDY. " + LONG).body["id"]
    assert wait_for(api, "docs", greedy, wanted="failed", timeout=60)
    error = api.get(f"/brains/docs/records/{greedy}").body["error"]
    assert error["code"] == "extraction_failed" and error["message"].startswith("MemoryError")
    reader = service.derivation._reader
    assert reader is not None and reader._process is not None and reader._process.is_alive()  # not ended


def test_what_a_source_says_is_held_unless_it_or_its_brain_was_forgotten_while_it_was_read(engine: Engine) -> None:
    from datetime import UTC, datetime

    from brainstore.derive.extract import source_text
    from brainstore.service.derivation import FORGETS_KEPT

    derivation = engine.open(default_extractor()).derivation
    content = {"kind": "message", "text": "Alice bought a bicycle in Zanzibar.", "speaker": "Alice"}
    text = source_text(content, self_name=None, occurred_at=datetime(2024, 5, 1, tzinfo=UTC))

    def held_after(*forgets: tuple[str, str | None]) -> bool:
        derivation.forgotten("brn_1")  # nothing of it held
        before = derivation._forget_mark()  # as _read_for_rederive takes it, before the source
        for brain_uid, record_id in forgets:
            derivation.forgotten(brain_uid, record_id)
        said = derivation._said_by("brn_1", "rec_1", 1, text, None, before)
        assert said  # read either way
        return ("brn_1", "rec_1") in derivation._said

    assert held_after()
    assert held_after(("brn_1", "rec_2"), ("brn_2", "rec_1"), ("brn_2", None))  # others' forgets
    assert not held_after(("brn_1", "rec_1"))
    assert not held_after(("brn_2", "rec_9"), ("brn_1", None))
    derivation.forgotten("brn_1", "rec_1")
    assert held_after()
    assert not held_after(*[("brn_2", f"rec_{n}") for n in range(FORGETS_KEPT + 1)])  # too many to tell


class HeldWhenArmed:
    """The default extractor; counts its reads of long texts, and holds one while armed until released."""

    def __init__(self) -> None:
        self.inner = default_extractor()
        self.name = self.inner.name
        self.long_reads = 0
        self.armed, self.started, self.release = threading.Event(), threading.Event(), threading.Event()

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if len(source.text) >= LONG_TEXT_CHARS:
            self.long_reads += 1
            if self.armed.is_set():
                self.started.set()
                assert self.release.wait(60)
        return self.inner.extract(source, self_name=self_name)


def test_other_tenants_forgets_past_those_kept_do_not_throw_away_a_reading_apart(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forget log of FORGETS_KEPT, every tenant's: past it, any reading was taken as forgotten. Another
    tenant's 1,024 DELETEs (1.2 s on the memory store) while a document was read apart for the Memories
    left to it threw that reading away, and kept the readings of the batches after it from being held:
    here (a log of 4, 6 Brains forgotten) the document was read 7 times instead of once."""
    from brainstore.service import derivation as derivation_module

    monkeypatch.setattr(derivation_module, "FORGETS_KEPT", 4)
    extractor = HeldWhenArmed()
    service = engine.open(extractor)  # type: ignore[arg-type]
    app = create_app(service)
    quiet, flood = Api(app, KEY), Api(app, OTHER_PROJECT_KEY)
    quiet.brain("docs")
    document = " ".join(f"Alice bought a bicycle number {n} in Zanzibar." for n in range(LONG_TEXT_CHARS // 40))
    first, _ = (quiet.remember("docs", document).body["id"] for _ in range(2))
    for n in range(6):
        flood.brain(f"b{n}")
    assert service.wait_idle(timeout=60)
    reads = extractor.long_reads
    extractor.armed.set()
    assert quiet.delete(f"/brains/docs/records/{first}").body["rederiving"]["memories"] > 0
    assert extractor.started.wait(30)
    extractor.armed.clear()
    for n in range(6):
        assert flood.delete(f"/brains/b{n}").status == 200
    extractor.release.set()
    assert service.wait_idle(timeout=60)
    assert extractor.long_reads - reads == 1
    # and what a Record forgotten meanwhile said is still not held, past the log as before it
    uid = service.store.get_brain("test:acme", "docs").uid  # type: ignore[union-attr]
    assert all(record_id != first for brain_uid, record_id in service.derivation._said if brain_uid == uid)


def test_one_tenant_reading_many_sources_does_not_push_out_another_tenants_reading(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What re-derivation sources say was held in one LRU for every tenant: one re-deriving a fact in each
    of 300 padded Records (their copies forgotten) pushed out another's document between its batches,
    which was read again for 6 of its 10 batches. Over the bound the namespace holding the most gives up
    its least recently used."""
    from datetime import UTC, datetime

    from brainstore.derive.extract import source_text
    from brainstore.service import derivation as derivation_module

    derivation = engine.open(default_extractor()).derivation
    monkeypatch.setattr(derivation, "namespace_of", {"brn_quiet": "test:acme", "brn_flood": "test:globex"}.get)

    def text(sentence: str) -> SourceText:
        return source_text({"kind": "message", "text": sentence}, self_name=None, occurred_at=datetime(2024, 5, 1, tzinfo=UTC))

    quiet = text("Alice bought a bicycle in Zanzibar. " * 10)
    monkeypatch.setattr(derivation_module, "SAID_HELD_CHARS", 3 * len(quiet.text))
    derivation._said_by("brn_quiet", "rec_doc", 1, quiet, None, derivation._forget_mark())
    for n in range(50):
        flood = text(f"Bob bought a car in Quito number {n}. The weather stayed mild all day.")
        derivation._said_by("brn_flood", f"rec_{n}", 1, flood, None, derivation._forget_mark())
    assert ("brn_quiet", "rec_doc") in derivation._said
    assert ("brn_flood", "rec_49") in derivation._said and ("brn_flood", "rec_0") not in derivation._said
    assert sum(chars for _, chars, _ in derivation._said.values()) <= 3 * len(quiet.text)


def test_memories_stated_by_more_records_than_they_cite_read_their_supporters_once_a_batch(engine: Engine) -> None:
    """Forgetting a document that each of its Memories cites, among more copies than they can cite:
    each Memory's supporters were looked up alone, a scan of the Brain's Record events (11 ms apiece
    on a Brain of 17,600 Records), before the transaction and again in it."""
    from brainstore.service.planner import MAX_CITATIONS

    service = engine.open(default_extractor())
    api = Api(create_app(service), KEY)
    api.brain("docs")
    text = " ".join(f"Alice bought a bicycle number {n} in Zanzibar." for n in range(70))
    sent = [api.remember("docs", text).body["id"] for _ in range(MAX_CITATIONS + 2)]
    assert service.wait_idle(timeout=60)
    stated = len(api.get("/brains/docs/memories", params={"limit": "500"}).body["data"])
    assert stated > BATCH_RECORDS
    lookups: list[int] = []
    real = service.store.records_supporting
    service.store.records_supporting = lambda uid, ids, limit: lookups.append(len(ids)) or real(uid, ids, limit)  # type: ignore[method-assign]
    assert api.delete(f"/brains/docs/records/{sent[0]}").body["rederiving"]["memories"] == stated
    assert service.wait_idle(timeout=60)
    assert sum(lookups) == 2 * stated and len(lookups) <= 2 * (stated // BATCH_RECORDS + 1), lookups
    memories = api.get("/brains/docs/memories", params={"limit": "500"}).body["data"]
    assert len(memories) == stated
    assert all([c["record_id"] for c in m["citations"]] == sent[1 : MAX_CITATIONS + 1] for m in memories)


class NoteTheLongTexts:
    """The default extractor, noting the long texts in the order it reads them (by their first
    sentence); the first waits until the test lets it go."""

    def __init__(self) -> None:
        self.inner = default_extractor()
        self.name = self.inner.name
        self.read: list[str] = []
        self.started, self.release = threading.Event(), threading.Event()

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if len(source.text) >= LONG_TEXT_CHARS:
            self.read.append(source.text.split(".")[0])
            self.started.set()
            assert self.release.wait(60)
        return self.inner.extract(source, self_name=self_name)


def test_long_texts_are_read_namespaces_in_turn(engine: Engine) -> None:
    extractor = NoteTheLongTexts()
    service = engine.open(extractor)  # type: ignore[arg-type]
    bulk, quiet = two_tenants(service)
    long_texts = service.derivation._long_texts
    assert long_texts is not None

    def waiting(count: int) -> bool:
        deadline = time.monotonic() + 30
        while sum(len(queue) for queue in long_texts._queues.values()) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    ids = [bulk.remember("docs", f"Bulk {i}. " + LONG).body["id"] for i in range(4)]
    try:
        assert extractor.started.wait(30)
        assert waiting(3)  # one read, three waiting behind it
        late = quiet.remember("notes", "Quiet. " + LONG).body["id"]
        assert waiting(4)
    finally:
        extractor.release.set()
    assert all(wait_for(bulk, "docs", record) for record in ids)
    assert wait_for(quiet, "notes", late)
    assert extractor.read.index("Quiet") == 2  # not behind all of the other tenant's texts: the next turn
    assert len(extractor.read) == 5


class WrappedEmbedder:
    """The service's embedder, passed through: the tests' embedders below change one thing of it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def backlog(service: Service, api: Api, brain: str, count: int = BATCH_RECORDS + BATCH_RECORDS // 4) -> list[str]:
    """``count`` notes posted while derivation is stopped, then started: a backlog, queued at once (by
    default more than one batch holds)."""
    service.derivation.stop()  # the Records wait in the store, and start() queues them together
    ids = [api.remember(brain, f"Note {i}: the tomatoes in bed {i} need water.").body["id"] for i in range(count)]
    service.derivation.start()
    return ids


class NoteTheCalls(WrappedEmbedder):
    """The service's embedder, noting the texts of each call."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_a_batch_over_several_brains_writes_each_brains_memories_under_it(engine: Engine) -> None:
    service = engine.open()
    api = Api(create_app(service), KEY)
    towns = {"north": "Porto", "south": "Faro"}
    for brain in towns:
        api.brain(brain)
    embedder = NoteTheCalls(service.evidence.embedder)
    service.evidence._embedder = embedder
    service.derivation.stop()  # read back together at the start: one batch, not the express lane
    ids = {brain: api.remember(brain, f"Alice moved to {town} in March.").body["id"] for brain, town in towns.items()}
    service.derivation.start()
    assert all(wait_for(api, brain, record) for brain, record in ids.items())
    assert any(all(any(town in text for text in call) for town in towns.values()) for call in embedder.calls)
    for brain, town in towns.items():
        statements = [m["statement"] for m in api.get(f"/brains/{brain}/memories").body["data"]]
        assert any(town in statement for statement in statements), statements
        assert not any(other in statement for statement in statements for other in towns.values() if other != town)


class BacklogEmbeddingHeld(WrappedEmbedder):
    """An embedder whose calls for texts holding ``marker`` wait until the test lets them go."""

    def __init__(self, inner: Embedder, marker: str) -> None:
        super().__init__(inner)
        self.marker = marker
        self.started, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.marker in text for text in texts):
            self.started.set()
            assert self.release.wait(60)
        return self.inner.embed(texts)


def test_a_light_tenants_record_is_derived_while_another_tenants_backlog_is_embedded(engine: Engine) -> None:
    service = engine.open()
    app = create_app(service)
    bulk, quiet = Api(app, KEY), Api(app, OTHER_PROJECT_KEY)
    bulk.brain("notes")
    quiet.brain("notes")
    embedder = BacklogEmbeddingHeld(service.evidence.embedder, "tomatoes")
    service.evidence._embedder = embedder
    ids = backlog(service, bulk, "notes")
    assert embedder.started.wait(30)  # a batch of the backlog is being embedded, and stays so
    try:
        short = quiet.remember("notes", "I had tea with Sam today.").body["id"]
        assert wait_for(quiet, "notes", short, timeout=20)
        assert all(status(bulk, "notes", record) == "processing" for record in ids)
    finally:
        embedder.release.set()
    assert all(wait_for(bulk, "notes", record) for record in ids)
    assert service.wait_idle()


class NoteThePreparation(WrappedEmbedder):
    """An embedder noting whether derivation prepared its passage path."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.prepared = threading.Event()

    def prepare_bulk(self) -> None:
        self.prepared.set()


def test_derivation_prepares_the_embedder_before_the_first_record(engine: Engine) -> None:
    service = engine.open()
    service.derivation.stop()
    embedder = NoteThePreparation(service.evidence.embedder)
    service.evidence._embedder = embedder
    service.derivation.start()
    assert embedder.prepared.wait(10)  # no Record was posted


class ReadingLog:
    """The default extractor, noting every text it reads."""

    def __init__(self) -> None:
        self.inner = default_extractor()
        self.name = self.inner.name
        self.read: list[str] = []

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        self.read.append(source.text)
        return self.inner.extract(source, self_name=self_name)


class FirstEmbeddingWaits(WrappedEmbedder):
    """An embedder whose first call waits (10 s at most) until the extractor has read a text that
    call does not embed: a worker that reads the next batch while one embeds lets it go at once."""

    def __init__(self, inner: Embedder, extractor: ReadingLog) -> None:
        super().__init__(inner)
        self.extractor = extractor
        self.calls = 0
        self.next_batch_read_meanwhile = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not self.next_batch_read_meanwhile:
                self.next_batch_read_meanwhile = any(
                    not any(read in text for text in texts) for read in list(self.extractor.read)
                )
                time.sleep(0.01)
        return self.inner.embed(texts)


def test_the_next_batch_is_read_while_one_is_embedded(engine: Engine) -> None:
    extractor = ReadingLog()
    service = engine.open(extractor)  # type: ignore[arg-type]
    api = Api(create_app(service), KEY)
    api.brain("notes")
    embedder = FirstEmbeddingWaits(service.evidence.embedder, extractor)
    service.evidence._embedder = embedder
    ids = backlog(service, api, "notes")
    assert all(wait_for(api, "notes", record) for record in ids)
    assert embedder.next_batch_read_meanwhile


class FirstEmbeddingWaitsForTheNext(WrappedEmbedder):
    """An embedder whose first call waits (10 s at most) until a second call has begun: a worker that
    queues the next batch's embedding behind the one in progress lets it go at once."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.second_call = threading.Event()
        self.second_began_during_the_first = False
        self.calls = 0
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first:
            self.second_began_during_the_first = self.second_call.wait(10)
        else:
            self.second_call.set()
        return self.inner.embed(texts)


def test_the_next_batch_is_embedded_behind_the_one_in_progress(engine: Engine) -> None:
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("notes")
    embedder = FirstEmbeddingWaitsForTheNext(service.evidence.embedder)
    service.evidence._embedder = embedder
    ids = backlog(service, api, "notes")
    assert all(wait_for(api, "notes", record) for record in ids)
    assert embedder.second_began_during_the_first


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


class NoteThePriority(WrappedEmbedder):
    """An embedder noting the nice value of the thread that runs each call."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.bulk: list[int] = []
        self.questions: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.bulk.append(_nice())
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.questions.append(_nice())
        return self.inner.embed_query(text)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux gives each thread its own nice value")
def test_a_backlog_embeds_at_background_priority_and_a_question_or_a_light_record_at_the_requests(
    engine: Engine,
) -> None:
    if _nice() != 0:
        pytest.skip("the test process must run at the default priority")
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("notes")
    embedder = NoteThePriority(service.evidence.embedder)
    service.evidence._embedder = embedder
    ids = backlog(service, api, "notes")
    assert all(wait_for(api, "notes", record) for record in ids)
    assert embedder.bulk and set(embedder.bulk) == {BACKGROUND_NICE}
    assert api.post("/brains/notes/context", {"query": "Which bed needs water?"}).status == 200
    assert embedder.questions == [0]
    embedder.bulk.clear()
    one = api.remember("notes", "The basil needs water too.").body["id"]  # the whole backlog: light
    assert wait_for(api, "notes", one)
    assert embedder.bulk == [0]
    reader = service.derivation._reader_process()  # the process that reads long documents
    assert reader is not None
    try:
        assert reader.call(os.getpriority, os.PRIO_PROCESS, 0) == BACKGROUND_NICE
    finally:
        reader.close()


class HeldOnce(NoteTheCalls):
    """Notes each call; the first call with ``marker`` in it waits until the test lets it go."""

    def __init__(self, inner: Embedder, marker: str) -> None:
        super().__init__(inner)
        self.marker = marker
        self.started, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.marker in text for text in texts) and not self.started.is_set():
            self.started.set()
            assert self.release.wait(60)
        return super().embed(texts)


@pytest.mark.parametrize("forget", ["record", "brain"])
def test_a_long_document_forgotten_while_it_is_embedded_is_embedded_no_further(engine: Engine, forget: str) -> None:
    """Its job leaves the schedule with its text: it was embedded slice by slice to the end (3-6 s of
    both cores for 150,000 characters) and only then skipped."""
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("docs")
    embedder = HeldOnce(service.evidence.embedder, "Lisbon")
    service.evidence._embedder = embedder
    document = api.remember("docs", LONG * 4).body["id"]  # 33 slices
    assert embedder.started.wait(60)
    try:
        assert api.delete(f"/brains/docs/records/{document}" if forget == "record" else "/brains/docs").status == 200
    finally:
        embedder.release.set()
    assert service.wait_idle()
    slices = [call for call in embedder.calls if any("Lisbon" in text for text in call)]
    assert len(slices) <= 2, len(slices)  # the one held, and at most the next already under way
    assert api.get(f"/brains/docs/records/{document}").status == 404
    assert not service.derivation._forgotten  # its note went with the job


class CountsItsReads(RuleExtractor):
    """Counts the texts it reads that hold ``marker``."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker, self.reads = marker, 0

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if self.marker in source.text:
            self.reads += 1
        return super().extract(source, self_name=self_name)


def test_memories_left_to_one_source_are_rederived_reading_it_once(engine: Engine) -> None:
    """Forgetting one of two copies of a document leaves its Memories pending re-derivation from the
    other: each was re-read once for each Memory, inside the transaction that held the write lock, then
    once a batch before it; now once."""
    extractor = CountsItsReads("Zanzibar")
    service = engine.open(extractor)
    api = Api(create_app(service), KEY)
    api.brain("docs")
    text = " ".join(f"Alice bought a bicycle number {n} in Zanzibar." for n in range(90))
    first, second = (api.remember("docs", text).body["id"] for _ in range(2))
    assert service.wait_idle()
    pending = len(api.get("/brains/docs/memories", params={"limit": "500"}).body["data"])
    assert pending >= 2 * BATCH_RECORDS // 2  # enough Memories for more than one batch of re-derivations
    reads, memory_reads = extractor.reads, []
    for name in ("memory", "memories"):
        real = getattr(service.store, name)
        setattr(service.store, name, lambda *a, real=real, name=name: memory_reads.append(name) or real(*a))
    receipt = api.delete(f"/brains/docs/records/{first}").body
    assert receipt["rederiving"]["memories"] == pending
    assert service.wait_idle()
    assert pending > BATCH_RECORDS and extractor.reads - reads == 1  # once for every batch
    # and each batch's Memories are read in one go (before the transaction, and in it), not each alone
    # (5 ms apiece on DuckDB)
    assert "memory" not in memory_reads and len(memory_reads) <= 2 * (pending // BATCH_RECORDS + 1), memory_reads
    memories = api.get("/brains/docs/memories", params={"limit": "500"}).body["data"]
    assert len(memories) == pending and all({c["record_id"] for c in m["citations"]} == {second} for m in memories)
    # what it says is held for the next batches until it is forgotten too
    assert "Zanzibar" in repr(service.derivation._said)
    api.delete(f"/brains/docs/records/{second}")
    assert "Zanzibar" not in repr(service.derivation._said)


def test_the_namespaces_held_for_scheduling_are_bounded(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Derivation schedules by namespace, which the service held for every Brain it ever derived: a key
    making Brain after Brain grew it without bound."""
    monkeypatch.setattr(service_module, "NAMESPACES_HELD", 2)
    service = engine.open()
    app = create_app(service)
    tenants = [(Api(app, KEY), "test:acme"), (Api(app, OTHER_PROJECT_KEY), "test:globex")]
    made = []
    for i in range(5):
        api, namespace = tenants[i % 2]
        api.brain(f"b{i}")
        record = api.remember(f"b{i}", f"Note {i}: the parcel went to depot {i}.").body["id"]
        made.append((api, namespace, f"b{i}", record))
    assert all(wait_for(api, brain, record) for api, _, brain, record in made)
    assert len(service._namespaces) <= 2
    held = [service.store.get_brain(namespace, brain) for _, namespace, brain, _ in made]
    assert [service._namespace_of(b.uid) for b in held if b is not None] == [n for _, n, _, _ in made]
    assert len(service._namespaces) <= 2


class HeldLongTextsOnceArmed(HeldLongTexts):
    """The default extractor; once ``armed`` is set, a long text waits until the test lets it go, noting
    the thread that reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = threading.Event()
        self.threads: list[str] = []

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if not self.armed.is_set():
            return self.inner.extract(source, self_name=self_name)
        if len(source.text) >= LONG_TEXT_CHARS:
            self.threads.append(threading.current_thread().name)
        return super().extract(source, self_name=self_name)


@pytest.mark.parametrize("quiet_backlog", [1, 6], ids=["express", "batched"])
def test_a_short_record_is_derived_while_another_tenants_long_source_is_read_again(
    engine: Engine, quiet_backlog: int
) -> None:
    """A Memory stated by a long document and by a short Record loses the short one: re-deriving it
    reads the document again. It was read on the thread deriving the batch (the express lane for a
    namespace whose only work it is): another tenant's short Records waited until it was read (3-4.5 s
    for 200,000 characters), as they do not for a long Record."""
    extractor = HeldLongTextsOnceArmed()
    service = engine.open(extractor)  # type: ignore[arg-type]
    bulk, quiet = two_tenants(service)
    bulk.remember("docs", LONG)
    short = bulk.remember("docs", PARAGRAPH).body["id"]
    assert service.wait_idle(timeout=60)
    extractor.armed.set()
    assert bulk.delete(f"/brains/docs/records/{short}").body["rederiving"]["memories"] >= 1
    try:
        assert extractor.started.wait(30)  # the document is being read again, and stays so until released
        sent = [quiet.remember("notes", f"I had tea with Sam on day {n}.").body["id"] for n in range(quiet_backlog)]
        assert all(wait_for(quiet, "notes", record, timeout=10) for record in sent)
    finally:
        extractor.release.set()
    assert service.wait_idle(timeout=60)
    assert extractor.threads and all(name.startswith("brainstore-derivation-long") for name in extractor.threads)
    memories = bulk.get("/brains/docs/memories", params={"limit": "50"}).body["data"]
    assert any("Lisbon" in m["statement"] for m in memories)
    assert all(c["record_id"] != short for m in memories for c in m["citations"])


def test_what_a_source_read_apart_said_is_not_held_with_its_job_once_the_source_is_forgotten(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Memory's long source, read apart, goes back to its job until the job's transaction: a forget of
    that source meanwhile drops what it said from the job at its next pass, not only from the batch."""
    service = engine.open()
    bulk, _ = two_tenants(service)
    long_id = bulk.remember("docs", LONG).body["id"]
    short = bulk.remember("docs", PARAGRAPH).body["id"]
    assert service.wait_idle(timeout=60)
    derivation = service.derivation
    read_for_rederive = derivation._read_for_rederive
    held_after: list[bool] = []

    def a_forget_logged_meanwhile(jobs: list[Any]) -> set[int]:
        carrying = [job for job in jobs if long_id in job.said_apart]
        if carrying and not held_after:
            derivation.forgotten(carrying[0].brain_uid, long_id)  # as a forget committing now logs it
        sent = read_for_rederive(jobs)
        if carrying and not held_after:
            held_after.extend(long_id in job.said_apart for job in carrying)
        return sent

    monkeypatch.setattr(derivation, "_read_for_rederive", a_forget_logged_meanwhile)
    assert bulk.delete(f"/brains/docs/records/{short}").body["rederiving"]["memories"] >= 1
    assert service.wait_idle(timeout=60)
    assert held_after and not any(held_after)


class HeldBrain:
    """Derivation's apply finds the Brain ``brain_id`` held by another transaction (on PostgreSQL another
    session would hold its row; reported here, on every engine) while ``holding`` is set, ``times`` at most;
    ``reported`` is set once it was."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, service: Service, brain_id: str, times: int | None = None) -> None:
        self.store = service.derivation.store
        self.brain_id = brain_id
        self.left = times
        self.holding, self.reported = threading.Event(), threading.Event()
        self.holding.set()
        self.try_lock_brains = self.store.try_lock_brains
        monkeypatch.setattr(self.store, "try_lock_brains", self.nowait)

    def nowait(self, brain_uids: Sequence[str], **waiting: float) -> set[str]:
        held = {uid for uid in brain_uids if (brain := self.store.brain_by_uid(uid)) is not None and brain.id == self.brain_id}
        if not (held and self.holding.is_set() and self.left != 0):
            return self.try_lock_brains(brain_uids, **waiting)
        if self.left is not None:
            self.left -= 1
        self.reported.set()
        return held | self.try_lock_brains([uid for uid in brain_uids if uid not in held], **waiting)


def test_a_held_brain_is_parked_whole_and_its_records_are_applied_in_the_order_they_came(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Brain another transaction holds at the apply (on PostgreSQL another session; reported held here,
    on every engine) parks its Records, and a Record of it that comes meanwhile, or once the hold ended
    but before the parked ones were tried again, waits behind them: a Memory they all state cites them
    in the order they came. A Record set aside alone was applied after the Record that came behind it,
    and which Records a Memory cites first changed."""
    monkeypatch.setattr(derivation_module, "HELD_DELAYS", (1.0,))
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("held")
    hold = HeldBrain(monkeypatch, service, "held")
    sentence = "Alice moved to Porto in March."
    sent = [api.remember("held", sentence).body["id"] for _ in range(2)]
    assert hold.reported.wait(30)
    sent.append(api.remember("held", sentence).body["id"])  # while the Brain is held
    time.sleep(0.3)
    hold.holding.clear()
    sent.append(api.remember("held", sentence).body["id"])  # held no longer, its first Records still parked
    for record_id in sent:
        assert wait_for(api, "held", record_id)
    assert service.wait_idle()
    memories = api.get("/brains/held/memories").body["data"]
    cited = [m for m in memories if "Porto" in m["statement"]]
    assert len(cited) == 1, memories
    assert [c["record_id"] for c in cited[0]["citations"]] == sent


def test_a_record_whose_brain_another_transaction_holds_waits_without_failing_or_holding_up_another(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Brain held at the apply sends its Records to wait, not to fail: held more times than
    APPLY_ATTEMPTS, it is still derived, once, after the others."""
    monkeypatch.setattr(derivation_module, "HELD_DELAYS", (0.05,))
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("held")
    api.brain("free")
    hold = HeldBrain(monkeypatch, service, "held", times=APPLY_ATTEMPTS + 2)
    service.derivation.stop()  # read back together at the start: one batch
    towns = {"held": "Porto", "free": "Faro"}
    ids = {brain: api.remember(brain, f"Alice moved to {town} in March.").body["id"] for brain, town in towns.items()}
    service.derivation.start()
    assert wait_for(api, "free", ids["free"])
    assert wait_for(api, "held", ids["held"])
    assert hold.left == 0
    assert service.wait_idle()


def test_erasing_a_parked_record_or_brain_takes_its_parked_work_with_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parked jobs hold a Record's text, assertions and vectors: a Record erased while its Brain is
    parked leaves none of it behind (the Brain's other Records are still derived, in order), and an
    erased Brain leaves no parked job at all, nor anything for the service to wait for."""
    monkeypatch.setattr(derivation_module, "HELD_DELAYS", (0.1,))
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("held")
    hold = HeldBrain(monkeypatch, service, "held")

    def parked() -> list[str]:
        """The parked jobs, between two tries (a try takes them out meanwhile)."""
        while True:
            with service.derivation._idle:
                if not any(p.returning for p in service.derivation._parked.values()):
                    return [job.item_id for p in service.derivation._parked.values() for job in p.jobs]
            time.sleep(0.005)

    def wait_parked(count: int) -> list[str]:
        deadline = time.monotonic() + 30
        while len(found := parked()) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return found

    erased, kept = (api.remember("held", f"Alice moved to {town} in March.").body["id"] for town in ("Porto", "Faro"))
    assert wait_parked(2) == [erased, kept]
    assert api.delete(f"/brains/held/records/{erased}").status == 200
    assert parked() == [kept]
    hold.holding.clear()
    assert wait_for(api, "held", kept)
    assert api.get(f"/brains/held/records/{erased}").status == 404
    hold.holding.set()
    api.remember("held", "Bob moved to Braga in May.")
    assert len(wait_parked(1)) == 1
    assert api.delete("/brains/held").status == 200
    assert parked() == [] and not service.derivation._parked
    assert service.wait_idle(timeout=5)


def test_a_stop_leaves_parked_records_processing_and_a_start_derives_them(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(derivation_module, "HELD_DELAYS", (0.1,))
    service = engine.open()
    api = Api(create_app(service), KEY)
    api.brain("held")
    hold = HeldBrain(monkeypatch, service, "held")
    record_id = api.remember("held", "Alice moved to Porto in March.").body["id"]
    assert hold.reported.wait(30)
    service.derivation.stop()
    assert not service.derivation._parked
    assert status(api, "held", record_id) == "processing"
    hold.holding.clear()
    service.derivation.start()
    assert wait_for(api, "held", record_id)
    assert service.wait_idle()
