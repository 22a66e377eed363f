"""Time expressions resolved against the moment of speech (brainstore.derive.timeexpr)."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore.derive.timeexpr import (
    UNKNOWN_START,
    find_time_expressions,
    named_periods,
    render,
    resolve,
    resolve_span,
    tense_of,
)

UTC = timezone.utc  # noqa: UP017
BASE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


def d(*a):
    return datetime(*a, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("I went there yesterday", d(2023, 5, 7)),
        ("I moved to Porto last March", d(2023, 3, 1)),
        ("I moved to Porto last September", d(2022, 9, 1)),
        ("I moved to Porto last May", d(2022, 5, 1)),
        ("I lived in Lisbon in 2019", d(2019, 1, 1)),
        ("since Monday I have been sick", d(2023, 5, 1)),
        ("two weeks ago", d(2023, 4, 24)),
        ("I met him on 5 May 2023.", d(2023, 5, 5)),
        ("on May 5th", d(2023, 5, 5)),
        ("the 5th of May", d(2023, 5, 5)),
        ("since 2019-05-01", d(2019, 5, 1)),
        ("last Saturday we ran", d(2023, 5, 6)),
        ("next month", d(2023, 6, 1)),
        ("last year", d(2022, 1, 1)),
        ("last weekend", d(2023, 5, 6)),
        ("this week", d(2023, 5, 8)),
        ("in March", d(2023, 3, 1)),
        ("in December", d(2022, 12, 1)),
        ("March 2022", d(2022, 3, 1)),
        ("the day before yesterday", d(2023, 5, 6)),
        ("a few years ago", d(2020, 1, 1)),  # as precise as its unit: a year
        ("last summer", d(2022, 6, 1)),
        ("today", d(2023, 5, 8)),
        # typed in lower case, as in chat
        ("i moved to porto in june", d(2022, 6, 1)),
        ("i moved to porto in september 2021", d(2021, 9, 1)),
        ("started on june 5th", d(2022, 6, 5)),
        ("back in december", d(2022, 12, 1)),
        # a half counted back, as precise as its unit; a year by its last two digits; "this past"
        ("three and a half years ago", d(2019, 1, 1)),
        ("a month and a half ago", d(2023, 3, 1)),
        ("2 and a half weeks ago", d(2023, 4, 17)),
        ("a year and a half ago", d(2021, 1, 1)),
        ("back in '19", d(2019, 1, 1)),
        ("started in Jan '22", d(2022, 1, 1)),
        ("moved in March \u201919", d(2019, 3, 1)),
        ("since \u201995", d(1995, 1, 1)),
        ("this past weekend", d(2023, 5, 6)),
        ("this past March", d(2023, 3, 1)),
    ],
)
def test_valid_from(text, start):
    assert resolve_span(text, BASE).valid_from == start


def test_no_time_keeps_occurred_at():
    for text in ["I like tea", "May I help?", "I have 2000 dogs", "we march on", "", "12 people came",
                 "we may go in may", "they march in march", "i met april at the gym", "june said hi",
                 "he scored '19 points", "rock 'n' roll"]:  # fmt: skip
        span = resolve_span(text, BASE)
        assert span.valid_from == BASE and span.valid_to is None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("We lived there from 2015 to 2018", d(2015, 1, 1), d(2019, 1, 1)),
        ("between 2010 and 2012", d(2010, 1, 1), d(2013, 1, 1)),
        ("2010-2012", d(2010, 1, 1), d(2013, 1, 1)),
        # said of the past, "until" bounds the end only: when it began, the text does not say
        ("I worked there until 2020", UNKNOWN_START, d(2021, 1, 1)),
        ("I will stay until 2025", BASE, d(2026, 1, 1)),
    ],
)
def test_bounds(text, start, end):
    span = resolve_span(text, BASE)
    assert (span.valid_from, span.valid_to) == (start, end)


JUNE = datetime(2024, 6, 10, 9, 30, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "base", "start", "end"),
    [
        # tense and direction decide which year a date without one falls in
        ("I fly to Tokyo on October 10", JUNE, d(2024, 10, 10), None),
        ("I'm flying to Tokyo on October 10", JUNE, d(2024, 10, 10), None),
        ("I will fly to Tokyo on October 10", JUNE, d(2024, 10, 10), None),
        ("I flew to Tokyo on October 10", JUNE, d(2023, 10, 10), None),
        ("I flew to Tokyo on May 2", JUNE, d(2024, 5, 2), None),
        ("I'm going to Tokyo on May 2", JUNE, d(2025, 5, 2), None),
        ("Sam is visiting me in April", d(2023, 3, 5), d(2023, 4, 1), None),
        ("Sam visited me in April", d(2023, 3, 5), d(2022, 4, 1), None),
        ("We meet on Friday", JUNE, d(2024, 6, 14), None),
        ("We met on Friday", JUNE, d(2024, 6, 7), None),
        # a bare weekday in the present is the coming one (it was the last, unless the verb was a plan's)
        ("I have a dentist appointment on Friday", JUNE, d(2024, 6, 14), None),
        ("The party is on Saturday", JUNE, d(2024, 6, 15), None),
        ("I had a dentist appointment on Friday", JUNE, d(2024, 6, 7), None),
        ("Trip plan for October 2024", JUNE, d(2024, 10, 1), None),
        # "until" ends the span; of what is ahead it starts now
        ("I will be in Paris until June 20", JUNE, JUNE, d(2024, 6, 21)),
        ("I'm in Paris until June 20", JUNE, JUNE, d(2024, 6, 21)),
        ("I lived in Oslo until 2020", JUNE, UNKNOWN_START, d(2021, 1, 1)),
        # a range lends its year to a half without one
        ("We lived there from May to July 2022", JUNE, d(2022, 5, 1), d(2022, 8, 1)),
        ("from November to February 2022", JUNE, d(2021, 11, 1), d(2022, 3, 1)),
        # neither half has one: the range is one, its end taken the way the clause points (each half read
        # alone had put May this year and July the last)
        ("We lived there from May to July", d(2023, 5, 8), d(2022, 5, 1), d(2022, 8, 1)),
        ("We lived there from November to February", JUNE, d(2023, 11, 1), d(2024, 3, 1)),
        ("We will be there from November to February", JUNE, d(2024, 11, 1), d(2025, 3, 1)),
        # a year's end or beginning is its last or first month
        ("I moved to Berlin at the end of last year", JUNE, d(2023, 12, 1), None),
        ("I moved to Berlin at the beginning of 2019", JUNE, d(2019, 1, 1), None),
        ("I moved to Berlin at the end of last month", JUNE, d(2024, 5, 1), None),
        # durations: the perfect counts back, what is ahead counts forward, the past dates nothing
        ("I've been vegan for three years", JUNE, d(2021, 6, 10), None),
        ("I have lived here for the past 2 months", JUNE, d(2024, 4, 10), None),
        ("I'll be in Rome for two weeks", JUNE, JUNE, d(2024, 6, 24)),
        ("I lived there for three years", JUNE, JUNE, None),
        # a count ahead: of what is ahead a time, as precise as its unit; of the past or a habit, how long
        ("I'm moving to Berlin in two weeks", d(2023, 5, 8), d(2023, 5, 22), None),
        ("I'll be back in three days", d(2023, 5, 8), d(2023, 5, 11), None),
        ("We will marry in a couple of months", d(2023, 5, 8), d(2023, 7, 1), None),
        ("I start there two weeks from now", d(2023, 5, 8), d(2023, 5, 22), None),
        ("I finished the project in two weeks", JUNE, JUNE, None),
        ("I can finish a puzzle in two days", JUNE, JUNE, None),
        # a recurrence is not a date
        ("I go running every Saturday", JUNE, JUNE, None),
        ("We play chess on Sundays", JUNE, JUNE, None),
        ("I call my mom weekly", JUNE, JUNE, None),
        # (was "the first on 17 June 2024 of the month": a Monday)
        ("Book club is the first Monday of the month", JUNE, JUNE, None),
        ("We meet on the last Friday of every month", JUNE, JUNE, None),
    ],
)
def test_direction_bounds_durations_recurrences(text, base, start, end):
    span = resolve_span(text, base)
    assert (span.valid_from, span.valid_to) == (start, end)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("I lived in Tokyo in the 90s", d(1990, 1, 1), d(2000, 1, 1)),
        ("I lived in Tokyo in the 1980s", d(1980, 1, 1), d(1990, 1, 1)),
        ("I lived in Tokyo in the nineties", d(1990, 1, 1), d(2000, 1, 1)),
        ("I lived in Tokyo in the early 2010s", d(2010, 1, 1), d(2020, 1, 1)),
        ("I lived in Tokyo in 2019", d(2019, 1, 1), d(2020, 1, 1)),
        ("I used to live in Dublin", UNKNOWN_START, JUNE),
        ("I lived in Dublin", UNKNOWN_START, JUNE),
        ("I live in Dublin", JUNE, None),
        ("I moved to Dublin in 2019", d(2019, 1, 1), None),  # the tense is past, but this is no state
    ],
)
def test_a_past_state_is_over(text, start, end):
    span = resolve_span(text, JUNE, state="moved" not in text)
    assert (span.valid_from, span.valid_to) == (start, end)


def test_stated_or_defaulted():
    assert resolve(find_time_expressions("I moved to Lisbon in April", JUNE), JUNE) == (
        d(2024, 4, 1),
        None,
        True,
    )
    assert resolve(find_time_expressions("I moved to Lisbon", JUNE), JUNE) == (JUNE, None, False)
    recurring = find_time_expressions("every Saturday", JUNE)
    assert [e.kind for e in recurring] == ["recurring"] and resolve(recurring, JUNE) == (JUNE, None, False)


@pytest.mark.parametrize(
    ("clause", "tense"),
    [
        ("I will be there", "future"),
        ("I'll be there", "future"),
        ("I'm going to move", "future"),
        ("I'm going to the gym", "progressive"),
        ("I am planning to move", "future"),
        ("I've been vegan", "perfect"),
        ("I have lived here", "perfect"),
        ("I lived there", "past"),
        ("I was there", "past"),
        ("I used to live there", "past"),
        ("I went home", "past"),
        ("I'm excited about it", "present"),
        ("I am visiting Rome", "progressive"),
        ("I live in Rome", "present"),
        ("Sam is visiting me", "progressive"),
    ],
)
def test_tense(clause, tense):
    assert tense_of(clause) == tense


@pytest.mark.parametrize(
    ("clause", "verb_first", "tense"),
    [
        # a participle in the object made these past, and a current home or job was closed when said
        ("I live in a small town called Ely", False, "present"),
        ("we work for a company based in Paris", False, "present"),
        ("have a dog named Rex", True, "present"),
        ("really works at a place called Nimbus", True, "present"),
        ("just moved to a town called Ely", True, "past"),
        ("I finally moved to a town called Ely", False, "past"),
        ("used to live in a town called Ely", True, "past"),
        ("My sister moved to a town called Ely", False, "past"),  # a noun phrase first: the verb is found
    ],
)
def test_a_participle_after_the_verb_is_no_tense(clause, verb_first, tense):
    assert tense_of(clause, verb_first=verb_first) == tense


def test_decades_render():
    (e,) = find_time_expressions("back in the 90s", JUNE)
    assert (e.when, e.period, render(e)) == (d(1990, 1, 1), "decade", "in the 1990s")
    assert named_periods("What did she do in the 90s?", JUNE) == [(d(1990, 1, 1), d(2000, 1, 1))]
    assert find_time_expressions("I'm in my 90s", JUNE) == []


def test_a_part_of_a_period_renders_as_that_part_of_the_period():
    # was "the end of in 2022": the period rendered on its own after the words naming its part
    rendered = [render(e) for e in find_time_expressions("the end of last year and since the start of last month", JUNE)]
    assert rendered == ["the end of 2023", "since the start of May 2024"]


@pytest.mark.parametrize(
    ("query", "periods"),
    [
        ("Which hobby did Dave pick up in October 2023?", [(d(2023, 10, 1), d(2023, 11, 1))]),
        ("What was James doing on March 16, 2022?", [(d(2022, 3, 16), d(2022, 3, 17))]),
        ("What did we discuss last week?", [(d(2023, 5, 1), d(2023, 5, 8))]),
        ("Where did we go last summer?", [(d(2022, 6, 1), d(2022, 9, 1))]),
        ("Where did she live from 2015 to 2018?", [(d(2015, 1, 1), d(2019, 1, 1))]),
        ("How many pets did Andrew have as of September 2023?", []),
        ("What has changed since May?", []),
        ("When did Deborah go to a community meetup?", []),
    ],
)
def test_named_periods_of_a_query(query, periods):
    assert named_periods(query, BASE) == periods


def test_spans_and_render():
    text = "I moved to Porto last March."
    (e,) = find_time_expressions(text, BASE)
    assert text[e.start : e.end] == "last March" and e.relative
    assert render(e) == "in March 2023"
    (y,) = find_time_expressions("it was yesterday", BASE)
    assert render(y) == "on 7 May 2023"


@pytest.mark.parametrize(
    ("text", "start", "end", "shown"),
    [
        # seasons: the next one of what is ahead, else the latest begun; a season is three months
        ("I'm moving to Oslo in the fall", d(2023, 9, 1), None, "in the fall of 2023"),
        ("I moved to Oslo in the summer", d(2022, 6, 1), None, "in the summer of 2022"),
        ("I moved here in the spring of 2021", d(2021, 3, 1), None, "in the spring of 2021"),
        ("I lived in Oslo in the spring", d(2023, 3, 1), d(2023, 6, 1), "in the spring of 2023"),
        # "last", "this" and "next" name a season too, not its first month
        ("I lived in Oslo last summer", d(2022, 6, 1), d(2022, 9, 1), "in the summer of 2022"),
        ("I'm going to Paris this summer", d(2023, 6, 1), None, "in the summer of 2023"),
        ("I lived in Oslo last winter", d(2022, 12, 1), d(2023, 3, 1), "in the winter of 2022"),
        # holidays on a fixed day, by their names
        ("I got married on Christmas Eve", d(2022, 12, 24), None, "on Christmas Eve 2022"),
        ("I'm moving to Oslo after Christmas", d(2023, 12, 25), None, "on Christmas 2023"),
        ("I moved to Paris last Christmas", d(2022, 12, 25), None, "on Christmas 2022"),
        ("On New Year's Day I moved to Oslo", d(2023, 1, 1), None, "on New Year's Day 2023"),
        ("I'll dress up for halloween", d(2023, 10, 31), None, "on Halloween 2023"),
        ("We're flying to Rome the week before Christmas", d(2023, 12, 18), None, "in the week of 18 December 2023"),
        ("I started there the day after Christmas", d(2022, 12, 26), None, "on 26 December 2022"),
        # the movable feasts, on their day of that year (were no time at all)
        ("I moved to Oslo over Thanksgiving", d(2022, 11, 24), None, "on Thanksgiving 2022"),
        ("I'm flying home for Thanksgiving", d(2023, 11, 23), None, "on Thanksgiving 2023"),
        ("I moved to Paris last Easter", d(2023, 4, 9), None, "on Easter 2023"),
        ("We met on Easter Sunday", d(2023, 4, 9), None, "on Easter Sunday 2023"),
        # a holiday with its year is that year's (was this year's, shown "on Christmas 2022 2019")
        ("We met on Christmas 2019", d(2019, 12, 25), None, "on Christmas 2019"),
        ("We met on Easter Sunday 2019", d(2019, 4, 21), None, "on Easter Sunday 2019"),
        ("I moved to Oslo over Thanksgiving, 2021", d(2021, 11, 25), None, "on Thanksgiving 2021"),
        # chat's abbreviated units (were no time: "last wk" was the moment of speech)
        ("I moved to Oslo last wk", d(2023, 5, 1), None, "in the week of 1 May 2023"),
        ("I moved to Oslo 3 yrs ago", d(2020, 1, 1), None, "in 2020"),
        # a quarter is three months of its year (was the year alone, or nothing)
        ("I moved to Oslo in Q3 2020", d(2020, 7, 1), None, "in Q3 2020"),
        ("I lived in Oslo in Q3 2020", d(2020, 7, 1), d(2020, 10, 1), "in Q3 2020"),
        ("I lived in Oslo in the fourth quarter of 2021", d(2021, 10, 1), d(2022, 1, 1), "in Q4 2021"),
        # a day of the month alone, as a bound or a day
        ("I'm on vacation until the 15th", BASE, d(2023, 5, 16), "until 15 May 2023"),
        ("I'll be back on the 3rd", d(2023, 6, 3), None, "on 3 June 2023"),
        ("I was sick on the 3rd", d(2023, 5, 3), None, "on 3 May 2023"),
        # counted from the next or the last
        ("The week after next I'm in Paris", d(2023, 5, 22), None, "in the week of 22 May 2023"),
        ("We moved here the year before last", d(2021, 1, 1), None, "in 2021"),
        ("I'm leaving the day after tomorrow", d(2023, 5, 10), None, "on 10 May 2023"),
        # the weekend: the last of the past, the next of what is ahead
        ("I was in Tokyo over the weekend", d(2023, 5, 6), None, "on the weekend of 6 May 2023"),
        ("I'll be in Tokyo over the weekend", d(2023, 5, 13), None, "on the weekend of 13 May 2023"),
        # a part of a month or of the year
        ("I'm moving to Oslo in mid-June", d(2023, 6, 1), None, "mid-June 2023"),
        ("I'll finish the report by the end of the year", d(2023, 12, 1), None, "the end of 2023"),
        # days of one month ("May 10-15": was "on 10 May 2023-15", the 10th alone)
        ("I'll be in Paris May 10-15", d(2023, 5, 10), d(2023, 5, 16), "from 10 May 2023 to 15 May 2023"),
        ("I was in Paris June 3rd - 7th, 2021", d(2021, 6, 3), d(2021, 6, 8), "from 3 June 2021 to 7 June 2021"),
        # a weekday counted back: not the recurring "Fridays"
        ("I moved to Oslo two Fridays ago", d(2023, 4, 28), None, "on 28 April 2023"),
    ],
)
def test_seasons_holidays_days_of_the_month_and_counted_weekdays(text, start, end, shown):
    span = resolve_span(text, BASE, state=text.startswith("I lived"))
    assert (span.valid_from, span.valid_to) == (start, end)
    assert [render(e) for e in span.exprs] == [shown]


@pytest.mark.parametrize(
    ("text", "start", "end", "shown"),
    [
        # a year first, with slashes, as with dashes
        ("I moved to Denver on 2023/05/01", d(2023, 5, 1), None, "on 1 May 2023"),
        ("I moved to Denver on 2023/5/1", d(2023, 5, 1), None, "on 1 May 2023"),
        # a month and day without a year: month first (as "5/1/2023" is read), the day first only when
        # the first number is no month; the year by direction, as "May 1" takes one
        ("I moved to Denver on 5/1", d(2023, 5, 1), None, "on 1 May 2023"),
        ("I moved to Denver on 13/4", d(2023, 4, 13), None, "on 13 April 2023"),
        ("I'm moving to Denver on 6/15", d(2023, 6, 15), None, "on 15 June 2023"),
        ("I'm in Paris until 6/30", BASE, d(2023, 7, 1), "until 30 June 2023"),
        ("I worked at Acme from 3/1 to 4/15", d(2023, 3, 1), d(2023, 4, 16), "from 1 March 2023 to 15 April 2023"),
        # days of the month as a range: the end the way the clause points, the start the latest before it
        ("I'm in Paris from the 10th to the 15th", d(2023, 5, 10), d(2023, 5, 16), "from 10 May 2023 to 15 May 2023"),
        ("I'm in Paris from the 28th to the 3rd", d(2023, 5, 28), d(2023, 6, 4), "from 28 May 2023 to 3 June 2023"),
        ("I was in Paris from the 1st to the 5th", d(2023, 5, 1), d(2023, 5, 6), "from 1 May 2023 to 5 May 2023"),
        # a stay to come ("will") whose start this month is past: the next month's (was 3 to 10 May, said on the 8th)
        ("I will be in Paris from the 3rd to the 10th", d(2023, 6, 3), d(2023, 6, 11), "from 3 June 2023 to 10 June 2023"),
        ("I'll be in Paris from the 10th to the 15th", d(2023, 5, 10), d(2023, 5, 16), "from 10 May 2023 to 15 May 2023"),
    ],
)
def test_numeric_dates_without_a_year_and_ranges_of_days(text, start, end, shown):
    span = resolve_span(text, BASE)
    assert (span.valid_from, span.valid_to) == (start, end)
    assert [render(e) for e in span.exprs] == [shown]


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # days of one month joined by a word, as by a dash (were the first day alone)
        ("I'm in Paris June 10 to 15", d(2023, 6, 10), d(2023, 6, 16)),
        ("I'm in Paris June 10th through the 15th", d(2023, 6, 10), d(2023, 6, 16)),
        # "thru" as "through" (was no bound: the job closed when it was said)
        ("I worked at Acme thru 2019", UNKNOWN_START, d(2020, 1, 1)),
        ("I'm in Paris thru the 15th", BASE, d(2023, 5, 16)),
    ],
)
def test_days_of_a_month_joined_by_a_word_and_thru(text, start, end):
    span = resolve_span(text, BASE, state=True)
    assert (span.valid_from, span.valid_to) == (start, end)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        # were the latest such day, a deadline already gone
        ("I need to pay rent by the 15th", d(2023, 5, 15)),
        ("I need to pay rent by June 15", d(2023, 6, 15)),
        ("I need to pay rent by 6/15", d(2023, 6, 15)),
        # told in the past, the deadline was
        ("I had paid it by June 15", d(2022, 6, 15)),
    ],
)
def test_a_deadline_points_ahead_unless_told_in_the_past(text, start):
    assert resolve_span(text, BASE).valid_from == start


@pytest.mark.parametrize(
    "text", ["I rated it 4/5", "I'm on call 24/7", "The score was 3/2", "He was the 5th to arrive", "I read 3/4 to 4/5 of it",
     "I ran on 2/3 of the days"]
)
def test_a_fraction_or_rank_is_no_date(text):
    assert find_time_expressions(text, BASE) == []


@pytest.mark.parametrize(
    "text",
    [
        "I love Christmas", "The fall was hard", "It was the 5th time I called", "I live on the 3rd floor",
        "We made plans for the summer", "I go there on Fridays", "the 20th century", "I read about the fall of Rome",
    ],
)  # fmt: skip
def test_a_season_holiday_or_day_of_the_month_unanchored_names_no_date(text):
    assert [e for e in find_time_expressions(text, BASE) if e.kind != "recurring"] == []


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # a start follows the clause's tense as the time alone would; "since" alone looks back
        ("I'll be in Tokyo from Monday to Friday", d(2023, 5, 15), d(2023, 5, 20)),
        ("I was in Tokyo from Monday to Friday", d(2023, 5, 1), d(2023, 5, 6)),
        ("I'm in Paris from Thursday to Monday", d(2023, 5, 11), d(2023, 5, 16)),
        ("I'll be in Berlin for three days starting Thursday", d(2023, 5, 11), d(2023, 5, 14)),
        ("I'll work there for two months starting in June", d(2023, 6, 1), d(2023, 8, 1)),
        ("I've been sick since Thursday", d(2023, 5, 4), None),
    ],
)
def test_a_range_or_a_start_follows_the_tense(text, start, end):
    span = resolve_span(text, BASE)
    assert (span.valid_from, span.valid_to) == (start, end)


def test_a_range_renders_whole():
    (e,) = find_time_expressions("from Monday to Friday", BASE, weekdays_ahead=True)
    assert render(e) == "from 15 May 2023 to 19 May 2023"
    (e,) = find_time_expressions("between May and July", BASE)
    assert render(e) == "between May 2022 and July 2022"
    (e,) = find_time_expressions("starting Thursday", BASE, weekdays_ahead=True)
    assert render(e) == "starting 11 May 2023"


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("My last day at Acme is May 31", d(2023, 5, 31)),
        ("The deadline is May 15", d(2023, 5, 15)),
        ("I have a dentist appointment on June 3", d(2023, 6, 3)),
        ("My last day at Acme was May 31", d(2022, 5, 31)),
        ("We ski in December", d(2022, 12, 1)),  # a habit points nowhere: the latest, as before
    ],
)
def test_a_present_be_or_have_places_a_date_without_a_year_ahead(text, start):
    assert resolve_span(text, BASE).valid_from == start


def test_timezone_is_kept():
    tz = timezone(timedelta(hours=-5))
    base = datetime(2023, 5, 8, 23, 0, tzinfo=tz)
    span = resolve_span("yesterday", base)
    assert span.valid_from == datetime(2023, 5, 7, tzinfo=tz)
    assert resolve_span("on 5 May 2023", base).valid_from.tzinfo == tz


@settings(max_examples=300, deadline=None)
@given(st.text(), st.datetimes(min_value=datetime(1901, 1, 1), max_value=datetime(2200, 1, 1)))
def test_never_crashes(text, when):
    base = when.replace(tzinfo=UTC)
    for e in find_time_expressions(text, base):
        assert 0 <= e.start < e.end <= len(text)
        assert e.when.tzinfo is not None
    span = resolve_span(text, base)
    assert span.valid_to is None or span.valid_to > span.valid_from


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "yesterday",
                "last",
                "March",
                "May",
                "in",
                "2019",
                "since",
                "until",
                "from",
                "to",
                "ago",
                "two",
                "weeks",
                "Monday",
                "5",
                "the",
                "of",
                "-",
                "2015",
                "next",
                "summer",
                "this",
                "weekend",
                " ",
                ",",
            ]
        ),
        max_size=12,
    ).map(" ".join)
)
def test_time_word_soup(text):
    span = resolve_span(text, BASE)
    assert span.valid_from.tzinfo is not None


def test_a_numeric_date_is_parsed_once_a_text_and_held_by_no_cache_across_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    from brainstore.derive import timeexpr
    from brainstore.derive.extract import default_extractor, source_text

    parsed: list[str] = []
    parse = timeexpr._dateparser

    def counted(fragment: str, base: datetime) -> object:
        parsed.append(fragment)
        return parse(fragment, base)

    monkeypatch.setattr(timeexpr, "_dateparser", counted)
    at = datetime(2024, 1, 1, tzinfo=UTC)
    text = " ".join("On 7/23/1987 I paid the rent." for _ in range(50))
    for _ in range(2):
        default_extractor().extract(source_text({"kind": "document", "text": text}, self_name=None, occurred_at=at), self_name=None)
    # once for each text: a later text (another tenant's, or the same after a forget) finds nothing held
    assert parsed == ["7/23/1987", "7/23/1987"]
    assert timeexpr._TEXT_S_DATES.get() is None


def test_a_query_s_dates_are_parsed_once_each_and_only_its_first_few(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query's numeric dates were each given to dateparser (about a millisecond a call), repeated or
    not and however many: a 10,000-character query of them took 1.2 s of CPU whatever its budget.ms."""
    from brainstore.derive import timeexpr
    from brainstore.service import context

    parsed: list[str] = []
    parse = timeexpr._dateparser
    monkeypatch.setattr(timeexpr, "_dateparser", lambda fragment, base: parsed.append(fragment) or parse(fragment, base))
    march_4 = (d(2021, 3, 4).timestamp(), d(2021, 3, 5).timestamp())
    assert set(context.query_periods("3/4/2021 " * 1111, BASE)) == {march_4}
    assert parsed == ["3/4/2021"]
    parsed.clear()
    dates = " ".join(f"{month}/{day}/2021" for month in range(1, 13) for day in range(1, 29))
    periods = context.query_periods(dates, BASE)
    assert len(periods) == len(parsed) == context.QUERY_TIME_EXPRESSIONS
    assert periods == [(d(2021, 1, day).timestamp(), d(2021, 1, day + 1).timestamp()) for day in range(1, len(periods) + 1)]
    parsed.clear()
    assert context.query_periods(" ".join(f"{month}/{day}/21" for month in range(13, 100) for day in range(32, 99)), BASE) == []
    assert len(parsed) == context.QUERY_TIME_EXPRESSIONS  # one that names no date costs its call too


@pytest.mark.parametrize(
    "query",
    [
        "Which hobby did Dave pick up in October 2023?",
        "What was James doing on 3/16/2022?",
        "What did we discuss last week, and every day since Monday?",
        "Where did she live from 2015 to 2018?",
        "What did I do between 1/2/2020 and 3/4/2021, on 5/6/2022 and in the 90s, for three years?",
        "Did I go hiking in May 2021, in June 2021, in July 2021, in August 2021 or yesterday?",
    ],
)
def test_a_query_naming_a_few_periods_has_them_all(query: str) -> None:
    from brainstore.service.context import query_periods

    assert query_periods(query, BASE) == [(s.timestamp(), e.timestamp()) for s, e in named_periods(query, BASE)]
    assert query_periods(query, BASE)


# _QUICK as it was before its words were grouped by their first letter: the grouped one must find a
# time word wherever this one did, and nowhere else.
_QUICK_FLAT = (
    r"(?i:yesterday|today|tonight|tomorrow|ago\b|back\b|earlier|last|this|next|past|previous|coming"
    r"|spring|summer|fall|autumn|winter|christmas|halloween|valentine"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|night|ties\b|every|each|daily|weekly|monthly"
    r"|yearly|annually|weekend|days?\b|weeks?\b|months?\b|years?\b|decades?\b|wks?\b|yrs?\b|thanksgiving|easter)|\d|"
)
_QUICK_WORDS = _QUICK_FLAT[4:].split(")|")[0].replace("\\b", "").replace("?", "").split("|")


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([*_QUICK_WORDS, "day", "week", "month", "year", "decade", "May", "JUNE", "Sept."]),
            st.text(alphabet="aAbdeklnstTyY _-'\u017f\u212a\u0130\u0131é1٣", max_size=4),
        ),
        max_size=6,
    ).map("".join),
    st.booleans(),
)
def test_the_quick_check_finds_a_time_word_where_the_flat_list_did(text: str, upper: bool) -> None:
    import re

    from brainstore.derive import timeexpr

    text = text.upper() if upper else text
    flat = re.compile(_QUICK_FLAT + timeexpr._MON)
    assert (timeexpr._QUICK.search(text) is None) == (flat.search(text) is None)
    for at in range(len(text)):  # where each alternative can match, position by position
        assert (timeexpr._QUICK.match(text, at) is None) == (flat.match(text, at) is None)


@pytest.mark.parametrize("base", [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 30, 12, tzinfo=UTC)])
@pytest.mark.parametrize(
    "text",
    ["I moved in Jan '22", "back in '19", "I'll be there December 30-31", "three and a half years ago",
     "two and a half weeks ago", "this past weekend", "next summer", "last Thanksgiving", "next Easter",
     "next wk", "in Q4 9999", "in Q1 1900"],
)  # fmt: skip
def test_the_newer_expressions_stay_within_the_calendar_at_its_ends(text, base):
    # "Jan '22" said in the year 1 named the year -78, and "December 30-31" in 9999 ended past the calendar
    # (a Context's as_of may be either end): no ValueError or OverflowError, whatever is resolved
    for future in (False, True):
        for expr in find_time_expressions(text, base, future=future):
            assert expr.when.year >= 1 and (expr.until is None or expr.until >= expr.when)
    resolve_span(text, base)
    named_periods(text, base)
