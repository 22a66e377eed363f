"""The default, deterministic, offline extractor ("rules-v1"): Record text -> atomic Assertions.

Pipeline per SourceText: split sentences (exact offsets) -> drop questions, greetings, thanks and filler
-> strip leading interjections and vocatives ("Hey Mel!", "..., Caroline!") -> split coordinated clauses
where safe -> find the clause's subject and owner (see attribution.py) -> rewrite it as a self-contained
third-person statement (pronouns and relative times resolved) -> read an attribute/value, negation and
change -> resolve valid_from/valid_to from the clause's time expressions (timeexpr.py).

Nothing here raises on arbitrary text; an unparseable clause yields no assertion rather than a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .attribution import (
    ADVERBS,
    DROP_SUBJECTS,
    FIRST_PL,
    FIRST_SG,
    IRREGULAR_PAST,
    MODALS,
    PERSON_NOUNS,
    SECOND,
    SELF_NOUNS,
    THIRD_SG,
    conjugate_3sg,
    is_name_token,
)
from .model import SINGLE_VALUED, Assertion, Extractor, SourceText
from .timeexpr import find_time_expressions, render

__all__ = ["RuleExtractor", "default_extractor", "source_text"]

_ASSISTANT_ROLES = {"assistant", "system"}

# ---------------------------------------------------------------------------------------------- sources


def source_text(content: dict[str, Any], *, self_name: str | None, occurred_at: datetime) -> SourceText:
    """The text a stored content dict is read as, and who said it."""
    kind = str(content.get("kind") or "document")
    if kind == "message":
        role = content.get("role")
        speaker = content.get("speaker") or None
        if speaker is None:
            if role in _ASSISTANT_ROLES:
                speaker = role
            elif role in (None, "user"):
                # a user turn with no speaker is the Brain's self (a message without a role is a user turn)
                speaker = self_name
        return SourceText(str(content.get("text") or ""), kind, speaker, role, occurred_at)
    if kind == "event":
        name, text = str(content.get("name") or ""), content.get("text")
        return SourceText(f"{name}: {text}" if text else name, kind, None, None, occurred_at)
    if kind == "fact":
        if all(isinstance(content.get(k), str) for k in ("subject", "predicate", "value")):
            s, p, v = (str(content[k]).strip() for k in ("subject", "predicate", "value"))
            return SourceText(f"{s} {p} {v}", kind, None, None, occurred_at, triple=(s, p, v))
        return SourceText(str(content.get("text") or ""), kind, None, None, occurred_at)
    if kind == "correction":
        # the correction's text is the new truth, said by the Brain's self
        return SourceText(str(content.get("text") or ""), kind, self_name, "user", occurred_at)
    return SourceText(str(content.get("text") or ""), kind, None, None, occurred_at)


# ------------------------------------------------------------------------------------------- lexicons

_VERB_BASES = [
    "live",
    "work",
    "love",
    "like",
    "enjoy",
    "have",
    "go",
    "want",
    "need",
    "play",
    "make",
    "take",
    "get",
    "move",
    "start",
    "quit",
    "join",
    "leave",
    "become",
    "visit",
    "see",
    "meet",
    "run",
    "read",
    "write",
    "paint",
    "cook",
    "bake",
    "teach",
    "learn",
    "study",
    "watch",
    "travel",
    "buy",
    "sell",
    "own",
    "adopt",
    "marry",
    "hate",
    "prefer",
    "drive",
    "walk",
    "swim",
    "hike",
    "sing",
    "dance",
    "ride",
    "try",
    "finish",
    "plan",
    "think",
    "believe",
    "know",
    "feel",
    "keep",
    "spend",
    "volunteer",
    "attend",
    "help",
    "build",
    "create",
    "grow",
    "raise",
    "support",
    "host",
    "celebrate",
    "lose",
    "win",
    "give",
    "use",
    "stay",
    "return",
    "retire",
    "graduate",
    "change",
    "switch",
    "decide",
    "found",
    "open",
    "close",
    "call",
    "come",
    "do",
    "say",
    "tell",
    "speak",
    "listen",
    "eat",
    "drink",
    "wear",
    "look",
    "seem",
    "turn",
    "began",
    "begin",
    "collect",
    "practice",
    "practise",
    "train",
]
_VERB_FORMS: set[str] = set(IRREGULAR_PAST) | {"is", "are", "am", "was", "were", "has", "had", "does", "did"}
for _b in _VERB_BASES:
    _VERB_FORMS.add(_b)
    _VERB_FORMS.add(conjugate_3sg(_b))
    _VERB_FORMS.add(_b + "d" if _b.endswith("e") else _b + "ed")
_VERB_FORMS |= MODALS | {"'s", "s", "'ll", "ll", "'d", "d", "'ve", "'re", "'m"}

_JOBS = set(
    [
        "teacher",
        "nurse",
        "doctor",
        "engineer",
        "developer",
        "programmer",
        "designer",
        "artist",
        "painter",
        "writer",
        "author",
        "lawyer",
        "accountant",
        "chef",
        "cook",
        "baker",
        "scientist",
        "researcher",
        "professor",
        "student",
        "manager",
        "consultant",
        "architect",
        "pharmacist",
        "dentist",
        "therapist",
        "counselor",
        "counsellor",
        "musician",
        "singer",
        "actor",
        "actress",
        "photographer",
        "journalist",
        "editor",
        "firefighter",
        "police",
        "officer",
        "pilot",
        "driver",
        "farmer",
        "mechanic",
        "electrician",
        "plumber",
        "carpenter",
        "librarian",
        "analyst",
        "entrepreneur",
        "founder",
        "ceo",
        "cto",
        "cfo",
        "intern",
        "veterinarian",
        "vet",
        "barista",
        "waiter",
        "waitress",
        "cashier",
        "clerk",
        "secretary",
        "assistant",
        "paramedic",
        "surgeon",
        "psychologist",
        "social",
        "worker",
        "coach",
        "trainer",
        "athlete",
        "soldier",
        "judge",
        "banker",
        "economist",
        "translator",
        "tutor",
        "volunteer",
        "freelancer",
        "dancer",
        "poet",
        "youtuber",
        "streamer",
        "influencer",
        "marketer",
        "recruiter",
        "realtor",
        "tailor",
    ]
)
_PETS = r"(?:dog|cat|puppy|kitten|hamster|parrot|rabbit|bunny|fish|turtle|horse|snake|lizard|bird|guinea pig|ferret|goldfish)"
_PRONOUN_VALUES = {
    "it", "that", "this", "them", "him", "her", "you", "me", "us", "those", "these", "one", "so", "too",
    "the idea", "the sound of that", "what you", "how", "to", "mine", "yours", "everything", "all",
}  # fmt: skip
_VACUOUS = {
    "agree", "know", "see", "guess", "understand", "appreciate", "mean", "bet", "promise", "swear",
    "wonder", "hear", "get", "thank", "thanks", "sorry", "glad", "sure", "right", "feel", "think",
    "hope", "totally", "so", "too", "really", "much", "lot", "am", "is", "are", "was", "do", "did", "does",
    "can", "will", "would", "not", "just", "also", "still", "yes", "no", "true", "same", "okay", "ok",
    "here", "there", "with", "for", "to", "of", "the", "a", "an", "very", "be", "been", "have", "has",
    "love", "like", "miss", "wish", "care", "worry", "try", "trying", "hoping", "thinking", "wondering",
}  # fmt: skip

# ------------------------------------------------------------------------------------------- patterns

_TOK = re.compile(r"[A-Za-z\u00C0-\u024F]+(?:['\u2019][A-Za-z]+)*|\d+(?:[.,:/]\d+)*|\S")
_ABBREV = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "prof",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "inc",
    "ltd",
    "co",
    "mt",
    "no",
}
_SENT_END = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s|$)|\n\s*")
_INTERJ = re.compile(
    r"(?:(?:oh+|ah+|wow+|whoa|yeah+|yes|yep|yup|nope|no|well|so|ok|okay|hey+|hi+|hello|lol|lmao|haha\w*|hehe\w*"
    r"|hmm+|um+|uh+|omg|gosh|honestly|actually|also|and|but|plus|btw|anyway|anyways|right|sure|cool|great"
    r"|nice|awesome|aw+|ugh|yay|thanks|thank\s+you|man|dude|totally|absolutely|definitely|true|indeed"
    r"|oh\s+my\s+god|oh\s+no|seriously|haha|welp|alright|yeah\s+yeah|of\s+course|exactly|agreed"
    r"|congrats|congratulations|oops|whew|phew|hah|ha|ahh|ooh|wowza|dang|damn|jeez|geez|by\s+the\s+way"
    r"|fun\s+fact|guess\s+what|you\s+know|i\s+mean|to\s+be\s+honest|tbh|fr|for\s+real|in\s+fact|now)"
    r"(?![\w'\u2019])[\s,!.:;\u2014\u2013-]*)+",
    re.I,
)
_FILLER = re.compile(
    r"^(?:(?:good|nice|great|glad)\s+to\s+(?:see|hear|meet|talk|chat)|see\s+you|talk\s+(?:soon|later)|take\s+care"
    r"|good\s+(?:luck|night|morning|evening|afternoon|job|work)|have\s+(?:a|an)\s+\w+|happy\s+\w+day|bye"
    r"|goodbye|cheers|welcome|you're\s+welcome|no\s+problem|no\s+worries|np|ttyl|gtg|brb|thx|ty|xoxo"
    r"|sounds\s+(?:good|great|fun|amazing)|same\s+here|me\s+too|keep\s+(?:it\s+up|going|up)|let\s+me\s+know"
    r"|hope\s+(?:you|it|that|so)|wish\s+me|love\s+you|miss\s+you|catch\s+you)\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:(?:what|why|how|who|where|when|which|whom|whose)(?:['\u2019]s|\s+(?:is|are|was|were|do|does|did|have|has"
    r"|can|could|would|will|should|about|else|kind|made|makes|happened|if))\b|(?:do|does|did|are|is|was|were|can"
    r"|could|would|will|have|has|had|should|shall|may|might|isn['\u2019]t|aren['\u2019]t|don['\u2019]t"
    r"|didn['\u2019]t|won['\u2019]t)\s+(?:you|it|they|we|he|she|i|that|this|there|your|anyone)\b|any\s+(?:fun|plans|"
    r"ideas|tips|news|thoughts))",
    re.I,
)
_SPLIT = re.compile(
    r"\s*;\s*|\s+[-\u2013\u2014]+\s+|(?<=\w)-\s+|\s*[\u2013\u2014]\s*|\s*\(\s*|\s*\)\s*"
    r"|,?\s+(?P<conj>and|but|so|because|cause|'cause|though|although|whereas|while|plus)\s+"
    r"|,\s+(?=(?:I|I'm|I've|I'll|I'd|we|we're|my|he|she|they|it|it's|that|this|you|you're)\b)",
)
_PRE = (
    r"^(?:(?:do|does|did|am|is|are|was|were|have|has|had|will|shall|not|never|no\s+longer|still|also|really"
    r"|now|currently|recently|just|finally|actually|totally|absolutely|always|usually|so|truly|definitely|even"
    r"|already|both|all|officially|originally|been|being|gonna|going\s+to|got\s+to|get\s+to|used\s+to|would"
    r"|could|should|might|may|can|must|def|kinda|sort\s+of|kind\s+of|pretty|very|happily|proudly|soon|newly"
    r"|basically|mostly|only|ever|seriously|honestly|literally|now\s+officially)\s+)*"
)
_NEG = re.compile(
    r"\b(?:not|never|no\s+longer|nobody|no\s+one|hate|hates|hated|dislike|dislikes|disliked|detest|detests"
    r"|used\s+to|anymore|any\s+more)\b",
    re.I,
)
_NEG_EXCEPT = re.compile(
    r"\b(?:can\s+not\s+wait|could\s+not\s+be|not\s+only|not\s+just|never\s+been\s+happier|never\s+felt\s+better"
    r"|can\s+not\s+believe|could\s+not\s+believe|not\s+sure|never\s+forget)\b",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:moved|move|moving|relocated|relocating|now|switched|switching|switch|no\s+longer|anymore|any\s+more"
    r"|started|starting|quit|quitting|became|become|becoming|joined|got\s+married|got\s+divorced|divorced"
    r"|turned|used\s+to|changed|new\s+job|adopted|got\s+an?|left\s+(?:my|his|her|the)\s+job|began|retired"
    r"|graduated|these\s+days|nowadays)\b",
    re.I,
)
_CUT = re.compile(
    r"\s*(?:[,;:!?()\"\u201c\u201d]|\s[-\u2013\u2014]\s|[\u2013\u2014]|\.(?:\s|$)|\.$)"
    r"|\s+(?:since|from|until|till|for|with|because|and|but|when|after|before|now|anymore|these\s+days"
    r"|right\s+now|at\s+the\s+moment|nowadays|though|too|as\s+well|so\s+much|a\s+lot|very\s+much|lately"
    r"|again|which|who|where|that|so|if|while|ago|last|next|this|yesterday|today|tonight|recently|anyway"
    r"|or|than|like|of\s+course|either|any\s+more|already|full[\s-]time|part[\s-]time)\b",
    re.I,
)
_PLACE_CUT = re.compile(r"\s+(?:in|on|at|near|by|to|as|during|around|with)\b", re.I)


@dataclass(frozen=True)
class _Pattern:
    attribute: str
    regex: re.Pattern[str]
    change: bool = False
    negated: bool = False
    place: bool = False  # cut the value at "in"/"on"/"at" ...
    check: str | None = None  # "cap": value must be capitalised; "job": value must be a job word


def _p(attr: str, rx: str, **kw: Any) -> _Pattern:
    return _Pattern(attr, re.compile(_PRE + rx, re.I), **kw)


_PATTERNS = [
    _p(
        "lives_in",
        r"(?:lived|living|live|lives|reside|resides|resided|residing|based|staying|settled(?:\s+down)?)\s+(?:in|at)\s+(?P<v>.+)",
        place=True,
    ),
    _p(
        "lives_in",
        r"(?:moved|move|moving|moves|relocated|relocating|relocate)\s+(?:back\s+|out\s+|over\s+)?(?:to|into)\s+(?P<v>.+)",
        change=True,
        place=True,
    ),
    _p("works_at", r"(?:work|works|worked|working)\s+(?:at|for)\s+(?P<v>.+)", place=True),
    _p("works_at", r"employed\s+(?:at|by)\s+(?P<v>.+)", place=True),
    _p(
        "works_at",
        r"(?:started|start|starting|began)\s+(?:working\s+|a\s+(?:new\s+)?job\s+|work\s+|my\s+(?:new\s+)?job\s+)(?:at|for|with)\s+(?P<v>.+)",
        change=True,
        place=True,
    ),
    _p("works_at", r"(?:joined|join|joining)\s+(?P<v>.+)", change=True, place=True, check="cap"),
    _p(
        "works_at",
        r"(?:quit|left|leaving|quitting)\s+(?:my|his|her|their|the)\s+job\s+(?:at|with)\s+(?P<v>.+)",
        change=True,
        negated=True,
        place=True,
    ),
    _p("job", r"work(?:s|ed|ing)?\s+as\s+(?:an?\s+)?(?P<v>.+)", place=True),
    _p(
        "job",
        r"(?:became|become|becoming|becomes)\s+(?:an?\s+)(?P<v>.+)",
        change=True,
        place=True,
        check="job",
    ),
    _p("job", r"(?:am|is|are|was)\s+(?:an?\s+)(?P<v>.+)", place=True, check="job"),
    _p("studies_at", r"(?:study|studies|studied|studying)\s+at\s+(?P<v>.+)", place=True),
    _p("from", r"(?:am|is|are)\s+(?:originally\s+)?from\s+(?P<v>.+)", place=True),
    _p("from", r"grew\s+up\s+in\s+(?P<v>.+)", place=True),
    _p("age", r"(?:am|is|are)\s+(?P<v>\d{1,3})(?:\s+(?:years?\s+old|y/?o))?\s*$"),
    _p("age", r"(?:turned|turn|turning|turns)\s+(?P<v>\d{1,3})\b", change=True),
    _p("married_to", r"(?:am|is|are|was|got|get|getting)?\s*married\s+to\s+(?P<v>.+)", place=True),
    _p("married_to", r"married\s+(?P<v>.+)", change=True, place=True, check="cap"),
    _p(
        "married_to",
        r"(?:got\s+)?divorced\s+(?:from\s+)?(?P<v>.+)",
        change=True,
        negated=True,
        place=True,
        check="cap",
    ),
    _p(
        "has_pet",
        rf"(?:have|has|had|got|get|getting|adopted|adopt|own|owns)\s+(?:a|an|one|two|three|four|\d+|some)?\s*(?:(?:new|little|cute|sweet|pet|rescue|baby|black|white|old|young|big|small)\s+)*(?P<v>{_PETS})(?:s|es)?\b",
    ),
    _p("birthday", r"(?:was\s+)?born\s+on\s+(?P<v>.+)"),
    _p("name", r"(?:called|named|go\s+by|goes\s+by)\s+(?P<v>.+)", place=True, check="cap"),
    _p(
        "likes",
        r"(?:like|likes|liked|love|loves|loved|enjoy|enjoys|enjoyed|adore|adores|adored|prefer|prefers|preferred|hate|hates|hated|dislike|dislikes|disliked|detest|detests|can\s+not\s+stand|am\s+into|is\s+into|are\s+into|(?:am|is|are)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|(?:am|is|are)\s+passionate\s+about|(?:am|is|are)\s+obsessed\s+with|(?:am|is|are)\s+fond\s+of)\s+(?P<v>.+)",
    ),
]

# ------------------------------------------------------------------------------------------ utilities


def _norm(s: str) -> str:
    return s.replace("\u2019", "'")


def _expand(s: str) -> str:
    """Contractions expanded, same text otherwise (for attribute matching only; offsets are not kept)."""
    s = _norm(s)
    s = re.sub(r"\b(can)'t\b", r"\1 not", s, flags=re.I)
    s = re.sub(r"\bwon't\b", "will not", s, flags=re.I)
    s = re.sub(r"n't\b", " not", s, flags=re.I)
    s = re.sub(r"\bcannot\b", "can not", s, flags=re.I)
    s = re.sub(r"'m\b", " am", s)
    s = re.sub(r"'re\b", " are", s)
    s = re.sub(r"'ve\b", " have", s)
    s = re.sub(r"'ll\b", " will", s)
    s = re.sub(r"'d\b", " would", s)
    return s


def _split_sentences(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        if m.group(0).startswith("."):
            # "Dr. Smith", "e.g. this", "J. K." are not sentence ends
            prev = re.search(r"([A-Za-z.]+)$", text[start : m.start()])
            if prev and (prev.group(1).lower().rstrip(".") in _ABBREV or len(prev.group(1)) == 1):
                continue
        end = m.end()
        if text[start:end].strip():
            out.append((start, end))
        start = end
    if text[start:].strip():
        out.append((start, len(text)))
    return out


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and (text[s].isspace() or text[s] in ",;:-\u2013\u2014\"'\u201c\u201d*~>(["):
        s += 1
    while e > s and (text[e - 1].isspace() or text[e - 1] in ".,;:!?-\u2013\u2014\"'\u201c\u201d*~)]\u2026"):
        e -= 1
    return s, e


def _clean_value(v: str, place: bool) -> str:
    m = _CUT.search(v)
    if m:
        v = v[: m.start()]
    if place:
        m = _PLACE_CUT.search(v)
        if m:
            v = v[: m.start()]
    v = re.sub(r"^(?:a|an|the|some|my\s+own)\s+", "", v.strip(), flags=re.I)
    v = re.sub(r"\s+", " ", v).strip(" .'\"").lower()
    return v


# ------------------------------------------------------------------------------------------- subjects


@dataclass
class _Subject:
    subject: str
    owner: str | None
    display: str  # replaces the subject words in the statement
    pred_start: int  # absolute offset where the predicate begins
    prefix: str = ""  # words the subject token carried ("I'm" -> "is")
    conj: bool = False  # conjugate the first verb to the third person singular
    self_attr: str | None = None  # "my name is X" -> "name"
    person: bool = True  # the subject is a person (or pet): may be inherited by a verb-initial clause
    sole: bool = True  # no other subject inside the clause ("..., they motivate me"): safe to inherit


def _words(text: str, s: int, e: int) -> list[tuple[str, int, int]]:
    return [(_norm(m.group(0)), m.start(), m.end()) for m in _TOK.finditer(text, s, e)]


def _is_verb(tok: str) -> bool:
    return tok.lower() in _VERB_FORMS


def _contraction_prefix(tok: str) -> str:
    low = tok.lower()
    for suf, word in (
        ("'m", "is"),
        ("'re", "is"),
        ("'ve", "has"),
        ("'ll", "will"),
        ("'d", "would"),
        ("'s", "is"),
    ):
        if low.endswith(suf):
            return word
    if low in ("im",):
        return "is"
    if low in ("ive",):
        return "has"
    return ""


# ----------------------------------------------------------------------------------------- extractor


class RuleExtractor:
    """Deterministic rules; the default Extractor. See the module and attribution.py docstrings."""

    name = "rules-v1"

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        if source.triple is not None:
            return self._fact(source, self_name)
        return _Run(source, self_name).run()

    def _fact(self, source: SourceText, self_name: str | None) -> list[Assertion]:
        subject, predicate, value = source.triple  # type: ignore[misc]
        text = source.text
        if not subject or not text.strip():
            return []
        if self_name and subject.lower() in ("i", "me", "self", "user", "the user", "myself"):
            subject = self_name
        pred = " ".join(predicate.lower().replace("_", " ").split())
        attr = _FACT_PREDICATES.get(pred)
        if attr is None:
            probe = _Run(SourceText(f"X {predicate} {value}", "fact", None, None, source.occurred_at), None)
            found = probe.attribute_of(_expand(f"{predicate} {value}"), "")
            attr = found[0] if found else (re.sub(r"[^a-z0-9]+", "_", pred).strip("_") or None)
        negated = bool(_NEG.search(pred)) and not _NEG_EXCEPT.search(pred)
        exprs = find_time_expressions(text, source.occurred_at)
        span = _Run.time_span(exprs, source.occurred_at)
        start, end = _trim(text, 0, len(text))
        if end <= start:
            return []
        statement = f"{subject} {predicate} {value}".strip()
        statement = statement[:1].upper() + statement[1:]
        if not statement.endswith((".", "!", "?")):
            statement += "."
        val = value.strip().lower() or None
        return [
            Assertion(
                statement=statement,
                subject=subject,
                owner=subject,
                attribute=attr,
                value=val,
                single_valued=attr in SINGLE_VALUED,
                change=bool(_CHANGE.search(pred)),
                negated=negated,
                valid_from=span[0],
                valid_to=span[1],
                span=(start, end),
            )
        ]


_FACT_PREDICATES = {
    "lives in": "lives_in", "live in": "lives_in", "lives_in": "lives_in", "location": "lives_in",
    "city": "lives_in", "home": "lives_in", "resides in": "lives_in", "based in": "lives_in",
    "works at": "works_at", "works for": "works_at", "employer": "works_at", "company": "works_at",
    "works at company": "works_at", "likes": "likes", "like": "likes", "loves": "likes", "enjoys": "likes",
    "favorite": "likes", "prefers": "likes", "name": "name", "is named": "name", "is called": "name",
    "age": "age", "is aged": "age", "job": "job", "occupation": "job", "works as": "job", "profession": "job",
    "role": "job", "title": "job", "has pet": "has_pet", "pet": "has_pet", "has a pet": "has_pet",
    "birthday": "birthday", "born on": "birthday", "date of birth": "birthday", "married to": "married_to",
    "spouse": "married_to", "is married to": "married_to", "husband": "married_to", "wife": "married_to",
    "is from": "from", "from": "from", "hometown": "from", "studies at": "studies_at", "school": "studies_at",
}  # fmt: skip


class _Run:
    """One extraction: the state shared by the sentences of one SourceText."""

    def __init__(self, source: SourceText, self_name: str | None) -> None:
        self.src = source
        self.text = source.text or ""
        self.self_name = self_name
        self.assistant = source.role in _ASSISTANT_ROLES
        self.speaker = None if self.assistant else (source.speaker or None)
        self.is_self = bool(self.speaker and self_name and self.speaker.casefold() == self_name.casefold())
        self.anon = "the author" if source.kind in ("document", "event", "fact") else "the speaker"
        self.persons: list[str] = []  # named people seen so far (for "he"/"she")
        self.mentions: set[str] = set()  # every capitalised word seen inside a sentence (people, places)
        self.addressee: str | None = None
        self.out: list[Assertion] = []

    # ---- who is "I", "you"
    def me(self) -> str:
        return self.speaker or self.anon

    def me_owner(self) -> str | None:
        return self.speaker

    def you(self) -> str:
        return self.addressee or "the addressee"

    # ---- driver
    def run(self) -> list[Assertion]:
        text = self.text
        if not text.strip():
            return []
        sentences = _split_sentences(text)
        self.addressee = self._message_addressee(sentences)
        for s, e in sentences:
            self._sentence(s, e)
            for w, _, _ in _words(text, s, e)[1:]:
                if is_name_token(w.removesuffix("'s")) and w not in ("I",):
                    self.mentions.add(w.removesuffix("'s"))
        return self.out

    def _message_addressee(self, sentences: list[tuple[int, int]]) -> str | None:
        if self.src.kind != "message" or self.assistant:
            return None
        found: set[str] = set()
        for s, e in sentences:
            sent = self.text[s:e]
            m = re.match(
                r"^\W*(?:(?:hey|hi|hello|oh|wow|thanks|thank\s+you|yeah|yes|no|ok|okay|congrats|congratulations|aw+|haha|dear|sorry)[\s,!]+)?([A-Z][a-z]+)\s*[,!]",
                sent,
                re.I,
            )
            if m and is_name_token(m.group(1)):
                found.add(m.group(1))
            m = re.search(r",\s*([A-Z][a-z]+)\s*[.!?\u2026]*[\"')\]]*\s*$", sent)
            if (
                m
                and is_name_token(m.group(1))
                and (sent.rstrip().endswith(("!", "?")) or re.search(r"\byou", sent, re.I))
            ):
                found.add(m.group(1))
        if self.speaker:
            found.discard(self.speaker)
        return next(iter(found)) if len(found) == 1 else None

    def _sentence(self, s: int, e: int) -> None:
        text = self.text
        s, e = _trim(text, s, e)
        if e <= s:
            return
        raw = text[s:e]
        tail = text[e : e + 4]
        if tail.lstrip(".!\u2026\"')").startswith("?") or raw.endswith("?"):
            return
        # leading interjections and a leading vocative ("Hey Mel!", "Caroline, ...")
        while True:
            m = _INTERJ.match(text, s, e)
            ns = m.end() if m and m.end() > s else s
            v = re.compile(r"([A-Z][a-z]+)\s*[,!]\s+").match(text, ns, e)
            if v and is_name_token(v.group(1)):
                ns = v.end()
            if ns == s:
                break
            s = ns
        # a trailing vocative (", Mel")
        v = re.search(r",\s*([A-Z][a-z]+)\s*$", text[s:e])
        if v and is_name_token(v.group(1)) and self.src.kind == "message":
            e = s + v.start()
        s, e = _trim(text, s, e)
        if e - s < 2:
            return
        body = text[s:e]
        if _FILLER.match(body) or _QUESTION_START.match(body):
            return
        prev: _Subject | None = None
        for cs, ce, conj in self._clauses(s, e):
            cs, ce = _trim(text, cs, ce)
            m = _INTERJ.match(text, cs, ce)
            if m and m.end() > cs:
                cs, ce = _trim(text, m.end(), ce)
            if ce - cs < 2 or _FILLER.match(text, cs, ce) or _QUESTION_START.match(text[cs:ce]):
                prev = None if not conj else prev
                continue
            subj = self._subject(cs, ce, prev if conj else None)
            if subj is None:
                prev = None
                continue
            inner = {t.lower() for t, _, _ in _words(text, subj.pred_start, ce)}
            subj.sole = not (
                inner & (THIRD_SG | DROP_SUBJECTS | SECOND | FIRST_PL | {"who", "which", "that"})
            )
            self._emit(subj, cs, ce)
            prev = subj

    def _clauses(self, s: int, e: int) -> list[tuple[int, int, bool]]:
        """Clause spans; the flag says the clause began after and/but (it may inherit the subject)."""
        text = self.text
        out: list[tuple[int, int, bool]] = []
        cur, conj_flag = s, False
        for m in _SPLIT.finditer(text, s, e):
            right = _words(text, m.end(), min(e, m.end() + 60))
            if not right:
                continue
            conj = m.group("conj")
            first = right[0][0]
            if (
                conj
                and conj.lower() == "and"
                and not any(_is_verb(t) for t, _, _ in _words(text, cur, m.start()))
            ):
                continue  # "My sister and I ...": a coordinated subject, not two clauses
            if conj:
                starts_subject = first.lower() in FIRST_SG | FIRST_PL | SECOND | THIRD_SG | DROP_SUBJECTS | {
                    "my",
                    "our",
                    "me",
                } or (is_name_token(first) and len(right) > 1 and _is_verb(right[1][0]))
                starts_verb = (
                    conj.lower() in ("and", "but", "plus")
                    and first.lower() in _VERB_FORMS
                    and first.lower() not in MODALS
                )
                if not (starts_subject or starts_verb):
                    continue
            out.append((cur, m.start(), conj_flag))
            cur, conj_flag = m.end(), bool(conj)
        out.append((cur, e, conj_flag))
        return [c for c in out if c[1] > c[0]]

    # ---- subjects
    def _subject(self, cs: int, ce: int, prev: _Subject | None) -> _Subject | None:
        words = _words(self.text, cs, ce)
        if not words:
            return None
        w0, s0, e0 = words[0]
        low = w0.lower()
        nxt = words[1][0].lower() if len(words) > 1 else ""
        # reported speech: "<Name> said (that) he ...", "my sister told me she ..."
        first_person = low in FIRST_SG or (low == "me" and nxt == "and")
        if first_person and low != "me":
            if self.assistant:
                return None
            if len(words) > 2 and nxt == "and" and words[2][0].lower() in ("my",):
                pass
            return _Subject(self.me(), self.me_owner(), self.me(), e0, _contraction_prefix(w0), conj=True)
        if low in ("my", "me", "our") or first_person:
            if self.assistant:
                return None
            return self._possessive(words, cs, ce)
        if low in FIRST_PL:
            if self.assistant:
                return None
            disp = f"{self.me()} and others"
            pre = _contraction_prefix(w0).replace("is", "are").replace("has", "have")
            return _Subject(self.me(), self.me_owner(), disp, e0, pre)
        if low in SECOND or low == "your":
            if self.assistant:
                return None
            if low == "your":
                return None  # "your X": the addressee's belongings, too loose to attribute
            who = self.you()
            return _Subject(who, self.addressee, who, e0, _contraction_prefix(w0), conj=True)
        if low in THIRD_SG:
            if len(set(self.persons)) != 1 or self.mentions - set(self.persons):
                return None
            who = self.persons[-1]
            return _Subject(who, self._third_owner(who), who, e0, _contraction_prefix(w0))
        if low in DROP_SUBJECTS:
            return None
        if self.assistant and any(
            t.lower() in FIRST_SG | FIRST_PL | SECOND | {"my", "me", "our", "us", "your", "yours"}
            for t, _, _ in words
        ):
            return None
        # a verb-initial clause after "and"/"but" inherits the previous subject
        if prev is not None and prev.person and prev.sole and low in _VERB_FORMS and low not in MODALS:
            return _Subject(prev.subject, prev.owner, prev.display, s0, "", conj=prev.conj)
        # a name: "Bob likes tea", "Bob Smith's sister lives in Paris", "Bob said he likes tea"
        if is_name_token(w0):
            i = 0
            while i < len(words) and i < 4 and is_name_token(words[i][0].removesuffix("'s")):
                if words[i][0].endswith("'s"):
                    i += 1
                    break
                i += 1
            name_end = words[i - 1][2]
            name = self.text[s0:name_end]
            if name.endswith(("'s", "\u2019s")):
                base = name[:-2]
                # "Bob's sister ..." / "Bob's here": possessive or contraction
                if i < len(words) and words[i][0].lower() in PERSON_NOUNS:
                    noun = words[i][0]
                    subject = f"{base}'s {noun}"
                    return _Subject(
                        subject, self._third_owner(subject, base), subject, words[i][2], person=True
                    )
                return None
            if i >= len(words) or not _is_verb(words[i][0]):
                return None
            self.persons.append(name)
            return self._reported(words, i, name) or _Subject(name, self._third_owner(name), name, name_end)
        # a noun phrase: "The office is closed on Mondays"
        if low in ("the", "a", "an", "this", "our", "his", "her", "their"):
            for j in range(1, min(len(words), 6)):
                tok = words[j][0].lower()
                finite = tok in _VERB_FORMS and (
                    tok.endswith(("s", "ed")) or tok in IRREGULAR_PAST or tok in MODALS
                )
                if tok in ("is", "are", "was", "were", "has", "have", "had", "will", "opens", "closes") or (
                    finite and j > 1
                ):
                    if low in ("his", "her", "their", "this") or any("'" in w for w, _, _ in words[1:j]):
                        return None
                    np = self.text[words[1][1] : words[j - 1][2]]
                    subject = f"{low} {np}" if low in ("the", "a", "an") else f"{self.me()}'s {np}"
                    owner = None if low in ("the", "a", "an") else self.me_owner()
                    return _Subject(
                        subject,
                        owner,
                        subject[:1].upper() + subject[1:] if False else subject,
                        words[j - 1][2],
                        person=False,
                    )
            return None
        return None

    def _third_owner(self, who: str, base: str | None = None) -> str | None:
        """Third-person claims about the Brain's self establish its ownership only when the self says them
        or an application fact states them (see DESIGN: ownership)."""
        if self.assistant:
            return None
        head = base or who
        if (
            self.self_name
            and head.casefold() == self.self_name.casefold()
            and not (self.is_self or self.src.kind == "fact")
        ):
            return None
        return who

    def _reported(self, words: list[tuple[str, int, int]], i: int, name: str) -> _Subject | None:
        if i >= len(words) or words[i][0].lower() not in (
            "said",
            "says",
            "told",
            "tells",
            "mentioned",
            "mentions",
            "thinks",
            "thought",
            "claims",
            "claimed",
            "believes",
            "wrote",
            "writes",
            "explained",
        ):
            return None
        j = i + 1
        if j < len(words) and words[j][0].lower() in ("me", "us", "them", "him", "her"):
            j += 1
        if j < len(words) and words[j][0].lower() == "that":
            j += 1
        if j >= len(words) or words[j][0].lower() not in ("he", "she", "he's", "she's", "i", "i'm", "they"):
            return None
        pron = words[j][0]
        return _Subject(
            name,
            self._third_owner(name),
            name,
            words[j][2],
            _contraction_prefix(pron),
            conj=pron.lower().startswith("i"),
        )

    def _possessive(self, words: list[tuple[str, int, int]], cs: int, ce: int) -> _Subject | None:
        low = words[0][0].lower()
        me, owner = self.me(), self.me_owner()
        if low == "me" or low == "my":
            # "me and my sister", "my sister and I": true of the speaker; the other person is not attributed
            k = 0
            while k < len(words) and k < 8 and not _is_verb(words[k][0]):
                k += 1
            np_toks = [t.lower() for t, _, _ in words[:k]]
            if "and" in np_toks and ({"i", "me"} & set(np_toks)) and k < len(words) and k >= 3:
                others = [w for w in words[:k] if w[0].lower() not in ("i", "me", "and")]
                other = self.text[others[0][1] : others[-1][2]] if others else ""
                disp = f"{me} and {self._rewrite_simple(other)}" if other else me
                return _Subject(me, owner, disp, words[k - 1][2], "")
            if low == "me":
                return None
        # "my [adj] noun [noun]'s? ..." up to the verb
        j = 1
        while j < len(words) and j < 6 and not _is_verb(words[j][0]) and words[j][0] not in (",", "-"):
            j += 1
        if j >= len(words) or j == 1:
            return None
        np_words = [w for w, _, _ in words[1:j]]
        np = self.text[words[1][1] : words[j - 1][2]]
        np_low = [w.lower().removesuffix("'s") for w in np_words]
        pre = ""
        verb = words[j][0]
        if verb.startswith("'") or verb.lower() in ("s",):
            pre = _contraction_prefix(verb)
        if low == "our":
            subject = f"{me}'s {np}"
            return _Subject(subject, owner, subject, words[j - 1][2], person=np_low[-1] in PERSON_NOUNS)
        if any(w in PERSON_NOUNS for w in np_low):
            # "my sister", "my best friend", "my dog's name": about that person (or pet), never the speaker
            k = next(i for i, w in enumerate(np_low) if w in PERSON_NOUNS)
            noun = " ".join(w.removesuffix("'s") for w in np_words[: k + 1])
            subject = f"{me}'s {noun}"
            attr = None
            if k + 1 < len(np_low) and np_words[k].endswith("'s"):
                rest = np_low[k + 1 :]
                attr = (
                    "name"
                    if "name" in rest
                    else ("age" if "age" in rest else ("birthday" if "birthday" in rest else None))
                )
            if np_low[k] in ("husband", "wife", "spouse", "hubby") and k == len(np_low) - 1:
                attr = "married_to?"
            return _Subject(
                subject, subject if owner else None, f"{me}'s {np}", words[j - 1][2], pre, self_attr=attr
            )
        head = np_low[-1]
        if head in SELF_NOUNS or np_low[0] in ("favorite", "favourite", "fave"):
            attr = {
                "name": "name",
                "age": "age",
                "birthday": "birthday",
                "job": "job",
                "occupation": "job",
                "profession": "job",
            }.get(head)
            if np_low[0] in ("favorite", "favourite", "fave"):
                attr = "likes"
            return _Subject(me, owner, f"{me}'s {np}", words[j - 1][2], pre, self_attr=attr)
        subject = f"{me}'s {np}"
        return _Subject(subject, owner, subject, words[j - 1][2], pre, person=False)

    def _rewrite_simple(self, s: str | None) -> str:
        if not s:
            return ""
        return re.sub(r"\bmy\b", f"{self.me()}'s", _norm(s), flags=re.I)

    # ---- statements and attributes
    def _emit(self, subj: _Subject, cs: int, ce: int) -> None:
        text = self.text
        ps = subj.pred_start
        pred_raw = text[ps:ce]
        if not pred_raw.strip() and not subj.prefix:
            return
        pred_exp = _expand((subj.prefix + " " if subj.prefix else "") + pred_raw.strip().lstrip("'"))
        pred_exp = re.sub(r"^(?:s|m|re|ve|ll|d)\s+", "", pred_exp) if not subj.prefix else pred_exp
        exprs = find_time_expressions(text[cs:ce], self.src.occurred_at)
        attr = value = None
        negated = change = False
        found = None
        if subj.self_attr and subj.self_attr != "married_to?":
            m = re.match(r"^\s*(?:is|are|was|=|:)\s+(.+)$", pred_exp, re.I)
            if m:
                found = (subj.self_attr, _clean_value(m.group(1), subj.self_attr != "likes"), False, False, 0)
        elif subj.self_attr == "married_to?":
            m = re.match(r"^\s*is\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s*$", pred_exp)
            if m and is_name_token(m.group(1).split()[0]):
                found = ("married_to", m.group(1).lower(), False, False, 0)
                subj = _Subject(self.me(), self.me_owner(), subj.display, subj.pred_start, subj.prefix)
        if found is None:
            found = self.attribute_of(pred_exp, subj.subject)
        if found is not None and found[1]:
            attr, value, negated, change, vstart = found
            pre_value = pred_exp[:vstart]
            negated = negated or (bool(_NEG.search(pre_value)) and not _NEG_EXCEPT.search(pred_exp))
        else:
            attr = value = None
            negated = bool(_NEG.search(pred_exp)) and not _NEG_EXCEPT.search(pred_exp)
            if not self._contentful(pred_exp):
                return
        change = change or bool(_CHANGE.search(pred_exp))
        if attr is None and not re.search(r"[A-Za-z]", pred_exp):
            return
        statement = self._statement(subj, cs, ce, exprs)
        if not statement:
            return
        vf, vt = self.time_span(exprs, self.src.occurred_at)
        self.out.append(
            Assertion(
                statement=statement,
                subject=subj.subject,
                owner=subj.owner,
                attribute=attr,
                value=value,
                single_valued=attr in SINGLE_VALUED,
                change=change,
                negated=negated,
                valid_from=vf,
                valid_to=vt,
                span=(cs, ce),
            )
        )

    @staticmethod
    def time_span(exprs: list[Any], occurred_at: datetime) -> tuple[datetime, datetime | None]:
        vf, vt = occurred_at, None
        rng = next((x for x in exprs if x.kind == "range"), None)
        if rng is not None:
            return rng.when, rng.until
        since = next((x for x in exprs if x.kind == "since"), None)
        at = next((x for x in exprs if x.kind == "at"), None)
        until = next((x for x in exprs if x.kind == "until"), None)
        if since is not None:
            vf = since.when
        elif at is not None:
            vf = at.when
        if until is not None and until.until is not None:
            vt = until.until
            if since is None and at is None and vt <= vf:
                vf = until.when
        if vt is not None and vt <= vf:
            vt = None
        return vf, vt

    def attribute_of(self, pred: str, subject: str) -> tuple[str, str, bool, bool, int] | None:
        head = pred.lstrip()
        off = len(pred) - len(head)
        for pat in _PATTERNS:
            m = pat.regex.match(head)
            if m is None:
                continue
            raw = m.group("v")
            if pat.check == "cap" and not raw[:1].isupper():
                continue
            if (
                pat.attribute == "likes"
                and re.search(r"\b(?:would|could|might)\s*$", head[: m.start("v")].split(" ")[0] + " ")
            ) or (re.match(r"^(?:would|could|might)\b", head, re.I) and pat.attribute == "likes"):
                continue
            val = _clean_value(raw, pat.place)
            if pat.attribute == "likes":
                val = re.sub(r"^to\s+", "", val)
            if pat.attribute == "has_pet":
                val = m.group("v").lower()
            if (
                not val
                or val in _PRONOUN_VALUES
                or val.split()[0] in ("it", "that", "this", "you", "them", "what", "how", "when")
            ):
                continue
            if pat.check == "job" and val.split()[-1] not in _JOBS:
                continue
            if pat.attribute in ("lives_in", "works_at", "from", "studies_at") and val.split()[0] in (
                "here",
                "there",
                "home",
                "work",
            ):
                continue
            val = re.sub(r"\bmy\b", f"{(self.me() or '').lower()}'s", val)
            neg = pat.negated or (
                pat.attribute == "likes"
                and re.search(
                    r"\b(?:hate|hates|hated|dislike|dislikes|disliked|detest|detests|stand)\b",
                    head[: m.start("v")],
                    re.I,
                )
                is not None
            )
            return pat.attribute, val, bool(neg), pat.change, off + m.start("v")
        return None

    @staticmethod
    def _contentful(pred: str) -> bool:
        words = re.findall(r"[a-z]+", pred.lower())
        return any(
            w not in _VACUOUS and w.removesuffix("s") not in _VACUOUS and w not in ADVERBS for w in words
        )

    def _statement(self, subj: _Subject, cs: int, ce: int, exprs: list[Any]) -> str:
        text = self.text
        ps = subj.pred_start
        me = self.me()
        you = self.you()
        out: list[str] = [subj.display, " "]
        if subj.prefix:
            out.append(" " + subj.prefix)
        pos = ps
        need_conj = subj.conj and not subj.prefix
        rel = [(x.start + cs, x.end + cs, render(x)) for x in exprs if x.relative and x.kind != "range"]
        toks = list(_TOK.finditer(text, ps, ce))
        skip_until = -1
        for m in toks:
            if m.start() < skip_until:
                continue
            r = next((r for r in rel if r[0] <= m.start() < r[1]), None)
            if r is not None:
                out.append(text[pos : m.start()])
                out.append(r[2])
                pos = skip_until = r[1]
                continue
            tok = _norm(m.group(0))
            low = tok.lower()
            rep: str | None = None
            if pos == ps and tok.startswith("'") and subj.prefix:
                rep = ""
            elif low in ("me", "myself"):
                rep = me
            elif low in ("my", "mine"):
                rep = f"{me}'s"
            elif low in ("i", "i'm", "i've", "i'll", "i'd", "im", "ive"):
                p = _contraction_prefix(tok)
                rep = me + (" " + p if p else "")
            elif low in ("we", "us"):
                rep = f"{me} and others"
            elif low in ("we're", "we've", "we'll", "we'd"):
                rep = (
                    f"{me} and others "
                    + {"re": "are", "ve": "have", "ll": "will", "d": "would"}[low.split("'")[1]]
                )
            elif low in ("our", "ours"):
                rep = f"{me}'s"
            elif low in ("you", "u"):
                rep = you
            elif low in ("your", "yours"):
                rep = f"{you}'s"
            elif low in ("you're", "you've", "you'll", "you'd"):
                rep = you + " " + {"re": "is", "ve": "has", "ll": "will", "d": "would"}[low.split("'")[1]]
            elif low in ("yourself", "ourselves"):
                rep = you if low == "yourself" else f"{me} and others"
            elif (need_conj and low.isalpha()) or (need_conj and "'" in low):
                if low in ADVERBS or low in ("not", "no", "longer"):
                    pass
                else:
                    rep = conjugate_3sg(tok)
                    need_conj = False
            if rep is not None:
                out.append(text[pos : m.start()])
                out.append(rep)
                pos = m.end()
        out.append(text[pos:ce])
        stmt = re.sub(r"\s+", " ", "".join(out)).strip()
        stmt = re.sub(r"\s+([,.;:!?])", r"\1", stmt)
        stmt = stmt.rstrip(" ,;:-\u2013\u2014")
        if not stmt:
            return ""
        stmt = stmt[:1].upper() + stmt[1:]
        if not stmt.endswith((".", "!", "?")):
            stmt += "."
        elif stmt.endswith(("!", "?")):
            stmt = stmt.rstrip("!?") + "."
        return stmt


_DEFAULT = RuleExtractor()


def default_extractor() -> Extractor:
    """The extractor used when none is configured: the deterministic rules."""
    return _DEFAULT
