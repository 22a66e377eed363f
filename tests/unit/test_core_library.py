"""The library brainstore-core (``import brainstore_core``, rust/py) as other Python tools see it: its
public surface, its stubs (mypy.stubtest) and strict typing, its docs, its version and dependencies,
the GIL released by every batch call, and errors instead of panics on arbitrary input.

The kernels' behaviour in depth is tests/unit/test_kernels.py, through brainstore.kernels, which
re-exports these very objects.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path

import brainstore_core as core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore import kernels

PUBLIC = [
    "MAX_PATTERN_CHARS",
    "TOKENIZER_NAME",
    "ChunkTable",
    "LexicalIndex",
    "Pattern",
    "count_tokens",
    "decode_watermark",
    "encode_watermark",
    "final_scores",
    "near_duplicates",
    "pack",
    "rrf_fuse",
    "token_count",
    "truncate_tokens",
]
I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
CORE = settings(deadline=None)


# --- surface, typing, docs, packaging -----------------------------------------------------------


def test_public_surface() -> None:
    assert core.__all__ == PUBLIC
    assert core.TOKENIZER_NAME == "cl100k_base"
    assert core.MAX_PATTERN_CHARS > 0


def test_brainstore_kernels_is_the_library_itself() -> None:
    assert kernels.__all__ == core.__all__
    for name in core.__all__:
        assert getattr(kernels, name) is getattr(core, name), name


def public_callables() -> Iterator[tuple[str, object]]:
    """Every public function, class and method (``__init__`` and ``__len__`` included), by dotted name."""
    for name in core.__all__:
        obj = getattr(core, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            yield name, obj
            for attr, member in vars(obj).items():
                if attr in {"__init__", "__len__"} or not attr.startswith("_"):
                    yield f"{name}.{attr}", member


def test_every_public_function_and_class_is_documented() -> None:
    undocumented = [name for name, obj in public_callables() if not inspect.getdoc(obj)]
    assert undocumented == []


def test_it_ships_its_types() -> None:
    package = resources.files("brainstore_core")
    assert package.joinpath("py.typed").is_file()
    assert package.joinpath("_native.pyi").is_file()


def run_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_stubs_match_the_extension(tmp_path: Path) -> None:
    # Compares _native.pyi with the built module (names, parameters, defaults, __all__) and type-checks
    # the facade against those stubs.
    run = run_tool(["mypy.stubtest", "brainstore_core"], tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_the_facade_type_checks_strictly(tmp_path: Path) -> None:
    strict = ["mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "-p", "brainstore_core"]
    run = run_tool(strict, tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_same_version_as_brainstore_and_no_dependencies() -> None:
    version = importlib.metadata.version("brainstore")
    assert core.__version__ == importlib.metadata.version("brainstore-core") == version
    assert f"brainstore-core=={version}" in (importlib.metadata.requires("brainstore") or [])
    assert not importlib.metadata.requires("brainstore-core")


def test_the_readme_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The core library\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, re.S)
    exec(compile(example, "README.md", "exec"), {})


def test_importing_it_loads_only_the_standard_library() -> None:
    probe = (
        "import sys; before = set(sys.modules); import brainstore_core; "
        "print(sorted(m for m in set(sys.modules) - before "
        "if m.split('.')[0] not in sys.stdlib_module_names | {'brainstore_core'}))"
    )
    run = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


# --- the GIL --------------------------------------------------------------------------------------


@contextmanager
def no_forced_gil_switches() -> Iterator[None]:
    """With a switch interval far longer than the test, a thread waiting for the GIL gets it only when
    the holder gives it up: by blocking, or in a native call that releases it."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def another_thread_ran_during(prepare: Callable[[], Callable[[], object]], seconds: float = 2.0) -> bool:
    """Whether a second Python thread ran during a call that ``prepare`` sets up, trying afresh for up to
    ``seconds`` (the OS may not schedule that thread during one short call).

    Between its two readings of ``ticks`` the main thread runs only Python code and the call, so the
    ticker can advance in between only if the call released the GIL. The ticker sleeps between ticks,
    so the main thread never waits long for the GIL it takes back.
    """
    ticks = 0
    stop = threading.Event()
    started = threading.Event()

    def ticker() -> None:
        nonlocal ticks
        started.set()
        while not stop.is_set():
            ticks += 1
            time.sleep(0.0005)

    thread = threading.Thread(target=ticker, daemon=True)
    with no_forced_gil_switches():
        thread.start()
        started.wait()
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                call = prepare()
                before = ticks
                call()
                if ticks != before:
                    return True
            return False
        finally:
            stop.set()
            thread.join()


def busy_python(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_the_gil_probe_tells_holding_from_releasing() -> None:
    assert not another_thread_ran_during(lambda: lambda: busy_python(0.02), seconds=0.3)
    assert another_thread_ran_during(lambda: lambda: time.sleep(0.02))


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
TEXTS = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(12)) + f" {i}" for i in range(3000)]
N = 50_000


@cache
def long_text() -> str:
    return " ".join(TEXTS)


@cache
def ranked(n: int) -> tuple[list[int], list[float]]:
    return list(range(n)), [float(i % 977) for i in range(n)]


def indexed(copies: int) -> core.LexicalIndex:
    index = core.LexicalIndex()
    index.add(range(len(TEXTS) * copies), TEXTS * copies)
    return index


def searching() -> Callable[[], object]:
    index = indexed(4)
    return lambda: index.search("alpha beta gamma delta epsilon zeta", 50)


def chunk_columns(n: int) -> tuple[list, ...]:
    ids = list(range(n))
    speakers = [WORDS[i % len(WORDS)] for i in ids]
    return ids, [float(i) for i in ids], ["chat"] * n, speakers, [1.0] * n, [10] * n, [8] * n


def tabled(n: int) -> core.ChunkTable:
    table = core.ChunkTable()
    table.add(*chunk_columns(n))
    return table


def ranking() -> Callable[[], object]:
    table = tabled(N)
    fused = [(i, 1.0 / (i + 1)) for i in range(N)]
    knobs = dict(
        vector_weight=0.1, lexical_weight=0.15, named=["beta"], speaker_boost=1.5, focus=[(10.0, 500.0)], time_boost=2.0,
        neighbor_weights=[0.3, 0.3], neighbor_gap=3600.0, next_factor=1.3, neighbor_sources=N, since=None, until=None, sources=None,
        excluded=[], now=1e6, decay=1e-7, recency_weight=0.05, max_candidates=150,
    )  # fmt: skip
    return lambda: table.rank(fused, fused[:1000], fused[:1000], **knobs)  # type: ignore[arg-type]


def removing() -> Callable[[], object]:
    index = indexed(2)
    return lambda: index.remove(range(0, len(TEXTS) * 2, 2))


def matching(many: bool) -> Callable[[], object]:
    pattern = core.Pattern("omega [0-9]+")
    return (lambda: pattern.matches(TEXTS * 10)) if many else (lambda: pattern.is_match(long_text() * 5))


# Every call the docs mark "GIL released", set up outside the window the probe watches (building an
# index releases the GIL too) and taking milliseconds once there.
BATCH_CALLS: dict[str, Callable[[], Callable[[], object]]] = {
    "token_count": lambda: lambda: core.token_count(long_text()[:50_000]),
    "count_tokens": lambda: lambda: core.count_tokens(TEXTS),
    "truncate_tokens": lambda: lambda: core.truncate_tokens(long_text(), 10_000),
    "pack": lambda: lambda: core.pack([3] * N, ranked(N)[1], 10 * N),
    "rrf_fuse": lambda: lambda: core.rrf_fuse([ranked(N)[0], ranked(N)[0][::-1]], [1.0, 0.5]),
    "final_scores": lambda: lambda: core.final_scores(ranked(N)[1], [0.5] * N, [0.9] * N, 0.3),
    "near_duplicates": lambda: lambda: core.near_duplicates(TEXTS[:800]),
    "ChunkTable.add": lambda: (lambda columns: lambda: core.ChunkTable().add(*columns))(chunk_columns(N)),
    "ChunkTable.link": lambda: (lambda table: lambda: table.link(range(N)))(tabled(N)),
    "ChunkTable.remove": lambda: (lambda table: lambda: table.remove(range(0, N, 2)))(tabled(N)),
    "ChunkTable.rank": ranking,
    "ChunkTable.turns": lambda: (lambda table: lambda: table.turns(range(N), 3600.0))(tabled(N)),
    "ChunkTable.line_tokens": lambda: (lambda table: lambda: table.line_tokens(range(N)))(tabled(N)),
    "LexicalIndex.add": lambda: lambda: core.LexicalIndex().add(range(len(TEXTS)), TEXTS),
    "LexicalIndex.remove": removing,
    "LexicalIndex.search": searching,
    "Pattern.__init__": lambda: lambda: core.Pattern(r"(\w+\s+){20}omega"),
    "Pattern.is_match": lambda: matching(many=False),
    "Pattern.matches": lambda: matching(many=True),
}


def test_the_docs_say_gil_released_exactly_where_it_is_tested() -> None:
    documented = {
        name
        for name, obj in public_callables()
        if not inspect.isclass(obj) and "GIL released" in (inspect.getdoc(obj) or "")
    }
    assert documented == set(BATCH_CALLS)


@pytest.mark.parametrize("name", sorted(BATCH_CALLS))
def test_batch_call_releases_the_gil(name: str) -> None:
    assert another_thread_ran_during(BATCH_CALLS[name]), f"{name} held the GIL throughout"


# --- arbitrary input: a result or a Python exception, never a panic ------------------------------
# A Rust panic would surface as pyo3's PanicException, a BaseException that these tests let through.


def results_or_value_error(call: Callable[[], object]) -> object:
    try:
        return call()
    except ValueError:
        return None


@CORE
@given(
    st.lists(I64, max_size=20),
    st.lists(ANY_FLOAT, max_size=20),
    st.integers(),
    st.none() | st.lists(I64, max_size=20),
    st.none() | st.lists(I64, max_size=20),
)
def test_pack_never_panics(
    counts: list[int], scores: list[float], budget: int, prev: list[int] | None, joined: list[int] | None
) -> None:
    chosen = results_or_value_error(lambda: core.pack(counts, scores, budget, prev=prev, joined=joined))
    if chosen is not None and prev is None:
        assert isinstance(chosen, list)
        assert sum(counts[i] for i in chosen) <= max(budget, 0)


@CORE
@given(
    st.lists(st.integers(0, 50), max_size=20),
    st.lists(ANY_FLOAT, max_size=20),
    st.integers(),
    st.lists(
        st.tuples(st.lists(st.integers(-2, 4), max_size=20), st.lists(st.integers(-1, 20) | I64, max_size=4)),
        max_size=3,
    ),
)
def test_pack_with_groups_never_panics(
    counts: list[int], scores: list[float], budget: int, groups: list[tuple[list[int], list[int]]]
) -> None:
    chosen = results_or_value_error(lambda: core.pack(counts, scores, budget, groups=groups))
    if chosen is not None:
        # each chosen item's count, and each group's header once per grouping
        headers = {(k, group[i]) for i in chosen for k, (group, _) in enumerate(groups) if group[i] >= 0}
        assert sum(counts[i] for i in chosen) + sum(groups[k][1][g] for k, g in headers) <= max(budget, 0)


@CORE
@given(st.lists(st.lists(I64, max_size=8), max_size=4), st.lists(ANY_FLOAT, max_size=4), ANY_FLOAT)
def test_rank_fusion_never_panics(lanes: list[list[int]], weights: list[float], k: float) -> None:
    fused = results_or_value_error(lambda: core.rrf_fuse(lanes, weights, k))
    if fused is not None:
        assert sorted(doc for doc, _ in fused) == sorted({doc for lane in lanes for doc in lane})


@CORE
@given(*[st.lists(ANY_FLOAT, max_size=6)] * 3, ANY_FLOAT)
def test_final_scores_never_panic(
    base: list[float], recency: list[float], trust: list[float], weight: float
) -> None:
    scores = results_or_value_error(lambda: core.final_scores(base, recency, trust, weight))
    assert (scores is None) == (not len(base) == len(recency) == len(trust))


@CORE
@given(st.lists(st.text(max_size=40), max_size=8), ANY_FLOAT, st.text(max_size=40), st.integers())
def test_text_kernels_never_panic(texts: list[str], threshold: float, query: str, k: int) -> None:
    assert core.count_tokens(texts) == [core.token_count(t) for t in texts]
    duplicates = results_or_value_error(lambda: core.near_duplicates(texts, threshold))
    assert (duplicates is None) == (not 0.0 <= threshold <= 1.0)
    index = core.LexicalIndex()
    index.add(range(len(texts)), texts)
    assert len(index.search(query, k)) <= max(k, 0)
    assert core.truncate_tokens(query, k) == query[: len(core.truncate_tokens(query, k))]


@pytest.mark.parametrize("blank", [" ", "\t", " \t", "\u00a0"])
def test_a_million_blanks_before_a_word_count_without_a_panic(blank: str) -> None:
    # tiktoken-rs's split regex overflowed its stack and unwrapped the error, and the PanicException
    # escaped every handler: an acceptObject of such a value then a Context including it ended the worker
    text = blank * (1_000_000 // len(blank)) + "x"
    tokens = core.token_count(text)
    assert core.count_tokens([text]) == [tokens] and 0 < tokens < len(text)
    cut = core.truncate_tokens(text, tokens // 2)
    assert text.startswith(cut) and core.token_count(cut) <= tokens // 2


def test_wrong_types_and_ranges_are_python_errors() -> None:
    with pytest.raises(TypeError, match="not a single str"):
        core.count_tokens("hello")
    with pytest.raises(TypeError, match="not a single str"):
        core.Pattern("a").matches("abc")
    with pytest.raises(TypeError):
        core.count_tokens([1, 2])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        core.pack([1], ["high"], 5)  # type: ignore[list-item]
    with pytest.raises(OverflowError):
        core.pack([2**64], [1.0], 5)
    with pytest.raises(OverflowError):
        core.LexicalIndex().add([2**63], ["too large an id"])
    with pytest.raises(ValueError, match="base has 1 items but recency has 0"):
        core.final_scores([1.0], [], [1.0], 0.5)
    with pytest.raises(ValueError):
        core.encode_watermark(b"", "alice", 1)
