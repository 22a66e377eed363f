"""How a Memory is served follows from the visibilities of the Records it cites: withheld when none may
be read, redacted when only redacted ones may, else with its own words (the rule said plainly below)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from brainstore.domain import Citation
from brainstore.service.visibility import REDACTED, SHAREABLE, Visibility

VISIBILITIES = ["shareable", "redacted_summary", "local_only"]


@dataclass
class Cited:
    citations: tuple[Citation, ...]


def plainly(visibility: Visibility, memory: Cited, visibilities: dict[str, str]) -> str | None:
    readable = [v for v in (visibilities.get(c.record_id) for c in memory.citations) if not visibility.withheld(v)]
    if not readable:
        return None
    return REDACTED if all(visibility.redacted(v) for v in readable) else SHAREABLE


@given(
    hosted=st.booleans(),
    cited=st.lists(st.integers(0, 5), max_size=5),
    known=st.dictionaries(st.integers(0, 5), st.sampled_from(VISIBILITIES)),
)
def test_serving_is_the_rule(hosted: bool, cited: list[int], known: dict[int, str]) -> None:
    visibility = Visibility(hosted=hosted)
    memory = Cited(tuple(Citation(f"rec_{i}", 0, 1, "x") for i in cited))
    visibilities = {f"rec_{i}": v for i, v in known.items()}  # a Record not here is erased
    assert visibility.serving(memory, visibilities) == plainly(visibility, memory, visibilities)  # type: ignore[arg-type]
