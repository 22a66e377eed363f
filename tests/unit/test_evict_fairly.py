"""evict_fairly, against the rule it states, counted afresh for every Brain given up."""

from __future__ import annotations

from collections import Counter, OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore.store.current import evict_fairly


def by_the_rule(
    held: OrderedDict[str, int], namespaces: dict[str, str], *, max_brains: int, max_total: int, newcomer: str | None, keep_newcomer: bool
) -> None:
    """Over a bound, the namespace holding the most of what is over gives up its least recently used Brain;
    between equals the newcomer's namespace, and between those the oldest Brain; a kept newcomer stays."""
    growing = namespaces.get(newcomer, "") if newcomer is not None else None
    while True:
        brains, sizes = Counter[str](), Counter[str]()
        for uid, size in held.items():
            brains[namespaces.get(uid, "")] += 1
            sizes[namespaces.get(uid, "")] += size
        if len(held) > max_brains:
            heaviest = brains
        elif sum(sizes.values()) > max_total:
            heaviest = sizes
        else:
            return
        droppable = [uid for uid in held if not (keep_newcomer and uid == newcomer)]
        if not droppable:
            return
        victim = max(droppable, key=lambda uid: (heaviest[namespaces.get(uid, "")], namespaces.get(uid, "") == growing))
        del held[victim]
        namespaces.pop(victim, None)


@settings(max_examples=500)  # cheap, and the ties that matter are rare
@given(
    sizes=st.lists(st.integers(0, 9), max_size=12),
    owners=st.lists(st.sampled_from(["", "a", "b", "c", None]), min_size=12, max_size=12),
    max_brains=st.integers(0, 13),
    max_total=st.integers(0, 60),
    newcomer=st.integers(-1, 12),
    keep_newcomer=st.booleans(),
)
def test_it_gives_up_the_brains_the_rule_names(
    sizes: list[int], owners: list[str | None], max_brains: int, max_total: int, newcomer: int, keep_newcomer: bool
) -> None:
    held = OrderedDict((f"u{i}", size) for i, size in enumerate(sizes))
    namespaces = {f"u{i}": owner for i, owner in zip(range(len(sizes)), owners, strict=False) if owner is not None}
    named = f"u{newcomer}" if newcomer >= 0 else None
    expected, expected_namespaces = OrderedDict(held), dict(namespaces)
    kw = {"max_brains": max_brains, "max_total": max_total, "newcomer": named, "keep_newcomer": keep_newcomer}
    by_the_rule(expected, expected_namespaces, **kw)  # type: ignore[arg-type]
    evict_fairly(held, namespaces, lambda size: size, **kw)  # type: ignore[arg-type]
    assert list(held) == list(expected) and namespaces == expected_namespaces
