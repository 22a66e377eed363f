"""The rule extractor: one assertion per claim, attributed to the right person (brainstore.derive)."""

import json
import re
import statistics
import time
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore.derive import Assertion, Extractor, RuleExtractor, SourceText, default_extractor, source_text
from brainstore.derive.timeexpr import UNKNOWN_START

UTC = timezone.utc  # noqa: UP017
NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
X = default_extractor()


def run(content, self_name="Alice", when=NOW):
    if isinstance(content, str):
        content = {"kind": "message", "text": content, "role": "user"}
    src = source_text(content, self_name=self_name, occurred_at=when)
    out = X.extract(src, self_name=self_name)
    for a in out:
        s, e = a.span
        assert 0 <= s < e <= len(src.text), a
        assert a.valid_from.tzinfo is not None
    return out


def one(content, **kw):
    out = run(content, **kw)
    assert len(out) == 1, out
    return out[0]


def msg(text, speaker=None, role=None):
    c = {"kind": "message", "text": text}
    if speaker:
        c["speaker"] = speaker
    if role:
        c["role"] = role
    return c


# ---- API


def test_api_shapes():
    assert isinstance(X, Extractor) and isinstance(X, RuleExtractor) and X.name == "rules-v2"
    src = source_text(msg("hi"), self_name="Alice", occurred_at=NOW)
    assert src == SourceText("hi", "message", "Alice", None, NOW)
    assert source_text(msg("x", role="assistant"), self_name="A", occurred_at=NOW).speaker == "assistant"
    assert source_text(msg("x", role="system"), self_name="A", occurred_at=NOW).speaker == "system"
    assert source_text(msg("x", role="other"), self_name="A", occurred_at=NOW).speaker is None
    assert source_text(msg("x", speaker="Bob", role="user"), self_name="A", occurred_at=NOW).speaker == "Bob"
    ev = source_text(
        {"kind": "event", "name": "login", "text": "from Lisbon"}, self_name=None, occurred_at=NOW
    )
    assert ev.text == "login: from Lisbon"
    assert source_text({"kind": "event", "name": "login"}, self_name=None, occurred_at=NOW).text == "login"
    f = source_text(
        {"kind": "fact", "subject": "Alice", "predicate": "lives in", "value": "Lisbon"},
        self_name="Alice",
        occurred_at=NOW,
    )
    assert f.text == "Alice lives in Lisbon"
    doc = source_text({"kind": "document", "text": "Hello", "title": "T"}, self_name=None, occurred_at=NOW)
    assert (doc.text, doc.speaker) == ("Hello", None)


# ---- rule 1: atomic claims, no filler, exact spans


def test_first_person_self():
    a = one("I moved to Lisbon.")
    assert (a.statement, a.subject, a.owner) == ("Alice moved to Lisbon.", "Alice", "Alice")
    assert (a.attribute, a.value, a.single_valued, a.change, a.negated) == (
        "lives_in",
        "lisbon",
        True,
        True,
        False,
    )


def test_a_turn_typed_in_lower_case_is_read_as_its_capitalised_form():
    # "i" after a fronted phrase opens the clause, "i" in a clause is the speaker, and a month is a time
    a = one("hey bob, been a few days. in the meantime, i donated the car i drove to a shelter in june.")
    assert (a.statement, a.owner) == ("Alice donated the car Alice drove to a shelter in June 2022.", "Alice")
    assert a.valid_from == datetime(2022, 6, 1, tzinfo=UTC)
    # "i.e." is no pronoun
    b = one("I met the manager, i.e. the boss, yesterday.")
    assert b.statement == "Alice met the manager, i.e. the boss, on 7 May 2023."
    # the self's name typed in lower case names the one spoken to; another lower-case word does not
    c = one(msg("alice, i believe in you. you are a great dancer!", speaker="Gina"))
    assert (c.statement, c.owner) == ("Gina believes in Alice.", "Gina")
    d = one(msg("thanks, man! i believe in you.", speaker="Gina"))
    assert d.statement == "Gina believes in the other person."


@pytest.mark.parametrize(
    ("text", "subject", "statement"),
    [
        ("@channel FYI Bob's out until Monday", "Bob", "Bob is out until 15 May 2023."),
        ("PSA Bob is out today.", "Bob", "Bob is out on 8 May 2023."),
        ("Heads up Dana moved to Austin.", "Dana", "Dana moved to Austin."),
        ("Just FYI, Dana moved to Austin.", "Dana", "Dana moved to Austin."),
        ("FYI I'm moving to Denver next month.", "Gina", "Gina is moving to Denver in June 2023."),
        ("fyi i moved to Denver.", "Gina", "Gina moved to Denver."),
    ],
)
def test_a_chat_lead_in_is_no_part_of_the_subject(text, subject, statement):
    # "FYI Bob" was a person of its own, and "FYI I ..." said nothing
    a = one(msg(text, speaker="Gina"))
    assert (a.subject, a.owner, a.statement) == (subject, subject, statement)


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("I'm from Mexico originally.", "from", "mexico"),
        ("I live in Austin currently.", "lives_in", "austin"),
        ("I work at Acme still.", "works_at", "acme"),
    ],
)
def test_an_adverb_after_a_place_is_no_part_of_it(text, attribute, value):
    # "austin currently" was a value of its own, which conflicted with "austin"
    a = one(text)
    assert (a.attribute, a.value) == (attribute, value)


def test_coordinated_clauses_split():
    text = "I live in Lisbon and work at Acme."
    a, b = run(text)
    assert (a.attribute, a.value, b.attribute, b.value) == ("lives_in", "lisbon", "works_at", "acme")
    assert b.statement == "Alice works at Acme." and b.owner == "Alice"
    assert text[a.span[0] : a.span[1]] == "I live in Lisbon"
    assert text[b.span[0] : b.span[1]] == "work at Acme"


@pytest.mark.parametrize(
    ("content", "facts"),
    [
        (
            "I'm a nurse and my brother is a teacher.",
            [("Alice", "Alice is a nurse.", "job", "nurse"), ("Alice's brother", "Alice's brother is a teacher.", "job", "teacher")],
        ),
        ("I'm 34 and my brother is 30.", [("Alice", "Alice is 34.", "age", "34"), ("Alice's brother", "Alice's brother is 30.", "age", "30")]),
        (msg("I'm 34 and my brother is 30.", speaker="Bob"), [("Bob", "Bob is 34.", "age", "34"), ("Bob's brother", "Bob's brother is 30.", "age", "30")]),
        ("I'm 34 and Bob is 30.", [("Alice", "Alice is 34.", "age", "34"), ("Bob", "Bob is 30.", "age", "30")]),
        # another person's "his wife" we cannot place: no longer in Bob's or Alice's Memory
        ("Bob is 42 years old and his wife works at Acme.", [("Bob", "Bob is 42 years old.", "age", "42")]),
        ("I live in Oslo and his wife lives in Rome.", [("Alice", "Alice lives in Oslo.", "lives_in", "oslo")]),
    ],
)
def test_and_after_a_copular_clause_starts_another_persons_clause(content, facts):
    # "I'm" was no subject with a verb, and "his wife works" no new subject: one Memory of the speaker
    # held the other person's fact ("Alice is a nurse and Alice's brother is a teacher.")
    out = run(content)
    assert [(a.owner, a.statement, a.attribute, a.value) for a in out] == facts


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I think Bob and Carol are getting divorced.", "Alice thinks Bob and Carol are getting divorced."),
        ("I'm sure my brother and my sister are happy.", "Alice is sure Alice's brother and Alice's sister are happy."),
        ("I'm sure he and his wife are happy.", "Alice is sure he and his wife are happy."),
        ("I'm glad Bob and his wife are here.", "Alice is glad Bob and his wife are here."),
    ],
)
def test_a_singular_noun_and_a_plural_verb_after_and_is_half_a_subject(text, statement):
    # "I think Bob and Carol are ...": "Carol are" is no clause of its own (it gave "Alice thinks Bob."),
    # nor, after "I'm sure", "my sister are happy"
    a = one(text)
    assert (a.owner, a.statement) == ("Alice", statement)


def test_two_names_with_their_verb_after_and_start_a_clause():
    # "..., and Precious and Pixie are": "Pixie are Chihuahua mixes" was cut from its other name
    text = "Pepper and Panda are Lab mixes, and Precious and Pixie are Chihuahua mixes."
    a, b = run(msg(text, speaker="Bob"))
    assert a.statement.lower() == "bob says pepper and panda are lab mixes."
    assert b.statement.lower() == "bob says precious and pixie are chihuahua mixes."


def test_no_split_of_object_lists():
    a = one("I like apples and oranges.")
    assert a.attribute == "likes" and a.value == "apples"  # list values cut at "and"; one claim


@pytest.mark.parametrize(
    "text",
    [
        "lol",
        "Hey Mel!",
        "How are you?",
        "Thanks!",
        "Thank you so much!",
        "Good to see you!",
        "haha ok",
        "What's up with you",
        "Do you like tea?",
        "Wow, that's cool, Caroline!",
        "Good luck!",
        "Take care!",
        "I agree.",
        "",
        "   ",
        "?!",
        "Any fun plans for the summer?",
        "Bye!",
    ],
)
def test_filler_produces_nothing(text):
    assert run(text) == []


def test_spans_are_exact_quotes():
    text = "Hey Mel! Good to see you! I went to a support group yesterday and it was so powerful."
    (a,) = run(text)
    assert text[a.span[0] : a.span[1]] == "I went to a support group yesterday"
    assert a.statement == "Alice went to a support group on 7 May 2023."


# ---- rule 2: speakers and possessives


def test_other_speaker_first_person():
    a = one(msg("I'm a teacher.", speaker="Bob"), self_name="Alice")
    assert (a.subject, a.owner, a.attribute, a.value) == ("Bob", "Bob", "job", "teacher")
    assert a.statement == "Bob is a teacher."


def test_my_sister_is_not_me():
    a = one("My sister loves sushi.")
    assert (a.statement, a.subject, a.owner) == (
        "Alice's sister loves sushi.",
        "Alice's sister",
        "Alice's sister",
    )
    assert (a.attribute, a.value) == ("likes", "sushi")


def test_a_named_relative_is_that_person_and_he_refers_to_them():
    visited, chef = run("My friend Sam visited. He is a chef in Toronto.")
    assert (visited.statement, visited.subject, visited.owner) == ("Alice's friend Sam visited.", "Sam", "Sam")
    assert (chef.statement, chef.subject, chef.owner) == ("Sam is a chef in Toronto.", "Sam", "Sam")
    assert (chef.attribute, chef.value) == ("job", "chef")


def test_my_sister_and_i():
    a = one("My sister and I went to Paris last summer.")
    assert a.subject == "Alice" and a.owner == "Alice"
    assert a.statement.startswith("Alice and Alice's sister went to Paris")
    assert a.valid_from == datetime(2022, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # was "A friend of mine moved to Denver.", about Alice: her home Denver
        ("A friend of mine moved to Denver.", "Alice says a friend of Alice's moved to Denver."),
        ("A friend of mine is a nurse.", "Alice says a friend of Alice's is a nurse."),
        ("A coworker of my husband's works at Google.", "Alice says a coworker of Alice's husband's works at Google."),
        # were about Alice: her employer Google, her job nurse, her home town Ohio
        ("The guy next to me works at Google.", "Alice says the guy next to Alice works at Google."),
        ("The woman across from me is a nurse.", "Alice says the woman across from Alice is a nurse."),
        ("The kids in my class are from Ohio.", "Alice says the kids in Alice's class are from Ohio."),
    ],
)
def test_a_person_of_mine_is_not_me(text, statement):
    a = one(text)
    assert (a.attribute, a.statement) == (None, statement) and a.subject != "Alice"


@pytest.mark.parametrize(
    ("text", "subject", "statement"),
    [
        # were "... and my uncle ...", "... and your brother ...": a possessive no one was named for
        ("My dad and my uncle went fishing.", "Alice's dad", "Alice's dad and Alice's uncle went fishing."),
        ("My sister and your brother are dating.", "Alice's sister", "Alice's sister and the other person's brother are dating."),
        # was subject "Alice's car and my" ("bike" read as the verb)
        ("My car and my bike got stolen.", "Alice's car and Alice's bike", "Alice's car and Alice's bike got stolen."),
    ],
)
def test_each_possessive_of_a_subject_says_whose(text, subject, statement):
    a = one(text)
    assert (a.subject, a.statement) == (subject, statement)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were "Alice and Bob went hiking." / "Alice went hiking.": "Kate," was taken for the one spoken to
        ("Kate, Bob and I went hiking.", "Alice, Kate and Bob went hiking."),
        ("Kate, Bob, and I went hiking.", "Alice, Kate and Bob went hiking."),
        ("Kate, Bob, Tom and I just moved to Denver.", "Alice, Kate, Bob and Tom just moved to Denver."),
        ("Tom and I went hiking.", "Alice and Tom went hiking."),
    ],
)
def test_a_list_of_names_and_i_is_who_did_it(text, statement):
    (a,) = run(msg(text, role="user"))
    assert (a.subject, a.owner, a.statement) == ("Alice", "Alice", statement)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were "Alice says Bob and Tom went hiking." / "Tom went hiking.": Kate was taken for the one
        # spoken to, and the list's last comma for a clause's end
        ("Kate, Bob and Tom went hiking.", "Alice says Kate, Bob and Tom went hiking."),
        ("Kate, Bob, and Tom went hiking.", "Alice says Kate, Bob, and Tom went hiking."),
        ("Kate, Bob, Tom and Sue went hiking.", "Alice says Kate, Bob, Tom and Sue went hiking."),
    ],
)
def test_a_list_of_three_names_is_who_did_it(text, statement):
    (a,) = run(msg(text, role="user"))
    assert (a.subject, a.statement) == (text.removesuffix(" went hiking."), statement)


@pytest.mark.parametrize("text", ["Kate, Bob and Tom live in Denver.", "Kate, Bob, and Tom live in Denver."])
def test_each_of_three_names_listed_has_the_attribute(text):
    out = run(msg(text, role="user"))
    assert {(a.subject, a.attribute, a.value, a.statement) for a in out} == {
        (who, "lives_in", "denver", text) for who in ("Kate", "Bob", "Tom")
    }


def test_a_name_before_a_list_after_a_greeting_is_still_spoken_to():
    (a,) = run(msg("Hey Kate, Bob and I went hiking.", role="user"))
    assert a.statement == "Alice and Bob went hiking."


def test_my_own_attributes():
    assert one("My name is Alice Smith.").attribute == "name"
    fav = one("My favorite food is sushi.")
    assert (fav.subject, fav.attribute, fav.value, fav.single_valued) == ("Alice", "likes", "sushi", False)
    dog = one("My dog's name is Rex.")
    assert (dog.subject, dog.owner, dog.attribute, dog.value) == ("Alice's dog", "Alice's dog", "name", "rex")
    h = one("My husband is Bob.")
    assert (h.subject, h.attribute, h.value) == ("Alice", "married_to", "bob")


@pytest.mark.parametrize(
    "text, subject, value",
    [
        ("I'm called Ali.", "Alice", "ali"),
        ("I was called Bobby as a kid.", "Alice", "bobby"),
        ("My dog is called Rex.", "Alice's dog", "rex"),
        ("I've been called Al since college.", "Alice", "al"),
        ("My cat got named Luna by the kids.", "Alice's cat", "luna"),
        ("I go by Al.", "Alice", "al"),
    ],
)
def test_a_name_is_given_in_the_passive(text, subject, value):
    a = one(text)
    assert (a.subject, a.attribute, a.value) == (subject, "name", value)


@pytest.mark.parametrize(
    "text", ["I called Mom yesterday.", "Bob called Tom.", "Alice called Carol.", "She named Tom her heir."]
)
def test_calling_or_naming_someone_gives_nobody_a_name(text):
    # "I called Mom yesterday" was Alice's name "mom", held for that one day; "Bob called Tom" Bob's
    # name "tom", held from the beginning of time until the Record (the past tense of a state)
    assert all(a.attribute is None for a in run(msg(text, speaker="Alice")))


def test_my_possessions_are_owned_by_me():
    a = one("My car is red.")
    assert (a.subject, a.owner, a.attribute) == ("Alice's car", "Alice", None)


def test_we_includes_speaker():
    a = one(msg("We're thinking about going camping next month.", speaker="Melanie"))
    assert (a.subject, a.owner) == ("Melanie", "Melanie")
    assert a.statement == "Melanie and others are thinking about going camping in June 2023."
    assert a.valid_from == datetime(2023, 6, 1, tzinfo=UTC)


def test_pronouns_rewritten():
    a = one(msg("I'm lucky to have my husband and kids.", speaker="Melanie"))
    assert a.statement == "Melanie is lucky to have Melanie's husband and kids."


@pytest.mark.parametrize(
    "text",
    [
        "Bob visited Carol. She lives in Tampa.",
        "Bob talked to Carol. She lives in Tampa.",
        "Bob bought flowers for Carol. She is a nurse.",
        "I got a letter from Carol. She lives in Tampa.",
    ],
)
def test_a_name_a_person_may_follow_leaves_a_pronoun_unresolved(text):
    """Carol, after "visited", "to", "for" or "from", was taken for a place: the "she" was Bob's (his
    home Tampa, his job nurse); two people may be meant, so neither is."""
    assert [a.subject for a in run(msg(text, speaker="Alice")) if a.attribute] == []


@pytest.mark.parametrize(
    ("text", "subject", "attribute"),
    [
        ("Bob moved to Toronto. He works at Acme.", "Bob", "works_at"),  # no one else: Toronto is no "he"
        ("Bob works in Denver. He is a nurse.", "Bob", "job"),
        ("I had lunch with Bob. He just moved to Oslo.", "Bob", "lives_in"),
    ],
)
def test_a_name_only_a_place_follows_leaves_the_pronoun_its_person(text, subject, attribute):
    assert (subject, attribute) in [(a.subject, a.attribute) for a in run(msg(text, speaker="Alice"))]


@pytest.mark.parametrize(
    "text",
    [
        "Lisa and Tom came over. She is a nurse.",  # was Tom's job: the list's first name went unnoted
        "Lisa, Tom and Mark came over. He is a nurse.",  # was Mark's: Tom, after a comma, was a place
        "I went to Lisbon and Porto. He is a nurse.",  # was Porto's: a place listed after a place
        "Paris and Rome were amazing. She is a nurse.",
    ],
)
def test_a_name_listed_with_another_is_of_its_kind(text):
    """A pronoun after a list of names is none of them, and a place listed after a place is no person."""
    assert [a.subject for a in run(msg(text, speaker="Alice")) if a.attribute == "job"] == []


def test_a_name_listed_with_i_is_whom_she_may_be():
    assert ("Lisa", "job") in [(a.subject, a.attribute) for a in run(msg("Lisa and I went out. She is a nurse."))]


@pytest.mark.parametrize(
    "text",
    [
        "He told me he's a teacher.",
        "She told me she lives in Paris.",
        "She told me her husband is a nurse.",
        "They told me they're moving to Denver.",
    ],
)
def test_news_told_by_someone_unnamed_is_nobody_s(text):
    """Was "She told Alice she lives in Paris.", about Alice: the news is the unnamed one's, not hers."""
    assert run(msg(text, speaker="Alice")) == []


def test_what_someone_unnamed_told_the_speaker_of_themself_is_the_speaker_s():
    a = one(msg("She told me I'm a great cook.", speaker="Alice"))
    assert (a.subject, a.statement) == ("Alice", "She told Alice Alice is a great cook.")


def test_no_self_without_self_name():
    a = one(msg("I live in Lisbon.", role="user"), self_name=None)
    assert a.owner is None and a.subject == "the speaker"


# ---- rule 3: assistant turns


@pytest.mark.parametrize(
    "text",
    [
        "You should try yoga.",
        "You mentioned you like hiking.",
        "Your sister lives in Paris.",
        "I think you love tea.",
        "I can help with that.",
        "We could book a table.",
        "You live in Lisbon.",
    ],
)
@pytest.mark.parametrize("role", ["assistant", "system"])
def test_assistant_says_nothing_about_the_user(text, role):
    assert run(msg(text, role=role)) == []


def test_assistant_third_person_is_unowned():
    for a in run(msg("Alice lives in Lisbon. Bob likes tea.", role="assistant")):
        assert a.owner is None


# ---- rule 4: second and third person


def test_second_person_unknown_addressee():
    a = one(msg("You live in Lisbon now.", speaker="Bob"))
    assert a.owner is None and a.subject == "the other person"
    assert run(msg("You are a great painter.", speaker="Bob")) == []  # praise of nobody we know


def test_second_person_is_never_the_addressees_own():
    # what Bob says of Carol is Bob's claim: never Carol's own (spec guarantee 5)
    a = one(msg("Carol, you live in Lisbon now!", speaker="Bob"))
    assert (a.subject, a.owner, a.statement, a.attribute) == (
        "Carol",
        None,
        "Carol lives in Lisbon now.",
        "lives_in",
    )
    # a judgement of the addressee is the speaker's view, owned by the speaker
    b = one(msg("Wow Carol, you're so brave to speak up for the trans community.", speaker="Bob"))
    assert (b.subject, b.owner) == ("Bob", "Bob")
    assert b.statement == "Bob thinks Carol is so brave to speak up for the trans community."


@pytest.mark.parametrize(
    "text",
    [
        "You're doing amazing!",
        "Carol, you've got guts.",
        "Carol, the love around you is awesome.",
        "That's so cool, Carol!",
        "Carol, you'd be a great counselor!",
        "Books have such an awesome power.",
        "We got this!",
        "We can do it, Carol!",
        "I've had a lot of things happening to me.",
        "It was amazing.",
        "If I had a dog, I would walk it every day.",
        "I wish I lived in Paris.",
        "I hope you have a great trip!",
        "Maybe I'll move to Berlin.",
        "You should try yoga.",
        "Let's go hiking sometime.",
        "Keep up the great work!",
        "Sounds like fun!",
        "I could try painting.",
    ],
)
def test_no_praise_pleasantries_wishes_or_hypotheticals(text):
    assert run(msg(text, speaker="Bob")) == []


def test_vocative_stripped():
    (a,) = run(msg("That's great, Mel! I'm really proud of you!", speaker="Caroline"))
    assert a.statement == "Caroline is really proud of Mel." and a.owner == "Caroline"


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("John told me I work too much.", "John told Alice Alice works too much."),
        ("Emma thinks I live in London.", "Emma thinks Alice lives in London."),
        ("Jen mentioned I was promoted.", "Jen mentioned Alice was promoted."),
    ],
)
def test_an_i_reported_by_a_name_is_the_speaker(text, statement):
    # was "John works too much.", and "Emma lives in London." went to Alice's profile as Emma's home
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.attribute) == (statement, None)  # what someone thinks of Alice is no fact of hers


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # was the friend's home "paris is a chef"
        ("My friend who lives in Paris is a chef.", [("Alice's friend", "job", "chef")]),
        ("My friend who lives in Paris.", []),
        # were nothing: "Bob," was taken for the one spoken to, and the verb after a comma had no subject
        ("Bob, who is 50, works at Acme.", [("Bob", "age", "50"), ("Bob", "works_at", "acme")]),
        ("My neighbour Tom, a dentist, just moved to Austin.", [("Tom", "job", "dentist"), ("Tom", "lives_in", "austin")]),
        ("My mom, who is 70, lives in Ohio.", [("Alice's mom", "age", "70"), ("Alice's mom", "lives_in", "ohio")]),
        ("Bob, whose wife is a nurse, works at Acme.", [("Bob", "works_at", "acme")]),  # the nurse is the wife
    ],
)
def test_a_clause_or_a_noun_about_a_person_between_them_and_their_verb_is_theirs(text, found):
    out = run(msg(text, speaker="Alice"))
    assert [(a.subject, a.attribute, a.value) for a in out if a.attribute] == found
    assert all(a.owner == a.subject for a in out)


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("My sister (the one in Oslo) had a baby.", "Alice's sister"),
        ("My boss - who is a jerk - got fired.", "Alice's boss"),
        ("My boss \u2014 who is a jerk \u2014 got fired.", "Alice's boss"),
        ("My ex; the one from Boston; got married.", "Alice's ex"),
        ("Tom (my neighbor) lost his job.", "Tom"),
        ("ok so my sister (the one in Oslo) just had a baby boy", "Alice's sister"),
    ],
)
def test_an_aside_does_not_cut_the_subject_from_its_verb(text, subject):
    # split at the aside, the verb after it had no subject and was the speaker's: "Alice had a baby."
    # ("Tom (my neighbor)" also says who Tom is: see the test after this one)
    a = run(msg(text, speaker="Alice"))[-1]
    assert a.subject == subject and a.statement.startswith(subject)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # were "Alice's roommate, just got a cat.": "Kate," was taken for the one spoken to
        (
            "Kate, my roommate, just got a cat.",
            [("Kate", None, "Kate is Alice's roommate."), ("Kate", "has_pet", "Kate just got a cat.")],
        ),
        (
            "Kate, my best friend, lives in Boston.",
            [("Kate", None, "Kate is Alice's best friend."), ("Kate", "lives_in", "Kate lives in Boston.")],
        ),
        # was "Kate moved to Denver." alone: who Kate is was lost
        (
            "Kate (my roommate) moved to Denver.",
            [("Kate", None, "Kate is Alice's roommate."), ("Kate", "lives_in", "Kate moved to Denver.")],
        ),
        # was "Alice's roommate, Kate, just got a cat.", of nobody's cat
        ("My roommate, Kate, just got a cat.", [("Kate", "has_pet", "Alice's roommate Kate just got a cat.")]),
        ("My sister Kate lives in Boston.", [("Kate", "lives_in", "Alice's sister Kate lives in Boston.")]),
        # was "Alice says Kate just got a cat.": an adverb after a name hid the verb from it
        ("Kate just got a cat.", [("Kate", "has_pet", "Kate just got a cat.")]),
        # someone else's relation is said of the name only ("her husband" is nobody known here)
        ("Tom, her husband, works at Acme.", [("Tom", "works_at", "Tom works at Acme.")]),
    ],
)
def test_a_name_set_off_with_whose_person_it_is_is_the_subject(text, found):
    out = run(msg(text, role="user"))
    assert [(a.subject, a.attribute, a.statement) for a in out] == found
    # who Kate is to Alice is Alice's to say ("Kate is my roommate." is too); what Kate did is Kate's,
    # however "my" in the aside reads
    assert [a.owner for a in out] == ["Alice" if a.attribute is None else a.subject for a in out]


@pytest.mark.parametrize(
    ("text", "subject", "statement", "attribute"),
    [
        # was "Alice's sister, not Alice, is vegan." negated: the "not" denies the one set aside, not the claim
        ("My sister, not me, is vegan.", "Alice's sister", "Alice's sister is vegan.", None),
        # was nothing: "Bob," was taken for the one spoken to
        ("Bob, not Carol, lives in Denver.", "Bob", "Bob lives in Denver.", "lives_in"),
        ("My sister, not my brother, works at Acme now.", "Alice's sister", "Alice's sister works at Acme now.", "works_at"),
    ],
)
def test_a_person_set_against_another_is_the_subject_and_the_other_is_no_part_of_it(text, subject, statement, attribute):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.subject, a.statement, a.attribute, a.negated) == (subject, statement, attribute, False)


@pytest.mark.parametrize(
    ("text", "statement", "day"),
    [
        # were "Alice met Kate." (dated when said) and "Alice's new neighbor, on 7 May 2023."
        ("I met Kate, my new neighbor, yesterday.", "Alice met Kate, Alice's new neighbor, on 7 May 2023.", "2023-05-07"),
        ("I told Kate, my roommate, about it.", "Alice told Kate, Alice's roommate, about it.", "2023-05-08"),
    ],
)
def test_whose_person_a_name_is_is_no_clause_of_its_own_after_an_object(text, statement, day):
    (a,) = run(msg(text, role="user"))
    assert (a.subject, a.statement, a.valid_from.date().isoformat()) == ("Alice", statement, day)


@pytest.mark.parametrize(
    "text",
    ["Kate, my dear, you look great.", "Kate, my friend, can you help me?", "Kate, can you send me the file?"],
)
def test_a_name_spoken_to_with_an_endearment_is_still_spoken_to(text):
    assert run(msg(text, role="user")) == []


@pytest.mark.parametrize(
    ("text", "statement", "day"),
    [
        ("I've got 2 kids: Sam (8) and Ella (5).", "Alice has got 2 kids: Sam (8) and Ella.", "2023-05-08"),
        ("I adopted a cat (Luna) yesterday.", "Alice adopted a cat (Luna) on 7 May 2023.", "2023-05-07"),
        (
            "I visited my sister (the one in Oslo) last week.",
            "Alice visited Alice's sister (the one in Oslo) in the week of 1 May 2023.",
            "2023-05-01",
        ),
    ],
)
def test_brackets_without_a_verb_do_not_end_the_clause_they_interrupt(text, statement, day):
    # were "Alice has got 2 kids: Sam." and the adoption and the visit dated to the day they were told
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.valid_from.date().isoformat()) == (statement, day)


def test_an_aside_that_is_a_clause_is_read_too():
    said = statements("My sister - she's a nurse - works nights.", speaker="Alice")
    assert said == ["Alice's sister - she's a nurse - works nights.", "Alice's sister is a nurse."]


@pytest.mark.parametrize(
    "text", ["I live in a small town called Ely.", "I have a dog named Rex.", "I work for a company based in Paris."]
)
def test_a_current_state_with_a_participle_in_its_object_stays_open(text):
    # was closed when said (valid_from unknown, valid_to the Record's time): "called" read as the verb
    (a,) = run(msg(text, speaker="Alice"))
    assert a.attribute is not None and a.valid_to is None


def test_an_appointment_on_a_weekday_is_the_coming_one():
    (a,) = run(msg("I have a dentist appointment on Friday.", speaker="Alice"))  # said on Monday 8 May 2023
    assert "12 May 2023" in a.statement and a.valid_from.date().isoformat() == "2023-05-12"


@pytest.mark.parametrize(
    "text",
    [
        "I was going to move to Berlin but changed my mind.",
        "We were gonna move to Berlin.",
        "I was going to quit my job at Acme.",
        "I was planning to move to Berlin.",
    ],
)
def test_what_was_going_to_happen_states_no_attribute(text):
    # a move that was only meant closed the home held and opened Berlin; a job meant to be quit, the job
    said = run(msg(text, speaker="Alice"))
    assert said and all(a.attribute is None for a in said)


@pytest.mark.parametrize(
    "text",
    [
        "Pretend you are my boss and I am asking for a raise.",
        "Let's role-play: you are a barista and I am a customer who lives in Paris.",
        "Act as my lawyer and I am the client.",
        "Let's play a game where I live in Tokyo.",
    ],
)
def test_make_believe_is_not_the_speaker_s_life(text):
    # were "Alice is asking for a raise.", "Alice is a customer who lives in Paris." (owned by Alice) and
    # "Alice and Act as Alice's lawyer am the client."
    assert run(msg(text, speaker="Alice")) == []


def test_pretending_is_a_fact_of_its_own():
    assert statements("I pretend to like jazz but I love metal.", speaker="Alice") == [
        "Alice pretends to like jazz.",
        "Alice loves metal.",
    ]


@pytest.mark.parametrize("text", ["My coworker Alice works at Google.", "My wife Alice hates cats."])
def test_what_another_says_of_the_self_by_name_is_not_the_self_s_own(text):
    # was owned by Alice: Bob's word about her came back as her profile, her owned Memories, her schema fill
    (a,) = run(msg(text, speaker="Bob"))
    assert a.subject == "Alice" and a.owner is None
    (a,) = run(msg(text.replace("Alice", "Sam"), speaker="Bob"))
    assert a.owner == "Sam"  # anyone else's stays told as theirs


@pytest.mark.parametrize(
    ("text", "statement", "value"),
    [
        ("I moved to Berlin two weeks ago.", "Alice moved to Berlin in the week of 24 April 2023.", "berlin"),
        ("I moved to Berlin 3 years ago.", "Alice moved to Berlin in 2020.", "berlin"),
        ("I started at Acme three months ago.", "Alice started at Acme in February 2023.", "acme"),
        ("I adopted Rex 3 days ago.", "Alice adopted Rex on 5 May 2023.", None),
        # a half: were the home "paris three", then "paris back" and no time at all
        ("I moved to Paris three and a half years ago.", "Alice moved to Paris in 2019.", "paris"),
        ("I moved to Paris a month and a half ago.", "Alice moved to Paris in March 2023.", "paris"),
        ("I moved to Paris back in '19.", "Alice moved to Paris back in 2019.", "paris"),
        ("I moved to Paris this past weekend.", "Alice moved to Paris on the weekend of 6 May 2023.", "paris"),
    ],
)
def test_a_time_counted_back_is_as_precise_as_its_unit_and_no_part_of_the_value(text, statement, value):
    # were "on 24 April 2023" and "on 8 May 2020", and the home "berlin two weeks" / "berlin 3 years",
    # which a later "I live in Berlin" did not match
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.value) == (statement, value)


@pytest.mark.parametrize(
    "text",
    [
        "Congrats on moving to Berlin!",  # was Alice's own move, closing her home
        "Enjoy living in Berlin!",  # was "Alice enjoys living in Berlin."
        "None of my friends live in Paris.",  # was Alice's home, unnegated
        "Half of my team works at Google.",  # was Alice's employer
        "Half my family lives in Ohio.",  # was Alice's home: "of" left out
        "In my novel, I live in Tokyo.",
        "In the game, I live in Tokyo.",
        "Oh sure, I just LOVE working at Acme. /s",
    ],
)
def test_what_is_said_of_others_wished_for_made_up_or_meant_in_jest_is_no_attribute_of_the_speaker(text):
    assert all(a.attribute is None or a.subject != "Alice" for a in run(msg(text, speaker="Alice")))


@pytest.mark.parametrize(
    "text",
    [
        # were the job and the employer, and the home: what a joke mark takes back is no fact
        "I'm a nurse at Google, just kidding.",
        "I live in Denver lol jk",
        "I live in Denver. Just kidding!",
        "I live in Denver (j/k).",
        "I live in Denver. I'm kidding.",
    ],
)
def test_what_is_taken_back_as_a_joke_says_nothing(text):
    assert run(msg(text, speaker="Alice")) == []


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Denver last year. I'm 90 years old jk",
        "I moved to Denver last year. I'm a nurse at Google, just kidding!",
        "I moved to Denver last year. I'm 90. I'm kidding.",
        "I moved to Denver last year. I'm 90. jk",
        # a sentence of laughter and the mark is only the mark (was: the 90 kept, or the move taken back)
        "I moved to Denver last year. I'm 90. lol jk",
        "I moved to Denver last year. I'm 90. Hahaha, just kidding!",
        "I moved to Denver last year. I'm 90. lmao jk",
    ],
)
def test_a_joke_mark_takes_back_the_sentence_it_ends_not_the_message(text):
    # was nothing at all: the mark at the message's end took back all of it
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value) == ("lives_in", "denver")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # were the home, the job taken back beside the one said after (the doctor lost)
        ("I live in Boston. Just kidding, I live in Denver.", [("lives_in", "denver")]),
        ("I'm a nurse. JK I'm a doctor.", [("job", "doctor")]),
        ("I live in Boston. Kidding! I live in Denver.", [("lives_in", "denver")]),
        # only the sentence before is taken back; "Kidding aside" and "Joking around" are no mark
        ("I live in Boston. I love my job. JK, I live in Denver.", [("lives_in", "boston"), ("lives_in", "denver")]),
        ("I live in Boston. Joking around is fun.", [("lives_in", "boston")]),
    ],
)
def test_a_sentence_opening_on_a_joke_mark_takes_back_the_one_before(text, said):
    assert [(a.attribute, a.value) for a in run(msg(text, speaker="Alice")) if a.attribute] == said


@pytest.mark.parametrize(
    ("text", "attribute"),
    [("I live in Denver, I'm not kidding.", "lives_in"), ("I live in Denver, no kidding.", "lives_in"), ("I love joking.", "likes")],
)
def test_what_is_said_in_earnest_or_of_joking_stands(text, attribute):
    assert run(msg(text, speaker="Alice"))[0].attribute == attribute


@pytest.mark.parametrize(
    "text",
    [
        "The guy I met at the gym works at Google.",  # was Alice's employer
        "The dog I adopted loves walks.",  # was Alice's liking
        "The guy I'm dating lives in Boston.",  # was Alice's home
    ],
)
def test_the_speaker_inside_a_subject_gives_the_speaker_none_of_its_attributes(text):
    (a,) = run(msg(text, speaker="Alice"))
    assert a.subject != "Alice" and a.attribute is None


@pytest.mark.parametrize(
    ("text", "subject", "owner"),
    [
        ("My son's teacher moved to Rome.", "Alice's son's teacher", "Alice's son's teacher"),
        ("My sister's husband works at IBM.", "Alice's sister's husband", "Alice's sister's husband"),
        ("My dad's company moved to Lyon.", "Alice's dad's company", None),
    ],
)
def test_a_chain_of_possessives_is_about_its_last_link(text, subject, owner):
    # were the son's, the sister's and the dad's: the son's home closed by his teacher's move
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.subject, a.owner) == (subject, owner)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "On Mon, May 1, 2023 at 10:00 AM Bob <bob@x.com> wrote:\n> I live in Paris now.\n> I work at Google.",
            {("Bob lives in Paris now.", "Bob"), ("Bob works at Google.", "Bob")},
        ),
        ("> I moved to Berlin last year.\nThat's great news!", set()),
        (
            "Bob wrote:\n> I quit my job at Google.\nSorry to hear that. I work at Acme now.",
            {("Bob quit Bob's job at Google.", "Bob"), ("Alice works at Acme now.", "Alice")},
        ),
        (
            "---------- Forwarded message ---------\nFrom: Carol <carol@x.com>\nSubject: news\n\nI work at Sony now.",
            {("Carol works at Sony now.", "Carol")},
        ),
        ("Great news!\n\nOn Tue, Bob Lee wrote:\nI moved to Lyon.", {("Bob Lee moved to Lyon.", "Bob Lee")}),
        # Outlook's reply and forward: no "Original Message" line, only the header block
        (
            "See below\n\n________________________________\nFrom: Eve Smith <eve@x.com>\nSent: Monday, May 1, 2023"
            " 9:00 AM\nTo: Alice\nSubject: hi\n\nI have two cats.",
            {("Eve Smith has two cats.", "Eve Smith")},
        ),
        ("I moved to Lyon.\n\nFrom: Eve\nTo: Alice\n\nI live in Boston.", {("Alice moved to Lyon.", "Alice"), ("Eve lives in Boston.", "Eve")}),
        ("From: my window, I see Lyon. I live in Lyon.", {("Alice lives in Lyon.", "Alice"), ("Alice sees Lyon.", "Alice")}),
        ("Bob said: I live in Paris", {("Bob lives in Paris.", "Bob")}),
        ("I said: I live in Rome.", {("Alice said: Alice lives in Rome.", "Alice")}),
    ],
)
def test_words_pasted_from_another_are_theirs_or_no_one_s(text, found):
    # were all Alice's: "Alice lives in Paris now.", "Alice moved to Berlin in 2022.", and Bob's quoted
    # "I quit my job at Google." closed Alice's own job through the API
    assert {(a.statement, a.owner) for a in run(msg(text, speaker="Alice"))} == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # were "Alice works at Google now." and "Alice is in Austin.": the line's second sentence, or its
        # clause after a comma, was read without the name that opens the line
        ("Bob: I moved to Denver. I work at Google now.", set()),
        ("Bob: I moved to Denver last month.\nCarol: cool, I'm in Austin.", set()),
        ("Bob Lee: so, I moved to Denver last month.", set()),
        # was "Alice's mom: I moved to Denver." and Alice's job
        (
            "My mom: I moved to Denver. I work at Google now.",
            {("Alice's mom moved to Denver.", "Alice's mom"), ("Alice's mom works at Google now.", "Alice's mom")},
        ),
        # a label, a date or the speaker opening the line leaves the words the speaker's own
        ("Update: I moved to Denver. I work at Google now.", {("Alice moved to Denver.", "Alice"), ("Alice works at Google now.", "Alice")}),
        ("Note: I work at Google now.\nBob: hi\nI live in Austin.", {("Alice works at Google now.", "Alice"), ("Alice lives in Austin.", "Alice")}),
        ("Yesterday: I moved to Denver. I work at Google now.", {("Alice moved to Denver on 7 May 2023.", "Alice"), ("Alice works at Google now.", "Alice")}),
    ],
)
def test_a_line_opened_by_another_s_name_is_never_the_speaker_s_words(text, found):
    assert {(a.statement, a.owner) for a in run(msg(text, speaker="Alice"))} == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("```\nI work at Apple\n```\nThat's just a sample.", set()),
        ("Example input:\n```text\nI live in Denver and I have two cats.\n```\nI live in Oslo.", {"Alice lives in Oslo."}),
        ("~~~\nI work at Apple\n~~~\nI live in Rome.", {"Alice lives in Rome."}),
        ("Unclosed:\n```\nI work at Apple", set()),
        ("The string `I work at Google` is the test input.", set()),
        ("I love ~~~ tildes ~~~ and I live in Rome.", {"Alice loves ~~~ tildes.", "Alice lives in Rome."}),
    ],
)
def test_code_is_no_one_s_claim(text, found):
    # were "Alice works at Apple.", "Alice lives in Denver.", "Alice has two cats.": the words of a code
    # block or span read as the speaker's own
    assert {a.statement for a in run(msg(text, speaker="Alice"))} == found


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (
            "Can you help me reply to this email?\n\nHi Alice,\n\nI'm moving to Denver next month and I'm quitting"
            " Acme.\n\nBest,\nCarol",
            {("Carol is moving to Denver in June 2023.", "Carol"), ("Carol is quitting Acme.", "Carol")},
        ),
        ("Hi Alice, I'm moving to Denver next month. Thanks, Carol", {("Carol is moving to Denver in June 2023.", "Carol")}),
        ("Hey Alice - I'm moving to Denver next month.\n\nCheers,\n- Carol", {("Carol is moving to Denver in June 2023.", "Carol")}),
        ("Hi team,\n\nI'm moving to Denver next month.\n\nBest,\nCarol", {("Carol is moving to Denver in June 2023.", "Carol")}),
        ("Hi Alice,\n\nI loved working with you.\n\nBest,\nCarol", {("Carol loved working with Alice.", "Carol")}),
        (
            {"kind": "document", "text": "Hi Alice,\n\nI got the job at Google!\n\nCheers,\nTom"},
            {("Tom got the job at Google.", "Tom")},
        ),
        # greeting the self, signed by no one: someone's whose name the text does not give
        ("Hi Alice, I'm moving to Denver next month.", set()),
        ("Hi Alice,\n\nI'm moving to Denver next month.\n\nSent from my iPhone", set()),
        # the speaker's own letters, and a thanks to the one greeted
        ("Hi Bob,\n\nI'm moving to Denver next month.\n\nBest,\nAlice", {("Alice is moving to Denver in June 2023.", "Alice")}),
        ("Hi Bob, I'm moving to Denver next month. Thanks, Bob!", {("Alice is moving to Denver in June 2023.", "Alice")}),
        (msg("Hey Bob! I'm moving to Denver next month. Thanks, Mel", speaker="Melanie"), {("Melanie is moving to Denver in June 2023.", "Melanie")}),
        (msg("Hi Alice! I'm moving to Denver next month.", speaker="Bob"), {("Bob is moving to Denver in June 2023.", "Bob")}),
    ],
)
def test_a_letter_pasted_in_is_its_signer_s(content, found):
    # were all Alice's: "Alice is moving to Denver in June 2023." (her home), "Alice is quitting Acme.";
    # the document's was "the author"'s, and "Hi team" from Carol was Alice's
    assert {(a.statement, a.owner) for a in run(content)} == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Forwarding this from Carol: I'm leaving Acme at the end of June.", {("Carol is leaving Acme at the end of June 2023.", "Carol")}),
        ("Here's what Bob sent me:\nI'm moving to Denver next month.", {("Bob is moving to Denver in June 2023.", "Bob")}),
        ("Bob's email:\nI got the job at Google!", {("Bob got the job at Google.", "Bob")}),
        (
            'Got this from my landlord: "I\'m selling the building in July." Ugh.',
            {("Alice's landlord is selling the building in July 2023.", "Alice's landlord")},
        ),
        ("A text from my mom: I'm coming to visit in July.", {("Alice's mom is coming to visit in July 2023.", "Alice's mom")}),
        # the speaker's own words: what the speaker sent, and no source that is a person
        ("Here's what I sent Bob:\nI'm moving to Denver next month.", {("Alice is moving to Denver in June 2023.", "Alice")}),
        ("Copied this from my notes:\nI moved to Denver in May.", {("Alice moved to Denver in May 2023.", "Alice")}),
    ],
)
def test_words_after_a_lead_in_naming_their_source_are_the_source_s(text, found):
    # were Alice's: "Alice is forwarding this from Carol: Alice is leaving Acme ...", "Alice got the job at
    # Google.", "Alice is selling the building in July 2023.", "Alice is moving to Denver" (her home)
    assert {(a.statement, a.owner) for a in run(msg(text, speaker="Alice"))} == found


@pytest.mark.parametrize(
    "text", ["Notes about Bob:\n- moved to Oslo in May\n- started at Spotify", "Bob's updates:\n- moved to Oslo in May"]
)
def test_list_items_under_a_heading_naming_another_are_not_the_speaker_s(text):
    # were "Alice moved to oslo in May 2023." (her home) and "Alice started at spotify."
    assert run(msg(text, speaker="Alice")) == []
    own = run(msg(text.replace("Notes about Bob", "My week").replace("Bob's updates", "My week"), speaker="Alice"))
    assert own and all(a.subject == "Alice" for a in own)


@pytest.mark.parametrize(
    "text", ["Meeting notes:\n- I moved to Denver", "Shopping list:\n- milk\n- eggs", "  * Packing list:\n    - socks"]
)
def test_a_line_ending_in_a_colon_labels_what_follows_and_is_no_activity(text):
    # were "Alice is meeting notes.", "Alice is shopping list.": a gerund opening a line read as what the
    # speaker is doing, though the line is a heading
    assert not any("list" in a.statement or "notes" in a.statement for a in run(msg(text, speaker="Alice")))
    # a gerund clause is still the speaker's activity
    assert [a.statement for a in run(msg("Shopping for shoes!", speaker="Alice"))] == ["Alice is shopping for shoes."]


@pytest.mark.parametrize(
    ("text", "statements", "start"),
    [
        (
            "Yesterday:\n- I moved to Denver\n- started at Stripe",
            ["Alice moved to Denver on 7 May 2023.", "Alice started at Stripe on 7 May 2023."],
            date(2023, 5, 7),
        ),
        ("Last week:\n* adopted a puppy", ["Alice adopted a puppy in the week of 1 May 2023."], date(2023, 5, 1)),
        ("March 2022:\n1. I quit my job at Google", ["Alice quit Alice's job at Google in March 2022."], date(2022, 3, 1)),
        ("In March 2022:\n1) I quit my job at Google", ["Alice quit Alice's job at Google in March 2022."], date(2022, 3, 1)),
        ("On Monday:\n- I quit my job at Google", ["Alice quit Alice's job at Google on 1 May 2023."], date(2023, 5, 1)),
        ("This morning:\n\u2022 I adopted a puppy", ["Alice adopted a puppy on 8 May 2023."], date(2023, 5, 8)),
        ("Yesterday morning:\n- I went to the gym", ["Alice went to the gym on 7 May 2023 in the morning."], date(2023, 5, 7)),
        ("Things I did yesterday:\n- moved to Denver", ["Alice moved to Denver on 7 May 2023."], date(2023, 5, 7)),
        ("What we did last weekend:\n- I went hiking", ["Alice went hiking on the weekend of 6 May 2023."], date(2023, 5, 6)),
    ],
)
def test_list_items_under_a_heading_that_is_a_time_are_of_that_time(text, statements, start):
    # were "Alice moved to Denver." and the rest, undated: true from when the Record came, a day late
    out = run(msg(text, speaker="Alice"))
    assert [a.statement for a in out] == statements
    assert all(a.valid_from.date() == start and a.time_stated for a in out)


@pytest.mark.parametrize(
    ("listed", "fronted"),
    [
        ("Yesterday:\n- I moved to Denver", "Yesterday, I moved to Denver."),
        ("Last month:\n- I worked at Acme", "Last month, I worked at Acme."),
        ("On Friday afternoon:\n- Bob moved to Oslo", "On Friday afternoon, Bob moved to Oslo."),
        # a time to come makes no plan a fact: the item is what the sentence is
        ("Tomorrow:\n- I move to Denver", "Tomorrow, I move to Denver."),
        ("Next week:\n- I start at Stripe", "Next week, I start at Stripe."),
    ],
)
def test_a_list_item_under_a_time_is_what_its_sentence_with_the_time_fronted_is(listed, fronted):
    def read(text):
        return [(a.statement, a.attribute, a.value, a.valid_from, a.valid_to, a.time_stated) for a in run(text)]

    assert read(listed) == read(fronted) != []


@pytest.mark.parametrize(
    ("text", "own", "since"),
    [
        ("Yesterday:\n- I moved to Denver in 2019\n- started at Stripe", "Alice moved to Denver in 2019.", date(2019, 1, 1)),
        ("Yesterday:\n- I usually run\n- started at Stripe", "Alice usually runs.", NOW.date()),  # a habit's no day's
        ("Yesterday:\n- started at Stripe\n\n- I moved to Denver", "Alice moved to Denver.", NOW.date()),  # a blank line ends it
        ("Yesterday:\n- started at Stripe\nThen:\n- I moved to Denver", "Alice moved to Denver.", NOW.date()),  # so does a line
    ],
)
def test_a_list_item_keeps_its_own_time_and_its_list_s_end(text, own, since):
    out = {a.statement: a.valid_from.date() for a in run(msg(text, speaker="Alice"))}
    assert out == {"Alice started at Stripe on 7 May 2023.": date(2023, 5, 7), own: since}


@pytest.mark.parametrize("heading", ["Plans for June:", "Notes from Tuesday:", "Things to do on Monday:", "Yesterday -"])
def test_a_heading_that_is_more_than_a_time_dates_no_list_item(heading):
    dated = run(msg("Yesterday:\n- I moved to Denver", speaker="Alice"))
    assert [a.valid_from for a in dated] == [datetime(2023, 5, 7, tzinfo=UTC)]
    items = [a for a in run(msg(f"{heading}\n- I moved to Denver", speaker="Alice")) if a.span[0] > len(heading)]
    assert [(a.statement, a.time_stated) for a in items] == [("Alice moved to Denver.", False)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("I moved to Berlin the day before yesterday.", "berlin"),
        ("I moved to Berlin over the weekend.", "berlin"),
        ("I moved to Berlin earlier this year.", "berlin"),
        ("I lived in Paris between 2010 and 2015.", "paris"),
        ("I worked at IBM 2010-2015.", "ibm"),
        ("I live in Paris btw.", "paris"),
        ("I moved to Oslo two Fridays ago.", "oslo"),
        ("I moved to Oslo the other day.", "oslo"),
        ("I moved to Oslo soon after.", "oslo"),
        ("I'm moving to Oslo early next year.", "oslo"),
        ("I'm moving to Oslo sometime next year.", "oslo"),
        ("I started working at Acme late last month.", "acme"),
        ("I work at Early Warning.", "early warning"),
    ],
)
def test_time_words_and_asides_are_no_part_of_the_value(text, value):
    # were "berlin the day", "berlin over the weekend", "paris between 2010", "ibm 2010-2015", "paris btw":
    # a later "I live in Berlin" then conflicted with the home held
    (a,) = run(msg(text, speaker="Alice"))
    assert a.value == value


@pytest.mark.parametrize(
    "text",
    [
        "I had lunch with my dad. She moved to Lyon.",
        "My sister met her boyfriend. He lives in Rome.",
        "Anna introduced me to her husband. He works at IBM.",
        "My sister and her husband moved to Lyon. He works at Airbus.",
        "Thanks Bob. Say hi to your wife. She works at IBM, right?",
        "Tom called my boss. She was angry.",
    ],
)
def test_he_or_she_is_no_one_when_gender_or_another_person_says_otherwise(text):
    # were the dad's move, the sister's home, Anna's employer, the sister's employer, Bob's employer and
    # Tom's anger: the one person named so far, whatever the pronoun and whoever else was mentioned
    said = run(msg(text, speaker="Alice"))
    assert not any(a.span[0] > text.index(". ") for a in said)


@pytest.mark.parametrize(
    ("text", "speaker"),
    [
        ("Alice, you live in Boulder now, right?", "Bob"),
        ("Carol, you work at IBM, don't you?", "Bob"),
        ("You moved to Denver last year, right?", "Carol"),
        ("You live in Austin, don't you?", "Erin"),
        ("You live in Boston.", "Dan"),
    ],
)
def test_you_checked_or_unnamed_is_no_attribute(text, speaker):
    # were Alice's home (closing her own "I moved to Denver"), Carol's employer, and a home of "the other
    # person", one subject for whoever each speaker spoke to, their homes in conflict with each other
    assert all(a.attribute is None for a in run(msg(text, speaker=speaker)))


def test_a_tag_question_leaves_the_speakers_own_statement():
    (a,) = run(msg("I moved to Denver, right?", speaker="Dan"))
    assert (a.subject, a.attribute, a.value) == ("Dan", "lives_in", "denver")
    (a,) = run(msg("Carol, you live in Boulder now.", speaker="Bob"))
    assert (a.subject, a.attribute) == ("Carol", "lives_in")


def test_he_or_she_is_the_one_person_of_that_gender():
    (_, moved) = run(msg("I had lunch with my dad. He moved to Lyon.", speaker="Alice"))
    assert (moved.subject, moved.attribute) == ("Alice's dad", "lives_in")


@pytest.mark.parametrize(
    ("text", "subject", "attribute"),
    [
        ("I met Tom's wife. She's a teacher.", "Tom's wife", "job"),
        ("Saw Jen's husband at the gym. He's a firefighter.", "Jen's husband", "job"),
        ("I had lunch with Bob's sister. She lives in Rome.", "Bob's sister", "lives_in"),
        ("I met Tom's wife, Lisa. She's a teacher.", "Lisa", "job"),
        ("Tom's mom is a nurse. She lives in Rome.", "Tom's mom", "lives_in"),
        ("Tom called. He's a teacher.", "Tom", "job"),
        ("I met Tom and his wife. He's a teacher.", "Tom", "job"),
    ],
)
def test_he_or_she_after_someones_relative_is_the_relative_never_the_one_named(text, subject, attribute):
    # were Tom's job, Jen's job, Bob's home, Tom's job and nothing: "Tom's" made Tom the one person named
    said = run(msg(text, speaker="Alice"))
    assert [(a.subject, a.attribute) for a in said if a.span[0] > text.index(". ")] == [(subject, attribute)]


@pytest.mark.parametrize(
    ("text", "speaker", "subject"),
    [
        ("Mom is moving to Florida!", "Bob", "Bob's mom"),
        ("Mom just moved to Arizona.", "Alice", "Alice's mom"),
        ("Dad's a teacher.", "Alice", "Alice's dad"),
        ("Grandma lives in Ohio.", "Bob", "Bob's grandma"),
        ("Nana is a nurse.", "Alice", "Alice's nana"),
        ("My nana is a nurse.", "Alice", "Alice's nana"),
        ("Mom texted: I'm moving to Florida.", "Bob", "Bob's mom"),
        ("I called Mom. She lives in Ohio.", "Alice", "Alice's mom"),
        ("Mother Teresa was a nun.", "Alice", "Mother Teresa"),
    ],
)
def test_mom_said_as_a_name_is_the_speakers_mom(text, speaker, subject):
    # were a subject "Mom" (or "Dad", "Grandma", "Nana") every speaker shared, apart from "my mom"; "My
    # nana is a nurse." was the speaker's own job
    said = run(msg(text, speaker=speaker))
    assert [(a.subject, a.owner) for a in said if a.subject != speaker] == [(subject, subject)]


def test_mom_spoken_to_is_the_speakers_mom():
    assert [a.statement for a in run(msg("Mom, I'm home.", speaker="Alice"))] == ["Alice is home."]
    # the person spoken to is the speaker's mom, and a tag question only checks what it says (5d415e9)
    (lives,) = run(msg("Mom, you live in Ohio, right?", speaker="Alice"))
    assert (lives.subject, lives.owner, lives.attribute) == ("Alice's mom", None, None)
    (lives,) = run(msg("Mom, you live in Ohio now.", speaker="Alice"))
    assert (lives.subject, lives.attribute, lives.value) == ("Alice's mom", "lives_in", "ohio")


def test_he_after_a_womans_relation_is_not_the_one_whose_relation_she_is():
    said = run(msg("I met Tom's wife. He's a teacher.", speaker="Alice"))
    assert [a.statement for a in said] == ["Alice met Tom's wife."]


@pytest.mark.parametrize(
    ("text", "change"),
    [
        ("I didn't move to Berlin.", False),
        ("I'm not moving to Berlin after all.", False),
        ("I never joined Google.", False),
        ("I don't live in Berlin anymore.", True),
        ("I no longer work at IBM.", True),
        ("I quit my job at Google.", True),
    ],
)
def test_an_event_denied_is_no_change_an_ending_is(text, change):
    # "I didn't move to Berlin" was a change: through the API it ended the home in Berlin held
    (a,) = run(msg(text, speaker="Alice"))
    assert a.negated and a.change is change


def test_according_to_names_the_source_of_the_statement():
    # was two: "Alice is according to Alice's doctor." and the claim without its source
    said = statements("According to my doctor, I have high blood pressure.", speaker="Alice")
    assert said == ["Alice has high blood pressure, according to Alice's doctor."]

    # someone else's news after the source was nothing: it is the source's report, as "Bob said ..." is
    report = one("According to Bob, Carol moved to Lima.")
    assert (report.statement, report.subject, report.owner, report.attribute) == (
        "Bob says Carol moved to Lima.", "Bob", "Bob", None
    )
    closed = one("According to Bob, the office is closed.")
    assert (closed.statement, closed.owner) == ("Bob says the office is closed.", "Bob")
    assert run("According to the news, Bob moved to Lima.") == []  # a source we cannot name: nobody's


def test_reported_speech_in_document():
    text = "Bob said he likes tea. The office is closed on Mondays."
    a, b = run({"kind": "document", "text": text}, self_name="Alice")
    assert (a.statement, a.subject, a.owner, a.attribute, a.value) == (
        "Bob likes tea.",
        "Bob",
        "Bob",
        "likes",
        "tea",
    )
    assert (b.subject, b.owner) == ("the office", None)


def test_document_about_self_not_owned():
    a = one({"kind": "document", "text": "Alice lives in Rome."}, self_name="Alice")
    assert a.subject == "Alice" and a.owner is None
    b = one(msg("Alice lives in Rome.", speaker="Bob"), self_name="Alice")
    assert b.owner is None


def test_document_first_person_is_unowned():
    a = one({"kind": "document", "text": "I live in Lisbon."}, self_name="Alice")
    assert a.owner is None and a.subject == "the author"


def test_he_resolves_only_when_unambiguous():
    _, b = run({"kind": "document", "text": "Bob is a nurse. He lives in Paris."})
    assert (b.subject, b.owner, b.statement) == ("Bob", "Bob", "Bob lives in Paris.")
    # a name after "at"/"in" is a place or an organisation, not someone "he" could be
    _, c = run({"kind": "document", "text": "Bob works at Acme. He lives in Paris."})
    assert (c.subject, c.statement) == ("Bob", "Bob lives in Paris.")
    # across the sentences of one Record, a person named as an object
    _met, chef = run(msg("I met Sam last week. He is a chef in Toronto.", role="user"))
    assert (chef.subject, chef.attribute, chef.value, chef.statement) == (
        "Sam",
        "job",
        "chef",
        "Sam is a chef in Toronto.",
    )
    out = run({"kind": "document", "text": "Bob met Carl. He lives in Paris."})
    assert all(x.subject != "Bob" or "Paris" not in x.statement for x in out)
    assert run({"kind": "document", "text": "He lives in Paris. They like tea. It was great."}) == []


@pytest.mark.parametrize(
    ("text", "valid_from", "valid_to"),
    [
        ("I'm WFH today.", date(2023, 5, 8), date(2023, 5, 9)),
        ("Dana is OOO next week.", date(2023, 5, 15), date(2023, 5, 22)),
        ("I'll be out Friday for a doctor's appointment.", date(2023, 5, 12), date(2023, 5, 13)),
        ("Bob's in Tokyo this week for the client visit.", date(2023, 5, 8), date(2023, 5, 15)),
        ("I'm in Paris this weekend.", date(2023, 5, 13), date(2023, 5, 15)),
        ("I was sick yesterday.", date(2023, 5, 7), date(2023, 5, 8)),
        # no condition, or not the one the time is of: from that time on, as before
        ("Bob is back on Wednesday.", date(2023, 5, 10), None),
        ("I'm just moving to Denver tomorrow.", date(2023, 5, 9), None),
        ("Sam was promoted yesterday.", date(2023, 5, 7), None),
        ("I'm glad that we met yesterday.", date(2023, 5, 7), None),
        ("Friday night's game was a nice break.", date(2023, 5, 5), None),
    ],
)
def test_a_condition_said_of_a_day_or_a_week_holds_for_that_period_only(text, valid_from, valid_to):
    # "I'm WFH today" was true from 8 May on, for ever
    a = run(msg(text, speaker="Gina"))[-1]
    assert (a.valid_from.date(), a.valid_to.date() if a.valid_to else None) == (valid_from, valid_to), a


@pytest.mark.parametrize(
    ("content", "statement"),
    [
        ({"kind": "document", "text": "Maria Lopez is a data scientist. She lives in Stockholm."}, "Maria Lopez lives in Stockholm."),
        ({"kind": "document", "text": "Tom Hanks is an actor. He lives in Los Angeles."}, "Tom Hanks lives in Los Angeles."),
        (msg("I met Maria Lopez yesterday. She lives in Stockholm.", speaker="Gina"), "Maria Lopez lives in Stockholm."),
    ],
)
def test_he_after_a_full_name_is_that_one_person(content, statement):
    # "Maria Lopez" was noted as two people, "Maria Lopez" and "Lopez", and "she" left unresolved
    last = run(content)[-1]
    assert (last.statement, last.owner, last.attribute) == (statement, statement.rsplit(" lives", 1)[0], "lives_in")
    # two full names are two people still
    met = run(msg("I met Maria Lopez and Ana Silva yesterday. She lives in Stockholm.", speaker="Gina"))
    assert [a.subject for a in met] == ["Gina"]


@pytest.mark.parametrize(
    ("content", "facts"),
    [
        ({"kind": "document", "text": "Mr. Smith lives in Denver."}, [("Smith", "Mr. Smith lives in Denver.")]),
        (msg("Dr Patel is my new doctor. She works at Mass General.", speaker="Gina"), [("Patel", "Dr Patel is Gina's new doctor."), ("Patel", "Patel works at Mass General.")]),
        (
            {"kind": "document", "text": "Dr. Maria Lopez is a pediatrician in Seattle. She grew up in Taipei."},
            [("Maria Lopez", "Dr. Maria Lopez is a pediatrician in Seattle."), ("Maria Lopez", "Maria Lopez grew up in Taipei.")],
        ),
        (msg("I saw Dr. Patel today. She is moving to Austin.", speaker="Gina"), [("Gina", "Gina saw Dr. Patel on 8 May 2023."), ("Patel", "Patel is moving to Austin.")]),
    ],
)
def test_a_title_before_a_name_is_no_name_of_its_own(content, facts):
    # "Mr. Smith lives in Denver." said nothing, "Dr. Maria Lopez" was a person "Lopez"
    assert [(a.subject, a.statement) for a in run(content)] == facts


def test_he_in_a_later_clause_counts_the_people_named_earlier_in_its_sentence():
    # "he" after a comma or "while" may be the person just named as an object, not the subject
    for text in (
        "Dana is covering for Bob while he's out.",
        "Sara went to see Bob, he lives in Denver now.",
        "Lisa is working with Tom while he's on leave.",
        "Kim met Tom at the party, he works at Google.",
    ):
        out = run(msg(text, speaker="Gina"))
        subject = text.split()[0]
        assert len(out) == 1 and out[0].subject == subject, out
    # the subject alone named before it: "he" is still the subject
    _, sick = run(msg("Bob is out today, he's sick.", speaker="Gina"))
    assert (sick.subject, sick.statement) == ("Bob", "Bob is sick.")
    _, boston = run(msg("Tom called, he's moving to Boston next month.", speaker="Gina"))
    assert (boston.subject, boston.attribute, boston.value) == ("Tom", "lives_in", "boston")


def test_clause_with_inner_subject_not_inherited():
    out = run(msg("I want to be brave for my family- they motivate me and give me love.", speaker="Mel"))
    assert all("gives" not in a.statement for a in out)


# ---- rule 5: facts


def test_structured_fact():
    a = one({"kind": "fact", "subject": "Alice", "predicate": "lives in", "value": "Lisbon"})
    assert (a.subject, a.owner, a.attribute, a.value, a.statement) == (
        "Alice",
        "Alice",
        "lives_in",
        "lisbon",
        "Alice lives in Lisbon.",
    )
    b = one({"kind": "fact", "subject": "Bob", "predicate": "favorite color", "value": "Blue"})
    assert (b.subject, b.owner, b.attribute, b.value) == ("Bob", "Bob", "favorite_color", "blue")
    c = one({"kind": "fact", "subject": "Alice", "predicate": "works as", "value": "nurse"})
    assert (c.attribute, c.single_valued) == ("job", True)


def test_text_fact():
    a = one({"kind": "fact", "text": "Alice is 30 years old."}, self_name="Alice")
    assert (a.subject, a.owner, a.attribute, a.value) == ("Alice", "Alice", "age", "30")


def test_correction_is_the_self():
    a = one({"kind": "correction", "corrects": "mem_x", "text": "Actually I live in Porto, not Lisbon"})
    assert (a.subject, a.owner, a.attribute, a.value, a.negated) == (
        "Alice",
        "Alice",
        "lives_in",
        "porto",
        False,
    )


# ---- rule 6: negation, change, time


def test_no_longer():
    a = one("I no longer live in Lisbon.")
    assert (a.attribute, a.value, a.negated, a.change) == ("lives_in", "lisbon", True, True)


def test_moved_last_march():
    a = one("I moved to Porto last March.")
    assert (a.attribute, a.value, a.change, a.negated) == ("lives_in", "porto", True, False)
    assert a.valid_from == datetime(2023, 3, 1, tzinfo=UTC)
    assert a.statement == "Alice moved to Porto in March 2023."


def test_dont_like():
    a = one("I don't like coffee.")
    assert (a.attribute, a.value, a.negated) == ("likes", "coffee", True)
    assert one("I hate mushrooms.").negated
    assert not one("I can't wait to see my sister's new painting.").negated


def test_would_like_is_not_a_preference():
    a = one("I'd like a coffee.")
    assert a.attribute is None


def test_ranges_and_until():
    a = one("I lived in Lisbon from 2015 to 2018.")
    assert (a.valid_from, a.valid_to) == (datetime(2015, 1, 1, tzinfo=UTC), datetime(2019, 1, 1, tzinfo=UTC))
    # "used to" is the past, not a denial: the job is over, since when the text does not say
    b = one("I used to work at Google until 2020.")
    assert (b.attribute, b.value, b.negated, b.change) == ("works_at", "google", False, True)
    assert (b.valid_from, b.valid_to, b.time_stated) == (
        UNKNOWN_START,
        datetime(2021, 1, 1, tzinfo=UTC),
        True,
    )


def test_since():
    a = one("I have worked at Acme since 2019.")
    assert (a.attribute, a.value, a.valid_from) == ("works_at", "acme", datetime(2019, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    "text",
    [
        "I've lived in Denver since college.",
        "I've lived in Denver since the wedding.",
        "I've lived in Denver since the pandemic.",
        "I've lived in Denver since I was 12.",
        "I have worked at Acme since graduation.",
    ],
)
def test_since_an_event_no_rule_dates_is_some_time_before_now(text):
    # were from the moment of speech, as if not true before it was said
    a = one(text)
    assert a.attribute is not None and (a.valid_from, a.valid_to, a.time_stated) == (UNKNOWN_START, None, False)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # fronted, with or without its comma: was nothing, or a home from the moment of speech
        ("Since the wedding I have lived in Denver.", "Alice has lived in Denver since the wedding."),
        ("Since the wedding, I have lived in Denver.", "Alice has lived in Denver since the wedding."),
        ("Ever since the move, I've lived in Denver.", "Alice has lived in Denver ever since the move."),
        ("Since my divorce I've lived in Denver.", "Alice has lived in Denver since Alice's divorce."),
        ("Since college I have worked at Acme.", "Alice has worked at Acme since college."),
        # "ever" is no part of the place
        ("I've lived in Denver ever since the move.", "Alice has lived in Denver ever since the move."),
    ],
)
def test_since_an_undated_event_fronted_or_after_ever_is_some_time_before_now(text, statement):
    a = one(text)
    assert (a.statement, a.valid_from, a.valid_to) == (statement, UNKNOWN_START, None)
    assert a.attribute in ("lives_in", "works_at") and a.value in ("denver", "acme")


def test_since_a_clause_of_the_speaker_s_own_is_told_apart():
    # "my mom left" is a fact of its own (see _SUBORDINATE), split off as before
    out = run("Since my mom left, I've lived alone.")
    assert [a.statement for a in out] == ["Alice's mom left.", "Alice has lived alone."]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # without its comma was nothing; with it, the state was dated when said
        ("Since the pandemic started I have worked from home.", "Alice has worked from home since the pandemic started."),
        ("Since the kids left, I've lived alone.", "Alice has lived alone since the kids left."),
    ],
)
def test_since_an_undated_event_told_in_a_short_clause(text, statement):
    a = one(text)
    assert (a.statement, a.valid_from) == (statement, UNKNOWN_START)


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Denver when I was 25.",
        "When I was 25, I moved to Denver.",
        "I first moved to Denver right after college.",
        "I moved to Denver as a kid.",
        "I got a job at Stripe after college.",
        "I quit my job when I was 25.",
        # were a home from when it was said (and "denver years" of the last)
        "Growing up, we moved to Denver.",
        "Years ago, I moved to Denver.",
        "I moved to Denver years ago.",
    ],
)
def test_a_change_told_by_an_event_or_an_age_is_of_the_past_at_an_unknown_time(text):
    # were changes dated when said, closing the home or the job held now
    said = [a for a in run(text) if "moved" in a.statement or "Stripe" in a.statement or "quit" in a.statement]
    assert said and all(a.attribute is None and a.left is None and a.valid_from == UNKNOWN_START for a in said)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were "... after Christmas 2022." and "... in March 2023.", homes from then: the day of a time of life
        # long past took the latest year before the Record
        ("When I was a kid we moved to Denver after Christmas.", "Alice and others moved to Denver after Christmas."),
        ("When I was 10, we moved to Denver in March.", "Alice and others moved to Denver in March."),
        ("Growing up, we moved to Denver after Christmas.", "Alice and others moved to Denver after Christmas."),
    ],
)
def test_a_day_without_a_year_in_a_time_of_life_long_past_takes_no_year(text, statement):
    (a,) = run(text)
    assert (a.statement, a.attribute, a.valid_from) == (statement, None, UNKNOWN_START)


@pytest.mark.parametrize(
    "text",
    [
        # were tastes held from when it was said: "dinosaurs as a kid", "broccoli as a kid" (denied),
        # "broccoli" (denied) and "dinosaurs in college"
        "I loved dinosaurs as a kid.",
        "I hated broccoli as a kid.",
        "I hated broccoli when I was little.",
        "I loved dinosaurs in college.",
    ],
)
def test_a_taste_of_a_time_of_life_long_past_is_none_of_now(text):
    (a,) = run(text)
    assert (a.attribute, a.negated, a.valid_from) == (None, False, UNKNOWN_START)
    assert [(a.attribute, a.value) for a in run("I love dinosaurs.")] == [("likes", "dinosaurs")]


def test_a_change_with_no_time_or_a_date_stays_a_change_then():
    a = one("I moved to Denver.")
    assert (a.attribute, a.change, a.valid_from) == ("lives_in", True, NOW)
    a = one("I moved to Denver in 2019 when I was 25.")
    assert (a.attribute, a.valid_from) == ("lives_in", datetime(2019, 1, 1, tzinfo=UTC))
    a = one("I just moved to Denver after the breakup.")
    assert (a.attribute, a.valid_from) == ("lives_in", NOW)
    # news told with the event that brought it is of now: only a stage of life or an age dates nothing
    quit_ = one("I quit my job at Acme when I got the offer.")
    assert (quit_.attribute, quit_.value, quit_.negated, quit_.valid_from) == ("works_at", "acme", True, NOW)
    assert one("I moved to Denver after the divorce.").attribute == "lives_in"
    assert [a.attribute for a in run("When I got the offer, I quit my job at Acme.")] == [None, "works_at"]


@pytest.mark.parametrize(
    ("text", "attr", "value", "change"),
    [
        ("I'm 30 years old.", "age", "30", False),
        ("I turned 31 yesterday.", "age", "31", True),
        ("I have a dog named Rex.", "has_pet", "dog", False),
        ("I adopted two cats.", "has_pet", "cat", True),
        ("I work as a nurse.", "job", "nurse", False),
        ("I became a teacher in 2019.", "job", "teacher", True),
        ("I'm married to Bob.", "married_to", "bob", False),
        ("I'm from Brazil.", "from", "brazil", False),
        ("I started working at Acme last week.", "works_at", "acme", True),
        ("I joined Google.", "works_at", "google", True),
        ("I'm a big fan of jazz.", "likes", "jazz", False),
        ("I was born on May 5.", "birthday", "may 5", False),
        ("I study at MIT.", "studies_at", "mit", False),
    ],
)
def test_attributes(text, attr, value, change):
    a = one(text)
    assert (a.attribute, a.value, a.change) == (attr, value, change)
    assert a.single_valued == (attr not in ("likes", "has_pet"))


@pytest.mark.parametrize(
    "text",
    [
        "I joined Bob for lunch.",
        "I joined Sarah and Tom for dinner.",
        "I joined Mike on a trip.",
        "I joined Sarah at the bar.",
        "I joined Mom for coffee.",
        "Bob joined Alice.",
    ],
)
def test_people_joined_are_no_employer(text):
    # each was works_at the person (a change: through the planner it ended the job held)
    assert all(a.attribute is None for a in run(msg(text, speaker="Alice")))


@pytest.mark.parametrize(
    "text, value",
    [
        ("I joined Acme Corp last year.", "acme corp"),
        ("I joined Google in 2019.", "google"),
        ("I joined Meta for a few months.", "meta"),
        ("I joined Acme at the start of 2019.", "acme"),
        ("I joined Google at the London office.", "google"),
        ("I joined Google as an engineer.", "google"),
    ],
)
def test_an_organisation_joined_is_an_employer(text, value):
    a = one(text)
    assert (a.attribute, a.value, a.change) == ("works_at", value, True)


@pytest.mark.parametrize(
    "text",
    [
        "I moved to the couch because my back hurts.",
        "I live at the gym these days.",
        "I moved to the front row.",
        "I work at night.",
        "I work at noon.",
        "I work at weekends.",
        "I work for hours.",
        "I work at 9am.",
        # were homes "london office", "alice's berlin office" and "nyc hq": a workplace moved to
        "I moved to the London office last month.",
        "I moved to our Berlin office.",
        "I transferred to the NYC HQ in March.",
    ],
)
def test_a_place_or_a_time_of_the_day_is_no_home_nor_employer(text):
    # each was lives_in/works_at the couch, the gym, night... (through the planner a move ended the home)
    assert all(a.attribute is None for a in run(msg(text, speaker="Alice")))


@pytest.mark.parametrize(
    "text, value",
    [
        # each was "new apartment", "bigger house", ...: a home that ended the city told before it
        ("I moved to a new apartment in Brooklyn.", "brooklyn"),
        ("We just moved into a bigger house in Austin last month.", "austin"),
        ("I moved into my parents' house in Ohio.", "ohio"),
        ("I moved to a new apartment in Brooklyn in June.", "brooklyn"),
        # "in" a time or a place that is none: a dwelling alone names no home (below)
        ("I moved into a new apartment in June.", None),
        ("We moved to a new house in the spring.", None),
        ("I moved to a new apartment in a couple of weeks.", None),
        ("I moved to a new apartment in the same building.", None),
        # were homes "bigger apartment", "dorm", "alice's parents' house": as a value it ended the city
        # said before, where the person may well still live
        ("I moved into a bigger apartment.", None),
        ("I live in a dorm.", None),
        ("I moved back into my parents' house.", None),
    ],
)
def test_a_dwelling_moved_into_somewhere_makes_the_where_the_home(text, value):
    found = run(msg(text, speaker="Alice"))
    assert found and [a.value for a in found if a.attribute == "lives_in"] == ([value] if value else [])


@pytest.mark.parametrize(
    "text, attr, value",
    [
        ("I moved back to the city.", "lives_in", "city"),
        ("I live in the suburbs.", "lives_in", "suburbs"),
        ("I moved to the west coast.", "lives_in", "west coast"),
        ("I moved to the Netherlands.", "lives_in", "netherlands"),
        ("I live at the end of the street.", "lives_in", "end of the street"),
        ("I moved into a new apartment in Lisbon.", "lives_in", "lisbon"),  # a bare dwelling is none (above)
        ("I work at the hospital.", "works_at", "hospital"),
        ("I work at 3M.", "works_at", "3m"),
        ("I work for 7-Eleven.", "works_at", "7-eleven"),
    ],
)
def test_a_place_one_lives_or_works_at_stays_one(text, attr, value):
    a = one(text)
    assert (a.attribute, a.value) == (attr, value)


def test_timezone_follows_occurred_at():
    from datetime import timedelta

    tz = timezone(timedelta(hours=2))
    a = one("I went home yesterday.", when=datetime(2023, 5, 8, 1, 0, tzinfo=tz))
    assert a.valid_from == datetime(2023, 5, 7, tzinfo=tz)


# ---- rule 7: statements that read as English


JUNE = datetime(2024, 6, 10, 9, 30, tzinfo=UTC)


def test_relative_times_do_not_double_the_preposition():
    a = one("I moved to Lisbon in April.", when=JUNE)
    assert a.statement == "Alice moved to Lisbon in April 2024."
    b = one("I fly to Tokyo on October 10.", when=JUNE)
    assert b.statement == "Alice flies to Tokyo on 10 October 2024."


def test_a_month_and_day_in_figures_is_a_date():
    # "on 5/1" was no time at all: the move dated when said
    a = one("I moved to Denver on 5/1.")
    assert (a.attribute, a.valid_from, a.statement) == (
        "lives_in",
        datetime(2023, 5, 1, tzinfo=UTC),
        "Alice moved to Denver on 1 May 2023.",
    )
    b = one("I'm in Paris from the 10th to the 15th.")
    assert (b.valid_from, b.valid_to) == (datetime(2023, 5, 10, tzinfo=UTC), datetime(2023, 5, 16, tzinfo=UTC))


def test_a_deadline_is_told_as_one():
    # "by Friday" was "on 12 May 2023", the day it would be done rather than the latest
    a = one(msg("Bob will send the deck by Friday.", role="user"))
    assert (a.statement, a.valid_from) == ("Bob will send the deck by 12 May 2023.", datetime(2023, 5, 12, tzinfo=UTC))
    b = one("I need to pay rent by the 15th.")
    assert b.statement == "Alice needs to pay rent by 15 May 2023."


@pytest.mark.parametrize(
    ("text", "value", "statement"),
    [
        # "through the 15th" was part of the place and the employer
        ("I'm staying in Paris through the 15th.", "paris", "Alice is staying in Paris until 15 May 2023."),
        ("I worked at Acme through the 15th.", "acme", "Alice worked at Acme until 15 April 2023."),
        ("I'll work at Acme through June.", "acme", "Alice will work at Acme until June 2023."),
        # "from" before a range of days was said twice ("from from 10 June 2023 ...")
        ("I'm staying in Paris from June 10 to 15.", "paris", "Alice is staying in Paris from 10 June 2023 to 15 June 2023."),
    ],
)
def test_a_bound_through_a_day_is_no_part_of_the_value(text, value, statement):
    a = one(text)
    assert (a.value, a.statement) == (value, statement)


@pytest.mark.parametrize(
    ("text", "valid_from", "valid_to"),
    [
        # were homes from then on: a stay over with the day, the weekend or the week named
        ("I'm staying in Denver tonight.", (2023, 5, 8), (2023, 5, 9)),
        ("I'm staying in Denver this weekend.", (2023, 5, 13), (2023, 5, 15)),
        ("I'm staying in Denver this week.", (2023, 5, 8), (2023, 5, 15)),
    ],
)
def test_a_stay_a_day_or_a_week_names_is_over_with_it(text, valid_from, valid_to):
    a = one(text)
    assert (a.attribute, a.value) == ("lives_in", "denver")
    assert (a.valid_from, a.valid_to) == (datetime(*valid_from, tzinfo=UTC), datetime(*valid_to, tzinfo=UTC))
    assert (one("I'm staying in Boston.").value, one("I'm staying in Boston.").valid_to) == ("boston", None)


@pytest.mark.parametrize("text", ["I'm staying at a hotel in Denver.", "We're staying at an Airbnb in Denver.", "I stayed at a motel."])
def test_a_stay_at_a_hotel_is_no_home(text):
    # was the home "hotel" ("denver" in "staying at a hotel in Denver")
    assert [a.attribute for a in run(text)] == [None]


@pytest.mark.parametrize("text", ["I work for myself.", "My sister works for herself.", "We work for ourselves."])
def test_working_for_oneself_names_no_employer(text):
    # were the employers "myself", "herself" and "ourselves"
    assert [a.attribute for a in run(text)] == [None]


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        # were the birthdays "next week", "last month", "may 13" (the weekend's Saturday), "coming up" and
        # "may 2" ("on a Tuesday": the last one), and the birthplace "march"
        ("My birthday is next week.", None, None),
        ("My birthday was last month.", "birthday", "april"),
        ("My birthday is this weekend.", None, None),
        ("My birthday is coming up.", None, None),
        ("I was born on a Tuesday.", None, None),
        ("My daughter was born in March.", None, None),
        ("I was born in March 1990.", None, None),
        # as before
        ("My birthday is tomorrow.", "birthday", "may 9"),
        ("My birthday is June.", "birthday", "june"),
        ("My birthday is 3/4.", "birthday", "3/4"),
        ("I was born in Ohio.", "from", "ohio"),
    ],
)
def test_a_birthday_is_a_day_or_a_month_and_a_birthplace_no_time(text, attribute, value):
    (a,) = run(text)
    assert (a.attribute, a.value) == (attribute, value)


def test_a_weekday_after_a_is_no_date():
    # was "Alice moved to Denver on a on 5 May 2023." from that day: some Friday, not the last one
    a = one("I moved to Denver on a Friday.")
    assert (a.statement, a.valid_from) == ("Alice moved to Denver on a Friday.", NOW)
    assert one("I moved to Denver on Friday.").valid_from == datetime(2023, 5, 5, tzinfo=UTC)


def test_a_job_one_is_trained_for_is_no_job_held():
    # was the job "nurse" beside "writer": a qualification, not what one does
    assert [(a.attribute, a.value) for a in run("I'm a nurse by training but I work as a writer.")] == [
        (None, None),
        ("job", "writer"),
    ]
    assert one("I'm a lawyer by education.").attribute is None
    assert one("I'm a carpenter by trade.").value == "carpenter"


def test_through_with_no_time_stays_in_the_value():
    assert one("I live in a cabin through the woods.").value == "cabin through the woods"


def test_triples_read_as_english():
    def stmt(predicate, value, subject="Alice"):
        return one({"kind": "fact", "subject": subject, "predicate": predicate, "value": value}).statement

    assert stmt("lives_in", "Porto") == "Alice lives in Porto."
    assert stmt("live in", "Seattle") == "Alice lives in Seattle."
    assert stmt("favorite color", "Blue", "Bob") == "Bob's favorite color is Blue."


def test_quoted_speech_is_the_quoted_persons():
    a = one(msg("Emma said: 'I hate cats.'", role="user"))
    assert (a.statement, a.subject, a.owner, a.attribute, a.value, a.negated) == (
        "Emma hates cats.",
        "Emma",
        "Emma",
        "likes",
        "cats",
        True,
    )
    b = one(msg('My sister told me, "I love Porto."', role="user"))
    assert (b.subject, b.statement) == ("Alice's sister", "Alice's sister loves Porto.")
    # quoted words of nobody we know are nobody's; nor is what follows the quotation
    assert run(msg('He said "I quit" and left.', role="user")) == []
    assert all(a.owner != "Alice" for a in run(msg("'I hate cats' is what she wrote.", role="user")))

    # the reporting frame after the quotation: '"I moved to Spain," Carol said.' was nothing
    for text in ('"I moved to Spain," Carol said.', '"I moved to Spain," said Carol.', '"I moved to Spain," Carol said sadly.'):
        spain = [a for a in run(msg(text, role="user")) if a.attribute]
        assert [(a.subject, a.owner, a.attribute, a.value) for a in spain] == [("Carol", "Carol", "lives_in", "spain")], text
    c = one(msg('"I quit my job at Acme," my sister told me.', role="user"))
    assert (c.subject, c.attribute, c.value, c.negated) == ("Alice's sister", "works_at", "acme", True)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # was "... said "the other person's sister is a nurse": the letter's "you" is whom it was written to
        ('The letter said "Your sister is a nurse".', '"Your sister is a nurse'),
        ('My mom\'s note said "your dad lives in Ohio now".', '"your dad lives in Ohio now'),
        ('I watched "You\'ve Got Mail" last night.', '"You\'ve Got Mail"'),  # was "the other person has Got Mail"
        ('My favorite song is "Your Song" by Elton John.', '"Your Song"'),
    ],
)
def test_words_in_quotation_marks_left_in_a_clause_are_shown_as_written(text, shown):
    """The "you" of a title, a letter, a note is no one the speaker talks to."""
    statements = [a.statement for a in run(msg(text, role="user"))]
    assert any(shown in s for s in statements) and not any("other person" in s for s in statements), statements


@pytest.mark.parametrize(
    ("text", "attribute", "value", "shown"),
    [
        # was "Alice read." (the title read as the speaker's own words, the time lost with it)
        ('I read "I Am Legend" last week.', "does", "reading i am legend", 'Alice read "I Am Legend" in the week of 1 May 2023.'),
        ('I read "Where the Crawdads Sing" last week.', "does", "reading where the crawdads sing", None),  # was "reading"
        ('I love "Pride and Prejudice"!', "likes", "pride and prejudice", None),  # was no liking
        ('I love "The Office".', "likes", "office", 'Alice loves "The Office".'),  # was 'Alice loves "The Office.'
        ('My favorite show is "The Office."', None, None, 'Alice\'s favorite show is "The Office."'),
    ],
)
def test_a_quoted_title_is_the_object_of_its_verb(text, attribute, value, shown):
    out = run(msg(text, role="user"))
    assert any(a.attribute == attribute and a.value == value for a in out), out
    assert shown is None or shown in [a.statement for a in out], out


@pytest.mark.parametrize("text", ['I said "I Quit" last week.', 'She told me "I Quit".', 'Tom texted "I Am Done".'])
def test_a_titled_quotation_after_a_verb_of_saying_is_speech(text):
    assert not any(a.attribute == "does" or "read" in a.statement for a in run(msg(text, role="user")))


@pytest.mark.parametrize(
    "text",
    [
        "my mom was like u should move to denver",  # was "... was like the other person should move to denver"
        "Tom was like you should totally quit.",
        "My sister was like you're crazy lol",
    ],
)
def test_the_you_of_words_quoted_with_was_like_is_no_one_here(text):
    assert not any("other person" in a.statement for a in run(msg(text, role="user")))


def test_fronted_times_and_connectives():
    a = one(msg("Last weekend I joined a mentorship program.", speaker="Bob"), when=JUNE)
    assert (a.subject, a.owner) == ("Bob", "Bob")
    assert a.statement == "Bob joined a mentorship program on the weekend of 8 June 2024."
    assert (a.valid_from, a.time_stated) == (datetime(2024, 6, 8, tzinfo=UTC), True)
    b = one(msg("That's why I love volunteering.", speaker="Bob"))
    assert (b.statement, b.attribute, b.value) == ("Bob loves volunteering.", "likes", "volunteering")


def test_a_chat_turn_without_a_subject_is_the_speakers():
    assert one(msg("Been tweaking a dessert recipe.", speaker="Bob")).statement == (
        "Bob has been tweaking a dessert recipe."
    )
    a = one(msg("Busy with studies but finding time to relax with books.", speaker="Bob"))
    assert (a.subject, a.owner) == ("Bob", "Bob")
    assert a.statement == "Bob is busy with studies but finding time to relax with books."
    assert one(msg("Had an audition yesterday for a writing gig.", speaker="Bob"), when=JUNE).statement == (
        "Bob had an audition on 9 June 2024 for a writing gig."
    )
    # a gerund followed by its verb is the subject, not a dropped "I"; a document has no speaker
    gerund = one(msg("Meeting new people can be overwhelming.", speaker="Bob"))
    assert (gerund.subject, gerund.owner) == ("meeting new people", "Bob")
    assert run({"kind": "document", "text": "Been tweaking a dessert recipe."}) == []
    assert run(msg("Been tweaking a dessert recipe.", role="assistant")) == []


def test_about_the_speaker_when_the_speaker_is_in_it():
    a = one(msg("Pottery is a huge part of my life.", speaker="Bob"))
    assert (a.subject, a.owner, a.statement) == ("Bob", "Bob", "Pottery is a huge part of Bob's life.")
    b = one(msg("The support group has made me feel accepted.", speaker="Bob"))
    assert (b.subject, b.owner, b.statement) == (
        "Bob",
        "Bob",
        "The support group has made Bob feel accepted.",
    )
    c = one(msg("Painting's a fun way to express my feelings.", speaker="Bob"))
    assert (c.owner, c.statement) == ("Bob", "Painting is a fun way to express Bob's feelings.")
    # a named person stays the subject; the speaker vouches for it
    d = one(msg("Sam visited me last week.", speaker="Bob"))
    assert (d.subject, d.owner) == ("Sam", "Bob")


def test_opinions_and_reports_are_the_speakers():
    a = one(msg("Talking about inclusivity and acceptance is crucial.", speaker="Bob"))
    assert (a.subject, a.owner, a.statement) == (
        "Bob",
        "Bob",
        "Bob thinks talking about inclusivity and acceptance is crucial.",
    )
    b = one(msg("Dance floors help avoid injuries.", speaker="Bob"))
    assert (b.subject, b.owner, b.statement) == (
        "dance floors",
        "Bob",
        "Bob says dance floors help avoid injuries.",
    )
    # a capitalised common noun taking a plural verb is no person
    c = one(msg("Books have such a power to change lives.", speaker="Bob"))
    assert c.owner == "Bob" and c.subject != "Books"
    # documents keep the plain sentence: there is no speaker to frame it
    d = one({"kind": "document", "text": "The office is closed on Mondays."})
    assert (d.subject, d.owner, d.statement) == ("the office", None, "The office is closed on Mondays.")


def test_a_dash_before_a_list_elaborates_the_clause():
    a = one(msg("I faced all kinds of hurdles - tech stuff, workplace stuff.", speaker="Bob"))
    assert a.statement == "Bob faced all kinds of hurdles - tech stuff, workplace stuff."
    # a dash before a clause of its own still splits
    assert len(run(msg("I went to Lisbon - it rained every day.", speaker="Bob"))) >= 1


def test_they_is_the_speakers_people_just_named():
    _, b = run(msg("I took my kids to the zoo. They loved the lions.", speaker="Bob"))
    assert (b.subject, b.statement) == ("Bob's kids", "Bob's kids loved the lions.")
    c = run(msg("My friends, family and mentors are my rocks - they motivate me.", speaker="Bob"))[-1]
    assert (c.subject, c.owner, c.statement) == (
        "Bob's friends, family and mentors",
        "Bob",
        "Bob's friends, family and mentors motivate Bob.",
    )
    # nobody named, or two groups: "they" stays unknown
    assert run(msg("They loved the lions.", speaker="Bob")) == []
    assert len(run(msg("My kids met my parents. They loved the lions.", speaker="Bob"))) == 1


def test_a_tag_question_leaves_its_statement():
    a = one(msg("Gardening makes my weekends so much calmer, right?", speaker="Bob"))
    assert (a.owner, a.statement) == ("Bob", "Gardening makes Bob's weekends so much calmer.")
    assert run(msg("Do you like tea?", speaker="Bob")) == []
    assert run(msg("Gardening makes my weekends calmer, or does it?", speaker="Bob")) == []


# ---- rule 8: changes, negation, corrections


def test_a_new_job_closes_the_old_one():
    left, joined = run("I left Stripe in April and joined Spotify.", when=JUNE)
    assert (joined.attribute, joined.value, joined.change, joined.single_valued) == (
        "works_at",
        "spotify",
        True,
        True,
    )
    assert left.statement == "Alice left Stripe in April 2024." and left.change


def test_divorced_together():
    a = one("Tom and I got divorced in May.", when=JUNE)
    assert (a.subject, a.owner, a.attribute, a.value, a.negated, a.change) == (
        "Alice",
        "Alice",
        "married_to",
        "tom",
        True,
        True,
    )
    assert a.statement == "Alice and Tom got divorced in May 2024."
    assert (a.valid_from, a.time_stated) == (datetime(2024, 5, 1, tzinfo=UTC), True)
    b = one("Sam and I got married last year.", when=JUNE)
    assert (b.attribute, b.value, b.negated, b.change) == ("married_to", "sam", False, True)


def test_text_fact_about_an_attribute():
    a = one({"kind": "fact", "text": "Alice's blood type is O negative."})
    assert (a.subject, a.owner, a.attribute, a.value, a.single_valued) == (
        "Alice",
        "Alice",
        "blood_type",
        "o negative",
        True,
    )
    assert a.statement == "Alice's blood type is O negative."
    b = one({"kind": "fact", "text": "Bob's hobbies are chess and go."})
    assert (b.subject, b.attribute, b.single_valued) == ("Bob", "hobbies", False)


@pytest.mark.parametrize(
    ("text", "statement", "attribute", "value"),
    [
        # (a plan with no time: said, and no home yet)
        ("Bob's moving to Oslo.", "Bob is moving to Oslo.", None, None),
        # ("moving" going somewhere is no "moving" as in touching: the speaker's view of nothing)
        ("Bob is moving to Oslo.", "Bob is moving to Oslo.", None, None),
        ("Bob's moving to Oslo in June.", "Bob is moving to Oslo in June 2023.", "lives_in", "oslo"),
        ("Bob's been living in Oslo since March.", "Bob has been living in Oslo since March 2023.", "lives_in", "oslo"),
        ("Bob's working at Acme now.", "Bob is working at Acme now.", "works_at", "acme"),
        ("Bob's moved to Oslo.", "Bob has moved to Oslo.", "lives_in", "oslo"),
        ("Bob's married to Carol.", "Bob is married to Carol.", "married_to", "carol"),
        ("Bob's painting the fence.", "Bob is painting the fence.", None, None),
    ],
)
def test_a_names_s_before_a_verb_is_is_or_has(text, statement, attribute, value):
    # "Bob's moving to Oslo" was read as Bob's "moving": nothing was made
    a = one(text)
    assert (a.statement, a.subject, a.owner, a.attribute, a.value) == (statement, "Bob", "Bob", attribute, value)


@pytest.mark.parametrize(
    ("text", "statement", "subject", "attribute", "value"),
    [
        ("Bob's a nurse.", "Bob is a nurse.", "Bob", "job", "nurse"),
        ("Bob's 12.", "Bob is 12.", "Bob", "age", "12"),
        ("Bob's from Ohio.", "Bob is from Ohio.", "Bob", "from", "ohio"),
        ("My mom's a nurse.", "Alice's mom is a nurse.", "Alice's mom", "job", "nurse"),
        ("My son's 12.", "Alice's son is 12.", "Alice's son", "age", "12"),
        ("My sister's living in Berlin now.", "Alice's sister is living in Berlin now.", "Alice's sister", "lives_in", "berlin"),
        ("My brother's moving to Rome.", "Alice's brother is moving to Rome.", "Alice's brother", None, None),
        ("My birthday's on the 3rd of June.", "Alice's birthday is on the 3rd of June.", "Alice", "birthday", "june 3"),
    ],
)
def test_an_s_before_what_no_possessive_precedes_is_is(text, statement, subject, attribute, value):
    # "Bob's a nurse", "My mom's a nurse", "My son's 12" made nothing (an "is" was looked for after the
    # possessive and never came), "My birthday's on the 3rd of June" the subject "Alice's birthday's on
    # the 3rd"
    a = one(text)
    assert (a.statement, a.subject, a.attribute, a.value) == (statement, subject, attribute, value)


def test_a_possessive_before_a_number_and_a_verb_stays_one():
    assert all(a.attribute != "age" for a in run("Bob's 3 cats are cute.")), run("Bob's 3 cats are cute.")
    (dog,) = run("My dog's name is Rex.")
    assert (dog.subject, dog.attribute, dog.value) == ("Alice's dog", "name", "rex")


@pytest.mark.parametrize(
    ("text", "subject", "value", "negated", "day"),
    [
        ("I got a job at Stripe.", "Alice", "stripe", False, date(2023, 5, 8)),
        ("I landed a job with Acme last month.", "Alice", "acme", False, date(2023, 4, 1)),
        ("I was hired by IBM in 2019.", "Alice", "ibm", False, date(2019, 1, 1)),
        ("My sister got a job at Google.", "Alice's sister", "google", False, date(2023, 5, 8)),
        ("I never got hired by Google.", "Alice", "google", True, date(2023, 5, 8)),
        # were plain statements, no employer
        ("I started at Stripe.", "Alice", "stripe", False, date(2023, 5, 8)),
        ("I just started at Stripe last week.", "Alice", "stripe", False, date(2023, 5, 1)),
        ("Started at Stripe on Monday.", "Alice", "stripe", False, date(2023, 5, 1)),
        ("Bob starts at Google next month.", "Bob", "google", False, date(2023, 6, 1)),
        # a job to come, from when it starts (was no employer; "stripe tomorrow" after "starting at")
        ("I start at Stripe in June.", "Alice", "stripe", False, date(2023, 6, 1)),
        ("I begin at Acme next week.", "Alice", "acme", False, date(2023, 5, 15)),
        ("I start at Stripe tomorrow.", "Alice", "stripe", False, date(2023, 5, 9)),
        ("I'm starting at Stripe tomorrow.", "Alice", "stripe", False, date(2023, 5, 9)),
    ],
)
def test_a_job_got_is_an_employer(text, subject, value, negated, day):
    # "I got a job at Stripe" and "I was hired by IBM" were plain statements: the job held before stayed
    # current, and a profile knew no employer
    a = one(text)
    assert (a.subject, a.attribute, a.value, a.negated, a.valid_from.date()) == (subject, "works_at", value, negated, day)
    assert a.change or a.negated


@pytest.mark.parametrize(
    "text",
    [
        "I started at the beginning.",
        "I started at 9am.",
        "My son started at Lincoln Elementary.",  # a school
        "We started at Central Park and ran to the bridge.",  # where a run began
        "I started at Level 1.",
        "I start at 9am.",
        "I start at Lincoln High in September.",
        "We start at Central Park.",
        # where a day or a task begins: only a time to come makes the present a job's first day
        "I usually start at Starbucks.",
        "I always start at Google Docs when I write.",
        "Let's start at Bob's place.",
        "I start at Marriott every year in June.",
        # were employers ("bob's place"): a proposal is what the speaker wants, and a home where an
        # evening begins no workplace, whatever time to come follows
        "Let's start at Bob's place tomorrow.",
        "We'll start at Bob's place tomorrow, then go to the park.",
        "Let's join Google next week.",
    ],
)
def test_starting_at_a_time_a_school_or_a_place_is_no_employer(text):
    assert not [a for a in run(text) if a.attribute == "works_at"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("I start at Pizza Place tomorrow.", "pizza place"), ("I started at Penguin Random House last week.", "penguin random house")],
)
def test_a_business_named_place_or_house_is_an_employer(text, value):
    # someone's place is where an evening starts; a business of such a name is still a job
    assert [(a.attribute, a.value) for a in run(text)] == [("works_at", value)]


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        # how one works, then where (was no employer)
        ("I work remotely for Acme.", "works_at", "acme"),
        ("I work full-time at IBM.", "works_at", "ibm"),
        # a business run is no running (was the habit "running bakery")
        ("I run my own bakery.", None, None),
        ("I run a small bakery downtown.", None, None),  # (was the habit "running small bakery downtown")
        ("I run marathons.", "does", "running marathons"),
        # how often is no part of the habit (was "drinking coffee every morning", "running 5k every saturday")
        ("I drink coffee every morning.", "does", "drinking coffee"),
        ("I run a 5k every Saturday.", "does", "running 5k"),
        ("I play tennis twice a week.", "does", "playing tennis"),
    ],
)
def test_work_and_habits_told_with_how_and_how_often(text, attribute, value):
    a = one(text)
    assert (a.subject, a.attribute, a.value) == ("Alice", attribute, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("I'm really into hiking these days.", "hiking"),  # was no taste: an adverb before "into"
        ("I prefer tea over coffee.", "tea"),  # was "tea over coffee"
        ("I prefer tea to coffee.", "tea"),
        ("I really prefer tea over coffee.", "tea"),  # (an adverb first: was "tea over coffee")
        ("I like your hair.", None),  # was the taste "your hair": a compliment, no taste of the speaker's
    ],
)
def test_a_taste_is_what_is_liked(text, value):
    a = one(text)
    assert (a.subject, a.attribute, a.value) == ("Alice", "likes" if value else None, value)


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        # a chat tail is no part of the value (was "denver lol", "stripe haha")
        ("I live in Denver lol", "lives_in", "denver"),
        ("I work at Stripe haha", "works_at", "stripe"),
        # a full stop after an abbreviation or initials ends no value (was "st", "ft")
        ("I live in St. Louis.", "lives_in", "st. louis"),
        ("I moved to Ft. Collins in March.", "lives_in", "ft. collins"),
        ("I'm from the U.S.", "from", "u.s"),
    ],
)
def test_a_value_goes_past_abbreviations_and_stops_at_chat_tails(text, attribute, value):
    a = one(text)
    assert (a.subject, a.attribute, a.value) == ("Alice", attribute, value)


@pytest.mark.parametrize(
    ("text", "subject", "value"),
    [
        # a name with a capital beyond ASCII was read as a word: "Alice says émile moved to Paris"
        ("Émile moved to Paris last year.", "Émile", "paris"),
        ("Łukasz works at Google.", "Łukasz", "google"),
        # words that lead a time are no part of a place (were "denver right", "denver the week", "denver end of")
        ("I moved to Denver right after Christmas.", "Alice", "denver"),
        ("I'm moving to Denver the week after next.", "Alice", "denver"),
        ("I'm moving to Denver end of next month.", "Alice", "denver"),
        ("I live at the end of the street.", "Alice", "end of the street"),
    ],
)
def test_names_beyond_ascii_and_places_before_a_time(text, subject, value):
    a = one(text)
    assert (a.subject, a.value) == (subject, value)


def test_a_second_verb_after_i_m_is_the_speaker_s():
    # "I'm 30 and live in Denver." was one statement "Alice is 30 and live in Denver." with neither fact
    age, home = run("I'm 30 and live in Denver.")
    assert (age.attribute, age.value, age.statement) == ("age", "30", "Alice is 30.")
    assert (home.attribute, home.value, home.statement) == ("lives_in", "denver", "Alice lives in Denver.")
    job, work = run("I'm a nurse and work at St. Mary's.")
    assert (job.value, work.attribute, work.value) == ("nurse", "works_at", "st. mary's")
    # a noun joined to the complement stays in it
    assert len(run("I'm into electronic and rock music.")) == 1


@pytest.mark.parametrize(
    ("text", "statement", "attribute"),
    [
        ("My wife and I just bought a house in Austin.", "Alice and Alice's wife just bought a house in Austin.", None),
        ("My husband and I both work at Stripe.", "Alice and Alice's husband both work at Stripe.", "works_at"),
        ("Tom and I just got married.", "Alice and Tom just got married.", "married_to"),
    ],
)
def test_an_adverb_after_someone_and_i_is_the_predicate_s(text, statement, attribute):
    # were "Alice and Alice's wife and Alice just bought ..." and no marriage
    a = one(text)
    assert (a.subject, a.statement, a.attribute) == ("Alice", statement, attribute)


def test_initials_are_no_sentence_end_and_no_you():
    # "the U.S." was "the the other person.S." ("u" read as "you"), and "in 2015" a sentence of its own
    a = one("I moved to the U.S. in 2015.")
    assert (a.statement, a.value, a.valid_from.date()) == ("Alice moved to the U.S. in 2015.", "u.s", date(2015, 1, 1))
    assert one("I love u.").statement == "Alice loves the other person."


@pytest.mark.parametrize(
    ("text", "subject", "statement"),
    [
        ("Rose is a nurse.", "Rose", "Rose is a nurse."),
        ("Rose moved to Paris.", "Rose", "Rose moved to Paris."),
        ("Drew works at Google.", "Drew", "Drew works at Google."),
        ("Drew a picture today.", "Alice", "Alice drew a picture on 8 May 2023."),
    ],
)
def test_a_given_name_that_is_a_past_tense_is_a_name_before_a_verb(text, subject, statement):
    # "Rose is a nurse" was "Alice rose is a nurse.": the speaker's, with no subject word
    a = one(text)
    assert (a.subject, a.statement) == (subject, statement)


def test_a_job_offer_is_no_employer():
    assert one("I got a job offer from Stripe.").attribute is None


def test_a_names_s_before_a_noun_is_whose():
    carol = one(msg("Carol's been at Acme since 2019.", speaker="Bob"))
    assert (carol.subject, carol.owner, carol.statement) == ("Carol", "Carol", "Carol has been at Acme since 2019.")
    assert carol.valid_from == datetime(2019, 1, 1, tzinfo=UTC)
    # a thing of the person's, judged: the speaker's view, never the person's state
    for text in ("Bob's wedding was lovely.", "Bob's painting is lovely.", "Bob's cooking really is amazing."):
        assert all(a.owner == "Alice" and "Bob's" in a.statement for a in run(text)), text
    assert run("Bob's used car was red.") == []


def test_event_records_are_remembered():
    a = one({"kind": "event", "name": "login", "text": "Signed in from Porto"}, when=JUNE)
    assert (a.subject, a.owner, a.valid_from, a.time_stated) == ("Alice", None, JUNE, True)
    assert a.statement == "Event on 10 June 2024: login: Signed in from Porto."
    # an event whose text reads as a clause is read as one
    b = one({"kind": "event", "name": "plan change", "text": "Alice upgraded to the Pro plan"}, when=JUNE)
    assert b.statement == "Alice upgraded to the Pro plan." and b.owner is None


def test_a_bare_denial_asserts_nothing():
    assert run("No, that's wrong.") == []
    a = one({"kind": "correction", "corrects": "mem_1", "text": "No, that's wrong."})
    assert (a.retraction, a.corrective, a.attribute, a.owner) == (True, True, None, "Alice")
    b = one({"kind": "correction", "corrects": "mem_1", "text": "I live in Porto now."})
    assert (b.retraction, b.corrective, b.attribute, b.value) == (False, True, "lives_in", "porto")


@pytest.mark.parametrize(
    ("text", "value", "negated", "change"),
    [
        ("I love coffee.", "coffee", False, False),
        ("I hate coffee.", "coffee", True, False),
        ("I don't like coffee anymore.", "coffee", True, True),
    ],
)
def test_opposite_polarity_same_attribute(text, value, negated, change):
    a = one(text)
    assert (a.attribute, a.value, a.negated, a.change) == ("likes", value, negated, change)


@pytest.mark.parametrize(
    ("text", "negated", "change", "past"),
    [
        ("I drink coffee.", False, False, False),
        ("I no longer drink coffee.", True, True, False),
        ("I stopped drinking coffee.", True, True, False),
        ("I quit drinking coffee.", True, True, False),
        ("I gave up drinking coffee.", True, True, False),
        ("I used to drink coffee.", False, True, True),
        ("I started drinking coffee.", False, True, False),
    ],
)
def test_habits_change_and_end(text, negated, change, past):
    a = one(text, when=JUNE)
    assert (a.attribute, a.value, a.negated, a.change) == ("does", "drinking coffee", negated, change)
    assert (a.valid_to is not None) == past


@pytest.mark.parametrize(
    ("content", "subject", "attribute", "value"),
    [
        ("My brother doesn't eat meat.", "Alice's brother", "does", "eating meat"),
        ("My mom doesn\u2019t work at the bank.", "Alice's mom", "works_at", "bank"),
        ("My parents don't live in Ohio.", "Alice's parents", "lives_in", "ohio"),
        (msg("My wife doesn't work at Acme.", speaker="Bob"), "Bob's wife", "works_at", "acme"),
        ("My brother hasn't lived in Rome since 2019.", "Alice's brother", "lives_in", "rome"),
        ("My brother doesn't live in Rome anymore.", "Alice's brother", "lives_in", "rome"),
        ("My kids aren't vegetarian.", "Alice's kids", None, None),
    ],
)
def test_a_contracted_negation_after_my_relative_denies(content, subject, attribute, value):
    # "doesn't", "don't", "hasn't" were read as words of the noun phrase: the denial was lost and the
    # Memory said the opposite ("Alice's brother" does eat meat)
    a = one(content)
    assert (a.subject, a.owner, a.attribute, a.value, a.negated) == (subject, subject, attribute, value, True)


def test_a_thing_done_once_or_gotten_is_no_ended_state():
    pet = one("I got a puppy last week.", when=JUNE)
    assert (pet.attribute, pet.value, pet.valid_to) == ("has_pet", "puppy", None)
    once = one("I got to teach a class yesterday.", when=JUNE)
    assert once.attribute is None and once.valid_to is None
    # a denied alternative is no denial of the clause, nor a correction of something else
    happy = one("I'm happy, not sad.")
    assert not happy.negated
    assert not one("I use coconut oil instead of butter.").corrective


def test_quit_smoking():
    a = one("I quit smoking.")
    assert (a.attribute, a.value, a.negated, a.change) == ("does", "smoking", True, True)


@pytest.mark.parametrize(
    ("text", "value", "negated"),
    [
        ("I quit smoking two years ago.", "smoking", True),
        ("I quit drinking in 2020.", "drinking", True),
        ("I don't smoke anymore.", "smoking", True),
        ("I started running two years ago.", "running", False),
        ("I stopped drinking coffee last year.", "drinking coffee", True),
    ],
)
def test_a_time_after_a_habit_is_no_part_of_it(text, value, negated):
    # were "smoking two years", "drinking in", "smoking anymore": a habit no later "I smoke" matched
    a = one(text)
    assert (a.attribute, a.value, a.negated) == ("does", value, negated)


def test_corrective_and_stated_time():
    a = one("Actually I moved to Lisbon in April, not March.", when=JUNE)
    assert (a.attribute, a.value, a.corrective, a.time_stated) == ("lives_in", "lisbon", True, True)
    assert a.valid_from == datetime(2024, 4, 1, tzinfo=UTC)
    b = one("I moved to Lisbon in March.", when=JUNE)
    assert (b.corrective, b.time_stated, b.valid_from) == (False, True, datetime(2024, 3, 1, tzinfo=UTC))
    c = one("I moved to Lisbon.", when=JUNE)
    assert (c.corrective, c.time_stated, c.valid_from) == (False, False, JUNE)
    for text in (
        "I meant Porto, I live in Porto.",
        "I live in Porto rather than Lisbon.",
        "I live in Porto, not Lisbon.",
    ):
        assert all(x.corrective for x in run(text)), text


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("Sorry, I meant Portland, not Denver.", ("Portland", "denver")),
        ("I mean Portland", ("Portland", None)),
        ("*Portland", ("Portland", None)),
        ("Portland*", ("Portland", None)),
        ("Oops, Portland, not Denver!", ("Portland", "denver")),
        ("I meant teacher, not student.", ("teacher", "student")),
    ],
)
def test_a_value_meant_with_no_clause_is_kept_for_what_it_corrects(text, meant):
    # "Sorry, I meant Portland, not Denver" was a statement of its own ("Alice meant Portland, not
    # Denver."), nothing the planner could put in Denver's place; "*Portland" made nothing
    a = one(text)
    assert (a.meant, a.corrective, a.attribute, a.owner, a.subject) == (meant, True, None, "Alice", "Alice")
    assert a.statement.startswith("Alice meant ")


@pytest.mark.parametrize(
    "text",
    ["not Denver", "*hugs*", "*Sigh*", "I mean, whatever.", "I mean Portland is nice.", "Nope, not a new game.", "No, not yet."],
)
def test_what_names_no_value_meant_corrects_nothing(text):
    assert not any(a.meant for a in run(text))


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("Tom's not moving to Boston anymore.", "Tom"),
        ("Bob's not coming today.", "Bob"),
        ("Tom's not my boss anymore.", "Tom"),
        ("Mom\u2019s not feeling well.", "Gina's mom"),
    ],
)
def test_a_name_with_a_contracted_is_before_not_is_a_denial_not_a_value_meant(text, subject):
    # "Tom's not ..." is "Tom is not ...": no "Tom's" meant in place of "moving to Boston", said by the speaker
    out = run(msg(text, speaker="Gina"))
    assert not any(a.meant or a.corrective for a in out), out
    assert all(a.subject == subject and a.negated for a in out), out
    # a possessive meant, set off by its comma, still is one
    assert one(msg("Oops, Tom's, not Jen's.", speaker="Gina")).meant == ("Tom's", "jen's")


@pytest.mark.parametrize(
    ("text", "statement", "value"),
    [
        ("I live in Denver, sorry, Portland", "Alice lives in Portland.", "portland"),
        ("I'm 30, sorry, 31.", "Alice is 31.", "31"),
        ("I live in Denver. Sorry, I meant Portland.", "Alice lives in Portland.", "portland"),
        ("I live in Denver and I love sushi. Sorry, I meant Portland, not Denver.", "Alice lives in Portland.", "portland"),
        # were "Alice is a nurse, sorry, a doctor." and "Alice is a nurse." (job "nurse"), "... Boston, sorry, in
        # Denver.", "... Boston, actually Denver." (home "boston"): the value retracted kept, the one meant lost
        ("I live in Denver, sorry, in Portland.", "Alice lives in Portland.", "portland"),
        ("I live in Denver, actually Portland.", "Alice lives in Portland.", "portland"),
        ("I live in Denver, or rather Portland.", "Alice lives in Portland.", "portland"),
        ("I'm a nurse, sorry, a doctor.", "Alice is a doctor.", "doctor"),
        ("I'm a nurse, I mean a doctor.", "Alice is a doctor.", "doctor"),
        ("I'm a nurse. Sorry, I meant a doctor.", "Alice is a doctor.", "doctor"),
        ("I have a dog, sorry, a cat.", "Alice has a cat.", "cat"),
    ],
)
def test_a_value_meant_in_the_same_message_is_the_statement_said_right(text, statement, value):
    # "I live in Denver, sorry, Portland" was "Alice lives in Denver, sorry."
    out = run(text)
    fixed = out[0]
    assert (fixed.statement, fixed.value, fixed.meant) == (statement, value, None)
    assert not any(a.meant or any(w in a.statement for w in ("Denver", "30", "nurse", "dog")) for a in out)
    # one quote spans what was said and its correction
    start, end = fixed.span
    assert start == 0 and value in text[start:end].casefold()


@pytest.mark.parametrize(
    "text",
    ["I live in Denver, actually a suburb.", "I live in Denver, sorry, a bit tired.", "I live in Denver. It was fun, actually a blast."],
)
def test_a_thing_meant_replaces_no_name_nor_a_value_of_another_clause(text):
    # a thing said with its article stands for a thing said with one ("a nurse"), never for a place
    out = run(text)
    assert [(a.attribute, a.value) for a in out if a.attribute] == [("lives_in", "denver")]
    assert not any(a.meant for a in out)


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [("I have a dog, actually a big one.", "has_pet", "dog"), ("I'm a teacher, actually a good one.", "job", "teacher")],
)
def test_a_thing_said_again_as_one_is_more_of_it_no_correction(text, attribute, value):
    # were "Alice has a big one." (pet "big one") and "Alice is a good one." (job "good one")
    assert [(a.attribute, a.value) for a in run(text) if a.attribute] == [(attribute, value)]


@pytest.mark.parametrize(
    "text",
    ["I'm a nurse at Mercy, sorry, Memorial.", "I'm a nurse at Mercy. Sorry, I meant Memorial.", "I work as a nurse at Mercy, I mean Memorial."],
)
def test_a_value_meant_is_said_right_in_every_statement_of_the_words_it_corrects(text):
    # the employer was Memorial, but the job read from the same words stayed "Alice is a nurse at Mercy."
    out = run(text)
    assert [(a.attribute, a.value) for a in out] == [("job", "nurse"), ("works_at", "memorial")]
    assert all("Memorial" in a.statement and "Mercy" not in a.statement for a in out), out
    assert all(a.span == out[1].span and "Memorial" in text[slice(*a.span)] for a in out), out


def test_a_value_meant_after_words_that_said_none_is_nothing():
    # what "I mean Tim" corrects is "Tom", which is no value said: nothing to put it in place of
    out = run("I went there with Tom, I mean Tim.")
    assert [a.statement for a in out] == ["Alice went there with Tom."] and not any(a.meant for a in out)


def test_an_oops_or_no_wait_corrects_what_was_said():
    for text in ("No wait, I live in Boulder", "Oops, I live in Boulder.", "Wait, no, I live in Boulder."):
        a = one(text)
        assert (a.attribute, a.value, a.corrective) == ("lives_in", "boulder", True), text


def test_a_label_opening_a_sentence_heads_the_writers_words():
    # "Big news: ..." made nothing (a dash in its place worked): the label is skipped, as a dash's
    news = one(msg("Big news: we're moving to Denver in June.", speaker="Bob"))
    assert (news.owner, news.attribute, news.value, news.change) == ("Bob", "lives_in", "denver", True)
    assert news.valid_from == datetime(2023, 6, 1, tzinfo=UTC)
    assert one("Update: I got the job at Stripe!").statement == "Alice got the job at Stripe."
    ps = one("PS: I moved to Oslo.")
    assert (ps.owner, ps.attribute, ps.value) == ("Alice", "lives_in", "oslo")
    standup = one("Standup: Bob is blocked on the API review.")
    assert standup.statement == "Bob is blocked on the API review."
    # "Correction:" and "Edit:" correct what was said before, as "Actually ..." does
    fixed = one("Correction: I live in Denver, not Dallas.")
    assert (fixed.attribute, fixed.value, fixed.corrective) == ("lives_in", "denver", True)
    edit = one("Edit: I live in Denver.")
    assert (edit.attribute, edit.value, edit.corrective) == ("lives_in", "denver", True)
    # a date as the label dates what it heads
    dated = one("2021-03-04: I moved to Oslo.")
    assert (dated.attribute, dated.value, dated.time_stated) == ("lives_in", "oslo", True)
    assert dated.valid_from == datetime(2021, 3, 4, tzinfo=UTC)
    # what the label heads is read as the sentence is: a condition still holds it back
    assert run("Note: if I get the job, I'll move to London.") == []
    # a name, a person or a reporting verb before the colon says who speaks: not the writer's words
    for text in ("Bob: I moved to Oslo.", "Mom: I moved to Oslo.", "Doctor: I moved to Oslo.",
                 "Email from Bob: I moved to Oslo.", "Mom update: I moved to Oslo.", "Subject: I moved to Oslo."):
        assert not [a for a in run(text) if a.owner == "Alice"], text
    said = one("Bob said: I moved to Oslo.")
    assert (said.owner, said.value) == ("Bob", "oslo")


@pytest.mark.parametrize(
    ("text", "subject", "attribute", "value"),
    [
        ("Both my parents live in Denver.", "Alice's parents", "lives_in", "denver"),
        ("Both of my parents live in Denver.", "Alice's parents", "lives_in", "denver"),
        ("All my sisters work at Google.", "Alice's sisters", "works_at", "google"),
    ],
)
def test_both_or_all_of_the_speaker_s_people_are_those_people(text, subject, attribute, value):
    # were nothing: "both"/"all" opened no subject the rules knew
    a = one(text)
    assert (a.subject, a.owner, a.attribute, a.value) == (subject, subject, attribute, value)


def test_both_or_all_before_no_people_is_no_subject():
    # ("All my life": a time; "both my sister and my brother": two, of whom one would be read)
    assert run("All my life I have lived in Denver.") == []
    assert run("Both my sister and my brother live in Denver.") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I hardly ever eat meat.", "Alice hardly ever eats meat."),
        ("I rarely ever drink.", "Alice rarely ever drinks."),
        ("I seldom eat meat.", "Alice seldom eats meat."),
    ],
)
def test_ever_and_seldom_before_the_verb_are_no_verb(text, statement):
    # were "Alice hardly evers eat meat.", "Alice rarely evers drink.", "Alice seldoms eat meat."
    assert one(text).statement == statement


def test_a_ticked_task_box_is_no_part_of_its_item():
    # were "Alice says x] moved to Denver." (the subject "x]") and nothing for the other two
    found = run("- [x] moved to Denver\n- [ ] find a dentist\n* [X] I adopted a cat\n1. [x] I started at Stripe in April")
    assert [(a.subject, a.attribute, a.value) for a in found] == [
        ("Alice", "lives_in", "denver"), ("Alice", "has_pet", "cat"), ("Alice", "works_at", "stripe")
    ]
    assert found[2].statement == "Alice started at Stripe in April 2023."
    # an open box is a thing to do, not done
    assert run("- [ ] move to Denver\n- [ ] moved to Denver") == []


@pytest.mark.parametrize(
    "text",
    [
        "For the record: I live in Denver.", "Long story short: I live in Denver.", "One more thing: I live in Denver.",
        "Note to self: I live in Denver.", "About me: I live in Denver.", "Please update my records: I live in Denver.",
    ],
)
def test_a_discourse_label_or_a_request_heads_the_writers_words(text):
    # were nothing: the label was none _LABEL_HEADS knew, and "Please update my records" has "my" in it
    a = one(text)
    assert (a.owner, a.attribute, a.value, a.statement) == ("Alice", "lives_in", "denver", "Alice lives in Denver.")


@pytest.mark.parametrize(
    "text", ["Please tell Bob: I live in Oslo.", "Please tell my mom: I live in Oslo.", "About Bob: he lives in Oslo."]
)
def test_a_request_that_names_another_is_no_label(text):
    assert not [a for a in run(text) if a.owner == "Alice" and a.attribute]


# ---- rule 9: time, by tense and direction (said on 10 June 2024)


@pytest.mark.parametrize(
    ("text", "attr", "start", "end"),
    [
        ("I will be in Paris until June 20.", None, JUNE, datetime(2024, 6, 21, tzinfo=UTC)),
        ("I fly to Tokyo on October 10.", None, datetime(2024, 10, 10, tzinfo=UTC), None),
        ("I flew to Tokyo on October 10.", None, datetime(2023, 10, 10, tzinfo=UTC), None),
        (
            "We lived in Lisbon from May to July 2022.",
            "lives_in",
            datetime(2022, 5, 1, tzinfo=UTC),
            datetime(2022, 8, 1, tzinfo=UTC),
        ),
        ("I lived in Oslo until 2020.", "lives_in", UNKNOWN_START, datetime(2021, 1, 1, tzinfo=UTC)),
        ("I used to live in Dublin.", "lives_in", UNKNOWN_START, JUNE),
        # a liking or a job that "used to" be is over as any state is (they stayed open from the Record)
        ("I used to love sushi.", "likes", UNKNOWN_START, JUNE),
        ("I used to hate sushi.", "likes", UNKNOWN_START, JUNE),
        ("I used to be a teacher.", "job", UNKNOWN_START, JUNE),
        # a liking in the plain past is how something went, no taste that ended
        ("I loved the movie.", "likes", JUNE, None),
        (
            "I lived in Tokyo in the 90s.",
            "lives_in",
            datetime(1990, 1, 1, tzinfo=UTC),
            datetime(2000, 1, 1, tzinfo=UTC),
        ),
        (
            "I lived in Rome in 2019.",
            "lives_in",
            datetime(2019, 1, 1, tzinfo=UTC),
            datetime(2020, 1, 1, tzinfo=UTC),
        ),
        ("I live in Rome.", "lives_in", JUNE, None),
        ("I moved to Rome in 2019.", "lives_in", datetime(2019, 1, 1, tzinfo=UTC), None),
        ("I've been vegan for three years.", None, datetime(2021, 6, 10, tzinfo=UTC), None),
        ("I go running every Saturday.", None, JUNE, None),
    ],
)
def test_valid_time_follows_tense(text, attr, start, end):
    a = one(text, when=JUNE)
    assert (a.attribute, a.valid_from, a.valid_to) == (attr, start, end)


def test_visiting_in_april_is_ahead():
    a = one("Sam is visiting me in April.", when=datetime(2023, 3, 5, tzinfo=UTC))
    assert a.valid_from == datetime(2023, 4, 1, tzinfo=UTC)
    assert a.statement == "Sam is visiting Alice in April 2023."


def test_a_recurrence_is_not_a_date():
    a = one("I go running every Saturday.", when=JUNE)
    assert a.statement == "Alice goes running every Saturday." and not a.time_stated


# ---- robustness and speed

KINDS = st.sampled_from(["message", "document", "fact", "correction", "event"])


@settings(max_examples=400, deadline=None)
@given(
    st.text(),
    KINDS,
    st.sampled_from([None, "user", "assistant", "system", "other"]),
    st.sampled_from([None, "Alice", "Bob"]),
)
def test_never_crashes(text, kind, role, speaker):
    content = {"kind": kind, "text": text, "name": text[:10] or "e", "corrects": "mem_1"}
    if role:
        content["role"] = role
    if speaker:
        content["speaker"] = speaker
    src = source_text(content, self_name="Alice", occurred_at=NOW)
    for a in X.extract(src, self_name="Alice"):
        assert isinstance(a, Assertion)
        assert 0 <= a.span[0] < a.span[1] <= len(src.text)
        assert a.statement and a.subject
        if src.role in ("assistant", "system"):
            assert a.owner != "Alice"


WORDS = [
    "I",
    "my",
    "sister",
    "and",
    "you",
    "Bob",
    "said",
    "he",
    "live",
    "in",
    "Lisbon",
    "don't",
    "like",
    "moved",
    "to",
    "last",
    "March",
    "yesterday",
    "we",
    "our",
    "Mel",
    ",",
    ".",
    "!",
    "?",
    "no",
    "longer",
    "work",
    "at",
    "Acme",
    "'m",
    "a",
    "teacher",
    "since",
    "2019",
    "from",
    "2015",
    "until",
    "-",
    "it",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join), st.sampled_from(["user", "assistant"]))
def test_word_soup(text, role):
    for a in run(msg(text, role=role)):
        if role == "assistant":
            assert a.owner is None
        assert a.owner != "Alice" or role == "user"


def test_fact_subject_never_the_self_unless_named():
    a = one({"kind": "fact", "subject": "Bob", "predicate": "lives in", "value": "Paris"})
    assert a.owner == "Bob"


LOCOMO = next(
    (
        root / "locomo10_v2" / "26.json"
        for root in (
            Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo",
            Path("/work/shared/data/locomo"),
        )
        if (root / "locomo10_v2" / "26.json").exists()
    ),
    Path("/nonexistent"),
)


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
def test_locomo_speed_and_attribution():
    with LOCOMO.open(encoding="utf-8") as f:
        conv = json.load(f)
    turns = [(t["speaker"], t["text"]) for k, v in conv.items() if re.fullmatch(r"session_\d+", k) for t in v]
    names = {conv["speaker_a"], conv["speaker_b"]}
    run(msg("warm up yesterday on 5 May 2020", speaker="x"))
    times = []
    for speaker, text in turns:
        src = source_text(msg(text, speaker=speaker), self_name=conv["speaker_a"], occurred_at=NOW)
        t0 = time.perf_counter()
        out = X.extract(src, self_name=conv["speaker_a"])
        times.append(time.perf_counter() - t0)
        for a in out:
            # a speaker's first person never lands on the other speaker
            other = (names - {speaker}).pop()
            quote = text[a.span[0] : a.span[1]]
            if re.match(r"(?i)I\b|I'm\b|I've\b", quote):
                assert a.owner == speaker and a.owner != other
    assert statistics.median(times) < 0.002


# ---- clauses the chat way: fronted clauses, showing, leaving


@given(
    st.sampled_from(["Seven years now", "Two weeks in", "What a day", "So many changes"]),
    st.sampled_from(
        [
            ("I've finally found my real muses", "Bob has finally found Bob's real muses."),
            ("I joined a pottery class", "Bob joined a pottery class."),
            ("we adopted a puppy", "Bob and others adopted a puppy."),
        ]
    ),
)
def test_comma_and_first_person_starts_a_clause(opener, clause):
    text, statement = clause
    out = run(msg(f"{opener}, and {text}.", speaker="Bob"))
    assert any(a.statement == statement and a.owner == "Bob" for a in out), out


@pytest.mark.parametrize(
    "subordinator", ["Since", "Because", "Although", "Even though", "Ever since", "After", "When", "While"]
)
@given(
    st.sampled_from(
        [
            ("I lost my job at Door Dash", "Bob lost Bob's job at Door Dash."),
            ("we moved to Oslo", "Bob and others moved to Oslo."),
            ("I met my partner at the shelter", "Bob met Bob's partner at the shelter."),
        ]
    ),
    st.sampled_from(["things have been tough", "everything changed", "I've been happier", "I feel at home"]),
    st.booleans(),
)
@settings(max_examples=20)
def test_a_fronted_subordinate_clause_is_a_fact_of_its_own(subordinator, clause, main, comma):
    text, statement = clause
    # without a comma, the main clause is found by its first-person subject
    comma = comma or not main.startswith("I")
    sentence = f"{subordinator} {text}{',' if comma else ''} {main}."
    facts = [a for a in run(msg(sentence, speaker="Bob")) if a.statement == statement]
    assert len(facts) == 1 and facts[0].owner == "Bob"
    s, e = facts[0].span
    assert sentence[s:e] == text  # the quote is the clause, without its subordinator


def test_a_fronted_subordinate_clause_that_is_no_fact_yet():
    # a time still ahead, a habit, a time of life or a condition: the subordinate clause says nothing of
    # its own (a time ahead is the time of the clause after it, which it goes with)
    assert [a.statement for a in run(msg("When I get home, I'll call my mom.", speaker="Bob"))] == [
        "Bob will call Bob's mom when Bob gets home."
    ]
    assert [a.statement for a in run(msg("When I was younger, I played soccer.", speaker="Bob"))] == [
        "Bob played soccer."
    ]
    assert [a.statement for a in run(msg("If I lose my job, I'll move home.", speaker="Bob"))] == []
    assert [a.statement for a in run(msg("While I was in Paris I met Sam.", speaker="Bob"))] == [
        "Bob was in Paris.",
        "Bob met Sam.",
    ]
    # another speaker's subordinate clause is theirs, never the Brain's self
    assert {a.owner for a in run(msg("Since I moved to Oslo, it rains.", speaker="Bob"))} == {"Bob"}


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Here's a pic of my family camping at the beach.", "Bob shared a pic of Bob's family camping at the beach."),
        ("Here's a photo of my horse painting I did recently.", "Bob shared a photo of Bob's horse painting Bob did recently."),
        ("Here's a peek at the space I designed.", "Bob shared a peek at the space Bob designed."),
        ("Check out my pottery creation!", "Bob shared Bob's pottery creation."),
        ("Check out these kids I met at the shelter!", "Bob shared these kids Bob met at the shelter."),
        ("Yeah, check it out - here's my bookshelf!", "Bob shared Bob's bookshelf."),
        ("These are my lucky basketball shoes.", "Bob shared Bob's lucky basketball shoes."),
    ],
)
def test_showing_something_is_sharing_it(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize(
    "text", ["Here's a pic!", "Check out that movie, it's great.", "Here is the thing.", "Check it out."]
)
def test_showing_nothing_of_ones_own_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


def test_an_assistant_shows_nothing_of_the_users():
    assert all(a.owner is None for a in run(msg("Here's a photo of my cat.", role="assistant")))


@pytest.mark.parametrize(
    ("text", "attribute", "left", "gained"),
    [
        ("I left Stripe in April and joined Spotify.", "works_at", "stripe", "spotify"),
        ("I quit Acme last month. I started working at Globex.", "works_at", "acme", "globex"),
        ("We left Paris in 2019 and moved to Berlin.", "lives_in", "paris", "berlin"),
    ],
)
def test_leaving_takes_the_attribute_of_what_replaces_it(text, attribute, left, gained):
    out = run(msg(text, speaker="Alice"), when=JUNE)
    ended = next(a for a in out if a.value == left)
    new = next(a for a in out if a.value == gained)
    assert (ended.attribute, ended.negated, ended.change, ended.single_valued) == (attribute, True, True, True)
    assert (new.attribute, new.negated, new.change) == (attribute, False, True)
    assert ended.time_stated and ended.valid_from < new.valid_from


@pytest.mark.parametrize(
    "text", ["I moved to Denver, but I quit Google.", "I live in Denver but on Monday I quit Google."]
)
def test_a_job_is_quit_never_a_home(text):
    # was lives_in "google", negated: a home gained in the Record took "quit Google" for leaving a home
    out = run(msg(text, speaker="Alice"))
    assert [(a.attribute, a.value, a.negated) for a in out if a.attribute] == [("lives_in", "denver", False)]
    assert next(a for a in out if "Google" in a.statement).left == "google"


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("I was a teacher for ten years before I became a writer.", "job", "teacher"),
        ("I worked at Google before I joined Meta.", "works_at", "google"),
        ("I lived in Boston until I moved here.", "lives_in", "boston"),
    ],
)
def test_a_change_in_a_clause_of_time_after_the_predicate_is_that_clauses(text, attribute, value):
    # was held from when it was said, with no end: "became", "joined", "moved" in the clause after
    # "before"/"until" read as the predicate's own change, a start of what the past tense ended
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value, a.change, a.valid_from, a.valid_to) == (attribute, value, False, UNKNOWN_START, NOW)


@pytest.mark.parametrize(
    ("text", "subject", "attribute", "value"),
    [
        ("My ex-husband lives in Texas.", "Alice's ex-husband", "lives_in", "texas"),
        ("My mother-in-law lives in Texas.", "Alice's mother-in-law", "lives_in", "texas"),
        ("My co-worker is a nurse.", "Alice's co-worker", "job", "nurse"),
        ("My step-dad works at Ford.", "Alice's step-dad", "works_at", "ford"),
    ],
)
def test_a_hyphenated_relation_is_one_person(text, subject, attribute, value):
    # was "Alice's ex -husband lives in Texas." of a subject "Alice's ex", with no attribute
    a = one(msg(text, speaker="Alice"))
    assert (a.subject, a.attribute, a.value) == (subject, attribute, value)
    assert a.statement == text.replace("My ", "Alice's ", 1)


def test_a_job_no_longer_held_is_ended():
    # was no job: "no longer" stood between "am" and the job
    ended, now = run(msg("I'm no longer a teacher, I'm a writer now.", speaker="Alice"))
    assert (ended.attribute, ended.value, ended.negated, ended.change) == ("job", "teacher", True, True)
    assert (now.attribute, now.value, now.negated) == ("job", "writer", False)


@pytest.mark.parametrize(
    ("text", "place"),
    [("I was born on June 3 in Ohio.", "ohio"), ("My son was born on May 2, 2020 in Boston.", "boston")],
)
def test_a_birthplace_is_kept_beside_the_birthday(text, place):
    # was the birthday only
    day, where = run(msg(text, speaker="Alice"))
    assert (day.attribute, where.attribute, where.value, where.valid_to) == ("birthday", "from", place, None)
    assert where.statement == day.statement


@pytest.mark.parametrize(
    ("text", "valid_from"),
    [
        ("I was born in August in Ohio.", UNKNOWN_START),
        ("I was born in Ohio in August.", UNKNOWN_START),
        ("I was born in 1990 in Ohio.", datetime(1990, 1, 1, tzinfo=UTC)),
        ("My son was born in March in Ohio.", datetime(2023, 3, 1, tzinfo=UTC)),
    ],
)
def test_a_birthplace_is_kept_beside_the_time_of_birth(text, valid_from):
    # was nothing of Ohio after "born in August", and "born in Ohio in August" ended being from Ohio at the
    # end of August 2022 (the speaker's own birth month read as last August)
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value, a.valid_from, a.valid_to) == ("from", "ohio", valid_from, None)
    assert "2022" not in a.statement


@pytest.mark.parametrize(
    "text",
    [
        "Reading list: Dune and Emma.",
        "Shopping list: milk and eggs.",
        "Bucket list: skydiving and visiting Japan.",
        "Bucket list:\n- skydiving\n- visiting Japan",
        "Gift ideas: knitting, baking.",
    ],
)
def test_a_list_of_things_is_no_doing_of_the_speakers(text):
    # was "Alice is reading list: Dune and Emma.", "Alice is skydiving."
    assert run(msg(text, speaker="Alice")) == []


def test_what_a_label_heads_on_its_line_is_read():
    # was nothing: "Meeting notes: I moved to Denver." read no label
    a = one(msg("Meeting notes: I moved to Denver. Gift ideas: a scarf.", speaker="Alice"))
    assert (a.statement, a.attribute, a.value) == ("Alice moved to Denver.", "lives_in", "denver")


@pytest.mark.parametrize(
    "text", ["I'm a former nurse.", "I'm a retired nurse.", "I used to be a nurse."]
)
def test_a_former_job_is_a_job_held_once(text):
    # was the job "former nurse", held now
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value, a.negated, a.valid_from, a.valid_to) == ("job", "nurse", False, UNKNOWN_START, NOW)


def test_the_employer_of_a_former_job_is_one_of_the_past():
    job, employer = run(msg("My mom is a former nurse at Mercy Hospital.", speaker="Alice"))
    assert (job.value, employer.attribute, employer.value) == ("nurse", "works_at", "mercy hospital")
    assert (employer.valid_from, employer.valid_to) == (UNKNOWN_START, NOW)


@pytest.mark.parametrize(
    ("text", "pets"),
    [
        ("I have three kids and a hamster.", ["hamster"]),
        ("We have two kids, a car and a dog named Rex.", ["dog"]),
        ("I have two dogs and a cat.", ["dog", "cat"]),
        ("I have a meeting and a dog walk.", []),
    ],
)
def test_a_pet_listed_after_other_things_is_had(text, pets):
    # was no pet: the has_pet pattern read a pet only right after "have"
    assert [a.value for a in run(msg(text, speaker="Alice")) if a.attribute == "has_pet"] == pets


@pytest.mark.parametrize(
    ("text", "pets", "negated"),
    [
        ("I've got 2 cats and a dog.", ["cat", "dog"], False),
        ("We have a dog, a cat and a parrot.", ["dog", "cat", "parrot"], False),
        ("My sister has a dog & two rabbits.", ["dog", "rabbit"], False),
        ("I don't have a cat or a dog.", ["cat", "dog"], True),
        ("I have a dog and a car.", ["dog"], False),
    ],
)
def test_each_pet_of_a_list_is_had(text, pets, negated):
    # was only the first ("2 cats and a dog": the cats)
    out = run(msg(text, speaker="Alice"))
    assert [a.value for a in out if a.attribute == "has_pet"] == pets
    assert {(a.negated, a.statement) for a in out} == {(negated, out[0].statement)}


@pytest.mark.parametrize(
    ("text", "attribute", "statement"),
    [
        ("I live in Denver during the summer.", "lives_in", "Alice lives in Denver during the summer."),
        ("I work at a camp in June.", "works_at", "Alice works at a camp in June."),
        ("I swim in the summer.", "does", "Alice swims in the summer."),
    ],
)
def test_a_season_in_the_simple_present_is_each_one_no_date(text, attribute, statement):
    # was dated from the summer before ("... in the summer of 2022"): a habit or a state held each
    # summer began at no date the text tells
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.statement, a.valid_from, a.valid_to, a.time_stated) == (attribute, statement, NOW, None, False)


def test_a_season_of_a_plan_or_of_the_past_is_still_dated():
    moving = one(msg("I move to Denver in June.", speaker="Alice"))
    assert moving.valid_from == datetime(2023, 6, 1, tzinfo=UTC)
    lived = one(msg("I lived in Denver during the summer.", speaker="Alice"))
    assert (lived.valid_from, lived.valid_to) == (datetime(2022, 6, 1, tzinfo=UTC), datetime(2022, 9, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    "text",
    [
        "I'm not moving to Denver.",
        "I'm not moving to Denver next month.",
        "We aren't moving to Denver after all.",
        "I'm not joining Acme.",
        "I'm not getting a dog.",
    ],
)
def test_a_plan_denied_states_nothing_of_what_it_would_have_changed(text):
    # was lives_in "denver", negated: "not moving there" read as "does not live there"
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value, a.negated) == (None, None, True)


@pytest.mark.parametrize(
    "text",
    [
        "Kidding aside, I love hiking.",
        "Joking aside I love hiking.",
        "All jokes aside, I love hiking.",
        "Generally speaking, I love hiking.",
        "Frankly speaking I love hiking.",
    ],
)
def test_how_the_speaker_means_what_follows_is_no_state_of_theirs(text):
    # was "Alice is kidding aside." beside it, or (without the comma) nothing at all
    a = one(msg(text, speaker="Alice"))
    assert (a.statement, a.attribute, a.value) == ("Alice loves hiking.", "likes", "hiking")


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("Back in the day I worked at Google.", "works_at", "google"),
        ("Back in the day, I worked at Google.", "works_at", "google"),
        ("Years ago I lived in Ohio.", "lives_in", "ohio"),
        ("As a kid I had a dog.", "has_pet", "dog"),
        ("In college I worked at a bar.", "works_at", "bar"),
    ],
)
def test_a_fronted_time_of_life_dates_the_clause_as_past(text, attribute, value):
    # was "Alice is back in the day Alice worked at Google." or nothing at all: without a comma the time
    # of life was read as the clause's subject, and "Back in the day," as a state of the speaker's
    a = one(msg(text, speaker="Alice"))
    assert (a.subject, a.attribute, a.value, a.negated) == ("Alice", attribute, value, False)
    assert (a.valid_from, a.valid_to) == (UNKNOWN_START, NOW)


@pytest.mark.parametrize(
    "text", ["I moved to Denver and on Monday I left Google.", "I moved to Denver. I left Acme on Monday."]
)
def test_what_is_left_after_a_move_is_not_the_home_it_ended(text):
    # was lives_in "google", negated: a home gained took a leaving told after it for the home it ended
    out = run(msg(text, speaker="Alice"))
    assert [(a.attribute, a.value, a.negated) for a in out if a.attribute] == [("lives_in", "denver", False)]
    assert next(a for a in out if "left" in a.statement).left in {"google", "acme"}


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("I left Paris last week.", "paris"),
        ("I quit Twitter.", "twitter"),
        ("We left the party early.", None),
        ("I never left Google.", None),  # no leaving: nothing for the planner to end
    ],
)
def test_leaving_alone_is_no_attribute(text, left):
    """What was left is kept for the planner, which knows whether the subject worked there."""
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value, a.negated, a.left) == (None, None, False, left)


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("I quit my job.", ""),
        ("Quit my job today.", ""),  # chat drops the "I" (was nothing: "quit" may be an order)
        ("I got laid off today.", ""),
        ("I was let go last week.", ""),
        ("I lost my job in March.", ""),
        ("My sister got fired.", ""),
        ("I never quit my job.", None),
        ("I'm quitting my job.", None),  # a plan, not yet an ending
        ("I was fired up about the game.", None),
        ("I let go of the past.", None),
    ],
)
def test_a_job_ended_unnamed_is_left_to_the_planner(text, left):
    """No employer named: "" tells the planner to end the one job the subject holds, if it knows one."""
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.left) == (None, left)
    assert a.change or left is None


@pytest.mark.parametrize("text", ["Quit my job at Acme today.", "I quit my job at Acme today."])
def test_a_job_quit_at_a_named_employer_ends_it(text):
    # "Quit my job at Acme today." made nothing
    a = one(msg(text, speaker="Alice"))
    assert (a.subject, a.owner, a.attribute, a.value, a.negated, a.change) == ("Alice", "Alice", "works_at", "acme", True, True)
    assert a.valid_from.date() == date(2023, 5, 8)


@pytest.mark.parametrize("text", ["Quit your job!", "Quit complaining.", "Quit it."])
def test_quit_as_an_order_is_nobodys(text):
    assert run(msg(text, speaker="Alice")) == []


@pytest.mark.parametrize(
    ("text", "statement", "day"),
    [
        ("In 2019, I moved to Oslo.", "Alice moved to Oslo in 2019.", date(2019, 1, 1)),
        ("Last Friday, I moved to Oslo.", "Alice moved to Oslo on 5 May 2023.", date(2023, 5, 5)),
        ("Back in 2015, I worked at IBM.", "Alice worked at IBM back in 2015.", date(2015, 1, 1)),
        ("Last year, my sister moved to Paris.", "Alice's sister moved to Paris in 2022.", date(2022, 1, 1)),
        ("In 2019 I moved to Oslo.", "Alice moved to Oslo in 2019.", date(2019, 1, 1)),
        # counted ahead: a time of a clause that looks ahead (were no Memory at all, or one undated)
        ("In two weeks I'm moving to Oslo.", "Alice is moving to Oslo in the week of 22 May 2023.", date(2023, 5, 22)),
        ("In two years, I'll move to Oslo.", "Alice will move to Oslo in 2025.", date(2025, 1, 1)),
    ],
)
def test_a_fronted_time_before_a_comma_dates_its_clause(text, statement, day):
    """Split at its comma, the time was a clause of its own: the move was dated when it was said, and
    "Back in 2015" became "Alice is back in 2015"."""
    a = one(msg(text, speaker="Alice"))
    assert (a.statement, a.valid_from.date(), a.time_stated) == (statement, day, True)


@pytest.mark.parametrize(
    ("text", "statement", "attribute"),
    [
        ("Finally I moved to Oslo.", "Alice moved to Oslo finally.", "lives_in"),
        ("Eventually, I quit my job at Acme.", "Alice quit Alice's job at Acme eventually.", "works_at"),
        ("Soon I'm moving to Oslo.", "Alice is moving to Oslo soon.", None),
        # a hedge stays with the statement (was the subject "apparently Bob", or nothing after a comma)
        ("Obviously I love sushi.", "Alice loves sushi obviously.", "likes"),
    ],
)
def test_a_fronted_adverb_of_time_goes_to_the_end(text, statement, attribute):
    # "Finally I moved to Oslo" derived nothing: no subject was found after the adverb
    a = one(msg(text, speaker="Alice"))
    assert (a.subject, a.statement, a.attribute) == ("Alice", statement, attribute)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Apparently Bob is moving to Denver.", "Bob is moving to Denver apparently."),
        ("Apparently, Bob is moving to Denver.", "Bob is moving to Denver apparently."),
        ("Turns out Bob is moving to Denver.", "Bob is moving to Denver."),
    ],
)
def test_a_hedge_or_turns_out_before_a_name_is_no_part_of_the_subject(text, statement):
    a = one(text)
    assert (a.subject, a.statement) == ("Bob", statement)


def test_the_us_is_no_us():
    assert [a.statement for a in run(msg("I moved to the US.", speaker="Alice"))] == ["Alice moved to the US."]


@pytest.mark.parametrize(
    ("text", "subject", "value"),
    [
        ("I stopped working at Google.", "Alice", "google"),
        ("I retired from IBM last year.", "Alice", "ibm"),
        ("I was laid off from Meta in March.", "Alice", "meta"),
        ("I got fired from Google.", "Alice", "google"),
        ("I resigned from Acme.", "Alice", "acme"),
        ("My dad retired from Ford in 2010.", "Alice's dad", "ford"),
    ],
)
def test_a_job_ended_is_the_employer_denied(text, subject, value):
    """ "I stopped working at Google" was a plain statement: the job there stayed current."""
    a = one(msg(text, speaker="Alice"))
    assert (a.subject, a.attribute, a.value, a.negated, a.change) == (subject, "works_at", value, True, True)


@pytest.mark.parametrize("text", ["I retired from teaching.", "I might get fired from Google."])
def test_no_employer_ended_without_one_or_when_it_may_be(text):
    assert all(a.attribute is None for a in run(msg(text, speaker="Alice")))


@pytest.mark.parametrize(
    ("text", "attribute", "value", "negated", "change"),
    [
        ("I moved out of Berlin.", "lives_in", "berlin", True, True),
        ("I'm moving out of Boston next month.", "lives_in", "boston", True, True),
        ("I moved away from Berlin to Munich.", "lives_in", "munich", False, True),
        ("I moved out of Berlin to Munich.", "lives_in", "munich", False, True),
        # the ending denied: the value holds, and nothing changed
        ("I never quit my job at Google.", "works_at", "google", False, False),
        ("I haven't moved out of Berlin yet.", "lives_in", "berlin", False, False),
        ("I didn't move out of Berlin.", "lives_in", "berlin", False, False),
        ("I no longer work at Google.", "works_at", "google", True, True),
    ],
)
def test_moving_out_ends_a_home_and_a_denied_ending_ends_nothing(text, attribute, value, negated, change):
    a = one(msg(text, speaker="Alice"))
    assert (a.attribute, a.value, a.negated, a.change) == (attribute, value, negated, change)


def test_leaving_closes_the_old_employer_when_the_text_says():
    """Through the memory rules: "works at Stripe" ends in April, not when Spotify began."""
    from brainstore.service.planner import MemoryRules, MemoryState

    class Loader:
        def __init__(self):
            self.current = {}

        def memories(self, memory_ids):
            return {m: self.current[m] for m in memory_ids if m in self.current}

        def by_fingerprints(self, fingerprints):
            return [m for m in self.current.values() if m.fingerprint in fingerprints]

        def by_attributes(self, keys):
            return [m for m in self.current.values() if (m.subject.casefold(), m.attribute) in keys]

        def citing(self, record_id):
            return []

        def referencing(self, memory_ids):
            return []

    loader, ids, seq = Loader(), iter(range(1, 100)), iter(range(1, 100))
    rules = MemoryRules(lambda: JUNE, lambda prefix: f"{prefix}_{next(ids):03d}")

    def say(record_id, text, when):
        state = MemoryState("brn_1", loader, lambda: next(seq))
        for a in run(msg(text, speaker="Alice"), when=when):
            rules.apply(state, record_id, text, a)
        for revision in state.plan.revisions:
            loader.current[revision.memory_id] = revision

    say("rec_1", "I work at Stripe.", datetime(2023, 1, 5, tzinfo=UTC))
    say("rec_2", "I left Stripe in April and joined Spotify.", JUNE)
    stripe = next(m for m in loader.current.values() if m.value == "stripe" and not m.negated)
    spotify = next(m for m in loader.current.values() if m.value == "spotify")
    assert stripe.valid_to == datetime(2024, 4, 1, tzinfo=UTC)
    assert spotify.valid_to is None


@pytest.mark.parametrize(
    "text",
    [
        "Stay tuned and check out those pictures!",
        "Don't worry about anything.",
        "Haven't been there yet.",
        "Rest assured.",
        "Fingers crossed a producer falls in love with it.",
        "Lots has been going on since then.",
        "Keep it up!",
        "Trust yourself.",
    ],
)
def test_no_owner_is_an_instruction_or_an_idiom(text):
    """A capitalised word opening a sentence is no person when it is a verb, a contraction or an idiom."""
    assert run(msg(text, speaker="Bob")) == []


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("Mentors can really help.", "mentors"),
        ("Dance floors help avoid injuries.", "dance floors"),
        ("Travel makes me happy.", "Bob"),
        ("Dance is my passion.", "Bob"),
        ("Sam visited me last week.", "Sam"),
    ],
)
def test_nouns_that_are_verbs_or_plurals_still_open_a_clause(text, subject):
    a = one(msg(text, speaker="Bob"))
    assert (a.subject, a.owner) == (subject, "Bob")


@given(st.sampled_from(["Don't", "Haven't", "Must've", "Couldn't", "We'll", "K", "I'd"]))
def test_contractions_and_letters_are_no_names(token):
    from brainstore.derive.attribution import is_name_token

    assert not is_name_token(token)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("They give me peace.", "They give Bob peace."),
        ("They've been there for me every step of the way.", "They have been there for Bob every step of the way."),
        ("These moments remind me of how important kindness is.", "These moments remind Bob of how important kindness is."),
        ("She showed me the importance of gratitude.", "She showed Bob the importance of gratitude."),
        ("She's been a great addition to my life.", "She has been a great addition to Bob's life."),
        ("He taught us a lot about loyalty.", "He taught Bob and others a lot about loyalty."),
        ("They give us peace.", "They give Bob and others peace."),
    ],
)
def test_unnamed_people_or_things_are_told_as_the_speakers_experience(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize(
    "text", ["They're awesome.", "They eat vegetables.", "These are great.", "Those were the days.", "He is so talented.", "It brings us together."]
)
def test_unnamed_they_without_the_speaker_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


@given(
    st.sampled_from(["Remember that", "Just remember that", "It's true,", "Remember,", "The truth is"]),
    st.sampled_from(
        [
            ("staying positive is very important", "staying positive is very important"),
            ("nature has a way of calming us", "nature has a way of calming Bob and others"),
        ]
    ),
)
def test_a_claim_handed_over_is_the_speakers_view(opener, clause):
    text, shown = clause
    a = one(msg(f"{opener} {text}.", speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (f"Bob thinks {shown}.", "Bob", "Bob")


@pytest.mark.parametrize(
    "text", ["Don't forget to take breaks.", "Remember your keys.", "Don't forget, believe in yourself.", "It's true."]
)
def test_a_reminder_to_do_something_is_advice(text):
    assert run(msg(text, speaker="Bob")) == []


def test_a_claim_handed_over_by_an_assistant_is_nobodys():
    assert run(msg("Remember that you live in Lisbon.", role="assistant")) == []


# ---- what "it" and "they" stand for, past habits, reminders, losses


def statements(text, speaker="Bob"):
    return [a.statement for a in run(msg(text, speaker=speaker))]


@given(
    st.sampled_from(['"The Name of the Wind"', "Barcelona", "That movie", "My new bike", "Pottery"]),
    st.sampled_from(["sounds awesome", "is great", "looks so cool", "seems amazing"]),
    st.sampled_from(
        [
            ("I'll add it to my list.", "Bob will add {} to Bob's list."),
            ("I can't picture life without it.", "Bob can't picture life without {}."),
            ("I've heard so many great things. Definitely adding it to my list.", "Bob is adding {} to Bob's list."),
        ]
    ),
)
def test_it_is_the_thing_just_described(thing, verb, follow):
    text, statement = follow
    shown = {"That movie": "that movie", "My new bike": "Bob's new bike", "Pottery": "pottery"}.get(thing, thing)
    assert statement.format(shown) in statements(f"{thing} {verb}! {text}")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("The Minnesota Wolves! I can't wait to play with them!", "Bob can't wait to play with the Minnesota Wolves."),
        ("Luna and Oliver! They really liven up the house!", "Bob says Luna and Oliver really liven up the house."),
        ("Guitar's mostly my thing. Playing it helps me get my emotions out.", "Playing Guitar helps Bob get Bob's emotions out."),
    ],
)
def test_a_named_thing_is_what_a_later_pronoun_stands_for(text, statement):
    assert statement in statements(text)


@pytest.mark.parametrize(
    ("context", "sentence", "unwanted"),
    [
        ("Sam gave me a book.", "I love it.", "Sam"),  # a person who did something is no topic
        ("Jon!", "I made it to the finals.", "Jon"),  # a name called out is no topic, "made it" no thing
        ("The trip was great.", "I'll give it my all next time.", "the trip"),
        ("The hike was great. I bought a tent. I cooked dinner.", "We loved it.", "the hike"),  # out of reach
        ("Pottery is fun.", "I'd like them.", "pottery"),  # "them" is never one thing
    ],
)
def test_a_pronoun_stands_for_nothing_it_cannot(context, sentence, unwanted):
    text = f"{context} {sentence}"
    for a in run(msg(text, speaker="Bob")):
        if a.span[0] >= len(context):
            assert unwanted.casefold() not in a.statement.casefold(), a


def test_plural_subject_with_an_adverb_before_its_verb():
    a = one(msg("Turtles really bring me joy and peace.", speaker="Nate"))
    assert (a.statement, a.owner) == ("Turtles really bring Nate joy and peace.", "Nate")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("When I was younger, I'd practice basketball outside for hours.", "Bob used to practice basketball outside for hours."),
        ("That pic reminds me of when I was a kid. I would spend hours at the library.", "Bob used to spend hours at the library."),
        ("Growing up, we would go camping every summer.", "Bob and others used to go camping every summer."),
    ],
)
def test_would_in_the_speakers_past_is_a_habit(text, statement):
    assert statements(text)[-1] == statement
    assert "Bob is growing up." not in statements(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'd practice basketball for hours.",  # no past in the text: a possibility
        "When I was a kid, I'd go if I could.",  # a condition
        "Back then I would love to travel.",  # a wish
    ],
)
def test_would_without_a_past_frame_is_no_habit(text):
    assert not any("used to" in s for s in statements(text))


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Reminds me how much I love performing.", "Bob loves performing."),
        ("It reminds me that I need a break.", "Bob needs a break."),
        ("Reminds me being kind matters!", "Bob thinks being kind matters."),
    ],
)
def test_what_a_speaker_is_reminded_of_is_theirs(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize("text", ["Reminds me you're awesome.", "Reminds me to call my mom."])
def test_a_reminder_about_the_other_person_or_to_do_something_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


@pytest.mark.parametrize("relative", ["grandma", "dad", "dog", "best friend"])
def test_a_loss_is_the_speakers_and_a_relatives_attributes_are_not(relative):
    lost = one(msg(f"Last week my {relative} passed away.", speaker="Maria"))
    assert (lost.subject, lost.owner) == (f"Maria's {relative}", "Maria")
    for text in (f"My {relative} lives in Paris.", f"My {relative} passed the bar exam."):
        a = one(msg(text, speaker="Maria"))
        assert a.owner == f"Maria's {relative}", a


def test_verbs_ending_in_eed_take_an_s():
    assert statements("I really need a break.") == ["Bob really needs a break."]
    assert statements("I first watched it around 3 years ago.", speaker="Bob")[0].startswith("Bob first watched")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("There were 7 people at the party.", "Bob says there were 7 people at the party."),
        ("There's been a real improvement in their confidence.", "Bob says there has been a real improvement in their confidence."),
        ("There's nothing like the energy in a stadium during a game.", "Bob says there is nothing like the energy in a stadium during a game."),
        ("There is a new bakery on my street.", "There is a new bakery on Bob's street."),
    ],
)
def test_there_is_what_the_speaker_reports(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize(
    "text", ["There you go!", "There's a lot going on.", "Yeah, there are so many.", "There are lots of things to do."]
)
def test_there_with_nothing_in_it_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


def test_there_in_a_document_or_from_an_assistant_is_nobodys():
    assert all(a.owner is None for a in run(msg("There is a new bakery on Main Street.", role="assistant")))
    assert all(a.owner is None for a in run({"kind": "document", "text": "There were 7 people at the party."}))


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("It seems like nature has a way of calming us down, huh?", "Bob thinks nature has a way of calming Bob and others down."),
        ("Looks like the new policy is working.", "Bob thinks the new policy is working."),
    ],
)
def test_it_seems_like_is_the_speakers_view(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize(
    "text",
    ["Sounds like a great plan, John!", "Seems like you had fun.", "Looks like a great book to read.", "Seems like forever since we caught up."],
)
def test_it_seems_like_without_a_clause_or_about_the_other_person_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


def test_for_me_and_a_participle_before_a_noun_open_a_clause():
    assert statements("For me I just get deep in thought.") == ["Bob just gets deep in thought."]
    a = one(msg("Our loved ones give us strength.", speaker="Bob"))
    assert (a.statement, a.owner) == ("Bob says Bob's loved ones give Bob and others strength.", "Bob")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("It's made a huge difference to me.", "It has made a huge difference to Bob."),
        ("It's helped me a lot with my anxiety.", "It has helped Bob a lot with Bob's anxiety."),
        ("It's made of wood from my farm.", "It is made of wood from Bob's farm."),
        ("It's inspired by my childhood.", "It is inspired by Bob's childhood."),
    ],
)
def test_its_before_a_participle_and_an_object_is_has(text, statement):
    assert statements(text) == [statement]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Let's keep spreading awareness and supporting causes like this.", "Bob wants to keep spreading awareness and supporting causes like this."),
        ("Carol, let's work together to fix the playground.", "Bob wants to work together to fix the playground."),
        ("Let's help those in need.", "Bob wants to help those in need."),
    ],
)
def test_a_proposal_is_the_speakers_intention(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize(
    "text", ["Let's move to Denver next year.", "We should move to Denver.", "Let's get a dog next month."]
)
def test_a_proposal_is_no_home_pet_or_job(text):
    # were a home and a pet from the time named, where "I want to move to Denver" gives none
    (a,) = run(msg(text, speaker="Bob"))
    assert (a.statement.split(" ")[1:3], a.attribute, a.value) == (["wants", "to"], None, None)


@pytest.mark.parametrize(
    "text", ["Let's do it!", "Let's keep it up!", "Let's catch up soon!", "Let's say it was fun.", "Let me know!"]
)
def test_a_proposal_with_nothing_in_it_or_a_sign_off_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


def test_a_double_hyphen_is_a_dash_between_clauses():
    assert statements("Exciting things are happening--I'm exploring endorsement deals.") == [
        "Bob is exploring endorsement deals."
    ]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Nothing was recoverable, but now I have an external drive for backups.", "Bob has an external drive for backups."),
        ("The show was cancelled, but luckily I found another venue.", "Bob found another venue."),
    ],
)
def test_a_sentence_adverb_before_a_new_subject_starts_a_clause(text, statement):
    assert statement in statements(text)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Some friends from church and I went camping.", "Bob and some friends from church went camping."),
        ("The kids and I went to the park.", "Bob and the kids went to the park."),
        ("Tom and I went to the park.", "Bob and Tom went to the park."),
    ],
)
def test_the_speaker_with_others_keeps_their_case(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("FYI, I finished another pottery project - want to see a pic?", "Bob finished another pottery project."),
        ("I'm trying to pick the right shoes - any advice on that?", "Bob is trying to pick the right shoes."),
    ],
)
def test_a_statement_before_a_trailing_question_stands(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize(
    "text", ["I went to Paris, didn't I?", "Carol, you moved to Oslo - how is it?", "Do you like my cat, or not?"]
)
def test_a_question_with_a_statement_of_nobodys_own_or_a_tag_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


def test_a_plural_subject_with_a_relative_clause_takes_a_plural_verb():
    a = one(msg("These figurines I bought remind me of family love.", speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == ("These figurines Bob bought remind Bob of family love.", "Bob", "Bob")



def test_a_sentence_ending_on_a_contraction_ends_there():
    assert statements("I went hiking, though my knees didn't. I love the mountains.") == [
        "Bob went hiking.",
        "Bob loves the mountains.",
    ]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Speaking of which, I just had a letdown in a tourney.", "Bob just had a letdown in a tourney."),
        ("Yep, I got this new pup for you!", "Bob got this new pup for the other person."),
        ("Yep Carol, I got this new pup for you!", "Bob got this new pup for Carol."),
    ],
)
def test_interjections_are_no_subjects_and_no_names(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Just yesterday I joined a nearby church.", "Bob joined a nearby church on 7 May 2023."),
        ("Only last month I moved to Oslo.", "Bob moved to Oslo in April 2023."),
    ],
)
def test_a_fronted_time_after_just_or_only(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize(
    ("text", "statement", "start"),
    [
        ("Yesterday morning I went to the gym.", "Bob went to the gym on 7 May 2023 in the morning.", 7),
        (
            "Yesterday at 3pm I signed the lease for the flat.",
            "Bob signed the lease for the flat on 7 May 2023 at 3pm.",
            7,
        ),
        ("Earlier this month I moved to Oslo.", "Bob moved to Oslo earlier in May 2023.", 1),
        ("Earlier today I joined Globex.", "Bob joined Globex earlier on 8 May 2023.", 8),
        ("On Friday afternoon I moved to Oslo.", "Bob moved to Oslo on 5 May 2023 in the afternoon.", 5),
        ("Tomorrow at noon I fly to Rome.", "Bob flies to Rome on 9 May 2023 at noon.", 9),
    ],
)
def test_a_fronted_time_narrowed_to_a_time_of_day(text, statement, start):
    # the subject was looked for right after the date ("morning", "at"): nothing was made
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner, a.subject, a.time_stated) == (statement, "Bob", "Bob", True)
    assert a.valid_from == datetime(2023, 5, start, tzinfo=UTC)


def test_a_name_after_a_fronted_time_of_day_is_the_subject():
    # "Yesterday morning Bob moved to Oslo" was "Alice says yesterday morning Bob moved to Oslo", no home
    a = one("Yesterday morning Bob moved to Oslo.")
    assert (a.subject, a.owner, a.attribute, a.value) == ("Bob", "Bob", "lives_in", "oslo")
    assert a.valid_from == datetime(2023, 5, 7, tzinfo=UTC)


def test_a_double_hyphen_before_a_space_is_a_dash():
    assert statements("I love that song-- I'm going to the concert.") == [
        "Bob loves that song.",
        "Bob is going to the concert.",
    ]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("My dream is to open a bakery.", "Bob's dream is to open a bakery."),
        ("My own journey made a huge difference to me.", "Bob's own journey made a huge difference to Bob."),
        ("My work is really stressful.", "Bob's work is really stressful."),
    ],
)
def test_a_verbs_form_after_my_is_a_noun(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I'd been wanting to try yoga for a while.", "Bob had been wanting to try yoga for a while."),
        ("I'd never seen the ocean before that trip.", "Bob had never seen the ocean before that trip."),
        ("I'd finished my degree by then.", "Bob had finished Bob's degree by then."),
    ],
)
def test_d_before_a_past_participle_is_had(text, statement):
    assert statements(text) == [statement]


def test_d_before_a_verb_is_still_would():
    assert run(msg("I'd need a new car.", speaker="Bob")) == []


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, Carol! I wish I lived in Paris.",
        "Wow! I bet the nerves are quite a rush.",
        "That's great. I hope it goes well.",
        "I moved to Oslo. If I lose my job, I'll move home.",
    ],
)
def test_a_wish_or_hypothetical_after_the_first_sentence_says_nothing_either(text):
    assert all("wish" not in s and "bet" not in s and "hope" not in s and "home" not in s for s in statements(text))


def test_a_hope_to_do_something_is_an_intention():
    assert statements("Thanks, Carol! I hope to build my own family.") == ["Bob hopes to build Bob's own family."]
    assert statements("I hope to build my own family.") == ["Bob hopes to build Bob's own family."]
    assert statements("I hope to see you soon!") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("We should fight for more money for schools.", "Bob wants to fight for more money for schools."),
        ("We should all join forces to fix the park.", "Bob wants to join forces to fix the park."),
    ],
)
def test_we_should_is_a_proposal(text, statement):
    assert statements(text) == [statement]


@pytest.mark.parametrize("text", ["We should have gone earlier.", "We should go together sometime!"])
def test_we_should_with_a_regret_or_no_time_says_nothing(text):
    assert statements(text) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Volunteering is a great way to meet people.", "Bob thinks volunteering is a great way to meet people."),
        ("Having good support is key.", "Bob thinks having good support is key."),
        ("Taking risks is scary.", "Bob thinks taking risks is scary."),
    ],
)
def test_an_activity_judged_is_the_speakers_view(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize("text", ["Being yourself is great!", "Books are awesome.", "The view is amazing."])
def test_a_bare_judgement_of_a_thing_or_of_being_says_nothing(text):
    assert run(msg(text, speaker="Bob")) == []


def test_since_we_last_spoke_is_when_not_what():
    assert statements("Since we last spoke, I took my kids to a park.") == ["Bob took Bob's kids to a park."]
    assert statements("Been a busy week since we talked.") == []


def test_a_long_gerund_phrase_is_the_subject_not_what_the_speaker_is_doing():
    assert statements("Making my spot comfortable and inviting for my customers is key.") == [
        "Making Bob's spot comfortable and inviting for Bob's customers is key."
    ]
    assert statements("Being around people who share the same love for basketball creates a special bond.") == [
        "Bob thinks being around people who share the same love for basketball creates a special bond."
    ]


def test_an_emoji_ends_a_sentence_and_is_no_word():
    assert statements("Inspiring \U0001f4aa I emailed some wholesalers today!", speaker="Bob")[0].startswith(
        "Bob emailed some wholesalers on"
    )
    assert statements("I love my new bike \U0001f6b2!") == ["Bob loves Bob's new bike."]
    assert statements("Inspiring!") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I wanna help make a difference.", "Bob wants to help make a difference."),
        ("I gotta fix my bike.", "Bob has to fix Bob's bike."),
        ("We gotta fix the park.", "Bob and others have to fix the park."),
    ],
)
def test_wanna_and_gotta_read_as_english(text, statement):
    assert statements(text) == [statement]


def test_a_noun_after_and_with_its_own_verb_starts_no_clause():
    assert statements("I saw how counseling and support groups improved my life.") == [
        "Bob saw how counseling and support groups improved Bob's life."
    ]
    assert statements("I love hiking and walk every day.") == ["Bob loves hiking.", "Bob walks every day."]


def test_gotta_after_have_and_i_gotta_say():
    assert statements("We've gotta fix the park.") == ["Bob and others have got to fix the park."]
    assert statements("I gotta say, I really like this café.") == ["Bob really likes this café."]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Here's a picture of my family at the beach.", "Bob shared a picture of Bob's family at the beach."),
        ("Here are some pictures from our trip to Rome.", "Bob shared some pictures from Bob's trip to Rome."),
    ],
)
def test_a_picture_is_shown_like_a_pic(text, statement):
    assert statements(text) == [statement]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Tough tournament, didn't make it to the finals.", "Bob didn't make it to the finals."),
        ("Wasn't expecting the rain, didn't bring an umbrella.", "Bob didn't bring an umbrella."),
    ],
)
def test_a_negated_clause_with_the_i_dropped_is_the_speakers(text, statement):
    a = run(msg(text, speaker="Bob"))[-1]
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize("text", ["It rained, didn't it?", "Don't worry!", "Haven't been there yet."])
def test_a_negated_tag_or_instruction_says_nothing(text):
    assert statements(text) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Here's a shot I got when I volunteered.", "Bob shared a shot Bob got when Bob volunteered."),
        ("Here's a photo that I took at the lake.", "Bob shared a photo that Bob took at the lake."),
    ],
)
def test_a_picture_the_speaker_took_is_shown(text, statement):
    assert statements(text) == [statement]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Sometimes it's good to step outside our comfort zones.", "Bob thinks it is good to step outside Bob's comfort zones sometimes."),
        ("Usually I go running in the morning.", "Bob goes running in the morning usually."),
    ],
)
def test_a_clause_after_how_often_keeps_how_often(text, statement):
    assert statements(text) == [statement]


def test_the_speakers_people_being_there_for_them_is_a_statement():
    a = one(msg("My family is always there for me.", speaker="Bob"))
    assert (a.statement, a.owner) == ("Bob's family is always there for Bob.", "Bob")
    assert statements("My sister told me.") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("It's been a dream to adopt and give kids a loving home.", "Bob's dream has been to adopt and give kids a loving home."),
        ("It was a goal of mine to run a marathon.", "Bob's goal was to run a marathon."),
        ("It's always been a big part of my life.", "It has always been a big part of Bob's life."),
    ],
)
def test_what_the_speaker_aims_at(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize("text", ["It's a dream to drive this car.", "It's a plan to fail."])
def test_a_dream_to_do_that_is_a_delight_is_no_aim(text):
    assert statements(text) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("But having a furry pal definitely brightens my days.", "Having a furry pal definitely brightens Bob's days."),
        ("Thinking about the possibilities pumps me up.", "Thinking about the possibilities pumps Bob up."),
    ],
)
def test_an_activity_that_does_something_to_the_speaker_is_the_subject(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")


@pytest.mark.parametrize(
    "text", ["It was inspired by my own journey of self-discovery and my own journey of growth.", "I was drafted - my dream come true!"]
)
def test_my_and_a_noun_with_no_verb_after_is_no_clause(text):
    assert all("journey of growth" not in s and "come true" not in s for s in statements(text))


def test_a_gerund_topic_is_lower_case():
    assert statements("Baking bread sounds fun. I want to try it next week.")[-1].startswith("Bob wants to try baking bread")


def test_a_verb_that_goes_on_its_subject_is_no_sign_off():
    assert statements("We get creative and have a blast together.") == [
        "Bob and others get creative.",
        "Bob and others have a blast together.",
    ]
    assert statements("Thanks so much and have a great day!") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Thanks Sam! I'm so proud of you guys.", "Bob is so proud of Sam and others."),
        ("Sam, I met you both at the park.", "Bob met Sam and others at the park."),
        ("Sam, feeling supported by all of you means so much to me.", "Feeling supported by Sam and others means so much to Bob."),
        ("I'm glad you two came to the party, Sam.", "Bob is glad Sam and others came to the party."),
        ("Sam, I'll tell you all about it.", "Bob will tell Sam all about it."),
    ],
)
def test_the_second_person_plural_is_the_person_spoken_to_and_others(text, statement):
    assert statement in statements(text)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Thanks Sam, your support really means a lot.", "Sam's support really means a lot to Bob."),
        ("Your encouragement really motivates me to keep going.", "The other person's encouragement really motivates Bob to keep going."),
        ("Your support and friendship mean everything.", "The other person's support and friendship mean everything to Bob."),
    ],
)
def test_what_the_person_spoken_to_gives_the_speaker_is_the_speakers(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize("text", ["Your dog is so cute!", "Your sister told me.", "Sam, your words are really encouraging."])
def test_the_addressees_belongings_alone_say_nothing(text):
    assert statements(text) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Pottery means a lot to me.", "Pottery means a lot to Bob."),
        ("My family has always meant the world to me.", "Bob's family has always meant the world to Bob."),
    ],
)
def test_what_something_is_worth_to_the_speaker_is_a_statement(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")
    assert statements("That means a lot.") == statements("It means a lot to hear that.") == []


def test_a_sign_off_is_no_name_spoken_to():
    assert statements("I'm so proud of you! Bye!") == ["Bob is so proud of the other person."]


def test_a_guess_at_what_did_happen_is_said_as_a_guess():
    a = one(msg("I may have found a job at a tech company that needs my skills.", speaker="Bob"))
    assert (a.statement, a.owner) == ("Bob may have found a job at a tech company that needs Bob's skills.", "Bob")
    assert statements("I must have left my keys at the office.") == ["Bob must have left Bob's keys at the office."]
    # what did not happen, and a guess at how the person spoken to felt, stay nothing
    assert statements("I could have gone to the party.") == statements("I should have called my mom.") == []
    assert statements("You must have been so proud.") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Yeah, Sam, thanks for having my back.", "Bob is grateful to Sam for having Bob's back."),
        ("Thanks for being there for me and believing in me.", "Bob is grateful to the other person for being there for Bob and believing in Bob."),
        ("Thanks so much for offering to help, Sam!", "Bob is grateful to Sam for offering to help."),
    ],
)
def test_thanks_for_something_done_is_the_speakers_gratitude(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.subject, a.owner) == (statement, "Bob", "Bob")


@pytest.mark.parametrize("text", ["Thanks for asking!", "Thanks for letting me know, Sam.", "Thanks for the recommendation!"])
def test_thanks_for_nothing_done_says_nothing(text):
    assert statements(text) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I finished it and started a new painting.", "Bob started a new painting."),
        ("We're all still sad about it, but have been comforted by the good times.", "Bob and others have been comforted by the good times."),
    ],
)
def test_an_object_pronoun_is_no_subject_of_the_next_verb(text, statement):
    assert statement in statements(text)
    # a pronoun before a verb is one: the verb after "and" is not the speaker's
    assert statements("I think it looks great and keeps me going.") == ["Bob thinks it looks great."]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Thanks, Sam! Glad my journey is inspiring others.", "Bob is glad Bob's journey is inspiring others."),
        ("So glad I finally finished my novel.", "Bob is glad Bob finally finished Bob's novel."),
        ("Need help with marketing strategies.", "Bob needs help with marketing strategies."),
    ],
)
def test_glad_and_need_with_the_i_dropped_are_the_speakers(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")
    assert statements("Glad to hear it!") == statements("Need it?") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Glad to hear my support makes a difference, Sam.", "Bob is glad to hear Bob's support makes a difference."),
        ("Glad to hear you enjoyed it!", "Bob is glad to hear the other person enjoyed it."),
        ("Glad to hear that you're doing well.", "Bob is glad to hear that the other person is doing well."),
    ],
)
def test_glad_to_hear_a_clause_is_no_sign_off(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")
    assert statements("Glad to hear it!") == statements("Glad to hear from you.") == statements("Glad to hear that.") == []


def test_a_contracted_i_inside_a_subject_takes_the_verb_of_the_name():
    assert statements("Finding a community where I'm accepted has really meant a lot to me.") == [
        "Finding a community where Bob is accepted has really meant a lot to Bob."
    ]


@pytest.mark.parametrize("comma", [",", ""])
def test_a_list_closed_by_and_is_one_phrase(comma):
    text = f"Finding a community where I'm accepted, loved{comma} and supported has really meant a lot to me."
    assert statements(text) == [
        f"Finding a community where Bob is accepted, loved{comma} and supported has really meant a lot to Bob."
    ]
    assert statements("I cooked, cleaned and went home.") == ["Bob cooked, cleaned.", "Bob went home."]


def test_a_relative_clause_after_there_were_is_no_vague_head():
    assert statements("There were 7 people that attended.") == ["Bob says there were 7 people that attended."]
    assert statements("There is something that bugs me.") == []


def test_an_s_before_a_gerund_is_is_unless_a_verb_follows():
    assert statements("The dog's barking at night.") == ["Bob says the dog is barking at night."]
    assert statements("The store's opening hours are long.") == ["Bob says the store's opening hours are long."]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Of course! I'll always be there for you, Sam.", "Bob will always be there for Sam."),
        ("I'm here for you, Sam!", "Bob is here for Sam."),
        ("We're here for you, Sam.", "Bob and others are here for Sam."),
    ],
)
def test_the_speaker_being_there_for_someone_is_support(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")
    assert statements("I'm there.") == statements("I'm here.") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Finding self-acceptance was a long process.", "Bob says finding self-acceptance was a long process."),
        ("Connecting with like-minded people is key.", "Bob thinks connecting with like-minded people is key."),
    ],
)
def test_a_hyphen_inside_a_word_ends_no_subject_phrase(text, statement):
    assert statements(text) == [statement]
    # a spaced dash still ends the phrase
    assert not any("minded people is key" in s for s in statements("Connecting with like - minded people is key."))


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Their love gives me strength.", "Their love gives Bob strength."),
        ("Her stories have been with me and still inspire me.", "Her stories have been with Bob and still inspire Bob."),
    ],
)
def test_what_someone_unnamed_gives_the_speaker_is_the_speakers_experience(text, statement):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == (statement, "Bob")
    # about them alone, or about the person spoken to, it is no one's we can place
    assert statements("Her name is Shadow.") == statements("Their support boosts your motivation.") == []


def test_sure_between_a_plural_subject_and_its_verb_is_an_adverb():
    a = one(msg("These little guys sure bring joy to my life!", speaker="Bob"))
    assert (a.statement, a.owner) == ("These little guys sure bring joy to Bob's life.", "Bob")
    assert statements("Kids sure love pizza.") == ["Bob says kids sure love pizza."]


@pytest.mark.parametrize(
    "text",
    [
        "Sam, after finishing my screenplay I got a rejection letter.",
        "After finishing my screenplay, I got a rejection letter.",
    ],
)
def test_a_fronted_activity_time_goes_with_its_clause(text):
    a = one(msg(text, speaker="Bob"))
    assert (a.statement, a.owner) == ("Bob got a rejection letter after finishing Bob's screenplay.", "Bob")
    # a fronted phrase with no first-person subject after it is left alone
    assert statements("After finishing it, Sam got a rejection letter.") == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        (
            "I've learned that having confidence in yourself is important.",
            "Bob has learned that having confidence in oneself is important.",
        ),
        ("Taking care of yourself helps me stay strong.", "Taking care of oneself helps Bob stay strong."),
    ],
)
def test_yourself_in_a_clause_that_names_no_one_spoken_to_is_anyones(text, statement):
    assert statements(text) == [statement]
    # said of the person spoken to, it is them; an order to enjoy oneself is nobody's fact
    assert statements("Art is helping you express yourself, Sam.") == ["Bob says art is helping Sam express Sam."]
    assert statements("Enjoy yourself!") == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Thanks! Don't quit, Sam!", ["Bob encourages Sam not to quit."]),
        (
            "Cool! Stay motivated and keep chasing those dreams!",
            [
                "Bob encourages the other person to stay motivated.",
                "Bob encourages the other person to keep chasing those dreams.",
            ],
        ),
        ("Don't let anything stop you, Sam.", ["Bob encourages Sam not to let anything stop Sam."]),
        ("Keep pushing for your goals and you'll get there!", ["Bob encourages the other person to keep pushing for the other person's goals."]),
        ("Never give up on your dreams!", ["Bob encourages the other person to never give up on the other person's dreams."]),
    ],
)
def test_urging_the_person_spoken_to_on_is_the_speakers_encouragement(text, said):
    out = run(msg(text, speaker="Bob"))
    assert [(a.statement, a.subject, a.owner) for a in out] == [(s, "Bob", "Bob") for s in said]


@pytest.mark.parametrize(
    "text", ["Keep it up!", "Keep going!", "Don't forget to call your mom.", "Check it out!", "Keep in mind it's late."]
)
def test_an_order_that_urges_nothing_on_says_nothing(text):
    assert statements(text) == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Believe in yourself, Sam!", "Bob encourages Sam to believe in themselves."),
        ("Stay true to yourself!", "Bob encourages the other person to stay true to themselves."),
        ("Keep believing in yourselves!", "Bob encourages the other person to keep believing in themselves."),
    ],
)
def test_yourself_in_an_urging_is_the_person_urged(text, said):
    # told of them, the person urged is no longer "you" ("in Sam" would read as someone else); elsewhere
    # "yourself" keeps its rules
    assert statements(text) == [said]
    assert statements("Having confidence in yourself is important.") == [
        "Bob thinks having confidence in oneself is important."
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Keep at it, buddy!", "Bob encourages the other person to keep at it."),
        ("Keep chasing your dreams, pal.", "Bob encourages the other person to keep chasing the other person's dreams."),
        ("Stay strong, my friend.", "Bob encourages the other person to stay strong."),
        ("Don't let anything stop you, bro.", "Bob encourages the other person not to let anything stop the other person."),
    ],
)
def test_a_word_for_the_person_urged_closing_the_urging_is_left_out(text, said):
    assert statements(text) == [said]
    # with no comma before it, the word is what the urging is about
    assert statements("Keep talking to your friend.") == [
        "Bob encourages the other person to keep talking to the other person's friend."
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Keep going after your dreams, Sam!", ["Bob encourages Sam to keep going after Sam's dreams."]),
        (
            "Thanks! Keep going for your dreams and don't quit!",
            [
                "Bob encourages the other person to keep going for the other person's dreams.",
                "Bob encourages the other person not to quit.",
            ],
        ),
        (
            "Keep chasing your dreams and never give up.",
            [
                "Bob encourages the other person to keep chasing the other person's dreams.",
                "Bob encourages the other person to never give up.",
            ],
        ),
    ],
)
def test_keep_going_for_something_is_an_urging_and_a_second_urging_after_and_is_its_own(text, said):
    # "Keep going!" alone still urges nothing on; "and don't forget to ..." is a reminder, left out
    assert statements(text) == said
    assert statements("Keep going!") == []
    assert statements("Keep chasing your dreams and don't forget to call.") == [
        "Bob encourages the other person to keep chasing the other person's dreams."
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("I got new ideas and plans for the project.", ["Bob got new ideas and plans for the project."]),
        ("We made friends and plans for the summer.", ["Bob and others made friends and plans for the summer."]),
    ],
)
def test_a_third_person_s_form_after_and_cannot_share_a_first_person_subject(text, said):
    # "plans" after "I ... and" is a noun joined to the object, not a verb to inflect ("Bob planses")
    assert statements(text) == said
    # with a subject it agrees with, the same form stays a second verb
    assert statements("I think it looks great and keeps me going.") == ["Bob thinks it looks great."]


def test_a_word_before_a_vocative_name_is_no_person_spoken_to():
    # "Bummer, Sam." is an interjection, then the name: Sam is the one spoken to, not "Bummer"
    assert statements("Bummer, Sam. You worked so hard on that project.") == [
        "Bob thinks Sam worked so hard on that project."
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Congrats on finishing your degree, Sam!", ["Bob congratulates Sam on finishing Sam's degree."]),
        ("Wow, Sam! Congrats on the promotion!", ["Bob congratulates Sam on the promotion."]),
        ("Congratulations on your new baby!", ["Bob congratulates the other person on the other person's new baby."]),
        ("Congrats on winning, you deserve it.", ["Bob congratulates the other person on winning."]),
    ],
)
def test_congratulating_the_person_spoken_to_on_something_is_the_speakers_act(text, said):
    out = run(msg(text, speaker="Bob"))
    assert [(a.statement, a.subject, a.owner) for a in out] == [(s, "Bob", "Bob") for s in said]
    # with nothing said of what, it stays an interjection
    assert statements("Congrats, Sam!") == []


@pytest.mark.parametrize(
    ("text", "attribute"),
    [
        # a plan with no time: a plain statement (were lives_in/works_at, ending the value held now)
        ("I'm moving to Oslo soon.", None),
        ("I'm moving to Oslo.", None),
        ("I'll move to Oslo.", None),
        ("I'm quitting my job at Acme.", None),
        ("I'm going to quit my job at Acme.", None),
        # a plan with a time is the change at that time; a state now is no plan
        ("I'm moving to Berlin in two weeks.", "lives_in"),
        ("I'm moving to Oslo today.", "lives_in"),
        ("I'm living in Oslo now.", "lives_in"),
        ("I moved to Oslo.", "lives_in"),
    ],
)
def test_a_plan_with_no_time_is_kept_as_said(text, attribute):
    (a,) = run(text)
    assert a.attribute == attribute
    assert a.statement.startswith("Alice")


@pytest.mark.parametrize(
    ("text", "subject", "value"),
    [
        ("My birthday is next Tuesday.", "Alice", "may 9"),
        ("My birthday was yesterday.", "Alice", "may 7"),
        ("My birthday is tomorrow.", "Alice", "may 9"),
        ("My birthday is on June 3rd.", "Alice", "june 3"),
        ("I was born on June 3rd, 1990.", "Alice", "june 3"),
        ("Bob's birthday is next Friday.", "Bob", "may 12"),
        ("My birthday is in June.", "Alice", "june"),
    ],
)
def test_a_birthday_is_the_day_it_falls_on_known_from_when_it_is_told(text, subject, value):
    # were the values "next tuesday", "yesterday", "on june 3rd", "in june": a week later "next tuesday"
    # named another day, and "June 3" told again conflicted with "on june 3rd"; "next Tuesday" held only
    # from that Tuesday (unknown until then), "yesterday" ended the birthday the day after
    (a,) = run(text)
    assert (a.subject, a.attribute, a.value, a.valid_to) == (subject, "birthday", value, None)
    assert a.valid_from <= NOW


@pytest.mark.parametrize(
    ("text", "statement", "valid_from"),
    [
        # a present "be" or "have" with a date without a year: its next occurrence (were all in 2022)
        ("My last day at Acme is May 31.", "Alice's last day at Acme is on 31 May 2023.", (2023, 5, 31)),
        ("The deadline is May 15.", "Alice says the deadline is on 15 May 2023.", (2023, 5, 15)),
        ("Carol's wedding is on June 10.", "Carol's wedding is on 10 June 2023.", (2023, 6, 10)),
        ("Carol's baby is due on August 12.", "Carol's baby is due on 12 August 2023.", (2023, 8, 12)),
        ("My wife is pregnant, due in October.", "Alice's wife is pregnant, due in October 2023.", (2023, 10, 1)),
        ("I have a dentist appointment on June 3.", "Alice has a dentist appointment on 3 June 2023.", (2023, 6, 3)),
        # a past tense still looks back
        ("My last day at Acme was May 31.", "Alice's last day at Acme was on 31 May 2022.", (2022, 5, 31)),
        # a birthday is a day of every year: no year added, and no time of the statement
        ("Bob's birthday is on May 20.", "Bob's birthday is on May 20.", None),
        ("My birthday is on June 3rd.", "Alice's birthday is on June 3rd.", None),
    ],
)
def test_a_present_date_without_a_year_is_the_next_and_a_birthday_none(text, statement, valid_from):
    (a,) = run(text)
    assert a.statement == statement
    if valid_from is None:
        assert (a.valid_from, a.time_stated) == (NOW, False)
    else:
        assert (a.valid_from, a.time_stated) == (datetime(*valid_from, tzinfo=UTC), True)


@pytest.mark.parametrize(
    ("text", "statement", "valid_from", "valid_to"),
    [
        # was "Alice lived in Rome since May 2023 to in July 2022.", from May 2023 without an end
        ("I lived in Rome from May to July.", "Alice lived in Rome from May 2022 to July 2022.", (2022, 5, 1), (2022, 8, 1)),
        # was "Alice will be in Tokyo since 1 May 2023 to on 12 May 2023.", from 1 May without an end
        ("I'll be in Tokyo from Monday to Friday.", "Alice will be in Tokyo from 15 May 2023 to 19 May 2023.", (2023, 5, 15), (2023, 5, 20)),
        ("I was in Tokyo from Monday to Friday.", "Alice was in Tokyo from 1 May 2023 to 5 May 2023.", (2023, 5, 1), (2023, 5, 6)),
        # was "... for three days since 4 May 2023.", from 4 May to 11 May
        ("I'll be in Berlin for three days starting Thursday.", "Alice will be in Berlin for three days starting 11 May 2023.", (2023, 5, 11), (2023, 5, 14)),
        # was "Alice moved to Berlin at the end of in 2022.", from 1 January 2022
        ("I moved to Berlin at the end of last year.", "Alice moved to Berlin at the end of 2022.", (2022, 12, 1), None),
    ],
)
def test_a_yearless_range_and_the_end_of_a_period_are_read_whole(text, statement, valid_from, valid_to):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.valid_from, a.valid_to) == (
        statement,
        datetime(*valid_from, tzinfo=UTC),
        valid_to and datetime(*valid_to, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("text", "statement", "valid_from"),
    [
        # were the values "denver over christmas", "denver half", "denver later", "denver the summer" (its
        # time lost), and "in a fortnight" no time at all (nor a home: "Alice is moving to Denver in a fortnight.")
        ("I moved to Denver over Christmas.", "Alice moved to Denver over Christmas 2022.", (2022, 12, 25)),
        # (was "... over Thanksgiving." at the time it was said: a movable feast was no date)
        ("I moved to Denver over Thanksgiving.", "Alice moved to Denver over Thanksgiving 2022.", (2022, 11, 24)),
        ("I moved to Denver half a year ago.", "Alice moved to Denver in November 2022.", (2022, 11, 1)),
        # was from 1 January 2023: a time to come started before it was said
        ("I'm moving to Denver later this year.", "Alice is moving to Denver later in 2023.", None),
        ("I moved to Denver the summer before last.", "Alice moved to Denver in the summer of 2021.", (2021, 6, 1)),
        ("I'm moving to Denver in a fortnight.", "Alice is moving to Denver in the week of 22 May 2023.", (2023, 5, 22)),
        ("I moved to Denver a fortnight ago.", "Alice moved to Denver in the week of 24 April 2023.", (2023, 4, 24)),
        # was "... this on the weekend of 20 May 2023.": said on a Monday, the weekend to come is the 13th
        ("I'm moving to Denver this coming weekend.", "Alice is moving to Denver on the weekend of 13 May 2023.", (2023, 5, 13)),
    ],
)
def test_a_time_after_a_place_is_no_part_of_it(text, statement, valid_from):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.attribute, a.value) == (statement, "lives_in", "denver")
    assert a.valid_from == (datetime(*valid_from, tzinfo=UTC) if valid_from else NOW)


@pytest.mark.parametrize(
    ("text", "statement", "valid_from", "valid_to"),
    [
        # was nothing at all: "Since mid" read as the clause's subject (and then from 1 January 2020: the
        # whole year, where "mid" is its middle months, "late" its last, "early" its first)
        ("Since mid-2020 I have lived in Denver.", "Alice has lived in Denver since mid-2020.", (2020, 5, 1), None),
        ("In late 2021 I moved to Denver.", "Alice moved to Denver in late 2021.", (2021, 9, 1), None),
        # was from the Record's time: the start not read
        ("I've lived in Denver since mid-2020.", "Alice has lived in Denver since mid-2020.", (2020, 5, 1), None),
        ("I lived in Denver until late 2019.", "Alice lived in Denver until late 2019.", None, (2020, 1, 1)),
        ("I lived in Denver in early 2019.", "Alice lived in Denver in early 2019.", (2019, 1, 1), (2019, 5, 1)),
        ("I lived in Denver in late 2019.", "Alice lived in Denver in late 2019.", (2019, 9, 1), (2020, 1, 1)),
    ],
)
def test_early_mid_or_late_in_a_year_is_that_part_of_the_year(text, statement, valid_from, valid_to):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.attribute, a.value) == (statement, "lives_in", "denver")
    assert valid_from is None or a.valid_from == datetime(*valid_from, tzinfo=UTC)
    assert a.valid_to == (valid_to and datetime(*valid_to, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "statement", "valid_from"),
    [
        # was "Alice moved to Denver in the first week of in April 2023."
        ("I moved to Denver in the first week of April.", "Alice moved to Denver in the first week of April 2023.", (2023, 4, 1)),
        # was the home "denver the"
        ("I moved to Denver the last week of March.", "Alice moved to Denver the last week of March 2023.", (2023, 3, 1)),
        ("I moved to Denver in the last week of 2021.", "Alice moved to Denver in the last week of 2021.", (2021, 12, 1)),
    ],
)
def test_the_first_or_last_week_of_a_period_is_read_whole(text, statement, valid_from):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.value, a.valid_from) == (statement, "denver", datetime(*valid_from, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "statement", "valid_from"),
    [
        ("I'm moving to Berlin in two weeks.", "Alice is moving to Berlin in the week of 22 May 2023.", (2023, 5, 22)),
        ("I'm moving to Berlin in a month.", "Alice is moving to Berlin in June 2023.", (2023, 6, 1)),
        ("I finished the project in two weeks.", "Alice finished the project in two weeks.", (2023, 5, 8, 13, 56)),
    ],
)
def test_a_count_ahead_of_what_is_ahead_is_its_time_and_of_the_past_how_long(text, statement, valid_from):
    # "in two weeks" was no time: the move was dated at the Record's, 8 May
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.valid_from) == (statement, datetime(*valid_from, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I met Carol. She's been working at Acme since 2019.", "Carol has been working at Acme since 2019."),
        ("I met Carol. She's never been to Rome.", "Carol has never been to Rome."),
        ("I met Carol. She's got two kids.", "Carol has got two kids."),
        ("I met Carol. She's worried about it.", "Carol is worried about it."),
        ("I met Carol. She's getting married.", "Carol is getting married."),
    ],
)
def test_s_before_been_or_got_is_has(text, statement):
    # "She's been working at Acme" read "Carol is been working at Acme"
    assert run(text)[-1].statement == statement


@pytest.mark.parametrize(
    ("content", "statement", "subject"),
    [
        ("Bob and Carol are getting divorced.", "Alice says Bob and Carol are getting divorced.", "Bob and Carol"),
        # (an adverb after a name keeps the name the verb's subject, as "Bob smokes." is Bob's)
        (msg("Bob never smokes.", speaker="Dan"), "Bob never smokes.", "Bob"),
        ("I met Bob. Bob really is a smoker.", "Bob really is a smoker.", "Bob"),
        (msg("Music never helps.", speaker="Dan"), "Dan says music never helps.", "music"),
        (msg("Mentors really can help.", speaker="Dan"), "Dan says mentors really can help.", "mentors"),
        (msg("MMOs really are a time sink.", speaker="Dan"), "Dan says MMOs really are a time sink.", "MMOs"),
        (
            msg("Don't forget Carol's birthday on Saturday!", speaker="Bob"),
            "Bob encourages the other person not to forget Carol's birthday on 13 May 2023.",
            "Bob",
        ),
    ],
)
def test_names_in_a_statement_keep_their_capital(content, statement, subject):
    # "bob and Carol are getting divorced", "Dan says bob never smokes", "not to forget carol's birthday"
    a = run(content)[-1]
    assert (a.statement, a.subject) == (statement, subject)


@pytest.mark.parametrize(
    ("text", "subject", "job", "employer"),
    [
        ("I'm a software engineer at Google.", "Alice", "software engineer", "google"),
        ("I work as a nurse at Mercy Hospital.", "Alice", "nurse", "mercy hospital"),
        ("Bob is a lawyer at Skadden.", "Bob", "lawyer", "skadden"),
        ("I'm a senior product manager at Microsoft in Seattle.", "Alice", "senior product manager", "microsoft"),
        ("I'm a writer for The New Yorker.", "Alice", "writer", "new yorker"),
    ],
)
def test_a_job_at_a_named_place_is_also_the_employer(text, subject, job, employer):
    # the employer was lost ("one attribute per clause"): a schema's `employer` and the profile went without
    held, works = run(text)
    assert (held.subject, held.attribute, held.value) == (subject, "job", job)
    assert (works.subject, works.attribute, works.value) == (subject, "works_at", employer)
    assert works.statement == held.statement and works.valid_from == held.valid_from and works.span == held.span


def test_a_job_held_in_the_past_at_a_place_ended_there_too():
    held, works = run("I used to be a teacher at Lincoln High.")
    assert (works.attribute, works.value, works.valid_to) == ("works_at", "lincoln high", held.valid_to)
    assert held.valid_to is not None


@pytest.mark.parametrize(
    "text",
    ["I'm a student at NYU.", "I'm a volunteer at the Red Cross.", "I'm a nurse at night.", "I'm a teacher at heart.",
     "I'm a nurse at the hospital.", "I'm not a lawyer at Skadden.", "I'm a nurse with two kids."],
)  # fmt: skip
def test_a_job_is_no_employer_where_no_employer_is_named(text):
    assert all(a.attribute != "works_at" for a in run(text))


@pytest.mark.parametrize("bullet", ["\u2022", "\u00b7", "\u2192", "\u25aa", "\u25cf", "\u2023"])
def test_a_list_bullet_or_arrow_opens_no_clause(bullet):
    # "• Bob lives in Denver." derived nothing ("-" and "*" did)
    a = one(f"{bullet} Bob lives in Denver.")
    assert (a.subject, a.attribute, a.value, a.statement) == ("Bob", "lives_in", "denver", "Bob lives in Denver.")
    notes = run(f"Notes:\n{bullet} Bob lives in Denver\n{bullet} Carol works at Stripe")
    assert [(a.subject, a.value) for a in notes] == [("Bob", "denver"), ("Carol", "stripe")]


@pytest.mark.parametrize(
    "text",
    ["@Bob I live in Denver.", "@bob: I live in Denver.", "@bob.smith @carol I live in Denver.", "I live in Denver @bob",
     "I live in Denver @bob @carol."],
)  # fmt: skip
def test_a_chat_mention_is_whom_the_words_are_for(text):
    # "@Bob I live in Denver." derived nothing; "... Denver @bob" had the home "denver @bob"
    a = one(text)
    assert (a.subject, a.attribute, a.value, a.statement) == ("Alice", "lives_in", "denver", "Alice lives in Denver.")


@pytest.mark.parametrize(
    "text",
    ["I'll work at Stripe.", "I'll live in Denver.", "I'll get a dog.", "When I move to Denver I'll get a dog.",
     "I'm going to adopt a cat.", "I'm getting a puppy!", "I'll have a dog soon."],
)  # fmt: skip
def test_what_will_be_with_no_time_is_no_value_held(text):
    # each was a value held from the day it was said: a home, an employer, a pet to come
    a = one(text)
    assert (a.subject, a.attribute, a.value) == ("Alice", None, None)


def test_what_will_be_at_a_time_holds_from_then_and_a_taste_is_now():
    assert (one("I'll work at Stripe from June.").attribute, one("I'm getting a puppy next week.").attribute) == ("works_at", "has_pet")
    assert one("I'm getting a puppy next week.").valid_from > NOW
    assert one("I'll always love sushi.").attribute == "likes"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I'm 29, turning 30 in June.", [("Alice", "29", NOW), ("Alice", "30", datetime(2023, 6, 1, tzinfo=UTC))]),
        ("I'm 29 and turning 30 in June.", [("Alice", "29", NOW), ("Alice", "30", datetime(2023, 6, 1, tzinfo=UTC))]),
        ("Bob is 40, turning 41 on Friday.", [("Bob", "40", NOW), ("Bob", "41", datetime(2023, 5, 12, tzinfo=UTC))]),
    ],
)
def test_an_age_and_the_age_to_come_at_a_time_are_two_ages(text, found):
    # was one statement with no age, "Alice is 29, turning 30 in June 2023.", from June
    out = run(text)
    assert [(a.subject, a.attribute, a.value, a.valid_from) for a in out] == [(s, "age", v, t) for s, v, t in found]
    assert out[1].statement.startswith(f"{found[0][0]} is turning")


@pytest.mark.parametrize(
    ("text", "age", "since"),
    [
        # were age 30 from the day it was said (the speaker is 29 then)
        ("I'm turning 30 soon.", None, None),
        ("I'm turning 30.", None, None),
        ("I turn 30 on Friday.", "30", datetime(2023, 5, 12, tzinfo=UTC)),
        # was June 2022: a birthday to come, in the simple present, is the coming June
        ("I turn 30 in June.", "30", datetime(2023, 6, 1, tzinfo=UTC)),
        ("I'm turning 30 next month.", "30", datetime(2023, 6, 1, tzinfo=UTC)),
        ("I just turned 30!", "30", NOW),
    ],
)
def test_an_age_turned_is_held_an_age_to_turn_only_from_its_time(text, age, since):
    (a,) = run(text)
    assert (a.attribute, a.value, a.valid_from) == (("age", age, since) if age else (None, None, a.valid_from))


def test_an_age_to_come_with_no_time_holds_from_no_time():
    # "soon" says no time: as "I'll work at Stripe." is, no age held from the day it was said
    (a,) = run("I'm 29, turning 30 soon.")
    assert (a.attribute, a.statement) == (None, "Alice is 29, turning 30 soon.")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("When I retire, I'll move to Florida.", "Alice will move to Florida when Alice retires."),
        ("When I move to Denver I'll get a dog.", "Alice will get a dog when Alice moves to Denver."),
        ("After I graduate I'm moving to Seattle.", "Alice is moving to Seattle after Alice graduates."),
        ("Once we move, I'll get a dog.", "Alice will get a dog once Alice and others move."),
        ("As soon as I get paid, I'm buying a bike.", "Alice is buying a bike as soon as Alice gets paid."),
        ("When I'm older, I want to live in Spain.", "Alice wants to live in Spain when Alice is older."),
    ],
)
def test_a_time_to_come_stays_with_the_clause_it_times(text, statement):
    # "When I retire, I'll move to Florida." was "Alice will move to Florida.": what is not so
    a = one(text)
    assert (a.statement, a.attribute) == (statement, None)


def test_a_past_time_clause_is_a_fact_of_its_own_and_times_nothing_it_is_not_part_of():
    assert [a.statement for a in run("When I moved to Denver, I got a dog.")] == ["Alice moved to Denver.", "Alice got a dog."]
    assert [a.statement for a in run("When I was a kid, I lived in Ohio.")] == ["Alice lived in Ohio."]


@pytest.mark.parametrize(
    ("text", "subject", "attribute", "value"),
    [
        ("Kevin from accounting is 45.", "Kevin", "age", "45"),
        ("Sarah from work lives in Boston.", "Sarah", "lives_in", "boston"),
        ("Tom from next door has a dog.", "Tom", "has_pet", "dog"),
        ("Jen from yoga moved to Austin last month.", "Jen", "lives_in", "austin"),
        ("Dana from HR works remotely for Acme.", "Dana", "works_at", "acme"),
    ],
)
def test_someone_known_from_somewhere_is_that_person(text, subject, attribute, value):
    # "Kevin from accounting is 45." derived nothing, "Sarah from work lives in Boston." was "Alice says
    # sarah from work lives in Boston." about no one
    a = one(text)
    assert (a.subject, a.attribute, a.value, a.statement) == (subject, attribute, value, text.replace("last month", "in April 2023"))


@pytest.mark.parametrize("text", ["Help from friends makes a difference.", "Pressure from work is killing me.",
                                  "Stuff from home arrived.", "Letters from home are the best."])  # fmt: skip
def test_what_comes_from_somewhere_is_no_one(text):
    assert all(a.attribute is None and a.subject not in ("Help", "Pressure", "Stuff", "Letters") for a in run(text))


@pytest.mark.parametrize("text", ["Love from Paris!", "Lots of love from all of us.", "Love to all.", "Love ya"])
def test_a_loving_sign_off_is_no_taste(text):
    # "Love from Paris!" was "Alice loves from Paris." (a taste "from paris"), "Love ya" a taste "ya"
    assert run(text) == []


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("I'm currently a nurse.", "job", "nurse"),
        ("I'm still a teacher.", "job", "teacher"),
        ("Bob is also a doctor.", "job", "doctor"),
        ("I'm now 30.", "age", "30"),
        ("I got promoted to manager.", "job", "manager"),
        ("She was promoted to director last month.", "job", "director"),
    ],
)
def test_what_one_is_now_and_a_promotion_are_the_job_or_age(text, attribute, value):
    # an adverb between the verb and the job or age ("I'm currently a nurse", "I'm now 30") hid it, and a
    # promotion was no job
    found = [a for a in run(msg(f"Carol called. {text}" if text.startswith("She") else text, role="user")) if a.attribute]
    assert [(a.attribute, a.value) for a in found] == [(attribute, value)]


@pytest.mark.parametrize(
    ("text", "statement"),
    [("I much prefer tea.", "Alice much prefers tea."), ("I sorta live in Denver.", "Alice sorta lives in Denver.")],
)
def test_a_hedge_before_the_verb_is_an_adverb(text, statement):
    # were "Alice muches prefer tea." and "Alice sortas live in Denver."
    assert [a.statement for a in run(text)] == [statement]


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I was born in Ohio.", [("from", "ohio", None)]),
        ("I was born and raised in Ohio.", [("from", "ohio", None)]),
        ("I grew up in Ohio.", [("from", "ohio", None)]),
        ("I'm from Ohio originally.", [("from", "ohio", None)]),
        ("I grew up in Ohio but now live in Denver.", [("from", "ohio", None), ("lives_in", "denver", None)]),
        ("I work at Google but now live in London.", [("works_at", "google", None), ("lives_in", "london", None)]),
    ],
)
def test_where_one_is_from_never_ends_and_a_second_verb_may_follow_an_adverb(text, facts):
    # "born and raised" was two clauses ("Alice was born.", "Alice raised in Ohio."), "born in Ohio" no origin,
    # "I grew up in Ohio" an origin that ended when said, "ohio originally" a value, and "but now live in
    # Denver" no second clause
    assert [(a.attribute, a.value, a.valid_to) for a in run(text)] == facts


def test_born_in_a_year_is_no_place():
    assert all(a.attribute != "from" for a in run("I was born in 1990."))


@pytest.mark.parametrize(("text", "subject", "value"), [("Kelly moved to Denver.", "Kelly", "denver"), ("Emily is a nurse.", "Emily", "nurse")])
def test_a_name_spelt_like_an_adverb_is_a_name(text, subject, value):
    # were "Gina says kelly moved to Denver." and "Gina says emily is a nurse.", owned by Gina
    a = one(msg(text, speaker="Gina"))
    assert (a.subject, a.owner, a.value, a.statement) == (subject, subject, value, text)
    assert one(msg("Finally moved to Denver.", speaker="Gina")).owner == "Gina"


def test_an_adverb_opening_a_clause_without_its_subject_is_not_its_verb():
    # was "Gina reallies love Denver."
    assert [a.statement for a in run(msg("Really love Denver.", speaker="Gina"))] == ["Gina really loves Denver."]
    assert [a.statement for a in run(msg("Love experimenting with recipes.", speaker="Gina"))] == [
        "Gina loves experimenting with recipes."
    ]


@pytest.mark.parametrize(
    ("text", "attribute", "values"),
    [
        ("Jen and Tom work at Google.", "works_at", ("google", "google")),
        ("Jen and Tom both moved to Austin last year.", "lives_in", ("austin", "austin")),
        ("Jen and Tom got married in June.", "married_to", ("tom", "jen")),
    ],
)
def test_two_people_named_together_each_hold_the_attribute(text, attribute, values):
    # "Jen and Tom work at Google." was "Alice says Jen and Tom work at Google.", about no one
    jen, tom = run(text)
    assert (jen.subject, jen.owner, jen.attribute, jen.value) == ("Jen", "Jen", attribute, values[0])
    assert (tom.subject, tom.owner, tom.attribute, tom.value) == ("Tom", "Tom", attribute, values[1])
    assert jen.statement == tom.statement and jen.valid_from == tom.valid_from


def test_two_people_named_together_twice_hold_it_once_each():
    assert [(a.subject, a.value) for a in run("Jen and Tom work at Google. Jen and Tom work at Google.")] == [
        ("Jen", "google"),
        ("Tom", "google"),
    ]


def test_two_things_named_together_are_no_people():
    assert [a.subject for a in run("Salt and Pepper make everything better.")] == ["Salt and Pepper"]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were "Rumor has it that Bob quit Google." of and by "Rumor", "Word is Bob quit." of and by "Word":
        # a sentence-opening noun was read as a name
        ("Rumor has it that Bob quit Google.", "Alice heard that Bob quit Google."),
        ("Word is Bob quit.", "Alice heard Bob quit."),
        ("Rumour has it Bob moved to Denver.", "Alice heard Bob moved to Denver."),
        ("Word on the street is that Kate got married.", "Alice heard that Kate got married."),
        # was "Word is pregnant." of and by "Word": split at the comma, "she" was the one name before it
        ("Word is, she's pregnant.", "Alice heard she's pregnant."),
        ("Rumor has it, Bob moved to Denver.", "Alice heard Bob moved to Denver."),
    ],
)
def test_hearsay_is_what_the_speaker_heard_as_i_heard_is(text, statement):
    (heard,) = run(msg("I heard Bob quit Google.", speaker="Alice"))
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.subject, a.owner, a.attribute) == (statement, heard.subject, heard.owner, None)
    assert not run(msg("Word is a word processor.", speaker="Alice"))[0].statement.startswith("Alice heard")


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were "Alice says people say Bob quit." of "people say Bob", and nothing
        ("People say Bob quit.", "Alice heard Bob quit."),
        ("Everyone says that Kate got married.", "Alice heard that Kate got married."),
    ],
)
def test_what_people_say_is_hearsay_the_speaker_heard(text, statement):
    (heard,) = run(msg("I heard Bob quit Google.", speaker="Alice"))
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.subject, a.owner, a.attribute) == (statement, heard.subject, heard.owner, None)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were "Alice says bob claims he quit his job." of "bob claims he", and nothing at all
        ("Bob claims he quit his job.", "Alice says Bob claims he quit his job."),
        ("Bob claims he lives in Denver.", "Alice says Bob claims he lives in Denver."),
        # was "Bob works at Google." (works_at): a claim, said as Bob's fact
        ("Bob claimed that he works at Google.", "Alice says Bob claimed that he works at Google."),
    ],
)
def test_what_someone_claims_is_the_speakers_report_no_fact_of_theirs(text, statement):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.subject, a.owner, a.attribute) == (statement, "Alice", "Alice", None)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # was "Alice's sister claims she lives in Denver." as the sister's lives_in
        ("My sister claims she lives in Denver.", "Alice says Alice's sister claims she lives in Denver."),
        ("Our neighbor claimed that she works at Google.", "Alice says Alice's neighbor claimed that she works at Google."),
    ],
)
def test_what_ones_own_people_claim_is_the_speakers_report(text, statement):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.subject, a.owner, a.attribute) == (statement, "Alice", "Alice", None)


@pytest.mark.parametrize(
    ("text", "statement", "attribute", "value"),
    [
        # were the statements with no attribute: the speaker's own words, reported, are still theirs
        ("I told Bob I live in Denver.", "Alice told Bob Alice lives in Denver.", "lives_in", "denver"),
        ("I told Bob that I live in Denver.", "Alice told Bob that Alice lives in Denver.", "lives_in", "denver"),
        ("I said I work at Google.", "Alice said Alice works at Google.", "works_at", "google"),
        ("I told my boss I'm a nurse.", "Alice told Alice's boss Alice is a nurse.", "job", "nurse"),
        # (were no age: a number after "I'm" was taken for no words told)
        ("I told Bob I'm 30.", "Alice told Bob Alice is 30.", "age", "30"),
        ("I told Bob that I'm 30 years old.", "Alice told Bob that Alice is 30 years old.", "age", "30"),
        # what holds no attribute reads as before
        ("I told Bob I love him.", "Alice told Bob Alice loves him.", None, None),
    ],
)
def test_the_speakers_own_words_reported_are_theirs(text, statement, attribute, value):
    (a,) = run(msg(text, speaker="Alice"))
    assert (a.statement, a.subject, a.owner, a.attribute, a.value) == (statement, "Alice", "Alice", attribute, value)


def test_what_another_told_the_speaker_of_the_speaker_is_no_fact_of_either():
    (a,) = run(msg("Bob told me I live in Denver.", speaker="Alice"))
    assert (a.statement, a.attribute) == ("Bob told Alice Alice lives in Denver.", None)


@pytest.mark.parametrize(
    "text",
    [
        # was "The other person lives in Denver." (owner None): a guess put to someone, said as a fact
        "You live in Denver, right?",
        "You love spending time together in this bar, don't you?",
        # these already made nothing: a question asks, whatever its tag
        "You're from Ohio, aren't you?",
        "You work at Acme, no?",
    ],
)
def test_a_tag_question_to_nobody_named_makes_nothing(text):
    assert run(msg(text, speaker="Alice")) == []
    # named, it stays a check of that person, said by no one: test_mom_spoken_to_is_the_speakers_mom


@pytest.mark.parametrize(
    ("text", "wish", "relation"),
    [
        # was "Alice is happy 10th anniversary to Alice's amazing wife Sarah.", and Sarah was nobody's wife
        (
            "Happy 10th anniversary to my amazing wife Sarah!",
            "Alice wishes a happy 10th anniversary to Alice's amazing wife Sarah.",
            ("Alice's wife is Sarah.", "Alice", "married_to", "sarah"),
        ),
        # was nothing
        (
            "Happy birthday to my son Leo!",
            "Alice wishes a happy birthday to Alice's son Leo.",
            ("Alice's son is Leo.", "Leo", None, None),
        ),
        (
            "A very happy birthday to my little brother Sam, love you!",
            "Alice wishes a very happy birthday to Alice's little brother Sam.",
            ("Alice's little brother is Sam.", "Sam", None, None),
        ),
    ],
)
def test_a_wish_is_the_speakers_and_names_whose_person_is_wished(text, wish, relation):
    wished, related = run(msg(text, speaker="Alice"))
    assert (wished.statement, wished.subject, wished.owner, wished.attribute) == (wish, "Alice", "Alice", None)
    assert (related.statement, related.subject, related.attribute, related.value) == relation
    assert related.owner == "Alice"  # who Sarah is to Alice is Alice's to say, as "Sarah is my wife."
    assert text[slice(*related.span)].startswith("my ")


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        # was the job "34-year-old architect" alone: the age was part of the job, the home lost
        (
            "Alice is a 34-year-old architect who lives in Chicago.",
            [("job", "architect", False), ("age", "34", False), ("lives_in", "chicago", False)],
        ),
        # was the job alone: where she is from and where she lives now were lost
        (
            "I'm a teacher from Ohio who now lives in Seattle",
            [("job", "teacher", True), ("from", "ohio", False), ("lives_in", "seattle", True)],
        ),
        ("Bob is a nurse who works at Mercy.", [("job", "nurse", False), ("works_at", "mercy", False)]),
        # a clause denied, or of another time, holds no value now
        ("I'm a teacher who doesn't live in Seattle.", [("job", "teacher", False)]),
        ("I'm a nurse who used to live in Boston.", [("job", "nurse", True)]),
    ],
)
def test_what_a_job_is_said_with_is_a_fact_of_the_statement_too(text, facts):
    out = run(msg(text, speaker="Alice"))
    assert [(a.attribute, a.value, a.change) for a in out] == facts
    assert len({(a.statement, a.subject, a.owner, a.span) for a in out}) == 1


@pytest.mark.parametrize(
    "text",
    [
        "I'm moving to Denver later this year.",
        "I'm moving to Denver this year.",
        "I will move to Denver this month.",
        "I have a trip later this month.",
    ],
)
def test_a_time_to_come_starts_no_earlier_than_it_was_said(text):
    # "later this year" was from 1 January 2023, months before it was said (8 May 2023)
    (a,) = run(msg(text, speaker="Alice"))
    assert a.time_stated and a.valid_from == NOW
    # what held through the period named is not moved ("I'm vegan this year": from its start)
    assert run(msg("I'm vegan this year.", speaker="Alice"))[0].valid_from == datetime(2023, 1, 1, tzinfo=UTC)


def test_a_clause_after_a_wish_is_read_as_its_own():
    # was the wish and the relation alone: "he turns 5 today" was dropped with the rest of the sentence
    said = run(msg("Happy birthday to my son Leo, he turns 5 today!", speaker="Alice"))
    assert [(a.subject, a.attribute, a.value) for a in said] == [("Alice", None, None), ("Leo", None, None), ("Leo", "age", "5")]
    assert said[-1].statement == "Leo turns 5 on 8 May 2023."


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        # were dated to one of them: "... on Christmas 2022." from 25 December 2022, "... in the summer of
        # 2023." from 1 June 2023: what is done as a rule at a holiday or a season is done at each one
        ("During Christmas, we usually watch a few movies.", "Alice and others usually watch a few movies during Christmas."),
        ("I usually visit my mom in the summer.", "Alice usually visits Alice's mom in the summer."),
        ("We always go skiing in January.", "Alice and others always go skiing in January."),
        ("We usually watch movies over Thanksgiving.", "Alice and others usually watch movies over Thanksgiving."),
    ],
)
def test_a_habit_at_a_holiday_or_a_season_dates_nothing(text, statement):
    (a,) = run(msg(text, role="user"))
    assert (a.statement, a.valid_from) == (statement, NOW)


@pytest.mark.parametrize(
    "text",
    [
        # was one clause, "Alice usually works from home, but on Christmas Eve Alice moved to Denver.", from the
        # time it was said and no home: the habit of the first clause made the second's day a recurrence
        "I usually work from home, but on Christmas Eve I moved to Denver.",
        "I always visit my mom at Christmas, but on Christmas Eve I moved to Denver.",
    ],
)
def test_a_habit_in_one_clause_leaves_the_day_of_the_next_a_date(text):
    habit, move = run(msg(text, role="user"))
    assert (habit.attribute, habit.valid_from) == (None, NOW)
    assert (move.statement, move.attribute, move.value) == ("Alice moved to Denver on Christmas Eve 2022.", "lives_in", "denver")
    assert move.valid_from == datetime(2022, 12, 24, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "statement", "valid_from"),
    [
        # were "... right after Christmas 2022." and "... in March 2023": a day without a year took the
        # latest one before the Record, though the clause had set another year; the move was dated to
        # that Christmas where "after Christmas" came first
        ("We moved to Denver in 2019, right after Christmas.", "Alice and others moved to Denver in 2019, right after Christmas.", (2019, 1, 1)),
        ("I moved to Denver after Christmas in 2019.", "Alice moved to Denver after Christmas in 2019.", (2019, 1, 1)),
        ("I moved to Denver in December 2019, right after Christmas.", "Alice moved to Denver in December 2019, right after Christmas.", (2019, 12, 1)),
        ("I moved to Denver in 2019, in March.", "Alice moved to Denver in 2019, in March.", (2019, 1, 1)),
        # the year the day would have taken anyway is no other year: it keeps it
        ("I moved to Denver last year, on Christmas Eve.", "Alice moved to Denver in 2022, on Christmas Eve 2022.", (2022, 1, 1)),
    ],
)
def test_a_day_without_a_year_beside_another_year_takes_no_year_of_its_own(text, statement, valid_from):
    (a,) = run(msg(text, role="user"))
    assert (a.statement, a.attribute, a.value, a.valid_from) == (statement, "lives_in", "denver", datetime(*valid_from, tzinfo=UTC))


def test_the_evaluative_gate_knows_every_word_the_pattern_matches():
    # _evaluative_in skips the regex on an ASCII text none of whose words is in _EVALUATIVE_WORDS: a word
    # the pattern matches and the set lacks (a new alternative that is no plain run of letters) would be
    # a judgement no longer seen
    from brainstore.derive.extract import _EVALUATIVE, _EVALUATIVE_WORDS, _evaluative_in

    runs = re.findall(r"[a-z]+", _EVALUATIVE.pattern.replace("\\b", " ").replace("\\s", " "))
    forms = {w for r in runs for w in (r, r + "s", r[:-1], r + "es", r + "ed", r + "ing")}
    for w in forms | {w.upper() for w in forms} | {w.title() for w in forms}:
        assert not _EVALUATIVE.fullmatch(w) or w.lower() in _EVALUATIVE_WORDS, w
    for text in ("That's so cool!", "It really MATTERS", "it rocks", "I'm moving to Oslo", "a \u017fweet one", "great_job"):
        assert _evaluative_in(text) == bool(_EVALUATIVE.search(text)), text


def test_the_corrective_gate_passes_every_kind_of_correction():
    # _correcting skips the regex on an ASCII sentence holding none of _CORRECTIVE_WORDS: each form the
    # pattern knows must still reach it
    from brainstore.derive.extract import _CORRECTIVE, _correcting

    said = [
        "Actually I moved in April", "Correction: I live in Boulder", "To be clear, I quit", "Scratch that, Porto",
        "Sorry, I meant Porto", "No wait, I live in Boulder", "Wait, no, it was May", "Oops I live in Lima",
        "Whoops, Lima", "My bad, it's Lima", "Edit: I moved", "I meant Porto", "Lima rather than Quito",
        "I was wrong about that", "Let me correct that", "Not true that I left", "That's wrong", "It is incorrect",
        "That was not right", "I moved in April, not March", "I moved in April, and not in March",
    ]
    for text in said + [t.upper() for t in said] + ["I moved to Lima.", "HELLO THERE", "\u00c0ctually no"]:
        assert _correcting(text) == bool(_CORRECTIVE.search(text)), text
    assert all(_correcting(t) for t in said)


@pytest.mark.parametrize(
    "text", ["Honestly speaking, I love hiking.", "Generally speaking I love hiking.", "Frankly speaking, I love hiking."]
)
def test_a_stance_speaking_is_no_clause(text):
    """was "Alice is speaking." beside the liking: "honestly" read away alone, "speaking" left a clause"""
    assert [(a.attribute, a.value, a.statement) for a in run(msg(text, role="user"))] == [
        ("likes", "hiking", "Alice loves hiking.")
    ]


def test_speaking_as_a_verb_stays():
    assert [a.statement for a in run(msg("I was honestly speaking to my boss.", role="user"))] == [
        "Alice was honestly speaking to Alice's boss."
    ]


@pytest.mark.parametrize(
    ("text", "attribute", "value", "people"),
    [
        # was lives_in for the mom alone
        ("My mom and my dad live in Ohio.", "lives_in", "ohio", {"Alice's mom", "Alice's dad"}),
        ("My mom and dad live in Ohio.", "lives_in", "ohio", {"Alice's mom", "Alice's dad"}),
        ("My brother and sister work at Google.", "works_at", "google", {"Alice's brother", "Alice's sister"}),
        ("My husband and my son love hiking.", "likes", "hiking", {"Alice's husband", "Alice's son"}),
        ("Tom and Lisa live in Ohio.", "lives_in", "ohio", {"Tom", "Lisa"}),  # as two names joined were
    ],
)
def test_each_relation_of_a_joined_subject_gets_the_attribute(text, attribute, value, people):
    out = run(msg(text, role="user"))
    assert {a.subject for a in out if (a.attribute, a.value) == (attribute, value)} == people, out
    assert all(a.owner == a.subject for a in out), out


def test_a_relation_joined_to_one_with_a_singular_verb_is_one_subject():
    # "My mom and my dad's house": the house is the dad's, no attribute of the mom's
    assert not any(a.attribute for a in run(msg("My mom and my dad's house is in Ohio.", role="user")))


@pytest.mark.parametrize(
    ("text", "attribute", "value", "statement"),
    [
        # each was no fact of the sister's ("Alice's sister said she moved to Paris.")
        ("My sister said she moved to Paris.", "lives_in", "paris", "Alice's sister moved to Paris."),
        ("My sister told me she's a nurse.", "job", "nurse", "Alice's sister is a nurse."),
        ("My friend told me he works at Google.", "works_at", "google", "Alice's friend works at Google."),
        ("Sarah said she works at Google.", "works_at", "google", "Sarah works at Google."),  # as a name's was
    ],
)
def test_a_relations_report_of_itself_is_its_own_news(text, attribute, value, statement):
    out = run(msg(text, role="user"))
    subject = statement.split(" ")[0] if statement.startswith("Sarah") else " ".join(statement.split(" ")[:2])
    assert [(a.subject, a.owner, a.attribute, a.value, a.statement) for a in out] == [
        (subject, subject, attribute, value, statement)
    ]


def test_a_relation_reporting_another_pronoun_reports_someone_else():
    # "My dad said she moved": "she" is not the dad
    assert not any(a.attribute for a in run(msg("My dad said she moved to Paris.", role="user")))


@pytest.mark.parametrize(
    ("text", "pets"),
    [
        ("I've got a dog named Rex and a cat named Tom.", ["dog", "cat"]),  # was the dog alone
        ("I have a dog called Max, a cat and a parrot.", ["dog", "cat", "parrot"]),
        ("We have a cat named Mr Whiskers and two goldfish.", ["cat", "goldfish"]),
        ("I have a dog named Rex and a meeting.", ["dog"]),
    ],
)
def test_a_pet_named_in_a_list_leaves_the_pets_after_it_had(text, pets):
    assert [a.value for a in run(msg(text, speaker="Alice")) if a.attribute == "has_pet"] == pets


def test_a_stay_to_come_from_a_day_already_past_is_next_months():
    # was "from 3 May 2023 to 10 May 2023" (said on 8 May): a stay under way, though it "will be"
    a = one("I'll be in London from the 3rd to the 10th.")
    assert (a.statement, a.valid_from, a.valid_to) == (
        "Alice will be in London from 3 June 2023 to 10 June 2023.",
        datetime(2023, 6, 3, tzinfo=UTC),
        datetime(2023, 6, 11, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # was "Alice read Alice Is Legend in the week of 1 May 2023."
        ("I read I Am Legend last week.", "Alice read I Am Legend in the week of 1 May 2023."),
        ("I love I Will Survive.", "Alice loves I Will Survive."),
        ("Tom said I should move.", "Tom said Alice should move."),  # no title: the speaker
        ("Tom said I Should move.", "Tom said Alice Should move."),  # one capitalised word: no title
    ],
)
def test_an_unquoted_title_opening_on_i_is_shown_as_written(text, shown):
    assert shown in [a.statement for a in run(msg(text, role="user"))]


@pytest.mark.parametrize(
    "text",
    [
        "My son's birthday party is on Saturday.",  # was the son's birthday, 13 May
        "My son's age group plays at noon.",  # was the son playing
        "My daughter's name tag fell off.",
    ],
)
def test_a_relatives_name_age_or_birthday_before_another_noun_is_none_of_theirs(text):
    out = run(msg(text, role="user"))
    assert not any(a.subject in ("Alice's son", "Alice's daughter") for a in out), out


def test_a_relatives_own_name_age_and_birthday_stay():
    said = [(a.subject, a.attribute, a.value) for t in (
        "My son's full name is Jack Smith.", "My daughter's age is 7.", "My son's birthday is on Saturday."
    ) for a in run(msg(t, role="user"))]  # fmt: skip
    assert said == [
        ("Alice's son", "name", "jack smith"), ("Alice's daughter", "age", "7"), ("Alice's son", "birthday", "may 13")
    ]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # was "... every Tuesday and on 11 May 2023 morning.", from 11 May: the second day read as the coming one
        ("I go swimming every Tuesday and Thursday morning.", "Alice goes swimming every Tuesday and Thursday morning."),
        ("I work every Monday, Wednesday, and Friday.", "Alice works every Monday, Wednesday, and Friday."),
    ],
)
def test_days_listed_after_every_are_one_recurrence(text, shown):
    a = one(msg(text, role="user"))
    assert (a.statement, a.valid_from) == (shown, NOW)


def test_a_day_of_the_month_after_starting_is_a_time():
    # was from 8 May to 22 May ("starting the 15th" no time): the stay counted from when it was said
    a = one("I'll be in Tokyo for two weeks starting the 15th.")
    assert (a.statement, a.valid_from, a.valid_to) == (
        "Alice will be in Tokyo for two weeks starting 15 May 2023.",
        datetime(2023, 5, 15, tzinfo=UTC),
        datetime(2023, 5, 29, tzinfo=UTC),
    )
    assert one("I'm starting the 2nd book.").statement == "Alice is starting the 2nd book."


@pytest.mark.parametrize(
    "text", ["Tom's birthday party is on Saturday.", "Tom's wedding is in June."]
)
def test_when_a_named_persons_event_is_is_no_value_of_theirs(text):
    # was birthday_party "on saturday", wedding "in june": the time told as the value of an attribute
    assert [a.attribute for a in run(msg(text, role="user"))] == [None]


def test_a_named_persons_attribute_and_birthday_stay():
    assert [(a.attribute, a.value) for t in ("Tom's favorite food is sushi.", "Tom's birthday is on Friday.")
            for a in run(msg(t, role="user"))] == [("favorite_food", "sushi"), ("birthday", "may 12")]  # fmt: skip
