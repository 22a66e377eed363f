"""A model-backed Extractor: an OpenAI-compatible chat-completions endpoint with JSON-schema output.

For deployments that want it; the offline :class:`~brainstore.derive.extract.RuleExtractor` stays the
default. The prompt and the JSON schema are versioned files beside this module (``prompts/extract_v1.md``,
``prompts/extract_v1.schema.json``); a new version is a new pair of files and a new extractor name, so
``brainstore rederive`` can tell which Brains were derived with which.

What the model says is checked, never trusted:
- every proposal must quote a span that is in the Record's text verbatim; one whose quote is not found
  is dropped (a model cannot cite what was not said);
- the attribution gate runs after the model (:func:`gate_owner`): a proposal is owned only by the
  Record's speaker, never by the person spoken to or about (spec guarantee 5), and an assistant or
  system turn owns nothing and says nothing about the user (the rules of attribution.py);
- a structured fact (``{subject, predicate, value}``) needs no model: the rules read it;
- what the API would refuse in a request is no Memory either: a proposal whose words hold a NUL or a
  lone surrogate is dropped, and a date outside 0001-9999 in UTC is no date (the Record's time stands).

Calls are bounded: a timeout per call, and on 429, 5xx, a timeout or a connection failure at most
``max_retries`` more attempts with exponential backoff (a numeric Retry-After is honoured, capped). An
answer that is not the schema's JSON is retried the same way. Every HTTP attempt is one model call
(:attr:`LLMExtractor.model_calls`). When the endpoint stays unreachable the extractor raises
:class:`~brainstore.derive.model.ExtractorUnavailable` (the derivation worker keeps the Record
processing and tries it again later); any other failure raises :class:`LLMExtractionError` (the
Record is marked failed, and ``brainstore rederive`` derives it again).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import httpx

from brainstore.domain import UNSTORABLE

from .attribution import FIRST_SG, SECOND
from .extract import RuleExtractor
from .model import SINGLE_VALUED, Assertion, ExtractorUnavailable, SourceText

__all__ = ["PROMPT_VERSION", "LLMExtractionError", "LLMExtractor", "gate_owner", "load_prompt", "locate"]

PROMPT_VERSION = "extract_v1"
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_ASSISTANT_ROLES = frozenset({"assistant", "system"})
# Longest wait a Retry-After may impose on the derivation worker, which serves every tenant.
_MAX_RETRY_AFTER = 30.0
_WORD = re.compile(r"[A-Za-z']+")


class LLMExtractionError(RuntimeError):
    """The endpoint answered, but not with something usable (a 4xx, or no schema JSON after retries)."""


def load_prompt(version: str = PROMPT_VERSION) -> tuple[str, dict[str, Any]]:
    """The system prompt and the JSON schema of ``version``, from the package's data files."""
    folder = resources.files("brainstore.derive") / "prompts"
    prompt = (folder / f"{version}.md").read_text(encoding="utf-8")
    schema = json.loads((folder / f"{version}.schema.json").read_text(encoding="utf-8"))
    return prompt, schema


def locate(text: str, quote: str) -> tuple[int, int] | None:
    """The [start, end) of ``quote`` in ``text`` when it is there verbatim (outer whitespace aside)."""
    needle = quote.strip()
    if not needle:
        return None
    start = text.find(needle)
    return None if start < 0 else (start, start + len(needle))


def _same_person(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def gate_owner(source: SourceText, owner: str | None, quote: str) -> tuple[bool, str | None]:
    """(keep, owner) for a proposal after the attribution rules: only the speaker vouches for a claim.

    - assistant and system turns: nothing in the first or second person (what the model said about
      itself or the user) is kept, and the rest is owned by nobody;
    - a turn with a speaker: the owner is the speaker or nobody (what is said of the addressee or of a
      third person is theirs to vouch for, not the speaker's gift);
    - text with no speaker (document prose, an event): owned by nobody.
    """
    if source.role in _ASSISTANT_ROLES:
        words = {w.casefold() for w in _WORD.findall(quote)}
        if words & (FIRST_SG | SECOND | {"my", "me", "your", "yours", "mine"}):
            return False, None
        return True, None
    if source.speaker is None:
        return True, None
    return True, source.speaker if _same_person(owner, source.speaker) else None


def _timestamp(raw: Any, occurred_at: datetime) -> datetime | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        parsed = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=occurred_at.tzinfo or timezone.utc)  # noqa: UP017
    try:
        # 0001-01-01T00:00:00+05:00 is in year 0 in UTC, as the API refuses it: kept, every later read
        # of the Brain's Memories failed (a 500 on every engine but DuckDB, which failed the Record)
        parsed.astimezone(timezone.utc)  # noqa: UP017
    except OverflowError:
        return None
    return parsed


def _attribute(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    key = re.sub(r"[^a-z0-9]+", "_", raw.casefold()).strip("_")
    return key or None


_STRINGS = ("statement", "subject", "quote")
_OPTIONAL_STRINGS = ("owner", "attribute", "value", "valid_from", "valid_to")
_FLAGS = ("negated", "change", "corrective")
# The model's own words a Memory keeps (the quote must be in the Record, the owner is its speaker or nobody,
# the attribute is reduced to [a-z0-9_])
_KEPT_AS_SAID = ("statement", "subject", "value")


def _proposals(content: str) -> list[dict[str, Any]]:
    """The schema's ``memories`` list from a completion's content; ValueError when it is not that."""
    data = json.loads(content)
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise ValueError("the answer has no 'memories' list")
    out: list[dict[str, Any]] = []
    for item in data["memories"]:
        if not isinstance(item, dict):
            raise ValueError("a memory is not an object")
        for key in _STRINGS:
            if not isinstance(item.get(key), str):
                raise ValueError(f"memories[].{key}: must be a string")
        for key in _OPTIONAL_STRINGS:
            if item.get(key) is not None and not isinstance(item[key], str):
                raise ValueError(f"memories[].{key}: must be a string or null")
        for key in _FLAGS:
            if not isinstance(item.get(key, False), bool):
                raise ValueError(f"memories[].{key}: must be a boolean")
        out.append(item)
    return out


class LLMExtractor:
    """Extractor over ``POST {base_url}/chat/completions``; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        prompt_version: str = PROMPT_VERSION,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url or not model:
            raise ValueError("the llm extractor needs a base URL and a model name")
        if max_retries < 0 or timeout <= 0:
            raise ValueError("max_retries must be >= 0 and timeout > 0")
        self.name = f"llm-{prompt_version}:{model}"
        self.model = model
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        self._prompt, self._schema = load_prompt(prompt_version)
        self._schema_name = f"brainstore_{prompt_version}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self._rules = RuleExtractor()
        self._lock = threading.Lock()
        self.model_calls = 0  # HTTP attempts, retries included: the cost of derivation
        self.dropped_unquoted = 0  # proposals whose quote is not in the Record
        self.gated = 0  # proposals the attribution gate dropped or took the owner from
        self.dropped_unstorable = 0  # proposals with a NUL or a lone surrogate in their text

    def close(self) -> None:
        self._client.close()

    def cost(self) -> dict[str, int]:
        with self._lock:
            return {
                "model_calls": self.model_calls,
                "dropped_unquoted": self.dropped_unquoted,
                "gated": self.gated,
                "dropped_unstorable": self.dropped_unstorable,
            }

    def _count(self, field: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, field, getattr(self, field) + n)

    # --- Extractor --------------------------------------------------------------------------------
    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if source.triple is not None:
            return self._rules.extract(source, self_name=self_name)  # structured: nothing to read
        if not source.text.strip():
            return []
        out: list[Assertion] = []
        for item in self._complete(source, self_name):
            assertion = self._assertion(source, item)
            if assertion is not None:
                out.append(assertion)
        return out

    def _assertion(self, source: SourceText, item: dict[str, Any]) -> Assertion | None:
        if not item["statement"].strip() or not item["subject"].strip():
            return None  # well-formed, but nothing to remember
        # what the API refuses in a request, a model may still answer ("\u0000" is valid JSON): PostgreSQL
        # failed the Record on it, DuckDB on a lone surrogate, and the memory engine kept both
        if any(isinstance(item.get(key), str) and UNSTORABLE.search(item[key]) for key in _KEPT_AS_SAID):
            self._count("dropped_unstorable")
            return None
        span = locate(source.text, item["quote"])
        if span is None:
            self._count("dropped_unquoted")
            return None
        keep, owner = gate_owner(source, item.get("owner"), source.text[span[0] : span[1]])
        if not keep:
            self._count("gated")
            return None
        if owner is None and item.get("owner") is not None:
            self._count("gated")
        valid_from = _timestamp(item.get("valid_from"), source.occurred_at)
        valid_to = _timestamp(item.get("valid_to"), source.occurred_at)
        if valid_to is not None and valid_from is not None and valid_to <= valid_from:
            valid_to = None  # an empty or reversed period says nothing
        attribute = _attribute(item.get("attribute"))
        value = item.get("value")
        return Assertion(
            statement=" ".join(item["statement"].split()),
            subject=" ".join(item["subject"].split()),
            owner=owner,
            attribute=attribute,
            value=" ".join(value.casefold().split()) if attribute and isinstance(value, str) else None,
            single_valued=attribute in SINGLE_VALUED,
            change=bool(item.get("change")),
            negated=bool(item.get("negated")),
            valid_from=valid_from or source.occurred_at,
            valid_to=valid_to,
            span=span,
            time_stated=valid_from is not None or valid_to is not None,
            corrective=bool(item.get("corrective")),
        )

    # --- the endpoint -----------------------------------------------------------------------------
    def _request(self, source: SourceText, self_name: str | None) -> dict[str, Any]:
        record = {
            "text": source.text,
            "kind": source.kind,
            "speaker": source.speaker,
            "role": source.role,
            "self": self_name,
            "occurred_at": source.occurred_at.isoformat(),
        }
        return {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": self._prompt},
                {"role": "user", "content": json.dumps(record, ensure_ascii=False)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": self._schema_name, "strict": True, "schema": self._schema},
            },
        }

    def _complete(self, source: SourceText, self_name: str | None) -> list[dict[str, Any]]:
        body = self._request(source, self_name)
        problem = ""
        transient = True
        wait: float | None = None  # the endpoint's Retry-After, when it gave one
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(min(wait, _MAX_RETRY_AFTER) if wait is not None else self.backoff * 2 ** (attempt - 1))
                wait = None
            self._count("model_calls")
            try:
                response = self._client.post("/chat/completions", json=body)
            except httpx.TimeoutException:
                problem, transient = "the endpoint timed out", True
                continue
            except httpx.TransportError as exc:
                problem, transient = f"the endpoint is unreachable ({type(exc).__name__})", True
                continue
            if response.status_code in _RETRY_STATUSES or response.status_code >= 500:
                problem, transient, wait = f"HTTP {response.status_code}", True, _retry_after(response)
                continue
            if response.status_code >= 400:
                raise LLMExtractionError(f"the endpoint refused the request: HTTP {response.status_code}")
            try:
                return _proposals(_content(response))
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                problem, transient = f"the answer is not the schema's JSON ({exc})", False
                continue
        attempts = self.max_retries + 1
        if transient:
            raise ExtractorUnavailable(f"{problem} after {attempts} attempts")
        raise LLMExtractionError(f"{problem} after {attempts} attempts")


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None  # an HTTP date: the backoff schedule is good enough


def _content(response: httpx.Response) -> str:
    data = response.json()
    message = data["choices"][0]["message"]
    if message.get("refusal"):
        raise ValueError(f"the model refused: {message['refusal']}")
    content = message["content"]
    if not isinstance(content, str):
        raise TypeError("choices[0].message.content is not a string")
    return content
