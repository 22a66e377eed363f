"""How derivation schedules long work: a long document's extraction runs off the worker, so another
tenant's short Record is derived meanwhile, and the document is derived once it is read."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from brainstore.api.app import create_app
from brainstore.derive import Assertion, SourceText, default_extractor
from brainstore.service.derivation import LONG_TEXT_CHARS
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


def test_the_rules_read_a_long_document_in_a_process_of_their_own(engine: Engine) -> None:
    service = engine.open()  # the default extractor: pure Python, so off the GIL the API threads share
    app = create_app(service)
    api = Api(app, KEY)
    api.brain("docs")
    paragraph = "Alice moved to Lisbon in March and works at a bakery near the river. "
    document = api.remember("docs", paragraph * (LONG_TEXT_CHARS // len(paragraph) + 1)).body["id"]
    assert wait_for(api, "docs", document, timeout=120)
    executor = service.derivation._long_texts
    assert isinstance(executor, ProcessPoolExecutor)
    children = list(executor._processes.values())  # type: ignore[attr-defined]
    assert children and all(child.pid != os.getpid() for child in children)
    memories = api.get("/brains/docs/memories", params={"limit": "10"}).body["data"]
    assert any("Lisbon" in m["statement"] for m in memories)

    # Its process killed (out of memory, say): the next long text gets a new one and is derived.
    for child in children:
        child.kill()
        child.join(10)
    other = paragraph.replace("Lisbon", "Porto")
    second = api.remember("docs", other * (LONG_TEXT_CHARS // len(other) + 1)).body["id"]
    assert wait_for(api, "docs", second, timeout=120)
    memories = api.get("/brains/docs/memories", params={"limit": "50"}).body["data"]
    assert any("Porto" in m["statement"] for m in memories)
