"""Time expressions: find them cheaply, resolve them against the moment the text was said.

A regex of time words finds candidate fragments ("yesterday", "last March", "in 2019", "since Monday",
"two weeks ago", "5 May 2023", "from 2015 to 2018"). Only the matched fragment is resolved, never the
whole text: the relative forms and dates with a month name ("5 May 2023", "May 5th", "the 5th of
May", "October 2023") are computed here (they are exact, and dateparser either gets some wrong, "last
March", or costs a millisecond or two a call, and a fifth of a second to load, which a Context query
cannot afford); numeric dates ("3/4/2021") and anything else the regex admits go to ``dateparser``
with ``RELATIVE_BASE`` = the moment of speech and ``PREFER_DATES_FROM`` = past.

Every resolved time is the *start* of the period the expression names (a day -> midnight, a week ->
Monday, a month -> the 1st, a year -> 1 January, a season -> its first month), in the time zone of
the reference moment. Bounds ("until", "to") end at the *end* of their period (exclusive), so
"from 2015 to 2018" is [2015-01-01, 2019-01-01) and "until 2020" closes at 2021-01-01.

Tense and direction decide what a date without a year means: said on 10 June 2024, "I flew to Tokyo on
October 10" is October 2023 and "I fly to Tokyo on October 10" October 2024 (``future=True``). A range
lends its year to a half that has none ("from May to July 2022"), and one with none is read whole ("from
May to July": the latest such range, or the next). A part of a period is the period ("the end of last
month"), but a year's end or beginning its last or first month. A count ahead ("in two weeks") is a
time of what is ahead only ("I'm moving in two weeks"), how long else ("I ran it in two days"). Decades ("the 90s") are periods;
durations ("for three years") and recurrences ("every Saturday") are found but name no date: the caller
decides what a duration bounds (see :func:`resolve`), and a recurrence never becomes a date.
"""

from __future__ import annotations

import calendar
import re
import warnings
from bisect import bisect_left, insort
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone, tzinfo

from .attribution import ADVERBS, FIRST_PL, FIRST_SG, SECOND, THIRD_SG

__all__ = [
    "AGO",
    "AHEAD",
    "UNKNOWN_START",
    "TimeExpr",
    "TimeSpan",
    "find_time_expressions",
    "looks_ahead",
    "named_periods",
    "render",
    "resolve",
    "resolve_span",
    "tense_of",
    "warm_up",
]

#: valid_from of a state known only to have ended ("I used to live in Dublin", "I lived in Oslo until
#: 2020"): it held at some time before valid_to, since when the text does not say. UTC, so that no
#: time zone shifts it below year 1.
UNKNOWN_START = datetime(1, 1, 1, tzinfo=timezone.utc)  # noqa: UP017

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_SHORT_UNITS = {"wk": "week", "yr": "year"}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
# Holidays on a fixed day of the year (month, day); the movable feasts are in _holiday_day.
_HOLIDAYS = {
    "christmas": (12, 25), "christmas day": (12, 25), "christmas eve": (12, 24), "new year's": (1, 1),
    "new year's day": (1, 1), "new year's eve": (12, 31), "halloween": (10, 31), "valentine's day": (2, 14),
}  # fmt: skip
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "few": 3, "several": 3,
    "a couple of": 2, "couple of": 2, "a couple": 2, "couple": 2,
}  # fmt: skip

# Month names are capitalised ("May", "March"), or written out in lower case as people type in chat
# ("moved here in june"), except "may" and "march", which are verbs in lower case, and the
# abbreviations ("mar", "dec", "jan" are words or names too).
_MON = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|JANUARY|FEBRUARY|MARCH|APRIL|MAY|JUNE|JULY|AUGUST|SEPTEMBER|OCTOBER|NOVEMBER|DECEMBER"
    r"|january|february|april|june|july|august|september|october|november|december"
    r"|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?)"
)
_WD = r"(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_YEAR = r"(?:19|20)\d\d"
_ORD = r"\d{1,2}(?i:st|nd|rd|th)?"
_NUM = r"(?i:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|few|several|(?:a\s+)?couple(?:\s+of)?)"
_UNIT = r"(?i:days?|weeks?|wks?|fortnights?|months?|years?|yrs?|decades?)"  # ("2 wks ago", "3 yrs ago": chat's)
# "this past weekend" is the last one
_REL = r"(?i:this\s+past|this\s+coming|last|this|next|past|previous|coming)"
#: "two weeks ago", "3 years back": a time counted back from when it was said.
# "two Fridays ago": that weekday, counted back. "three and a half years ago", "a month and a half ago".
AGO = (
    rf"{_NUM}\s+(?:{_UNIT}|{_WD}s)\s+(?i:ago|back|earlier)"
    rf"|{_NUM}\s+(?i:and\s+a\s+half)\s+{_UNIT}\s+(?i:ago|back|earlier)"
    rf"|(?i:an?|one)\s+(?i:day|week|month|year|decade)\s+(?i:and\s+a\s+half)\s+(?i:ago|back|earlier)"
    rf"|(?i:half\s+an?)\s+(?i:day|week|month|year|decade)\s+(?i:ago|back|earlier)"
)
#: "in two weeks", "three days from now": a time counted ahead from when it was said. "in N units" is
#: one only of what is ahead ("I'm moving in two weeks"); else it is how long ("I ran it in two days").
AHEAD = rf"(?i:in\s+){_NUM}\s+{_UNIT}(?:['\u2019]?\s+(?i:time))?|{_NUM}\s+{_UNIT}\s+(?i:from\s+(?:now|today))"
# "the end of last year", "the beginning of May 2020": a part of a period, named as the period
_PART_HEAD = rf"(?i:(?:the\s+)?(?:very\s+)?(?:end|beginning|start|middle|(?:first|last)\s+week)\s+of\s+|(?:mid|early|late)[\s-]+(?={_MON}|{_YEAR}(?!\d)))"
_PART_OF = (
    rf"(?:{_REL}\s+(?i:week|month|year|decade)|(?i:the\s+(?:week|month|year))|{_REL}\s+{_MON}|{_REL}\s+(?i:spring|summer|fall|autumn|winter)"
    rf"|{_MON},?\s+{_YEAR}|{_MON}|{_YEAR})"
)

_SEASON = r"(?i:spring|summer|fall|autumn|winter)"
_HOLIDAY = (
    r"(?i:christmas(?:\s+(?:eve|day))?|new\s+year['\u2019]?s(?:\s+(?:eve|day))?|halloween|valentine['\u2019]?s\s+day"
    r"|thanksgiving(?:\s+day)?|easter(?:\s+sunday)?)"
)

# One atom: a single point or period. Alternatives are ordered longest-first.
_ATOM = (
    r"(?:"
    rf"(?P<part>{_PART_HEAD}{_PART_OF})(?![\w])"
    rf"|(?P<iso>{_YEAR}-\d\d-\d\d|{_YEAR}/\d{{1,2}}/\d{{1,2}}(?![/\d]))(?:[T ]\d\d:\d\d(?::\d\d)?(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)?"
    # "Q3 2020", "the third quarter of 2020": three months of that year
    rf"|(?P<quarter>(?i:q)[1-4],?\s+{_YEAR}|{_YEAR}\s+(?i:q)[1-4]"
    rf"|(?i:(?:the\s+)?(?:first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\s+of\s+){_YEAR})"
    r"|(?P<num>\d{1,2}/\d{1,2}/(?:\d{4}|\d\d))"
    # "on 5/1", "until 6/30": a month and day, read as a date only as a bound or a day (see _anchored)
    r"|(?P<md>(?<![/\d])\d{1,2}/\d{1,2})(?![/\d]|\s+of\b)"  # "on 2/3 of the days": a fraction
    rf"|(?P<dmy>(?i:the\s+)?{_ORD}(?:\s+of)?\s+{_MON}(?:,?\s+{_YEAR})?)"
    rf"|(?P<mdy>{_MON}\s+{_ORD}(?:,?\s+{_YEAR})?)(?![\d:])"
    rf"|(?P<my>{_MON},?\s+(?:of\s+)?(?:{_YEAR}|['\u2019]\d\d(?!\d)))"
    rf"|(?P<ago>{AGO})"
    rf"|(?P<ahead>{AHEAD})"
    r"|(?P<dby>(?i:the\s+day\s+before\s+yesterday))"
    r"|(?P<beyond>(?i:the\s+(?:week|month|year|spring|summer|fall|autumn|winter)\s+(?:after\s+next|before\s+last)"
    r"|the\s+day\s+after\s+tomorrow))"
    rf"|(?P<around>(?i:the\s+(?:day|week)\s+(?:before|after)\s+)(?:(?:{_REL}\s+)?{_HOLIDAY}|{_MON}\s+{_ORD}"
    rf"|(?i:the\s+)?{_ORD}\s+(?:of\s+)?{_MON}|{_WD}))"
    rf"|(?P<season>(?i:(?:the\s+)?{_SEASON}(?:\s+of)?\s+){_YEAR}|(?i:the\s+){_SEASON}(?!\s+of\b))"
    rf"|(?P<relholiday>{_REL}\s+{_HOLIDAY})"
    rf"|(?P<holiday>{_HOLIDAY}(?:,?\s+{_YEAR}(?!\d))?)"  # ("Christmas 2019": that year's)
    r"|(?P<weekend>(?i:the\s+weekend))"
    r"|(?P<dom>(?i:the\s+)\d{1,2}(?i:st|nd|rd|th)(?!\s*(?:of\b|[-\u2013]))"
    r"(?!\s+(?!(?:at|and|or|but|so|then|because|when|if|i|we|you|he|she|they|it|for|with|in|to|until|till|through|thru)\b)[a-z]))"
    r"|(?P<word>(?i:yesterday|today|tonight|tomorrow|this\s+(?:morning|afternoon|evening)|last\s+night))"
    rf"|(?P<relunit>{_REL}\s+(?i:week(?:end)?|month|year|decade|wk|yr))"
    rf"|(?P<relmon>{_REL}\s+{_MON})"
    rf"|(?P<relwd>{_REL}\s+{_WD})"
    rf"|(?P<relseason>{_REL}\s+(?i:spring|summer|fall|autumn|winter))"
    rf"|(?P<wd>{_WD})"
    r"|(?P<decade>(?i:the\s+)(?i:(?:early|mid|late)[\s-]+)?(?:(?:19|20)\d0['\u2019]?s|['\u2019]?\d0['\u2019]?s"
    r"|(?i:twenties|thirties|forties|fifties|sixties|seventies|eighties|nineties)))"
    rf"|(?P<year>{_YEAR})"
    r"|(?P<shortyear>['\u2019]\d\d)(?!\d)"
    rf"|(?P<mon>{_MON})"
    r")"
)
_ATOM_RE = re.compile(rf"(?<![\w-]){_ATOM}(?![\w])")

_PART_HEAD_RE = re.compile(_PART_HEAD)
_PLAIN_ATOM = re.sub(r"\(\?P<\w+>", "(?:", _ATOM)
_RANGE_RE = re.compile(
    rf"(?P<lead>\b(?i:from|between)\s+)?(?P<a>(?<![\w-]){_PLAIN_ATOM})"
    rf"(?P<mid>\s*(?:[-\u2013]|\s(?i:to|until|till|through|thru|and)\s)\s*)(?P<b>{_PLAIN_ATOM})(?!\w)"
)
_DAY_RANGE_RE = re.compile(
    rf"(?<![\w-])(?:(?i:from)\s+)?(?P<mon>{_MON})\s+(?P<d1>\d{{1,2}})(?i:st|nd|rd|th)?"
    r"(?:\s*[-\u2013]\s*|\s+(?i:to|through|thru|till|until)\s+(?i:the\s+)?)(?P<d2>\d{1,2})(?i:st|nd|rd|th)?"
    rf"(?![\w:])(?:,?\s+(?P<y>{_YEAR}))?"
)
_PREFIX_RE = re.compile(
    r"(?i:\b(since|from|starting(?:\s+(?:in|on|from))?|as\s+of|beginning(?:\s+in)?|until|till|til|through|thru|up\s+to|ever\s+since)\s+)$"
)
# Whether a text may hold a time at all: yesterday, today, tonight, tomorrow, ago, back, earlier, last,
# this, next, past, previous, coming, the seasons and holidays, the weekdays, night, "-ties", every, each,
# daily ... yearly, annually, weekend, day(s) ... decade(s), a digit or a month. The words are grouped
# by their first letter: the regex engine tried all 43 of them at every position, a tenth of reading a
# LoCoMo turn; grouped, it matches where it did and costs half.
_QUICK = re.compile(
    r"(?i:a(?:go\b|utumn|nnually)|back\b|c(?:oming|hristmas)|d(?:aily|ays?\b|ecades?\b)|e(?:arlier|very|ach)"
    r"|f(?:all|riday|ortnight)|halloween|last|m(?:onday|onthly|onths?\b)|n(?:ext|ight)|p(?:ast|revious)"
    r"|s(?:pring|ummer|aturday|unday)|t(?:oday|onight|omorrow|his|uesday|hursday|ies\b)|valentine"
    r"|w(?:inter|ednesday|eekly|eekend|eeks?\b|ks?\b)|y(?:esterday|early|ears?\b|rs?\b)|thanksgiving|easter)|\d|" + _MON
)

# A bare year or month name is a time only after one of these words ("in 2019", "since March"), or as
# the first half of a range ("2015-2018"); "2000 people" and "May I" are not times.
_ANCHOR_RE = re.compile(
    r"(?i:\b(?:in|of|since|until|till|from|to|through|thru|by|before|after|back|during|around|circa|early|late"
    r"|mid|throughout|for|as\s+of|starting)\s+)$"
)


# A season, a holiday or "the weekend" named bare is a time only after one of these ("in the fall",
# "over the weekend"), a holiday after "for" too ("a bike for Christmas", where "plans for the summer" are
# no time); "I love Christmas" and "the fall was hard" are not times. A day
# of the month alone only as a bound or a day ("until the 15th", "on the 3rd"): "the 5th time" is none.
_NOUN_ANCHOR_RE = re.compile(
    r"(?i:\b(?:in|during|since|until|till|til|from|to|through|thru|by|before|after|over|on|at|around"
    r"|throughout|as\s+of|starting)\s+)$"
)
_BY_RE = re.compile(r"(?i:\bby\s+)$")
_INDEFINITE_RE = re.compile(r"(?i:\ban?\s+)$")
_DAY_ANCHOR_RE = re.compile(r"(?i:\b(?:on|until|till|til|by|since|from|before|after|through|thru|starting|beginning)\s+)$")


def _anchored(m: re.Match[str], text: str) -> bool:
    if m.lastgroup == "wd":
        # "I moved to Denver on a Friday": some Friday, not the last one
        return _INDEFINITE_RE.search(text, max(0, m.start() - 4), m.start()) is None
    if m.lastgroup in ("season", "holiday", "weekend", "dom", "md"):
        if m.lastgroup == "season" and re.search(r"\d", m.group(0)):
            return True
        anchor = _DAY_ANCHOR_RE if m.lastgroup in ("dom", "md") else _NOUN_ANCHOR_RE
        if m.lastgroup == "holiday" and re.search(r"(?i:\bfor\s+)$", text[max(0, m.start() - 5) : m.start()]):
            return True
        return anchor.search(text, max(0, m.start() - 16), m.start()) is not None
    if m.lastgroup not in ("year", "mon", "shortyear"):
        return True
    if _ANCHOR_RE.search(text, max(0, m.start() - 16), m.start()):
        return True
    return (
        m.lastgroup == "year"
        and re.match(rf"\s*[-\u2013]\s*{_YEAR}", text[m.end() : m.end() + 8]) is not None
    )


_PERIOD_ORDER = {"day": 0, "week": 1, "month": 2, "year": 3, "decade": 4}
_DECADE_WORDS = {
    "twenties": 2, "thirties": 3, "forties": 4, "fifties": 5, "sixties": 6, "seventies": 7, "eighties": 8,
    "nineties": 9,
}  # fmt: skip

# "every Saturday", "on Sundays", "each summer", "weekly": a recurrence, never a date.
_WEEKDAY_NAME = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_RECURRING_RE = re.compile(
    # "every Tuesday and Thursday", "every Monday, Wednesday and Friday": one recurrence, the days listed
    # (the second day was read alone as the coming one)
    rf"(?i:\b(?:every|each)\s+{_WEEKDAY_NAME}(?:(?:\s*,\s*(?:and\s+)?|\s+(?:and|&)\s+){_WEEKDAY_NAME})+\b)|"
    r"(?i:\b(?:every|each)\s+(?:other\s+|single\s+|few\s+|couple\s+of\s+)?(?:\d+\s+)?"
    r"(?:days?|nights?|mornings?|evenings?|afternoons?|weeks?|weekends?|months?|years?|summers?|winters?"
    r"|springs?|falls?|autumns?|time|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|\b(?:on\s+)?(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends)\b(?!\s+(?:ago|back|earlier)\b)"
    r"|\b(?:daily|weekly|monthly|yearly|annually|nightly)\b"
    # "the first Monday of the month", "on the last Friday of every month"
    r"|\b(?:the\s+)?(?:first|second|third|fourth|last)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday|weekend|day)\s+of\s+(?:the|each|every)\s+month\b)"
    rf"|\b(?i:every|each)\s+{_MON}\b"
)
# "for three years", "for the past two months": how long, not when.
_DURATION_RE = re.compile(
    rf"(?i:\bfor\s+(?:the\s+(?:past|last)\s+|(?:over|almost|nearly|about|around|roughly|more\s+than)\s+)?)"
    rf"(?P<n>{_NUM})\s+(?P<unit>{_UNIT})(?![\w])"
)


@dataclass(frozen=True)
class TimeExpr:
    start: int  # [start, end) offsets of the expression (with its "since"/"until" word) in the text
    end: int
    text: str
    # "at" (a point/period), "since", "until", "range"; "for" (a duration: ``when`` is the moment of
    # speech minus it, ``until`` the moment plus it); "recurring" ("every Saturday": names no date)
    kind: str
    when: datetime  # start of the named period (for "until": start of the bounding period)
    period: str  # day | week | month | season | third (of a year: "late 2021") | year | decade
    until: datetime | None  # exclusive end, for "until", "range" and "for"
    relative: bool  # True when the expression only makes sense relative to the moment of speech
    yearless: bool = False  # a date whose year was chosen by direction ("October 10", "in April")
    end_period: str | None = None  # of a "range": the period its end names ("to Friday": a day)


@dataclass(frozen=True)
class TimeSpan:
    valid_from: datetime
    valid_to: datetime | None
    exprs: tuple[TimeExpr, ...]


def _floor(dt: datetime, period: str) -> datetime:
    dt = dt.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "decade":
        return dt.replace(year=dt.year // 10 * 10, month=1, day=1)
    if period == "week":
        return dt - timedelta(days=dt.weekday())
    if period == "month":
        return dt.replace(day=1)
    if period == "year":
        return dt.replace(month=1, day=1)
    return dt


def _add_months(dt: datetime, months: int) -> datetime:
    m = dt.month - 1 + months
    y = dt.year + m // 12
    m = m % 12 + 1
    y = max(1, min(9999, y))
    return dt.replace(year=y, month=m, day=min(dt.day, calendar.monthrange(y, m)[1]))


_END_OF_TIME = datetime.max.replace(tzinfo=timezone.utc)  # noqa: UP017


def _period_end(dt: datetime, period: str) -> datetime:
    """Where the period that starts at ``dt`` ends; the end of time where the calendar stops first (a
    day, week, month or year reaching past 9999-12-31), never an overflow and never an end before the
    start. ("on 12/31/9999" in a Context's question raised OverflowError: a 500.) The end of time is
    in UTC: at an offset west of it, it could not be turned into UTC to be stored or served."""
    months = {"decade": 120, "year": 12, "third": 4, "season": 3, "quarter": 3, "month": 1}.get(period)
    if months is not None:
        if dt.year * 12 + dt.month - 1 + months > 9999 * 12 + 11:
            return _END_OF_TIME
        return _add_months(dt, months)
    try:
        return dt + timedelta(days=7 if period == "week" else 1)
    except OverflowError:
        return _END_OF_TIME


def _holiday_day(name: str, year: int, tz: tzinfo | None) -> datetime:
    """The day a holiday falls on in ``year``: a fixed one from _HOLIDAYS; Thanksgiving (the US one,
    the fourth Thursday of November) and Easter Sunday (the Gregorian computus) move."""
    name = name.removesuffix(" day").removesuffix(" sunday") if name.startswith(("thanksgiving", "easter")) else name
    if name == "thanksgiving":
        first = date(year, 11, 1)
        return datetime(year, 11, 1 + (3 - first.weekday()) % 7 + 21, tzinfo=tz)
    if name == "easter":
        a, b, c = year % 19, year // 100, year % 100
        d, e = divmod(b, 4)
        g = (8 * b + 13) // 25
        h = (19 * a + b - d - g + 15) % 30
        i, k = divmod(c, 4)
        n = (32 + 2 * e + 2 * i - h - k) % 7
        m = (a + 11 * h + 19 * n) // 433
        month = (h + n - 7 * m + 90) // 25
        return datetime(year, month, (h + n - 7 * m + 33 * month + 19) % 32, tzinfo=tz)
    month, day = _HOLIDAYS[name]
    return datetime(year, month, day, tzinfo=tz)


def _month_of(token: str) -> int:
    return _MONTHS[token.lower().rstrip(".")]


def _resolve_atom(
    m: re.Match[str], base: datetime, future: bool = False
) -> tuple[datetime, str, bool] | None:
    """(start of period, period, relative?) for one matched atom; None when it cannot be resolved.
    ``future``: a date without a year (and a bare weekday) is the next one, not the latest."""
    g = m.lastgroup
    s = m.group(0)
    low = " ".join(s.lower().split())
    if low.startswith("this past "):
        low = "past " + low.removeprefix("this past ")
    if low.startswith("this coming "):
        low = "coming " + low.removeprefix("this coming ")
    day0 = _floor(base, "day")
    try:
        if g == "part":
            head = _PART_HEAD_RE.match(s)
            whole = _ATOM_RE.fullmatch(re.sub(r"(?i)^the\b", "this", s[head.end() :]))  # type: ignore[union-attr]
            got = _resolve_atom(whole, base, future) if whole is not None else None
            if got is None or got[1] != "year" or "middle" in head.group(0).lower():  # type: ignore[union-attr]
                return got
            third = re.match(r"(?i:(early|mid|late))", head.group(0))  # type: ignore[union-attr]
            if third is not None:
                # "early 2021", "mid-2020", "late 2021": about a third of the year, its first, middle or
                # last four months (read as the whole year, "late 2021" had started in January)
                month = {"early": 1, "mid": 5, "late": 9}[third.group(1).lower()]
                return got[0].replace(month=month), "third", got[2]
            if not re.search(r"(?i:end|beginning|start|week)", head.group(0)):  # type: ignore[union-attr]
                return got
            # a year's end or beginning is its last or first month (its middle is no narrower than it)
            month = 12 if re.search(r"(?i:end|last)", head.group(0)) else 1  # type: ignore[union-attr]
            return got[0].replace(month=month), "month", got[2]
        if g in ("iso", "a_iso"):
            y, mo, dd = (int(n) for n in re.findall(r"\d+", s)[:3])
            return datetime(y, mo, dd, tzinfo=base.tzinfo), "day", False
        if g == "md":
            return _month_day(s, base, future)
        if g == "year":
            return datetime(int(s), 1, 1, tzinfo=base.tzinfo), "year", False
        if g == "shortyear":  # "back in '19" (ValueError before the year 1)
            return datetime(_latest_year(int(s[1:]), base), 1, 1, tzinfo=base.tzinfo), "year", True
        if g == "decade":
            return _decade(low, base), "decade", False
        if g == "word" or g == "dby":
            if low == "the day before yesterday":
                return day0 - timedelta(days=2), "day", True
            offset = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(low, 0)
            return day0 + timedelta(days=offset), "day", True
        if g == "ago" and " and a half " in low:
            return _ago_and_a_half(low, base)
        if g == "ago" and low.startswith("half "):
            return _half_ago(low.split(" ")[2], base)
        if g == "ago":
            parts = low.rsplit(" ", 2)
            n = _NUMBERS.get(parts[0]) if not parts[0].isdigit() else int(parts[0])
            if n is None or n > 5000:
                return None
            # As precise as its unit: "two weeks ago" is a week, "three years ago" a year, never a day
            n, unit = _count_of(n, parts[1])
            if unit in _WEEKDAYS:  # "two Fridays ago": the last Friday before today, and one more back
                return day0 - timedelta(days=((day0.weekday() - _WEEKDAYS[unit]) % 7 or 7) + 7 * (n - 1)), "day", True
            if unit == "day":
                return day0 - timedelta(days=n), "day", True
            if unit == "week":
                return _floor(day0 - timedelta(weeks=n), "week"), "week", True
            if unit == "month":
                return _floor(_add_months(day0, -n), "month"), "month", True
            years = n * (10 if unit == "decade" else 1)
            return _floor(_add_months(day0, -12 * years), "year"), "year", True
        if g == "ahead":
            count = re.sub(r"^in\s+|['\u2019]?\s+time$|\s+from\s+\w+$", "", low)
            raw, unit = count.rsplit(" ", 1)
            n = int(raw) if raw.isdigit() else _NUMBERS.get(raw)
            if n is None or n > 5000:
                return None
            # as precise as its unit, as a time counted back is
            n, unit = _count_of(n, unit)
            if unit == "day":
                return day0 + timedelta(days=n), "day", True
            if unit == "week":
                return _floor(day0 + timedelta(weeks=n), "week"), "week", True
            if unit == "month":
                return _floor(_add_months(day0, n), "month"), "month", True
            years = n * (10 if unit == "decade" else 1)
            return _floor(_add_months(day0, 12 * years), "year"), "year", True
        if g == "beyond":
            if low == "the day after tomorrow":
                return day0 + timedelta(days=2), "day", True
            unit, step = low.split(" ")[1], 2 if low.endswith("next") else -2
            if unit in _SEASONS:  # "the summer before last": a year before last summer
                got = _resolve_atom(_ATOM_RE.fullmatch(f"{'next' if step > 0 else 'last'} {unit}"), base, future)  # type: ignore[arg-type]
                return (got[0].replace(year=got[0].year + step // 2), "season", True) if got else None
            if unit == "week":
                return _floor(day0, "week") + timedelta(weeks=step), "week", True
            if unit == "month":
                return _add_months(_floor(day0, "month"), step), "month", True
            return _floor(day0, "year").replace(year=base.year + step), "year", True
        if g == "around":
            # "the week before Christmas", "the day after May 5th": a day or a week beside a day
            head = re.match(r"(?i:the\s+(day|week)\s+(before|after)\s+)", s)
            inner = _ATOM_RE.fullmatch(s[head.end() :])  # type: ignore[union-attr]
            got = _resolve_atom(inner, base, future) if inner is not None else None
            if got is None or got[1] != "day":
                return None
            unit, side = head.group(1).lower(), head.group(2).lower()  # type: ignore[union-attr]
            step = timedelta(days=1 if unit == "day" else 7) * (1 if side == "after" else -1)
            return _floor(got[0] + step, unit), unit, True
        if g == "quarter":
            year = int(re.search(_YEAR, s).group(0))  # type: ignore[union-attr]
            digit = re.search(r"(?i:q)([1-4])", s)
            nth = int(digit.group(1)) if digit else _QUARTERS[re.match(r"(?i:(?:the\s+)?(\w+))", s).group(1).lower()]  # type: ignore[union-attr]
            return datetime(year, 3 * nth - 2, 1, tzinfo=base.tzinfo), "quarter", False
        if g == "season":
            year_match = re.search(_YEAR, s)
            month = _SEASONS[re.search(_SEASON, s).group(0).lower()]  # type: ignore[union-attr]
            if year_match:
                return datetime(int(year_match.group(0)), month, 1, tzinfo=base.tzinfo), "season", False
            # "in the fall": the next one (one under way included) of what is ahead, else the latest begun
            start = datetime(base.year, month, 1, tzinfo=base.tzinfo)
            if future:
                while _add_months(start, 3) <= day0:
                    start = start.replace(year=start.year + 1)
            else:
                while start > day0:
                    start = start.replace(year=start.year - 1)
            return start, "season", True
        if g in ("holiday", "relholiday"):
            rel = low.split(" ", 1)[0] if g == "relholiday" else ""
            name = re.sub(r"^(?:last|this|next|past|previous|coming)\s+", "", low).replace("\u2019", "'")
            year = re.search(rf",?\s+({_YEAR})$", name)
            if year is not None:
                return _holiday_day(name[: year.start()], int(year.group(1)), base.tzinfo), "day", False
            when = _holiday_day(name, base.year, base.tzinfo)
            # "last Christmas": the latest before today (bare, of the past: on or before); "next": after
            back = rel in ("last", "past", "previous") or (not rel and not future)
            ahead = rel in ("next", "coming") or (not rel and future)
            if back and (when > day0 or (rel and when == day0)):
                when = _holiday_day(name, base.year - 1, base.tzinfo)
            elif ahead and (when < day0 or (rel and when == day0)):
                when = _holiday_day(name, base.year + 1, base.tzinfo)
            return when, "day", True
        if g == "weekend":
            # the weekend ahead (one under way included) of what is ahead, else the latest begun
            sat = day0 - timedelta(days=(day0.weekday() - 5) % 7)
            if future and day0.weekday() < 5:
                sat += timedelta(days=7)
            return sat, "day", True
        if g == "dom":
            # "until the 15th": the 15th of this month, or the next (latest) month with one
            day = int(re.search(r"\d+", s).group(0))  # type: ignore[union-attr]
            month0 = _floor(day0, "month")
            for k in range(13):
                first = _add_months(month0, k if future else -k)
                if day > calendar.monthrange(first.year, first.month)[1]:
                    continue
                when = first.replace(day=day)
                if (when >= day0) if future else (when <= day0):
                    return when, "day", True
            return None
        if g == "relunit":
            rel, unit = low.split(" ", 1)
            unit = _SHORT_UNITS.get(unit, unit)
            step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[rel]
            if unit == "weekend":
                sat = day0 - timedelta(days=(day0.weekday() - 5) % 7)  # latest Saturday on or before today
                in_weekend = day0.weekday() >= 5
                if step < 0:
                    return sat - timedelta(days=7) if in_weekend else sat, "day", True
                this_sat = sat if in_weekend else day0 + timedelta(days=(5 - day0.weekday()) % 7)
                if rel == "coming":  # "(this) coming weekend": the next to come, as "coming Friday" is
                    step = 0 if not in_weekend or day0.weekday() == 5 else 1
                return this_sat + timedelta(days=7 * step), "day", True
            if unit == "week":
                return _floor(day0, "week") + timedelta(weeks=step), "week", True
            if unit == "month":
                return _add_months(_floor(day0, "month"), step), "month", True
            if unit == "decade":
                return _floor(day0, "year").replace(year=(base.year // 10 + step) * 10), "year", True
            return _floor(day0, "year").replace(year=base.year + step), "year", True
        if g == "relmon":
            rel, mon = low.split(" ", 1)
            month = _month_of(mon)
            if rel in ("last", "past", "previous"):
                # "last March" is the most recent March before the current month: said in May 2024 it
                # means March 2024; said in March or February 2024 it means March 2023.
                year = base.year if month < base.month else base.year - 1
            elif rel == "this":
                year = base.year
            else:
                year = base.year if month > base.month else base.year + 1
            return datetime(year, month, 1, tzinfo=base.tzinfo), "month", True
        if g == "mon":
            month = _month_of(s)
            if future:
                year = base.year if month >= base.month else base.year + 1
            else:
                year = base.year if month <= base.month else base.year - 1
            return datetime(year, month, 1, tzinfo=base.tzinfo), "month", True
        if g == "relseason":
            rel, season = low.split(" ", 1)
            start = datetime(base.year, _SEASONS[season], 1, tzinfo=base.tzinfo)
            if rel in ("last", "past", "previous"):
                while _add_months(start, 3) > day0:  # the latest season of that name already over
                    start = start.replace(year=start.year - 1)
            elif rel == "this":
                if start.month == 12 and base.month < 3:
                    start = start.replace(year=start.year - 1)
            else:
                while start <= day0:
                    start = start.replace(year=start.year + 1)
            return start, "season", True
        if g in ("relwd", "wd"):
            parts = low.split(" ")
            rel = parts[0] if g == "relwd" else "on"
            wd = _WEEKDAYS[parts[-1]]
            delta = (day0.weekday() - wd) % 7
            if rel == "on" and future:
                return day0 + timedelta(days=(wd - day0.weekday()) % 7 or 7), "day", True
            if rel in ("last", "past", "previous", "on"):
                return day0 - timedelta(days=delta or 7), "day", True
            if rel == "this":
                return _floor(day0, "week") + timedelta(days=wd), "day", True
            ahead = (wd - day0.weekday()) % 7 or 7
            return day0 + timedelta(days=ahead), "day", True
    except (ValueError, OverflowError, KeyError):
        return None
    if g in ("dmy", "mdy", "my"):
        return _month_named_date(s, base, future)
    # numeric dates: dateparser
    got = _numeric_date(low, base.replace(tzinfo=None))
    if got is None:
        return None
    dt, period = got
    return dt.replace(tzinfo=base.tzinfo), period, False


_MONTH_NAME_RE = re.compile(_MON)
_DAY_RE = re.compile(r"(?<!\d)(\d{1,2})(?!\d)")


def _month_day(fragment: str, base: datetime, future: bool) -> tuple[datetime, str, bool] | None:
    """ "5/1": month first, as a numeric date with a year is read ("5/1/2023" is 1 May), unless the first
    number cannot be a month ("13/4": 13 April); its year is chosen by direction as "May 1" would be."""
    first, second = (int(n) for n in fragment.split("/"))
    month, day = (first, second) if first <= 12 else (second, first)
    if not 1 <= month <= 12 or day < 1:
        return None
    return _month_named_date(f"{calendar.month_name[month]} {day}", base, future)


def _count_of(n: int, unit: str) -> tuple[int, str]:
    """``n`` of a unit as a count of the unit it is told in: "two fortnights" are four weeks."""
    unit = unit.lower().rstrip("s")
    unit = _SHORT_UNITS.get(unit, unit)
    return (2 * n, "week") if unit == "fortnight" else (n, unit)


def _half_ago(unit: str, base: datetime) -> tuple[datetime, str, bool] | None:
    """ "half a year ago": six months back, as precise as what a half of the unit is (a month, a week)."""
    day0 = _floor(base, "day")
    if unit == "day":
        return day0, "day", True
    if unit == "week":
        return day0 - timedelta(days=3), "day", True
    if unit == "month":
        return _floor(day0 - timedelta(days=15), "week"), "week", True
    if unit == "year":
        return _floor(_add_months(day0, -6), "month"), "month", True
    if unit == "decade":
        return _floor(_add_months(day0, -60), "year"), "year", True
    return None


def _ago_and_a_half(low: str, base: datetime) -> tuple[datetime, str, bool] | None:
    """ "three and a half years ago", "a month and a half ago": the moment that far back, as precise as
    its unit (a year, a month: never the day a half would pretend to)."""
    count, unit = re.sub(r"\s+and a half\b", "", low).rsplit(" ", 2)[:2]
    n = int(count) if count.isdigit() else _NUMBERS.get(count)
    if n is None or n > 5000:
        return None
    n, unit = _count_of(n, unit)
    if unit == "day":
        return _floor(base - timedelta(days=n, hours=12), "day"), "day", True
    if unit == "week":
        return _floor(base - timedelta(days=7 * n + 3, hours=12), "week"), "week", True
    if unit == "month":
        return _floor(_add_months(base, -n) - timedelta(days=15), "month"), "month", True
    months = {"year": 12, "decade": 120}[unit] * (2 * n + 1) // 2
    return _floor(_add_months(base, -months), "year"), "year", True


def _latest_year(last_two: int, base: datetime) -> int:
    """The latest year, on or before ``base``'s, whose last two digits are ``last_two`` ("'19", "the 90s",
    "Jan '22"); below 1 when there is none."""
    year = base.year // 100 * 100 + last_two
    return year if year <= base.year else year - 100


def _decade(low: str, base: datetime) -> datetime:
    """ "the 1990s" -> 1990; "the 90s", "the nineties" -> the latest such decade begun by ``base``'s year."""
    digits = re.search(r"\d+", low)
    if digits and len(digits.group(0)) == 4:
        return datetime(int(digits.group(0)), 1, 1, tzinfo=base.tzinfo)
    tens = int(digits.group(0)) // 10 if digits else _DECADE_WORDS[low.split()[-1]]
    return datetime(max(_latest_year(tens * 10, base), 1), 1, 1, tzinfo=base.tzinfo)


def _month_named_date(
    fragment: str, base: datetime, future: bool = False
) -> tuple[datetime, str, bool] | None:
    """ "16 March 2022", "March 16th", "the 5th of May", "October 2023": a day (or a month when no day
    is written); without a year, the latest such date on or before ``base``'s day (``future``: the
    earliest on or after it; a month named without a day counts from the month ``base`` is in)."""
    month = _month_of(_MONTH_NAME_RE.search(fragment).group(0))  # type: ignore[union-attr]
    year_match = re.search(_YEAR, fragment)
    rest = fragment.replace(year_match.group(0), " ") if year_match else fragment
    short = re.search(r"['\u2019](\d\d)$", fragment) if year_match is None else None
    if short is not None:  # "Jan '22", rendered whole (none before the year 1)
        year = _latest_year(int(short.group(1)), base)
        return (datetime(year, month, 1, tzinfo=base.tzinfo), "month", True) if year >= 1 else None
    day_match = _DAY_RE.search(rest)
    day = int(day_match.group(1)) if day_match else 1
    period = "day" if day_match else "month"
    today = _floor(base, "day" if day_match else "month").replace(tzinfo=None)
    if year_match:
        years: range | list[int] = [int(year_match.group(0))]
    elif future:
        years = range(today.year, today.year + 9)
    else:
        years = range(today.year, today.year - 9, -1)
    for year in years:
        try:
            when = datetime(year, month, day)
        except ValueError:  # "31 April"; "29 February" in a common year
            continue
        if year_match or (when >= today if future else when <= today):
            return when.replace(tzinfo=base.tzinfo), period, year_match is None
    return None


def warm_up() -> None:
    """Load dateparser now: its first call takes about a fifth of a second, which must not land inside
    a request (a Context whose query holds a numeric date)."""
    _dateparser("3/4/2021", datetime(2000, 1, 1))


# The numeric dates parsed while one text is read (see one_text_s_dates), or None outside such a read.
_TEXT_S_DATES: ContextVar[dict[tuple[str, datetime], tuple[datetime, str] | None] | None] = ContextVar(
    "brainstore_text_s_dates", default=None
)


@contextmanager
def one_text_s_dates() -> Iterator[None]:
    """Within the block each numeric date and base is given to dateparser once (about 1.5 ms a call):
    a document that repeats a date costs one call. Held only while one text is read: a cache shared by
    every text had kept a forgotten Record's dates, and a hit (a fragment and a base another tenant's
    text gave) answers faster than a miss."""
    if _TEXT_S_DATES.get() is not None:
        yield
        return
    token = _TEXT_S_DATES.set({})
    try:
        yield
    finally:
        _TEXT_S_DATES.reset(token)


def _numeric_date(fragment: str, base: datetime) -> tuple[datetime, str] | None:
    held = _TEXT_S_DATES.get()
    if held is None:
        return _dateparser(fragment, base)
    key = (fragment, base)
    if key not in held:
        held[key] = _dateparser(fragment, base)
    return held[key]


def _dateparser(fragment: str, base: datetime) -> tuple[datetime, str] | None:
    from dateparser.date import DateDataParser

    settings = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "PREFER_DAY_OF_MONTH": "first",
        "RETURN_AS_TIMEZONE_AWARE": False,
        "STRICT_PARSING": False,
    }
    try:
        with warnings.catch_warnings():
            # dateparser (and the regex/pytz stack below it) may warn about its own internals; those are
            # not ours to act on, and a warning must never turn a time phrase into a failed derivation.
            warnings.simplefilter("ignore")
            got = DateDataParser(languages=["en"], settings=settings).get_date_data(fragment)
    except Exception:
        return None
    if got is None or got.date_obj is None:
        return None
    period = got.period if got.period in _PERIOD_ORDER else "day"
    dt = got.date_obj
    if dt.tzinfo is not None:
        dt = dt.replace(tzinfo=None)
    return _floor(dt, period), period


_YEARLESS = ("mon", "dmy", "mdy", "holiday", "season", "md")


def _lend_year(a: tuple[datetime, str, bool], b: tuple[datetime, str, bool]) -> tuple[datetime, str, bool]:
    """ "from May to July 2022": the first half takes the second's year (the year before, when that would
    put it after the second: "from November to February 2022")."""
    when = a[0]
    try:
        moved = when.replace(year=b[0].year)
        if moved > b[0]:
            moved = moved.replace(year=b[0].year - 1)
    except ValueError:  # 29 February
        return a
    return moved, a[1], False


def find_time_expressions(
    text: str,
    base: datetime,
    *,
    future: bool = False,
    bounds_ahead: bool | None = None,
    weekdays_ahead: bool | None = None,
    limit: int | None = None,
) -> list[TimeExpr]:
    """Every time expression in ``text`` resolved against ``base`` (tz-aware), in order of position.
    ``future``: the text speaks of what is ahead ("I fly to Tokyo on October 10"), so a date without a
    year is the next such date; otherwise the latest. ``bounds_ahead`` does the same for "until" (by
    default as ``future``; "I'm in Paris until June 20" is ahead though its tense is the present), and
    ``weekdays_ahead`` for a bare weekday ("I have a dentist appointment on Friday" is the coming one).
    "last"/"next"/"ago"/"since" say which way they point themselves.
    ``limit``: at most this many expressions are looked at, resolved or not (each may cost two calls to
    dateparser): the first recurrences, then durations, ranges and single times, in that order."""
    if bounds_ahead is None:
        bounds_ahead = future
    if weekdays_ahead is None:
        weekdays_ahead = future
    if not text or not _QUICK.search(text):
        return []
    out: list[TimeExpr] = []
    taken: list[tuple[int, int]] = []  # the spans of the expressions found, apart, in order
    looked = 0  # expressions looked at, against ``limit``

    def free(a: int, b: int) -> bool:
        # The spans are apart: of those starting before b, the last ends last. (A scan of them all was
        # quadratic in a text of many times.)
        before = bisect_left(taken, (b, -1))
        return before == 0 or taken[before - 1][1] <= a

    def more() -> bool:
        return limit is None or looked < limit

    tense: list[str] = []  # the text's, read once: a long clause may count ahead many times

    def text_tense() -> str:
        if not tense:
            tense.append(tense_of(text))
        return tense[0]

    def a_time(m: re.Match[str]) -> bool:
        # "in two days" is a time where the clause speaks of what is ahead ("I'm moving in two weeks"),
        # how long it took or takes else ("I ran it in two days", "I can finish one in two days")
        if m.lastgroup != "ahead" or m.group(0)[:2].lower() != "in":
            return True
        if not future:
            return False
        return text_tense() in ("future", "progressive")

    for m in _RECURRING_RE.finditer(text):
        if not more():
            break
        looked += 1
        out.append(TimeExpr(m.start(), m.end(), m.group(0), "recurring", base, "day", None, False))
        insort(taken, (m.start(), m.end()))

    for m in _DURATION_RE.finditer(text):
        if not more():
            break
        if not free(m.start(), m.end()):
            continue
        looked += 1
        raw = " ".join(m.group("n").lower().split())
        n = int(raw) if raw.isdigit() else _NUMBERS.get(raw)
        if n is None or n > 500:
            continue
        n, unit = _count_of(n, m.group("unit"))
        months = {"month": n, "year": 12 * n, "decade": 120 * n}.get(unit)
        day0 = _floor(base, "day")
        try:
            if months is None:
                span = timedelta(days=n * (7 if unit == "week" else 1))
                back, ahead = day0 - span, day0 + span
            else:
                back, ahead = _add_months(day0, -months), _add_months(day0, months)
        except (ValueError, OverflowError):
            continue
        out.append(TimeExpr(m.start(), m.end(), m.group(0), "for", back, "day", ahead, False))
        insort(taken, (m.start(), m.end()))

    for r in _DAY_RANGE_RE.finditer(text):
        # "May 10-15", "June 3rd - 7th, 2024": days of one month
        if not more():
            break
        first, last = int(r.group("d1")), int(r.group("d2"))
        if not free(r.start(), r.end()) or not first < last <= 31:
            continue
        looked += 1
        year = f" {r.group('y')}" if r.group("y") else ""
        got = _month_named_date(f"{r.group('mon')} {first}{year}", base, future)
        if got is None or last > calendar.monthrange(got[0].year, got[0].month)[1]:
            continue
        out.append(
            TimeExpr(
                r.start(), r.end(), r.group(0), "range", got[0], "day", _period_end(got[0].replace(day=last), "day"),
                got[2], end_period="day",
            )
        )  # fmt: skip
        insort(taken, (r.start(), r.end()))

    # A range's first half is an atom _ATOM_RE matches where it stands (the same atom, after no word
    # character and before a space or a dash): a text with no atom holds no range either, and the
    # range's scan, the costliest here, is spared.
    atoms = list(_ATOM_RE.finditer(text))
    for r in _RANGE_RE.finditer(text) if atoms else ():
        if not more():
            break
        if not free(r.start(), r.end()):
            continue
        ma = _ATOM_RE.fullmatch(r.group("a"))
        mb = _ATOM_RE.fullmatch(r.group("b"))
        mid = r.group("mid").strip().lower()
        if ma is None or mb is None or (mid == "and" and not r.group("lead")):
            continue
        if not (a_time(ma) and a_time(mb)):
            continue
        if (
            mid in ("-", "\u2013")
            and not (ma.lastgroup == "year" or ma.group(0).isdigit())
            and not r.group("lead")
        ):
            continue
        if (
            not r.group("lead")
            and ma.lastgroup in ("year", "mon")
            and not (mid in ("-", "\u2013") or _ANCHOR_RE.search(text, max(0, r.start() - 16), r.start()))
        ):
            continue
        if (
            {ma.lastgroup, mb.lastgroup} & {"dom", "md"}
            and not r.group("lead")
            and not _DAY_ANCHOR_RE.search(text, max(0, r.start() - 16), r.start())
        ):
            continue  # "the 5th to the 10th" or "3/4 to 4/5" is a date only where a day is (see _anchored)
        looked += 1
        # a weekday in a range points as a bare one does ("I'll be in Tokyo from Monday to Friday": the
        # coming Monday, in any tense that is not past), and a weekday ending it is the first on or
        # after its start (that Monday's Friday)
        ra = _resolve_atom(ma, base, weekdays_ahead if ma.lastgroup == "wd" else future)
        rb = _resolve_atom(mb, base, weekdays_ahead if mb.lastgroup == "wd" else future)
        if ra is None or rb is None:
            continue
        if mb.lastgroup == "wd" and ra[1] == "day":
            rb = ra[0] + timedelta(days=(_WEEKDAYS[mb.group(0).lower()] - ra[0].weekday()) % 7), "day", True
        if ma.lastgroup == "dom" and mb.lastgroup == "dom":
            # "from the 10th to the 15th": the end taken the way the clause points, the start the latest
            # such day before it (said on the 12th, the 10th of this month: a stay under way)
            ra = _resolve_atom(ma, rb[0] - timedelta(days=1))
            if ra is None:
                continue
            if future and ra[0] < _floor(base, "day") and text_tense() == "future":
                # "I'll be in London from the 3rd to the 10th" (said on the 8th): a stay to come, none under
                # way, from the next 3rd to the first 10th after it
                ra = _resolve_atom(ma, base, True)
                rb = _resolve_atom(mb, ra[0], True) if ra is not None else None
                if ra is None or rb is None:
                    continue
        # "from May to July": one range, its end taken the way the clause points, its start in that
        # end's year; each half read alone had put May this year and July the last, a range reversed
        if ma.lastgroup in _YEARLESS and ra[2] and (not rb[2] or mb.lastgroup in _YEARLESS):
            ra = _lend_year(ra, rb)
        until = _period_end(rb[0], rb[1])
        if until <= ra[0]:
            continue
        start = r.start("lead") if r.group("lead") else r.start("a")
        out.append(
            TimeExpr(
                start, r.end(), text[start : r.end()], "range", ra[0], ra[1], until, ra[2] or rb[2], end_period=rb[1]
            )
        )
        insort(taken, (start, r.end()))

    for m in atoms:
        if not more():
            break
        if not free(m.start(), m.end()) or not _anchored(m, text) or not a_time(m):
            continue
        looked += 1
        p = _PREFIX_RE.search(text, max(0, m.start() - 24), m.start())
        word = p.group(1).lower() if p is not None else ""
        # "since March" looks back whatever the tense; "until June 20" follows the tense, and so does a
        # start ("from Thursday", "starting in June") as the time alone would
        bound = word.startswith(("until", "till", "til", "through", "thru", "up")) if word else False
        # "by June 15", "by the 15th": a deadline points as a bound does ("I need to pay rent by the 15th"
        # is the coming one unless told in the past), though it dates the clause as a time at it
        bound = bound or (not word and _BY_RE.search(text, max(0, m.start() - 4), m.start()) is not None)
        ahead = weekdays_ahead if m.lastgroup == "wd" else future
        res = _resolve_atom(m, base, bounds_ahead if bound else ahead and not word.startswith(("since", "ever")))
        if res is None:
            continue
        when, period, relative = res
        start, kind, until = m.start(), "at", None
        if p is not None:
            start = p.start(1)
            if word.startswith(("until", "till", "til", "through", "thru", "up")):
                kind, until = "until", _period_end(when, period)
            else:
                kind = "since"
        yearless = relative and m.lastgroup in _YEARLESS
        out.append(
            TimeExpr(start, m.end(), text[start : m.end()], kind, when, period, until, relative, yearless)
        )
        insort(taken, (start, m.end()))
    out.sort(key=lambda e: e.start)
    return _yearless_beside_a_year(out)


def _yearless_beside_a_year(exprs: list[TimeExpr]) -> list[TimeExpr]:
    """A date without a year beside a time of another year ("I moved in 2019, right after Christmas",
    "three years ago, in March") is of the year the text set, not the latest one before the moment of
    speech; which of that year's neighbours it is ("after Christmas" in 2019 may be the Christmas of
    2018) the text does not say. It is kept as said and dates nothing, as a recurrence is: no year
    rather than a wrong one."""
    years = {x.when.year for x in exprs if not x.yearless and x.kind in ("at", "since", "until", "range")}
    if not any(x.yearless and x.when.year not in years for x in exprs) or not years:
        return exprs
    return [
        replace(x, kind="recurring", relative=False) if x.yearless and x.when.year not in years else x
        for x in exprs
    ]


def named_periods(text: str, base: datetime, *, limit: int | None = None) -> list[tuple[datetime, datetime]]:
    """[start, end) of each period ``text`` names outright ("in October 2023", "on 16 March 2022",
    "from 2015 to 2018", "last week"), relative forms resolved against ``base``. Open bounds
    ("since May", "until 2020", "as of June") name no period: they say where a span starts or ends,
    not when the thing asked about happened; nor do durations and recurrences. Of the text's time
    expressions only ``limit`` are looked at (see find_time_expressions), and each numeric date is
    parsed once (a query repeating "3/4/2021" 1,111 times parsed it 1,111 times, 1.1 s)."""
    periods = []
    with one_text_s_dates():
        exprs = find_time_expressions(text, base, limit=limit)
    for expr in exprs:
        if expr.kind == "at":
            periods.append((expr.when, _period_end(expr.when, expr.period)))
        elif expr.kind == "range" and expr.until is not None:
            periods.append((expr.when, expr.until))
    return periods


# ------------------------------------------------------------------------------------------- tense

_FUTURE_RE = re.compile(
    r"(?i:\b(?:will|shall|won't|wont|gonna|about\s+to|going\s+to(?!\s+(?:the|a|an|my|his|her|our|their|bed|school|work|church|class)\b)"
    r"|plan(?:s|ning)?\s+(?:to|on)|intend(?:s|ing)?\s+to|scheduled\s+to|hop(?:e|es|ing)\s+to"
    r"|look(?:s|ing)?\s+forward\s+to|can(?:'t|not|\s+not)\s+wait)\b|['\u2019]ll\b)"
)
_PERFECT_RE = re.compile(
    r"(?i:\b(?:have|has|['\u2019]ve|ive)\s+(?:(?:not|never|just|already|always|really|finally|recently|also|been\s+\w+ing)\s+)*"
    r"(?:been|had|done|gone|seen|known|lived|worked|[a-z]+ed|[a-z]+en)\b)"
)
_PAST_AUX = {"was", "were", "did", "didn't", "wasn't", "weren't", "had", "hadn't", "used"}
_PRESENT_AUX = {
    "am",
    "is",
    "are",
    "'m",
    "'re",
    "'s",
    "im",
    "do",
    "does",
    "don't",
    "doesn't",
    "isn't",
    "aren't",
}
_IRREGULAR_PAST = {
    "went", "got", "made", "took", "saw", "came", "ran", "met", "left", "began", "bought", "brought",
    "thought", "felt", "found", "gave", "heard", "kept", "knew", "lost", "paid", "said", "sent", "sat",
    "spent", "stood", "told", "won", "wrote", "became", "chose", "drove", "ate", "fell", "flew", "forgot",
    "grew", "quit", "rode", "sang", "sold", "slept", "spoke", "swam", "taught", "threw", "woke", "wore",
    "built", "caught", "drew", "fought", "held", "led", "meant", "broke", "hid", "hit", "moved", "lived",
}  # fmt: skip
# "-ed" words that are adjectives far more often than past verbs after a subject ("I'm excited")
_ED_ADJECTIVES = {
    "excited",
    "interested",
    "tired",
    "bored",
    "scared",
    "worried",
    "married",
    "engaged",
    "pleased",
    "stressed",
    "overwhelmed",
    "inspired",
    "motivated",
    "obsessed",
    "amazed",
    "thrilled",
    "blessed",
}
_TOKEN_RE = re.compile(r"[A-Za-z']+|\S")
_SUBJECT_PRONOUNS = FIRST_SG | FIRST_PL | SECOND | THIRD_SG | {"it", "they"}
# between a subject and its verb, telling no tense: "I just moved", "she really likes", "we then left"
_TENSELESS_ADVERBS = ADVERBS | {"then", "first", "last", "newly", "soon", "ever", "so"}


def tense_of(clause: str, *, verb_first: bool = False) -> str:
    """The tense of a clause's main verb: "future", "perfect", "past", "progressive" (present, "is
    visiting") or "present". A cheap reading of the first verb group, for deciding which way a date
    without a year points and whether a stated state is over; "present" when nothing tells.
    ``verb_first``: the clause is a predicate, its verb (after any adverbs) its first word."""
    low = clause.replace("\u2019", "'")
    if _FUTURE_RE.search(low):
        return "future"
    if _PERFECT_RE.search(low):
        return "perfect"
    toks = [t.lower() for t in _TOKEN_RE.findall(low)[:8]]
    verb_at = _verb_at(toks, verb_first)
    for i, tok in enumerate(toks):
        if tok in _PAST_AUX:
            return "past"
        if tok in _PRESENT_AUX or tok.endswith(("'m", "'re")):
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if len(nxt) > 4 and nxt.endswith("ing"):
                return "progressive"
            return "present"
        if tok in _IRREGULAR_PAST or (len(tok) > 4 and tok.endswith("ed") and tok not in _ED_ADJECTIVES):
            return "past"
        if i == verb_at:
            # the verb is neither past nor an auxiliary: "(I) live in a town called Ely" is in the present,
            # whatever participle ("called", "named", "based") its object holds
            return "present"
    return "present"


def _verb_at(toks: list[str], verb_first: bool) -> int:
    """Where the main verb is, when the clause shows it: first (a predicate), or after a subject pronoun,
    past adverbs that tell no tense; -1 when a noun phrase may come first ("My sister moved ...")."""
    at = 0 if verb_first else 1 if toks and toks[0] in _SUBJECT_PRONOUNS else -1
    if at < 0:
        return -1
    while at < len(toks) and toks[at] in _TENSELESS_ADVERBS:
        at += 1
    return at


# Verbs whose simple present with a date speaks of a plan ("I fly to Tokyo on October 10", "we meet on
# Friday"); a state in the present ("my birthday is June 5") does not point anywhere.
_SCHEDULED_VERBS = {
    "fly", "flies", "leave", "leaves", "go", "goes", "come", "comes", "start", "starts", "begin", "begins",
    "arrive", "arrives", "return", "returns", "travel", "travels", "visit", "visits", "meet", "meets",
    "move", "moves", "graduate", "graduates", "finish", "finishes", "land", "lands", "depart", "departs",
    "head", "heads", "open", "opens", "close", "closes", "launch", "launches", "end", "ends", "play",
    "plays", "perform", "performs", "get", "gets", "drive", "drives", "race", "races", "compete",
    "competes", "host", "hosts", "celebrate", "celebrates", "run", "runs", "kick", "kicks", "turn", "turns",
    "retire", "retires",
}  # fmt: skip


def ahead_unless_past(tense: str) -> bool:
    """Whether a bound ("until June 20") or a bare weekday ("on Friday") points ahead: unless the clause
    is in a past tense ("I'm in Paris until June 20", "I have a dentist appointment on Friday", "the
    party is on Saturday"); a habit names the days in the plural ("on Fridays")."""
    return tense not in ("past", "perfect")


# The present of "be" and "have": what a clause in them places on a date ("the deadline is May 15",
# "Carol's wedding is on June 10", "I have an appointment on June 3") is on that date's next occurrence;
# one already gone is told in the past ("was", "had"). A yearly day ("my birthday is June 3") is no date
# at all: the caller keeps it as said (see extract).
_BE_HAVE_PRESENT = {"am", "is", "are", "'m", "'re", "'s", "im", "isn't", "aren't", "have", "has"}


def looks_ahead(clause: str, tense: str | None = None) -> bool:
    """Whether a date without a year in ``clause`` is the next one: the future, the present progressive
    ("Sam is visiting me in April"), the scheduled simple present ("I fly on October 10") and the
    present of "be" and "have" ("the deadline is May 15", "I have a dentist appointment on June 3")."""
    tense = tense or tense_of(clause)
    if tense in ("future", "progressive"):
        return True
    if tense != "present":
        return False
    toks = [t.lower() for t in _TOKEN_RE.findall(clause.replace("\u2019", "'"))[:8]]
    if any(t in _BE_HAVE_PRESENT or t.endswith(("'m", "'re")) for t in toks):
        return True
    return any(t in _SCHEDULED_VERBS for t in toks[:5])


def resolve(
    exprs: list[TimeExpr] | tuple[TimeExpr, ...],
    occurred_at: datetime,
    *,
    tense: str = "present",
    state: bool = False,
    held: bool = False,
    ahead: bool = False,
) -> tuple[datetime, datetime | None, bool]:
    """(valid_from, valid_to, stated) for one clause from its time expressions.

    - from A to B -> [A, end of B); since X -> from X; a plain time ("yesterday", "in 2019") -> from it.
    - until B -> to the end of B. Said of the past ("I lived in Oslo until 2020") the start is unknown
      (:data:`UNKNOWN_START`); said of now or what is ahead ("I will be in Paris until June 20") it is
      the moment of speech.
    - for N units: in the perfect ("I've been vegan for three years") from N units before the moment
      of speech; of what is ahead ("I'll stay for two weeks") until N units after it; in the past
      tense it dates nothing.
    - ``state`` with the past tense ("I lived in Tokyo in the 90s", "I used to live in Dublin"): the
      state is over, so it ends with the period named, or else by the moment of speech.
    - ``held``: a passing condition ("I'm WFH today", "Dana is OOO next week", "Bob is in Tokyo this
      weekend") held at a day, a weekend or a week holds for that period only, whatever the tense.
    - ``ahead``: the clause tells of a time to come ("I'm moving to Denver later this year", "I'll be in
      Paris this week"): it starts no earlier than the moment of speech, though the period named began
      before it.
    - a recurrence ("every Saturday") dates nothing. ``stated`` says whether the text gave the times
      (False: valid_from is the moment of speech by default).
    """
    valid_from, valid_to, stated = occurred_at, None, False
    past = tense == "past"
    rng = next((e for e in exprs if e.kind == "range"), None)
    since = next((e for e in exprs if e.kind == "since"), None)
    at = next((e for e in exprs if e.kind == "at"), None)
    until = next((e for e in exprs if e.kind == "until"), None)
    duration = next((e for e in exprs if e.kind == "for"), None)
    if rng is not None:
        return rng.when, rng.until, True
    if since is not None:
        valid_from, stated = since.when, True
    elif at is not None:
        valid_from, stated = at.when, True
        if state and past:
            valid_to = _period_end(at.when, at.period)
        elif held and len(exprs) == 1 and at.period in ("day", "week"):
            weekend = at.period == "day" and "weekend" in at.text.lower()  # dated by its Saturday
            valid_to = at.when + timedelta(days=2) if weekend else _period_end(at.when, at.period)
    elif duration is not None and tense == "perfect":
        valid_from, stated = duration.when, True
    if until is not None and until.until is not None:
        valid_to, stated = until.until, True
        if since is None and at is None and (past or tense == "perfect" or valid_to <= valid_from):
            valid_from = UNKNOWN_START
    elif duration is not None and tense in ("future", "progressive") and valid_to is None:
        # "for three days starting Thursday": three days from that start, else from the moment of speech
        valid_to, stated = (duration.until if not stated else _after(valid_from, duration) or duration.until), True
    if state and past and valid_to is None and at is None and since is None:
        valid_from, valid_to = UNKNOWN_START, occurred_at
    if ahead and since is None and at is not None and at.when < occurred_at < _period_end(at.when, at.period):
        valid_from = max(valid_from, occurred_at)
    if valid_to is not None and valid_to <= valid_from:
        valid_to = None
    return valid_from, valid_to, stated


def _after(start: datetime, duration: TimeExpr) -> datetime | None:
    """The end of ``duration`` ("for three days") counted from ``start``; None when it cannot be read."""
    m = _DURATION_RE.match(duration.text)
    if m is None:
        return None
    raw = " ".join(m.group("n").lower().split())
    n = int(raw) if raw.isdigit() else _NUMBERS.get(raw)
    if n is None:
        return None
    n, unit = _count_of(n, m.group("unit"))
    months = {"month": n, "year": 12 * n, "decade": 120 * n}.get(unit)
    try:
        if months is None:
            return start + timedelta(days=n * (7 if unit == "week" else 1))
        return _add_months(start, months)
    except (ValueError, OverflowError):
        return None


def resolve_span(text: str, occurred_at: datetime, *, state: bool = False) -> TimeSpan:
    """valid_from / valid_to for one clause (see :func:`resolve`), its tense read by :func:`tense_of`."""
    tense = tense_of(text)
    exprs = find_time_expressions(
        text,
        occurred_at,
        future=looks_ahead(text, tense),
        bounds_ahead=ahead_unless_past(tense),
        weekdays_ahead=ahead_unless_past(tense),
    )
    valid_from, valid_to, _ = resolve(exprs, occurred_at, tense=tense, state=state)
    return TimeSpan(valid_from, valid_to, tuple(exprs))


def render(expr: TimeExpr) -> str:
    """An absolute rendering of a relative expression, for self-contained statements."""
    w = expr.when
    part = _PART_HEAD_RE.search(expr.text)
    if part is not None:
        # "(since) the end of last year" -> "(since) the end of 2022", though its time is the year's
        # last month
        whole = "year" if re.search(rf"(?i:\byear\b)|{_YEAR}", expr.text[part.end() :]) else expr.period
        return expr.text[: part.end()] + _render_period(w, whole)
    if expr.kind == "range" and expr.until is not None and expr.end_period:
        # "from Monday to Friday" -> "from 15 May 2023 to 19 May 2023"
        last = _render_period(_last_start(expr.until, expr.end_period), expr.end_period)
        if expr.text[:7].lower() == "between":
            return f"between {_render_period(w, expr.period)} and {last}"
        return f"from {_render_period(w, expr.period)} to {last}"
    txt = ("on " if expr.period == "day" else "in ") + _render_period(w, expr.period)
    holiday = re.search(_HOLIDAY, expr.text) if expr.period == "day" else None
    if holiday is not None and not re.search(r"(?i:\b(?:before|after)\s)", expr.text):
        # "on Christmas Eve" -> "on Christmas Eve 2022": the day by its name, the year the text left out
        txt = "on " + " ".join(w[:1].upper() + w[1:] for w in holiday.group(0).split()) + f" {w.year}"
    elif expr.period == "day" and re.search(r"(?i:\bweekend\b)", expr.text):
        txt = "on the weekend of " + txt[3:]  # a weekend is dated by its Saturday, not said to be that day
    if expr.kind == "since":
        # the start's own word: "starting Thursday" -> "starting 11 May 2023"
        lead = re.match(r"(?i:(from|starting|as\s+of|beginning)\b)", expr.text)
        word = lead.group(1).lower() if lead is not None else "since"
        return f"{word} " + (txt.split(" ", 1)[1] if not txt.startswith("in the week") else txt[3:])
    if expr.kind == "until" and expr.until is not None:
        return "until " + txt.split(" ", 1)[1] if not txt.startswith("in the week") else "until " + txt[3:]
    return txt


def _last_start(until: datetime, period: str) -> datetime:
    """The start of the ``period`` that ends at ``until``."""
    months = {"decade": 120, "year": 12, "third": 4, "season": 3, "quarter": 3, "month": 1}.get(period)
    if months is not None:
        return _add_months(until, -months)
    return until - timedelta(days=7 if period == "week" else 1)


def _render_period(w: datetime, period: str) -> str:
    if period == "season":
        name = {3: "spring", 6: "summer", 9: "fall", 12: "winter"}.get(w.month, calendar.month_name[w.month])
        return f"the {name} of {w.year}"
    if period == "quarter":
        return f"Q{(w.month + 2) // 3} {w.year}"
    if period == "third":
        return f"{('early', 'mid', 'late')[min(2, (w.month - 1) // 4)]} {w.year}"
    if period == "decade":
        return f"the {w.year}s"
    if period == "year":
        return str(w.year)
    if period == "month":
        return f"{calendar.month_name[w.month]} {w.year}"
    if period == "week":
        return f"the week of {w.day} {calendar.month_name[w.month]} {w.year}"
    return f"{w.day} {calendar.month_name[w.month]} {w.year}"
