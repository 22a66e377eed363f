"""The mixed workload of ``make load``, for locust (headless; started by ``benches/load/run.py``).

Each simulated client loops without think time, picking a Brain at random among ``LOAD_BRAINS`` and an
operation by weight: rememberRecord 3, createContext 3, listMemories 2, acceptObject 1. Writes are a
realistic mix of short first-person messages; Contexts ask questions about them. Anything but the
operation's success status is a failure (a 429 included). Every Record acknowledged with 202 is
written to ``LOAD_ACKED`` (one JSON line: brain, record id) when the run stops, so the runner can check
that each one is stored and reaches ready.

Runs in the load tool's own virtualenv: it imports nothing of brainstore.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from typing import Any

from locust import FastHttpUser, constant, events, task

KEY = os.environ["LOAD_API_KEY"]
BRAINS = os.environ["LOAD_BRAINS"].split(",")
ACKED_PATH = os.environ["LOAD_ACKED"]

NAMES = ("Ana", "Ben", "Chloe", "Dev", "Emeka", "Fatima", "Goran", "Hana")
PLACES = ("Lisbon", "Osaka", "Nairobi", "Toronto", "Krakow", "Lima", "Hanoi", "Oslo")
THINGS = (
    "rowing",
    "climbing",
    "pottery",
    "the violin",
    "chess",
    "sourdough baking",
    "birdwatching",
    "Spanish",
)
DAYS = ("last week", "yesterday", "on Monday", "in March", "two days ago", "this morning")
QUESTIONS = (
    "Where did {name} move to?",
    "What hobby did {name} pick up?",
    "When did {name} start {thing}?",
    "Who lives in {place}?",
    "What does {name} think about {thing}?",
)

acked: list[dict[str, str]] = []


def message() -> str:
    name, place, thing, day = (
        random.choice(NAMES),
        random.choice(PLACES),
        random.choice(THINGS),
        random.choice(DAYS),
    )
    return random.choice(
        (
            f"I moved to {place} {day} and I am still unpacking.",
            f"{name} told me {day} that they started {thing}.",
            f"I finally tried {thing} {day}; it was harder than I expected.",
            f"My friend {name} from {place} recommended {thing} to me.",
        )
    )


class BrainstoreClient(FastHttpUser):
    wait_time = constant(0)

    def on_start(self) -> None:
        self.auth = {"Authorization": f"Bearer {KEY}"}

    def _expect(self, response: Any, status: int) -> bool:
        if response.status_code == status:
            response.success()
            return True
        response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")
        return False

    @task(3)
    def remember_record(self) -> None:
        brain = random.choice(BRAINS)
        body = {
            "content": {
                "kind": "message",
                "role": "user",
                "speaker": random.choice(NAMES),
                "text": message(),
            },
            "occurred_at": f"2025-{random.randint(1, 12):02d}-{random.randint(1, 28):02d}T12:00:00Z",
        }
        headers = {**self.auth, "Idempotency-Key": uuid.uuid4().hex}
        with self.client.post(
            f"/v1/brains/{brain}/records",
            json=body,
            headers=headers,
            name="rememberRecord",
            catch_response=True,
        ) as response:
            if self._expect(response, 202):
                acked.append({"brain": brain, "record_id": response.json()["id"]})

    @task(3)
    def create_context(self) -> None:
        brain = random.choice(BRAINS)
        query = random.choice(QUESTIONS).format(
            name=random.choice(NAMES), place=random.choice(PLACES), thing=random.choice(THINGS)
        )
        body = {"query": query, "budget": {"tokens": 1000}}
        with self.client.post(
            f"/v1/brains/{brain}/context",
            json=body,
            headers=self.auth,
            name="createContext",
            catch_response=True,
        ) as response:
            self._expect(response, 200)

    @task(2)
    def list_memories(self) -> None:
        brain = random.choice(BRAINS)
        with self.client.get(
            f"/v1/brains/{brain}/memories?limit=50",
            headers=self.auth,
            name="listMemories",
            catch_response=True,
        ) as response:
            self._expect(response, 200)

    @task(1)
    def accept_object(self) -> None:
        brain = random.choice(BRAINS)
        body = {
            "type": "preference",
            "key": f"pref-{random.randint(0, 99)}",
            "value": {"level": random.randint(1, 5)},
        }
        with self.client.post(
            f"/v1/brains/{brain}/objects",
            json=body,
            headers=self.auth,
            name="acceptObject",
            catch_response=True,
        ) as response:
            self._expect(response, 201)


@events.test_stop.add_listener
def write_acked(**_: Any) -> None:
    with open(ACKED_PATH, "w", encoding="utf-8") as out:
        for item in acked:
            out.write(json.dumps(item) + "\n")
