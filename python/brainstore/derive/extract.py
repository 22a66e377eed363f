"""The default, deterministic, offline extractor ("rules-v2"): Record text -> atomic Assertions.

Pipeline per SourceText: split sentences (exact offsets; quotations are read as their speaker's) -> drop
questions, greetings, thanks, filler, wishes and hypotheticals -> strip leading interjections, vocatives,
connectives and fronted times ("Hey Mel!", "That's why", "Last weekend") -> split coordinated clauses
where safe -> find the clause's subject and owner (see attribution.py) -> drop praise and clauses with
nothing in them -> rewrite it as a self-contained third-person statement (pronouns and relative times
resolved) -> read an attribute/value, negation and change -> resolve valid_from/valid_to from the
clause's time expressions and tense (timeexpr.py), and say whether the text stated them and whether the
clause corrects something said before.

Nothing here raises on arbitrary text; an unparseable clause yields no assertion rather than a guess.
"""

from __future__ import annotations

import calendar
import itertools
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .attribution import (
    ADVERBS,
    DROP_SUBJECTS,
    FEMALE_NOUNS,
    FIRST_PL,
    FIRST_SG,
    IRREGULAR_PAST,
    KIN_NAMES,
    MALE_NOUNS,
    MODALS,
    PERSON_NOUNS,
    SECOND,
    SELF_NOUNS,
    THIRD_SG,
    conjugate_3sg,
    is_name_token,
)
from .model import SINGLE_VALUED, Assertion, Extractor, SourceText, restated
from .timeexpr import (
    AGO,
    UNKNOWN_START,
    TimeExpr,
    ahead_unless_past,
    find_time_expressions,
    looks_ahead,
    one_text_s_dates,
    render,
    resolve,
    tense_of,
)
from .transcript import transcript_parts

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
    "matter",
    "mean",
    "inspire",
    "remind",
    "bring",
    "calm",
    "motivate",
    "refresh",
    "fill",
    "allow",
    "cause",
    "affect",
    "show",
    "let",
    "put",
    "set",
    "hold",
    "feed",
    "lead",
    "sound",
    "smell",
    "taste",
    "love",
    "miss",
    "hope",
    "wish",
    "fly",
    "shine",
    "fit",
    "suit",
    "beat",
    "cost",
    "pay",
    "last",
    "happen",
    "seem",
    "appear",
    "become",
    "remain",
    "stand",
    "sit",
    "lie",
    "rise",
    "fall",
    "break",
    "hurt",
    "heal",
    "save",
    "spend",
    "waste",
    "enjoy",
    "relax",
    "encourage",
    "amaze",
    "surprise",
    "excite",
    "scare",
    "worry",
    "bother",
    "annoy",
    "please",
    "comfort",
    "push",
    "pull",
    "drive",
    "shape",
    "guide",
    "teach",
    "connect",
    "unite",
    "bond",
    "share",
    "reflect",
    "represent",
    "symbolize",
    "include",
    "involve",
    "require",
    "deserve",
    "rock",
    "suck",
    "rule",
    "work",
    "add",
    "ask",
    "answer",
    "agree",
    "apply",
    "arrive",
    "bake",
    "borrow",
    "care",
    "catch",
    "check",
    "choose",
    "clean",
    "climb",
    "compete",
    "cover",
    "cry",
    "cut",
    "deal",
    "design",
    "develop",
    "die",
    "draw",
    "dream",
    "dress",
    "earn",
    "end",
    "explore",
    "face",
    "fail",
    "fight",
    "find",
    "fix",
    "follow",
    "forget",
    "gain",
    "garden",
    "grab",
    "hang",
    "hear",
    "hit",
    "hug",
    "hunt",
    "improve",
    "invite",
    "jog",
    "join",
    "jump",
    "kick",
    "kiss",
    "knit",
    "laugh",
    "launch",
    "lend",
    "lift",
    "light",
    "live",
    "lock",
    "manage",
    "mark",
    "meditate",
    "mention",
    "mix",
    "notice",
    "offer",
    "order",
    "organize",
    "own",
    "pack",
    "pass",
    "perform",
    "pick",
    "pray",
    "prepare",
    "print",
    "promise",
    "protect",
    "prove",
    "publish",
    "reach",
    "realize",
    "receive",
    "record",
    "recover",
    "release",
    "rent",
    "repair",
    "rest",
    "ring",
    "sail",
    "score",
    "search",
    "send",
    "serve",
    "shoot",
    "shop",
    "shout",
    "sign",
    "ski",
    "skip",
    "sleep",
    "smile",
    "solve",
    "sort",
    "start",
    "stop",
    "struggle",
    "surf",
    "sew",
    "take",
    "talk",
    "tend",
    "thank",
    "throw",
    "touch",
    "tour",
    "trust",
    "understand",
    "upload",
    "vote",
    "wait",
    "wake",
    "want",
    "wash",
    "welcome",
    "wonder",
    "worry",
    "cycle",
    "bike",
    "vape",
    "smoke",
    "brew",
    "adore",
    "admire",
    "appreciate",
    "value",
    "cherish",
    "treasure",
    "recommend",
    "suggest",
    "sing",
    "cheer",
    "greet",
    "visit",
    "hug",
    "support",
    "thrive",
    "grow",
    "wander",
    "explore",
    "inspire",
    "keep",
]
_VERB_FORMS: set[str] = set(IRREGULAR_PAST) | {"is", "are", "am", "was", "were", "has", "had", "does", "did"}
for _b in _VERB_BASES:
    _VERB_FORMS.add(_b)
    _VERB_FORMS.add(conjugate_3sg(_b))
    _VERB_FORMS.add(_b + "d" if _b.endswith("e") else _b + "ed")
_VERB_FORMS |= MODALS | {"'s", "s", "'ll", "ll", "'d", "d", "'ve", "'re", "'m"}
# Every auxiliary contracted with "n't" is a finite verb ("My brother doesn't eat meat": the noun phrase ends)
_VERB_FORMS |= {"isn't", "aren't", "hasn't", "haven't", "doesn't", "don't", "ain't", "needn't"}
_VERB_BASE_SET = set(_VERB_BASES) | {"be", "have", "do"}
# Third-person -s forms of known verbs that are no base form too ("plans", "loves"; not "does", "is")
_THIRD_S_ONLY = {conjugate_3sg(_b) for _b in _VERB_BASES} - _VERB_BASE_SET
# Subjects a third-person -s verb never goes with ("I ... and plans": a noun, not the verb)
_NOT_THIRD_SUBJECTS = FIRST_SG | FIRST_PL | SECOND | {"they", "they're", "they've", "they'll", "they'd"}
# Words that may be (or carry) a third-person subject inside a clause ("I think it looks ...")
_THIRD_PERSON_WORDS = THIRD_SG | {"it", "it's", "that", "that's", "this", "who", "which", "is", "has", "does", "'s"}
# Finite forms that only a verb takes: auxiliaries, modals, third-person -s and past forms of known verbs.
_FINITE = {
    "is", "are", "was", "were", "am", "'s", "'re", "'m", "has", "have", "had", "does", "do", "did", "can",
    "could", "will", "would", "shall", "should", "may", "might", "must", "isn't", "aren't", "wasn't",
    "weren't", "hasn't", "haven't", "hadn't", "doesn't", "don't", "didn't", "can't", "cannot", "won't",
    "wouldn't", "couldn't", "shouldn't",
} | {f for f in _VERB_FORMS if f.endswith(("s", "ed")) and f not in ("'s", "s", "ed")} | set(IRREGULAR_PAST)  # fmt: skip
# A person's pronoun with its verb contracted onto it ("I'm", "she's", "they've"): a subject and its verb
_SUBJECT_CONTRACTIONS = {
    w for w in FIRST_SG | FIRST_PL | SECOND | THIRD_SG | {"they're", "they've", "they'll", "they'd"} if "'" in w
} | {"im", "ive", "youre"}
# Who may open a clause of their own after "and" ("I'm 34 and my brother is 30", "... and Bob is 30")
_PERSON_SUBJECTS = FIRST_SG | FIRST_PL | SECOND | THIRD_SG | {"they", "they're", "they've", "they'll", "they'd"}


def _gerund(base: str) -> str:
    """ "drink" -> "drinking", "smoke" -> "smoking", "run" -> "running" (the verbs this module names)."""
    if base in _DOUBLED:
        return base + base[-1] + "ing"
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        return base[:-1] + "ing"
    return base + "ing"


_DOUBLED = {"run", "swim", "jog", "shop", "stop", "plan", "sit", "get", "put", "cut", "hit", "win", "begin",
            "set", "knit", "skip", "drum"}  # fmt: skip
# Habits a person keeps in the simple present ("I drink coffee", "I don't smoke"): the attribute "does"
# with the activity as its value, so "I stopped drinking coffee" and "I no longer drink coffee" name the
# same attribute and value with the opposite polarity.
_HABIT_VERBS = [
    "drink", "eat", "smoke", "vape", "play", "practice", "practise", "cook", "bake", "run", "jog", "swim",
    "hike", "bike", "cycle", "ski", "surf", "climb", "paint", "draw", "knit", "sew", "read", "write",
    "watch", "meditate", "volunteer", "teach", "study", "drive", "ride", "garden", "dance", "sing",
    "collect", "wear", "brew", "fish", "skate", "box", "golf",
]  # fmt: skip
_HABIT_FORMS = {v: v for v in _HABIT_VERBS} | {_gerund(v): v for v in _HABIT_VERBS}
# Past tenses that are given names too: capitalised before a verb, a name ("Rose moved to Paris")
_GIVEN_NAME_VERBS = {"rose", "drew", "won"}
# What one runs that is no run: a business, a team ("I run a bakery")
_RUN_BUSINESS = {
    "business", "businesses", "company", "firm", "startup", "shop", "store", "bakery", "restaurant", "cafe", "café",
    "bar", "salon", "clinic", "practice", "agency", "farm", "blog", "channel", "podcast", "team", "department",
    "club", "household", "show", "school", "charity", "nonprofit", "organization", "organisation", "office",
}  # fmt: skip

# Of the job words, those held at a place without working for it ("a student at NYU")
_NOT_EMPLOYED = {"student", "volunteer"}

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
        "director",
        "supervisor",
        "president",
        "vp",
    ]
)
_PETS = r"(?:dog|cat|puppy|kitten|hamster|parrot|rabbit|bunny|fish|turtle|horse|snake|lizard|bird|guinea pig|ferret|goldfish)"
# "(I have) three kids and (a hamster)", "two kids, a car and (a dog)": what is had before the first pet
_COUNTED = r"(?:a|an|one|two|three|four|five|six|\d+)\s+(?!" + _PETS + r")[a-z]+"
_BEFORE_PETS = rf"(?P<others>{_COUNTED}(?:\s*,\s*{_COUNTED})*\s*,?\s+(?:and|&)\s+)?"
# what may follow the pet that ends such a list ("... and a dog named Rex"); another word makes the pet's
# word part of a thing's name ("a meeting and a dog walk")
_LIST_END_PET = re.compile(r"\s+(?!(?:named|called|and|too|now|at|in|who|that|as)\b)[a-z]")
# "(2 cats) and a dog", "(a dog), a cat and a parrot": one more pet of a list the first pet of a clause opens
_PET_WORDS = r"(?:(?:a|an|one|two|three|four|five|\d+|some)\s+)?(?:(?:new|little|cute|sweet|pet|rescue|baby|black|white|old|young|big|small)\s+)*"
_PET_END = re.compile(rf"{_PETS}(?:s|es)?\b", re.I)
_MORE_PET = re.compile(rf"(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or|&)\s+){_PET_WORDS}(?P<v>{_PETS})(?:s|es)?\b", re.I)
# the name a listed pet is given ("a dog named Rex (and a cat named Tom)"): passed over to the next pet
_PET_NAMED = re.compile(r"\s+(?:named|called)\s+[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)?")
_REFLEXIVES = {"myself", "yourself", "himself", "herself", "itself", "ourselves", "yourselves", "themselves"}
_PRONOUN_VALUES = {
    "it", "that", "this", "them", "him", "her", "you", "u", "me", "us", "those", "these", "one", "so", "too",
    "the idea", "the sound of that", "what you", "how", "to", "mine", "yours", "everything", "all", "ya", "y'all",
    "yall", "you all", "you guys", "ye",
}  # fmt: skip
_VACUOUS = {
    "said", "says", "say", "told", "tells", "tell", "asked", "asks", "ask", "wrote", "writes", "replied",
    "added", "explained", "mentioned", "mentions", "got", "gotten", "getting", "had", "having", "done",
    "doing", "did", "going", "gone", "go", "goes",
    "agree", "know", "see", "guess", "understand", "appreciate", "mean", "bet", "promise", "swear",
    "wonder", "hear", "get", "thank", "thanks", "sorry", "glad", "sure", "right", "feel", "think",
    "hope", "totally", "so", "too", "really", "much", "lot", "am", "is", "are", "was", "do", "does",
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
    "ft",
    "ave",
    "blvd",
}
# A sentence ends at a full stop, "!", "?", "...", a line break, an emoji ("Inspiring \U0001f4aa I emailed
# ..."), or a wide gap: eight spaces or more part columns, not words of one sentence, and the patterns
# read within a sentence would take time quadratic in the length of a run of spaces (any key can post
# one; the run must not reach them). Each run of stops, emoji or spaces is tried from where it starts
# only: from inside it, the same end would be sought again, quadratic in its length too. (The text is
# read whole here, so this pattern guards itself; a sentence's own patterns need no guard, the gap being
# a break.)
_EMOJI = r"[\U0001F300-\U0001FAFF\u2600-\u27BF]"
_STOPS_END = r"(?<![.!?\u2026])[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s|$)|\n\s*"
_SENT_END = re.compile(
    _STOPS_END + rf"|(?!(?<=\s)\s)(?<!{_EMOJI})(?<!{_EMOJI}\ufe0f)(?:\s*{_EMOJI}\ufe0f?)+(?=\s|$)" + r"|\s{8,}"
)
# The same in a text with no emoji (most): the emoji's branch, tried at each space, cannot match there
_SENT_END_NO_EMOJI = re.compile(_STOPS_END + r"|\s{8,}")
_EMOJI_RE = re.compile(_EMOJI)
# Before the stop it ends at, the word that may make it no sentence end ("Dr.", "J."): looked for in a
# window this wide, which holds any abbreviation, so a run of them costs no more than one
_ABBREV_REACH = 32
# Titles a person's name is given ("Dr. Patel", "Mrs Jones"): no name of their own
_TITLES = {"dr", "mr", "mrs", "ms", "mx", "prof"}
_WORD_BEFORE = re.compile(r"([A-Za-z.'\u2019]+)$")
_INTERJ = re.compile(
    # how the speaker means what follows ("Frankly speaking I ...", "Honestly speaking, ..."): the stance
    # whole, before "honestly" alone leaves "speaking" a clause
    r"(?:(?:(?:honestly|frankly|generally|personally|strictly|technically|truthfully|realistically|broadly"
    r"|roughly|relatively|financially|medically|legally)\s+speaking"
    r"|oh+|ah+|wow+|whoa|yeah+|yes|yep|yup|nope|no|well|so|ok|okay|hey+|hi+|hello|lol|lmao|haha\w*|hehe\w*"
    r"|hmm+|um+|uh+|omg|gosh|honestly|actually|also|and|but|plus|btw|anyway|anyways|right|sure|cool|great"
    r"|nice|awesome|aw+|ugh|yay|thanks|thank\s+you|man|dude|totally|absolutely|definitely|true|indeed"
    r"|oh\s+my\s+god|oh\s+no|seriously|haha|welp|alright|yeah\s+yeah|of\s+course|exactly|agreed"
    r"|congrats|congratulations|oops|whew|phew|hah|ha|ahh|ooh|wowza|dang|damn|jeez|geez|by\s+the\s+way"
    r"|fun\s+fact|guess\s+what|you\s+know|i\s+mean|to\s+be\s+honest|tbh|fr|for\s+real|in\s+fact|now"
    r"|speaking\s+of\s+(?:which|that)|i\s+(?:gotta|have\s+to|must)\s+say"
    # ... and "Kidding aside, I ...": no state of theirs
    r"|(?:all\s+)?(?:kidding|joking|jokes|jesting)\s+aside"
    # a workplace chat's lead-ins ("FYI Bob's out today", "Heads up, I'm WFH"): no part of the subject
    r"|(?:just\s+)?fyi|psa|heads[\s-]?up)"
    r"(?![\w'\u2019])[\s,!.:;\u2014\u2013-]*)+",
    re.I,
)
# "Glad to hear you enjoyed it", "Glad to hear my support helps": what was heard is a clause with a
# subject of its own, no sign-off ("Glad to hear it", "Glad to hear from you" stay one)
_HEARD_CLAUSE = (
    r"\s+(?:that\s+)?(?:i|i['\u2019]m|i['\u2019]ve|my|we|we['\u2019]re|our|you|you['\u2019]re|you['\u2019]ve|your|he|she"
    r"|he['\u2019]s|she['\u2019]s|his|her|they|they['\u2019]re|their|the)\b"
)
_FILLER = re.compile(
    r"^(?:(?:good|nice|great|glad)\s+to\s+(?:see|meet|talk|chat|hear(?!" + _HEARD_CLAUSE + r"))|see\s+you|talk\s+(?:soon|later)|take\s+care"
    r"|good\s+(?:luck|night|morning|evening|afternoon|job|work)|have\s+(?:a|an)\s+\w+|happy\s+\w+day|bye"
    r"|goodbye|cheers|welcome|you're\s+welcome|no\s+problem|no\s+worries|np|ttyl|gtg|brb|thx|ty|xoxo"
    r"|sounds\s+(?:good|great|fun|amazing)|same\s+here|me\s+too|let\s+me\s+know"
    # ("Keep going after your dreams!": an urging with something in it, see _ENCOURAGE)
    r"|keep\s+(?:it\s+up|going(?!\s+(?:for|after|towards?)\b)|up)"
    r"|hope\s+(?:you|it|that|so)|wish\s+me|love\s+you|miss\s+you|catch\s+you|fingers\s+crossed|rest\s+assured"
    # ("Love from Paris!", "Lots of love to all": a sign-off; "Love to hike!" is a taste)
    r"|(?:lots\s+of\s+|much\s+|all\s+my\s+)?love\s+(?:from|to\s+(?:all|you|everyone|everybody|the\s+family))"
    r"|love\s+ya)\b",
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
# "i" as chat types the pronoun: a word of its own, not "i.e." nor "i'm" (a contraction of its own)
_LOWER_I = r"i(?!\.e\b|[\w'\u2019])"
_SPLIT = re.compile(
    r"\s*;\s*|\s+[-\u2013\u2014]+\s+|(?<=\w)-\s+|(?<=\w)--+\s*(?=\w)|\s*[\u2013\u2014]\s*|\s*\(\s*|\s*\)\s*"
    # ("born and raised in Ohio": one participle phrase)
    r"|,?\s+(?P<conj>(?<!\bborn\s)and(?!\s+(?:raised|bred)\b)|but|so|even\s+though|though|although|whereas|while|plus)\s+"
    # "I'm 29, turning 30 in June": the age to come may be a clause of the same subject (_age_to_come)
    r"|,\s+(?=turning\s+\d)"
    r"|,\s+(?=(?:I|I'm|I've|I'll|I'd|we|we're|my|he|she|they|it|it's|that|this|you|you're|didn't|wasn't|couldn't)\b"
    # "in the meantime, i donated ...": chat writes "i" in lower case ("i.e." is no pronoun)
    rf"|{_LOWER_I}|i['\u2019](?:m|ve|ll|d)\b)",
)
# "turning 30" after an age said: the age from the time that follows, said of the same subject
_AGE_TO_COME = re.compile(r"turning\s+\d", re.I)
_AGE_TIME_REACH = 60  # "turning 30 on the first of September next year" fits
_FRONT_REACH = 80  # "..., but on the first Saturday of next month, my sister and I" fits
_PRE = (
    r"^(?:(?:do|does|did|am|is|are|was|were|have|has|had|will|shall|not|never|no\s+longer|still|also|really"
    r"|now|currently|recently|just|finally|actually|totally|absolutely|always|usually|so|truly|definitely|even"
    r"|already|both|all|officially|originally|been|being|gonna|going\s+to|got\s+to|get\s+to|used\s+to|would"
    r"|could|should|might|may|can|must|def|kinda|sort\s+of|kind\s+of|pretty|very|happily|proudly|soon|newly"
    r"|basically|mostly|only|ever|seriously|honestly|literally|now\s+officially)\s+)*"
)
# a report opened by hearsay: "has it" always reads so; "is" only before "that" or a clause's subject
# ("Word is a word processor" is no report)
# what a report opens on: "that", a pronoun or a name with its verb
_HEARD_START = r"\s*(?:that\s|(?:(?:he|she|they|we|you|I)(?:['\u2019][a-z]+)?|my|his|her|their|our|your)\s|{name}\s+(?!and\b|or\b)[a-z])"
_HEARSAY_OPENER = re.compile(
    r"(?:the\s+)?(?:rumou?r|word|gossip)(?:\s+on\s+the\s+street|\s+around\s+(?:here|town|the\s+office))?\s+"
    r"(?:(?:has\s+it|says)\s*,?(?=\s*\w)|is\s*,?(?=" + _HEARD_START.format(name="[A-Z][a-z]+") + r"))"
    # "People say Bob quit", "Everyone says that ...": what is said around, heard by the speaker
    r"|(?:people|everyone|everybody|folks)\s+says?\s*,?(?=" + _HEARD_START.format(name="(?-i:[A-Z][a-z]+)") + r")",
    re.I,
)
_NEG = re.compile(
    r"\b(?:not|never|no\s+longer|nobody|no\s+one|hate|hates|hated|dislike|dislikes|disliked|detest|detests"
    r"|anymore|any\s+more)\b",
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
    r"|graduated|these\s+days|nowadays|stopped|stop|stops|gave\s+up|give\s+up|giving\s+up|took\s+up"
    r"|picked\s+up|left|leaving|broke\s+up|separated)\b",
    re.I,
)
# A clause of time after a predicate, with a subject of its own ("... before I became a writer")
_CLAUSE_OF_TIME = re.compile(
    r"\s(?:before|after|when|until|till|since|once|while)\s+(?:I|we|you|he|she|they|my|our|his|her|their)\b", re.I
)
# A change that is an ending in itself, negative as it reads ("no longer", "quit", "left")
_ENDING = re.compile(
    r"\b(?:no\s+longer|anymore|any\s+more|stopped|stop|stops|quit|quits|quitting|left|leaving|gave\s+up|give\s+up"
    r"|giving\s+up|used\s+to|broke\s+up|retired|separated|divorced|mov(?:e|es|ed|ing)\s+(?:out|away)"
    r"|resign(?:s|ed|ing)?|fired|laid\s+off|let\s+go|sacked)\b",
    re.I,
)
_CUT = re.compile(
    r"\s*(?:[,;:!?()\"\u201c\u201d]|\s[-\u2013\u2014]\s|[\u2013\u2014]|\.(?:\s|$)|\.$)"
    r"|\s+(?:ever\s+since|since|from|until|till|for|with|because|and|but|when|after|before|now|anymore|these\s+days"
    r"|right\s+now|at\s+the\s+moment|nowadays|though|too|as\s+well|so\s+much|a\s+lot|very\s+much|lately"
    r"|again|which|who|where|that|so|if|while|ago|last|next|this|yesterday|today|tomorrow|tonight|recently|anyway"
    r"|or|than|like|of\s+course|either|any\s+more|already|full[\s-]time|part[\s-]time|yet|btw|between"
    # a chat tail ("I live in Denver lol")
    r"|lol|lmao|lmfao|rofl|haha\w*|hehe\w*|tbh|fwiw|omg|imo|imho|idk|jk|smh|ngl"
    r"|over\s+(?:the\s+)?(?:weekend|spring|summer|fall|autumn|winter|holidays?|break|christmas|thanksgiving|easter"
    r"|new\s+year\S*)|earlier|later|the\s+day\s+before|the\s+(?:first|last)\s+week|(?:19|20)\d\d"
    r"|soon|the\s+other\s+(?:day|night|week))\b"
    rf"|\s+{AGO}\b"  # "moved to Berlin two weeks ago", "worked at IBM 2010-2015": no part of the value
    # "(staying in Paris) through the 15th", "through June": a bound, as "until" is ("through the woods" is not)
    r"|\s+(?:through|thru)(?=\s+(?:the\s+)?(?:\d|end\b|next\b|this\b|tomorrow\b|tonight\b|mid\b|early\b|late\b"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?(?:\s|$)"
    r"|spring\b|summer\b|fall\b|autumn\b|winter\b))",
    re.I,
)
# "(moved to Paris) early next year", "back in '19": a word that leads a time is no part of a place
_PLACE_CUT = re.compile(
    r"\s+(?:in|on|at|near|by|to|as|during|around|with)\b"
    r"|\s+(?:early|late|sometime|some\s+time|back|mid)(?=[\s-]+(?:next|last|this|in|on|during|(?:19|20)\d\d)\b|\s*$)"
    # ("... right after graduation", "the week after next", "end of next month", "mid-March", "a fortnight ago")
    r"|\s+(?:right|shortly|the\s+(?:week|month|year|day|weekend|spring|summer|fall|autumn|winter)|mid-|a\s+fortnight)\b"
    r"|\s+(?:the\s+)?end\s+of(?:\s+(?:next|last|this|the\s+(?:week|month|year))\b|\s*$)"
    # ("from Mexico originally", "in Austin currently", "at Acme still"): how the clause holds, no part of
    # the place, which would else be another value than "Austin" and conflict with it
    r"|\s+(?:originally|currently|still|presently)\s*$",
    re.I,
)
# "(I'm) moving to Oslo", "(she's) quitting her job": the present progressive of a change, a plan
# "I'm getting a puppy", "We're adopting a cat": a pet to come
# ("I'm not moving to Denver", "We aren't getting a dog": a plan denied, as much a plan, of no state)
_PLAN_AUX = r"\s*(?:(?:am|is|are|['\u2019]m|['\u2019]re|['\u2019]s|isn['\u2019]t|aren['\u2019]t)\s+)?(?:not\s+)?"
_GETTING = re.compile(_PLAN_AUX + r"(?:\w+ly\s+|just\s+|soon\s+)?(?:getting|adopting|buying)\b", re.I)
_PLANNED = re.compile(
    _PLAN_AUX + r"(?:\w+ly\s+|just\s+|soon\s+)?"
    r"(?:moving|relocating|starting|quitting|switching|joining|leaving|retiring|transferring|becoming"
    r"|getting\s+(?:married|divorced|engaged)|turning|turns?(?=\s+\d))\b",  # ("I'm turning 30": 29 now)
    re.I,
)
# "(I moved to Denver) when I was 25 / right after college / as a kid": a time told by an event or an age,
# which no rule dates; and "(I've lived here) since college / since I was 12": a start told so
# (A stage of life or an age only: "I quit my job when I got the offer" is news of now, and ends the job.)
# a stage of life by what one was ("as a kid") or where one studied ("in college"): both patterns below
_AS_A_CHILD = r"as\s+an?\s+(?:kid|child|teen|teenager|baby|student|adolescent)"
_AT_SCHOOL = r"(?:in|during)\s+(?:college|high\s+school|grad\s+school|university|uni)"
_EVENT_TIME = re.compile(
    r"\b(?:(?:when|while)\s+(?:I|we)\s+(?:was|were)\b"
    r"|(?:after|before|once|when|while)\s+(?:I\s+(?:finished|left|graduated\s+from|graduated)\s+)?(?:college|school"
    r"|high\s+school|grad\s+school|uni|university|graduation|graduating)"
    rf"|{_AS_A_CHILD}|at\s+(?:age\s+)?\d{{1,2}}(?!\s*(?::|am\b|pm\b|o['\u2019]clock))"
    rf"|{_AT_SCHOOL})\b",
    re.I,
)
# what is done as a rule: a holiday, a season or a month without a year it is done at names each one
_HABITUAL = re.compile(r"\b(?:usually|always|typically|normally|generally|often|tend\s+to|every\s+year)\b", re.I)
# a time of life long past, whose year the text leaves out ("when I was a kid", "growing up", "years ago")
_LONG_AGO = re.compile(
    rf"\b(?:{_AS_A_CHILD}|growing\s+up|(?:many\s+)?years\s+ago"
    r"|long\s+ago|back\s+in\s+the\s+day|when\s+(?:I|we)\s+(?:was|were)\s+(?:(?:just|still|only)\s+)?(?:an?\s+)?"
    r"(?:little|young|younger|small|kids?|child|children|teens?|teenagers?|babies|baby|\d{1,2}\b"
    rf"|in\s+(?:school|college|high\s+school|grad\s+school))|{_AT_SCHOOL})\b",
    re.I,
)
_COMMA_GAP = re.compile(r"\s*,?\s*")
# "(born in August) in Ohio", "(born in 1990,) in Ohio": the place a birth's time is followed by
_PLACE_AFTER_TIME = re.compile(r"\s*,?\s+in\s+(?:the\s+)?(?=[A-Z])")
# "(born on June 3(, 1990)) in Ohio": the place after a birthday's date
_PLACE_AFTER_DAY = re.compile(r"\sin\s+(?P<place>[A-Z].*)")
# a job held once ("a former nurse", "an ex-cop", "a retired teacher"): what precedes the job's own words
_FORMER = re.compile(r"(?:an?\s+)?(?:former|ex|retired)(?:\s+|-)(?=\w)", re.I)
# a job one is qualified for, not one held ("a nurse by training", "a lawyer by education")
_TRAINED_ONLY = re.compile(r"\bby\s+(?:training|education|degree|qualification)\b", re.I)
# a birthday's value said as a month, or a month and its day ("june", "june 3rd", "3/4")
_MONTH_DAY_VALUE = re.compile(
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?:\s+\d{1,2}(?:st|nd|rd|th)?)?$|\d{1,2}[/.-]\d{1,2}$"
)
_SINCE_EVENT = re.compile(r"\bsince\s+\w", re.I)
_RECENT = re.compile(r"\b(?:just|recently|finally)\b", re.I)
# "My birthday is on June 3rd", "our anniversary's in May": a day of every year, told without one
_YEARLY_DAY = re.compile(r"\b(?:birthday|bday|b-day|anniversary)\s*(?:is|['\u2019]s|falls)\b", re.I)
_BORN = re.compile(r"\bborn\b", re.I)
# What "at"/"for" after "work" may tell instead of an employer: a time, an amount ("at night", "for hours")
# Words of a name one starts at without working there: a school (starting there is enrolling) or a
# place or a point a walk, a race, a game or an evening starts from ("We started at Central Park", "at Level 1")
_BEGUN_NOT_WORK = {
    "school", "university", "college", "uni", "academy", "institute", "elementary", "high", "middle",
    "kindergarten", "preschool", "daycare", "nursery", "montessori", "seminary", "conservatory",
    "park", "street", "st", "avenue", "ave", "road", "rd", "square", "station", "trailhead", "trail", "bridge",
    "gate", "entrance", "beach", "lake", "level", "mile", "chapter", "page", "step", "stage", "round", "base",
    "camp", "point", "peak",
}  # fmt: skip
# Someone's home, where an evening starts ("We start at Bob's place tomorrow, then go to the park"); a
# business of such a name is no one's ("Pizza Place", "Penguin Random House")
_SOMEONES_HOME = re.compile(
    r"(?:[\w-]+['\u2019]s|my|your|his|her|our|their)\s+(?:place|house|home|apartment|flat|condo)\b", re.I
)
_WORK_WHEN = {
    "night", "nights", "noon", "midday", "midnight", "dawn", "dusk", "daytime", "nighttime", "weekend", "weekends",
    "weekday", "weekdays", "lunch", "lunchtime", "hours", "times", "least", "most", "all", "first", "once", "free",
    "living", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve",
}  # fmt: skip
_WORK_CLOCK = re.compile(r"\d{1,2}(?:[:.]\d\d)?\s*(?:[ap]\.?m\b\.?|o'clock)?$|\d+\s+(?:hours?|days?|shifts?|nights?)\b")
# "the <noun>" is a home when it is a kind of place one lives in ("the city", "the west coast", "the end of
# the street"), not a room, a seat or a venue of the day ("the couch", "the gym", "the front row")
_HOME_HEADS = {
    "city", "cities", "town", "village", "suburbs", "suburb", "burbs", "countryside", "country", "coast", "shore",
    "seaside", "beach", "lake", "mountains", "hills", "island", "islands", "mainland", "area", "neighborhood",
    "neighbourhood", "district", "region", "state", "states", "province", "county", "capital", "north", "south",
    "east", "west", "midwest", "valley", "bay", "outskirts", "downtown", "uptown", "center", "centre", "street",
    "road", "avenue", "block", "building", "house", "apartment", "flat", "condo", "place", "farm", "ranch", "dorm",
    "dorms", "dormitory", "campus", "cottage", "cabin", "estate", "desert", "continent", "world", "community",
    "complex", "tower", "square", "quarter", "border",
}  # fmt: skip
# A dwelling moved into somewhere ("a new apartment in Brooklyn"): the home is where it stands, not
# "new apartment" (which ended the city told before it). Not "near the lake", "on the third floor".
# Where one stays without living there
_LODGINGS = {"hotel", "motel", "hostel", "airbnb", "inn", "resort", "campground", "campsite"}
# "is staying", "'m staying": a stay under way (see _LODGINGS, and _Run._emit for one a day or a week bounds)
_STAYING = re.compile(r"(?:is|am|are|'m|'re)\s+(?:(?:just|only|still)\s+)?staying\b", re.I)
_DWELLINGS = (
    "apartment", "flat", "house", "condo", "studio", "loft", "place", "home", "townhouse", "duplex", "bungalow",
    "cottage", "cabin", "dorm",
)  # fmt: skip
_DWELLING_IN = re.compile(
    rf"(?:(?:a|an|the|my|our|his|her|their)\s+)?(?:[\w'\u2019-]+\s+){{0,3}}?(?:{'|'.join(_DWELLINGS)})"
    r"\s+in\s+(?P<where>\S.*)",
    re.I | re.S,
)
# What follows "in" that is no place: "in the same building", "in a week", "in a couple of days"
_NO_WHERE = re.compile(
    r"the\s+same\b|(?:an?\s+)?(?:(?:few|couple(?:\s+of)?|several|\d+|one|two|three|four|five|six)\s+)?(?:\w+\s+)?"
    r"(?:second|minute|hour|day|week|fortnight|month|year)s?\b",
    re.I,
)
# What a move to "the London office" or "our Berlin branch" is to: a workplace, no home.
_WORKPLACE_HEADS = {
    "office", "offices", "branch", "hq", "headquarters", "site", "plant", "factory", "warehouse", "store",
    "team", "department", "division", "lab",
}  # fmt: skip
# Whom one joins in something ("Bob for lunch", "Sarah and Tom on a trip", "Tom in the kitchen"): people,
# not an employer; "Google for two years", "Acme in the summer", "Google at the London office" stay one
_JOINED_COMPANY = re.compile(
    r"(?:[A-Z][\w'\u2019-]*\s+){1,3}(?:(?:and|&)\s+(?:[A-Z][\w'\u2019-]*\s+){1,3})?"
    r"(?:for\s+(?:(?:a|an|the|some|his|her|their|our|my|your)\s+)?|on\s+(?:a|an|his|her|their|our|my|your)\s+"
    r"|(?:at|in)\s+(?:the|a|an|his|her|their|our|my|your)\s+)"
    r"(?!(?:years?|months?|weeks?|days?|while|time|moments?|mornings?|afternoons?|evenings?|nights?|weekends?"
    r"|summer|winter|spring|fall|autumn|start|end|beginning|middle|age|good|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|few|couple|several|many|first|last|next|same|a|an|the|some|his|her|their|our|my|your)\b)"
    r"(?![^,.;!?]*\b(?:office|team|department|division|branch|unit|group|lab|role|position|capacity|company|firm)\b)"
    r"[a-z]"
)


# "I quit my job", "She got laid off", "I was let go", "I resigned": a job over, its employer unnamed,
# which the planner reads as the end of the one job the subject holds (Assertion.left "")
_JOB_ENDED = re.compile(
    r"(?:(?:just|finally|recently|actually|officially|also|then|suddenly)\s+)*(?:(?:have|has|had)\s+)?"
    r"(?:(?:quit|quits|quitting|left|leaves|leaving|lost|loses|losing)\s+(?:my|his|her|their|the)\s+(?:\w+\s+)?job"
    r"|(?:(?:got|get|gets|getting|was|were|been|being|is|am|are)\s+)+(?:just\s+)?(?:fired|laid\s+off|let\s+go|sacked)"
    r"(?!\s+(?:up|of)\b)|resigned|resigns|retired(?!\s+(?:a|an|the|my|his|her|their|it|them)\b))\b",
    re.I,
)
# The attribute of "I left X" before the Record says what X was.
_LEFT = "left?"
# What leaving can end, told by a new value of the same attribute in the Record ("and joined Spotify").
_LEAVABLE = ("works_at", "lives_in")
_QUIT = re.compile(r"\bquit(?:s|ting)?\b", re.I)


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


# "I'm now a manager", "She's currently 30": an adverb of the present between the verb and what one is
_NOW_ADVERB = r"(?:(?:now|currently|still|also|actually|already|finally|officially)\s+)?"

_PATTERNS = [
    _p(
        "lives_in",
        r"(?:lived|living|live|lives|reside|resides|resided|residing|based|staying|settled(?:\s+down)?)\s+(?:in|at)\s+(?P<v>.+)",
        place=True,
    ),
    _p(
        "lives_in",
        # "moved from Lisbon to Porto": where one lives now is where one moved to
        r"(?:moved|move|moving|moves|relocated|relocating|relocate)\s+(?:back\s+|out\s+|over\s+|away\s+)?"
        r"(?:(?:from|of)\s+[^,.;]{1,60}?\s+)?(?:to|into)\s+(?P<v>.+)",
        change=True,
        place=True,
    ),
    # "moved out of Berlin": where one lived, over
    _p(
        "lives_in",
        r"(?:moved|move|moving|moves)\s+(?:out\s+of|away\s+from)\s+(?P<v>.+)",
        change=True,
        negated=True,
        place=True,
        check="cap",
    ),
    # ("I work remotely for Acme", "I work full-time at IBM": how one works, then where)
    _p(
        "works_at",
        r"(?:work|works|worked|working)\s+(?:(?:remotely|full[\s-]time|part[\s-]time|still|now|currently)\s+)?"
        r"(?:at|for)\s+(?P<v>.+)",
        place=True,
    ),
    _p("works_at", r"employed\s+(?:at|by)\s+(?P<v>.+)", place=True),
    _p(
        "works_at",
        r"(?:started|start|starting|began)\s+(?:working\s+|a\s+(?:new\s+)?job\s+|work\s+|my\s+(?:new\s+)?job\s+)(?:at|for|with)\s+(?P<v>.+)",
        change=True,
        place=True,
    ),
    # "I got a job at Stripe", "I landed a new role with Acme", "I was hired by IBM": a job there begins
    # (an offer alone is no job: "I got a job offer from Stripe")
    _p(
        "works_at",
        r"(?:(?:got|get|gets|getting|landed|land|lands|landing|found|took|take|takes|taking)\s+"
        r"(?:(?:a|an|the|my|this|that|his|her|their)\s+)?(?:(?:new|great|dream|first|full[\s-]time|part[\s-]time"
        r"|summer|permanent|temporary|temp)\s+)*(?:job|position|role|internship|gig)|(?:was|were|got|get|gets|been)\s+"
        r"(?:just\s+)?hired)\s+(?:at|with|by)\s+(?P<v>.+)",
        change=True,
        place=True,
    ),
    _p("works_at", r"(?P<join>joined|join|joining)\s+(?P<v>.+)", change=True, place=True, check="cap"),
    # "I started at Stripe", "I just started at Stripe last week": a new job there ("I started at the
    # beginning", "at 9am" name no one; "started at Lincoln High" is a school, see _BEGUN_NOT_WORK)
    # ("I start at Stripe in June": a job to come, from when it starts, as "I'm starting at Stripe" is)
    _p(
        "works_at",
        r"(?P<began>started|starts|start|starting|began|begins|begin)\s+at\s+(?P<v>.+)",
        change=True,
        place=True,
        check="cap",
    ),
    _p(
        "works_at",
        r"(?:quit|left|leaving|quitting)\s+(?:my|his|her|their|the)\s+job\s+(?:at|with)\s+(?P<v>.+)",
        change=True,
        negated=True,
        place=True,
    ),
    # "I stopped working at Google", "I retired from IBM", "I was laid off from Meta": that job over
    _p(
        "works_at",
        r"(?:(?:stopped|stop|stops|quit|quitting)\s+working|retired|retire|retires|retiring|resigned|resign"
        r"|resigns|resigning|(?:got\s+|get\s+|gets\s+|getting\s+)?(?:fired|laid\s+off|let\s+go|sacked))"
        r"\s+(?:at|from|for|by)\s+(?P<v>.+)",
        change=True,
        negated=True,
        place=True,
        check="cap",
    ),
    # "I left Stripe": an employer or a home, which the rest of the Record tells (see _Run.resolve_left)
    _p(_LEFT, r"(?:left|leaving|quit|quitting)\s+(?P<v>.+)", change=True, negated=True, place=True, check="cap"),
    _p("job", r"work(?:s|ed|ing)?\s+as\s+(?:an?\s+)?(?P<v>.+)", place=True),
    _p(
        "job",
        r"(?:became|become|becoming|becomes)\s+(?:an?\s+)(?P<v>.+)",
        change=True,
        place=True,
        check="job",
    ),
    # "I used to be a teacher": the job held before
    # ("I'm no longer a teacher": the job, ended, as "I no longer live in Denver" ends the home)
    _p("job", rf"(?:am|is|are|was|(?<=\bused\sto\s)be)\s+(?:no\s+longer\s+)?{_NOW_ADVERB}(?:an?\s+)(?P<v>.+)", place=True, check="job"),
    # "I got promoted to manager": the job held from then
    _p(
        "job",
        r"(?:got|get|gets|getting|was|were|been|is|am|are)\s+(?:just\s+|finally\s+)?promoted\s+to\s+(?:an?\s+)?(?P<v>.+)",
        change=True,
        place=True,
        check="job",
    ),
    _p("studies_at", r"(?:study|studies|studied|studying)\s+at\s+(?P<v>.+)", place=True),
    _p("from", r"(?:am|is|are)\s+(?:originally\s+)?from\s+(?P<v>.+)", place=True),
    _p("from", r"grew\s+up\s+in\s+(?P<v>.+)", place=True),
    # "I was born in Ohio", "born and raised in Leeds" (not "born in 1990": a place is a name)
    _p("from", r"(?:was|were)\s+born\s+(?:and\s+(?:raised|bred)\s+)?in\s+(?:the\s+)?(?P<v>.+)", place=True, check="cap"),
    # ("I'm 35, not 34": the age and the one it corrects)
    _p("age", rf"(?:am|is|are)\s+{_NOW_ADVERB}(?P<v>\d{{1,3}})(?:\s+(?:years?\s+old|y/?o))?(?:\s*,?\s*not\s+\d{{1,3}})?\s*$"),
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
        rf"(?:have|has|had|got|get|getting|adopted|adopt|own|owns)\s+{_BEFORE_PETS}(?:a|an|one|two|three|four|\d+|some)?\s*(?:(?:new|little|cute|sweet|pet|rescue|baby|black|white|old|young|big|small)\s+)*(?P<v>{_PETS})(?:s|es)?\b",
    ),
    _p("birthday", r"(?:was\s+)?born\s+on\s+(?P<v>.+)"),
    # "I'm called Ali", "got named Rex": a name given is passive; "Bob called Tom" is a phone call
    # (see attribute_of)
    _p(
        "name",
        r"(?:(?:(?:got|get|gets|getting)\s+)?(?P<call>called|named)|go\s+by|goes\s+by)\s+(?P<v>.+)",
        place=True,
        check="cap",
    ),
    _p(
        "likes",
        r"(?:like|likes|liked|love|loves|loved|enjoy|enjoys|enjoyed|adore|adores|adored|prefer|prefers|preferred|hate|hates|hated|dislike|dislikes|disliked|detest|detests|can\s+not\s+stand|(?:am|is|are)\s+(?:(?:really|so|totally|very|super|big|huge)\s+)?into|(?:am|is|are)\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|(?:am|is|are)\s+passionate\s+about|(?:am|is|are)\s+obsessed\s+with|(?:am|is|are)\s+fond\s+of)\s+(?P<v>.+)",
    ),
]

_HABIT_ALT = "|".join(sorted({f for v in _HABIT_VERBS for f in (v, conjugate_3sg(v))}, key=len, reverse=True))
_PATTERNS += [
    _p(
        "does",
        r"(?:stopped|stop|stops|quit|quits|quitting|gave\s+up|give\s+up|giving\s+up)\s+(?P<h>\w+ing)\b\s*(?P<v>.*)",
        change=True,
        negated=True,
    ),
    _p(
        "does",
        r"(?:started|start|starts|starting|began|begin|took\s+up|take\s+up|picked\s+up)\s+(?P<h>\w+ing)\b\s*(?P<v>.*)",
        change=True,
    ),
    _p("does", rf"(?P<h>{_HABIT_ALT})\b\s*(?P<v>.*)"),
]

# ------------------------------------------------------------------------------------------ utilities


def _norm(s: str) -> str:
    return s.replace("\u2019", "'")


_CONTRACTIONS = re.compile(r"\b(?:can't|won't|cannot)\b|n't\b|'(?:m|re|ve|ll|d)\b", re.I)
_EXPANDED = {"can't": "can not", "won't": "will not", "cannot": "can not", "n't": " not", "'m": " am",
             "'re": " are", "'ve": " have", "'ll": " will", "'d": " would"}  # fmt: skip


def _expand(s: str) -> str:
    """Contractions expanded, same text otherwise (for attribute matching only; offsets are not kept)."""
    if "'" not in s and "\u2019" not in s and "annot" not in s:
        return s
    return _CONTRACTIONS.sub(lambda m: _EXPANDED.get(m.group(0).lower(), m.group(0)), _norm(s))


def _abbreviated(text: str, cut: re.Match[str]) -> bool:
    """Whether the full stop ``cut`` found ends an abbreviation or an initial ("St. Louis", "J.P.
    Morgan", "the U.S. in 2015"), not the words it is in."""
    if not cut.group().lstrip().startswith("."):
        return False
    prev = _WORD_BEFORE.search(text, max(0, cut.start() - _ABBREV_REACH), cut.start())
    return prev is not None and _abbreviation(prev.group(1))


def _abbreviation(word: str) -> bool:
    """A word a full stop after does not end a sentence: a known abbreviation ("Dr", "St"), a letter
    ("J"), or letters with stops between them ("U.S", "D.C", "J.P")."""
    low = word.lower().rstrip(".")
    return low in _ABBREV or len(low) == 1 or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", low))


def _split_sentences(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = 0
    for m in (_SENT_END if _EMOJI_RE.search(text) else _SENT_END_NO_EMOJI).finditer(text):
        if m.group(0).startswith("."):
            # "Dr. Smith", "e.g. this", "J. K." are not sentence ends
            # ("can't." ends one: the letter after an apostrophe is no initial)
            prev = _WORD_BEFORE.search(text, max(start, m.start() - _ABBREV_REACH), m.start())
            if prev and (prev.group(1).lower().rstrip(".") in _ABBREV or len(prev.group(1)) == 1):
                continue
            if prev and "." in prev.group(1) and re.match(r"\s+[a-z\d]", text[m.end() : m.end() + 2]):
                continue  # "the U.S. in 2015": an initialism, the sentence going on in lower case
        end = m.end()
        if text[start:end].strip():
            out.append((start, end))
        start = end
    if text[start:].strip():
        out.append((start, len(text)))
    return out


# "@bob", "@bob.smith:", "@here": whom a chat message is for (a vocative), before its words
_MENTION = re.compile(r"@[^\W_][\w.-]*[,:]?\s+")
_MENTIONS_AFTER = re.compile(r"(?:\s+@[^\W_][\w.-]*)+[\s.!]*$")


def _bullet(ch: str) -> bool:
    """A list's bullet or arrow ("\u2022 Bob moved", "\u2192 Bob moved", "\u25aa ..."): no part of a clause (the
    emoji and pictographs from U+2600 are _symbol's)."""
    return ch in "\u2022\u2023\u2043\u2219\u00b7" or "\u2190" <= ch <= "\u21ff" or "\u25a0" <= ch <= "\u25ff"


# a task list's ticked box ("- [x] moved to Denver"): no part of the clause (an open one, "- [ ] move to
# Denver", heads a thing to do, and is left to read as nothing)
_TASK_BOX = re.compile(r"\[[xX\u2713\u2714]\](?=\s)")


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and (
        text[s].isspace() or text[s] in ",;:-\u2013\u2014\"'\u201c\u201d*~>([" or _symbol(text[s]) or _bullet(text[s])
    ):
        box = _TASK_BOX.match(text, s, e) if text[s] == "[" else None
        s = box.end() if box is not None else s + 1
    # ('I love "The Office".': the mark that closes a quotation opened in the clause stays with it)
    straight, opened, closed = text.count('"', s, e), text.count("\u201c", s, e), text.count("\u201d", s, e)
    while e > s and (
        text[e - 1].isspace() or text[e - 1] in ".,;:!?-\u2013\u2014\"'\u201c\u201d*~)]\u2026" or _symbol(text[e - 1])
    ):
        if (text[e - 1] == '"' and straight % 2 == 0) or (text[e - 1] == "\u201d" and closed <= opened):
            break
        straight -= text[e - 1] == '"'
        opened -= text[e - 1] == "\u201c"
        closed -= text[e - 1] == "\u201d"
        e -= 1
    return s, e


def _symbol(ch: str) -> bool:
    """An emoji or another pictograph (and the selector that styles one): no part of a clause."""
    return ch >= "\u2600" and (unicodedata.category(ch) == "So" or ch == "\ufe0f")


def _titled_i(text: str, at: int, end: int) -> bool:
    """Whether the "I" before ``at``, within a clause, opens a title ("read I Am Legend", "love I Will
    Survive"): a verb capitalised after it, and the word after the verb, as no sentence spells them."""
    after = _CAPITALISED_NEXT.match(text, at, end)
    return after is not None and after.group(1).lower() in _FINITE | _VERB_BASE_SET


def _clean_value(v: str, place: bool) -> str:
    quoted = _QUOTED_VALUE.match(v)
    if quoted:
        v = quoted.group(1)  # ('love "Pride and Prejudice"': a title whole, its "and" no end)
    elif m := next((c for c in _CUT.finditer(v) if not _abbreviated(v, c)), None):
        v = v[: m.start()]
    if place and not quoted:
        m = _PLACE_CUT.search(v)
        if m:
            v = v[: m.start()]
    v = re.sub(r"^(?:a|an|the|some|my\s+own)\s+", "", v.strip(), flags=re.I)
    v = _SPACES.sub(" ", v).strip(" .'\"").lower()
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
    # me | relative ("my sister") | mine ("my car") | you | name | np ("the office") | it
    kind: str = "me"
    front: tuple[int, int] | None = None  # a time that opened the clause ("Last weekend I ...")
    when: tuple[int, int] | None = None  # the fronted clause of a time to come ("When I retire, I ...")
    frame: str | None = None  # "thinks"/"says": the statement is the speaker's view of the clause
    partner: str | None = None  # "Tom and I ...": the other person
    also: tuple[str, ...] = ()  # "Jen and Tom work at Google": the other people the clause is as true of
    attr_single: bool = False  # "Alice's blood type is ...": a one-valued attribute of the subject
    implicit: bool = False  # the clause had no subject word ("Busy with studies"): the speaker's
    urged: bool = False  # the speaker urges the person spoken to on: "yourself" is them, now "themselves"
    # an aside between the subject and its verb ("Kate, my roommate, ..."): said of the subject, no part
    # of what the clause tells ("my" there makes it no experience of the speaker's)
    aside: tuple[int, int] | None = None
    # a proposal ("Let's move to Denver", "We should get a dog"): what the speaker wants, as "I want to
    # move to Denver" is, no home, pet or job of theirs
    proposed: bool = False


# Patterns once written inline where a clause or a sentence is read: compiled here, each read no longer
# asks re's cache for it (a tenth of the regex calls a turn costs)
_OPENING_VOCATIVE = re.compile(
    r"^\W*(?:(?:hey|hi|hello|oh|wow|whoa|woah|thanks|thank\s+you|yeah|yes|yep|yup|no|nope|ok|okay|congrats"
    r"|congratulations|aw+|haha|dear|sorry)[\s,!]+)?([A-Z][a-z]+)\s*[,!](?!\s*(?:who|whose|which)\b)",
    re.I,
)
_VOCATIVE_AFTER = re.compile(r"\s*([A-Za-z][a-z]+)\s*(?:[,.!?\u2026]|$)")
_CLOSING_VOCATIVE = re.compile(r",\s*([A-Za-z][a-z]+)\s*[.!?\u2026]*[\"')\]]*\s*$")
_LEADING_VOCATIVE = re.compile(r"([A-Z][a-z]+)\s*[,!]\s+(?!(?:who|whose|which)\b)")
_TRAILING_VOCATIVE = re.compile(r",\s*([A-Z][a-z]+)\s*$")
_BEFORE_TIME = re.compile(
    r"(?:(?:just|only|even|back|way\s+back|earlier|later)\s+)?(?:(?:in|on|at|during|over|by|this\s+past|around)\s+)?",
    re.I,
)
_CONTRACTION_LEFT = re.compile(r"^(?:s|m|re|ve|ll|d)\s+")
_LETTER = re.compile(r"[A-Za-z]")
_USED_TO = re.compile(r"\bused\s+to\b", re.I)
_LOWER_WORD = re.compile(r"[a-z]+")
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_STOP = re.compile(r"\s+([,.;:!?])")


def _words(text: str, s: int, e: int) -> list[tuple[str, int, int]]:
    found = _TOK.finditer(text, s, e)
    if text.find("\u2019", s, e) < 0:  # no token to _norm: each is kept as it is
        return [(m.group(0), m.start(), m.end()) for m in found]
    return [(_norm(m.group(0)), m.start(), m.end()) for m in found]


def _is_verb(tok: str) -> bool:
    return tok.lower() in _VERB_FORMS


def _possessed_then_finite(right: list[tuple[str, int, int]]) -> bool:
    """A possessive, a person noun and a finite verb after it: "his wife works", "their kids live" (not
    "their tails were wagging": a thing of theirs stays in the clause)."""
    k = 1
    while k < len(right) and k < 5 and right[k][0].isalpha() and right[k][0].lower() not in _VERB_FORMS:
        k += 1
    if k == 1 or k >= len(right):
        return False
    verb, noun = right[k][0].lower(), right[k - 1][0].lower()
    if not any(w.lower().removesuffix("'s") in PERSON_NOUNS for w, _, _ in right[1:k]):
        return False
    # a plain form after a plural noun is finite too ("their kids live in Rome")
    return verb in _FINITE or (verb in _VERB_BASE_SET and noun.endswith("s") and not noun.endswith("ss"))


# A verb's own object or complement opens with these ("live in Denver", "work at Stripe", "have a dog")
_VERB_OBJECT_OPENERS = {
    "in", "at", "for", "with", "to", "a", "an", "the", "my", "our", "his", "her", "their", "as", "from", "on",
    "two", "three", "lots", "some", "no",
}  # fmt: skip


# Adverbs a second verb of the same subject may follow: "(I grew up in Ohio) but now live in Denver"
_BEFORE_SECOND_VERB = {"now", "still", "also", "currently", "recently", "then", "later", "finally", "soon"}


def _own_verb_after_contraction(left_words: list[str], right: list[tuple[str, int, int]]) -> bool:
    """After "I'm ..." (a subject with "am"/"are" contracted onto it), "and" then a plain verb with its
    object is that subject's second verb: "I'm 30 and live in Denver", "I'm a nurse and work at St.
    Mary's" (not "I'm into electronic and rock music": "rock" has no object of a verb after it)."""
    return (
        bool(left_words)
        and left_words[0] in ("i'm", "im", "we're", "you're", "youre", "they're")
        and len(right) > 1
        and right[0][0].lower() in _VERB_BASE_SET
        and right[1][0].lower() in _VERB_OBJECT_OPENERS
    )


def _person_clause(right: list[tuple[str, int, int]]) -> bool:
    """Whether the words after "and" open a person's clause: a person's pronoun with a verb ("she is", "I'm"),
    "my"/"his"/... and a person with a verb ("my brother is"), or a name with a verb ("Bob is")."""
    first = right[0][0].lower()
    nxt = right[1][0].lower() if len(right) > 1 else ""
    if first in _SUBJECT_CONTRACTIONS:
        return True
    if first in _PERSON_SUBJECTS:
        return nxt in _VERB_FORMS
    if first in ("my", "our", "his", "her", "their", "your"):
        return _possessed_then_finite(right)
    return is_name_token(right[0][0]) and first not in _COMMON_NOUNS and nxt in _FINITE


# Verb forms a singular subject never takes: after "and", a singular noun with one of these is the second
# half of a subject ("I think Bob and Carol are ...", "I'm sure my brother and my sister are happy")
_PLURAL_ONLY = {"are", "were", "have", "do", "aren't", "weren't", "don't", "haven't"}
_SINGULAR_ONLY = {"is", "was", "has", "does", "isn't", "wasn't", "hasn't", "doesn't"} | _THIRD_S_ONLY


def _joined_subject(right: list[tuple[str, int, int]]) -> bool:
    first = right[0][0]
    if first.lower() in ("he", "she"):
        k = 1
    elif first.lower() in ("my", "our", "his", "her", "their", "your"):
        k = 1
        while k < len(right) and k < 5 and right[k][0].isalpha() and right[k][0].lower() not in _VERB_FORMS:
            k += 1
        noun = right[k - 1][0].lower()
        if k == 1 or (noun.endswith("s") and not noun.endswith("ss")):
            return False
    elif is_name_token(first):
        k = 1
    else:
        return False
    return k < len(right) and right[k][0].lower() in _PLURAL_ONLY


def _pluperfect(tok: str, words: list[tuple[str, int, int]]) -> str:
    """"had" for an "'d" before a past participle ("I'd been wanting to", "We'd never seen it"), which
    is no "would"; "" otherwise."""
    if not tok.lower().endswith("'d"):
        return ""
    nxt = next((w.lower() for w, _, _ in words[1:4] if w.lower() not in ADVERBS), "")
    participle = nxt in _PARTICIPLES or (nxt.endswith("ed") and nxt in _VERB_FORMS and nxt != "need")
    return "had" if participle else ""


# A personal subject with its verb contracted onto it, as the verb the name it becomes takes
_PERSON_CONTRACTION = re.compile(r"\b(I|you)'(m|re|ve|ll|d)\b", re.I)
_CONTRACTED = {"m": "is", "re": "is", "ve": "has", "ll": "will", "d": "would"}


# Past participles after which "'s" is "has", never "is" ("She's been working", "he's got two kids"); not
# those that also read as adjectives or passives ("she's done", "she's known for", "she's married")
_HAS_PARTICIPLES = {
    "been", "got", "gotten", "had", "gone", "come", "become", "begun", "fallen", "forgotten", "grown", "flown",
    "eaten", "spoken", "written",
}  # fmt: skip


def _contraction_prefix(tok: str, words: list[tuple[str, int, int]] | None = None) -> str:
    """The verb a contraction stands for; words, when given, start at tok (for "'s" before a participle)."""
    low = tok.lower()
    if words and low.endswith("'s"):
        nxt = next((w.lower() for w, _, _ in words[1:4] if w.lower() not in ADVERBS), "")
        if nxt in _HAS_PARTICIPLES:
            return "has"
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

    name = "rules-v2"

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        with one_text_s_dates():
            return self._extract(source, self_name)

    def _extract(self, source: SourceText, self_name: str | None) -> list[Assertion]:
        if source.triple is not None:
            return self._fact(source, self_name)
        if source.kind == "event":
            # "name: text": the text may read as clauses of its own ("Alice upgraded to Pro")
            head = source.text.find(": ")
            out = _Run(source, self_name).run(head + 2) if head >= 0 else []
            return out or self._event(source, self_name)
        parts = transcript_parts(source)
        if parts is None:
            return _Run(source, self_name).run()
        # each turn read as its speaker's message, its spans moved to where it is in the document; a turn
        # of someone other than who sent the Record is their words as the sender tells them
        return [
            replace(a, span=(a.span[0] + offset, a.span[1] + offset))
            for offset, part in parts
            for a in _Run(part, self_name, relayed=part.speaker != source.speaker).run()
        ]

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
            found = probe.attribute_of(_expand(f"{pred} {value}"), "")
            attr = found[0] if found else (re.sub(r"[^a-z0-9]+", "_", pred).strip("_") or None)
        negated = bool(_NEG.search(pred)) and not _NEG_EXCEPT.search(pred)
        tense = tense_of(pred, verb_first=True)
        exprs = find_time_expressions(
            text, source.occurred_at, future=looks_ahead(pred, tense), weekdays_ahead=ahead_unless_past(tense)
        )
        valid_from, valid_to, stated = resolve(exprs, source.occurred_at, tense=tense, state=True)
        start, end = _trim(text, 0, len(text))
        if end <= start:
            return []
        statement = _sentence_case(
            f"{subject} {_fact_predicate(pred)} {value.strip()}".replace(" 's ", "'s ")
        )
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
                valid_from=valid_from,
                valid_to=valid_to,
                span=(start, end),
                time_stated=stated,
            )
        ]

    @staticmethod
    def _event(source: SourceText, self_name: str | None) -> list[Assertion]:
        """An event the rules cannot read as a clause ("login: Signed in from Porto") is still a dated
        happening: one Memory, at occurred_at, about the Brain's self. An application's event is not
        the person's own statement, so it is owned by nobody."""
        start, end = _trim(source.text, 0, len(source.text))
        if end <= start:
            return []
        body = re.sub(r"\s+", " ", source.text[start:end])
        when = source.occurred_at
        return [
            Assertion(
                statement=_sentence_case(
                    f"Event on {when.day} {calendar.month_name[when.month]} {when.year}: {body}"
                ),
                subject=self_name or "the user",
                owner=None,
                attribute=None,
                value=None,
                single_valued=False,
                change=False,
                negated=False,
                valid_from=when,
                valid_to=None,
                span=(start, end),
                time_stated=True,
            )
        ]


def _sentence_case(statement: str) -> str:
    statement = re.sub(r"\s+", " ", statement).strip()
    statement = statement[:1].upper() + statement[1:]
    return statement if statement.endswith((".", "!", "?")) else statement + "."


def _fact_predicate(pred: str) -> str:
    """A triple's predicate as English: "lives_in" -> "lives in", "live in" -> "lives in", "favorite
    color" -> "'s favorite color is"."""
    words = pred.split()
    if not words:
        return "is"
    head = words[0]
    if head in ("is", "was", "has", "had", "does", "did", "can", "will") or head.endswith(("ed", "s")):
        return pred
    if head in _VERB_BASE_SET:
        return " ".join([conjugate_3sg(head), *words[1:]])
    return f"'s {pred} is"


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

# ------------------------------------------------------------------------------------- clause features

# Corrections of something said before: "Actually I moved in April, not March", "I meant Porto", "No wait,
# I live in Boulder".
_CORRECTIVE = re.compile(
    r"^\W*(?:actually|correction|to\s+be\s+clear|scratch\s+that|sorry,?\s+i\s+meant|no,?\s+wait|wait,?\s+no|oops"
    r"|whoops|my\s+bad)\b|^\W*edit\s*:"
    r"|\b(?:i\s+meant|rather\s+than|i\s+was\s+wrong|let\s+me\s+correct|not\s+true\s+that"
    r"|(?:that|it)(?:['\u2019]s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+(?:right|true|correct)))\b"
    r"|,\s*(?:and\s+)?not\s+(?!(?:just|only|even|sure|bad|too|that|always|much|many|really|quite|yet|ever|all)\b)"
    r"(?:in\s+|on\s+|at\s+)?[\w'\u2019-]+(?:\s+[\w'\u2019-]+){0,3}\s*[.!]?\s*$",
    re.I,
)
# A word each of _CORRECTIVE's alternatives holds ("whoops" holds "oops", "incorrect" and "correction"
# "correct", "to be clear" "clear", ", and not ..." "not")
_CORRECTIVE_WORDS = ("actually", "clear", "scratch", "meant", "wait", "oops", "bad", "edit", "rather", "wrong", "correct", "not")


def _correcting(text: str) -> bool:
    """Whether _CORRECTIVE matches ``text``. In an ASCII text a match holds one of _CORRECTIVE_WORDS in
    lower case: a sentence with none (most) is spared the regex. Outside ASCII the regex decides."""
    if text.isascii():
        low = text.lower()
        if not any(word in low for word in _CORRECTIVE_WORDS):
            return False
    return _CORRECTIVE.search(text) is not None


# A value said in place of another, with no clause of its own ("Sorry, I meant Portland, not Denver",
# "*Portland", "I live in Denver, sorry, Portland"): what it is the value of is what was said before it.
# A value with no replaced one named must be a name or a number: "I mean, whatever" corrects nothing, and
# a chat emote (*hugs*, *Sigh*) is wrapped in asterisks, a correction only led (or trailed) by one.
_MEANT_NAME = r"(?!I\b)(?:(?i:the)\s+)?[A-Z0-9][\w'\u2019&.-]*(?:\s+(?:[A-Z0-9][\w'\u2019&.-]*|of|de|la|and|&)){0,3}"
# (no hedge: "Nope, not yet", "No, not really" correct nothing)
_MEANT_WORDS = (
    r"(?!(?i:I|just|only|even|sure|bad|too|that|this|it|always|much|many|really|quite|yet|ever|all|now|so|exactly"
    r"|necessarily)\b)[\w'\u2019&.-]+(?:\s+[\w'\u2019&.-]+){0,3}"
)
_MEANT_OPENER = r"(?i:(?:sorry|oops|whoops|my\s+bad|no,?\s+wait|wait|correction|edit|err?|um+|uh+)\b[\s,:.!\u2014\u2013-]*)*"
_MEANT_ELSE = r"\s*,?\s*(?i:(?:and\s+)?not)\s+"
# A thing meant, with its article, in place of one said ("I'm a nurse, sorry, a doctor", "I have a dog, I
# mean a cat"; no amount: "..., sorry, a lot" corrects nothing); see restated
_MEANT_NOUN = (
    r"(?P<noun>(?i:an?)\s+(?!(?i:lot|bit|little|few|couple|while|moment|sec|second|minute|typo)\b)[a-z][\w'\u2019-]*"
    r"(?:\s+[a-z][\w'\u2019-]*)?(?<!\sone))"  # ("..., actually a big one": more of the same thing)
)
_MEANT = re.compile(
    rf"^{_MEANT_OPENER}(?i:i\s+mean|i\s+meant)\s*,?\s+(?:(?P<named>{_MEANT_WORDS}){_MEANT_ELSE}(?P<wrong>{_MEANT_WORDS})"
    rf"|(?P<meant>{_MEANT_NAME})|{_MEANT_NOUN})[\s.!]*$"
    rf"|^{_MEANT_OPENER}(?P<instead>{_MEANT_NAME}){_MEANT_ELSE}(?P<replaced>{_MEANT_WORDS})[\s.!]*$"
    rf"|^\*\s*(?P<starred>{_MEANT_NAME})[\s.!]*$",
)
# ... and said after the clause it corrects, in its sentence ("I live in Denver, sorry, Portland")
# ("I live in Boston, sorry, in Denver", "..., or rather Denver": the place's preposition said again)
_MEANT_AFTER = re.compile(
    rf",\s*(?i:sorry|oops|whoops|i\s+mean|i\s+meant|no,?\s+wait|err?|um+|uh+|actually|or\s+rather)\b[\s,:\u2014\u2013-]*"
    rf"(?:(?:(?i:in|at|to|from)\s+)?(?P<meant>{_MEANT_NAME})|{_MEANT_NOUN})[\s.!]*$",
)
_ADVICE = re.compile(
    r"^\s*(?:(?:really|definitely|always|totally|just|also)\s+)*(?:can|could|should|must|might|may|need\s+to|have\s+to"
    r"|got\s+to|gotta|ought\s+to|will\s+(?:love|like|enjoy))\b",
    re.I,
)
# "be" and what it says the subject is at a time ("am WFH today", "will be out Friday"): a condition that
# holds for the time named; not a coming or going ("is back", "is off to Paris", "is going to")
_HELD = re.compile(
    r"^(?:(?:will|shall)\s+)?(?:be|am|is|are|was|were)\s+(?:(?:not|still|also|all|just|really|so|very|totally"
    r"|currently|now|finally)\s+)*"
    r"(?!(?:back|going|gonna|about|due|off\s+to|out\s+to)\b)(?P<w>[\w'\u2019-]+)",
    re.I,
)
# words that open a clause of its own, whose time is not the condition's
_HELD_INNER = {
    "that", "because", "since", "when", "after", "before", "and", "but", "so", "to", "who", "which", "if",
    "until", "while", "as", "we", "i", "he", "she", "they", "you",
}  # fmt: skip
_DENIED_ALTERNATIVE = re.compile(r",\s*(?:and\s+)?not\s+[^,;]*$", re.I)
_ACQUIRED = re.compile(
    r"\b(?:got|gotten|adopted|bought|received|became|turned|joined|started|began|moved|married|divorced)\b",
    re.I,
)
# A denial with nothing of its own: "No, that's wrong.", "Not true.", "That is incorrect".
_RETRACTION = re.compile(
    r"^\W*(?:(?:no|nope|nah|wrong|incorrect|false|untrue)[\s,.!]*)*(?:(?:that|this|it)(?:['\u2019]s|\s+is|\s+was)"
    r"\s+(?:(?:all|just|simply|totally|completely)\s+)?(?:wrong|incorrect|false|untrue|not\s+(?:right|true|correct|so))"
    r"|not\s+(?:true|right|correct|so)|(?:no|nope|nah|wrong|incorrect|false|untrue))[\s.!]*$",
    re.I,
)
# Words that judge rather than report: a clause made of them is an opinion (or, said to someone, praise).
_EVALUATIVE = re.compile(
    r"\b(?:great|awesome|amazing|incredible|wonderful|fantastic|cool|nice|lovely|beautiful|gorgeous|brave"
    r"|strong|inspiring|inspirational|inspired|impressive|admirable|special|important|crucial|key|vital"
    r"|essential|necessary|rewarding|fun|tough|hard|easy|scary|sad|cute|sweet|kind|lucky|talented|perfect"
    r"|proud|awful|terrible|horrible|bad|best|worst|good|helpful|powerful|meaningful|valuable|stunning"
    r"|brilliant|excellent|fabulous|epic|wild|crazy|insane|unreal|magical|peaceful|calming|relaxing"
    r"|exciting|interesting|hilarious|funny|delicious|yummy|tasty|must|worth|matters?|rocks?|sucks?"
    r"|admire|appreciate|respect|caring|thoughtful|generous|dedicated|determined|passionate|courageous"
    r"|supportive|creative|smart|wise|skilled|gifted|fantastic|superb|neat|lit|dope|rad|priceless"
    r"|unique|different|necessary|beneficial|therapeutic|healing|empowering|uplifting|heartwarming"
    r"|touching|incredible|breathtaking|adorable|precious|comforting|soothing|refreshing"
    # ("moving to Oslo", "moving out": going somewhere, not touching)
    r"|moving(?!\s+(?:to|in|into|out|away|back|abroad|over|home|house|across|from|there|here)\b))\b",
    re.I,
)
# Every run of letters _EVALUATIVE's source holds, each also with an "s" and without one (a superset of
# the words it matches: those of its lookahead too, "matter" as much as "matters" for "matters?")
_EVALUATIVE_WORDS = frozenset(
    w
    for word in re.findall(r"[a-z]+", _EVALUATIVE.pattern.replace("\\b", " ").replace("\\s", " "))
    for w in (word, word + "s", word.removesuffix("s"))
)
_WORD_RUN = re.compile(r"\w+")


def _evaluative_in(text: str) -> bool:
    """Whether ``text`` holds a word of _EVALUATIVE's. A match is a whole word (a run of \\w between
    \\b's) and, in an ASCII text, that word in lower case is one of _EVALUATIVE_WORDS: a text none of
    whose words is one holds none, and the regex (a hundred words tried at each word's edges) is spared.
    Outside ASCII case folding may match other letters ("\u017f" for "s"): the regex decides."""
    if text.isascii() and _EVALUATIVE_WORDS.isdisjoint(_WORD_RUN.findall(text.lower())):
        return False
    return _EVALUATIVE.search(text) is not None


_INTENSIFIERS = {
    "so", "such", "really", "very", "super", "truly", "totally", "just", "too", "pretty", "quite", "absolutely",
    "definitely", "incredibly", "extremely", "seriously", "literally", "sure", "always", "also", "all",
    "doing", "job", "looks", "sound", "sounds", "seems", "look", "seem", "be", "being", "been", "is", "are",
    "was", "were", "am", "a", "an", "the", "of", "to", "and", "or", "for", "with", "in", "on", "at", "it",
    "that", "this", "thing", "things", "stuff", "lot", "lots", "way", "ways", "what", "how", "who", "one",
    "much", "many", "more", "most", "you", "your", "yours", "yourself", "i", "me", "my", "we", "us", "our",
    "they", "them", "their", "he", "she", "him", "her", "his", "its", "there", "here", "get", "got",
    "have", "has", "had", "do", "does", "did", "can", "could", "will", "would", "should", "might", "must",
    "happening", "going", "out", "up", "about", "around", "like", "as", "by", "from", "people",
    "others", "everyone", "everything", "anything", "something", "nothing", "time", "times", "now",
    "make", "makes", "made", "keep", "kept", "see", "seeing", "know", "knowing", "hear", "hearing", "feel",
    "feels", "felt", "feeling", "think", "thinks", "thought", "need", "needs", "want", "wants", "great",
    "come", "came", "long", "far",
}  # fmt: skip
# A predicate of what was meant to happen, or would have, and so did not: it states no attribute.
_UNREALISED = re.compile(
    r"(?:(?:just|really|actually|totally|originally|initially)\s+)*"
    r"(?:(?:was|were)\s+(?:(?:really|just|actually|totally|all|originally)\s+)*(?:going\s+to|gonna|about\s+to"
    r"|supposed\s+to|meant\s+to|planning\s+(?:on|to))|(?:would|could|should|might)(?:['\u2019]ve|\s+have))\b",
    re.I,
)
# A clause that opens on one of these is hypothetical, a wish or advice, not a fact.
_HYPOTHETICAL = re.compile(
    r"^(?:if|unless|whether|maybe|perhaps|hopefully|imagine|suppose|supposing|in\s+case|even\s+if|what\s+if"
    r"|i\s+wish|i\s+(?:really\s+)?hope(?!\s+to\s+(?!see\s+you|hear\s+from|talk|chat|catch))"
    r"|i(?:['\u2019]m|\s+am)\s+(?:really\s+)?hoping(?!\s+to\s+(?!see\s+you|hear\s+from|talk|chat|catch))"
    r"|wish|hope|let['\u2019]?s|let\s+me|let\s+us"
    r"|i\s+bet|i\s+guess|i\s+suppose|you\s+(?:should|could|might|must|need\s+to|have\s+to|gotta|ought)"
    r"|(?:we|i)\s+(?:should|could|might|ought))\b",
    re.I,
)
# A sentence that sets up make-believe ("Pretend you are my boss and I am asking for a raise", "Let's
# role-play: I am a customer who lives in Paris"): none of its clauses is the speaker's life.
_MAKE_BELIEVE = re.compile(
    r"^(?:(?:let['\u2019]?s|let\s+us|can\s+you|could\s+you|will\s+you|would\s+you|please|ok(?:ay)?|now)[\s,]+)*"
    r"(?:pretend|role[\s-]?play|act\s+as|play\s+(?:the\s+(?:role|part)|a\s+game|make[\s-]believe)|make[\s-]believe)\b"
    # set in a fiction: "In my novel, I live in Tokyo", "In the game I'm a knight"
    r"|^in\s+(?:my|our|the|this|that|a|your)\s+(?:\w+\s+)?(?:novel|story|stories|book|game|dream|script|campaign"
    r"|screenplay|fanfic|fan\s+fiction|fantasy|simulation|role[\s-]?play|sims?)\b",
    re.I,
)
# A message marked as sarcasm ("I just LOVE working at Acme. /s"): it means the opposite of what it says.
_SARCASM_MARK = re.compile(r"(?:^|\s)/s\s*$")
# ... or as a joke ("I'm a nurse at Google, just kidding", "I live in Denver lol jk"): what it said is taken
# back ("I'm not kidding", "no kidding" take nothing back, "I love joking" is no mark). Looked for in the
# text's last _JOKE_REACH characters.
_JOKE_MARK = re.compile(
    r"(?:(?:^|[\s,.!(])(?i:jk|j/k)|(?:^|[\s,.!(])(?i:just|only|jus|i['\u2019]?m|i\s+am)\s+(?i:kidding|joking)"
    r"|(?:^|[,.!(])\s*(?i:kidding|joking))(?i:\s+(?:lol|haha|lmao))?[\s.!)]*$"
)
_JOKE_REACH = 40
# Laughter that may come before the mark in a sentence of its own ("... lol jk", "haha just kidding"):
# the sentence still says nothing but the mark. One word at a time, so no pattern backtracks over a run.
_LAUGH = re.compile(r"(?i:lol|lmao|lmfao|rofl|(?:ha)+h?|(?:he)+h?|(?:ja)+|xd)")
# ... and a sentence that opens on one takes back the sentence before it ("I live in Boston. Just kidding,
# I live in Denver"); "Kidding aside", "Joking around is fun" are no mark
_JOKE_OPENER = re.compile(
    r"\W*(?i:(?:just|only|jus)\s+)?(?i:kidding|joking|jk|j/k)"
    r"(?=\s*(?:[,.!:;\u2014\u2013-]|$)|\s+(?i:I\b|I['\u2019]|lol\b|haha\b))[\s,.!:;\u2014\u2013-]*"
)
# A fronted subordinate clause with a first-person subject ("Since I lost my job at Acme, things have been
# tough", "After we moved to Oslo, ..."): what it says happened is a fact of its own. The reasons and
# concessions presuppose it; the times only when they are past ("When I get home" is no fact yet).
_SUBORDINATE = re.compile(
    r"(?P<sub>ever\s+since|since|because|although|even\s+though|though|after|when|while|whenever|once|before"
    r"|until|as\s+soon\s+as)\s+(?=(?:I|I['\u2019]m|I['\u2019]ve|I['\u2019]d|we|we['\u2019]re|we['\u2019]ve|my|our)\b)",
    re.I,
)
_CONDITION = re.compile(r"(?:if|unless|even\s+if|in\s+case|what\s+if|whether)\b", re.I)
# A fronted time that is no fact yet ("When I retire", "Once we move", "After I graduate"): it is the time of
# the clause after it, which without it says what is not so ("When I retire, I'll move to Florida")
_TIMES_WHAT_FOLLOWS = re.compile(r"(?i:when|whenever|once|after|before|until|as\s+soon\s+as)")
_PRESUPPOSING = {"since", "ever since", "because", "although", "even though", "though"}
_PAST_ONLY = {"after", "when", "while"}
# "When I was younger": a time of life, not a fact about the person
_LIFE_STAGE = re.compile(
    r"^\s*(?:was|were)\s+(?:(?:just|still|only|really)\s+)?(?:an?\s+)?(?:little\s+|young\s+|small\s+)?"
    r"(?:younger|older|young|little|small|kids?|child|children|teens?|teenagers?|boys?|girls?|babies|baby"
    r"|growing\s+up|in\s+(?:school|college|high\s+school))\b",
    re.I,
)
# A speaker showing something ("Here's a pic of my family camping", "Check out my new bike", "Take a look
# at the space I designed"): what they show is theirs to tell, as "<speaker> shared ...".
_SHOWING = re.compile(
    r"(?:here['\u2019]?s|here\s+is|here\s+are|these\s+are|check\s+out|take\s+a\s+look\s+at|have\s+a\s+look\s+at|look\s+at"
    r"|sharing)\s+(?P<what>(?:(?:a|an|the|some|this|these|that|those|my|our)\s+)?(?:(?:quick|little|new|recent"
    r"|few|couple\s+of|sneak)\s+)*(?P<noun>(?:pics?|pictures?|photos?|photographs?|snaps?|shots?|peek|glimpse|selfies?"
    r"|videos?|clips?|screenshots?|drawings?|sketch(?:es)?)(?![\w'\u2019-]))?)\s*(?P<rest>.*)",
    re.I | re.S,
)
# Where a question may follow a statement in one sentence, and the words that make it a question tag
_QUESTION_BOUNDARY = re.compile(r"\s+[-\u2013\u2014]+\s+|\s*[\u2013\u2014]\s*|(?<=\w)--+|,\s+")
_TAG_WORDS = {
    "didn't", "don't", "doesn't", "isn't", "aren't", "wasn't", "weren't", "won't", "haven't", "hasn't",
    "can't", "couldn't", "wouldn't", "shouldn't", "right", "or", "and", "but", "because", "so", "if",
}  # fmt: skip
# Past participles unlike their past tense (and "been"): after "'d" they make it "had"
_PARTICIPLES = {
    "been", "gone", "done", "seen", "taken", "given", "known", "grown", "shown", "written", "begun", "eaten",
    "fallen", "forgotten", "gotten", "driven", "ridden", "spoken", "chosen", "broken", "flown", "swum",
    "sung", "worn", "thrown", "drawn", "woken", "become", "come", "run",
}  # fmt: skip
# "(since) we last spoke": when the talk was, nothing that happened
_LAST_TALKED = re.compile(
    r"\s*(?:have\s+|had\s+)?last\s+(?:spoke|spoken|talked|chatted|caught\s+up|met|saw|seen|texted|messaged)\b", re.I
)
# Words that follow a verb as its object, never as a noun after another noun ("help them", "find it")
_OBJECT_WORDS = {"me", "us", "him", "her", "them", "it", "you", "my", "our", "his", "their", "your", "a", "an", "the"}
_THERE_FOR = re.compile(r"\bthere\s+for\b", re.I)
_HERE_FOR = re.compile(
    r"\s*(?:(?:am|is|are|will|would|always|be|still|just|really|truly|definitely|here|and)\s+)*(?:there|here)\s+for\s+\w",
    re.I,
)
# "It's (always) been a dream (of mine) to ...": what the speaker aims at
# ("It's a dream to drive": a delight, not an aim)
_AIM = re.compile(
    r"\s*(is|was|has)\s+(?:(?:always|really|long)\s+)*(?P<been>been\s+)?(?:(?P<my>my)|a)\s+(dream|goal|plan|wish|hope"
    r"|passion|priority|mission)(?P<mine>\s+of\s+mine)?\s+to\s+\w",
    re.I,
)
# What may open "<some people> and I ..." ("Some friends from church and I went camping")
_QUANTIFIERS = {"some", "many", "one"}
# Sentence adverbs a clause may open on before its subject (each read away by _INTERJ or _FRONT)
_CLAUSE_ADVERBS = {
    "now", "then", "also", "actually", "honestly", "lately", "recently", "currently", "luckily", "sadly",
    "unfortunately", "fortunately", "thankfully", "meanwhile",
}  # fmt: skip
# "Let's ...", "We should ...": a proposal of the speaker's (not "let's say", "let's see": a figure of speech;
# not "we should have": a regret)
_PROPOSAL = re.compile(
    r"(?:we\s+(?:(?:all|really|definitely|totally)\s+)*should\s+(?:(?:all|really|definitely|totally)\s+)*(?!have\b)"
    r"|let['\u2019]?s\s+)(?!(?:say|see|just\s+say|not|hope|face\s+it|keep\s+in\s+touch|(?:chat|talk|catch\s+up|speak)"
    r"\s+(?:later|again))\b)",
    re.I,
)
# "Thanks (so much)(, Sam) for having my back": gratitude for something done (a gerund follows)
_THANKS_FOR = re.compile(
    r"(?:thanks|thank\s+you|thx)(?:\s+(?:so|very)\s+much|\s+a\s+(?:lot|ton|bunch)|\s+again)?(?:\s*,\s*[A-Z][a-z]+(?:\s*,)?)?"
    r"\s+for\s+(?=[a-z]+ing\b)",
    re.I,
)
# "Congrats on the promotion(, Sam)!": what the person spoken to achieved, as the speaker tells it
_CONGRATS_ON = re.compile(
    r"(?:congrats|congratulations|congratz)(?:\s+again)?(?:\s*,\s*[A-Z][a-z]+\s*,?)?\s+(?:on|for)\s+(?=\w)", re.I
)
# "Happy 10th anniversary to my wife Sarah!", "Happy birthday to my son Leo": a wish for someone's day
_WISH_TO = re.compile(
    r"(?:a\s+)?(?:very\s+)?happy\s+(?:[\w'\u2019-]+\s+){0,3}?(?:birthday|bday|b-day|anniversary|retirement"
    r"|graduation|mother['\u2019]?s\s+day|father['\u2019]?s\s+day)\s+to\s+(?=\w)",
    re.I,
)
_CLAUSE_AFTER_COMMA = re.compile(
    r",\s+(?=(?:i|i['\u2019]m|we|you|you['\u2019]re|you['\u2019]ve|he|she|they|it|it['\u2019]s|that|that['\u2019]s"
    r"|this|what|how)\b)",
    re.I,
)
_THANKS_END = re.compile(r"[;()\u2013\u2014]|\s-+\s|,?\s+(?:but|so|though|although|whereas|while)\s+", re.I)
# Urging the person spoken to on: "Keep chasing your dreams", "Stay motivated", "Never give up", "Believe in
# yourself", "Don't quit", "Don't let anything stop you" ("Don't forget to call": a reminder, no urging)
_ENCOURAGE = re.compile(
    r"(?:(?P<neg>(?:don['\u2019]t|do\s+not)\s+)(?=give\s+up|quit|stop|let|lose|forget(?!\s+to\b|\s*,))"
    r"|(?=keep(?:\s+on)?\s+(?:[a-z]+ing\b|it\s+up|at\s+it|up\b)|stay\s+(?:motivated|strong|positive|focused"
    r"|determined|true|confident|hopeful)\b|never\s+(?:give\s+up|stop|quit)\b|believe\s+in\s+yourself\b"
    r"|push\s+(?:through|on|forward)\b|hang\s+in\s+there\b))",
    re.I,
)
# "Keep at it, buddy!": a word for the person spoken to, closing the urging, is no part of what they are
# urged to do (a name there is dropped with the sentence's other vocatives)
_ADDRESS_END = re.compile(
    r",\s*(?:my\s+)?(?:buddy|bud|pal|man|dude|bro|mate|friend|girl|champ|sis)\s*[.!]*\s*$", re.I
)
# "Keep pushing and you'll get there": what follows "and" is what the urging promises
_PROMISE = re.compile(
    r",?\s+and\s+(?=(?:you|you['\u2019]ll|you['\u2019]re|it|it['\u2019]ll|it['\u2019]s|things|everything|we|we['\u2019]ll)\b)",
    re.I,
)
# "... and don't quit": a second urging joined to the first
_MORE_URGING = re.compile(r",?\s+and\s+(?=(?:don['\u2019]t|do\s+not|never)\s)", re.I)
# "Let's go hiking sometime", "Let's catch up soon": an invitation with no time to it is a pleasantry
_SOMETIME = re.compile(r"\b(?:sometime|some\s+time|someday|some\s+day|one\s+day|soon)\b", re.I)
# Openers that hand the clause after them to the speaker as their view: "Remember that staying positive
# is important", "It's true, nature calms us", "The truth is ..." -> "<speaker> thinks ...".
_VIEW_OPENER = re.compile(
    r"(?:(?:just|always|but)\s+)?(?:remember|never\s+forget|don['\u2019]t\s+forget)(?:\s*,\s*|\s+that\s+|\s+(?=\w))"
    r"|it['\u2019]s\s+true(?:\s*,\s*|\s+that\s+)|(?:the\s+)?truth\s+is(?:\s*,\s*|\s+that\s+|\s+)",
    re.I,
)
# "(It) reminds me (that | how much) ...": what follows is the speaker's own thought
_REMINDER = re.compile(
    r"(?:(?:it|this|that)\s+)?(?:(?:really|always|also|just)\s+)?reminds?\s+me\s+(?:that\s+|how\s+much\s+)?",
    re.I,
)
# A death: "(sadly) passed away", "has died", "lost her battle with cancer"
_LOSS = re.compile(
    r"^\s*(?:(?:just|recently|sadly|suddenly|unexpectedly|finally|also|has|had|have)\s+)*(?:passed\s+away"
    r"|passed\s+on|died|is\s+gone|was\s+killed|lost\s+(?:his|her|their)\s+(?:battle|fight|life))\b",
    re.I,
)
# "(It) seems like ...", "Looks like ...": a view when a clause follows
_SEEMS = re.compile(r"(?:it\s+)?(?:seems|looks|sounds)\s+(?:like|that)\s+", re.I)
_SHOWN_OWN = re.compile(r"(?:my|our|these|this|the)\b", re.I)
# Adverbs that may stand before a modal verb ("I really could", "she probably might have")
_BEFORE_MODAL = r"^\s*(?:(?:really|probably|definitely|maybe|also|just|totally)\s+)*"
# Modal verbs that make a claim hypothetical ("I could try", "I might move"), unless a desire ("I'd love to").
_MODAL_HEAD = re.compile(
    _BEFORE_MODAL + r"(?:would|could|might|should|may|must)"
    r"(?!\s+(?:really\s+)?(?:love|like|prefer|enjoy)\b)\b",
    re.I,
)
# "I may have found a job", "My sister might have met him": the speaker's guess at what did happen, said as
# a guess (not "could have", "should have": what did not)
_LIKELY_PAST = re.compile(
    _BEFORE_MODAL + r"(?:may|might|must)\s+(?:already\s+|just\s+)?"
    r"have\s+(?:already\s+|just\s+|finally\s+)?(?!been\s+(?:so|such|a|an|really|very|quite|pretty|super)\b)[a-z]+\b",
    re.I,
)
# Openers that carry no subject but say something: "That's why I love it" -> "I love it".
# "would" + a verb of doing, for a past habit (not "would love", "would be", "would say" ...)
_WOULD_HABIT = re.compile(
    r"^\s*would\s+(?:(?:often|always|usually|sometimes|just|also|even|all)\s+)*(?!(?:love|like|prefer|rather"
    r"|be|have|say|think|guess|imagine|recommend|suggest|need|want|not|never|definitely|probably|totally"
    r"|really|so)\b)[a-z]+",
    re.I,
)
# A text set in the speaker's past ("when I was a kid", "growing up", "back then")
_PAST_FRAME = re.compile(
    r"\b(?:when|while)\s+(?:I|we)\s+(?:was|were)\s+(?:(?:just|still|really|a\s+lot)\s+)?(?:an?\s+)?(?:young|younger"
    r"|little|small|kids?|child|children|teens?|teenagers?|boys?|girls?|students?|growing\s+up|in\s+(?:high\s+school"
    r"|college|school|university))\b|\bgrowing\s+up\b|\bas\s+(?:a\s+)?(?:kids?|child|children|teens?|teenagers?)\b"
    r"|\bback\s+(?:then|in\s+the\s+day)\b|\bin\s+my\s+(?:childhood|youth|teens)\b|\bused\s+to\b",
    re.I,
)
_FRONT = re.compile(
    r"(?:that['\u2019]?s\s+why|that\s+is\s+why|which\s+is\s+why|this\s+is\s+why|and\s+now|so\s+now|since\s+then"
    r"|after\s+that|these\s+days|nowadays|lately|recently|currently|at\s+the\s+moment|right\s+now|besides"
    r"|meanwhile|luckily|unfortunately|sadly|thankfully|fortunately|anyway|also|then|so|and|but|for\s+me"
    r"|(?:it\s+)?turns\s+out(?:\s+that)?)\s*,?\s+",
    re.I,
)
# A fronted time told by an activity ("After finishing my screenplay, I got ...", "While walking home I
# saw ..."): it goes with the statement, at its end, like a fronted date
_GERUND_FRONT = re.compile(r"(?:after|before|while|since|upon|when)\s+(?P<ing>[a-z]+ing)\b", re.I)
_ACCORDING_FRONT = re.compile(r"according\s+to\b", re.I)
# A start told by an event named in a short noun phrase ("Since the wedding(,) I've lived ...", "Ever since
# the move, ..."): it goes with the statement, at its end, where "since the wedding" already dates a state
# from an unknown time (see _SINCE_EVENT); without its comma, the clause read "the wedding" as its subject
_SINCE_FRONT = re.compile(
    r"(?:ever\s+)?since(?=\s+(?:(?P<det>the|my|our|his|her|their)\s+[a-z]+(?:\s+(?P<second>[a-z]+))?|college|school"
    r"|high\s+school|grad\s+school|uni|university|graduation)(?:\s*,|\s+(?:I|we)['\u2019\s]))",
    re.I,
)
# The words a fronted time may open on that are no name ("In 2019", "Back in 2015", "Last week")
_TIME_LEAD = re.compile(
    r"(?:in|on|at|during|over|by|back|way|just|only|even|around|this|last|next|yesterday|today|tonight"
    r"|earlier|later|since|early|late|mid)\b",
    re.I,
)
# how often or when, as an adverb ("Soon I'm moving ...", "Finally we bought ..."): at the statement's end
# ("Apparently Bob is moving": as hedged as it was said, at the end: "Bob is moving ... apparently.")
_FREQUENCY = re.compile(
    r"(sometimes|often|usually|generally|occasionally|soon|finally|eventually|apparently|supposedly|reportedly"
    r"|evidently|obviously)\s*,?\s+",
    re.I,
)
# What narrows a fronted time ("Yesterday morning", "On Friday afternoon", "Yesterday at 3pm"): it goes
# with the time, and the subject comes after it
_TIME_OF_DAY = re.compile(
    r"\s*,?\s*(?:(?:in\s+the\s+)?(?:morning|afternoon|evening|night)|at\s+(?:noon|midnight|night|lunch(?:time)?"
    r"|\d{1,2}(?::\d{2})?\s*[ap]\.?m\.?|\d{1,2}:\d{2}))(?![\w'\u2019])",
    re.I,
)
# A label a sentence opens on ("Big news: we're moving", "Update: I got the job", "PS: ...", "2021-03-04:
# I moved"): what it heads is the writer's own, as after a dash. A label is a few words ending on one of
# these nouns (a name, a person or a reporting verb before a colon says who speaks: "Bob: I quit", "My
# mom: ...", "Bob said: ..." are none), or a date, which dates what follows it.
# What heads a list of things, not of the speaker's doings ("Bucket list: skydiving", "Gift ideas: ..."):
# an item without a subject is a thing listed ("Alice is skydiving" was read from it)
_ITEM_HEADS = {"list", "lists", "ideas", "tips", "goals", "wishlist"}
_LABEL = re.compile(r"(?P<label>[^\n:\"\u201c]{1,40}?)\s*:[ \t]+(?=\S)")
_LABEL_HEADS = {
    "news", "update", "updates", "edit", "correction", "note", "ps", "pps", "nb", "fyi", "tldr", "reminder",
    "fact", "summary", "status", "standup", "recap", "announcement", "clarification", "addendum",
    "confession", "disclaimer", "progress", "highlight", "highlights", "thought",
    "record", "short", "thing", "self", "me",  # "For the record:", "Long story short:", "One more thing:",
    # "Note to self:", "About me:"
    # what heads a list on the line it opens ("Reading list: Dune and Emma", "Meeting notes: I ...")
    "notes", *_ITEM_HEADS,
}  # fmt: skip
# A human speaker's clause with no subject is the speaker's own ("Been tweaking a recipe", "Busy with
# studies", "Had an audition yesterday"): chat drops the "I".
_IMPLICIT_STATE = {
    "busy", "excited", "happy", "glad", "thrilled", "proud", "grateful", "thankful", "stoked", "pumped", "nervous",
    "tired", "exhausted", "sick", "hooked", "lucky", "blessed", "keen", "eager", "ready", "done", "off",
    "back", "swamped", "obsessed", "super", "really", "so", "still", "currently", "now", "finally", "in",
    "working", "living", "feeling", "planning", "thinking", "looking", "hoping", "trying", "learning",
    "getting", "going", "doing", "taking", "making", "reading", "writing", "painting", "training",
    "loving", "enjoying", "starting", "heading", "spending", "focusing", "preparing", "saving",
}  # fmt: skip
# Negated auxiliaries a chat turn opens a clause on with the "I" dropped (not "don't": an instruction)
# ("Haven't been there yet" may answer anything: left alone)
_IMPLICIT_NEGATIONS = {"didn't", "wasn't", "couldn't"}
# ("Need help with marketing": a want, not an order, like them)
# ("Enjoy living in Berlin!", "Enjoy the weekend": a wish for the person spoken to, so not "enjoy")
_FEELING_VERBS = {"love", "appreciate", "adore", "miss", "hate", "loved", "enjoyed", "appreciated", "need"}
_IMPLICIT_SKIP = {"just", "also", "still", "finally", "recently", "really", "always", "never", "actually", "currently",
                  "totally", "definitely", "now", "even", "already", "only"}  # fmt: skip
_QUOTE = re.compile(
    r"[\u201c\"](?P<d>[^\u201d\"]{2,}?)[\u201d\"]"
    r"|(?<![\w])['\u2018](?P<s>[A-Z](?:[^'\u2018\u2019]|(?<=\w)['\u2019](?=\w))*?)['\u2019](?![\w])"
)
# "Bob claims he quit": a report the speaker does not vouch for, no fact of Bob's (see _Run._named)
_CLAIM_VERBS = {"claims", "claimed", "insists", "insisted"}
# "I told Bob I ...", "I said I ...": the speaker reporting their own words (a promise or a guess is none)
_OWN_WORDS_VERBS = {"told", "tell", "said", "say", "mentioned", "mention", "explained", "wrote", "texted", "emailed",
                    "messaged", "informed"}  # fmt: skip
_TOLD_OBJECTS = {"him", "her", "them", "you", "us", "everyone", "everybody", "people", "mom", "dad", "and"}
# Who a reporting frame names: "my mom", "Bob", "Bob Lee", "he", "she" (see _Run._voice_of)
_REPORTER = r"(?P<who>(?:[Mm]y\s+[a-z]+)|[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*)?|[Hh]e|[Ss]he)"
_REPORTING = re.compile(
    _REPORTER + r"\s+"
    r"(?:said|says|told\s+(?:me|us|him|her|them)|wrote|writes|asked|asks|replied|added|explained|texted|yelled|shouted"
    r"|tells\s+(?:me|us|him|her|them))\s*[:,]?\s*$"
)
_POSSESSIVE_DETERMINERS = {"my", "your", "our", "his", "her", "their"}
# Words that place a person by someone ("a friend of mine", "the guy next to me", "the kids in my class")
_PLACING = {"of", "in", "on", "at", "from", "to", "near", "behind", "beside", "with", "for", "across", "around"}
# Words for a person, beyond the relations (whom such a phrase may place)
_PEOPLE = PERSON_NOUNS | MALE_NOUNS | FEMALE_NOUNS | {
    "person", "people", "guys", "girls", "boys", "men", "women", "ladies", "owner", "owners", "hire", "hires",
    "members", "member", "staff", "crew", "folks",
}  # fmt: skip


def _places_a_person_by_me(words: list[tuple[str, int, int]]) -> bool:
    """Whether the words name a person and place them by the speaker ("a friend of mine", "the guy next
    to me", "the kids in my class"); "Losing my job" names no one, and "Coaching the kids in my town" is
    an activity, the speaker's own."""
    if not words or _is_gerund(words[0][0]):
        return False
    person = False
    prev = ""
    for w, _, _ in words:
        low = w.lower().removesuffix("'s")
        if person and prev in _PLACING and low in _PERSONAL | _OURS:
            return True
        person = person or low in _PEOPLE
        prev = low
    return False


# The words a title leaves lower-case ("Pride and Prejudice", "The Lord of the Rings")
_TITLE_SMALL_WORDS = {"a", "an", "the", "of", "and", "or", "in", "on", "at", "to", "for", "by", "with", "from", "nor"}
# Verbs that quote the words after them, beyond the verbs of saying ('I texted "I Quit"', 'she yelled "I Won"')
_SPEECH_VERBS = {"say", "tell", "texted", "text", "texts", "yelled", "yells", "shouted", "shouts", "asked", "asks",
                 "replied", "replies", "added", "adds", "screamed", "whispered", "typed", "posted", "captioned",
                 "answered", "goes", "like"}  # fmt: skip
_OBJECT_PRONOUNS = {"me", "us", "him", "her", "them", "you"}
# "was like", "is all like": a verb that quotes the words after it, in chat ("she was like I quit")
_QUOTATIVE = re.compile(r"(?i)(?:is|was|are|were|am)\s+(?:all\s+|just\s+|literally\s+)?like\b")
_SECOND_WORDS = SECOND | {"your", "yours", "yourself"}
# Words in double quotation marks within a clause, on one line
_QUOTED_WORDS = re.compile(r"[\u201c\"][^\u201c\u201d\"\n]{1,200}[\u201d\"]")
# the two capitalised words after a word ("I Am Legend"): the first read, the second only looked for
_CAPITALISED_NEXT = re.compile(r"\s+([A-Z][a-z]+)\s+[A-Z]")
# A value that opens on words in quotation marks ('read "I Am Legend" last week'): those words
_QUOTED_VALUE = re.compile(r"\s*[\u201c\"]([^\u201c\u201d\"\n]{1,200})(?:[\u201d\"]|$)")
# The frame after the words it reports ('"I moved to Spain," Carol said.', '"I quit," said Bob.')
_REPORTED_AFTER = re.compile(
    r"[ \t]*,?[ \t]*(?:" + _REPORTER + r"[ \t]+(?:said|says|wrote|writes|replied|added|explained|texted|told\s+me)"
    r"|(?:said|says|wrote|replied|added|explained)[ \t]+" + _REPORTER.replace("(?P<who>", "(?P<after>") + r")"
    r"(?:[ \t]+[a-z]+ly)?[ \t]*(?:[.!,;]|$)"
)
# Words pasted from elsewhere, not the sender's own (email conventions): "> " lines, the text under a
# "On <date>, Bob <bob@x.com> wrote:" line, everything after a forwarded message's header; and speech
# after a colon ("Bob said: I live in Paris", "Tom texted me: I quit").
_REPLY_HEADER = re.compile(r"^[^\n]*\bwrote:[ \t]*$", re.M | re.I)
_QUOTED_LINES = re.compile(r"(?:^[ \t]*>[^\n]*(?:\n|$))+", re.M)
# ... or, with no such line, a mail header block itself: a "From:" line right above another header field
# (Outlook's reply and forward: "From: Eve <eve@x.com>\nSent: Monday, ...\nTo: ...\nSubject: ...")
_FORWARDED = re.compile(
    r"^[ \t]*(?:-{2,}[ \t]*(?:Forwarded|Original)\s+message[ \t]*-{2,}|Begin forwarded message:"
    r"|(?=From:[^\n]+\n[ \t]*(?:Sent|Date|To|Cc|Subject):))",
    re.M | re.I,
)
_FROM_LINE = re.compile(r"^[ \t]*From:[ \t]*(?P<who>[^<\n]+?)[ \t]*(?:<[^>\n]*>)?[ \t]*$", re.M)
# Code is no one's claim: a fenced block ("```" anywhere, "~~~" opening a line) to its closing fence or, left
# open, the text's end; and an inline `code span` (kept as a word of its sentence unless it speaks in the
# first person, as a quotation is)
_CODE_FENCED = re.compile(r"(?P<f>`{3,}|^[ \t]*~{3,}).*?(?:(?P=f)|\Z)", re.M | re.S)
_CODE_SPAN = re.compile(r"(?<!`)`(?P<c>[^`\n]+)`(?!`)")
# (not from inside a word: a name tried from each letter of one long capitalised word was quadratic)
_COLON_SPEECH = re.compile(
    r"(?<![\w'\u2019-])" + _REPORTER + r"\s+"
    r"(?:said|says|wrote|writes|replied|texted(?:\s+me)?|messaged(?:\s+me)?|told\s+me|tells\s+me|posted)"
    r"[ \t]*:[ \t]*(?P<said>[^\n\"\u201c]+)"
)
# A line opened by who says it, in a text that is no transcript (see .transcript): "Bob: I moved to Denver.
# I work at Google now." is Bob's words, or the writer's to Bob; which, no rule tells, so it is read as
# nobody's we can name, never the writer's ("My mom: ..." names the voice). A label (_LABEL) or a date
# heading a line opens none.
_NO_SPEAKER_WORDS = {
    "from", "to", "cc", "bcc", "re", "fw", "fwd", "subject", "sent", "date", "in", "on", "at", "with", "for",
    "about", "by", "via", "per", "dear", "attn", "the", "a", "an", "this", "that", "here", "there",
}  # fmt: skip
_SPEAKER_LINE = re.compile(
    r"^[ \t]*(?P<who>[Mm]y[ \t]+[a-z]+|[A-Z][\w'\u2019.-]*(?:[ \t]+[A-Z][\w'\u2019.-]*){0,3})[ \t]*:[ \t]+\S",
    re.M,
)
# A letter pasted in: a greeting that names someone or a group ("Hi Alice,", "Dear Bob,", "Hey Alice -",
# "Hi team,") and, below it, a sign-off naming its writer ("Best,\nCarol", "Thanks, Carol", "Cheers,\n- Carol",
# "... - Bob")
_GREETING = re.compile(
    r"(?:^|(?<=[.!?])[ \t]+)[ \t]*(?i:hi|hello|hey|hiya|dear|greetings|good\s+(?:morning|afternoon|evening))"
    r"[ \t]+(?:(?P<to>[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)?)|(?i:all|everyone|everybody|team|folks|guys|there))"
    r"[ \t]*(?:[,!:]|[-\u2013\u2014](?=\s))",
    re.M,
)
_SIGN_OFF = re.compile(
    r"(?:^|(?<=[.!?])[ \t]+)[ \t]*"
    r"(?:(?i:best(?:\s+regards|\s+wishes)?|(?:kind\s+|warm\s+|warmest\s+|many\s+)?regards|thanks(?:\s+again)?"
    r"|thank\s+you|many\s+thanks|cheers|sincerely|yours(?:\s+truly|\s+sincerely)?|love|xoxo|warmly|take\s+care"
    r"|talk\s+soon|all\s+the\s+best|hugs)[ \t]*[,!.]?(?:[ \t]*\n){0,2}[ \t]*(?:[-\u2013\u2014~][ \t]*)?"
    r"|[-\u2013\u2014~][ \t]*)"
    r"(?P<who>[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)?)[ \t]*[.!]?[ \t]*$",
    re.M,
)
# A lead-in naming where the words below it come from, ending in a colon or a line break: "from Carol:",
# "Bob's email:", "Here's what Bob sent me:", "Forwarding this from Carol:", "Got this from my landlord:"
_LEAD_IN = re.compile(
    r"(?:^|(?<=[.!?])[ \t]+)[ \t]*(?P<lead>[^\n.!?:;\"\u201c]{3,80})[ \t]*(?::|(?=\n))", re.M
)
_MESSAGE_NOUN = r"(?i:e-?mails?|mails?|messages?|texts?|note|letters?|replies|reply|responses?|dms?|voicemails?|posts?|tweets?|memo)"
_LEAD_FORMS = re.compile(
    r"(?:.{0,40}?\b(?:(?i:this|these|the\s+following)|" + _MESSAGE_NOUN + r")(?:\s+[a-z]+){0,2}\s+)?(?i:from)\s+"
    + _REPORTER.replace("(?P<who>", "(?P<a>")
    + r"|(?:.{0,40}?\s)?" + _REPORTER.replace("(?P<who>", "(?P<b>") + r"['\u2019]s\s+(?:(?:latest|last|new)\s+)?"
    + _MESSAGE_NOUN
    + r"|.{0,40}?\b(?i:what)\s+" + _REPORTER.replace("(?P<who>", "(?P<c>")
    + r"\s+(?:just\s+)?(?:sent|wrote|said|texted|emailed|messaged|replied|posted|forwarded)(?:\s+(?:me|us))?"
    + r"|(?:.{0,40}?\s)?" + _REPORTER.replace("(?P<who>", "(?P<d>")
    + r"\s+(?:just\s+)?(?:sent|emailed|texted|forwarded|messaged)\s+(?:me|us)(?:\s+(?:this|the\s+following))?"
)
# a lead-in ending in a line break, not a colon, shows what follows ("Here's what Bob sent me")
_LEAD_SHOWS = re.compile(r"\b(?i:here|this|these|following|below)\b|\b" + _MESSAGE_NOUN + r"\b")
_PERSONAL = FIRST_SG | {"me", "my", "mine", "myself"}
# A heading that is a time is short ("In the first week of March 2022:"): none longer is read as one
_HEADING_TIME_CHARS = 40
# What a heading says was done in the time after it ("Things I did yesterday:", "What we did last weekend:"):
# its items are of that time as a bare time's are (not "Things to do on Monday:", nor "Notes from Tuesday:",
# whose items may have been learned then and happened before)
_DONE_IN = re.compile(r"(?:(?:some\s+)?things|stuff|what)\s+(?:I|we)\s+did\s+", re.I)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*\u2022\u2023\u25e6]|\d{1,2}[.)])[ \t]+")
_PART_OF = re.compile(
    r"(?:none|few|a\s+few|half|most|some|many|all|each|one|two|three|several|both|neither|either|lots|a\s+lot"
    r"|the\s+rest|\d+%?)\s+of\b"
    r"|half\s",  # "Half my family lives in Ohio": "of" left out
    re.I,
)
_OURS = {"us", "our", "ours", "ourselves"}
# How a clause about someone or something the Record does not name is shown ("They give me peace")
_UNNAMED = {"They", "He", "She"}
_CLAUSE_END = re.compile(
    r"[;()\u2013\u2014]|\s-+\s|,?\s+(?:and|but|so|though|although|whereas|while|plus)\s+"
)
_SUBJECT_OPENERS = FIRST_SG | FIRST_PL | SECOND | THIRD_SG | {
    "my", "our", "me", "the", "a", "an", "this", "his", "her", "their", "they", "they're", "they've", "it",
    "it's", "that", "that's", "these", "those",
}  # fmt: skip
_TAG_QUESTION = re.compile(
    r",\s*(?:right|huh|eh|yeah|you\s+know|don['\u2019]t\s+you\s+think|isn['\u2019]t\s+it|aren['\u2019]t\s+they"
    r"|don['\u2019]t\s+you|didn['\u2019]t\s+you|wasn['\u2019]t\s+it|isn['\u2019]t\s+that\s+so)\s*[?!.]*\s*$",
    re.I,
)
_GROUP_NOUNS = {"kids", "children", "friends", "parents", "family", "siblings", "sisters", "brothers",
                "grandparents", "colleagues", "coworkers", "co-workers", "mentors", "folks", "fam",
                "cousins", "students", "classmates", "teammates", "neighbors", "neighbours", "roommates",
                "daughters", "sons", "pets", "dogs", "cats", "in-laws"}  # fmt: skip
_PLACE_PREP = {"in", "at", "to", "from", "near", "into", "around", "across", "through", "visit", "visited",
               "visiting", "of", "for", "by", "on", "via", "toward", "towards"}  # fmt: skip
# Of those, the ones a person follows as often as a place ("talked to Carol", "visited Carol", "a gift for
# Carol"): a name after one may be the "she" of a later sentence, so it leaves that "she" unresolved
_PERSON_OR_PLACE_PREP = {"to", "visit", "visited", "visiting", "of", "for", "by", "from"}
# ... but "to" after a verb of going is where one goes ("moved to Toronto", "flew back to Lima")
_GOING = re.compile(
    r"(?:mov|go|went|gone|going|goes|fl[eoy]\w*|dr[io]v\w*|travel\w*|relocat\w*|head\w*|return\w*|came|come"
    r"|coming|back|trip|way|ran|run|walk\w*|sail\w*|rode|ride\w*)(?:e[ds]?|ing)?",
    re.I,
)




_LIST_JOINS = {",", "and", "&", "or"}


def _opens_name_list(words: list[tuple[str, int, int]]) -> bool:
    """Whether the words open on a name listed with another name or "I" ("Lisa and Tom", "Lisa, Tom and
    Mark", "Lisa and I")."""
    if len(words) < 3 or words[1][0].lower() not in _LIST_JOINS:
        return False
    nxt = words[2][0]
    return nxt == "I" or (is_name_token(nxt.removesuffix("'s")) and nxt.lower() not in ADVERBS)


# Verbs that report what someone said or thinks in a clause after them ("Bob told me (that) he quit")
_SAYING = frozenset({
    "said", "says", "told", "tells", "mentioned", "mentions", "thinks", "thought", "believes", "wrote",
    "writes", "explained",
})  # fmt: skip
# the subject of a clause reported of someone that is that someone ("Bob told me he quit")
_REPORTED_THIRD = frozenset({"he", "she", "he's", "she's", "they"})


def _reported_clause(words: list[tuple[str, int, int]], i: int) -> int | None:
    """Where the clause reported by a verb of saying at ``i`` opens ("told me that he ...": at "he"); None
    when ``words[i]`` is none or nothing follows it."""
    if i >= len(words) or words[i][0].lower() not in _SAYING:
        return None
    j = i + 1
    if j < len(words) and words[j][0].lower() in ("me", "us", "them", "him", "her"):
        j += 1
    if j < len(words) and words[j][0].lower() == "that":
        j += 1
    return j if j < len(words) else None


def _gender_of(person: str) -> str | None:
    """"m" or "f" when the words name a relation that says it ("Alice's dad"), else None."""
    last = person.split()[-1].lower().removesuffix("'s") if person.split() else ""
    return "m" if last in MALE_NOUNS else "f" if last in FEMALE_NOUNS else None


def _gender_of_pronoun(pronoun: str | None) -> str | None:
    if pronoun is None:
        return None
    low = pronoun.lower()
    return "m" if low.startswith("he") else "f" if low.startswith("she") else None


def _any_between(indexes: list[int], i: int, j: int) -> bool:
    """Whether one of the sorted ``indexes`` lies in [i, j)."""
    at = bisect_left(indexes, i)
    return at < len(indexes) and indexes[at] < j


def _within(quotes: list[_Quote], starts: list[int], at: int) -> bool:
    """Whether ``at`` lies inside one of ``quotes`` (apart, in text order; ``starts`` their starts)."""
    i = bisect_right(starts, at) - 1
    return i >= 0 and at < quotes[i].end


def _sender_name(header: str) -> str | None:
    """The name in "On Mon, May 1, 2023 at 10:00 AM Bob Lee <bob@x.com>" or "Carol <carol@x.com>"."""
    words = re.sub(r"<[^>]*>|\S+@\S+|\"", " ", header).split()
    name: list[str] = []
    for word in reversed(words[-3:]):
        if not is_name_token(word) or word.upper() in ("AM", "PM") or word.lower() in _NOT_SENDER:
            break
        name.insert(0, word)
    return " ".join(name) or None


_NOT_SENDER = {"on", "wrote", "mon", "tue", "wed", "thu", "fri", "sat", "sun"}


def _same_person(a: str, b: str) -> bool:
    """Whether two names are one person's by their first names ("Mel" signs for "Melanie")."""
    x, y = a.split()[0].casefold(), b.split()[0].casefold()
    if not (x.isalpha() and y.isalpha()):
        return a.casefold() == b.casefold()  # "Alice's landlord" is not Alice
    return x == y or (min(len(x), len(y)) >= 3 and (x.startswith(y) or y.startswith(x)))


@dataclass(frozen=True)
class _Quote:
    start: int  # the quotation marks included
    end: int
    inner: tuple[int, int]
    voice: str | None  # who said it, when the text says ("Emma said: '...'"); None: nobody we know
    to: str | None = None  # whom a pasted letter greets: its "you"


_ASIDE_CLOSERS = {"(": ")", "-": "-", "--": "--", "\u2013": "\u2013", "\u2014": "\u2014", ";": ";"}
# Whose person an aside after a name may say the name is ("Kate, my roommate, ...")
_RELATION_OWNERS = {"my", "our", "his", "her", "their"}


# An aside that is a clause of its own: "My sister - she's a nurse - works nights"
_ASIDE_SUBJECTS = FIRST_SG | FIRST_PL | THIRD_SG | {"it", "it's", "they", "they're"}


def _known_from(words: list[tuple[str, int, int]], i: int) -> int | None:
    """After a name, the index of the singular finite verb after a "from <one to three words>" that opens
    at ``i`` ("Kevin from accounting is", "Tom from next door has"), or None."""
    if i >= len(words) or words[i][0].lower() != "from":
        return None
    k = i + 1
    while k < len(words) and k <= i + 3 and words[k][0].isalpha() and words[k][0].lower() not in _FINITE:
        k += 1
    if k == i + 1 or k >= len(words):
        return None
    verb = words[k][0].lower()
    plural = verb in ("are", "were", "have", "do", "don't", "aren't", "weren't", "haven't")  # "Letters from home are"
    return k if verb in _FINITE and not plural else None


def _relation_closed(words: list[tuple[str, int, int]], i: int) -> int | None:
    """After a name, the index of the comma that closes an aside opening at ``i`` with a comma and saying
    whose person the name is (", my roommate,", ", her husband,") or who it is not (", not Carol,": the
    name stands in place of another), or None."""
    if i + 3 < len(words) and words[i][0] == "," and words[i + 1][0].lower() == "not":
        k = i + 2
        while k < len(words) and k < i + 5 and words[k][0].isalpha() and words[k][0].lower() not in _FINITE:
            k += 1
        return k if k > i + 2 and k < len(words) and words[k][0] == "," else None
    if i + 3 >= len(words) or words[i][0] != "," or words[i + 1][0].lower() not in _RELATION_OWNERS:
        return None
    k = i + 2
    while k < len(words) and k < i + 6 and words[k][0].isalpha() and words[k][0].lower() not in _FINITE:
        k += 1
    if k >= len(words) or words[k][0] != ",":
        return None
    if k + 1 < len(words) and words[k + 1][0].lower() in ("and", "or", "&"):
        return None  # "Bob, my sister, and my aunt": a list of people, no aside
    if not any(w.lower().removesuffix("'s") in PERSON_NOUNS for w, _, _ in words[i + 2 : k]):
        return None
    return k


# Tokens an opening aside or list of names is read from at most (see _Run.first_words): a list of eight
# names, an aside of six words, and a run of adverbs before the verb fit many times over.
_OPENING_TOKENS = 64


def _relation_aside(words: list[tuple[str, int, int]], i: int) -> int | None:
    """After a name, the index of the verb after an aside that says whose person the name is ("Kate, my
    roommate, just got a cat", "Tom, her husband, works at Acme"), or None. Only a verb after it makes
    one: "Kate, my dear, you look great" speaks to Kate."""
    k = _relation_closed(words, i)
    return None if k is None else _verb_follows(words, k + 1)


def _names_listed(words: list[tuple[str, int, int]]) -> bool:
    """Whether the words open on a list of names and the speaker ("Kate, Bob and I went hiking", "Kate,
    Bob, and I are moving"): the list is the verb's subject, the first name is not spoken to."""
    k = 0
    while k + 1 < len(words) and k < 8 and is_name_token(words[k][0]) and words[k + 1][0] == ",":
        k += 2
    if k == 0 or k >= len(words):
        return False
    if is_name_token(words[k][0]) and k + 1 < len(words) and words[k + 1][0].lower() == "and":
        k += 2  # "Kate, Bob and ..."
    elif words[k][0].lower() == "and":
        k += 1  # "Kate, Bob, and ..."
    else:
        return False
    # "Kate, Bob and Tom went hiking": three names before their verb are a list, no one spoken to
    if k >= len(words) or not (words[k][0].lower() in ("i", "me") or is_name_token(words[k][0])):
        return False
    k += 1
    while k < len(words) and words[k][0].lower() in ADVERBS:
        k += 1
    if k < len(words) and words[k][0].lower() in _VERB_BASE_SET and words[k][0].lower() not in _FINITE:
        return k + 1 >= len(words) or words[k + 1][0].lower() not in SECOND  # "... and Tom live in Denver"
    return _verb_follows(words, k) is not None


def _verb_follows(words: list[tuple[str, int, int]], k: int) -> int | None:
    """The index of the finite verb at ``k`` (adverbs before it passed over) that a subject set off by
    commas goes with, or None ("..., can you ...": a question to someone spoken to)."""
    while k < len(words) and words[k][0].lower() in ADVERBS:
        k += 1
    if k >= len(words) or words[k][0].lower() not in _FINITE:
        return None
    return k if k + 1 >= len(words) or words[k + 1][0].lower() not in SECOND else None


def _past_aside(words: list[tuple[str, int, int]], i: int) -> int:
    """The index after an aside that opens at ``i`` ("(my neighbor)", "- who is a jerk -"), or ``i``."""
    closer = _ASIDE_CLOSERS.get(words[i][0]) if i < len(words) else None
    if closer is None and i + 1 < len(words) and words[i][0] == "," and words[i + 1][0] in ("who", "whose", "which"):
        closer = ","  # "Bob, who is 50, works at Acme"
    if closer is None and _relation_aside(words, i) is not None:
        closer = ","  # "Kate, my roommate, just got a cat"
    if closer is None:
        return i
    for k in range(i + 1, min(len(words), i + 16)):
        if words[k][0] == closer:
            return k + 1
    return i


class _Preceding:
    """The lower-cased words of a clause from its start up to the split being weighed, and what the
    rules ask of them. Each word is read once however many splits are passed over: reading them all
    again at each split was quadratic in a long sentence."""

    def __init__(self, run: _Run, start: int) -> None:
        self.run = run
        self.start, self.read = run._token_range(start, start)
        self.words: list[str] = []
        self.finite = False  # a finite verb among them
        self.contracted = False  # a person's pronoun with its verb contracted onto it ("I'm")
        self.verb_after_first = False  # a verb form after the first word
        self.third_after_first = False  # a third-person word or -s verb after the first word

    def read_to(self, end: int) -> None:
        upto = max(self.read, bisect_right(self.run.token_ends, end, lo=self.start))
        for token, _, _ in self.run.tokens[self.read : upto]:
            word = token.lower()
            self.finite = self.finite or word in _FINITE
            self.contracted = self.contracted or word in _SUBJECT_CONTRACTIONS
            if self.words:
                self.verb_after_first = self.verb_after_first or word in _VERB_FORMS
                self.third_after_first = (
                    self.third_after_first or word in _THIRD_S_ONLY or word in _THIRD_PERSON_WORDS
                )
            self.words.append(word)
        self.read = upto


def _any_pattern() -> re.Pattern[str] | None:
    """One regex that matches a predicate's head wherever one of _PATTERNS does (their alternatives
    after the shared _PRE, groups unnamed): most heads match none, and trying the patterns one by one
    cost 0.06 ms a Record. None when a pattern is not as _p makes it (then each is tried)."""
    flags = re.compile("", re.I).flags
    rest = []
    for pat in _PATTERNS:
        rx = pat.regex.pattern
        if pat.regex.flags != flags or not rx.startswith(_PRE) or "(?P=" in rx or "(?(" in rx:
            return None
        rest.append(re.sub(r"\(\?P<\w+>", "(?:", rx[len(_PRE) :]))
    return re.compile(_PRE + "(?:" + "|".join(f"(?:{r})" for r in rest) + ")", re.I)


_ANY_PATTERN = _any_pattern()


class _Run:
    """One extraction: the state shared by the sentences of one SourceText."""

    def __init__(self, source: SourceText, self_name: str | None, *, relayed: bool = False) -> None:
        self.src = source
        self.text = source.text or ""
        self.self_name = self_name
        self.assistant = source.role in _ASSISTANT_ROLES
        self.speaker = None if self.assistant else (source.speaker or None)
        # a turn of a transcript someone else sent ("Alice: I moved to Denver" in Bob's message) is the
        # speaker's words as the sender tells them: what it says of the Brain's self is not the self's own
        self.relayed = relayed
        self.is_self = (
            bool(self.speaker and self_name and self.speaker.casefold() == self_name.casefold()) and not relayed
        )
        self.anon = "the author" if source.kind in ("document", "event", "fact") else "the speaker"
        # a person's turn in a conversation: opinions and dropped subjects are theirs
        self.human = (
            source.kind in ("message", "correction") and self.speaker is not None and not self.assistant
        )
        self.persons: list[str] = []  # people named so far, in order (for "he"/"she")
        self.mentioned: list[str | None] = []  # the genders of people mentioned, not named ("her husband")
        self.others: set[str] = set()  # other capitalised words named so far (places, things, orgs)
        self.maybe_persons: set[str] = set()  # of those, ones that may be people (see _PERSON_OR_PLACE_PREP)
        self.addressee: str | None = None
        self.voice: str | None = None  # inside a quotation: who is speaking
        self.items_from = -1  # where the things a label lists on its line start ("Reading list: Dune")
        # the speaker's people named in this or the previous sentence ("my kids"), for "they"
        self.group: str | None = None
        self._groups_seen: list[str] = []
        # the thing the text is talking about ("Barcelona sounds awesome! ... adding it to my list"), as
        # shown in a statement, whether it is plural, and the sentence that named it (for "it", "them")
        self.topic: tuple[str, bool] | None = None
        self.topic_at = -_TOPIC_REACH - 1
        self.sentence_no = 0
        self.persons_before = 0
        self.sentence_start = 0  # where the sentence being read starts
        self.corrective = False  # the sentence being read corrects something
        self.tagged = False  # the sentence being read ends in a tag question ("..., right?")
        self.event_fronted = False
        self.out: list[Assertion] = []
        self.statements: set[str] = set()
        # the text's tokens, once: clauses and subjects look at them many times
        self.tokens = _words(self.text, 0, len(self.text))
        self.token_starts = [t[1] for t in self.tokens]
        self.token_ends = [t[2] for t in self.tokens]
        self._openers: list[int] | None = None  # indexes of the tokens _opener_within looks for
        self._subject_words: list[int] | None = None  # indexes of the tokens _subject_within looks for
        self._line_starts: list[int] | None = None  # where each line starts, once a list item is looked for
        # a list item's line (its number): the line heading its list (-1: none), and whether no blank line
        # parts the two
        self._lists: dict[int, tuple[int, bool]] = {}
        # a list's heading line: whether it names someone else, and the span of the time it is, if it is one
        self._headings: dict[int, tuple[bool, tuple[int, int] | None]] = {}
        # the time expressions of each text read for them (see times_in), by the text and the way it points
        self._times: dict[tuple[str, bool, bool | None, bool | None], list[TimeExpr]] = {}
        self._item_headings: dict[int, bool] = {}  # whether each heading line heads a list of things

    def times_in(
        self, text: str, *, future: bool = False, weekdays_ahead: bool | None = None, bounds_ahead: bool | None = None
    ) -> list[TimeExpr]:
        """find_time_expressions of ``text`` at the moment of speech, read once for each text: a long text
        reads the same words many times (the 40 characters after each "and" of a long sentence of "and on
        Monday ...", a list's time heading for each of its items), a tenth of a millisecond each."""
        key = (text, future, weekdays_ahead, bounds_ahead)
        if (exprs := self._times.get(key)) is None:
            exprs = self._times[key] = find_time_expressions(
                text, self.src.occurred_at, future=future, weekdays_ahead=weekdays_ahead, bounds_ahead=bounds_ahead
            )
        return list(exprs)

    def words(self, s: int, e: int) -> list[tuple[str, int, int]]:
        """The tokens inside [s, e)."""
        i, j = self._token_range(s, e)
        return self.tokens[i:j]

    def first_words(self, s: int, e: int) -> list[tuple[str, int, int]]:
        """The first _OPENING_TOKENS tokens inside [s, e): as many as an aside or a list of names that
        opens a clause is read from. The tokens of the rest of a long sentence, copied for each of its
        many leading names ("Kate, Bob, Kate, Bob, ..."), made reading it quadratic."""
        i, j = self._token_range(s, e)
        return self.tokens[i : min(j, i + _OPENING_TOKENS)]

    def _opener_within(self, i: int, j: int) -> bool:
        """Whether a verb form or a word that may open a subject is among the tokens [i, j)."""
        if self._openers is None:
            self._openers = [
                k for k, (t, _, _) in enumerate(self.tokens) if t.lower() in _VERB_FORMS or t.lower() in _SUBJECT_OPENERS
            ]
        return _any_between(self._openers, i, j)

    def _subject_within(self, s: int, e: int) -> bool:
        """Whether a word a subject may open on (see _SUBJECT_OPENERS, is_name_token) is inside [s, e)."""
        if self._subject_words is None:
            self._subject_words = [
                k for k, (t, _, _) in enumerate(self.tokens) if t.lower() in _SUBJECT_OPENERS or is_name_token(t)
            ]
        return _any_between(self._subject_words, *self._token_range(s, e))

    def _token_range(self, s: int, e: int) -> tuple[int, int]:
        """Indexes [i, j) of the tokens inside [s, e), found by bisection: a clause's words are read
        many times, and walking the list from each start was quadratic in a long text."""
        i = bisect_left(self.token_starts, s)
        return i, max(i, bisect_right(self.token_ends, e, lo=i))

    # ---- who is "I", "you"
    def me(self) -> str:
        return self.voice or self.speaker or self.anon

    def me_owner(self) -> str | None:
        if self.voice is not None:
            return self._third_owner(self.voice)
        return self._third_owner(self.speaker) if self.relayed and self.speaker else self.speaker

    def you(self) -> str:
        return self.addressee or "the other person"

    def kin(self, word: str) -> str | None:
        """ "Mom", "Grandpa" used as a name: the relation of whoever speaks ("Alice's mom")."""
        low = word.lower()
        return f"{self.me()}'s {low}" if word[:1].isupper() and low in KIN_NAMES and not self.assistant else None

    # ---- driver
    def run(self, start: int = 0) -> list[Assertion]:
        """Read the text from ``start`` (an event's text after its name)."""
        text = self.text
        if not text[start:].strip() or ("/s" in text and _SARCASM_MARK.search(text)):
            return []
        sentences = [(s + start, e + start) for s, e in _split_sentences(text[start:])]
        said_to_end = len(text)
        mark = _JOKE_MARK.search(text, max(start, len(text.rstrip()) - _JOKE_REACH)) if self.src.kind == "message" else None
        if mark is not None and sentences and not _JOKE_OPENER.match(text, *sentences[-1]):
            # "I moved to Denver last year. I'm 90 years old jk": the mark takes back the sentence it ends,
            # not the message; a sentence that is only the mark ("... I'm kidding.") the one before it, as
            # one opening on it does (see _JOKE_OPENER below)
            before_mark = text[sentences[-1][0] : max(sentences[-1][0], mark.start())]
            alone = all(_LAUGH.fullmatch(word) for word in _WORD_RUN.findall(before_mark))
            said_to_end = sentences.pop()[0]
            if alone and sentences:
                said_to_end = sentences.pop()[0]
        self.addressee = self._message_addressee(sentences)
        quotes = self._quotes()
        first = 0  # the quotes lie apart in text order: those before a sentence end before every later one
        said_before = said = len(self.out)  # where what the sentence before, and this one, said begins
        for s, e in sentences:
            said_before, said = said, len(self.out)
            joke = _JOKE_OPENER.match(text, s, e) if self.src.kind == "message" else None
            if joke is not None:
                # "I'm a nurse. JK I'm a doctor": the sentence before is taken back, what follows stands
                for taken_back in self.out[said_before:]:
                    self.statements.discard(taken_back.statement.casefold())
                del self.out[said_before:]
                said = said_before
                s = joke.end()
                if s >= e:
                    continue
            pos, after_quote = s, False
            while first < len(quotes) and quotes[first].end <= s:
                first += 1
            for q in itertools.islice(quotes, first, None):
                if q.start >= e:
                    break
                if q.start > pos and not after_quote:
                    self._sentence(pos, q.start)
                pos, after_quote = max(pos, q.end), True
            rest = text[pos:e].lstrip(" ,;:")
            # what follows a quotation in its sentence ("... 'I quit' and left") continues the frame
            # "they" may be the speaker's people named in this sentence or the one before
            before, self._groups_seen = self._groups_seen, []
            self._note_groups(s, e)
            groups = set(before) | set(self._groups_seen)
            self.group = next(iter(groups)) if len(groups) == 1 else None
            if pos < e and not (after_quote and not rest[:1].isupper()):
                self._sentence(pos, e)
            self._note_names(s, e)
        for q in quotes:
            if q.voice is None or self.assistant or q.start >= said_to_end:
                continue  # words in quotation marks are not the speaker's own
            self.voice = q.voice
            addressee = self.addressee
            self.addressee = q.to or addressee
            offset = q.inner[0]
            for s, e in _split_sentences(text[offset : q.inner[1]]):
                self._sentence(offset + s, offset + e)
            self.voice, self.addressee = None, addressee
        self.resolve_left()
        self.resolve_meant()
        return self.out

    def resolve_left(self) -> None:
        """ "I left Stripe in April and joined Spotify": leaving X ends whatever X was, and a new employer
        (or home) in the same Record says which; the negated change then closes the old value at the time
        the leaving states, not at the time of the new one. Without such a sibling "left X" is a plain
        statement (a city, an employer, a party: the text does not say), X kept as ``left`` for the
        planner, which knows whether the subject works there."""
        pending = [i for i, a in enumerate(self.out) if a.attribute == _LEFT]
        if not pending:
            return
        for i in pending:
            left = self.out[i]
            # a job is quit, never a home ("I moved to Denver, but I quit Google")
            leavable = ("works_at",) if _QUIT.search(self.text, *left.span) else _LEAVABLE
            # a home is left on the way to the next, so it is told before the move ("left Paris and moved
            # to Berlin"); told after the home gained ("moved to Denver and on Monday I left Google"),
            # what is left is something of the new life (a job, a party), not the home the move ended
            gained = {
                a.attribute
                for a in self.out
                if a.attribute in leavable
                and not a.negated
                and a.subject == left.subject
                and (a.attribute != "lives_in" or a.span[0] > left.span[0])
            }
            # "I never left Google": no leaving, a plain statement
            attr = gained.pop() if len(gained) == 1 and left.negated else None
            self.out[i] = replace(
                left,
                attribute=attr,
                value=left.value if attr else None,
                single_valued=attr is not None,
                negated=attr is not None,
                left=left.value if attr is None and left.negated else None,
            )

    def _voice_of(self, who: str) -> str | None:
        """Who a reporting frame names ("my mom", "Bob", "she"), when it is someone we can name."""
        if who.lower().startswith("my "):
            return f"{self.me()}'s {who.split()[1]}" if who.split()[1].lower() in PERSON_NOUNS else None
        if who.lower() in ("he", "she"):
            return self._resolve_third(who.lower()) if len(set(self.persons)) else None
        if self.kin(who):
            return self.kin(who)  # "Mom texted: ...": the speaker's mom
        return who if is_name_token(who.split()[0]) else None

    def _pasted(self) -> list[_Quote]:
        """Other people's words pasted into the text (see _REPLY_HEADER): quoted, never the speaker's, and
        read as theirs only when the text names them."""
        text = self.text
        # Most texts hold none of the characters the patterns below cannot match without (a fence's "```"
        # or "~~~", a backtick, a header's or a lead-in's colon, a quoted line's ">"): each test skips a
        # scan of the whole text that would find nothing.
        fenced = _CODE_FENCED.finditer(text) if "```" in text or "~~~" in text else ()
        out: list[_Quote] = [_Quote(m.start(), m.end(), (m.end(), m.end()), None) for m in fenced]
        for m in _CODE_SPAN.finditer(text) if "`" in text else ():
            if {w.lower() for w, _, _ in self.words(m.start("c"), m.end("c"))} & (_PERSONAL | FIRST_PL):
                out.append(_Quote(m.start(), m.end(), (m.end(), m.end()), None))
        colon = ":" in text
        forwarded = _FORWARDED.search(text) if colon or "--" in text else None
        if forwarded is not None:
            sender = _FROM_LINE.search(text, forwarded.end(), forwarded.end() + 400)
            who = _sender_name(sender.group("who")) if sender is not None else None
            out.append(_Quote(forwarded.start(), len(text), (forwarded.end(), len(text)), who))
            text = text[: forwarded.start()]
        # each quoted block by where it starts (a block a header names is taken from it)
        blocks = {m.start(): m.end() for m in _QUOTED_LINES.finditer(text)} if ">" in text else {}
        for header in _REPLY_HEADER.finditer(text) if colon else ():
            who = _sender_name(header.group(0).rsplit("wrote:", 1)[0])
            below = header.end() + 1
            if below not in blocks:  # a top-posted reply: what follows the header is all quoted
                out.append(_Quote(header.start(), len(text), (header.end(), len(text)), who))
                blocks = {b0: b1 for b0, b1 in blocks.items() if b0 < header.start()}
                break
            end = blocks.pop(below)
            out.append(_Quote(header.start(), end, (below, end), who))
        out += [_Quote(b0, b1, (b0, b1), None) for b0, b1 in blocks.items()]
        out.sort(key=lambda q: q.start)
        starts = [q.start for q in out]
        if colon or "\n" in text:
            out += self._led_in(text, out, starts)
        out.sort(key=lambda q: q.start)
        starts = [q.start for q in out]
        letter = self._letter(text, out, starts)
        if letter is not None:
            out.append(letter)
            out.sort(key=lambda q: q.start)
            starts = [q.start for q in out]
        for m in _COLON_SPEECH.finditer(text) if colon else ():
            if m.group("who") == "I":
                continue  # "I said: I live in Rome": the speaker's own words
            if not _within(out, starts, m.start()):
                said = (m.start("said"), m.end("said"))
                out.append(_Quote(m.start("said"), m.end("said"), said, self._voice_of(m.group("who"))))
        out.sort(key=lambda q: q.start)
        starts = [q.start for q in out]
        lines = []
        for m in _SPEAKER_LINE.finditer(text) if colon else ():
            who = m.group("who")
            end = text.find("\n", m.end())
            end = len(text) if end < 0 else end
            if _within(out, starts, m.start()) or not self._speaks(who, m.start("who"), end):
                continue
            voice = self._voice_of(who) if who.lower().startswith("my ") else None
            lines.append(_Quote(m.start(), end, (m.end() - 1, end), voice))
        return out + lines

    def _speaks(self, who: str, at: int, end: int) -> bool:
        """Whether ``who``, at ``at``, opening a line (to ``end``) with a colon names someone other than the
        speaker who says it (see _SPEAKER_LINE): not a label or a date, as a sentence opens on them
        (_label: "Update:", "Yesterday:"), nor the speaker ("Me:")."""
        words = who.split()
        if who.casefold() in ("me", "i") or self._label(at, end) is not None:
            return False
        if words[0].lower() in _NO_SPEAKER_WORDS:
            return False  # "From: my window, I see Lyon", "Subject: I'm moving!": a mail's field or a phrase
        if words[0].lower() == "my":
            return words[1].lower() in PERSON_NOUNS
        if not all(is_name_token(w) for w in words):
            return False
        return not any(_same_person(who, own) for own in (self.speaker, self.self_name) if own)

    def _led_in(self, text: str, out: list[_Quote], starts: list[int]) -> list[_Quote]:
        """What follows a lead-in naming its source ("Got this from my landlord:", "Bob's email:"), in that
        source's voice: to the end of the line when it follows the colon there, else to the next pasted
        block or the text's end. A source that is the speaker or no one we can name leaves the words be."""
        found: list[_Quote] = []
        for m in _LEAD_IN.finditer(text):
            if _within(out, starts, m.start()) or (found and m.start() < found[-1].end):
                continue
            form = _LEAD_FORMS.fullmatch(m.group("lead").strip())
            colon = text[m.end() - 1] == ":"
            if form is None or not (colon or _LEAD_SHOWS.search(m.group("lead"))):
                continue
            who = next(w for w in form.groups() if w is not None)
            voice = self._voice_of(who) if who != "I" else None
            if voice is None or (self.speaker and _same_person(voice, self.speaker)):
                continue
            limit = next((q.start for q in out if q.start > m.start()), len(text))
            at = m.end() + len(text[m.end() :]) - len(text[m.end() :].lstrip(" \t"))
            if at >= limit or not text[at:limit].strip():
                continue
            if text[at] != "\n":  # "from Carol: I'm leaving Acme", 'from my landlord: "I'm selling ..."'
                quoted = _QUOTE.match(text, at)
                if quoted is not None:
                    group = "d" if quoted.group("d") is not None else "s"
                    found.append(_Quote(m.start(), quoted.end(), (quoted.start(group), quoted.end(group)), voice))
                    continue
                end = text.find("\n", at, limit)
                limit = limit if end < 0 else end
            found.append(_Quote(m.start(), limit, (at, limit), voice))
        return found

    def _letter(self, text: str, out: list[_Quote], starts: list[int]) -> _Quote | None:
        """A letter pasted in: from a greeting naming someone to a sign-off naming another, the signer's
        words ("Hi Alice, I'm moving ... Best, Carol"), greeting them. A letter greeting the speaker and
        signed by no one is someone's we cannot name; one signed by the speaker, or greeting another and
        unsigned, is the speaker's own."""
        for g in _GREETING.finditer(text):
            if _within(out, starts, g.start()):
                continue
            to = g.group("to")
            if to is not None and not is_name_token(to.split()[0]):
                continue
            limit = next((q.start for q in out if q.start > g.start()), len(text))
            signs = [
                m
                for m in _SIGN_OFF.finditer(text, g.end(), limit)
                if is_name_token(m.group("who").split()[0]) and not (to and _same_person(m.group("who"), to))
            ]
            signer = signs[-1].group("who") if signs else None
            if signer is not None and self.speaker and _same_person(signer, self.speaker):
                return None  # the speaker's own letter
            if signer is None:
                if not (to and self.speaker and _same_person(to, self.speaker)):
                    return None
                return _Quote(g.start(), limit, (g.end(), limit), None, to)
            end = text.find("\n\n", signs[-1].end(), limit)  # the signature's block
            return _Quote(g.start(), limit if end < 0 else end, (g.end(), signs[-1].start()), signer, to)
        return None

    def _quotes(self) -> list[_Quote]:
        pasted = sorted(self._pasted(), key=lambda q: q.start) if not self.assistant else []
        pasted_starts = [q.start for q in pasted]
        out: list[_Quote] = list(pasted)
        for m in _QUOTE.finditer(self.text):
            if _within(pasted, pasted_starts, m.start()):
                continue
            group = "d" if m.group("d") is not None else "s"
            frame = _REPORTING.search(self.text, max(0, m.start() - 60), m.start())
            voice = self._voice_of(frame.group("who")) if frame is not None else None
            if frame is None and (after := _REPORTED_AFTER.match(self.text, m.end())) is not None:
                voice = self._voice_of(after.group("who") or after.group("after"))
            inner = (m.start(group), m.end(group))
            if voice is None and not ({w.lower() for w, _, _ in self.words(*inner)} & (_PERSONAL | FIRST_PL)):
                continue  # a title or a name ("watched "The Lord of the Rings""): part of the sentence
            if voice is None and self._titled(m.start(), inner):
                continue  # ('read "I Am Legend"': a title, its "I" no one's, though it is a word of the speaker's)
            out.append(_Quote(m.start(), m.end(), inner, voice))
        apart: list[_Quote] = []  # in text order, none inside another (run() reads them so)
        for q in sorted(out, key=lambda q: q.start):
            if not apart or q.start >= apart[-1].end:
                apart.append(q)
        return apart

    def _titled(self, at: int, inner: tuple[int, int]) -> bool:
        """Whether the quoted words are a title ("I Am Legend", "Eat Pray Love"): each word capitalised but
        the small ones, and after no verb that quotes them ('I said "I Quit"' is speech)."""
        words = [w for w, _, _ in self.words(*inner) if w[:1].isalpha()]
        if not words or not words[0][:1].isupper():
            return False
        if any(not w[:1].isupper() and w.lower() not in _TITLE_SMALL_WORDS for w in words):
            return False
        before = [w.lower() for w, _, _ in self.words(max(0, at - 40), at)]
        if before and before[-1] in _OBJECT_PRONOUNS:
            before.pop()  # 'told me "I Quit"'
        if before and before[-1] in _SAYING | _SPEECH_VERBS:
            return False
        return _QUOTATIVE.search(self.text, max(0, at - 40), at) is None

    def _note_names(self, s: int, e: int) -> None:
        """Remember who was named, for a later "he"/"she": a capitalised word after a place preposition
        ("in Toronto", "at Acme") is a place or an organisation, not a person."""
        words = self.words(s, e)
        for i, (w, _, _) in enumerate(words[:-1]):
            # "her husband", "your wife": someone a later "he"/"she" may be, though the text names them not
            if w.lower() in ("his", "her", "your", "their") and words[i + 1][0].lower() in PERSON_NOUNS:
                self.mentioned.append(_gender_of(words[i + 1][0]))
        # "Tom's wife", "Jen's husband": the relation is the one a later "he"/"she" can be (gendered by the
        # noun), never the possessor; "Tom's wife, Lisa" (an apposition): the name is
        owners, appositions = set(), set()
        for i, (w, _, _) in enumerate(words[:-1]):
            base, noun = w.removesuffix("'s"), words[i + 1][0]
            if base == w or not is_name_token(base) or noun.lower() not in PERSON_NOUNS:
                continue
            owners.add(i)
            base = self.kin(base) or base  # "Mom's sister": "Alice's mom's sister"
            k = i + 3 if i + 3 < len(words) and words[i + 2][0] == "," else i + 2
            after = words[k + 1][0] if k + 1 < len(words) else "."
            if k < len(words) and is_name_token(words[k][0]) and after.lower() != "and" and not after[:1].isupper():
                if k == i + 3:
                    appositions.add(k)
            elif not (noun.endswith("s") and not noun.endswith("ss")) and f"{base}'s {noun}" not in self.persons:
                self.persons.append(f"{base}'s {noun}")
        # A name listed after another is of that one's kind: "went to Lisbon and Porto" names no person,
        # "Lisa, Tom and Mark came over" three. (index of the listed name's last word, its kind)
        listed: tuple[int, str] | None = None
        for i, (w, _, _) in enumerate(words):
            base = w.removesuffix("'s")
            if i in owners:
                continue
            if i in appositions and base not in self.persons:
                self.persons.append(base)
                continue
            if not w[:1].isupper():
                continue  # neither kin ("Mom") nor a name: the tests below ask for a capital first
            if (kin := self.kin(w)) is not None:
                if kin not in self.persons and kin != self.addressee:
                    self.persons.append(kin)  # "I called Mom. She ...": the speaker's mom
                continue
            listable = is_name_token(base) and base.lower() not in ADVERBS | MODALS | _TITLES
            if i == 0 and w != "I" and listable and _opens_name_list(words):
                # "Lisa and Tom came over": the clause's subject is no one name, so no one noted Lisa
                if base not in (self.speaker, self.self_name, self.addressee) and base not in self.persons:
                    self.persons.append(base)
                listed = (0, "person")
                continue
            if i == 0 or w == "I" or not is_name_token(base) or base.lower() in ADVERBS | MODALS | _TITLES:
                continue
            if base in (self.speaker, self.self_name, self.addressee):
                continue
            before = words[i - 1][0]
            if (
                is_name_token(before)
                and before.lower() not in _TITLES
                and (i > 1 or any(p.split()[0] == before for p in self.persons))
            ):
                if listed is not None and listed[0] == i - 1:
                    listed = (i, listed[1])
                continue  # "Maria Lopez": the rest of a name whose first word is noted, no second person
            prev = words[i - 1][0].lower()
            if listed is not None and listed[0] == i - 2 and prev in _LIST_JOINS:
                kind = listed[1]
                listed = (i, kind)
                if kind == "person":
                    if base not in self.persons:
                        self.persons.append(base)
                else:
                    self.others.add(base)
                    if kind == "maybe":
                        self.maybe_persons.add(base)
                continue
            if (
                prev in _PLACE_PREP
                or prev == ","
                or (i > 1 and is_name_token(words[i - 1][0]) and words[i - 2][0].lower() in _PLACE_PREP)
            ):
                self.others.add(base)
                going = prev == "to" and i > 1 and _GOING.fullmatch(words[i - 2][0]) is not None
                maybe = prev in _PERSON_OR_PLACE_PREP and not going
                if maybe:
                    self.maybe_persons.add(base)
                listed = (i, "maybe" if maybe else "other")
            else:
                k = i + 1
                while base == w and k < len(words) and is_name_token(words[k][0]) and words[k][0] != "I":
                    k += 1  # "I met Maria Lopez": the person is the whole name
                if k > i + 1:
                    base = " ".join(t for t, _, _ in words[i:k]).removesuffix("'s")
                if base not in self.persons:
                    self.persons.append(base)
                listed = (i, "person")

    def _note_groups(self, s: int, e: int) -> None:
        """The speaker's people named in [s, e) ("my kids", "my friends, family and mentors")."""
        if self.voice is not None:
            return
        words = self.words(s, e)
        # both readings below start at a "my" before the sentence's last word; most sentences hold none
        mine = [i for i, (w, _, _) in enumerate(words[:-1]) if w.lower() == "my"]
        for i in mine:
            k = i + 1
            while (
                k < len(words)
                and k < i + 8
                and (words[k][0].isalpha() or words[k][0] == ",")
                and words[k][0].lower() not in _VERB_FORMS
                and words[k][0].lower() not in (_NP_NEVER - {"and"}) | {"the", "a", "an", "my", "our"}
            ):
                k += 1
            phrase = [t for t, _, _ in words[i + 1 : k]]
            if phrase and phrase[-1].lower() in _GROUP_NOUNS and phrase[-1] != ",":
                self._groups_seen.append(f"{self.me()}'s {' '.join(phrase).replace(' ,', ',')}")
        for i in mine:
            # "my grandma ... She gave it to me": a relative the speaker named is someone "she" can be
            noun = words[i + 1][0].lower()
            # "my friend Sam": the name is the person, and _note_names has it already
            named = i + 2 < len(words) and is_name_token(words[i + 2][0].removesuffix("'s"))
            if noun in PERSON_NOUNS and not (noun.endswith("s") and not noun.endswith("ss")) and self.voice is None and not named:
                who = f"{self.me()}'s {noun}"
                if who not in self.persons:
                    self.persons.append(who)

    def _resolve_third(self, pronoun: str | None = None) -> str | None:
        """The one person "he"/"she" can be: of the people named so far and those only mentioned ("her
        husband", "your wife"), the one whose gender, when known, does not contradict the pronoun.
        None when no one or several are."""
        people = set(self.persons)
        wanted = _gender_of_pronoun(pronoun)
        if wanted is not None:
            unnamed = sum(1 for g in self.mentioned if g in (None, wanted))
            unnamed += sum(1 for p in self.maybe_persons - people if _gender_of(p) in (None, wanted))
            people = {p for p in people if _gender_of(p) in (None, wanted)}
        else:
            unnamed = 0
        if len(people) != 1 or unnamed:
            return None
        return next(iter(people))

    def _sole_named_before(self, pronoun: str, who: str, cs: int) -> bool:
        """Whether ``who`` is still the one person ``pronoun`` can be once the people named earlier in
        its sentence are counted ("Dana is covering for Bob while he's out": Bob, named after the subject,
        is whom "he" may be too). Those are noted only when the sentence ends, so they may only make a
        pronoun ambiguous here, never resolve one."""
        kept = (list(self.persons), list(self.mentioned), set(self.others), set(self.maybe_persons))
        self._note_names(self.sentence_start, cs)
        sole = self._resolve_third(pronoun) == who
        self.persons, self.mentioned, self.others, self.maybe_persons = kept
        return sole

    def _spoken_to(self, word: str) -> str | None:
        """``word`` as the name of the one spoken to: a name, or the Brain's self's first name typed in
        lower case ("thanks, jon!"), as the self's name writes it. Another lower-case word is no name
        ("thanks, man!")."""
        if self.kin(word):
            return self.kin(word)  # "Mom, you look great": the speaker's mom
        if is_name_token(word):
            return word
        first = self.self_name.split()[0] if self.self_name else None
        return first if first is not None and word.casefold() == first.casefold() else None

    def _message_addressee(self, sentences: list[tuple[int, int]]) -> str | None:
        if self.src.kind != "message" or self.assistant:
            return None
        found: set[str] = set()
        for s, e in sentences:
            sent = self.text[s:e]
            m = _OPENING_VOCATIVE.match(sent)
            name = self._spoken_to(m.group(1)) if m else None
            if m and name and _relation_aside(self.words(s + m.start(1), e), 1) is not None:
                name = None  # "Kate, my roommate, just got a cat": the name is the verb's subject
            if m and name and m.start(1) == _trim(sent, 0, len(sent))[0] and _names_listed(self.words(s + m.start(1), e)):
                name = None  # "Kate, Bob and I went hiking": the first of the people who went
            if m and name:
                # "Bummer, Joanna.": a word before a name that closes the vocative is an interjection,
                # the name is the one spoken to
                after = _VOCATIVE_AFTER.match(sent[m.end() :])
                found.add((self._spoken_to(after.group(1)) if after else None) or name)
            m = _CLOSING_VOCATIVE.search(sent)
            name = self._spoken_to(m.group(1)) if m else None
            if name and (sent.rstrip().endswith(("!", "?")) or re.search(r"\byou", sent, re.I)):
                found.add(name)
        if self.speaker:
            found.discard(self.speaker)
        return next(iter(found)) if len(found) == 1 else None

    def _sentence(self, s: int, e: int) -> None:
        text = self.text
        self.sentence_no += 1
        self.persons_before = len(self.persons)  # a name this sentence opens on is no person yet
        untrimmed = text[s:e].strip()
        s, e = _trim(text, s, e)
        self.sentence_start = s
        if e <= s:
            return
        raw = text[s:e]
        tag = _TAG_QUESTION.search(raw)
        self.tagged = tag is not None
        self.event_fronted = False  # after "When I was 25, ...": the sentence's time is an event's
        if tag is not None:
            # "It's wild how small things matter, right?": a statement asking to be agreed with
            e = s + tag.start()
            raw = text[s:e]
        tail = text[e : e + 4]
        if tail.lstrip(".!\u2026\"')").startswith("?") or raw.endswith("?"):
            # "I finished another pottery project - want to see it?": a statement of the speaker's own
            # before a question that follows it stands
            e = self._before_question(s, e)
            if e <= s:
                return
            raw = text[s:e]
        self.corrective = self.src.kind == "correction" or _correcting(raw)
        if self.src.kind == "correction" and _RETRACTION.match(raw) and self.voice is None:
            self._retraction(s, e)
            return
        if self._meant(s, e, untrimmed):
            return
        after = _MEANT_AFTER.search(raw) if self.src.kind == "message" else None
        if after is not None:
            # the clause as if said right, then the value meant (folded into it, see resolve_meant); a
            # clause that said no value has none to correct, and the value said before it is no part of it
            self.sentence_no -= 1
            said = len(self.out)
            self._sentence(s, s + after.start())
            if any(a.attribute is not None for a in self.out[said:]):
                group = "meant" if after.group("meant") else "noun"
                start, end = s + after.start(group), s + after.end(group)
                self._meant_value(start, end, text[start:end], None, s + after.start())
            return
        # leading interjections and a leading vocative ("Hey Mel!", "Caroline, ...")
        while True:
            if self._thanks(s, e) or self._congratulations(s, e) or self._wish(s, e):
                return
            m = _INTERJ.match(text, s, e)
            ns = m.end() if m and m.end() > s else s
            v = _LEADING_VOCATIVE.match(text, ns, e)
            if (
                v
                and is_name_token(v.group(1))
                and _relation_aside(self.first_words(ns, e), 1) is None
                and not (ns == s and _names_listed(self.first_words(ns, e)))
            ):
                ns = v.end()
            mention = _MENTION.match(text, ns, e)
            if mention:
                ns = mention.end()  # "@Bob I moved to Denver": a chat's mention names whom it is for
            if ns == s:
                break
            s = ns
        dated = None
        label = self._label(s, e)
        self.items_from = -1
        if label is not None:
            if self._heads_items(text[s : label[0]]):
                self.items_from = label[0]
            s, dated = label
        # a trailing vocative (", Mel")
        v = _TRAILING_VOCATIVE.search(text[s:e])
        if v and is_name_token(v.group(1)) and self.src.kind == "message":
            e = s + v.start()
        # trailing mentions ("I moved to Denver @bob")
        tail = _MENTIONS_AFTER.search(text, s, e)
        if tail:
            e = tail.start()
        s, e = _trim(text, s, e)
        if e - s < 2:
            return
        body = text[s:e]
        if _FILLER.match(body) or _QUESTION_START.match(body) or _MAKE_BELIEVE.match(body):
            return
        prev: _Subject | None = None
        conditional = False
        pending_when: tuple[int, int] | None = None  # "When I retire," before the clause it times
        for cs, ce, conj in self._noting_topics(self._clauses(s, e)):
            when, pending_when = pending_when, None
            cs, ce = _trim(text, cs, ce)
            m = _INTERJ.match(text, cs, ce)
            if m and m.end() > cs:
                cs, ce = _trim(text, m.end(), ce)
            # ("We get creative and have a blast": a verb that goes on its subject is no sign-off)
            filler = not (conj and prev is not None) and _FILLER.match(text[cs:ce])
            if ce - cs < 2 or filler or _QUESTION_START.match(text[cs:ce]):
                prev = None if not conj else prev
                continue
            if self._encouragement(cs, ce):
                prev = None
                continue
            proposal = self._proposal(cs, ce)
            if proposal is not None:
                prev = proposal
                continue
            if _HYPOTHETICAL.match(text[cs:ce]):
                # "If I lose my job, I'll move home": what follows the condition holds only under it
                conditional = bool(_CONDITION.match(text, cs, ce))
                prev = None
                continue
            if conditional:
                conditional = False
                if not conj:
                    prev = None
                    continue
            if self._showing(cs, ce) or self._view(cs, ce):
                prev = None
                continue
            sub = _SUBORDINATE.match(text, cs, ce)
            if sub is not None and not self._since_front(cs, ce):
                if not self._subordinate(sub.group("sub"), sub.end(), ce) and _TIMES_WHAT_FOLLOWS.fullmatch(sub.group("sub")):
                    pending_when = (cs, ce)
                # ("When I was 25, I moved ...": a stage of life; "When I got the offer, I quit": news)
                self.event_fronted = self.event_fronted or bool(_EVENT_TIME.match(text, cs, ce))
                prev = None
                continue
            front, ss = self._front(cs, ce)
            subj = self._subject(ss, ce, prev if conj else None, conj=conj)
            if subj is None:
                prev = None
                continue
            if dated is not None and front is None and cs == s:
                front, cs = dated, dated[0]  # "2021-03-04: I moved to Oslo": the date the label gives
            subj.front = front
            if when is not None and not conj:
                subj.when = when
            according = _ACCORDING_FRONT.match(text, front[0], front[1]) if front is not None else None
            if according is not None and subj.kind != "me":
                # "According to Bob, Carol moved to Lima": what Bob says, as "Bob said Carol moved to Lima" is
                who = self._voice_of(text[according.end() : front[1]].strip(" ,"))
                if who is None:
                    prev = None
                    continue
                subj = replace(_frame(subj, who, self._third_owner(who), "says"), front=None, kind="name")
            subj.sole = not _inner_subject(self.words(subj.pred_start, ce))
            subj = self._past_interruption(subj, cs, ce)
            # a clause that only might be ("I could try X and see Y") passes that on to the next
            prev = subj if self._emit(subj, cs, ce) else None

    def _noting_topics(self, clauses: list[tuple[int, int, bool]]) -> Iterator[tuple[int, int, bool]]:
        """The clauses, each noted as a possible topic once it has been read (whatever it made)."""
        for cs, ce, conj in clauses:
            yield cs, ce, conj
            self._note_topic(cs, ce)

    def _note_topic(self, cs: int, ce: int) -> None:
        """What a clause puts on the table for a later "it"/"they": a thing it describes with a copula or
        a verb of perception ("Barcelona sounds awesome", "Dance is just me", "Guitar's my thing", ""The
        Name of the Wind" sounds cool"), or a bare noun phrase ("The Minnesota Wolves!", "Luna and
        Oliver!"). People, pronouns and vague words ("everything") are no topic; a clause with a subject
        of its own ("I ...") leaves the topic as it was."""
        if self.assistant or self.voice is not None:
            return
        text = self.text
        words = self.words(cs, ce)
        k = 0
        while k < len(words) and (words[k][0].lower() in _TOPIC_SKIP or not words[k][0][:1].isalnum()):
            if words[k][0] in "\"\u201c":
                break
            k += 1
        if k == len(words) or words[k][0].lower() in _TOPIC_NEVER:
            return  # most clauses: "I ...", "it ...", nothing to note
        if words[k][0] in "\"\u201c" or (k == 0 and cs > 0 and text[cs - 1] in "\"\u201c"):
            start = words[k][1] if words[k][0] in "\"\u201c" else cs - 1  # a title in quotation marks
            quoted = re.match(r"[\"\u201c]([^\"\u201d]{2,80})[\"\u201d]\s*", text[start:ce])
            if quoted is not None:
                rest = self.words(start + quoted.end(), ce)
                if rest and rest[0][0].lower() in _TOPIC_VERBS:
                    self._set_topic(f'"{quoted.group(1).strip()}"', plural=False)
            return
        words = words[k:]
        if not words[0][0][:1].isalpha():
            return
        low = [w.lower() for w, _, _ in words]
        if low[0].endswith("'s"):
            # "Guitar's mostly my thing": the noun and the copula in one token
            after = low[1] if len(low) > 1 else ""
            if after in _AFTER_IS or after in ADVERBS:
                self._topic_phrase([(words[0][0][:-2], words[0][1], words[0][2] - 2)], 1)
            return
        verb = next((k for k in range(1, len(low)) if low[k] in _FINITE or low[k] in _TOPIC_VERBS), None)
        if verb is None and not any(w in _VERB_FORMS for w in low):
            # a bare noun phrase: a name of several words or one with an article ("The Minnesota Wolves!");
            # a single capitalised word may be a person called out ("Jon!")
            if len(words) > 6 or any(not w.isalpha() and w != "&" for w in low):
                return
            proper = len(words) > 1 and all(
                is_name_token(w) or w.lower() in ("and", "&", "of", "the") for w, _, _ in words
            )
            if proper or low[0] in ("the", "these", "those", "my", "our"):
                self._topic_phrase(words, len(words))
            return
        if verb is not None and verb <= 5 and low[verb] in _TOPIC_VERBS:
            self._topic_phrase(words, verb)

    def _topic_phrase(self, words: list[tuple[str, int, int]], end: int) -> None:
        np = words[:end]
        low = [w.lower() for w, _, _ in np]
        if low[0] in _TOPIC_NEVER or low[-1] in _VAGUE_HEADS or low[-1] in ("and", "&", "of", "the"):
            return
        if any(w in _TOPIC_NEVER - {"this", "that", "these", "those"} or w in PERSON_NOUNS for w in low):
            return  # a person, or a phrase about one ("my sister", "Jon's studio")
        if any(w.endswith("'s") for w in low):
            return
        if len(np) == 1 and np[0][0] in self.persons[: self.persons_before]:
            return
        if any(w in (self.speaker, self.self_name, self.addressee) for w, _, _ in np):
            return
        phrase = self.text[np[0][1] : np[-1][2]]
        plural = (
            "and" in low
            or "&" in low
            or (low[-1].endswith("s") and len(low[-1]) > 3 and not low[-1].endswith(("ss", "us", "is")))
        )
        shown = self._rewrite_simple(phrase)
        if (len(np) == 1 and low[0] in _COMMON_NOUNS) or low[0] in ("the", "this", "that", "these", "those") or (
            _is_gerund(low[0])
        ):
            shown = shown[:1].lower() + shown[1:]
        self._set_topic(shown, plural=plural)

    def _set_topic(self, shown: str, *, plural: bool) -> None:
        self.topic = (shown, plural)
        self.topic_at = self.sentence_no

    def _topic_for(self, pronoun: str, before: str, after: str = "") -> str | None:
        """What "it" (or "them") stands for after the word ``before``, when it is the object of a verb or a
        preposition and the text named one thing of that number in the last sentences."""
        if self.topic is None or self.sentence_no - self.topic_at > _TOPIC_REACH:
            return None
        shown, plural = self.topic
        if plural != (pronoun == "them"):
            return None
        before = before.lower()
        if before in _IDIOM_VERBS or after.lower() in ("my", "your", "our", "his", "her", "their", "all"):
            return None  # "make it", "got it", "keep it up", "give it my all": no thing meant
        if before in _OBJECT_PREPS or _is_gerund(before) or before in _VERB_FORMS:
            return shown
        return None

    def _showing(self, cs: int, ce: int) -> bool:
        """ "Here's a pic of my family camping at the beach" -> "Mel shared a pic of Mel's family camping at
        the beach". True when the clause was read that way (with or without a statement)."""
        m = _SHOWING.match(self.text, cs, ce)
        if m is None or not self.human or self.voice is not None:
            return False
        noun, rest = m.group("noun"), m.group("rest")
        if noun is not None:
            of = re.match(r"(?:of|from|at)\s+", rest, re.I)
            if of is not None:
                shown = f"{self.me()} shared {m.group('what').strip()} {of.group(0).strip()}"
                start = m.start("rest") + of.end()
            elif re.match(r"(?:that\s+|which\s+)?(?:I|we)\b", rest):
                # "Here's a shot I got when I volunteered": the speaker's own picture, said how it came about
                shown = f"{self.me()} shared {m.group('what').strip()}"
                start = m.start("rest")
            else:
                return True  # "Here's a pic!": nothing said about what it shows
        else:
            # "Check out my pottery creation", "Here's my bookshelf", "Check out these kids I met"; not
            # "Check out that movie" (advice)
            start = m.start("what")
            rest = self.text[start:ce]
            if not _SHOWN_OWN.match(rest):
                return False
            if not rest.lower().startswith(("my", "our")) and not re.search(r"\b(?:I|we)\b", rest):
                return False
            shown = f"{self.me()} shared"
        if ce - start < 3:
            return True
        subj = _Subject(self.me(), self.me_owner(), shown, start, kind="shown")
        self._emit(subj, cs, ce)
        return True

    def _before_question(self, s: int, e: int) -> int:
        """Where the statement before a trailing question ends ("I started a store - pretty cool, huh?"),
        or ``s`` when the sentence is all question, the statement is not the speaker's own, or the
        question only asks to agree ("You went, didn't you?")."""
        cut = None
        for m in _QUESTION_BOUNDARY.finditer(self.text, s, e):
            cut = m
        if cut is None:
            return s
        asked = self.words(cut.end(), e)
        before = self.words(s, cut.start())
        if not asked or asked[0][0].lower() in _TAG_WORDS or len(before) < 3:
            return s
        if not any(w.lower() in _PERSONAL | FIRST_PL | {"our"} for w, _, _ in before):
            return s
        return cut.start()

    def _thanks(self, s: int, e: int) -> bool:
        """ "Thanks for having my back" -> "Jon is grateful to Gina for having Jon's back": what the person
        spoken to did, as the speaker tells it. True when the sentence was read that way. ("Thanks for
        asking", "Thanks for letting me know": nothing done worth keeping.)"""
        m = _THANKS_FOR.match(self.text, s, e)
        if m is None or not self.human or self.voice is not None:
            return False
        end = _THANKS_END.search(self.text, m.end(), e)
        ce = end.start() if end else e
        vocative = re.search(r",\s*([A-Z][a-z]+)\s*[.!]*$", self.text[s:ce])
        if vocative and is_name_token(vocative.group(1)):
            ce = s + vocative.start()  # "..., Sam."
        done = self.words(m.end(), ce)
        if len(done) < 2 or not self._contentful(self.text[done[1][1] : ce]):
            return False
        shown = f"{self.me()} is grateful to {self.you()} for"
        self._emit(_Subject(self.me(), self.me_owner(), shown, m.end(), kind="shown"), s, ce)
        return True

    def _congratulations(self, s: int, e: int) -> bool:
        """ "Congrats on finishing your degree, John!" -> "Maria congratulates John on finishing John's
        degree": like thanks, congratulating is something the speaker does for the person spoken to, and
        it says what they achieved. True when the sentence was read that way ("Congrats!" alone says
        nothing and stays an interjection)."""
        m = _CONGRATS_ON.match(self.text, s, e)
        if m is None or not self.human or self.voice is not None:
            return False
        end = _THANKS_END.search(self.text, m.end(), e)
        ce = end.start() if end else e
        # "Congrats on winning, you deserve it": a clause of its own follows
        clause = _CLAUSE_AFTER_COMMA.search(self.text, m.end(), ce)
        ce = clause.start() if clause else ce
        vocative = re.search(r",\s*([A-Z][a-z]+)\s*[.!]*$", self.text[s:ce])
        if vocative and is_name_token(vocative.group(1)):
            ce = s + vocative.start()  # "..., Sam."
        done = self.words(m.end(), ce)
        if not done or not self._contentful(self.text[m.end() : ce]):
            return False
        shown = f"{self.me()} congratulates {self.you()} {m.group(0).split()[-1].lower()}"
        # what is praised is the other person's doing, no attribute of the speaker's ("Congrats on moving
        # to Berlin!" had closed the speaker's own home)
        self._emit(_Subject(self.me(), self.me_owner(), shown, m.end(), kind="shown", frame="congratulates"), s, ce)
        return True

    def _wish(self, s: int, e: int) -> bool:
        """ "Happy 10th anniversary to my wife Sarah!" -> "Alice wishes a happy 10th anniversary to Alice's
        wife Sarah." and "Alice's wife is Sarah.": the speaker's wish, and who the one wished is to them
        (read as a clause, "Happy" was the speaker's state: "Alice is happy 10th anniversary to ...").
        True when the sentence was read that way."""
        m = _WISH_TO.match(self.text, s, e)
        if m is None or not self.human or self.voice is not None:
            return False
        # the one wished ends at a comma ("..., love you!") or a clause of its own
        end = _THANKS_END.search(self.text, m.end(), e)
        ce = end.start() if end else e
        comma = self.text.find(",", m.end(), ce)
        ce = comma if comma >= 0 else ce
        words = self.words(m.end(), ce)
        while words and not words[-1][0][:1].isalnum():
            words.pop()
        if not words:
            return False
        ce = words[-1][2]
        happy = re.search(r"happy\s+", m.group(0), re.I)
        if happy is None:
            return False
        wished = m.group(0)[: happy.start()].lower()
        shown = f"{self.me()} wishes {'' if wished.startswith('a ') else 'a '}{wished}happy"
        self._emit(_Subject(self.me(), self.me_owner(), shown, s + happy.end(), kind="shown", frame="wishes"), s, ce)
        self._relation_wished(words)
        rest = _CLAUSE_AFTER_COMMA.match(self.text, comma, e) if comma >= 0 else None
        if rest is not None:
            # "Happy birthday to my son Leo, he turns 5 today!": a clause of its own, read as the sentence
            # it could have been (the one wished is a person named before it)
            self._note_names(s, comma)
            self.sentence_no -= 1
            self._sentence(rest.end(), e)
        return True

    def _relation_wished(self, words: list[tuple[str, int, int]]) -> None:
        """ "my (amazing) wife Sarah", the one a wish is for: the relation, as "My wife is Sarah" tells it."""
        low = [w.lower() for w, _, _ in words]
        if len(low) < 3 or low[0] not in ("my", "our"):
            return
        k = next((i for i in range(1, min(len(low), 4)) if low[i] in PERSON_NOUNS), None)
        if k is None or k + 1 >= len(words) or not is_name_token(words[k + 1][0]):
            return
        name_end = k + 2 if k + 2 < len(words) and is_name_token(words[k + 2][0]) else k + 1
        name = " ".join(w for w, _, _ in words[k + 1 : name_end + 1])
        # ("my little brother", "my best friend": who they are; "amazing" is how the speaker sees them)
        kind = [w for w in low[1 : k + 1] if w in ("best", "little", "big", "older", "younger", "baby", "oldest", "youngest", "eldest")]
        relation = f"{self.me()}'s {' '.join([*kind[-1:], low[k]])}"
        if low[k] in ("husband", "wife", "spouse", "hubby"):
            held = _Subject(self.me(), self.me_owner(), relation, words[k + 1][1], "is", self_attr="married_to?", kind="relative")
        else:
            held = _Subject(name, self.me_owner(), f"{relation} is", words[k + 1][1], kind="shown")
        self._emit(held, words[0][1], words[name_end][2])

    def _encouragement(self, cs: int, ce: int) -> bool:
        """ "Keep chasing your dreams" -> "Tim encourages John to keep chasing John's dreams": urging the
        person spoken to on is something the speaker does for them, like support or thanks, where any
        other order ("Check it out") stays nothing. True when the clause was read that way (it may still
        say nothing: "Keep it up!", "Keep going!")."""
        m = _ENCOURAGE.match(self.text, cs, ce)
        if m is None or not self.human or self.voice is not None or self.assistant:
            return False
        promise = _PROMISE.search(self.text, m.end(), ce)
        ce = promise.start() if promise else ce
        # "Keep going for your dreams and don't quit!": two urgings, each told as one
        more = _MORE_URGING.search(self.text, m.end(), ce)
        rest = (more.end(), ce) if more is not None else None
        ce = more.start() if more is not None else ce
        address = _ADDRESS_END.search(self.text, m.end(), ce)
        ce = address.start() if address else ce
        neg = m.group("neg")
        shown = f"{self.me()} encourages {self.you()} {'not to' if neg else 'to'}"
        start = m.end("neg") if neg else cs
        # (implicit: the verb that opens the order is lower-cased after the words put before it)
        urged = _Subject(self.me(), self.me_owner(), shown, start, kind="shown", implicit=True, urged=True)
        self._emit(urged, cs, ce)
        if rest is not None:
            self._encouragement(*rest)
        return True

    def _proposal(self, cs: int, ce: int) -> _Subject | None:
        """ "Let's keep spreading awareness" -> "Mel wants to keep spreading awareness": what a speaker
        proposes to do is their intention (not a fact that it happens). The subject, for a verb joined to
        it by "and" ("Let's get together and make the studio shine"); None when the clause is no proposal
        or says nothing ("Let's do it!", "Let's keep it up")."""
        m = _PROPOSAL.match(self.text, cs, ce)
        if m is None or not self.human or self.voice is not None:
            return None
        rest = self.words(m.end(), ce)
        wanted = self.text[m.end() : ce]
        if (
            not rest
            or not rest[0][0].isalpha()
            or rest[0][0].lower() in _NP_NEVER - _VERB_BASE_SET
            or _bare(wanted, 2)
            or _SOMETIME.search(wanted)
        ):
            return None
        subj = _Subject(self.me(), self.me_owner(), f"{self.me()} wants to", m.end(), kind="shown", proposed=True)
        self._emit(subj, cs, ce)
        return subj

    def _view(self, cs: int, ce: int) -> bool:
        """ "Remember that sometimes stumbling blocks can be open doors" -> "<speaker> thinks sometimes
        stumbling blocks can be open doors": a general claim handed over as the speaker's own view.
        True when the clause was read that way."""
        if not self.human or self.voice is not None:
            return False
        m = _VIEW_OPENER.match(self.text, cs, ce)
        if m is None and (seems := _SEEMS.match(self.text, cs, ce)) is not None:
            rest = self.words(seems.end(), ce)
            verb = next((k for k, (w, _, _) in enumerate(rest) if w.lower() in _FINITE), 0)
            if (
                verb > 0
                and rest[0][0].lower() not in SECOND | {"your", "forever"}
                and rest[verb - 1][0].lower() != "to"
                and not {w.lower() for w, _, _ in rest[:verb]} & {"since", "when", "if", "because", "while"}
            ):
                m = seems  # "It seems like nature calms us": the speaker's view; "Sounds like a plan": nothing
        if m is None:
            m = _REMINDER.match(self.text, cs, ce)
            rest = self.words(m.end(), ce) if m else []
            if not rest or rest[0][0].lower() in ("of", "to", "about", "when", "why", "how"):
                return False  # "It reminds me of home", "Reminds me to call": told as it is
            if rest[0][0].lower() in FIRST_SG:
                # "Reminds me how much I love performing": what the speaker is reminded of is theirs
                subj = self._subject(m.end(), ce, None)
                if subj is not None and subj.kind == "me":
                    subj.sole = not ({w.lower() for w, _, _ in self.words(subj.pred_start, ce)} & SECOND)
                    self._emit(subj, m.end(), ce)
                return True
        rest = self.words(m.end(), ce)
        if (
            len(rest) < 3
            or rest[0][0].lower() in SECOND | {"your", "to", "me", "us", "him", "her", "them"}
            or rest[0][0].lower() in _VERB_BASE_SET
        ):
            return True  # "Remember to rest", "Don't forget your keys", "..., believe in yourself": advice
        who = self.me_owner() or self.me()
        subj = _Subject(self.me(), self.me_owner(), f"{who} thinks", m.end(), kind="shown")
        self._emit(subj, m.end(), ce)
        return True

    def _subordinate(self, word: str, cs: int, ce: int) -> bool:
        """The clause after "since"/"because"/"after" ... as a statement of its own, when it is a fact;
        whether it was one (a past time, a stage of life or a cause is; "When I retire" is not)."""
        word = " ".join(word.lower().split())
        subj = self._subject(cs, ce, None)
        if subj is None:
            return False
        pred = _expand(((subj.prefix + " ") if subj.prefix else "") + self.text[subj.pred_start : ce])
        if word not in _PRESUPPOSING and word not in _PAST_ONLY:
            return tense_of(pred, verb_first=True) == "past"
        if subj.kind not in ("me", "relative", "mine"):
            return True
        if word in _PAST_ONLY and (tense_of(pred, verb_first=True) != "past" or _LIFE_STAGE.match(pred)):
            return tense_of(pred, verb_first=True) == "past"
        if _LAST_TALKED.match(pred):
            return True  # "Since we last spoke, ...": when the talk was, nothing that happened
        subj.sole = not _inner_subject(self.words(subj.pred_start, ce))
        self._emit(subj, cs, ce)
        return True

    def _meant(self, s: int, e: int, untrimmed: str) -> bool:
        """A sentence that is only a value said in place of another (_MEANT): noted for what it corrects.
        ``untrimmed``: the sentence with the marks trimming takes off, which may be a chat's asterisk."""
        if self.src.kind != "message" or self.voice is not None:
            return False
        starred = untrimmed.startswith("*") != untrimmed.rstrip(".!").endswith("*")
        m = _MEANT.match(f"*{self.text[s:e]}" if starred else self.text[s:e])
        if m is not None and starred and not m.group("starred"):
            m = None
        if m is None:
            return False
        group = next(g for g in ("named", "meant", "noun", "instead", "starred") if m.group(g))
        if group == "instead" and re.search(r"['\u2019]s$", m.group(group)) and "," not in m.string[m.end(group) : m.end()]:
            return False  # "Tom's not coming": "Tom is not", a denial; a possessive meant takes a comma
        said = _INTERJ.match(m.group(group))
        if said is not None and said.end() > 0:
            return False  # "Nope, not a new game", "Yes, not Denver": an answer, no value meant
        shift = s - 1 if starred else s
        wrong = m.group("wrong") or m.group("replaced")
        self._meant_value(shift + m.start(group), shift + m.end(group), m.group(group), wrong, s, e)
        return True

    def _meant_value(
        self, vs: int, ve: int, meant: str, wrong: str | None, s: int, e: int | None = None
    ) -> None:
        """The assertion of a value meant, [vs, ve) in the text, in place of ``wrong`` (or of what was said
        just before, None); the sentence it is said in is [s, e), which its quote spans, ``e`` None: a
        correction ending a clause's sentence (the quote is the value)."""
        me = self.me()
        replaced = _clean_value(wrong, True) if wrong else None
        before = _trim(self.text, 0, s)
        if wrong is None and (e is None or before[1] > before[0]):
            # none named, what it corrects is the Record's words before it: "" unless they said a value
            replaced = ""
        said = f"{me} meant {meant}" + (f", not {wrong}" if wrong else "")
        self._append(
            Assertion(
                statement=_sentence_case(said),
                subject=me,
                owner=self.me_owner(),
                attribute=None,
                value=None,
                single_valued=False,
                change=False,
                negated=False,
                valid_from=self.src.occurred_at,
                valid_to=None,
                span=(s, e) if e is not None else (vs, ve),
                corrective=True,
                meant=(meant, replaced),
            )
        )

    def resolve_meant(self) -> None:
        """ "I live in Denver. Sorry, I meant Portland": a value meant in place of one said earlier in the
        Record is that statement said again with it, one assertion that never was the other. What it
        replaces is the value it names ("..., not Denver"), else what the Record said just before it."""
        i = 0
        while i < len(self.out):
            fix = self.out[i]
            if fix.meant is None or fix.attribute is not None:
                i += 1
                continue
            meant, wrong = fix.meant
            said = [
                j
                for j in range(i)
                if self.out[j].attribute is not None
                and self.out[j].value
                and self.out[j].subject == fix.subject
                and self.out[j].owner == fix.owner
                and not self.out[j].negated
            ]
            if wrong:
                said = [j for j in said if (self.out[j].value or "").casefold() == wrong]
            elif said and said[-1] != i - 1:
                said = []  # something else was said in between: not what it corrects
            held = self.out[said[-1]] if said else None
            statement = restated(held.statement, held.value or "", meant) if held is not None else None
            if held is None or statement is None:
                if wrong == "":
                    del self.out[i]  # "..., sorry, Portland" after a clause that said no value: nothing known
                    continue
                i += 1
                continue
            self.out[said[-1]] = replace(
                held,
                statement=statement,
                value=_clean_value(meant, True),
                span=(held.span[0], max(held.span[1], fix.span[1])),
            )
            for k in range(i):
                # "I'm a nurse at Mercy, sorry, Memorial": the job read from the same words showed the
                # employer said wrong ("Alice is a nurse at Mercy.") beside the one meant
                other = self.out[k]
                if k == said[-1] or other.span != held.span or other.subject != held.subject:
                    continue
                again = restated(other.statement, held.value or "", meant)
                if again is not None:
                    self.out[k] = replace(other, statement=again, span=self.out[said[-1]].span)
            del self.out[i]

    def _retraction(self, s: int, e: int) -> None:
        me = self.me()
        self._append(
            Assertion(
                statement=f"{me} says that is not true.",
                subject=me,
                owner=self.me_owner(),
                attribute=None,
                value=None,
                single_valued=False,
                change=True,
                negated=True,
                valid_from=self.src.occurred_at,
                valid_to=None,
                span=(s, e),
                corrective=True,
                retraction=True,
            )
        )

    def _label(self, s: int, e: int) -> tuple[int, tuple[int, int] | None] | None:
        """Where what a label at the sentence's start heads begins ("Update: I got the job"), and the
        label's span when it is a date; None when the sentence opens on none (see _LABEL)."""
        m = _LABEL.match(self.text, s, e)
        if m is None:
            return None
        label = m.group("label").strip()
        first = self.times_in(label)[:1]
        if first and first[0].kind == "at" and first[0].start == 0 and first[0].end == len(label):
            return m.end(), (m.start("label"), m.start("label") + len(label))
        words = label.replace(".", "").split()
        if words and words[-1].isdigit():
            words.pop()  # "Update 2:"
        # a request to the reader ("Please update my records:", "Please note:"), no speaker's name
        request = 0 < len(words) <= 6 and words[0].lower() == "please"
        if not request and (not 0 < len(words) <= 4 or words[-1].lower() not in _LABEL_HEADS):
            return None
        for k, w in enumerate(words if request else words[:-1]):
            low = w.lower()
            if (
                not w.isalpha()
                or (k > 0 and not w.islower())
                or low in PERSON_NOUNS
                or (low in _PERSONAL | _OURS and not request)
                or low in SECOND | THIRD_SG | {"your", "his", "her", "their", "him", "them"}
                or w in self.persons
                or w in (self.speaker, self.self_name, self.addressee)
            ):
                return None  # "Mom update: ...", "Bob update: ...": who the words are of is unsure
        return m.end(), None

    def _front(self, cs: int, ce: int) -> tuple[tuple[int, int] | None, int]:
        """Skip what opens a clause before its subject: a time ("Last weekend I joined ...", "In 2019,
        we ..."), or a connective ("That's why I ..."). Returns the time's span, if any, and where the
        subject starts."""
        text = self.text
        front = None
        pos = cs
        for _ in range(2):
            subject_at = self._fronted_phrase_end(pos, ce)
            if subject_at is not None:
                front, pos = (pos, subject_at[0]), subject_at[1]
                continue
            m = _FRONT.match(text, pos, ce)
            if m and m.end() < ce:
                pos = m.end()
                continue
            past = _LONG_AGO.match(text, pos, ce)
            if past is not None:
                # "Years ago I worked ...", "Back in the day, we ...": a time of life long past, without a
                # year to date the clause by; the clause is told as past (see _long_ago)
                nxt = past.end() + len(_COMMA_GAP.match(text, past.end(), ce)[0])
                rest = self.words(nxt, min(ce, nxt + 30))
                if rest and (rest[0][0].lower() in _SUBJECT_OPENERS or is_name_token(rest[0][0])):
                    pos = nxt
                    continue
            often = _FREQUENCY.match(text, pos, ce)
            if often and often.end() < ce:
                # "Sometimes I'm so relieved": how often goes with the statement, at its end
                front, pos = (often.start(1), often.end(1)), often.end()
                continue
            if not self._subject_within(pos, ce):
                # a time fronts a subject, which opens on one of these words: without one, the words
                # need not be read for a time (40 characters after each "and" of a long sentence, each
                # a tenth of a millisecond)
                break
            lead = _BEFORE_TIME.match(text[pos:ce])
            probe = text[pos : min(ce, pos + 40)]
            exprs = self.times_in(probe)
            if not exprs and probe[:3].lower() == "in " and looks_ahead(text[pos:ce]):
                # "In two weeks I'm moving ...": counted ahead, a time only of a clause that looks ahead
                exprs = self.times_in(probe, future=True)
            first = exprs[0] if exprs else None
            if (
                first is not None
                and first.start <= (lead.end() if lead else 0)
                and first.kind in ("at", "since", "range")
            ):
                after = pos + first.end
                while (narrower := _TIME_OF_DAY.match(text, after, ce)) is not None:
                    after = narrower.end()  # "Yesterday morning I ...", "Yesterday at 3pm Bob ..."
                comma = re.match(r"\s*,?\s*", text[after:ce])
                nxt = after + (comma.end() if comma else 0)
                rest = self.words(nxt, min(ce, nxt + 30))
                if rest and (rest[0][0].lower() in _SUBJECT_OPENERS or is_name_token(rest[0][0])):
                    front = (pos, after)
                    pos = nxt
                    continue
            break
        return front, pos

    def _long_ago(self, cs: int, ce: int) -> bool:
        """Whether the clause [cs, ce) is told of a time of life long past: it names one, or its sentence
        opens on one ("When I was a kid, we moved ...", "Growing up, we ..."; "I hated broccoli as a kid,
        but I moved to Denver" tells the move of no such time)."""
        return bool(_LONG_AGO.match(self.text, self.sentence_start, ce) or _LONG_AGO.search(self.text, cs, ce))

    def _time_then_subject(self, pos: int, e: int) -> bool:
        """Whether a time, or how often, and then a subject open the words at ``pos`` ("..., but on
        Christmas Eve I moved to Denver", "..., but sometimes John brings work home"): a clause of its own,
        whose time is none of the clause before it. Read in a window: from each "and" to the sentence's
        end, a long sentence was quadratic."""
        end = min(e, pos + _FRONT_REACH)
        front, at = self._front(pos, end)
        after = self.words(at, end) if front is not None else []
        return bool(after) and (after[0][0].lower() in _SUBJECT_OPENERS or is_name_token(after[0][0]))

    def _since_front(self, pos: int, ce: int) -> re.Match[str] | None:
        """A fronted "since <event>" (see _SINCE_FRONT). "Since my mom left, ..." is a clause of the
        speaker's own, a fact told apart (see _SUBORDINATE); "Since the pandemic started I ..." dates
        what follows as "since the pandemic" would."""
        m = _SINCE_FRONT.match(self.text, pos, ce)
        if m is None:
            return None
        second = (m.group("second") or "").lower()
        clause = second in _FINITE or second.endswith("ed")
        return None if clause and (m.group("det") or "").lower() in ("my", "our") else m

    def _fronted_phrase_end(self, pos: int, ce: int) -> tuple[int, int] | None:
        """Where a fronted "after/while ... <gerund> ..." or "according to ..." phrase ends and where the
        first-person subject after it starts: at its comma if it has one, else at the first "I"/"we"."""
        m = _GERUND_FRONT.match(self.text, pos, ce)
        if m is not None and not _is_gerund(m.group("ing")):
            m = None
        # "According to my doctor, I have high blood pressure" was "Alice is according to Alice's doctor"
        m = m or _ACCORDING_FRONT.match(self.text, pos, ce) or self._since_front(pos, ce)
        if m is None:
            return None
        rest = self.words(m.end(), ce)
        comma = next((k for k, t in enumerate(rest) if t[0] == ","), None)
        if comma is None:
            k = next((k for k, t in enumerate(rest) if t[0].lower() in FIRST_SG | FIRST_PL), None)
            if k is None or k == 0:
                return None
            return rest[k - 1][2], rest[k][1]
        if comma + 1 < len(rest) and rest[comma + 1][0].lower() in FIRST_SG | FIRST_PL:
            return rest[comma][1], rest[comma + 1][1]
        if comma + 1 < len(rest) and (_ACCORDING_FRONT.match(self.text, pos, ce) or self._since_front(pos, ce)) and (
            rest[comma + 1][0].lower() in _SUBJECT_OPENERS or is_name_token(rest[comma + 1][0])
        ):
            return rest[comma][1], rest[comma + 1][1]  # "According to Bob, Carol moved to Lima": Bob's report
        return None

    def _aside_end(self, split: re.Match[str], left: _Preceding, e: int) -> int:
        """Where an aside that interrupts a subject ends, or -1: "My sister (the one in Oslo) had a baby",
        "My boss - who is a jerk - got fired". Split there, the verb after it had no subject and was
        taken for the speaker's ("Alice had a baby")."""
        opener = split.group(0).strip()
        closer = _ASIDE_CLOSERS.get(opener)
        if closer is None:
            return -1
        left.read_to(split.start())
        clause_before = left.finite or left.verb_after_first
        if not left.words or (clause_before and opener != "("):
            return -1  # a clause before it: the aside does not interrupt a subject
        close = self.text.find(closer, split.end(), e)
        if close < 0:
            return -1
        if clause_before:
            # "I've got 2 kids: Sam (8) and Ella (5)", "I visited my sister (the one in Oslo) last week":
            # brackets with no verb in them interrupt the clause, and what follows them is still of it
            inside = self.words(split.end(), close)
            return close + 1 if not any(w.lower() in _VERB_FORMS for w, _, _ in inside) else -1
        after = [w.lower() for w, _, _ in self.words(close + len(closer), min(e, close + len(closer) + 60))]
        while after and (after[0] in ADVERBS or after[0] in _CLAUSE_ADVERBS):
            after.pop(0)  # "(the one in Oslo) just had a baby"
        if not after or after[0] not in _VERB_FORMS:
            return -1
        return close + len(closer)

    def _relation_aside_at(self, comma: int, e: int) -> bool:
        """Whether the comma at ``comma`` follows a name and opens an aside that says whose person it is
        (see _relation_closed), whether the name is a subject or an object ("I met Kate, my new neighbor,
        yesterday": split there, "Alice's new neighbor, on 7 May 2023." was a clause)."""
        i, j = self._token_range(comma, e)
        return i > 0 and is_name_token(self.tokens[i - 1][0]) and _relation_closed(self.tokens[i - 1 : min(j, i + 12)], 1) is not None

    def _age_to_come(self, pos: int, e: int) -> bool:
        """Whether "turning <age>" at ``pos`` says when ("I'm 29, turning 30 in June"): the age from then is
        a clause of its own, of the subject before it. Without a time ("..., turning 30 soon") it is
        no age held from any time, and stays with the age said. The time is looked for up to the next
        comma, and no further than _AGE_TIME_REACH characters: read to the sentence's end from each
        "..., turning 3 in June" of a long sentence, reading it was quadratic (8,000 characters: 19 s)."""
        if _AGE_TO_COME.match(self.text, pos, e) is None:
            return False
        end = min(e, pos + _AGE_TIME_REACH)
        comma = self.text.find(",", pos, end)
        return bool(self.times_in(self.text[pos : end if comma < 0 else comma]))

    def _clauses(self, s: int, e: int) -> list[tuple[int, int, bool]]:
        """Clause spans; the flag says the clause began after and/but (it may inherit the subject)."""
        text = self.text
        out: list[tuple[int, int, bool]] = []
        cur, conj_flag = s, False
        left = _Preceding(self, cur)
        # the clause end after a dash, kept while it lies ahead: searching again from every dash of a
        # long sentence without one was quadratic (a match at a position does not depend on where the
        # search began, so the one found stands for every later start before it; none found, for all)
        searched, upto = False, None
        aside_end, asides = -1, []
        for m in _SPLIT.finditer(text, s, e):
            if m.start() < aside_end:
                continue
            right = self.words(m.end(), min(e, m.end() + 60))
            if not right:
                continue
            aside_end = self._aside_end(m, left, e)
            if aside_end > 0:
                inner_end = text.rfind(text[aside_end - 1], m.end(), aside_end)
                if right[0][0].lower() in _ASIDE_SUBJECTS:
                    asides.append((m.end(), inner_end, False))  # "My sister - she's a nurse - works nights"
                continue
            conj = m.group("conj")
            before = self.first_words(cur, m.start())  # (all the clause's, for each split: quadratic)
            told = _HEARSAY_OPENER.match(text, before[0][1], e) if before else None
            if told is not None and m.start() < told.end() <= m.end():
                continue  # "Word is, she's pregnant": what was heard is no clause apart from the hearing
            if not conj and m.group(0).startswith(",") and self._relation_aside_at(m.start(), e):
                continue  # "Kate, my roommate, just got a cat": the aside is no clause of its own
            if not conj and ("-" in m.group(0) or "\u2013" in m.group(0) or "\u2014" in m.group(0)):
                # "I faced all kinds of hurdles - tech stuff, workplace stuff": a dash before a list
                # with no verb of its own elaborates the clause, it starts none
                if not searched or (upto is not None and upto.start() < m.end()):
                    searched, upto = True, _CLAUSE_END.search(text, m.end(), e)
                first_tail, tail_end = self._token_range(m.end(), upto.start() if upto else e)
                if tail_end > first_tail and not self._opener_within(first_tail, tail_end):
                    continue
            # "..., but now I have a backup drive": a sentence adverb may come before the new subject
            lead = 0
            while lead < len(right) - 1 and right[lead][0].lower() in _CLAUSE_ADVERBS:
                lead += 1
            if lead and right[lead][0] == "," and lead < len(right) - 1:
                lead += 1
            if lead and right[lead][0].lower() not in FIRST_SG | FIRST_PL:
                lead = 0
            right = right[lead:]
            first = right[0][0]
            left.read_to(m.start())
            # ", and I ...": a comma before the conjunction and a first-person subject after it start a
            # clause even when the left part has no verb ("Seven years now, and I've found my muses")
            comma_clause = m.group(0).startswith(",") and first.lower() in FIRST_SG | FIRST_PL
            if conj and m.group(0).startswith(",") and _names_listed(self.first_words(cur, e)):
                continue  # "Kate, Bob, and I went hiking", "Kate, Bob, and Tom ...": the list's last comma
            if (
                conj
                and conj.lower() == "and"
                and not comma_clause
                and not (
                    left.finite
                    or (
                        left.words
                        and left.words[0] in FIRST_SG | FIRST_PL | SECOND | {"they"}
                        and left.verb_after_first
                    )
                )
                # "I'm a nurse and my brother is a teacher": after "I'm" (a subject and its verb), a person
                # with a verb of their own opens a clause; anything else may still share the verb
                and not (left.contracted and _person_clause(right))
                # "I'm 30 and live in Denver": a verb of the contracted subject's own, with its object
                and not (left.contracted and _own_verb_after_contraction(left.words, right))
                and not self._age_to_come(right[0][1], e)  # "I'm 29 and turning 30 in June"
            ):
                continue  # "My sister and I ...", "Their love and help ...": a coordinated subject
            if conj and conj.lower() == "though" and left.words == ["even"]:
                continue  # "Even though I ...": a fronted subordinator (see _SUBORDINATE)
            if conj and first.lower() in _VERB_BASE_SET and "to" in left.words[-6:]:
                continue  # "the chance to share my story and give others hope": one infinitive
            if (
                conj
                and conj.lower() == "so"
                and first.lower()
                in DROP_SUBJECTS
                - {"it", "it's", "that", "that's", "this", "they", "they're", "there", "there's"}
            ):
                continue  # "I've heard so many great things": "so" is an adverb here
            if conj and conj.lower() in ("and", "plus") and _listed(left.words, first.lower()):
                continue  # "a community where I'm accepted, loved and supported": one list, one clause
            if conj:
                starts_subject = first.lower() in FIRST_SG | FIRST_PL | SECOND | THIRD_SG | DROP_SUBJECTS | {
                    "my",
                    "our",
                    "me",
                } or (is_name_token(first) and len(right) > 1 and _is_verb(right[1][0]))
                # "..., and Precious and Pixie are Chihuahua mixes": two names with their verb
                starts_subject = starts_subject or (
                    is_name_token(first)
                    and len(right) > 3
                    and right[1][0].lower() in ("and", "&")
                    and is_name_token(right[2][0])
                    and right[3][0].lower() in _FINITE
                    and right[3][0].lower() not in _SINGULAR_ONLY
                )
                # "... and his wife works at Acme", "... and her mom answered": another person
                # ("her" may be an object: a finite verb after the noun says it is a subject)
                starts_subject = (
                    starts_subject or (first.lower() in ("his", "her", "their", "your") and _possessed_then_finite(right))
                ) and not _joined_subject(right)
                # ("I grew up in Ohio but now live in Denver": an adverb before the speaker's second verb)
                k = 0
                while (
                    left.words
                    and left.words[0] in FIRST_SG | FIRST_PL
                    and k < min(len(right) - 1, 2)
                    and right[k][0].lower() in _BEFORE_SECOND_VERB
                ):
                    k += 1
                if k and right[k][0].lower() in _VERB_FORMS and right[k][0].lower() not in MODALS:
                    right, first = right[k:], right[k][0]
                starts_verb = (
                    conj.lower() in ("and", "but", "plus")
                    and first.lower() in _VERB_FORMS
                    and first.lower() not in MODALS
                    # "I got new ideas and plans for it": "plans" cannot share the subject "I", so it is
                    # a noun joined to the object, no second verb
                    # ("I think it looks great and keeps me going": "it" has a verb it may share)
                    and not (
                        first.lower() in _THIRD_S_ONLY
                        and left.words
                        and left.words[0] in _NOT_THIRD_SUBJECTS
                        and not left.third_after_first
                    )
                    # "... counseling and support groups improved my life": a noun with a verb after it
                    and not (
                        first.lower() in _VERB_BASE_SET - {"have", "do", "be"}
                        and len(right) > 2
                        and right[1][0].isalpha()
                        and right[1][0].lower() not in _NP_NEVER | _OBJECT_WORDS
                        and right[2][0].lower() in _FINITE
                        and right[2][0].lower() not in MODALS
                    )
                ) or first.lower() in ("if", "unless", "when", "because") or self._age_to_come(right[0][1], e)
                if not (starts_subject or starts_verb) and not (
                    conj.lower() in ("and", "but", "so") and self._time_then_subject(right[0][1], e)
                ):
                    continue
            if not conj and _AGE_TO_COME.match(text, m.end()) and not self._age_to_come(m.end(), e):
                continue
            out.append((cur, m.start(), conj_flag))
            cur, conj_flag = m.end(), bool(conj) or self._age_to_come(m.end(), e)
            left = _Preceding(self, cur)
        out.append((cur, e, conj_flag))
        first_cs, first_ce, first_conj = out[0]
        lead = _INTERJ.match(text, first_cs, first_ce)
        sub_at = lead.end() if lead and lead.end() > first_cs else first_cs
        if len(out) > 1 and not out[1][2] and self._fronted_phrase_end(sub_at, out[1][1]) is not None:
            # "After finishing my screenplay, I got ...": the fronted phrase stays with its clause
            out[0:2] = [(first_cs, out[1][1], first_conj)]
            first_ce = out[0][1]
        elif len(out) > 1 and not out[1][2]:
            # "In 2019, I moved to Oslo", "Back in 2015, I worked at IBM": a clause that is a fronted time
            # and nothing else stays with the clause it dates (split at its comma, the move was dated
            # when it was said, and "Back in 2015" became "Alice is back in 2015")
            front, subject_at = self._front(sub_at, out[1][1])
            if front is not None and front[1] >= _trim(text, first_cs, first_ce)[1] and subject_at >= out[1][0]:
                out[0:2] = [(first_cs, out[1][1], first_conj)]
                first_ce = out[0][1]
        sub = _SUBORDINATE.match(text, sub_at, first_ce)
        if sub is not None and not self._since_front(sub_at, first_ce):
            # "Since I lost my job, things have been tough": the subordinate clause ends at the comma
            comma = text.find(",", sub_at, first_ce)
            if comma < 0:
                # "While I was in Paris I met Bob": without a comma, the main clause starts at the next
                # first-person subject
                later = [t for t in self.words(sub.end(), first_ce)[1:] if t[0].lower() in FIRST_SG | FIRST_PL]
                comma = later[0][1] - 1 if later else -1
            if comma > sub_at:
                out[0:1] = [(first_cs, comma, first_conj), (comma + 1, first_ce, False)]
        if asides:  # each after the clause it interrupts, so that its pronoun has that clause's subject
            out = sorted(out + asides, key=lambda clause: clause[0])
        return [c for c in out if c[1] > c[0]]

    # ---- subjects
    def _subject(self, cs: int, ce: int, prev: _Subject | None, *, conj: bool = False) -> _Subject | None:
        words = self.words(cs, ce)
        if not words:
            return None
        told = _HEARSAY_OPENER.match(self.text, words[0][1], ce)
        if told is not None:
            # "Rumor has it that Bob quit Google", "Word is Bob quit": what the speaker heard, theirs to
            # report as "I heard Bob quit Google" is; no "Rumor" holds it, and it is no fact of Bob's
            if self.assistant:
                return None
            return _Subject(self.me(), self.me_owner(), self.me(), told.end(), "heard", kind="me")
        w0, s0, e0 = words[0]
        low = w0.lower()
        nxt = words[1][0].lower() if len(words) > 1 else ""
        first_person = low in FIRST_SG or (low == "me" and nxt == "and")
        if first_person and low != "me":
            if self.assistant:
                return None
            own_words = self._own_words_reported(words)
            if own_words is not None:
                return own_words
            return _Subject(
                self.me(), self.me_owner(), self.me(), e0, _pluperfect(w0, words) or _contraction_prefix(w0),
                conj=True, kind="me",
            )  # fmt: skip
        if self.kin(w0.removesuffix("'s")) and nxt != "day" and not (len(words) > 1 and is_name_token(words[1][0]) and not self.kin(words[1][0])):
            # "Mom is moving", "Dad's a nurse": as "my mom" ("Mother Teresa", "Father's Day" are no relation)
            said = self._possessive([("my", s0, s0), *words], cs, ce)
            if said is None:
                return None
            own = "'s " + w0.removesuffix("'s")
            low_own = own.lower()
            return replace(
                said,
                subject=said.subject.replace(own, low_own, 1),
                owner=said.owner.replace(own, low_own, 1) if said.owner else said.owner,
                display=said.display.replace(own, low_own, 1),
            )
        if low in ("my", "me", "our") or first_person:
            if self.assistant:
                return None
            claimed = self._claimed_by_mine(words)
            return claimed if claimed is not None else self._possessive(words, cs, ce)
        if low in FIRST_PL:
            if self.assistant:
                return None
            disp = f"{self.me()} and others"
            pre = _pluperfect(w0, words) or _contraction_prefix(w0).replace("is", "are").replace("has", "have")
            return _Subject(self.me(), self.me_owner(), disp, e0, pre, kind="me")
        if low in SECOND or low == "your":
            if self.assistant:
                return None
            if low == "your":
                return self._yours(words)
            who = self.you()
            return _Subject(who, None, who, e0, _contraction_prefix(w0), conj=True, kind="you")
        if low in THIRD_SG:
            who = self._resolve_third(low)
            if who is not None and cs > self.sentence_start and not self._sole_named_before(low, who, cs):
                who = None
            if who is None:
                # "She showed me the importance of gratitude": someone the Record does not name, told as
                # the speaker's own experience only
                return None if self.assistant else self._pronoun_subject(words)
            return _Subject(who, self._third_owner(who), who, e0, _contraction_prefix(w0, words), kind="name")
        if low in ("they", "they're", "they've", "they'll") and self.group is not None and not self.assistant:
            # "My friends and mentors are my rocks - they motivate me": the speaker's people, just named
            pre = {"they're": "are", "they've": "have", "they'll": "will"}.get(low, "")
            owner = self.group if self.me_owner() else None
            return _Subject(self.group, owner, self.group, e0, pre, kind="relative")
        if self.assistant and any(
            t.lower() in FIRST_SG | FIRST_PL | SECOND | {"my", "me", "our", "us", "your", "yours"}
            for t, _, _ in words
        ):
            return None
        # a verb-initial clause after "and"/"but" inherits the previous subject
        if (
            prev is not None
            and prev.person
            and prev.sole
            and low not in MODALS
            and (low in _VERB_FORMS or _is_gerund(w0))
        ):
            # ("I'm 29, turning 30 in June": what will be, as "is turning 30" says it, of any subject)
            to_come = _AGE_TO_COME.match(self.text, s0) is not None
            pre = "is" if _is_gerund(w0) and ((prev.kind == "me" and not prev.prefix) or to_come) else ""
            return _Subject(
                prev.subject, prev.owner, prev.display, s0, pre, conj=prev.conj and not pre, kind=prev.kind
            )
        if low in ("it", "it's", "this", "that", "that's", "this's") and not self.assistant:
            return self._pronoun_subject(words)
        if low in _THEY and not self.assistant:
            if (
                low != "they'd"
                and self.topic is not None
                and self.topic[1]
                and self.sentence_no - self.topic_at <= _TOPIC_REACH
            ):
                # "Luna and Oliver! They are so sweet": the things just named
                shown = self.topic[0]
                return _Subject(shown, None, shown, e0, _THEY[low], person=False, kind="np")
            return self._pronoun_subject(words)
        if low in ("these", "those") and len(words) > 2 and not self.assistant:
            nxt = words[1][0].lower()
            if nxt.isalpha() and nxt not in _VERB_FORMS and nxt not in _NP_NEVER:
                # "These moments remind me of ...": a noun phrase, about the speaker when it says "me"
                return self._noun_phrase(words)
        if (
            low in ("there", "there's")
            and self.human
            and self.voice is None
            and (low == "there's" or nxt in _EXISTENTIAL_NEXT)
            and not any(w.lower() in _VAGUE_HEADS - {"nothing", "one"} for w, _, _ in _existential_head(words))
            and not _bare(" ".join(w for w, _, _ in words[1:]), 1)
        ):
            # "There were 7 people at the party": what the speaker reports, theirs to vouch for as told
            pre = ("has" if nxt in ("been", "got") else "is") if low == "there's" else ""
            return _Subject(self.me(), None, "there", e0, pre, person=False, kind="np")
        if low in ("both", "all") and not self.assistant:
            # "Both my parents live in Denver", "All of my friends are vegan": every one of the speaker's
            # people, as "my parents" is
            k = 2 if nxt == "of" else 1
            if len(words) > k + 1 and words[k][0].lower() in ("my", "our") and words[k + 1][0].lower() in _GROUP_NOUNS:
                return self._possessive(words[k:], cs, ce)  # ("All my life I ...": no people)
        if low in DROP_SUBJECTS:
            # "Some friends from church and I went camping": the speaker with others, however they open
            return self._together(words) if low in _QUANTIFIERS else None
        implicit = None if conj else self._implicit(words)
        if implicit is not None:
            return implicit
        # "Tom and I got divorced", "Sam and me went hiking"
        together = self._together(words)
        if together is not None:
            return together
        if self._imperative(words):
            return None  # "Stay motivated", "Rest assured", "Keep it up": advice, no subject
        # a name: "Bob likes tea", "Bob Smith's sister lives in Paris", "Bob said he likes tea"
        if (
            is_name_token(w0)
            and low not in ADVERBS
            and low not in MODALS
            and low.removesuffix("'s") not in _COMMON_NOUNS
        ):
            named = self._named(words, s0)
            if named is not False:
                return named
        return self._noun_phrase(words)

    def _imperative(self, words: list[tuple[str, int, int]]) -> bool:
        """A clause opening on a verb's base form with no verb of its own after it: an instruction.
        "Dance is my passion", "Travel makes me happy", "Mark said so": the word is the subject."""
        low = words[0][0].lower()
        if low not in _VERB_BASE_SET or words[0][0] in (self.speaker, self.self_name, self.addressee):
            return False
        if words[0][0] in self.persons:
            return False
        nxt = words[1][0].lower() if len(words) > 1 else ""
        if low in _COPULAR_IMPERATIVES and (nxt.endswith("ed") or _EVALUATIVE.fullmatch(nxt)):
            return True  # "Stay motivated", "Rest assured", "Stay strong"
        # "Keep it up", "Believe in yourself", "Push through": an object, a particle or nothing follows;
        # "Dance floors help" is a noun
        return nxt in _IMPERATIVE_NEXT or nxt in ADVERBS or not nxt

    def _named(self, words: list[tuple[str, int, int]], s0: int) -> _Subject | bool | None:
        """A clause opening on a name. False: the capitalised words are no name (read them as a noun)."""
        i = 0
        titled = s0
        if len(words) > 2 and words[0][0].lower() in _TITLES:
            # "Dr. Emily Chen", "Mr Smith": the person is the name, shown with the title it is given
            i = 2 if words[1][0] == "." else 1
            if not is_name_token(words[i][0].removesuffix("'s")):
                return None
            s0 = words[i][1]
        first = i
        while i < len(words) and i < first + 4 and is_name_token(words[i][0].removesuffix("'s")):
            if words[i][0].endswith("'s"):
                i += 1
                break
            i += 1
        name_end = words[i - 1][2]
        name = self.text[s0:name_end]
        if name.endswith(("'s", "\u2019s")):
            base = name[:-2]
            if i < len(words) and words[i][0].lower() in PERSON_NOUNS:
                noun = words[i][0]
                subject = f"{base}'s {noun}"
                return _Subject(subject, self._third_owner(subject, base), subject, words[i][2], kind="name")
            contracted = _contracted_verb(words, i)
            if contracted:
                # "Bob's moving to Oslo", "Carol's been at Acme since 2019": "Bob is", "Carol has"
                if base not in self.persons:
                    self.persons.append(base)
                return _Subject(base, self._third_owner(base), base, name_end, contracted, kind="name")
            # "Alice's blood type is O negative": an attribute of the person
            j = i
            while j < len(words) and j < i + 4 and words[j][0].lower() not in ("is", "are", "was", "were"):
                if not words[j][0].isalpha() or words[j][0].lower() in _FINITE:
                    return None
                j += 1
            if j == i or j >= len(words) or j == len(words) - 1:
                return None
            attr_words = [w.lower() for w, _, _ in words[i:j]]
            attr = "_".join(attr_words)
            plural = attr_words[-1] in _MULTI_NOUNS or (
                attr_words[-1].endswith("s") and not attr_words[-1].endswith("ss")
            )
            attr = _ATTR_ALIASES.get(attr, attr)
            told = self.text[words[j][2] : words[-1][2]].lstrip()
            when = self.times_in(told[:40])[:1] if attr != "birthday" else []
            if when and told[: max(0, when[0].start)].strip().lower() in ("", "in", "on", "at", "during"):
                attr = None  # "Tom's wedding is in June": when the event is, no value of Tom's ("in june")
            return _Subject(
                base,
                self._third_owner(base),
                f"{base}'s {' '.join(w for w, _, _ in words[i:j])}",
                words[j - 1][2],
                self_attr=attr,
                attr_single=not plural and attr not in ("likes",),
                kind="name",
            )
        if i >= len(words):
            return None
        named = i
        joined = self._names_joined(words, i, s0, name) if named == 1 else None
        if joined is not None:
            return joined
        i = _past_aside(words, i)  # "Tom (my neighbor) lost his job": the verb after the aside is Tom's
        if i >= len(words):
            return None
        known_from = _known_from(words, i) if named == 1 and not re.search(r"[^su'\u2019]s$", name) else None
        if known_from is not None and self.attribute_of(_expand(self.text[words[known_from][1] : words[-1][2]]), name):
            # "Kevin from accounting is 45", "Sarah from work lives in Boston": where the speaker knows
            # them from tells who is meant, and is said with the name (it read as a noun phrase, no one's).
            # Only when what follows is a person's attribute: "Pressure from work is killing me" is no one.
            i = known_from
            if name not in self.persons:
                self.persons.append(name)
            shown_end = words[i - 1][2]
            return self._reported(words, i, name) or _Subject(
                name, self._third_owner(name), self.text[s0:shown_end], shown_end, kind="name"
            )
        k = i
        while k + 1 < len(words) and k < i + 2 and words[k][0] in ADVERBS:
            k += 1  # "Kate just got a cat", "Bob, who is 50, recently moved": the verb after the adverb
        if k > i and _is_verb(words[k][0]):
            i = k
        verb = words[i][0].lower()
        if verb in _CLAIM_VERBS and i + 1 < len(words):
            # "Bob claims he quit his job": Bob's word for it as the speaker reports it, no fact of Bob's
            if self.assistant:
                return None
            if name not in self.persons:
                self.persons.append(name)
            me = self.me()
            return _Subject(me, self.me_owner(), f"{me} says {self.text[titled:name_end]}", name_end, kind="me")
        if (
            named == 1
            and verb in MODALS
            and name not in self.persons
            and re.search(r"[^su'\u2019]s$", name)
        ):
            return False  # "Mentors can really help", "Exams can be challenging": a plural noun
        # a person takes a singular verb: "Books have", "Pets make", "Strong support helps" are no names
        past = len(verb) > 4 and verb.endswith("ed")  # "Alice upgraded ...": any verb's past
        if verb not in _FINITE and not past and not (verb in _VERB_FORMS and verb not in _VERB_BASE_SET):
            return False
        if verb in ("have", "are", "were", "do", "don't", "aren't", "weren't", "haven't") and named == 1:
            return False
        if " " not in name and name.lower() in ADVERBS:
            return False
        if name not in self.persons:
            self.persons.append(name)
        return self._reported(words, i, name) or _Subject(
            name, self._third_owner(name), self.text[titled:name_end], name_end, kind="name"
        )

    def _names_joined(self, words: list[tuple[str, int, int]], i: int, s0: int, name: str) -> _Subject | None:
        """ "Jen and Tom work at Google", "Jen and Tom both moved to Austin": two people named, each with
        the clause's attribute (it was about "Jen and Tom", no one). The first is the subject, the second
        ``also`` (and each the other's partner: "Jen and Tom got married")."""
        between: list[str] = []  # "Kate, Bob and Tom live in Denver": the names listed before the last
        while i + 2 < len(words) and words[i][0] == "," and is_name_token(words[i + 1][0]) and len(between) < 6:
            between.append(words[i + 1][0])
            i += 2
        if between and words[i][0] == ",":
            i += 1  # "Kate, Bob, and Tom"
        if i + 2 >= len(words) or words[i][0].lower() not in ("and", "&") or words[i + 1][0] == "I":
            return None
        if not is_name_token(words[i + 1][0]) or words[i + 1][0].endswith("'s"):
            return None
        other_end = i + 2
        if other_end < len(words) and is_name_token(words[other_end][0]) and words[other_end][0] != "I":
            other_end += 1  # "Jen and Tom Smith"
        v = other_end
        while v < len(words) and words[v][0].lower() in ("both", "also", "still", "now", "just", "together"):
            v += 1
        verb = words[v][0].lower() if v < len(words) else ""
        if (verb not in _FINITE and verb not in _VERB_BASE_SET) or verb in _SINGULAR_ONLY:
            return None  # "Jen and Tom's house is ...", "Salt and Pepper is ...": no two people's verb
        other = self.text[words[i + 1][1] : words[other_end - 1][2]]
        others = (*between, other)
        if any(o in (name, self.speaker, self.self_name, self.addressee) for o in others):
            return None
        partner = None if between else other  # ("Kate, Bob and Tom got married" weds no two of them)
        predicate = _expand(self.text[words[other_end][1] : words[-1][2]])
        if not self.attribute_of(predicate, name, partner=partner):
            return None  # only a person's attribute tells two people from "Salt and Pepper make it better"
        if tense_of(predicate, verb_first=True) == "future" or _PLANNED.match(predicate):
            return None  # "Bob and Carol are getting divorced": a plan, no attribute, said of both
        for person in (name, *others):
            if person not in self.persons:
                self.persons.append(person)
        return _Subject(
            name,
            self._third_owner(name),
            self.text[s0 : words[other_end - 1][2]],
            words[other_end - 1][2],
            kind="name",
            partner=partner,
            also=others,
        )

    def _listed_under_another(self, at: int) -> bool:
        """Whether ``at`` is in a list item under a heading that names someone else ("Notes about Bob:\n-
        moved to Oslo"): the item's dropped subject is theirs, not the speaker's."""
        heading = self._list_heading(at)
        return heading is not None and heading[0] >= 0 and self._heading(heading[0])[0]

    def _listed_things(self, at: int) -> bool:
        """Whether ``at`` is in a list item under a heading of a list of things ("Bucket list:\n- ...")."""
        heading = self._list_heading(at)
        if heading is None or heading[0] < 0:
            return False
        known = self._item_headings.get(heading[0])
        if known is None:  # read once for its list, not once for each of its items
            known = self._item_headings[heading[0]] = self._heads_items(self.text[slice(*self._line_span(heading[0]))])
        return known

    @staticmethod
    def _heads_items(label: str) -> bool:
        """Whether ``label`` ("Reading list:", "Gift ideas:") heads a list of things (see _ITEM_HEADS)."""
        head = label.rstrip().removesuffix(":").rsplit(None, 1)[-1:]
        return bool(head) and head[0].lower() in _ITEM_HEADS

    def _heading_time(self, at: int) -> tuple[int, int] | None:
        """The span of the time that heads the list ``at`` is an item of ("Yesterday:\n- moved to Denver"),
        if the heading is one and no blank line ends the list before the item."""
        heading = self._list_heading(at)
        if heading is None or heading[0] < 0 or not heading[1]:
            return None
        return self._heading(heading[0])[1]

    def _line_span(self, k: int) -> tuple[int, int]:
        """Where line ``k`` starts and ends (before its line break)."""
        assert self._line_starts is not None
        starts = self._line_starts
        return starts[k], starts[k + 1] - 1 if k + 1 < len(starts) else len(self.text)

    def _list_heading(self, at: int) -> tuple[int, bool] | None:
        """The line that heads the list item ``at`` is in (-1: the text opens on the list), and whether no
        blank line parts the two; None when ``at`` is in no list item."""
        text = self.text
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        k = bisect_right(self._line_starts, at) - 1
        if not _LIST_ITEM.match(text, self._line_starts[k]):
            return None
        # Each item's answer is its list's: walked up once for a list, not once for each of its items.
        passed: list[tuple[int, bool]] = []  # the lines walked past, each with whether it is blank
        found = (-1, True)
        while k > 0:
            known = self._lists.get(k)
            if known is not None:
                found = known
                break
            s, e = self._line_span(k)
            passed.append((k, not text[s:e].strip()))
            k -= 1
            s, e = self._line_span(k)
            if not text[s:e].strip() or _LIST_ITEM.match(text, s):
                continue
            found = (k, True)
            break
        heading, adjacent = found
        for line, blank in reversed(passed):
            adjacent = adjacent and not blank
            self._lists[line] = (heading, adjacent)
        return self._lists[passed[0][0]] if passed else found

    def _heading(self, k: int) -> tuple[bool, tuple[int, int] | None]:
        """Whether the heading line ``k`` names someone else, and the span of the time it is (see
        _time_heading): read once for its list."""
        known = self._headings.get(k)
        if known is None:
            s, e = self._line_span(k)
            line = self.text[s:e]
            titled = line.rstrip().endswith(":")
            known = (titled and self._names_another(line), self._time_heading(s, e) if titled else None)
            self._headings[k] = known
        return known

    def _time_heading(self, s: int, e: int) -> tuple[int, int] | None:
        """The span of the time a heading line [s, e) is, before its colon, when it is nothing else
        ("Yesterday:", "On Monday:", "March 2022:", "Yesterday morning:"), read as a fronted time is (see
        _front); not "Notes about Bob:" or "Plans for June:", whose items are not told at that time."""
        text = self.text
        colon = text.rindex(":", s, e)
        start = s + len(text[s:colon]) - len(text[s:colon].lstrip())
        done = _DONE_IN.match(text, start, colon)
        start = done.end() if done else start
        if not 0 < colon - start <= _HEADING_TIME_CHARS:
            return None
        label = text[start:colon]
        lead = _BEFORE_TIME.match(label)
        first = next(iter(self.times_in(label)), None)
        if first is None or first.start > (lead.end() if lead else 0) or first.kind not in ("at", "since", "range"):
            return None
        end = start + first.end
        while (narrower := _TIME_OF_DAY.match(text, end, colon)) is not None:
            end = narrower.end()
        return (start, end) if not text[end:colon].strip() else None

    def _names_another(self, heading: str) -> bool:
        words = [w for w, _, _ in _words(heading, 0, len(heading)) if w not in (":", ",")]
        named = [w.removesuffix("'s") for w in words[1:]]
        if words and (words[0].endswith("'s") or len(words) == 1):
            named.append(words[0].removesuffix("'s"))
        own = {self.speaker, self.self_name}
        return any(is_name_token(w) and w not in own for w in named)

    def _pronoun_subject(self, words: list[tuple[str, int, int]]) -> _Subject | None:
        """ "It makes me feel ..." and "It's important to ...": about the speaker, or the speaker's view.
        Any other "it"/"that" clause says nothing we can place."""
        if not self.human:
            return None
        w0, _, e0 = words[0]
        toks = [w.lower() for w, _, _ in words]
        mine = bool(set(toks[1:]) & _PERSONAL) or (
            toks[0] in _THEY.keys() | THIRD_SG and bool(set(toks[1:]) & _OURS)
        )
        reported = _reported_clause(words, 1)
        if reported is not None and toks[reported] in _REPORTED_THIRD | _THEY.keys() | {"his", "her", "their"}:
            # "She told me she lives in Paris", "He told me his wife is a nurse": news of someone unnamed,
            # none of the speaker's
            return None
        if toks[0] in _THEY:
            # "They give me peace": unnamed people or things, told as the speaker's own experience only
            if not mine:
                return None
            return _Subject(self.me(), self.me_owner(), "They", e0, _THEY[toks[0]], kind="it")
        if toks[0] in THIRD_SG and not mine:
            return None
        opinion = (len(toks) > 3 and toks[1] in ("is", "was", "'s")) or w0.lower() in ("it's", "that's")
        if not (mine or opinion):
            return None
        prefix = _contraction_prefix(w0)
        after = [t for t in toks[1:4] if t not in ADVERBS]
        if prefix == "is" and after and after[0] in ("been", "got", "gotten"):
            prefix = "has"  # "It's been a significant part of my life"
        elif (
            prefix == "is"
            and len(toks) > 2
            and (toks[1] in IRREGULAR_PAST or toks[1].endswith("ed"))
            and toks[2] in _PERFECT_OBJECTS
        ):
            prefix = "has"  # "It's made a huge difference", "It's helped me" (not "It's made of wood")
        return _Subject(
            self.me(),
            self.me_owner(),
            w0[:1].upper() + w0[1:].lower().replace("'s", ""),
            e0,
            prefix,
            kind="it",
        )

    def _implicit(self, words: list[tuple[str, int, int]]) -> _Subject | None:
        """A human speaker's clause without a subject is the speaker's: "Been tweaking a recipe",
        "Busy with studies", "Had an audition yesterday", "Researching adoption agencies"."""
        if not self.human or self.voice is not None or self._listed_under_another(words[0][1]):
            return None
        if 0 <= self.items_from <= words[0][1] or self._listed_things(words[0][1]):
            return None  # "Bucket list: skydiving", "Gift ideas:\n- knitting": a thing listed, no doing
        k = 0
        while k < len(words) - 1 and words[k][0].lower() in _IMPLICIT_SKIP:
            k += 1
        tok = words[k][0].lower()
        s0 = words[0][1]
        me, owner = self.me(), self.me_owner()
        if tok in ("been", "gone"):
            if k + 1 < len(words) and words[k + 1][0].lower() in ("a", "an", "the", "such", "so", "quite"):
                return None  # "Been a busy week": it has been, not the speaker
            return _Subject(me, owner, me, s0, "has", kind="me", implicit=True)
        if tok in ("gonna", "going"):
            return _Subject(me, owner, me, s0, "is", kind="me", implicit=True)
        if (
            tok in _FEELING_VERBS
            and k + 1 < len(words)
            # ("Enjoy yourself!": a reflexive "yourself" says the dropped subject is "you", an order)
            and words[k + 1][0].lower() not in _PRONOUN_VALUES | {"yourself", "yourselves"}
        ):
            # "Love experimenting with spices.", "Appreciate the support": a feeling, not an order
            return _Subject(me, owner, me, s0, "", conj=True, kind="me", implicit=True)
        if tok in _IMPLICIT_NEGATIONS and k + 1 < len(words) and words[k + 1][0].isalpha():
            # "Tough tournament, didn't make it to the finals"
            return _Subject(me, owner, me, s0, "", conj=True, kind="me", implicit=True)
        if tok in ("can't", "cannot") and k + 1 < len(words) and words[k + 1][0].lower() == "wait":
            return _Subject(me, owner, me, s0, "", kind="me", implicit=True)  # "Can't wait to see them!"
        if (
            tok in _GIVEN_NAME_VERBS
            and words[k][0][:1].isupper()
            and (
                k + 1 >= len(words)
                or not words[k + 1][0][:1].isalpha()
                or _is_verb(words[k + 1][0])
                or words[k + 1][0].lower() in ("and", "&", "'s")
            )
        ):
            return None  # "Rose is a nurse", "Drew and I ...": a name, not "Alice rose"
        if tok in IRREGULAR_PAST and tok not in (
            "let",
            "put",
            "set",
            "cut",
            "hit",
            "read",
            "cost",
            "quit",
            "hurt",
            "shut",
            "upset",
        ):
            return _Subject(me, owner, me, s0, "", kind="me", implicit=True)
        if tok in ("quit", "hurt") and k + 1 < len(words) and words[k + 1][0].lower() in ("my", "our"):
            # "Quit my job today", "Hurt my back": an order would say "your"; the speaker's own past act
            return _Subject(me, owner, me, s0, "", kind="me", implicit=True)
        if tok.endswith("ed") and len(tok) > 4 and tok in _VERB_FORMS and tok not in _IMPLICIT_STATE:
            return _Subject(me, owner, me, s0, "", kind="me", implicit=True)
        if _LONG_AGO.fullmatch(self.text, s0, words[-1][2]):
            return None  # "Growing up, I ...", "Back in the day, I ...": a time of life
        if _is_gerund(words[k][0]) and _EVALUATIVE.fullmatch(tok) and k + 1 == len(words):
            return None  # "Inspiring!", "Amazing!": an exclamation, not what the speaker is doing
        if tok in _IMPLICIT_STATE or _is_gerund(words[k][0]):
            if _is_gerund(words[k][0]) and _gerund_subject(words, k):
                return None  # "Meeting new people can be ...": the gerund phrase is the subject
            if _is_gerund(words[k][0]) and self._labels_lines(words):
                return None  # "Meeting notes:", "Shopping list:": a label of the lines below, no activity
            if tok in ("so", "really", "super", "still", "now", "in") and not (
                k + 1 < len(words)
                and (words[k + 1][0].lower() in _IMPLICIT_STATE or _is_gerund(words[k + 1][0]))
            ):
                return None
            return _Subject(me, owner, me, s0, "is", kind="me", implicit=True)
        return None

    def _labels_lines(self, words: list[tuple[str, int, int]]) -> bool:
        """Whether the words are a line of their own ending in a colon, a list's item or not: a heading."""
        text = self.text
        line_start = text.rfind("\n", 0, words[0][1]) + 1
        line_end = text.find("\n", words[-1][2])
        rest = text[words[-1][2] : len(text) if line_end < 0 else line_end].strip()
        ends_line = rest == ":" or (not rest and words[-1][0] == ":")
        return ends_line and (not text[line_start : words[0][1]].strip() or _LIST_ITEM.fullmatch(text, line_start, words[0][1]) is not None)

    def _yours(self, words: list[tuple[str, int, int]]) -> _Subject | None:
        """ "Your support means a lot (to me)", "Your encouragement motivates me": what the person spoken to
        gives the speaker is the speaker's own experience. Any other "your X" is the addressee's
        belongings, too loose to attribute."""
        if not self.human or self.voice is not None:
            return None
        np = self._noun_phrase(words, yours=True)
        if np is None:
            return None
        pred = _expand(self.text[np.pred_start : words[-1][2]])
        if not ({w.lower() for w, _, _ in words} & _PERSONAL or _SIGNIFICANCE.match(pred)):
            return None
        return replace(np, subject=self.me(), owner=self.me_owner(), kind="yours")

    def _together(self, words: list[tuple[str, int, int]]) -> _Subject | None:
        """ "Tom and I got divorced": about the speaker, with the other person named in the statement."""
        for j in range(1, min(len(words) - 1, 9)):
            if words[j][0].lower() != "and" or words[j + 1][0].lower() not in ("i", "me"):
                continue
            v = j + 2
            while v < len(words) - 1 and words[v][0].lower() in ADVERBS:
                v += 1  # "Tom and I just got married"
            if v >= len(words) or words[v][0].lower() not in _VERB_FORMS:
                return None
            last = j - 1 if words[j - 1][0] != "," else j - 2  # "Kate, Bob, and I": the list's last comma
            if last < 0 or not all(t[0].isalpha() or t[0] == "'" or (t == "," and 0 < k < last) for k, (t, _, _) in enumerate(words[: last + 1])):
                return None
            # "Kate, Bob and I went hiking": each of the others, named as a list is
            parts = [self._rewrite_simple(p.strip()) for p in self.text[words[0][1] : words[last][2]].split(",")]
            if any(not p for p in parts):
                return None
            if not is_name_token(words[0][0]):
                parts[0] = parts[0][:1].lower() + parts[0][1:]  # "The kids and I" -> "Bob and the kids"
            me = self.me()
            if len(parts) == 1:
                shown = parts[0]
                return _Subject(
                    me, self.me_owner(), f"{me} and {shown}", words[j + 1][2], "", kind="me", partner=shown
                )
            shown = f"{', '.join(parts[:-1])} and {parts[-1]}"
            return _Subject(me, self.me_owner(), f"{me}, {shown}", words[j + 1][2], "", kind="me")
        return None

    def _noun_phrase(self, words: list[tuple[str, int, int]], *, yours: bool = False) -> _Subject | None:
        """ "The office is closed on Mondays", "Pottery is a huge part of my life", "Dance floors help
        avoid injuries": the words before the first finite verb name what the clause is about."""
        low = words[0][0].lower()
        if low in _NP_NEVER or low in _FINITE or not (words[0][0][:1].isalpha()):
            return None
        j = None
        head: str | None = None  # the noun a relative clause inside the subject follows
        names_listed = _names_listed(words)  # "Kate, Bob and Tom went hiking": the list is the subject
        for k in range(1, min(len(words), 13)):
            tok = words[k][0].lower()
            if tok == "," and (names_listed or _list_comma(words, k)):
                continue  # "A community where I'm accepted, loved and supported means ..."
            if tok == "-" and _inside_word(words, k):
                continue  # "Finding self-acceptance was ...": a hyphen inside a word ends no phrase
            if tok in (",", ";", ":", "-", "!", ".") or tok in ("when", "if", "because"):
                return None
            if tok in ("who", "which") and not _is_gerund(words[0][0]):
                return None  # "Being around people who share my love for it creates ...": an activity's people
            before = words[k - 1][0].lower()
            if before.endswith("'s") and (
                tok in _AFTER_IS
                or _EVALUATIVE.fullmatch(tok)
                # "The store's doing great" (not "The store's opening hours are ...": a verb follows)
                or (_is_gerund(tok) and not any(w.lower() in _FINITE for w, _, _ in words[k + 1 :]))
            ):
                # "Painting's a fun way to ...": the 's is "is" (or "has" before "been")
                np = self.text[words[0][1] : words[k - 1][2] - 2]
                shown = _common_case(self._rewrite_simple(np))
                pre = "has" if tok in ("been", "got", "gotten") else "is"
                if before.removesuffix("'s") in _VAGUE_HEADS:
                    return None
                return _Subject(shown, None, shown, words[k - 1][2], pre, person=False, kind="np")
            # the noun before any adverbs: "Turtles really bring me joy", "These guys sure bring me joy"
            b = k - 1
            while b > 0 and words[b][0].lower() in _SUBJECT_ADVERBS:
                b -= 1
            noun = head or words[b][0].lower()
            plural = (
                noun.endswith("s") and len(noun) > 3 and not noun.endswith(("ss", "'s", "us", "is"))
            ) or (
                k > 2 and words[k - 2][0].lower() in ("and", "&")  # "Creativity and family keep me ..."
            )
            activity_verb = (  # "Having a furry pal definitely brightens my days"
                _is_gerund(words[0][0])
                and k > 1
                and tok.endswith("s")
                and not tok.endswith("ss")
                and k + 1 < len(words)
                and words[k + 1][0].lower() in _PERSONAL_OBJECTS
            )
            if tok in _FINITE or (tok in _VERB_BASE_SET and plural) or activity_verb:
                if k > 1 and _agrees(before, tok):
                    # "The screenplay I sent in ...": a relative clause inside the subject; "These
                    # figurines I bought remind me ...": its noun says whether the verb is plural
                    head = head or words[k - 2][0].lower()
                    continue
                j = k
                break
        if j is None:
            return None
        while j > 1 and words[j - 1][0].lower() in _SUBJECT_ADVERBS:
            j -= 1  # "Life sure can be a roller coaster"
        np_words = words[:j]
        head = np_words[-1][0].lower().removesuffix("'s")
        resolved = (
            len(np_words) > 1
            and head in ("it", "them")
            and self._topic_for(head, np_words[-2][0]) is not None
        )
        if head in _VAGUE_HEADS and not resolved:
            return None  # "A lot's been going on", "Everything is great": nothing to hold on to
        if (
            not yours
            and any(w.lower() in SECOND | {"your", "yours"} for w, _, _ in np_words)
            and self.addressee is None
        ):
            return None
        np = self.text[words[0][1] : words[j - 1][2]]
        if low in ("his", "her", "their") and not (
            # "Their love gives me strength": what someone unnamed gives the speaker is the speaker's own
            # experience, as with "They give me peace"; anything else about them ("Her name is Shadow")
            # is about someone we cannot place
            self.human and self.voice is None and any(w.lower() in _PERSONAL for w, _, _ in words[j:])
        ):
            return None
        if low in ("our",):
            subject = f"{self.me()}'s {np.split(' ', 1)[1]}" if " " in np else None
            if subject is None:
                return None
            return _Subject(subject, self.me_owner(), subject, words[j - 1][2], person=False, kind="np")
        shown = self._rewrite_simple(np)
        shown = shown if self._names(np_words, words[j:]) else _common_case(shown)
        subject = shown
        return _Subject(subject, None, shown, words[j - 1][2], person=False, kind="np")

    def _names(self, np_words: list[tuple[str, int, int]], after: list[tuple[str, int, int]]) -> bool:
        """Whether a subject read as a noun phrase is names, kept capitalised: a person already named
        ("Bob"), names joined ("Bob and Carol are ..."), or a name with an adverb before its singular
        verb ("Bob never smokes"), as "Bob smokes" is read as a name."""
        toks = [w for w, _, _ in np_words]
        if not all(
            t in ("and", "&", ",")
            or (is_name_token(t) and t.lower() not in _COMMON_NOUNS | ADVERBS | MODALS)
            for t in toks
        ):
            return False
        if toks[0] in self.persons or toks[0] in (self.speaker, self.self_name, self.addressee):
            return True
        if len(toks) > 2 and toks[-2] in ("and", "&"):
            return True
        verb = next((w.lower() for w, _, _ in after if w.lower() not in _SUBJECT_ADVERBS), "")
        return (
            len(toks) == 1
            and bool(after)
            and after[0][0].lower() in _SUBJECT_ADVERBS
            and verb in _FINITE
            and verb not in _PLURAL_ONLY
            and not (verb in MODALS and re.search(r"[^su'\u2019]s$", toks[0]))
        )

    def _third_owner(self, who: str, base: str | None = None) -> str | None:
        """Third-person claims about the Brain's self establish its ownership only when the self says them
        or an application fact states them (see DESIGN: ownership); a claim about the person spoken to is
        the speaker's, never theirs."""
        if self.assistant:
            return None
        head = (base or who).casefold()
        if self.addressee and head == self.addressee.casefold() and self.voice is None:
            return None
        if (
            self.self_name
            and head == self.self_name.casefold()
            and not ((self.is_self and self.voice is None) or self.src.kind == "fact")
        ):
            return None
        return who

    def _claimed_by_mine(self, words: list[tuple[str, int, int]]) -> _Subject | None:
        """ "My sister claims she lives in Denver": what one of the speaker's people claims, as the
        speaker reports it (it was the sister's lives_in, read through "my sister claims she")."""
        if words[0][0].lower() not in ("my", "our"):
            return None
        k = next((k for k in range(2, min(len(words) - 1, 5)) if words[k][0].lower() in _CLAIM_VERBS), None)
        if k is None or not all(w.isalpha() for w, _, _ in words[1:k]):
            return None
        me = self.me()
        shown = self._rewrite_simple(self.text[words[0][1] : words[k - 1][2]])
        return _Subject(me, self.me_owner(), f"{me} says {shown}", words[k - 1][2], kind="me")

    def _own_words_reported(self, words: list[tuple[str, int, int]]) -> _Subject | None:
        """ "I told Bob I live in Denver", "I said that I'm moving": the speaker's own words, reported,
        are theirs to hold as said, the telling kept in the statement (whom they were told to holds
        nothing of it)."""
        if len(words) < 4 or words[1][0].lower() not in _OWN_WORDS_VERBS:
            return None
        j = 2
        if words[j][0].lower() in _RELATION_OWNERS:
            j += 2  # "I told my boss I'm quitting"
        else:
            while j < 5 and (words[j][0].lower() in _TOLD_OBJECTS or is_name_token(words[j][0])):
                if words[j][0].lower() in FIRST_SG:
                    break
                j += 1
        if j < len(words) and words[j][0].lower() == "that":
            j += 1
        if j + 1 >= len(words) or words[j][0].lower() not in FIRST_SG or words[j][0].lower() in ("me", "my"):
            return None
        if not words[j + 1][0][:1].isalnum():  # ("I told Bob I'm 30": a number told is words too)
            return None
        me = self.me()
        pron = words[j][0]
        prefix = _pluperfect(pron, words[j:]) or _contraction_prefix(pron)
        said = (prefix + " " if prefix else "") + self.text[words[j][2] : words[-1][2]].strip().rstrip(".!")
        if not self.attribute_of(_expand(said), me):
            return None  # ("I told Bob I love him": read as it was, the telling with what was told)
        told = self._rewrite_simple(self.text[words[1][1] : words[j][1]].rstrip())
        return _Subject(me, self.me_owner(), f"{me} {told} {me}", words[j][2], prefix, conj=True, kind="me")

    def _reported(self, words: list[tuple[str, int, int]], i: int, name: str) -> _Subject | None:
        j = _reported_clause(words, i)
        # "he"/"she" reported of the name is the name's own news; an "I" there is the speaker ("John told
        # me I work too much" is not John working too much), read as the clause it is, like "my sister
        # told me I look tired"
        if j is None or words[j][0].lower() not in _REPORTED_THIRD:
            return None
        pron = words[j][0]
        return _Subject(
            name, self._third_owner(name), name, words[j][2], _contraction_prefix(pron, words[j:]), kind="name"
        )

    def _possessive(self, words: list[tuple[str, int, int]], cs: int, ce: int) -> _Subject | None:
        words = _hyphens_joined(words)  # "my ex-husband", "my mother-in-law": one word each
        low = words[0][0].lower()
        me, owner = self.me(), self.me_owner()
        if low == "me" or low == "my":
            # "me and my sister", "my sister and I": true of the speaker; the other person is not attributed
            k = 0
            while (
                k < len(words)
                and k < 8
                and not _is_verb(words[k][0])
                # "My wife and I just bought ...": an adverb after "I" is the predicate's
                and not (k > 0 and words[k - 1][0].lower() in ("i", "me") and words[k][0].lower() in ADVERBS)
            ):
                k += 1
            np_toks = [t.lower() for t, _, _ in words[:k]]
            if "and" in np_toks and ({"i", "me"} & set(np_toks)) and k < len(words) and k >= 3:
                others = [w for w in words[:k] if w[0].lower() not in ("i", "me", "and")]
                other = self.text[others[0][1] : others[-1][2]] if others else ""
                shown = self._rewrite_simple(other)
                disp = f"{me} and {shown}" if other else me
                return _Subject(me, owner, disp, words[k - 1][2], "", kind="me", partner=shown or None)
            if low == "me":
                return None
        # "my [adj] noun [noun]'s? ..." up to the verb
        j = 1
        if (
            len(words) > 3
            and words[1][0].lower().endswith("ed")
            and words[2][0].isalpha()
            and not _is_verb(words[2][0])
            and words[2][0].lower() not in _NP_NEVER
        ):
            j = 2  # "our loved ones", "my used car": a participle before the noun
        elif (
            len(words) > 2
            and words[1][0].isalpha()
            and words[1][0].lower() in _VERB_BASE_SET
            and any(w.lower() in _FINITE for w, _, _ in words[2:12])
        ):
            j = 2  # "my dream is", "my own journey was", "my work has": after "my" a verb's form is a noun
        contracted = ""
        while (
            j < len(words)
            and j < 6
            # (after a second "my" a noun, though spelt as a verb: "my car and my bike got stolen")
            and (not _is_verb(words[j][0]) or (j > 1 and words[j - 1][0].lower() in _POSSESSIVE_DETERMINERS))
            and words[j][0] not in (",", "-", "(")
            and not (j > 1 and words[j][0].lower() in ADVERBS)  # "my turtles always cheer me up"
        ):
            if j > 1 and words[j - 1][0].lower().endswith("'s") and (contracted := _contracted_verb(words, j)):
                break  # "my mom's a nurse", "my brother's moving": the "'s" is the verb
            j += 1
        if j >= len(words) or j == 1:
            return None
        np_words = [w for w, _, _ in words[1:j]]
        np = self.text[words[1][1] : words[j - 1][2]]
        if contracted:
            np_words[-1] = np_words[-1][:-2]
            np = np[:-2]
        np_low = [_person_part(w.lower().removesuffix("'s")) for w in np_words]
        # "my dad and my uncle", "my sister and your brother": the other possessives in it said for whom
        np = self._rewrite_simple(np) if len(np_words) > 1 else np
        pre = contracted
        verb = words[j][0]
        if verb.startswith("'") or verb.lower() in ("s",):
            pre = _contraction_prefix(verb, words[j:])
        if low == "our":
            subject = f"{me}'s {np}"
            return _Subject(
                subject, owner, subject, words[j - 1][2], person=np_low[-1] in PERSON_NOUNS, kind="np"
            )
        if any(w in PERSON_NOUNS for w in np_low):
            # "my sister", "my best friend", "my dog's name": about that person (or pet), never the speaker
            k = next(i for i, w in enumerate(np_low) if w in PERSON_NOUNS)
            noun = " ".join(w.removesuffix("'s") for w in np_words[: k + 1])
            if k + 1 < len(np_low) and np_low[k + 1] in ("who", "that", "whom"):
                # "My friend who lives in Paris is a chef": the relative clause says which friend, and the
                # verb after it is the friend's (read from "lives", the home was "paris is a chef")
                g = j
                while g < len(words) and (_is_verb(words[g][0]) or words[g][0].lower() in ADVERBS):
                    g += 1
                while g < len(words) and words[g][0].lower() not in _FINITE:
                    if not words[g][0][:1].isalnum():
                        return None
                    g += 1
                if g >= len(words):
                    return None  # "My friend who lives in Paris.": no verb of the friend's own
                subject = f"{me}'s {noun}"
                shown = f"{me}'s {self._rewrite_simple(self.text[words[1][1] : words[g - 1][2]])}"
                return _Subject(subject, subject if owner else None, shown, words[g - 1][2], kind="relative")
            named = np_words[k + 1 :]
            m = j + 1
            while m < len(words) and m < j + 4 and is_name_token(words[m][0]):
                m += 1
            if (
                not named
                and k == len(np_low) - 1
                and not np_words[k].endswith("'s")
                and words[j][0] == ","
                and m > j + 1
                and m < len(words)
                and words[m][0] == ","
                and _verb_follows(words, m + 1) is not None
            ):
                # "My roommate, Kate, just got a cat": as "my roommate Kate" (the commas set the name off)
                name = self.text[words[j + 1][1] : words[m - 1][2]]
                return _Subject(
                    name, self._third_owner(name) if owner else None, f"{me}'s {np} {name}", words[m][2], kind="relative"
                )
            if named and not np_words[k].endswith("'s") and all(is_name_token(w.removesuffix("'s")) for w in named):
                # "my friend Sam visited": an apposition, so the fact is Sam's, told by the speaker
                name = " ".join(w.removesuffix("'s") for w in named)
                return _Subject(
                    name, self._third_owner(name) if owner else None, f"{me}'s {np}", words[j - 1][2], pre, kind="relative"
                )
            subject = f"{me}'s {noun}"
            attr = None
            if k + 1 < len(np_low) and np_words[k].endswith("'s"):
                rest = np_low[k + 1 :]
                # the relative's own name, age, birthday: the head of the phrase ("my son's full name"), no
                # word before another ("my son's birthday party" is on Saturday, not his birthday)
                attr = rest[-1] if rest[-1] in ("name", "age", "birthday") else None
                if attr is None:
                    # "My son's teacher moved to Rome", "My dad's company moved": about the whole chain,
                    # never the relative it starts from
                    chain = f"{me}'s {np}"
                    person = any(w in PERSON_NOUNS for w in rest)
                    return _Subject(
                        chain,
                        chain if owner and person else None,
                        chain,
                        words[j - 1][2],
                        pre,
                        person=person,
                        kind="relative" if person else "mine",
                    )
            if np_low[k] in ("husband", "wife", "spouse", "hubby") and k == len(np_low) - 1:
                attr = "married_to?"
            # "My mom and (my) dad live in Ohio": the clause as true of the second relation as of the first
            joined = np_low[k + 1 :]
            also: tuple[str, ...] = ()
            if (
                attr is None
                and joined[:1] == ["and"]
                and len(joined) in (2, 3)
                and joined[-1] in PERSON_NOUNS
                and (len(joined) == 2 or joined[1] == "my")
                and not np_words[-1].endswith("'s")
                and verb.lower() not in _SINGULAR_ONLY
            ):
                also = (f"{me}'s {np_words[-1]}",)
            told = _reported_clause(words, j) if attr is None and not also and k == len(np_low) - 1 else None
            pron = words[told][0] if told is not None else ""
            if pron.lower() in _REPORTED_THIRD - {"they"} and _gender_of(subject) in (None, _gender_of_pronoun(pron)):
                # "My sister said she moved to Paris": her own news, as "Sarah said she ..." is Sarah's
                return _Subject(
                    subject, subject if owner else None, f"{me}'s {np}", words[told][2],
                    _contraction_prefix(pron, words[told:]), kind="relative",
                )  # fmt: skip
            return _Subject(
                subject,
                subject if owner else None,
                f"{me}'s {np}",
                words[j - 1][2],
                pre,
                self_attr=attr,
                kind="relative",
                also=also,
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
            return _Subject(me, owner, f"{me}'s {np}", words[j - 1][2], pre, self_attr=attr, kind="me")
        subject = f"{me}'s {np}"
        return _Subject(subject, owner, subject, words[j - 1][2], pre, person=False, kind="mine")

    def _when_shown(self, s: int, e: int) -> str:
        """A fronted "When I retire" as it ends a statement: "when Alice retires"."""
        said = self.text[s:e].strip().rstrip(",")
        said = said[:1].lower() + said[1:]
        said = re.sub(
            r"\b(I|i)\s+([a-z]+)\b",
            lambda m: f"I {conjugate_3sg(m.group(2)) if m.group(2) in _VERB_BASE_SET else m.group(2)}",
            said,
        )
        return re.sub(r"\bwe\b", f"{self.me()} and others", self._rewrite_simple(said), flags=re.I)

    def _rewrite_simple(self, s: str | None) -> str:
        if not s:
            return ""
        me = self.me()
        out = re.sub(r"\b(?:my|our|mine|ours)\b", f"{me}'s", _norm(s), flags=re.I)  # ("a friend of mine")
        # "where I'm accepted" -> "where Caroline is accepted", not "Caroline'm"
        out = _PERSON_CONTRACTION.sub(lambda m: f"{m.group(1)} {_CONTRACTED[m.group(2).lower()]}", out)
        out = re.sub(rf"\bI\b|\b{_LOWER_I}", me, out)
        out = re.sub(r"\b(?:me|myself)\b", me, out, flags=re.I)
        if self.topic is not None and re.search(r"\b(?:it|them)\b", out, re.I):
            out = self._topic_objects(out)
        # (a phrase with "you" in it reaches here without a name for them only as the speaker's experience)
        you = self.you()
        if not re.search(r"\b(?:you|your|you['\u2019](?:re|ve|ll|d))\b", out, re.I):
            out = re.sub(r"\byourself\b", "oneself", out, flags=re.I)  # "Taking care of yourself helps"
        out = _PLURAL_YOU.sub(f"{you} and others", out)
        out = re.sub(r"\byour\b", f"{you}'s", out, flags=re.I)
        return re.sub(r"\byou\b", you, out, flags=re.I)

    def _topic_objects(self, text: str) -> str:
        """ "Playing it" -> "Playing guitar": objects that stand for the topic (see _topic_for)."""
        return re.sub(
            r"\b([\w']+)(\s+)(it|them)\b",
            lambda m: (
                m.group(1)
                + m.group(2)
                + (self._topic_for(m.group(3).lower(), m.group(1), _next_word(m.string, m.end())) or m.group(3))
            ),
            text,
            flags=re.I,
        )

    # ---- statements and attributes
    def _past_interruption(self, subj: _Subject, cs: int, ce: int) -> _Subject:
        """A person's subject with an aside between it and its verb ("Bob, who is 50, works at Acme", "My
        neighbour Tom, a dentist, just moved to Austin", "My boss (who is a jerk) got fired"): the verb
        after the aside read as the person's, and the aside, when it says what the person is ("who is 50",
        "a dentist"), emitted as a claim of its own. Read with the aside, the predicate opened on a comma
        or a bracket and made nothing."""
        words = self.words(subj.pred_start, ce)
        if len(words) < 4 or subj.frame is not None or subj.kind not in ("name", "relative"):
            return subj
        closer = "," if words[0][0] == "," else _ASIDE_CLOSERS.get(words[0][0])
        if closer is None or closer == ";":
            return subj
        close = next((k for k in range(2, min(len(words), 14)) if words[k][0] == closer), None)
        if close is None or close + 1 >= len(words):
            return subj
        first = words[1][0].lower()
        inner = [w.lower() for w, _, _ in words[2:close]]
        relative = first in ("who", "whose", "which")
        # ("a retired teacher": a participle before the noun is no verb)
        finite = any(w in _FINITE and not (n == 0 and w.endswith("ed")) for n, w in enumerate(inner))
        # "My sister, not me, is vegan", "Bob, not Carol, lives in Denver": the one denied is no part of
        # the claim, and the "not" denies nobody's predicate
        instead = first == "not" and not finite and close <= 5
        if not relative and not instead and (first not in _ARTICLES_LOW or finite):
            return subj  # neither a relative clause nor a noun naming the person
        k = close + 1
        while k < len(words) - 1 and words[k][0].lower() in ADVERBS:
            k += 1
        if not _is_verb(words[k][0]):
            return subj
        if instead:
            return replace(subj, pred_start=words[close][2], aside=(words[0][1], words[close][2]))
        said = replace(subj, pred_start=words[1][2] if relative else words[1][1], prefix="" if relative else "is")
        told = _expand(f"{said.prefix} {self.text[said.pred_start : words[close][1]]}")
        # "Kate, my roommate, ...", "Kate (my roommate) ...": who she is to the speaker, "Kate is Alice's
        # roommate", is worth as much as what the clause says of her
        relation = first in ("my", "our") and any(w.removesuffix("'s") in PERSON_NOUNS for w in inner)
        if relation or (first in ("who", "a", "an") and self.attribute_of(told, subj.subject) is not None):
            # "who is 50" is "Bob is 50"; "a dentist" is "Tom is a dentist" ("whose wife ..." is the wife's,
            # and "who is a jerk" a view, which the clause without the aside does not need)
            self._emit(said, cs, words[close][1])
        return replace(subj, pred_start=words[close][2], aside=(words[0][1], words[close][2]))

    def _emit(self, subj: _Subject, cs: int, ce: int) -> bool:
        """Append the clause's Assertion, if it makes one. False: the clause is a possibility or advice
        (a verb joined to it by "and" shares that)."""
        text = self.text
        ps = subj.pred_start
        pred_raw = text[ps:ce]
        if not pred_raw.strip() and not subj.prefix:
            return True
        pred_exp = _expand((subj.prefix + " " if subj.prefix else "") + pred_raw.strip().lstrip("'"))
        pred_exp = _CONTRACTION_LEFT.sub("", pred_exp) if not subj.prefix else pred_exp
        habit = self._past_habit(subj, pred_exp, cs, ce)
        if habit is not None:
            subj = habit
            pred_exp = _expand(subj.prefix + " " + text[subj.pred_start : ce].strip())
        if (
            _MODAL_HEAD.match(pred_exp)
            and subj.kind not in ("it",)
            and not (subj.kind in ("me", "relative", "mine") and _LIKELY_PAST.match(pred_exp))
        ):
            return False  # "I could try", "you should go": what might be is no fact
        clause_words = {
            w.lower() for w, ws, _ in self.words(cs, ce) if subj.aside is None or not subj.aside[0] <= ws < subj.aside[1]
        }
        after = {w.lower() for w, _, _ in self.words(subj.pred_start, ce)}
        # a part of the speaker's people is not the speaker: "None of my friends live in Paris", "Half of
        # my team works at Google" tell of them, not of the speaker's own experience
        counted = subj.kind == "np" and bool(_PART_OF.match(subj.display))
        # "The guy I met at the gym works at Google", "The dog I adopted loves walks": the speaker inside
        # the subject (a clause of its own) says who the subject is, not that what follows is theirs
        within = self.words(subj.front[1] if subj.front else cs, subj.pred_start)
        counted = counted or (subj.kind == "np" and any(w.lower() in FIRST_SG for w, _, _ in within))
        # ... and so does a person placed by the speaker: "A friend of mine moved to Denver", "The guy next
        # to me works at Google", "The kids in my class are from Ohio" tell of them, none of it the speaker's
        # ("Losing my job was hard", no person, is the speaker's own experience)
        counted = counted or (subj.kind == "np" and _places_a_person_by_me(within))
        mentions_me = self.human and (
            (bool((after if counted else clause_words) & _PERSONAL) and subj.kind in ("np", "it", "name"))
            # "He taught us a lot", "They give us peace": the speaker's people's experience
            or (subj.kind == "it" and subj.display in _UNNAMED and bool(clause_words & _OURS))
            or (subj.kind in ("relative", "mine") and bool(after & _PERSONAL))
        )
        if _QUOTATIVE.match(pred_exp) and after & _SECOND_WORDS:
            # "My mom was like u should move to Denver": her words as she said them, and their "you" is
            # whom she said them to, not the one the speaker talks to
            return True
        evaluative = _evaluative_in(pred_exp)
        aim = _AIM.match(pred_exp) if subj.kind == "it" and subj.display == "It" and self.human else None
        if aim is not None and (aim.group("been") or aim.group("my") or aim.group("mine")) and self.voice is None:
            # "It's been a dream to adopt ...": the speaker's aim, whatever the pronoun stood for
            to = next((t for t in self.words(subj.pred_start, ce) if t[0].lower() == "to"), None)
            if to is not None:
                verb = {"is": "is", "was": "was"}.get(aim.group(1).lower(), "has been")
                shown = f"{self.me()}'s {aim.group(4).lower()} {verb}"
                subj = replace(subj, display=shown, prefix="", pred_start=to[1], kind="me")
                mentions_me = True
        # who the statement is about and whose it is (attribution.py)
        if subj.kind == "you":
            if _ADVICE.match(pred_exp):
                return False  # "You can use coconut oil": advice, no fact
            if _bare(pred_exp):
                return True  # "You've got guts!": praise or a reaction, nothing to remember
            if evaluative:
                if self.addressee is None or not self.human:
                    return True  # praise of nobody we know
                subj = _frame(subj, self.me(), self.me_owner(), "thinks")
        elif subj.kind == "relative" and self.human and self.voice is None and _LOSS.match(pred_exp):
            # "My grandma passed away": a bereavement is the speaker's own experience, so it is theirs to
            # vouch for; the statement stays about the relative, whose attributes never become the speaker's
            subj = replace(subj, owner=self.me_owner())
        elif (
            subj.kind in ("relative", "mine")
            and self.human
            and self.voice is None
            and (mentions_me or evaluative)
        ):
            # "My family motivates me": the speaker's experience; "My family is awesome": their view
            if mentions_me:
                subj = replace(subj, owner=self.me_owner())
            elif not _bare(f"{subj.display} {pred_exp}", 2):
                subj = _frame(subj, self.me(), self.me_owner(), "thinks")
        elif subj.kind in ("np", "it", "name") and self.human and self.voice is None:
            if mentions_me:
                # the speaker's own experience ("Pottery is a huge part of my life", "Sam visited me"):
                # theirs to vouch for; about them unless it names someone else
                subject = subj.subject if subj.kind == "name" else self.me()
                subj = replace(subj, subject=subject, owner=self.me_owner())
            elif subj.kind == "it":
                if not evaluative or _bare(pred_exp):
                    return True
                subj = _frame(subj, self.me(), self.me_owner(), "thinks")
            elif evaluative:
                # an activity judged ("Volunteering is a great way to meet people") says what the speaker
                # thinks of doing it; a thing or a person judged needs more to be more than a reaction
                activity = subj.kind == "np" and _is_gerund(subj.display.split(" ", 1)[0])
                if _bare(f"{subj.display} {pred_exp}", 2 if activity else 3):
                    return True  # "The love around you is awesome", "Books have such an awesome power"
                subj = _frame(subj, self.me(), self.me_owner(), "thinks")
            elif subj.kind == "np":
                subj = _frame(subj, subj.subject, self.me_owner(), "says")
        elif subj.kind == "it":
            return True
        tense = tense_of(pred_exp, verb_first=True)
        exprs = self._times_told(cs, ce, pred_exp, tense)
        long_ago = self._long_ago(cs, ce)
        # ("I was born in August": the speaker's month of birth, of a year long before they could say it)
        own_birth = subj.kind == "me" and _BORN.search(text, cs, ce) is not None
        if _YEARLY_DAY.search(text, cs, ce) or _HABITUAL.search(text, cs, ce) or long_ago or own_birth:
            # the day of the year it falls on, not a time of the statement: said as it was, no year added
            # ("At Christmas we usually watch movies": each Christmas, not the last one; "When I was a kid
            # we moved after Christmas": a Christmas of that time, not the last one)
            exprs = [replace(x, kind="recurring", relative=False) if x.yearless else x for x in exprs]
        elif tense == "present" and not looks_ahead(pred_exp, tense):
            # the simple present of a habit or a state, neither a plan nor "be"/"have" ("I live in Denver
            # during the summer", "I swim in June"): a season or a month without a year is each one, no
            # date the state began (one already gone would be told in the past, one to come as a plan)
            exprs = [
                replace(x, kind="recurring", relative=False) if x.yearless and x.period in ("season", "month") else x
                for x in exprs
            ]
        elif not exprs and subj.front is None and (heading := self._heading_time(cs)) is not None:
            # "Yesterday:\n- moved to Denver": an item of a list a time heads, which names no time of its
            # own, is told at that time, as "Yesterday, I moved to Denver" is (its offsets, from the clause's
            # start, fall before it)
            before = heading[0] - cs
            exprs = [replace(x, start=x.start + before, end=x.end + before) for x in self._times_told(*heading, pred_exp, tense)]
            if exprs:
                subj = replace(subj, front=heading)
        attr = value = None
        negated = change = ending_denied = denied = formerly = False
        found = None
        if subj.self_attr and subj.self_attr != "married_to?":
            m = re.match(r"^\s*(?:is|are|was|=|:)\s+(.+)$", pred_exp, re.I)
            if m:
                found = (subj.self_attr, _clean_value(m.group(1), subj.self_attr != "likes"), False, False, 0)
        elif subj.self_attr == "married_to?":
            m = re.match(r"^\s*is\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s*$", pred_exp)
            if m and is_name_token(m.group(1).split()[0]):
                found = ("married_to", m.group(1).lower(), False, False, 0)
                subj = replace(subj, subject=self.me(), owner=self.me_owner(), kind="me")
        # "Alice, you live in Boulder now, right?": a check, not a claim; and "you" with nobody named for
        # it is no one person (two speakers' "you" are two people): neither is an attribute of anyone
        checked = subj.kind == "you" and (self.tagged or self.addressee is None)
        if checked and self.tagged and self.addressee is None:
            # "You live in Denver, right?": a guess put to nobody named, to be confirmed or not; as a
            # statement it was "The other person lives in Denver.", said as fact of no one ("aren't
            # you?", "no?" ask it too, and make nothing)
            return True
        if found is None and subj.frame is None and not checked and not subj.proposed:
            found = self.attribute_of(pred_exp, subj.subject, partner=subj.partner)
        if found is not None and found[1]:
            attr, value, negated, change, vstart = found
            pre_value = pred_exp[:vstart]
            denied = bool(_NEG.search(pre_value)) and not _NEG_EXCEPT.search(pred_exp)
            # "I never quit my job at Google", "I haven't moved out of Berlin": the ending denied, the
            # value holds, and nothing changed (it was read as ended, closing the job or the home)
            ending_denied = negated and change and denied
            negated = not negated if ending_denied else negated or denied
            if attr == "job" and (former := _FORMER.match(pred_exp, vstart)) is not None:
                # "I'm a former nurse", "a retired teacher": the job held once, as "I used to be a nurse"
                value, vstart, formerly = _FORMER.sub("", value, count=1), former.end(), True
        else:
            attr = value = None
            # "I'm happy, not sad": the denied alternative is no denial of the clause
            affirmed = _DENIED_ALTERNATIVE.sub("", pred_exp)
            negated = bool(_NEG.search(affirmed)) and not _NEG_EXCEPT.search(affirmed)
            # "My family is always there for me": being there for the speaker is support, however few its
            # words ("My sister told me" stays nothing)
            # ("I'll always be there for you", "I'm here for you": the speaker's support of someone)
            support = (subj.kind == "relative" and mentions_me and bool(_THERE_FOR.search(pred_exp))) or (
                subj.kind == "me" and self.human and bool(_HERE_FOR.match(pred_exp))
            )
            # "Pottery means a lot to me", "Your support means the world": what something is worth to
            # the speaker, however few its words ("It means a lot" says nothing of what)
            significant = subj.kind not in ("it", "you") and bool(_SIGNIFICANCE.match(pred_exp))
            if not self._contentful(pred_exp) and not support and not significant:
                return True
        # what the predicate says before a clause of time of its own ("I was a teacher for ten years before
        # I became a writer": the change, the acquiring, is the other clause's)
        own = _CLAUSE_OF_TIME.search(pred_exp)
        own_end = own.start() if own else len(pred_exp)
        change = (change or bool(_CHANGE.search(pred_exp, 0, own_end))) and not ending_denied
        if change and negated and not _ENDING.search(pred_exp):
            # "I didn't move to Berlin", "I never joined Google": an event denied changed nothing, and a
            # denial of the value held must not end it (it disputes it)
            change = False
        if attr is None and not _LETTER.search(pred_exp):
            return True
        statement = self._statement(subj, cs, ce, exprs)
        if not statement:
            return True
        if subj.kind == "yours" and not after & (_PERSONAL | _OURS):
            # "Your support means a lot": to the speaker, who says so
            statement = _SIGNIFICANCE_WORDS.sub(lambda m: f"{m.group(0)} to {self.me()}", statement, count=1)
        # a state the past tense says is over ("I lived in Oslo"); liking something in the past
        # ("they loved the lions") is how an experience went, not a taste that ended, unless it "used to"
        # be ("I used to love sushi": over, as any state said so)
        used_to = bool(_USED_TO.search(pred_exp))
        habit_once = found is not None and not found[3] and not used_to
        if attr == "does" and tense == "past" and habit_once:
            attr = value = None  # "I got to teach a class": a thing done once, not a habit
        state = (
            attr is not None
            and (attr != "likes" or used_to)
            and not (found is not None and found[3])
            and not _ACQUIRED.search(pred_exp, 0, own_end)  # "I got a puppy": the having starts, it does not end
        )
        # (of a person: a view of an event, "Andrew thinks Friday night was a nice break", is no condition)
        person = subj.person and subj.frame is None and subj.kind not in ("np", "it")
        held = person and (
            (attr is None and self._held(pred_exp, ps, exprs))
            # "I'm staying in Denver this weekend / tonight": a stay, over with the day or the week named
            or (
                attr == "lives_in"
                and _STAYING.match(pred_exp) is not None
                and len(exprs) == 1
                and exprs[0].kind == "at"
                and exprs[0].period in ("day", "week")
            )
        )
        # a time to come ("I'm moving to Denver later this year", "I'll be in Paris this week") starts no
        # earlier than it was said, though the period it names began before
        later = any(_later_before(text, cs, cs + x.start) for x in exprs)
        ahead = tense == "future" or (tense == "progressive" and change) or later
        valid_from, valid_to, stated = resolve(
            exprs, self.src.occurred_at, tense=tense, state=state, held=held, ahead=ahead
        )
        if formerly and not stated:
            valid_from, valid_to = UNKNOWN_START, self.src.occurred_at
        if attr == "from":
            valid_to = None  # "I grew up in Ohio": growing up there is over, being from there never is
        told_past = False
        if not stated and not _RECENT.search(text, cs, ce):
            told = f"{text[subj.front[0] : subj.front[1]]} {pred_exp}" if subj.front else pred_exp
            if tense == "perfect" and _SINCE_EVENT.search(told):
                # "I've lived in Denver since college": from some time before it was said, not from then
                valid_from = UNKNOWN_START
            elif (
                tense == "past"
                and change
                and (self.event_fronted or _EVENT_TIME.search(told) or long_ago)
            ):
                # "I moved to Denver when I was 25": a change of the past at a time no rule dates, which
                # would close the home held now at the time it was said: a plain statement of the past
                attr = value = None
                valid_from, told_past = UNKNOWN_START, True
            elif tense == "past" and attr == "likes" and long_ago:
                # "I loved dinosaurs as a kid", "I hated broccoli when I was little": a taste of then,
                # none known of now (the value had the time in it: "dinosaurs as a kid"); the dislike
                # denied no liking but the statement's words, which tell it
                attr = value = None
                valid_from, told_past, negated = UNKNOWN_START, True, False
        if attr == "birthday":
            # a day of every year, whenever and however it was told ("next Tuesday", "June 3rd",
            # "yesterday"): the value is that day ("may 9"), which neither a later mention of it in
            # other words contradicts, nor the day's passing ends; and it is known from when it is told,
            # not from the day it next falls on
            # ("this weekend", "next week", "coming up", "on a Tuesday" name no day of the year: no value;
            # "last month" names its month)
            day = next(
                (x.when for x in exprs if x.period == "day" and x.kind != "range" and "weekend" not in x.text.lower()),
                None,
            )
            month = next((x.when for x in exprs if x.period == "month" and x.kind != "range"), None)
            if day is not None:
                value = f"{calendar.month_name[day.month].lower()} {day.day}"
            elif month is not None:
                value = calendar.month_name[month.month].lower()
            elif value and _MONTH_DAY_VALUE.match(re.sub(r"^(?:on|in)\s+", "", value)):
                value = re.sub(r"^(?:on|in)\s+", "", value)  # "June" with no "in": the month
            else:
                attr = value = None
            valid_from, valid_to = min(valid_from, self.src.occurred_at), None
        if attr is not None and change and not stated and (tense == "future" or _PLANNED.match(pred_exp)):
            # "I'm moving to Oslo soon", "I'll quit my job at Acme": a plan, not yet a fact, and no time
            # says when it comes: a new value would end the one held now. Kept as said, a plain statement
            # (with a time it is the change at that time: "I'm moving to Berlin in two weeks")
            attr = value = None
        if attr is not None and denied and not ending_denied and (
            tense == "future" or _PLANNED.match(pred_exp) or _GETTING.match(pred_exp)
        ):
            # "I'm not moving to Denver (next month)", "We won't get a dog": a plan denied tells nothing of
            # where the subject lives or what they have, at any time ("Alice does not live in Denver" was
            # said of a plan given up)
            attr = value = None
        if (
            attr is not None
            and attr != "likes"
            and not stated
            and (tense == "future" or (attr == "has_pet" and _GETTING.match(pred_exp)))
        ):
            # "I'll work at Stripe", "When I move I'll get a dog", "I'm getting a puppy": what will be, not
            # what is (with a time it holds from then: "I'll work at Stripe from June"); a taste is now
            # ("I'll always love sushi")
            attr = value = None
        single = attr in SINGLE_VALUED or (attr is not None and attr == subj.self_attr and subj.attr_single)
        job_ended = (
            attr is None
            and not told_past
            and not negated
            and subj.person
            and subj.frame is None
            and tense != "future"
            and not _PLANNED.match(pred_exp)
            and _JOB_ENDED.match(pred_exp) is not None
        )
        self._append(
            Assertion(
                statement=statement,
                subject=subj.subject,
                owner=subj.owner,
                attribute=attr,
                value=value,
                single_valued=single,
                change=change or job_ended,
                negated=negated,
                valid_from=valid_from,
                valid_to=valid_to,
                span=(cs, ce),
                time_stated=stated,
                corrective=self.corrective,
                left="" if job_ended else None,
            )
        )
        if attr == "job" and value and not negated and self.out and self.out[-1].statement == statement and self.out[-1].attribute == "job":
            at = len(self.out) - 1
            self._employer_of_job(self.out[at], pred_exp, vstart)
            self._more_of_job(at, pred_exp, vstart)
        if attr == "birthday" and value and not negated and self.out and self.out[-1].statement == statement:
            self._birthplace(self.out[-1], pred_exp, vstart)
        if attr == "has_pet" and value and self.out and self.out[-1].statement == statement and self.out[-1].attribute == attr:
            self._more_pets(self.out[-1], pred_exp, vstart)
        if subj.also and attr is not None:
            # "Jen and Tom work at Google": as true of Tom, in the same words (appended past _append's check)
            said = [a for a in self.out if a.statement == statement and a.subject == subj.subject and a.attribute]
            for assertion, other in ((a, o) for a in said for o in subj.also):
                value_of_also = subj.subject.lower() if assertion.attribute == "married_to" else assertion.value
                also = replace(assertion, subject=other, owner=self._third_owner(other), value=value_of_also)
                if also not in self.out:  # (the same sentence said twice in the Record: once)
                    self.out.append(also)
        return True

    def _times_told(self, s: int, e: int, pred_exp: str, tense: str) -> list[Any]:
        """The time expressions of [s, e) (a clause, or the time heading its list: see _heading_time), read
        ahead or back as the clause's predicate looks ("On Monday:\n- I quit": the Monday past)."""
        return self.times_in(
            self.text[s:e],
            future=looks_ahead(pred_exp, tense),
            weekdays_ahead=ahead_unless_past(tense),
            bounds_ahead=ahead_unless_past(tense),
        )

    def _held(self, pred_exp: str, ps: int, exprs: list[Any]) -> bool:
        """Whether the predicate is a condition "be" says of its subject ("is OOO", "am WFH", "will be out",
        "is in Tokyo") at the one time the clause names, which then bounds it (see timeexpr.resolve):
        not an event ("was promoted", "is moving", "is back"), nor a time a clause inside it names ("am
        glad that we met yesterday")."""
        m = _HELD.match(pred_exp)
        if m is None or len(exprs) != 1:
            return False
        word = m.group("w").lower()
        if word.endswith(("ing", "ed")) or word in IRREGULAR_PAST:
            return False
        between = {w.lower() for w, _, _ in self.words(ps, exprs[0].start)} if exprs[0].start > ps else set()
        return between.isdisjoint(_HELD_INNER)

    def _employer_of_job(self, job: Assertion, pred_exp: str, vstart: int) -> None:
        """ "I'm a software engineer at Google", "Bob works as a lawyer for Skadden": where the job is held
        is a second fact of the statement, the employer (read as "works at Google" reads), which a schema's
        `employer` and the profile ask for. Not of "a student at NYU" or "a volunteer at the Red Cross",
        who study or help there, nor of "a nurse at night" (a named place only)."""
        assert job.value is not None
        if job.value.split()[-1] in _NOT_EMPLOYED:
            return
        held = r"\s+".join(re.escape(word) for word in job.value.split())
        m = re.match(
            rf"(?i:(?:an?|the)\s+)?(?i:{held})\s+(?P<at>(?i:at|for)\s+(?:[Tt]he\s+)?[A-Z].*)$",
            pred_exp[vstart:],
        )
        found = m and self.attribute_of(f"work {m.group('at')}", job.subject)
        if not found or found[0] != "works_at" or found[2]:
            return
        # the job's statement and time: one sentence, two of its facts (statements are otherwise unique
        # in a Record, so it is appended past _append's check)
        self.out.append(replace(job, attribute="works_at", value=found[1], single_valued="works_at" in SINGLE_VALUED))

    def _birthplace(self, birthday: Assertion, pred_exp: str, vstart: int) -> None:
        """ "I was born on June 3 in Ohio": where, after the day, is a second fact of the statement, read as
        "born in Ohio" reads (see _employer_of_job)."""
        m = _PLACE_AFTER_DAY.search(pred_exp, vstart)
        found = m and self.attribute_of(f"was born in {m.group('place')}", birthday.subject)
        if found and found[0] == "from" and found[1] and not found[2]:
            self.out.append(replace(birthday, attribute="from", value=found[1], single_valued=True, valid_to=None))

    def _more_pets(self, pet: Assertion, pred_exp: str, vstart: int) -> None:
        """ "I've got 2 cats and a dog", "We have a dog, a cat and a parrot": each pet of the list is a fact
        of the statement, had (or not) as the first is."""
        first = _PET_END.match(pred_exp, vstart)
        pos, seen = (first.end() if first else len(pred_exp)), {pet.value}
        while True:
            named = _PET_NAMED.match(pred_exp, pos)
            more = _MORE_PET.match(pred_exp, named.end() if named else pos)
            if more is None:
                break
            pos, value = more.end(), more.group("v").lower()
            if value not in seen:
                seen.add(value)
                self.out.append(replace(pet, value=value))  # one statement, two of its facts (see _employer_of_job)

    def _more_of_job(self, at: int, pred_exp: str, vstart: int) -> None:
        """ "a 34-year-old architect who lives in Chicago", "a teacher from Ohio who now lives in Seattle":
        the age before the job, where the person is from and what a "who" clause after it says of them
        are facts of the statement as much as the job is (read as "is 34", "is from Ohio", "lives in
        Chicago" read), and the age is no part of the job."""
        job = self.out[at]
        if job.attribute != "job" or job.value is None:
            return
        aged = re.match(r"(\d{1,3})[\s-]+years?[\s-]+old\s+(?=\w)", job.value)
        if aged is not None:
            job = replace(job, value=job.value[aged.end() :])
            self.out[at] = job
            self.out.append(replace(job, attribute="age", value=aged.group(1), single_valued=True, change=False))
        held = r"\s+".join(re.escape(word) for word in (job.value or "").split())
        m = re.match(
            rf"(?i:(?:an?|the)\s+)?(?:\d{{1,3}}[\s-]+years?[\s-]+old\s+)?(?i:{held})"
            rf"(?:\s+(?i:at|for|in)\s+(?:[Tt]he\s+)?[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)*)?"
            rf"(?:\s+(?P<place>(?i:from)\s+[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*))?"
            rf"(?:\s*,?\s+(?i:who)\s+(?P<rel>.+))?$",
            pred_exp[vstart:],
        )
        if m is None:
            return
        for told in (f"am {m.group('place')}" if m.group("place") else None, m.group("rel")):
            found = told and self.attribute_of(told, job.subject)
            if not told or not found or not found[1] or found[2] or found[0] == "job":
                continue
            if _NEG.search(told[: found[4]]) and not _NEG_EXCEPT.search(told):
                continue  # "who doesn't live in Seattle"
            if tense_of(told, verb_first=True) != "present":
                continue  # "who used to live in Boston", "who moved here last year": over, or from another time
            change = found[3] or bool(_CHANGE.search(told))
            self.out.append(
                replace(job, attribute=found[0], value=found[1], single_valued=found[0] in SINGLE_VALUED, change=change)
            )

    def _past_habit(self, subj: _Subject, pred_exp: str, cs: int, ce: int) -> _Subject | None:
        """ "When I was a kid I'd practice for hours": in a text set in the speaker's past, "would" tells
        what they used to do, not what they might ("Bob used to practice for hours")."""
        if subj.kind != "me" or not _WOULD_HABIT.match(pred_exp) or not _PAST_FRAME.search(self.text):
            return None
        if {w.lower() for w, _, _ in self.words(cs, ce)} & {"if", "unless"}:
            return None
        if subj.prefix == "would":
            return replace(subj, prefix="used to")
        if subj.prefix:
            return None
        would = next((t for t in self.words(subj.pred_start, ce) if t[0].lower() == "would"), None)
        if would is None or self.text[subj.pred_start : would[1]].strip():
            return None
        return replace(subj, prefix="used to", pred_start=would[2], conj=False)

    def _append(self, assertion: Assertion) -> None:
        key = assertion.statement.casefold()
        if key in self.statements:
            return
        self.statements.add(key)
        self.out.append(assertion)

    def _time_opening(self, value: str) -> int | None:
        """Where a time that opens ``value`` as said after "in" ("March", "March 2019", "the spring") ends
        in it; None when none does. Read in its first 40 characters."""
        times = self.times_in("in " + value[:40])[:1]
        return times[0].end - 3 if times and times[0].start <= 3 else None

    def _begins_later(self, rest: str, pred: str) -> bool:
        """Whether what "I start at ..." leads to is said to begin at a time to come ("at Stripe in June",
        "at Acme next week"): only then is the present a job's first day, not a habit or a plan."""
        if _HABITUAL.search(pred):
            return False
        now = self.src.occurred_at
        return any(x.kind != "recurring" and x.when > now for x in self.times_in(rest, future=True))

    def attribute_of(
        self, pred: str, subject: str, *, partner: str | None = None
    ) -> tuple[str, str, bool, bool, int] | None:
        head = pred.lstrip()
        off = len(pred) - len(head)
        if _UNREALISED.match(head):
            return None  # "I was going to move to Berlin (but changed my mind)": no home, no change
        if partner and re.match(_PRE + r"(?:got\s+|get\s+|getting\s+)?(?:married|engaged)\b", head, re.I):
            return "married_to", partner.lower(), False, True, off
        if partner and re.match(
            _PRE + r"(?:got\s+|get\s+|getting\s+)?(?:divorced|separated|broke\s+up)\b", head, re.I
        ):
            return "married_to", partner.lower(), True, True, off
        if _ANY_PATTERN is not None and _ANY_PATTERN.match(head) is None:
            return None  # no pattern matches (the loop below would find none)
        for pat in _PATTERNS:
            m = pat.regex.match(head)
            if m is None:
                continue
            raw, shift = m.group("v"), 0
            if pat.attribute == "from" and (when_end := self._time_opening(raw)) is not None:
                # "My daughter was born in March": when, not where; "born in August in Ohio": where after it
                place = _PLACE_AFTER_TIME.match(raw, when_end)
                if place is None:
                    continue
                raw, shift = raw[place.end() :], place.end()
            if pat.check == "cap" and not raw[:1].isupper():
                continue
            if pat.attribute == "job" and _TRAINED_ONLY.search(raw):
                continue  # "I'm a nurse by training (but I work as a writer)": what one learned, no job held
            if (
                pat.attribute == "name"
                and m.group("call")
                and not re.search(r"\b(?:am|is|are|was|were|be|been|being|got|get|gets|getting)\b", head[: m.start("call")], re.I)
            ):
                continue  # "Bob called Tom", "She named Tom her heir": someone acted, no name of theirs
            if pat.attribute == "likes" and (
                re.match(r"^(?:would|could|might)\b", head, re.I)
                or re.match(
                    r"^(?:is|are|am|was|were|be|been|feels?|felt|looks?|seems?)\s+(?:\w+\s+)?like\b",
                    head,
                    re.I,
                )
            ):
                continue  # "I'd like a coffee", "It's like a reminder": neither is a liking
            val = _clean_value(raw, pat.place)
            if pat.attribute == "likes":
                val = re.sub(r"^to\s+", "", val)
                if re.search(r"\b(?:prefer|prefers|preferred)\s+$", head[: m.start("v")], re.I):
                    # "I prefer tea over coffee": the one preferred
                    val = re.sub(r"\s+(?:over|to|than|rather\s+than|instead\s+of)\b.*$", "", val)
                if val.startswith("your "):
                    continue  # "I like your hair": a compliment to the person spoken to, no taste of theirs
            if pat.attribute == "has_pet":
                if m.group("others") and _LIST_END_PET.match(head, m.end()):
                    continue
                val = m.group("v").lower()
            if pat.attribute == "does":
                verb = m.group("h").lower()
                base = (
                    _HABIT_FORMS.get(verb)
                    or _HABIT_FORMS.get(verb.removesuffix("es"))
                    or _HABIT_FORMS.get(verb.removesuffix("s"))
                )
                if base is None:
                    continue
                obj = _clean_value(" " + raw, True) if raw.strip() else ""  # " two years ago": no object
                # how often is no part of the habit ("I drink coffee every morning" is "drinking coffee")
                obj = re.sub(r"(?:^|\s+)(?:every|each|once|twice|daily|weekly|nightly)\b.*$", "", obj)
                if obj and (
                    obj in _PRONOUN_VALUES or obj.split()[0] in ("it", "that", "this", "you", "them", "with")
                ):
                    continue
                if base == "run" and _RUN_BUSINESS.intersection(obj.split()):
                    # "I run my own bakery", "She runs a small business", "I run a bakery downtown": no running
                    continue
                val = f"{_gerund(base)} {obj}".strip()
            if (
                not val
                or val in _PRONOUN_VALUES
                or val in _REFLEXIVES  # "I work for myself": self-employed, no employer named "myself"
                or val.split()[0] in ("it", "that", "this", "you", "them", "what", "how", "when")
            ):
                continue
            if pat.check == "job" and val.split()[-1] not in _JOBS:
                continue
            if m.groupdict().get("join") and (
                val in PERSON_NOUNS
                or val in {(n or "").lower() for n in (self.self_name, self.speaker, self.addressee)}
                or _JOINED_COMPANY.match(raw)
            ):
                continue  # "I joined Bob for lunch", "I joined Mom": company kept, no employer
            if m.groupdict().get("began") and (_BEGUN_NOT_WORK & set(val.split()) or _SOMEONES_HOME.match(val)):
                continue  # "My son started at Lincoln Elementary": a school he goes to, no employer
            if (m.groupdict().get("began") or "").lower() in ("start", "begin") and not self._begins_later(raw, head):
                continue  # "I usually start at Starbucks", "Let's start at Bob's": where a day begins, no job
            if pat.attribute in ("lives_in", "works_at", "from", "studies_at") and val.split()[0] in (
                "here",
                "there",
                "home",
                "work",
            ):
                continue
            if pat.attribute == "works_at" and (val.split()[0] in _WORK_WHEN or _WORK_CLOCK.match(val)):
                continue  # "I work at night", "I work for hours": when and how much, no employer
            if pat.attribute == "lives_in" and re.match(r"the\s+[a-z]", raw) and val.split()[-1] not in _HOME_HEADS:
                continue  # "I moved to the couch", "I live at the gym": a place in a day, no home
            if pat.attribute == "lives_in" and val.split()[-1] in _WORKPLACE_HEADS:
                continue
            if pat.attribute == "lives_in" and _LODGINGS & set(val.split()):
                continue  # "I'm staying at a hotel (in Denver)": a stay, no home
            if pat.attribute == "lives_in" and (dwelling := _DWELLING_IN.match(raw)) is not None:
                where = dwelling.group("where")
                times = self.times_in("in " + where)[:1]
                if not (times and times[0].start <= 3) and not _NO_WHERE.match(where):
                    val = _clean_value(where, True) or val  # not "in June", "in the spring"
            if pat.attribute == "lives_in" and val.split()[-1] in _DWELLINGS:
                # "I moved into a bigger apartment", "I live in a dorm": a dwelling that names no place
                # is no home, which as a value would end the city said before (the statement stays)
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
            return pat.attribute, val, bool(neg), pat.change, off + m.start("v") + shift
        return None

    @staticmethod
    def _contentful(pred: str) -> bool:
        words = _LOWER_WORD.findall(pred.lower())
        content = [
            w for w in words if w not in _VACUOUS and w.removesuffix("s") not in _VACUOUS and w not in ADVERBS
        ]
        return any(w not in _VAGUE for w in content)

    def _statement(self, subj: _Subject, cs: int, ce: int, exprs: list[Any]) -> str:
        text = self.text
        ps = subj.pred_start
        me = self.me()
        you = self.you()
        out: list[str] = [subj.display, " "]
        if subj.prefix:
            out.append(" " + subj.prefix + " ")
        pos = ps
        need_conj = subj.conj and not subj.prefix
        front = subj.front
        # (a heading's time, before the clause, is none of its words: always rendered, "March 2022:" too)
        rel = [
            (x.start + cs, x.end + cs, render(x))
            for x in exprs
            if (x.relative or x.start < 0) and (x.kind != "range" or x.end_period)
        ]
        rel.sort(key=lambda r: r[0])
        next_rel = 0  # the times before it end before the token read: they are apart, and the tokens in order
        toks = list(_TOK.finditer(text, ps, ce))
        # the first word, the only one an implicit subject lower-cases ("Don't forget Carol's birthday")
        first_word = next((t.start() for t in toks if t.group(0)[:1].isalnum()), -1)
        skip_until = -1
        inner_conj = inner_need = False
        verb_next = False  # the dropped subject's verb comes after an adverb (see need_conj)
        before = ""
        # a title or a phrase in quotation marks left in the clause ('watched "You've Got Mail"') is shown
        # as written: its "you" is no one spoken to, its "my" nobody's here
        # (a clause's end may fall before the closing mark: 'call me "the boss".' ends at "boss")
        titles = [(q.start(), q.end()) for q in _QUOTED_WORDS.finditer(text, ps, min(len(text), ce + 202)) if q.start() < ce]
        next_title = 0
        for m in toks:
            if m.start() < skip_until:
                continue
            while next_title < len(titles) and titles[next_title][1] <= m.start():
                next_title += 1
            if next_title < len(titles) and titles[next_title][0] < m.start():
                continue
            prior, before = before, m.group(0)
            plural_you = _PLURAL_YOU.match(text, m.start(), ce)
            if plural_you is not None:
                # "you guys", "all of you": the person spoken to and the people with them
                out.append(text[pos : m.start()])
                out.append(f"{you} and others")
                pos = skip_until = plural_you.end()
                before = "you"
                continue
            while next_rel < len(rel) and rel[next_rel][1] <= m.start():
                next_rel += 1
            r = rel[next_rel] if next_rel < len(rel) and rel[next_rel][0] <= m.start() else None
            if r is not None:
                before = text[pos : m.start()]
                if r[2].startswith(("in ", "on ", "since ", "until ")):
                    # "in April" -> "in April 2024", not "in in April 2024"
                    before = re.sub(r"(?i)\b(?:in|on|at|during)\s+$", "", before)
                shown = r[2]
                # ("by Friday" -> "by 12 May 2023": a deadline, which "on 12 May 2023" would make the day)
                if re.search(r"(?i)\b(?:around|before|after|over|throughout|for|by)\s+$", before) and shown.startswith(("in ", "on ")):
                    shown = shown.split(" ", 1)[1]  # "around 3 years ago" -> "around May 2020"
                out.append(before)
                out.append(shown)
                pos = skip_until = r[1]
                continue
            tok = _norm(m.group(0))
            low = tok.lower()
            rep: str | None = None
            if pos == ps and tok.startswith("'") and subj.prefix:
                rep = ""
            elif pos == ps and m.start() == first_word and subj.implicit and (tok[:1].isupper() or need_conj) and tok != "I":
                rep = tok[:1].lower() + tok[1:]  # "Busy with studies" -> "Tim is busy with studies"
                if need_conj and low in ADVERBS:
                    verb_next, need_conj = True, False  # "Really love Denver" -> "Tim really loves Denver"
                elif need_conj:
                    rep, need_conj = conjugate_3sg(rep), False  # "Love experimenting" -> "Tim loves ..."
            elif verb_next and tok[:1].isalpha():
                rep, verb_next = (conjugate_3sg(tok) if low not in ADVERBS else tok), low in ADVERBS
            elif low in ("me", "myself"):
                rep = me
            elif low in ("my", "mine"):
                rep = f"{me}'s"
            elif (
                low in ("i", "i'm", "i've", "i'll", "i'd", "im", "ive")
                and text[m.end() : m.end() + 2].lower() != ".e"
                and not (m.start() > ps and _titled_i(text, m.end(), ce))
            ):
                p = _contraction_prefix(tok)
                rep = me + (" " + p if p else "")
                inner_conj = not p
            elif low in ("we", "us") and tok != "US":  # "the US" is a country
                rep = f"{me} and others"
            elif low in ("we're", "we've", "we'll", "we'd"):
                rep = (
                    f"{me} and others "
                    + {"re": "are", "ve": "have", "ll": "will", "d": "would"}[low.split("'")[1]]
                )
            elif low in ("our", "ours"):
                rep = f"{me}'s"
            elif low == "you" or tok == "u":  # "u" typed for "you"; never the "U" of "the U.S."
                rep = you
                inner_conj = pos != ps
            elif low in ("your", "yours"):
                rep = f"{you}'s"
            elif low in ("you're", "you've", "you'll", "you'd"):
                rep = you + " " + {"re": "is", "ve": "has", "ll": "will", "d": "would"}[low.split("'")[1]]
            elif low in ("yourself", "yourselves") and subj.urged:
                # "Gina encourages Jon to believe in themselves": told of them, the person urged is no
                # longer "you", nor anyone at large, and "in Jon" reads as someone else
                rep = "themselves"
            elif low == "yourself":
                rep = you if _addressed(self.words(cs, ce)) else "oneself"
            elif low == "ourselves":
                rep = f"{me} and others"
            elif low in ("it", "them") and prior and (topic := self._topic_for(low, prior, _next_word(text, m.end()))):
                rep = topic
            elif low == "gonna":
                rep = "going to"
            elif low in ("wanna", "gotta"):
                # "I wanna help" -> "Tim wants to help", "I gotta go" -> "Tim has to go"
                rep = {"wanna": ("want to", "wants to"), "gotta": ("have to", "has to")}[low][need_conj]
                if low == "gotta" and re.search(r"\b(?:have|has|had)\s*$", "".join(out) + text[pos : m.start()]):
                    rep = "got to"  # "We've gotta" -> "... have got to"
                need_conj = False
            elif (need_conj and low.isalpha()) or (need_conj and "'" in low):
                if low in ADVERBS or low in ("not", "no", "longer", "first", "then", "later", "ever", "seldom") or (len(low) > 4 and low.endswith("ly")):
                    pass  # "typically", "really": the verb comes next
                else:
                    rep = conjugate_3sg(tok)
                    need_conj = False
            elif inner_need and low.isalpha() and low not in ADVERBS:
                rep = conjugate_3sg(tok) if low in _VERB_FORMS else None
                inner_need = False
            if inner_conj:
                # "It's when I really feel alive" -> "... when Melanie really feels alive"
                inner_need, inner_conj = True, False
            if rep is not None:
                out.append(text[pos : m.start()])
                out.append(rep)
                pos = m.end()
        out.append(text[pos:ce])
        if front is not None:
            fronted = next((r for r in rel if r[0] == front[0] or front[0] <= r[0] < front[1]), None)
            if fronted is not None:
                # "Earlier this month" -> "earlier in May 2023", "Yesterday at 3pm" -> "on 7 May 2023 at 3pm"
                earlier = re.match(r"\s*(earlier|later)\s", text[front[0] : fronted[0]], re.I)
                narrower = re.sub(r"^\s*,?\s*(?=morning|afternoon|evening|night)", " in the ", text[fronted[1] : front[1]])
                fronted = (earlier.group(1).lower() + " " if earlier else "") + fronted[2] + narrower.rstrip(" ,")
            shown = fronted or self._rewrite_simple(text[front[0] : front[1]].strip().rstrip(","))
            if _GERUND_FRONT.match(shown) or _ACCORDING_FRONT.match(shown) or re.match(r"(?i:ever\s+since)\b", shown) or _TIME_LEAD.match(shown):
                shown = shown[:1].lower() + shown[1:]  # at the statement's end: "... moved to Oslo in 2019"
            source = ", " if _ACCORDING_FRONT.match(shown) else " "  # "..., according to Alice's doctor"
            out.append(source + (shown.lower() if _FREQUENCY.fullmatch(shown + " ") else shown))
        if subj.when is not None:
            out.append(" " + self._when_shown(*subj.when))  # "... will move to Florida when Alice retires"
        stmt = _SPACES.sub(" ", "".join(out)).strip()
        stmt = _SPACE_BEFORE_STOP.sub(r"\1", stmt)
        stmt = stmt.rstrip(" ,;:-\u2013\u2014")
        if not stmt:
            return ""
        stmt = stmt[:1].upper() + stmt[1:]
        if not stmt.rstrip('"\u201d').endswith((".", "!", "?")):  # ('... is "The Office."': ended within)
            stmt += "."
        elif stmt.endswith(("!", "?")):
            stmt = stmt.rstrip("!?") + "."
        return stmt


# What something is worth to someone: "means a lot", "has meant the world", "means so much"
_SIGNIFICANCE_WORDS = re.compile(
    r"\b(?:means?|meant)\s+(?:(?:a\s+lot|so\s+much|the\s+world|everything|a\s+great\s+deal|a\s+ton|tons|so\s+very"
    r"\s+much)\b)",
    re.I,
)
_SIGNIFICANCE = re.compile(
    r"\s*(?:(?:really|truly|so|just|also|always|still|has|have|had|already)\s+)*" + _SIGNIFICANCE_WORDS.pattern, re.I
)
# The second person plural: "you guys", "you all", "y'all", "you two", "all of you", "both of you"
_PLURAL_YOU = re.compile(
    r"(?:you\s+(?:guys|all(?!\s+(?:about|over|the\s+best)\b)|both|two|folks)|y['\u2019]all|(?:all|both|each)\s+of\s+you)"
    r"(?![\w'\u2019])",
    re.I,
)
_NP_NEVER = {
    "if", "when", "while", "because", "since", "as", "so", "but", "and", "or", "for", "to", "in", "on", "at",
    "with", "by", "from", "of", "about", "like", "just", "not", "no", "yes", "yeah", "then", "there", "here",
    "where", "how", "why", "what", "who", "which", "whose", "also", "even", "only", "really", "maybe",
    "still", "always", "never", "sometimes", "please", "thanks", "thank", "sorry", "congrats", "well", "let",
    "let's", "lets", "hope", "wish", "glad", "good", "keep", "make", "take", "try", "check", "look", "go",
    "come", "get", "give", "tell", "feel", "see", "remember", "imagine", "wait", "stay", "enjoy", "have",
    "do", "be", "don't", "can't", "won't", "is", "are", "was", "were", "after", "before", "until", "than",
    "once", "though", "although", "unless", "whether", "either", "neither", "both", "each", "every", "any",
    "some", "all", "such", "whatever", "whoever", "wherever", "however", "much", "many", "more", "most",
    "nothing", "everything", "something", "anything", "someone", "everyone", "anyone", "nobody", "one",
    "sounds", "looks", "seems", "way", "same", "cheers", "cool", "nice", "great", "awesome", "amazing",
    "love", "oh", "wow", "haha", "lol", "hey", "hi", "hello", "ok", "okay", "sure", "right", "true",
}  # fmt: skip
# Nouns that a person holds several of: "Alice's hobby is ...", "Alice's goals are ..." do not replace each other.
_MULTI_NOUNS = {
    "hobby", "hobbies", "goal", "goals", "dream", "dreams", "plan", "plans", "passion", "favorite", "favourite",
    "fave", "interest", "interests", "friend", "friends", "skill", "skills", "language", "languages",
}  # fmt: skip
_ATTR_ALIASES = {"occupation": "job", "profession": "job", "hometown": "from", "home_town": "from"}
# Nouns too vague to carry a claim on their own ("a lot of things happening").
_VAGUE = {
    "thing", "things", "stuff", "lot", "lots", "happening", "happened", "going", "way", "ways", "kind",
    "sort", "bit", "deal", "moment", "moments", "time", "times", "day", "days", "everything", "something",
    "anything", "nothing", "it", "this", "that", "one", "ones", "part", "fact", "me", "myself", "you",
    "yourself", "him", "her", "them", "us", "they", "we", "i", "m", "s", "ve", "re", "ll", "d", "t",
}  # fmt: skip


_VAGUE_HEADS = {"lot", "lots", "thing", "things", "stuff", "everything", "something", "anything", "nothing",
                "bit", "one", "it", "that", "this"}  # fmt: skip
_ARTICLES = {"The", "A", "An", "This", "These", "Those", "That"}
# what opens a noun that names a person in an aside ("Tom, a dentist, ...", "Emma (my niece) ...")
_ARTICLES_LOW = {"a", "an", "the", "my", "his", "her", "our", "their"}
_AFTER_IS = {
    "a", "an", "the", "so", "really", "such", "not", "just", "my", "your", "his", "her", "our", "their",
    "always", "never", "too", "very", "pretty", "totally", "definitely", "been", "got", "gotten", "gonna",
    "going", "all", "like", "more", "one", "what", "how", "also", "still", "super", "truly", "kind",
}  # fmt: skip
# Common nouns that open sentences capitalised and take a singular verb like a name ("Time flies",
# "Nature inspires me"): never read as a person.
_COMMON_NOUNS = {
    "time", "life", "love", "family", "work", "nature", "music", "art", "food", "travel", "dance", "school",
    "college", "health", "exercise", "sport", "sports", "basketball", "football", "soccer", "baseball",
    "tennis", "yoga", "pottery", "photography", "fashion", "business", "money", "kindness", "community",
    "support", "friendship", "therapy", "meditation", "home", "weather", "summer", "winter", "spring",
    "autumn", "clay", "education", "knowledge", "technology", "science", "history", "religion", "faith",
    "hope", "happiness", "joy", "peace", "change", "growth", "success", "failure", "stress", "anxiety",
    "courage", "strength", "confidence", "patience", "practice", "balance", "self-care", "parenthood",
    "marriage", "grief", "loss", "fear", "anger", "trust", "honesty", "respect", "gratitude", "poetry", "literature", "writing", "cooking", "baking", "painting", "gardening", "hiking", "camping",
    "volunteering", "traveling", "travelling", "reading", "running", "swimming", "gaming", "coffee", "tea",
    "water", "chocolate", "pizza", "math", "mathematics", "physics", "chemistry", "biology",
    "psychology", "philosophy", "medicine", "law", "politics", "culture", "language", "kids", "children",
    "pets", "dogs", "cats", "books", "movies", "games", "people", "friends", "parents", "everyone",
    "lots", "tons", "loads", "plenty", "progress",
}  # fmt: skip


# What follows "it's <participle>" when the 's is "has": an object, not "by", "of", "from" ...
_PERFECT_OBJECTS = {
    "a", "an", "the", "me", "my", "us", "our", "him", "her", "them", "their", "it", "so", "such", "everything",
    "things", "life", "all", "some", "lots", "tons", "many", "more", "most",
}  # fmt: skip
_EXISTENTIAL_NEXT = {
    "is", "are", "was", "were", "has", "have", "had", "will", "used", "must", "might", "may", "could", "seem",
    "seems", "seemed", "'s", "'re",
}  # fmt: skip
_THEY = {"they": "", "they're": "are", "they've": "have", "they'll": "will", "they'd": "would"}
# A topic stays in reach of "it"/"them" for this many sentences after the one that named it.
_TOPIC_REACH = 2
# Words that open a clause before what it is about ("Yep, that movie is awesome")
_TOPIC_SKIP = {
    "yeah", "yep", "yes", "yup", "wow", "oh", "ah", "hey", "hi", "ok", "okay", "well", "so", "and", "but",
    "also", "plus", "thanks", "actually", "honestly", "mainly", "mostly", "especially", "totally", "aw",
    "aww", "haha", "lol", "omg", "cool", "nice", "great", "awesome", "sure", "definitely", "agreed",
}  # fmt: skip
# Verbs that describe their subject and so make it the thing talked about ("X sounds awesome").
_TOPIC_VERBS = {"is", "'s", "are", "'re", "was", "were", "sounds", "sound", "looks", "look", "seems", "seem"}
_TOPIC_NEVER = (
    FIRST_SG | FIRST_PL | SECOND | THIRD_SG | DROP_SUBJECTS
    | {"me", "us", "him", "her", "them", "you", "your", "his", "their", "its", "he", "she", "a", "an", "there"}
) - {"these", "those", "this", "that"}  # fmt: skip
# "make it", "got it", "keep it up", "take it easy": the pronoun stands for no thing
_IDIOM_VERBS = {
    "make", "makes", "made", "making", "get", "gets", "got", "gotten", "getting", "keep", "keeps", "kept",
    "keeping", "take", "takes", "took", "taking", "mean", "means", "meant", "is", "was", "'s", "be", "been",
    "of", "like", "hang", "nail", "nailed", "rock", "rocked", "killing", "kill", "smash", "smashed", "crush",
    "crushed", "fake", "let", "put",
}  # fmt: skip
_OBJECT_PREPS = {
    "with", "without", "about", "for", "into", "on", "at", "from", "to", "through", "around", "in",
}  # fmt: skip
# Verbs whose imperative takes an adjective or participle: "Stay motivated", "Rest assured", "Get well".
_COPULAR_IMPERATIVES = {"stay", "rest", "remain", "keep", "get", "be", "feel", "stand", "sit"}
_IMPERATIVE_NEXT = {
    "the", "a", "an", "my", "your", "his", "her", "our", "their", "it", "them", "me", "us", "him", "this",
    "that", "these", "those", "up", "out", "on", "in", "at", "to", "with", "through", "away", "back",
    "down", "off", "over", "yourself", "yourselves", "going", "trying", "doing", "some", "any", "all",
    "every", "more", "what", "how", "strong", "positive", "safe", "calm", "focused", "motivated", "tuned",
    "keep", "and", "for", "about", "into", "around", "ahead", "forward", "chasing", "pushing", "moving",
}  # fmt: skip


def _agrees(pronoun: str, verb: str) -> bool:
    """Whether ``pronoun verb`` is a subject and its verb ("I sent", "you are"), not "like you is"."""
    if pronoun == "i":
        return verb not in ("is", "are", "has", "does", "was") and not (
            verb.endswith("s") and verb in _VERB_FORMS and verb not in _VERB_BASE_SET
        )
    if pronoun in ("we", "you", "they"):
        return verb not in ("is", "am", "has", "does", "was") and not (
            verb.endswith("s") and verb in _VERB_FORMS and verb not in _VERB_BASE_SET
        )
    if pronoun in ("he", "she"):
        return verb not in ("are", "am", "have", "do", "were") and verb not in _VERB_BASE_SET
    return False


def _listed(left: list[str], first: str) -> bool:
    """ "accepted, loved" before "and supported": the last item of a list whose items share a form
    (-ed, -ing), which continues the list and starts no clause of its own."""
    if len(left) < 3 or left[-2] != "," or not (left[-1].isalpha() and left[-3].isalpha() and first.isalpha()):
        return False
    return any(all(w.endswith(suffix) and len(w) > len(suffix) + 2 for w in (left[-3], left[-1], first))
               for suffix in ("ed", "ing"))  # fmt: skip


def _existential_head(words: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """What "there is/were" introduces, up to a relative clause after it: "There were 7 people that
    attended" introduces "7 people", not "that"."""
    head = words[1:5]
    for i in range(2, len(head)):
        if head[i][0].lower() in ("that", "who", "which") and head[i - 1][0].lower() not in _EXISTENTIAL_NEXT:
            return head[:i]
    return head


def _list_comma(words: list[tuple[str, int, int]], k: int) -> bool:
    """The comma at k separates items of a list that "and" closes ("accepted, loved and supported")."""
    lows = [w.lower() for w, _, _ in words[k + 1 : k + 5]]
    if k < 1 or ("and" not in lows[1:3] and "or" not in lows[1:3]):
        return False
    closing = lows.index("and" if "and" in lows[1:3] else "or")
    return closing + 1 < len(lows) and _listed([words[k - 1][0].lower(), ",", lows[0]], lows[closing + 1])


def _addressed(words: list[tuple[str, int, int]]) -> bool:
    """Whether a clause names the person spoken to ("art helps you express yourself"): without that,
    "yourself" is anyone's ("having confidence in yourself is important" -> "... in oneself")."""
    return any(w.lower() in SECOND | {"your", "yours"} for w, _, _ in words)


def _inside_word(words: list[tuple[str, int, int]], k: int) -> bool:
    """The token at k joins the words either side of it with no space ("self-acceptance", "b-ball")."""
    return 0 < k < len(words) - 1 and words[k - 1][2] == words[k][1] and words[k][2] == words[k + 1][1]


def _inner_subject(words: list[tuple[str, int, int]]) -> bool:
    """Whether a clause's predicate holds a subject of its own ("..., they motivate me", "the book that
    ..."), so that a verb after "and" may belong to it. "it", "you", "some" ... are one only before a
    verb: "I finished it and started another" has none."""
    for k, (w, _, _) in enumerate(words):
        low = w.lower()
        if low in THIRD_SG | FIRST_PL | {"who", "which", "that"}:
            return True
        if low in SECOND | DROP_SUBJECTS:
            if "'" in low:
                return True  # "it's", "you're", "they've"
            nxt = next((x.lower() for x, _, _ in words[k + 1 : k + 4] if x.lower() not in ADVERBS), "")
            if nxt in _FINITE or nxt in _VERB_FORMS:
                return True
    return False


def _hyphens_joined(words: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """``words`` with the words a hyphen joins, with no space about it, as one ("ex-husband",
    "mother-in-law", "co-worker"); a dash between spaces ("my boss - who ...") stays apart."""
    out: list[tuple[str, int, int]] = []
    for tok in words:
        if (
            len(out) >= 2
            and out[-1][0] == "-"
            and out[-2][2] == out[-1][1]
            and out[-1][2] == tok[1]
            and out[-2][0][-1:].isalpha()
            and tok[0][:1].isalpha()
        ):
            out.pop()
            first = out.pop()
            tok = (f"{first[0]}-{tok[0]}", first[1], tok[2])
        out.append(tok)
    return out


def _person_part(word: str) -> str:
    """The person a hyphenated word names, when a part of it does ("ex-husband": "husband",
    "mother-in-law": "mother"); else the word."""
    if "-" not in word or word in PERSON_NOUNS:
        return word
    parts = word.split("-")
    return next((p for p in (parts[-1], parts[0]) if p in PERSON_NOUNS), word)


def _next_word(text: str, pos: int) -> str:
    m = re.match(r"\s*([\w'\u2019]+)", text[pos : pos + 30])
    return m.group(1) if m else ""


def _common_case(np: str) -> str:
    """ "Dance floors" -> "dance floors", "The office" -> "the office"; "New York" stays a name."""
    words = np.split()
    if len(words) > 1 and is_name_token(words[0]) and is_name_token(words[1]) and words[0] not in _ARTICLES:
        return np
    if words and words[0][:2].isupper():
        return np  # "TV shows", "RPGs": an acronym keeps its capitals
    return np[:1].lower() + np[1:] if words and words[0] != "I" else np


def _later_before(text: str, cs: int, at: int) -> bool:
    """Whether "later" and a space come right before ``at``, after ``cs`` ("... later this year"). Read
    back over the spaces only: a pattern searched in all the clause before each time was quadratic."""
    j = at
    while j > cs and text[j - 1].isspace():
        j -= 1
    start = j - 5
    if j == at or start < cs or text[start:j].lower() != "later":
        return False
    return start == cs or not (text[start - 1].isalnum() or text[start - 1] == "_")


def _gerund_subject(words: list[tuple[str, int, int]], k: int) -> bool:
    """Whether the gerund at ``k`` opens the clause's subject ("Meeting new people can be ...", "Making my
    spot comfortable and inviting for my customers is key"): a finite verb follows it, within eight words
    or, further on, before a mark ends its phrase."""
    if any(w.lower() in _FINITE for w, _, _ in words[k + 1 : k + 9]):
        return True
    # "Having a furry pal definitely brightens my days": a verb in -s before its object
    if any(
        w.lower().endswith("s") and not w.lower().endswith("ss") and len(w) > 3 and nxt.lower() in _PERSONAL_OBJECTS
        for (w, _, _), (nxt, _, _) in zip(words[k + 2 : k + 9], words[k + 3 : k + 10], strict=False)
    ):
        return True
    for w, _, _ in words[k + 9 : k + 16]:
        if w in _PHRASE_END:
            return False
        if w.lower() in _FINITE:
            return True
    return False


# Adverbs between a subject and its verb ("Life sure can be ...", "Turtles really bring ...")
_SUBJECT_ADVERBS = ADVERBS | {"sure"}
_PERSONAL_OBJECTS = {"me", "my", "us", "our", "him", "her", "them", "you", "your", "his", "their"}
_PHRASE_END = {",", ";", ":", "(", ")", "-", "\u2013", "\u2014", "!", "?", "."}


def _is_gerund(tok: str) -> bool:
    low = tok.lower()
    stem = low[:-3]
    return (
        len(low) > 4
        and low.endswith("ing")
        and any(c in "aeiouy" for c in stem)
        and low
        not in (
            "thing",
            "nothing",
            "something",
            "anything",
            "everything",
            "morning",
            "evening",
            "during",
            "spring",
            "string",
            "ceiling",
            "wedding",
            "building",
            "king",
            "ring",
            "sibling",
            "darling",
        )
    )


# Participles that tell a state after "'s" ("Bob's married"): "is", not "has"
_STATE_PARTICIPLES = {
    "married", "engaged", "divorced", "separated", "retired", "excited", "interested", "tired", "worried",
    "scared", "bored", "pleased", "thrilled", "based", "located", "obsessed", "stuck", "hooked", "involved",
    "employed", "unemployed", "stressed", "exhausted", "supposed", "allowed",
}  # fmt: skip
_COMPLEMENT_OPENERS = {"to", "in", "at", "on", "for", "with", "from", "into", "about", "of", "by", "the", "a", "an"}
# Words no possessive is followed by, so the "'s" before them is "is" ("Bob's a nurse", "my mom's in
# Paris", "my birthday's tomorrow", "Bob's my brother"); a number too, unless a verb follows ("my son's 12",
# not "Bob's 3 cats are cute")
_NO_POSSESSIVE_BEFORE = _COMPLEMENT_OPENERS - {"of", "by", "to"} | {
    "still", "also", "always", "never", "not", "really", "so", "very", "just", "now", "back", "here", "there",
    "away", "over", "tomorrow", "today", "tonight", "next", "this", "such", "quite", "pretty", "too", "currently",
    "originally", "finally", "no", "under", "near", "off", "out", "my", "your", "his", "her", "our", "their",
}  # fmt: skip


def _contracted_verb(words: list[tuple[str, int, int]], i: int) -> str:
    """ "is"/"has" when the "'s" of the name before ``words[i]`` is the verb contracted onto it: before
    "been", a participle or an -ing verb ("Bob's moving to Oslo", "Bob's been living there"), or a word
    no possessive comes before (_NO_POSSESSIVE_BEFORE: "Bob's a nurse"), not when the word is a noun the
    name owns ("Bob's wedding was lovely", "Bob's painting is great"); "" else."""
    if i >= len(words):
        return ""
    low = words[i][0].lower()
    ed_stem = low[:-2] if low.endswith("ed") else ""
    participle = (
        low in _PARTICIPLES
        or (low in IRREGULAR_PAST and low not in ("was", "were", "did"))
        or low in _STATE_PARTICIPLES
        or (len(low) > 4 and bool(ed_stem) and not low.endswith("eed") and (
            low in _VERB_FORMS or ed_stem[:-1] in _VERB_BASE_SET or ed_stem[:-1] + "y" in _VERB_BASE_SET
        ))
    )  # fmt: skip
    if not participle and not _is_gerund(low) and low not in _NO_POSSESSIVE_BEFORE and not low.isdigit():
        return ""
    for w, _, _ in words[i + 1 : i + 4]:
        if w.lower() in _COMPLEMENT_OPENERS or not w.isalpha():
            break
        if w.lower() in _FINITE:
            return ""  # "Bob's painting is great", "Bob's used car was red": a thing of his
    if not participle or low in _STATE_PARTICIPLES:
        return "is"
    return "has"


def _bare(pred: str, threshold: int = 2) -> bool:
    """Praise or a reaction with nothing else in it: fewer than ``threshold`` words that are not
    judgement, intensifiers, pronouns or function words ("is doing amazing", "has got guts")."""
    words = _LOWER_WORD.findall(pred.lower())
    content = [
        w for w in words if w not in _INTENSIFIERS and not _EVALUATIVE.fullmatch(w) and w not in ADVERBS
    ]
    return len(content) < threshold


def _frame(subj: _Subject, subject: str, owner: str | None, verb: str) -> _Subject:
    """ "Melanie thinks Caroline is brave ...": a judgement or report becomes the speaker's own claim."""
    shown = subj.display
    if shown[:1].isupper() and not is_name_token(shown.split()[0].rstrip(",")):
        shown = shown[:1].lower() + shown[1:]
    speaker = owner or subject
    return replace(subj, subject=subject, owner=owner, display=f"{speaker} {verb} {shown}", frame=verb)


_DEFAULT = RuleExtractor()


def default_extractor() -> Extractor:
    """The extractor used when none is configured: the deterministic rules."""
    return _DEFAULT


def extract_record(
    extractor: Extractor, content: dict[str, Any], *, self_name: str | None, occurred_at: datetime
) -> tuple[SourceText, list[Assertion]]:
    """A stored Record's source text and its assertions: one picklable call, so that a long text can
    be read in a process of its own."""
    text = source_text(content, self_name=self_name, occurred_at=occurred_at)
    return text, extractor.extract(text, self_name=self_name)
