"""The embedders: the offline ONNX default and the OpenAI-compatible hosted provider."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from brainstore.retrieval.embedder import (
    BACKGROUND_NICE,
    DEFAULT_MODEL_NAME,
    DEFAULT_MODEL_SHA256,
    EMBEDDING_API_KEY_ENV,
    Embedder,
    EmbedderUnavailable,
    OnnxEmbedder,
    OpenAICompatibleEmbedder,
    background_priority,
    load_embedder,
)

MIXED = [
    "Hi!",
    "I went hiking in the mountains with my sister last weekend and we saw a bear near the trail.",
    "ok",
    "",
    "My favourite food is sushi.",
    "The quarterly report shows revenue grew by twelve percent compared to last year, "
    "mostly because of the new subscription plan that launched in March and the lower churn.",
    "Caroline adopted a puppy named Max.",
    "What time is the meeting tomorrow?",
    "Ünïcödé and emoji 🎉 are fine too.",
    "Remember to buy milk.",
]


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    embedder = load_embedder("onnx")
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# ------------------------------------------------------------------------------------------- ONNX


def test_protocol_and_identity(onnx: OnnxEmbedder) -> None:
    assert isinstance(onnx, Embedder)
    assert onnx.model_name == DEFAULT_MODEL_NAME
    assert onnx.dimension == 384
    assert onnx.sha256 == DEFAULT_MODEL_SHA256
    assert onnx.threads == min(2, os.cpu_count() or 1)


def test_shape_dtype_and_normalization(onnx: OnnxEmbedder) -> None:
    vectors = onnx.embed(MIXED)
    assert vectors.shape == (len(MIXED), 384)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    query = onnx.embed_query("where did I go hiking?")
    assert query.shape == (384,)
    assert query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


def test_empty_input(onnx: OnnxEmbedder) -> None:
    for empty in ([], ()):
        out = onnx.embed(empty)
        assert out.shape == (0, 384)
        assert out.dtype == np.float32


def test_rejects_a_bare_string_and_non_strings(onnx: OnnxEmbedder) -> None:
    with pytest.raises(TypeError, match="embed_query"):
        onnx.embed("not a list")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        onnx.embed(["fine", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        onnx.embed_query(None)  # type: ignore[arg-type]


def test_semantics(onnx: OnnxEmbedder) -> None:
    cat, kitten, earnings, bread, loaf, weather = onnx.embed(
        [
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "The company's quarterly earnings beat expectations.",
            "I baked sourdough bread this morning.",
            "This morning I made a loaf of bread.",
            "Heavy rain is expected over the weekend.",
        ]
    )
    assert cos(cat, kitten) > cos(cat, earnings) + 0.3
    assert cos(cat, kitten) > cos(cat, bread)
    assert cos(bread, loaf) > max(cos(bread, earnings), cos(bread, weather), cos(bread, cat)) + 0.3
    query = onnx.embed_query("what pet does she have?")
    pet, food = onnx.embed(["Caroline adopted a puppy named Max.", "My favourite food is sushi."])
    assert cos(query, pet) > cos(query, food)


def test_deterministic(onnx: OnnxEmbedder) -> None:
    first = onnx.embed(MIXED)
    second = onnx.embed(MIXED)
    assert np.array_equal(first, second)
    assert np.array_equal(onnx.embed_query(MIXED[1]), onnx.embed_query(MIXED[1]))


def test_order_preserved_across_sorted_batches() -> None:
    small = OnnxEmbedder(batch_size=3)  # ten mixed-length texts -> four batches, each sorted by length
    together = small.embed(MIXED)
    alone = np.stack([small.embed_query(text) for text in MIXED])
    # Padding changes float summation order only: equal to well under a rounding of the cosine.
    np.testing.assert_allclose(together, alone, atol=2e-5)
    assert (np.einsum("ij,ij->i", together, alone) > 0.99999).all()
    reversed_ = small.embed(MIXED[::-1])[::-1]
    np.testing.assert_allclose(together, reversed_, atol=2e-5)


def test_batches_bound_rows_and_padding(onnx: OnnxEmbedder) -> None:
    texts = [*MIXED, *(" ".join(["word"] * k) for k in range(1, 80, 3))]
    lengths = np.array([len(e.ids) for e in onnx._tokenizer.encode_batch(texts)])
    order = np.argsort(lengths, kind="stable")
    batches = list(onnx._batches(order, lengths))
    assert np.array_equal(np.concatenate(batches), order)
    assert len(batches) > 1
    for rows in batches:
        assert 1 <= len(rows) <= onnx.batch_size
        if len(rows) > 1:
            assert lengths[rows].max() * len(rows) - lengths[rows].sum() <= 32


def test_bulk_batches_give_every_concurrent_run_work(onnx: OnnxEmbedder) -> None:
    texts = ["the same length here"] * 10  # one batch for a single run
    lengths = np.array([len(e.ids) for e in onnx._tokenizer.encode_batch(texts)])
    order = np.argsort(lengths, kind="stable")
    assert len(list(onnx._batches(order, lengths))) == 1
    split = list(onnx._batches(order, lengths, parts=2))
    assert len(split) >= 2 and np.array_equal(np.concatenate(split), order)
    assert max(len(rows) for rows in split) <= 4  # a fourth of the texts each, at least 4


def test_concurrent_runs_take_the_costliest_batches_first(onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started in length order, the longest batch came last and ran alone on one core at the end."""
    texts = [*MIXED, *(" ".join(["word"] * k) for k in range(1, 80, 3))]
    expected = onnx.embed(texts)
    costs: list[int] = []

    class InOrder:  # a pool that runs what it is given in the order given
        def map(self, fn, items):  # type: ignore[no-untyped-def]
            return [fn(item) for item in items]

    session, _ = onnx._bulk_runner()
    real_run = onnx._run
    monkeypatch.setattr(onnx, "_bulk_runner", lambda nice=0: (session, InOrder()))
    monkeypatch.setattr(onnx, "_run", lambda s, ids, mask: costs.append(ids.size) or real_run(s, ids, mask))
    np.testing.assert_allclose(onnx.embed(texts), expected, atol=2e-5)
    assert len(costs) > 2 and costs == sorted(costs, reverse=True)


def test_a_forked_process_makes_its_own_bulk_pool(onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import brainstore.retrieval.embedder as embedder_module

    before = onnx.embed(MIXED)
    session, pool = onnx._bulk_runner()
    # A child of fork() inherits the pool object but none of its threads: it must not queue work there.
    monkeypatch.setattr(embedder_module.os, "getpid", lambda: -1)
    child_session, child_pool = onnx._bulk_runner()
    assert child_pool is not pool and child_session is not session
    np.testing.assert_allclose(onnx.embed(MIXED), before, atol=2e-5)
    child_pool.shutdown()


def test_the_bulk_session_can_be_made_before_the_first_call(onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import brainstore.retrieval.embedder as embedder_module

    onnx.embed(MIXED)  # this process's session exists
    monkeypatch.setattr(embedder_module.os, "getpid", lambda: -2)  # as in a new worker process
    onnx.prepare_bulk()
    assert onnx._bulk is not None and onnx._bulk[0] == -2
    for pool in onnx._bulk[2].values():
        pool.shutdown()


def test_duplicates_in_one_batch_are_identical(onnx: OnnxEmbedder) -> None:
    out = onnx.embed(["same text", "other", "same text"])
    assert np.array_equal(out[0], out[2])


def test_truncates_at_max_tokens(onnx: OnnxEmbedder) -> None:
    head = " ".join(["memory"] * 300)  # each word one token: more than 256 already
    a, b = onnx.embed([head + " apples and oranges", head + " a completely different ending"])
    assert np.array_equal(a, b)  # both cut at 256 tokens, before the endings differ


def test_concurrent_calls_match_serial(onnx: OnnxEmbedder) -> None:
    expected = onnx.embed(MIXED)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: onnx.embed(MIXED), range(8)))
        queries = list(pool.map(onnx.embed_query, MIXED))
    for result in results:
        assert np.array_equal(result, expected)
    assert np.array_equal(np.stack(queries), np.stack([onnx.embed_query(text) for text in MIXED]))


def test_a_question_asked_beside_another_embedding_runs_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two intra-op threads stall at every barrier when another call holds a core: a question asked
    while a bulk call or another question runs takes the one-thread session, and gets the same vector."""
    embedder = OnnxEmbedder(threads=2)
    question = "Where did Caroline go hiking last weekend?"
    used: list[object] = []
    bulk_entered, release = threading.Event(), threading.Event()
    real_run = embedder._run

    def run(session: object, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if session not in (embedder._session, embedder._lone_session):  # a bulk call: hold it
            bulk_entered.set()
            assert release.wait(30)
        used.append(session)
        return real_run(session, ids, mask)

    monkeypatch.setattr(embedder, "_run", run)
    alone = embedder.embed_query(question)
    assert used == [embedder._session]

    with ThreadPoolExecutor(max_workers=1) as pool:
        bulk = pool.submit(embedder.embed, MIXED)
        assert bulk_entered.wait(30)
        beside = embedder.embed_query(question)
        assert used[-1] is embedder._lone_session and embedder._lone_session is not embedder._session
        release.set()
        bulk.result(timeout=30)
    np.testing.assert_allclose(beside, alone, atol=1e-5)

    # the bulk call is over, and a failed run is counted out too: a question alone has both threads again
    monkeypatch.setattr(embedder, "_run", lambda session, ids, mask: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        embedder.embed_query(question)
    monkeypatch.setattr(embedder, "_run", run)
    embedder.embed_query(question)
    assert used[-1] is embedder._session


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux gives each thread its own nice value")
def test_the_pieces_of_a_bulk_call_run_at_the_priority_of_the_thread_that_asked(
    onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, 0)

    if nice() != 0:
        pytest.skip("the test process must run at the default priority")
    texts = [*MIXED, *(" ".join(["word"] * k) for k in range(1, 80, 3))]  # several pieces
    expected = onnx.embed(texts)
    ran_at: list[int] = []
    real_run = onnx._run
    monkeypatch.setattr(onnx, "_run", lambda s, ids, mask: ran_at.append(nice()) or real_run(s, ids, mask))

    def in_the_background() -> np.ndarray:
        background_priority()
        return onnx.embed(texts)

    with ThreadPoolExecutor(max_workers=1) as pool:
        np.testing.assert_allclose(pool.submit(in_the_background).result(timeout=60), expected, atol=2e-5)
    assert len(ran_at) > 1 and set(ran_at) == {BACKGROUND_NICE}
    ran_at.clear()
    np.testing.assert_allclose(onnx.embed(texts), expected, atol=2e-5)  # a request thread's call
    assert len(ran_at) > 1 and set(ran_at) == {0}
    assert nice() == 0


def test_pool_threads_spin_only_while_a_run_lasts(onnx: OnnxEmbedder) -> None:
    options = onnx._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"  # no idle busy-wait


def test_sha256_mismatch_refused(tmp_path: Path, onnx: OnnxEmbedder) -> None:
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        OnnxEmbedder(expected_sha256="0" * 64)

    tampered = tmp_path / "model.onnx"
    shutil.copyfile(onnx.model_path, tampered)
    with tampered.open("r+b") as fh:
        fh.seek(-1, 2)
        last = fh.read(1)
        fh.seek(-1, 2)
        fh.write(bytes([last[0] ^ 0xFF]))
    with pytest.raises(EmbedderUnavailable, match="refusing") as info:
        OnnxEmbedder(tampered, onnx.tokenizer_path, expected_sha256=DEFAULT_MODEL_SHA256)
    assert DEFAULT_MODEL_SHA256 in str(info.value)


def test_missing_files_are_unavailable(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="cannot read"):
        OnnxEmbedder(tmp_path / "absent.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    with pytest.raises(EmbedderUnavailable, match="cannot load ONNX model"):
        OnnxEmbedder(garbage)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        OnnxEmbedder(max_tokens=1000)
    with pytest.raises(ValueError, match="batch_size"):
        OnnxEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="threads"):
        OnnxEmbedder(threads=0)


# ------------------------------------------------------------------------------------ load_embedder


def test_load_embedder_default_is_one_instance(onnx: OnnxEmbedder) -> None:
    assert load_embedder("onnx") is onnx
    assert load_embedder(None) is onnx
    assert load_embedder() is onnx
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(e is onnx for e in pool.map(lambda _: load_embedder("onnx"), range(16)))


def test_load_embedder_custom_onnx_paths(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(onnx.model_path, copy)
    custom = load_embedder(f"onnx:{copy}:{onnx.tokenizer_path}")
    assert custom is not onnx
    assert custom is load_embedder(f"onnx:{copy}:{onnx.tokenizer_path}")
    assert custom.model_name == DEFAULT_MODEL_NAME  # same bytes, same model
    # the default runs passages on the model's fused graph: the same vectors, summed in another order
    np.testing.assert_allclose(custom.embed(MIXED), onnx.embed(MIXED), atol=1e-5)


@pytest.mark.parametrize("spec", ["torch", "onnx:a:b:c", "onnx::b", "openai:http://x", "openai:#m"])
def test_load_embedder_bad_spec(spec: str) -> None:
    with pytest.raises(ValueError, match="embedder spec"):
        load_embedder(spec)


# ------------------------------------------------------------------------ OpenAI-compatible provider

API_KEY = "sk-test-embedding-key"
DIM = 12


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately unnormalized."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 10 for b in digest[:DIM]]


def expected_vector(text: str) -> np.ndarray:
    v = np.asarray(fake_vector(text), dtype=np.float32)
    return v / np.linalg.norm(v)


class FakeProvider:
    """A real HTTP server on 127.0.0.1 speaking the OpenAI embeddings protocol."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.requests.append(body)
                if self.path != "/v1/embeddings":
                    return self.reply(404, {"error": {"message": "no such route"}})
                if self.headers.get("Authorization") != f"Bearer {API_KEY}":
                    return self.reply(401, {"error": {"message": "invalid api key"}})
                model, inputs = body["model"], body["input"]
                if model == "overloaded":
                    return self.reply(503, {"error": {"message": "model overloaded"}})
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(text)}
                    for i, text in enumerate(inputs)
                ]
                if model == "short":
                    data = data[:-1]
                # Shuffle, so only reading by index gives the right order.
                random.Random(len(provider.requests)).shuffle(data)
                if len(data) > 1 and [d["index"] for d in data] == sorted(d["index"] for d in data):
                    data.reverse()
                self.reply(200, {"object": "list", "data": data, "model": model})

            def reply(self, status: int, payload: dict) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def test_openai_embeds_by_index_in_batches(provider: FakeProvider) -> None:
    texts = [f"turn number {i}" for i in range(7)]
    with OpenAICompatibleEmbedder(
        provider.base_url, "fake-embed", API_KEY, dimension=DIM, batch_size=3
    ) as emb:
        assert isinstance(emb, Embedder)
        assert emb.model_name == "fake-embed"
        out = emb.embed(texts)
        assert out.shape == (7, DIM)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, np.stack([expected_vector(t) for t in texts]), atol=1e-6)
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
        assert [r["input"] for r in provider.requests] == [texts[0:3], texts[3:6], texts[6:7]]
        assert all(r["model"] == "fake-embed" for r in provider.requests)

        query = emb.embed_query("hello")
        assert query.shape == (DIM,)
        np.testing.assert_allclose(query, expected_vector("hello"), atol=1e-6)
        assert np.array_equal(emb.embed_query("hello"), query)
        assert emb.embed([]).shape == (0, DIM)


def test_openai_dimension_discovered_once(provider: FakeProvider) -> None:
    with OpenAICompatibleEmbedder(provider.base_url + "/", "fake-embed", API_KEY) as emb:
        assert provider.requests == []  # nothing at construction
        assert emb.embed([]).shape == (0, DIM)
        assert emb.dimension == DIM
        assert len(provider.requests) == 1


def test_openai_error_status_is_unavailable(provider: FakeProvider) -> None:
    with OpenAICompatibleEmbedder(provider.base_url, "overloaded", API_KEY, dimension=DIM) as emb:
        with pytest.raises(EmbedderUnavailable, match="503") as info:
            emb.embed(["x"])
        assert info.value.status == 503
    with OpenAICompatibleEmbedder(provider.base_url, "fake-embed", "wrong-key", dimension=DIM) as emb:
        with pytest.raises(EmbedderUnavailable, match="401") as info:
            emb.embed_query("x")
        assert info.value.status == 401
        assert "wrong-key" not in str(info.value)


def test_openai_malformed_reply_is_unavailable(provider: FakeProvider) -> None:
    with (
        OpenAICompatibleEmbedder(provider.base_url, "short", API_KEY) as emb,
        pytest.raises(EmbedderUnavailable, match="malformed"),
    ):
        emb.embed(["a", "b"])
    with (
        OpenAICompatibleEmbedder(provider.base_url, "fake-embed", API_KEY, dimension=DIM + 1) as emb,
        pytest.raises(EmbedderUnavailable, match="expected 13"),
    ):
        emb.embed(["a"])


def test_openai_unreachable_is_unavailable() -> None:
    with FakeProvider() as stopped:
        base_url = stopped.base_url
    with OpenAICompatibleEmbedder(base_url, "fake-embed", API_KEY, dimension=DIM, timeout=2.0) as emb:
        with pytest.raises(EmbedderUnavailable, match="unreachable") as info:
            emb.embed(["x"])
        assert info.value.status is None


def test_load_embedder_openai(provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMBEDDING_API_KEY_ENV, API_KEY)
    emb = load_embedder(f"openai:{provider.base_url}#fake-embed")
    try:
        assert isinstance(emb, OpenAICompatibleEmbedder)
        assert emb.model_name == "fake-embed"
        np.testing.assert_allclose(emb.embed_query("hi"), expected_vector("hi"), atol=1e-6)
    finally:
        emb.close()


def test_the_int8_embedder_is_made_once_and_agrees_with_the_default(
    onnx: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from brainstore.retrieval.embedder import DYNAMIC_MODEL_PREFIX, dynamic_int8_model

    with caplog.at_level(logging.WARNING):
        made = dynamic_int8_model(tmp_path)
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]  # it is given the fused graph
    stamp = made.stat().st_mtime_ns
    import onnx as onnx_format

    operators = {node.op_type for node in onnx_format.load(str(made)).graph.node}
    assert {"QAttention", "QEmbedLayerNormalization"} <= operators  # quantized from the fused graph
    assert dynamic_int8_model(tmp_path) == made and made.stat().st_mtime_ns == stamp  # kept, not made again
    monkeypatch.setenv("BRAINSTORE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("brainstore.retrieval.embedder._CACHE", {})
    int8 = load_embedder("onnx-int8")
    assert isinstance(int8, OnnxEmbedder) and int8.model_name.startswith(DYNAMIC_MODEL_PREFIX + "-")
    assert int8.model_name != onnx.model_name and int8.dimension == onnx.dimension
    cosines = np.einsum("ij,ij->i", int8.embed(MIXED), onnx.embed(MIXED))
    assert cosines.min() > 0.95
    assert load_embedder("onnx-int8") is int8


@pytest.fixture(scope="module")
def folded_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from brainstore.retrieval.embedder import _MODEL_DIST, _MODEL_FILE, _folded_model, _packaged_file

    return _folded_model(_packaged_file(_MODEL_DIST, _MODEL_FILE), tmp_path_factory.mktemp("folded") / "folded.onnx")


def test_the_fused_graph_computes_what_the_model_computes(
    onnx: OnnxEmbedder, folded_model: Path, tmp_path: Path
) -> None:
    import onnx as onnx_format

    from brainstore.retrieval.fused_graph import fused_bert

    source = onnx_format.load(str(folded_model))
    fused = fused_bert(source, check=False)  # checked here on more than the one batch it checks itself
    assert len(fused.graph.node) < len(source.graph.node) / 4
    path = tmp_path / "fused.onnx"
    onnx_format.save(fused, str(path))
    rewritten = OnnxEmbedder(path, expected_sha256=None)
    # MIXED has texts of 1 to 60-odd tokens, so every batch is padded: the mask reaches the attention
    np.testing.assert_allclose(rewritten.embed(MIXED), onnx.embed(MIXED), atol=1e-5)


def test_a_fused_graph_that_computes_something_else_is_refused(
    folded_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx as onnx_format

    from brainstore.retrieval import fused_graph

    source = onnx_format.load(str(folded_model))
    monkeypatch.setattr(fused_graph, "_HEADS", 6)  # the same weights, split into the wrong heads
    with pytest.raises(fused_graph.FusedGraphMismatch, match="differs from the model"):
        fused_graph.fused_bert(source)
    for weight in source.graph.initializer:
        if weight.name.endswith("word_embeddings.weight"):
            weight.name = "renamed"
    with pytest.raises(fused_graph.FusedGraphMismatch, match="no word embeddings"):
        fused_graph.fused_bert(source)


def test_the_int8_embedder_says_what_to_install_without_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from brainstore.retrieval.embedder import dynamic_int8_model

    real_import = builtins.__import__

    def no_quantizer(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("onnxruntime.quantization"):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_quantizer)
    with pytest.raises(EmbedderUnavailable, match=r"pip install 'onnx"):
        dynamic_int8_model(tmp_path)


# ------------------------------------------------------------------------------- int8 questions


def test_the_default_embeds_questions_with_its_int8_copy_and_passages_with_the_model(onnx: OnnxEmbedder) -> None:
    exact = OnnxEmbedder()  # the model alone: what every stored vector was made with
    assert onnx.query_model_path is not None and exact.query_model_path is None
    assert onnx.model_name == exact.model_name == DEFAULT_MODEL_NAME  # Brains keep their vectors
    np.testing.assert_allclose(onnx.embed(MIXED), exact.embed(MIXED), atol=1e-5)  # (its fused graph)
    quick = np.stack([onnx.embed_query(text) for text in MIXED])
    full = np.stack([exact.embed_query(text) for text in MIXED])
    cosines = np.einsum("ij,ij->i", quick, full)
    assert cosines.min() > 0.95 and cosines.mean() > 0.98  # the same question
    assert cosines.max() < 1 - 1e-5  # yet not the model's own arithmetic: the copy ran
    np.testing.assert_allclose(np.linalg.norm(quick, axis=1), 1.0, atol=1e-5)


def test_questions_use_the_model_itself_when_the_copy_cannot_be_made(
    onnx: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def read_only(cache_dir: Path | None = None) -> Path:
        raise PermissionError(13, "Permission denied", "/cache")

    monkeypatch.setattr("brainstore.retrieval.embedder.dynamic_int8_model", read_only)
    monkeypatch.setattr("brainstore.retrieval.embedder._CACHE", {})
    with caplog.at_level("WARNING", logger="brainstore.embedder"):
        fallback = load_embedder("onnx")
    assert isinstance(fallback, OnnxEmbedder) and fallback.query_model_path is None
    assert "full-precision" in caplog.text and "Permission denied" in caplog.text
    np.testing.assert_allclose(
        np.stack([fallback.embed_query(text) for text in MIXED]), onnx.embed(MIXED), atol=2e-5
    )


def test_prepare_makes_the_copy_a_spec_needs_before_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brainstore.retrieval.embedder import dynamic_int8_model, fused_model, prepare_embedder

    monkeypatch.setenv("BRAINSTORE_CACHE_DIR", str(tmp_path))
    prepare_embedder("openai:http://127.0.0.1:1/v1#m")  # a hosted model needs no file
    assert not any(tmp_path.rglob("*.onnx"))
    prepare_embedder(None)
    made = sorted(tmp_path.rglob("*.onnx"))
    assert made == sorted([dynamic_int8_model(), fused_model()])  # where load_embedder looks for them
    # (a copy that cannot be made: test_preparing_the_embedder_makes_the_int8_model_without_importing_onnxruntime)


def test_a_damaged_copy_in_the_cache_leaves_questions_to_the_model(
    onnx: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import onnxruntime

    from brainstore.retrieval.embedder import _int8_model_file

    monkeypatch.setenv("BRAINSTORE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("brainstore.retrieval.embedder._CACHE", {})
    damaged = _int8_model_file(tmp_path / "brainstore", onnxruntime.__version__)
    damaged.parent.mkdir()
    damaged.write_bytes(b"half a model")  # a disk that failed mid-write
    with caplog.at_level("WARNING", logger="brainstore.embedder"):
        fallback = load_embedder("onnx")
    assert isinstance(fallback, OnnxEmbedder) and fallback.query_model_path is None
    assert str(damaged) in caplog.text
    np.testing.assert_allclose(fallback.embed_query(MIXED[0]), onnx.embed([MIXED[0]])[0], atol=2e-5)


def test_preparing_the_embedder_makes_the_int8_model_without_importing_onnxruntime(tmp_path: Path) -> None:
    """gunicorn's master prepares the embedder, then forks: a worker forked after onnxruntime was
    imported died of a signal as it exited."""
    import subprocess

    script = (
        "import sys\n"
        "from brainstore.retrieval.embedder import prepare_embedder\n"
        "prepare_embedder(sys.argv[1])\n"
        "assert 'onnxruntime' not in sys.modules, 'imported onnxruntime'\n"
    )
    env = {**os.environ, "BRAINSTORE_CACHE_DIR": str(tmp_path)}
    for spec in ("onnx-int8", "onnx"):  # made by the first, found by the second
        done = subprocess.run([sys.executable, "-c", script, spec], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    made = sorted(p.name for p in (tmp_path / "brainstore").iterdir())
    assert len(made) == 2 and "fused-ort" in made[1] and "fused-dynamic" in made[0]  # the fused graph, its int8 copy

    (tmp_path / "blocked").write_text("a file where the cache directory would be")
    env["BRAINSTORE_CACHE_DIR"] = str(tmp_path / "blocked")
    done = subprocess.run([sys.executable, "-c", script, "onnx-int8"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "EmbedderUnavailable" in done.stderr
    done = subprocess.run([sys.executable, "-c", script, "onnx"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]  # questions then use the model itself


# ------------------------------------------------------------------------------- fused passages


def test_the_default_embeds_passages_with_the_fused_graph_made_once(
    onnx: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx as onnx_format

    from brainstore.retrieval.embedder import fused_model

    made = fused_model(tmp_path)
    stamp = made.stat().st_mtime_ns
    assert "Attention" in {node.op_type for node in onnx_format.load(str(made)).graph.node}
    assert fused_model(tmp_path) == made and made.stat().st_mtime_ns == stamp  # kept, not made again
    monkeypatch.setenv("BRAINSTORE_CACHE_DIR", str(tmp_path.parent))
    monkeypatch.setattr("brainstore.retrieval.embedder._CACHE", {})
    default = load_embedder("onnx")
    assert isinstance(default, OnnxEmbedder) and default.bulk_model_path == fused_model()
    np.testing.assert_allclose(default.embed(MIXED), OnnxEmbedder().embed(MIXED), atol=1e-5)
    assert default._bulk is not None and default._bulk[1] is not None
    assert Path(default._bulk[1]._model_path) == default.bulk_model_path  # the session embed() ran


@pytest.mark.parametrize("damage", ["other vectors", "not a model"])
def test_a_bulk_graph_that_does_not_give_the_models_vectors_is_not_used(
    onnx: OnnxEmbedder, tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    from brainstore.retrieval.embedder import dynamic_int8_model

    if damage == "other vectors":  # loads and runs, close to the model (cosine 0.99) but not it
        bulk = dynamic_int8_model()
    else:
        bulk = tmp_path / "fused.onnx"
        bulk.write_bytes(b"half a model")
    embedder = OnnxEmbedder(bulk_model_path=bulk)
    with caplog.at_level("WARNING", logger="brainstore.embedder"):
        vectors = embedder.embed(MIXED)
    assert "model's own graph" in caplog.text
    np.testing.assert_allclose(vectors, OnnxEmbedder().embed(MIXED), atol=1e-6)
