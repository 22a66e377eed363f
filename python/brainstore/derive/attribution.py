"""Who a clause is about, whose claim it is, and rewriting it in the third person.

``owner`` is the person whose own claim the statement is, when they can vouch for it; None otherwise.
The rules, most important first (the product promise is that nothing is attributed to the wrong person):
- First person ("I", "my", "me") is the speaker. With no known speaker (document prose, an event) it is
  "the author"/"the speaker" and owned by nobody. In a chat turn a clause with no subject at all
  ("Been tweaking a recipe", "Busy with studies") is the speaker's: chat drops the "I".
- "My sister ..." is about "<speaker>'s sister" and owned by her, never by the speaker. "My name/age/
  birthday/job/favorite X ..." is about the speaker. Other possessions ("my car") are about
  "<speaker>'s car", owned by the speaker.
- A clause whose subject is a thing, an activity or someone else but that is about the speaker's own
  experience ("Pottery is a huge part of my life", "My family motivates me", "Sam visited me") is the
  speaker's to vouch for: owned by the speaker.
- What a speaker says of the person they talk to ("you") is the speaker's claim, never the addressee's
  own (spec guarantee 5): a fact ("Carol, you live in Lisbon now") is about the addressee and owned by
  nobody; a judgement ("you're so brave to speak up") is the speaker's view ("Bob thinks Carol is so
  brave ..."), owned by the speaker; bare praise ("You're doing amazing!") is nothing to remember. The
  addressee is known only when the turn names them ("Carol, you ..."); otherwise "the other person".
- In a chat turn a general statement is its speaker's: a judgement is their view ("Bob thinks talking
  about it is crucial"), a report is what they say ("Bob says the office is closed on Mondays").
- "He"/"she" is a person named earlier in the same text when exactly one was (a name after "in", "at",
  "to" ... is a place or an organisation, not a person); otherwise the clause is dropped. "It", "that",
  "they" ... subjects are dropped unless the clause is about the speaker or is the speaker's judgement.
- Words in quotation marks are the quoted person's ("Emma said: 'I hate cats.'" is Emma's), and nobody's
  when the text does not say who spoke them.
- Assistant and system turns never produce anything about the user: their first- and second-person
  clauses are dropped, and whatever remains is owned by nobody (a model's claim establishes nothing).
"""

from __future__ import annotations

import re

__all__ = [
    "FEMALE_NOUNS",
    "FIRST_SG",
    "KIN_NAMES",
    "MALE_NOUNS",
    "PERSON_NOUNS",
    "SELF_NOUNS",
    "conjugate_3sg",
    "is_name_token",
]

FIRST_SG = {"i", "i'm", "i've", "i'll", "i'd", "im", "ive"}
FIRST_PL = {"we", "we're", "we've", "we'll", "we'd"}
SECOND = {"you", "you're", "you've", "you'll", "you'd", "youre", "u"}
THIRD_SG = {"he", "she", "he's", "she's", "he'll", "she'll", "he'd", "she'd"}
DROP_SUBJECTS = {
    "it", "it's", "its", "that", "that's", "this", "these", "those", "they", "they're", "they've", "they'll",
    "there", "there's", "here", "here's", "what", "what's", "who", "who's", "which", "everything", "everyone",
    "everybody", "nothing", "something", "someone", "somebody", "anyone", "anybody", "anything", "nobody",
    "one", "both", "all", "each", "some", "many", "most", "such", "thats", "theres", "whats", "lets", "let's",
}  # fmt: skip

PERSON_NOUNS = {
    "mother", "mom", "mum", "mommy", "mama", "father", "dad", "daddy", "papa", "parents", "parent",
    "sister", "sisters", "brother", "brothers", "sibling", "siblings", "wife", "husband", "spouse",
    "partner", "boyfriend", "girlfriend", "fiance", "fiancé", "fiancee", "fiancée", "son", "sons",
    "daughter", "daughters", "kid", "kids", "child", "children", "baby", "babies", "family", "grandma",
    "grandmother", "grandpa", "grandfather", "grandparents", "granddaughter", "grandson", "aunt", "uncle",
    "cousin", "cousins", "niece", "nephew", "friend", "friends", "bestie", "bff", "boss", "manager",
    "coworker", "coworkers", "co-worker", "colleague", "colleagues", "neighbor", "neighbour", "neighbors",
    "roommate", "roommates", "flatmate", "teacher", "mentor", "therapist", "doctor", "students", "team",
    "dog", "dogs", "cat", "cats", "pet", "pets", "puppy", "kitten", "fam", "folks", "in-laws", "ex",
    "stepmom", "stepdad", "stepmother", "stepfather", "twin", "buddy", "pal", "classmate", "classmates",
    "landlord", "client", "clients", "mate", "hubby", "bf", "gf", "sis", "bro", "nana", "granny", "grandad",
    "granddad", "mummy",
}  # fmt: skip
# The relations of PERSON_NOUNS (and a few words for people) that say a gender: whom "he"/"she" may be.
MALE_NOUNS = {
    "father", "dad", "daddy", "papa", "brother", "brothers", "husband", "boyfriend", "fiance", "fiancé", "son",
    "sons", "grandpa", "grandfather", "grandson", "uncle", "nephew", "stepdad", "stepfather", "hubby", "bf",
    "bro", "guy", "man", "boy", "grandad", "granddad",
}  # fmt: skip
FEMALE_NOUNS = {
    "mother", "mom", "mum", "mommy", "mama", "sister", "sisters", "wife", "girlfriend", "fiancee", "fiancée",
    "daughter", "daughters", "grandma", "grandmother", "granddaughter", "aunt", "niece", "stepmom",
    "stepmother", "gf", "sis", "girl", "woman", "lady", "nana", "granny", "mummy",
}  # fmt: skip
# Relations a speaker calls by name ("Mom is moving", "I called Grandma"): the speaker's own, never a
# person of that name every speaker shares
KIN_NAMES = {
    "mom", "mum", "mommy", "mummy", "mama", "mother", "dad", "daddy", "papa", "father", "grandma", "grandpa",
    "grandmother", "grandfather", "nana", "granny", "grandad", "granddad",
}  # fmt: skip
# "my X is ..." where X is the speaker's own attribute: the claim is about the speaker.
SELF_NOUNS = {
    "name", "age", "birthday", "job", "occupation", "profession", "career", "hobby", "hobbies", "goal",
    "goals", "dream", "dreams", "plan", "plans", "passion", "favorite", "favourite", "fave", "address",
    "email", "phone", "number", "nationality", "religion", "major", "degree", "diet", "allergy",
    "allergies", "height", "weight", "pronouns", "handle", "username",
}  # fmt: skip

ADVERBS = {
    "really", "also", "still", "just", "now", "never", "always", "usually", "often", "totally",
    "absolutely", "actually", "currently", "recently", "finally", "definitely", "truly", "sometimes",
    "even", "already", "kinda", "mostly", "only", "certainly", "honestly", "seriously", "personally",
    "generally", "rarely", "barely", "hardly", "simply", "literally", "basically", "especially", "mainly",
    "constantly", "probably", "once", "too", "both", "all", "def", "officially", "originally", "apparently",
    "secretly", "slowly", "again", "almost", "nearly", "sort", "kind", "of", "sorta", "much",
}  # fmt: skip
MODALS = {
    "can", "could", "will", "would", "shall", "should", "may", "might", "must", "cannot", "can't", "won't",
    "wouldn't", "couldn't", "shouldn't", "mustn't", "was", "were", "did", "didn't", "wasn't", "weren't",
    "had", "hadn't", "used", "ought", "gotta", "gonna", "wanna",
}  # fmt: skip
IRREGULAR_PAST = {
    "went", "got", "made", "took", "saw", "came", "ran", "met", "left", "began", "bought", "brought",
    "thought", "felt", "found", "gave", "had", "heard", "kept", "knew", "lost", "paid", "put", "read",
    "said", "sent", "sat", "spent", "stood", "told", "understood", "won", "wrote", "became", "chose",
    "drove", "ate", "fell", "flew", "forgot", "grew", "hung", "hurt", "let", "lit", "quit", "rode", "rang",
    "rose", "sang", "sold", "set", "shut", "slept", "spoke", "swam", "taught", "threw", "woke", "wore",
    "built", "caught", "dealt", "drew", "fought", "held", "led", "meant", "did", "was", "were", "broke",
    "cut", "dug", "fed", "forgave", "froze", "hid", "hit", "laid", "lent", "lay", "shot", "shook", "sank",
    "stuck", "struck", "swore", "swept", "tore", "upset", "wept", "wound", "cost", "begun",
    "been", "done", "gone", "seen", "taken", "given", "known", "grown", "shown", "written", "bit",
}  # fmt: skip
_3SG_IRREGULAR = {
    "have": "has", "do": "does", "go": "goes", "am": "is", "are": "is", "be": "is", "'m": "is",
    "don't": "doesn't", "dont": "doesn't", "haven't": "hasn't", "havent": "hasn't", "aren't": "isn't",
    "am not": "is not", "ain't": "isn't", "were": "was", "weren't": "wasn't", "'re": "is", "'ve": "has",
}  # fmt: skip

_EED_BASES = {"need", "feed", "bleed", "breed", "speed", "heed", "succeed", "proceed", "exceed", "seed", "weed"}

# Capitalised words that begin sentences but are not names. A name is also never a known verb, pronoun
# or function word; the caller additionally requires a verb right after the name.
NOT_NAMES = {
    "the", "a", "an", "this", "that", "these", "those", "my", "your", "our", "his", "her", "their", "its",
    "i", "you", "we", "he", "she", "they", "it", "and", "but", "or", "so", "if", "when", "while", "because",
    "since", "after", "before", "then", "there", "here", "what", "who", "why", "how", "where", "which",
    "yes", "no", "not", "yeah", "ok", "okay", "oh", "wow", "hey", "hi", "hello", "thanks", "thank", "please",
    "just", "also", "really", "maybe", "today", "yesterday", "tomorrow", "tonight", "last", "next", "every",
    "each", "all", "some", "any", "many", "most", "much", "more", "one", "two", "both", "user", "users",
    "customer", "customers", "system", "people", "everyone", "someone", "nobody", "nothing", "everything",
    "something", "life", "family", "work", "school", "home", "kids", "friends", "monday", "tuesday",
    "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april", "may",
    "june", "july", "august", "september", "october", "november", "december", "god", "lol", "haha", "omg",
    "well", "now", "being", "having", "getting", "making", "feeling", "sounds", "looks", "seems", "glad",
    "good", "great", "nice", "cool", "awesome", "amazing", "happy", "sorry", "sure", "let", "let's",
    "totally", "definitely", "absolutely", "same", "love", "like", "congrats", "congratulations", "wish",
    "hope", "keep", "take", "try", "check", "remember", "imagine", "guess", "anyway", "btw", "plus",
    "mine", "yours", "ours", "theirs", "whoa", "aw", "aww", "ah", "um", "hmm", "ugh", "yay", "man",
    "yep", "yup", "nope", "yeh", "yea", "woah", "ooh", "looky", "hooray", "bye", "goodbye", "goodnight",
    "cheers", "ciao", "later", "bravo", "kudos",
}  # fmt: skip

_CONTRACTED = ("n't", "'ve", "'ll", "'re", "'m", "'d")
# (a Latin capital, "Émile", "Łukasz" as much as "Emil")
_NAME_TOKEN = re.compile(r"^[A-Z\u00C0-\u00D6\u00D8-\u00DE\u0100-\u024F][a-zA-Z\u00C0-\u024F'\-]*$")


# Given names spelt like an adverb or a gerund ("Kelly moved to Denver" was "Gina says kelly moved to
# Denver", about no one): a closed list, as no rule tells "Emily is" from "Finally is"
_NAMES_LIKE_ADVERBS = frozenset({
    "emily", "kelly", "molly", "holly", "sally", "polly", "shelly", "kimberly", "beverly", "carly", "billy",
    "dolly", "nelly", "tilly", "milly", "lilly", "elly", "ally", "wally", "marly", "cicely",
    "irving", "sterling", "channing",
})  # fmt: skip


def is_name_token(tok: str) -> bool:
    """A capitalised word that could be (part of) a person's or place's name."""
    # (the case test first: it rejects most words, a lower-case one, without the regex)
    if not tok[:1].isupper() or not _NAME_TOKEN.match(tok) or tok.lower() in NOT_NAMES or len(tok) < 2:
        return False
    low = tok.lower()
    if low.endswith(_CONTRACTED):
        return False  # "Don't", "Haven't", "Must've": a verb opening a sentence
    return not (len(tok) > 4 and low.endswith(("ing", "ly")) and low not in _NAMES_LIKE_ADVERBS)


def conjugate_3sg(verb: str) -> str:
    """The third-person singular of a first-person verb form ("live" -> "lives", "am" -> "is")."""
    low = verb.lower()
    if low in _3SG_IRREGULAR:
        out = _3SG_IRREGULAR[low]
    elif low in _EED_BASES:
        out = low + "s"  # "need" looks like a past form and is none
    elif low in MODALS or low in IRREGULAR_PAST or low.endswith(("ed", "n't")) or not low.isalpha():
        return verb
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    elif len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        out = low[:-1] + "ies"
    else:
        out = low + "s"
    return out.capitalize() if verb[:1].isupper() else out
