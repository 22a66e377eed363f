"""Attribution over generated conversations: nothing is the self's own unless the self said it.

Turns are drawn from first-person, third-person, possessive and second-person templates, spoken by
the self, by other people and by the assistant. The invariant: every Memory owned by the self cites
only Records in which the self speaks (or facts whose subject is the self).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.api.app import create_app
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import Api

SELF = "Alice"
OTHERS = ["Bob", "Carol", "Dana"]
TEMPLATES = [
    "I live in {place}.",
    "I love {thing}.",
    "I work at {org}.",
    "My sister loves {thing}.",
    "My brother lives in {place}.",
    "You should try {thing}.",
    "You mentioned you like {thing}.",
    "{other} said she likes {thing}.",
    "{other} works at {org}.",
    "We went to {place} last week.",
    "I don't like {thing}.",
    "Do you like {thing}?",
    "He moved to {place} last March.",
]
PLACES = ["Lisbon", "Porto", "Berlin", "Kyoto", "Lima"]
THINGS = ["sushi", "jazz", "yoga", "chess", "hiking", "tea"]
ORGS = ["Acme", "Globex", "Initech"]

turns = st.lists(
    st.tuples(
        st.sampled_from([SELF, *OTHERS, "assistant"]),
        st.sampled_from(TEMPLATES),
        st.sampled_from(PLACES),
        st.sampled_from(THINGS),
        st.sampled_from(ORGS),
        st.sampled_from(OTHERS),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=turns)
def test_no_memory_is_the_selfs_unless_the_self_said_it(conversation: list[tuple[str, ...]]) -> None:
    service = Service(MemoryStore())
    service.start()
    api = Api(create_app(service))
    api.brain("b1", self_name=SELF)
    speaker_of: dict[str, str] = {}
    for speaker, template, place, thing, org, other in conversation:
        text = template.format(place=place, thing=thing, org=org, other=other)
        content: dict[str, Any] = {"kind": "message", "text": text}
        if speaker == SELF:
            content["role"] = "user"
        elif speaker == "assistant":
            content["role"] = "assistant"
        else:
            content.update(role="other", speaker=speaker)
        speaker_of[api.remember("b1", content).body["id"]] = speaker
    assert service.wait_idle()
    page = api.get("/brains/b1/memories", params={"limit": "500"}).body["data"]
    for memory in page:
        speakers = {speaker_of[c["record_id"]] for c in memory["citations"]}
        if memory["owner"] == SELF:
            assert speakers == {SELF}, (memory["statement"], speakers)
        if "assistant" in speakers:
            assert memory["owner"] != SELF, memory["statement"]
    service.stop()
