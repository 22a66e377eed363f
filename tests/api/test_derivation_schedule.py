"""How derivation schedules work: a long document's extraction runs off the worker, so another
tenant's short Record is derived meanwhile, and the document is derived once it is read; reading
ahead while a batch embeds never puts a newcomer behind the jobs read ahead."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from brainstore.api.app import create_app
from brainstore.config import Config
from brainstore.derive import Assertion, SourceText, default_extractor
from brainstore.service import Service
from brainstore.service.derivation import BATCH_CHARS, BATCH_RECORDS, LONG_TEXT_CHARS
from brainstore.store.memory import MemoryStore
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
    value: str = api.get(f"/brains/{brain}/records/{record}").body["status"]
    return value


def wait_for(api: Api, brain: str, record: str, wanted: str = "ready", timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if status(api, brain, record) == wanted:
            return True
        time.sleep(0.02)
    return False


def test_a_short_record_is_derived_while_another_tenants_long_document_is_still_read(engine: Engine) -> None:
    extractor = HeldLongTexts()
    service = engine.open(extractor)  # type: ignore[arg-type]
    app = create_app(service)
    bulk, quiet = Api(app, KEY), Api(app, OTHER_PROJECT_KEY)
    bulk.brain("docs")
    quiet.brain("notes")
    paragraph = "Alice moved to Lisbon in March and works at a bakery near the river. "
    document = bulk.remember("docs", paragraph * (LONG_TEXT_CHARS // len(paragraph) + 1)).body["id"]
    assert extractor.started.wait(30)  # the document is being read, and stays so until released
    short = quiet.remember("notes", "I had tea with Sam today.").body["id"]
    try:
        assert wait_for(quiet, "notes", short)
        assert status(bulk, "docs", document) == "processing"
    finally:
        extractor.release.set()
    assert wait_for(bulk, "docs", document)
    assert service.wait_idle()
    memories = bulk.get("/brains/docs/memories", params={"limit": "10"}).body["data"]
    assert any("Lisbon" in m["statement"] for m in memories)


class HeldEmbeddings:
    """The default embedder, except that the first bulk embedding waits until the test lets it go;
    it remembers the texts of every bulk call."""

    def __init__(self) -> None:
        from brainstore.retrieval.embedder import load_embedder

        self.inner = load_embedder(None)
        self.model_name, self.dimension = self.inner.model_name, self.inner.dimension
        self.calls: list[list[str]] = []
        self.started, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            self.started.set()
            assert self.release.wait(60)
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


class HeldFirstTurn:
    """The default extractor, except that the first bulk turn waits until the test lets it go."""

    def __init__(self) -> None:
        self.inner = default_extractor()
        self.name = self.inner.name
        self.started, self.release = threading.Event(), threading.Event()

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if "Turn zero" in source.text:
            self.started.set()
            assert self.release.wait(60)
        return self.inner.extract(source, self_name=self_name)


def test_reading_ahead_does_not_cost_a_newcomer_its_turn(tmp_path: Path) -> None:
    """While a batch embeds, the worker reads the bulk tenant's next jobs ahead; a quiet tenant's
    Record that arrives meanwhile still goes in the very next batch, before them."""
    extractor, embeddings = HeldFirstTurn(), HeldEmbeddings()
    config = Config(engine="memory", data_dir=tmp_path)
    service = Service(MemoryStore(), config=config, extractor=extractor, embedder=embeddings)  # type: ignore[arg-type]
    service.start()
    try:
        app = create_app(service)
        bulk, quiet = Api(app, KEY), Api(app, OTHER_PROJECT_KEY)
        bulk.brain("load")
        quiet.brain("notes")
        first = bulk.remember("load", "Turn zero of the bulk load.").body["id"]
        assert extractor.started.wait(30)  # the first batch is being read, and stays so
        filler = " We walked along the river and talked about the weekend." * 4  # a batch's worth of text
        for n in range(1, 3 * BATCH_RECORDS):
            bulk.remember("load", f"Turn {n} of the bulk load.{filler}")
        extractor.release.set()
        assert embeddings.started.wait(30)  # the first batch embeds; the next bulk jobs are read ahead
        time.sleep(0.5)
        short = quiet.remember("notes", "I had tea with Sam today.").body["id"]
        embeddings.release.set()
        assert wait_for(quiet, "notes", short)
        assert wait_for(bulk, "load", first)
        assert service.wait_idle()
        assert sum(len(text) for text in embeddings.calls[1]) <= BATCH_CHARS
        assert any("I had tea with Sam today." in text for text in embeddings.calls[1]), embeddings.calls[1][:3]
    finally:
        extractor.release.set()
        embeddings.release.set()
        service.stop()
