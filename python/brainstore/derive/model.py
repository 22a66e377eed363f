"""The shapes of derivation: what goes in (SourceText), what comes out (Assertion), who does it (Extractor)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["SINGLE_VALUED", "Assertion", "Extractor", "ExtractorUnavailable", "SourceText", "restated"]

# Attributes a subject holds one value of at a time: a new value conflicts with (or supersedes) the old.
SINGLE_VALUED = frozenset(
    {"lives_in", "works_at", "age", "job", "married_to", "name", "birthday", "from", "studies_at"}
)


@dataclass(frozen=True)
class Assertion:
    statement: str  # self-contained third-person sentence, pronouns resolved
    subject: str  # who/what it is about, by name ("Alice", "Alice's sister", "the office")
    owner: str | None  # whose own assertion it is; None when ownership cannot be established
    attribute: str | None  # normalized predicate key ("lives_in", "likes", ...); None for generic statements
    value: str | None  # normalized (lowercased) value for the attribute
    single_valued: bool  # one value at a time (lives_in, works_at, age, job, married_to, name, ...)
    change: bool  # the text states a change ("moved to", "now", "no longer", "started", "quit", ...)
    negated: bool  # "I don't like X", "no longer lives in"
    valid_from: datetime  # when it became true per the text; else occurred_at (tz-aware)
    valid_to: datetime | None  # exclusive end, only when the text bounds it
    span: tuple[int, int]  # [start, end) into SourceText.text: the exact supporting quote
    # Additive fields (defaults keep older constructors valid):
    # the text gave the time (valid_from/valid_to), rather than valid_from defaulting to occurred_at
    time_stated: bool = False
    # the clause corrects something said before ("Actually I moved in April, not March", "I meant
    # Porto", a correction Record): it replaces what it contradicts instead of supporting it
    corrective: bool = False
    # a bare denial with no content of its own ("No, that's wrong."): it asserts nothing, it only
    # withdraws what it answers (a correction Record's corrected Memory)
    retraction: bool = False
    # "I left Google" in a Record that does not say what Google was: the value left, for the planner to
    # read as the end of the subject's job there when it knows of one (see planner.MemoryRules.apply);
    # otherwise the assertion is the plain statement it reads as. "" when the text names no employer ("I
    # quit my job", "I got laid off"): the end of the one job the subject holds, if the planner knows one
    left: str | None = None
    # "Sorry, I meant Portland, not Denver", "*Portland": a value said in place of one said before, with no
    # clause of its own to tell what it is the value of: (the value meant, as written; the value it
    # replaces, normalized, or None when the text names none). The extractor folds it into what the
    # same Record said just before; else the planner reads it as the subject's own earlier statement of
    # that value (or, none named, the one just said), said again with this value, when it knows of one
    # (see planner.MemoryRules.apply); otherwise the assertion is the plain statement it reads as
    meant: tuple[str, str | None] | None = None


def restated(statement: str, value: str, meant: str) -> str | None:
    """``statement``, whose attribute's value is ``value``, with ``meant`` in its place ("Alice lives in
    Portland." for "Alice lives in Denver."); None when the statement does not show the value's words.
    A thing meant with its article ("a doctor") replaces a thing said with one ("Alice is a nurse."), the
    article too; a name said ("Alice lives in Denver.") is no thing it can replace."""
    words = r"\s+".join(re.escape(w) for w in value.split())
    article = r"an?\s+" if re.match(r"(?i:an?\s)", meant) else ""
    found = re.search(rf"(?<![\w'\u2019-]){article}{words}(?![\w'\u2019-])", statement, re.I) if words else None
    if found is None:
        return None
    return statement[: found.start()] + meant + statement[found.end() :]


@dataclass(frozen=True)
class SourceText:
    text: str  # the text spans refer to
    kind: str  # message | document | event | fact | correction
    speaker: str | None  # who said it (see source_text for the defaults)
    role: str | None  # user | assistant | system | other | None
    occurred_at: datetime  # tz-aware
    # A structured fact {subject, predicate, value}, kept whole so the rules need not re-parse the
    # synthesized "<subject> <predicate> <value>" text. None for every other shape. (Additive field.)
    triple: tuple[str, str, str] | None = None


@runtime_checkable
class Extractor(Protocol):
    """A provider: the rules below are the default; a model-backed extractor plugs in with this signature."""

    name: str

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]: ...


class ExtractorUnavailable(RuntimeError):
    """A provider that could not be reached (after its own bounded retries): the Record is not at
    fault, so derivation keeps it processing and tries it again later instead of marking it failed."""
