"""The brainstore-core wheel, installed alone, works.

`make core-wheel-check` runs this with ``python -I`` in an empty virtualenv into which pip put only
that wheel, with ``--no-index``: so the library needs no other package. Standard library only; an
AssertionError names the first check that failed.
"""

import importlib
import importlib.metadata
import sys
from pathlib import Path

already_loaded = set(sys.modules)
core = importlib.import_module("brainstore_core")
outside = sorted(
    name
    for name in set(sys.modules) - already_loaded
    if name.split(".")[0] not in sys.stdlib_module_names | {"brainstore_core"}
)
assert not outside, f"importing brainstore_core loaded {outside}"

installed = sorted(dist.metadata["Name"] for dist in importlib.metadata.distributions())
assert installed == ["brainstore-core"], f"the virtualenv should hold brainstore-core alone, not {installed}"
assert not importlib.metadata.requires("brainstore-core"), "brainstore-core must not depend on anything"
assert Path(core.__file__).is_relative_to(sys.prefix), f"imported from {core.__file__}, not the virtualenv"
assert core.__version__ == importlib.metadata.version("brainstore-core")

assert core.count_tokens(["hello world"]) == [2]
assert core.truncate_tokens("hello world", 1) == "hello"
assert core.pack([8, 5, 3], [0.5, 0.9, 0.1], 9) == [1, 2]

index = core.LexicalIndex()
index.add([1, 2], ["We met in Lisbon.", "A quiet week at home."])
assert [doc for doc, _ in index.search("lisbon", 5)] == [1]
assert [doc for doc, _ in core.rrf_fuse([[1, 2], [2, 3]], [1.0, 1.0])] == [2, 1, 3]
assert core.final_scores([1.0], [1.0], [0.5], 1.0) == [1.0]
assert core.near_duplicates(["the cat sat down", "The cat sat down!", "a dog"]) == [1]

token = core.encode_watermark(b"secret", "alice", 42)
assert core.decode_watermark(b"secret", "alice", token) == 42
assert core.decode_watermark(b"another secret", "alice", token) is None
assert core.Pattern("^[a-z]+$").matches(["abc", "ab1"]) == [True, False]

print(f"brainstore-core {core.__version__} installed alone from its wheel: every check passed")
