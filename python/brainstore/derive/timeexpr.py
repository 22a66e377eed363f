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
"""

from __future__ import annotations

import calendar
import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

__all__ = ["TimeExpr", "TimeSpan", "find_time_expressions", "named_periods", "render", "resolve_span", "warm_up"]

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
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "few": 3, "several": 3,
    "a couple of": 2, "couple of": 2, "a couple": 2, "couple": 2,
}  # fmt: skip

# Month names must be capitalised ("May", "March"): lowercase "may" and "march" are verbs.
_MON = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|JANUARY|FEBRUARY|MARCH|APRIL|MAY|JUNE|JULY|AUGUST|SEPTEMBER|OCTOBER|NOVEMBER|DECEMBER"
    r"|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?)"
)
_WD = r"(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_YEAR = r"(?:19|20)\d\d"
_ORD = r"\d{1,2}(?i:st|nd|rd|th)?"
_NUM = r"(?i:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|few|several|(?:a\s+)?couple(?:\s+of)?)"
_UNIT = r"(?i:days?|weeks?|months?|years?|decades?)"
_REL = r"(?i:last|this|next|past|previous|coming)"

# One atom: a single point or period. Alternatives are ordered longest-first.
_ATOM = (
    r"(?:"
    rf"(?P<iso>{_YEAR}-\d\d-\d\d)(?:[T ]\d\d:\d\d(?::\d\d)?(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)?"
    r"|(?P<num>\d{1,2}/\d{1,2}/(?:\d{4}|\d\d))"
    rf"|(?P<dmy>(?i:the\s+)?{_ORD}(?:\s+of)?\s+{_MON}(?:,?\s+{_YEAR})?)"
    rf"|(?P<mdy>{_MON}\s+{_ORD}(?:,?\s+{_YEAR})?)(?![\d:])"
    rf"|(?P<my>{_MON},?\s+(?:of\s+)?{_YEAR})"
    rf"|(?P<ago>{_NUM}\s+{_UNIT}\s+(?i:ago|back|earlier))"
    r"|(?P<dby>(?i:the\s+day\s+before\s+yesterday))"
    r"|(?P<word>(?i:yesterday|today|tonight|tomorrow|this\s+(?:morning|afternoon|evening)|last\s+night))"
    rf"|(?P<relunit>{_REL}\s+(?i:week(?:end)?|month|year|decade))"
    rf"|(?P<relmon>{_REL}\s+{_MON})"
    rf"|(?P<relwd>{_REL}\s+{_WD})"
    rf"|(?P<relseason>{_REL}\s+(?i:spring|summer|fall|autumn|winter))"
    rf"|(?P<wd>{_WD})"
    rf"|(?P<year>{_YEAR})"
    rf"|(?P<mon>{_MON})"
    r")"
)
_ATOM_RE = re.compile(rf"(?<![\w-]){_ATOM}(?![\w])")

_PLAIN_ATOM = re.sub(r"\(\?P<\w+>", "(?:", _ATOM)
_RANGE_RE = re.compile(
    rf"(?P<lead>\b(?i:from|between)\s+)?(?P<a>(?<![\w-]){_PLAIN_ATOM})"
    rf"(?P<mid>\s*(?:[-\u2013]|\s(?i:to|until|till|through|and)\s)\s*)(?P<b>{_PLAIN_ATOM})(?!\w)"
)
_PREFIX_RE = re.compile(
    r"(?i:\b(since|from|starting(?:\s+(?:in|on|from))?|as\s+of|beginning(?:\s+in)?|until|till|til|through|up\s+to|ever\s+since)\s+)$"
)
_QUICK = re.compile(
    r"(?i:yesterday|today|tonight|tomorrow|ago\b|back\b|earlier|last|this|next|past|previous|coming"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|night)|\d|" + _MON
)

# A bare year or month name is a time only after one of these words ("in 2019", "since March"), or as
# the first half of a range ("2015-2018"); "2000 people" and "May I" are not times.
_ANCHOR_RE = re.compile(
    r"(?i:\b(?:in|of|since|until|till|from|to|through|by|before|after|back|during|around|circa|early|late"
    r"|mid|throughout|for|as\s+of|starting)\s+)$"
)


def _anchored(m: re.Match[str], text: str) -> bool:
    if m.lastgroup not in ("year", "mon"):
        return True
    if _ANCHOR_RE.search(text, max(0, m.start() - 16), m.start()):
        return True
    return (
        m.lastgroup == "year"
        and re.match(rf"\s*[-\u2013]\s*{_YEAR}", text[m.end() : m.end() + 8]) is not None
    )


_PERIOD_ORDER = {"day": 0, "week": 1, "month": 2, "year": 3}


@dataclass(frozen=True)
class TimeExpr:
    start: int  # [start, end) offsets of the expression (with its "since"/"until" word) in the text
    end: int
    text: str
    kind: str  # "at" (a point/period), "since", "until", "range"
    when: datetime  # start of the named period (for "until": start of the bounding period)
    period: str  # day | week | month | year
    until: datetime | None  # exclusive end, for "until" and "range"
    relative: bool  # True when the expression only makes sense relative to the moment of speech


@dataclass(frozen=True)
class TimeSpan:
    valid_from: datetime
    valid_to: datetime | None
    exprs: tuple[TimeExpr, ...]


def _floor(dt: datetime, period: str) -> datetime:
    dt = dt.replace(hour=0, minute=0, second=0, microsecond=0)
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


def _period_end(dt: datetime, period: str) -> datetime:
    if period == "year":
        return dt.replace(year=min(9999, dt.year + 1))
    if period == "month":
        return _add_months(dt, 1)
    if period == "week":
        return dt + timedelta(days=7)
    return dt + timedelta(days=1)


def _month_of(token: str) -> int:
    return _MONTHS[token.lower().rstrip(".")]


def _resolve_atom(m: re.Match[str], base: datetime) -> tuple[datetime, str, bool] | None:
    """(start of period, period, relative?) for one matched atom; None when it cannot be resolved."""
    g = m.lastgroup
    s = m.group(0)
    low = " ".join(s.lower().split())
    day0 = _floor(base, "day")
    try:
        if g in ("iso", "a_iso"):
            return datetime(int(s[0:4]), int(s[5:7]), int(s[8:10]), tzinfo=base.tzinfo), "day", False
        if g == "year":
            return datetime(int(s), 1, 1, tzinfo=base.tzinfo), "year", False
        if g == "word" or g == "dby":
            if low == "the day before yesterday":
                return day0 - timedelta(days=2), "day", True
            offset = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(low, 0)
            return day0 + timedelta(days=offset), "day", True
        if g == "ago":
            parts = low.rsplit(" ", 2)
            n = _NUMBERS.get(parts[0]) if not parts[0].isdigit() else int(parts[0])
            if n is None or n > 5000:
                return None
            unit = parts[1].rstrip("s")
            if unit == "day":
                return day0 - timedelta(days=n), "day", True
            if unit == "week":
                return day0 - timedelta(weeks=n), "day", True
            if unit == "month":
                return _add_months(day0, -n), "day", True
            years = n * (10 if unit == "decade" else 1)
            return _add_months(day0, -12 * years), "day", True
        if g == "relunit":
            rel, unit = low.split(" ", 1)
            step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[rel]
            if unit == "weekend":
                sat = day0 - timedelta(days=(day0.weekday() - 5) % 7)  # latest Saturday on or before today
                in_weekend = day0.weekday() >= 5
                if step < 0:
                    return sat - timedelta(days=7) if in_weekend else sat, "day", True
                this_sat = sat if in_weekend else day0 + timedelta(days=(5 - day0.weekday()) % 7)
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
            return start, "month", True
        if g in ("relwd", "wd"):
            parts = low.split(" ")
            rel = parts[0] if g == "relwd" else "on"
            wd = _WEEKDAYS[parts[-1]]
            delta = (day0.weekday() - wd) % 7
            if rel in ("last", "past", "previous", "on"):
                return day0 - timedelta(days=delta or 7), "day", True
            if rel == "this":
                return _floor(day0, "week") + timedelta(days=wd), "day", True
            ahead = (wd - day0.weekday()) % 7 or 7
            return day0 + timedelta(days=ahead), "day", True
    except (ValueError, OverflowError, KeyError):
        return None
    if g in ("dmy", "mdy", "my"):
        return _month_named_date(s, base)
    # numeric dates: dateparser
    got = _dateparser(low, base.replace(tzinfo=None))
    if got is None:
        return None
    dt, period = got
    return dt.replace(tzinfo=base.tzinfo), period, False


_MONTH_NAME_RE = re.compile(_MON)
_DAY_RE = re.compile(r"(?<!\d)(\d{1,2})(?!\d)")


def _month_named_date(fragment: str, base: datetime) -> tuple[datetime, str, bool] | None:
    """ "16 March 2022", "March 16th", "the 5th of May", "October 2023": a day (or a month when no day
    is written); without a year, the latest such date on or before ``base``'s day."""
    month = _month_of(_MONTH_NAME_RE.search(fragment).group(0))  # type: ignore[union-attr]
    year_match = re.search(_YEAR, fragment)
    rest = fragment.replace(year_match.group(0), " ") if year_match else fragment
    day_match = _DAY_RE.search(rest)
    day = int(day_match.group(1)) if day_match else 1
    period = "day" if day_match else "month"
    today = _floor(base, "day").replace(tzinfo=None)
    years = [int(year_match.group(0))] if year_match else range(today.year, today.year - 9, -1)
    for year in years:
        try:
            when = datetime(year, month, day)
        except ValueError:  # "31 April"; "29 February" in a common year
            continue
        if year_match or when <= today:
            return when.replace(tzinfo=base.tzinfo), period, year_match is None
    return None


def warm_up() -> None:
    """Load dateparser now: its first call takes about a fifth of a second, which must not land inside
    a request (a Context whose query holds a numeric date)."""
    _dateparser("3/4/2021", datetime(2000, 1, 1))


@lru_cache(maxsize=4096)
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


def find_time_expressions(text: str, base: datetime) -> list[TimeExpr]:
    """Every time expression in ``text`` resolved against ``base`` (tz-aware), in order of position."""
    if not text or not _QUICK.search(text):
        return []
    out: list[TimeExpr] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for r in _RANGE_RE.finditer(text):
        ma = _ATOM_RE.fullmatch(r.group("a"))
        mb = _ATOM_RE.fullmatch(r.group("b"))
        mid = r.group("mid").strip().lower()
        if ma is None or mb is None or (mid == "and" and not r.group("lead")):
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
        ra, rb = _resolve_atom(ma, base), _resolve_atom(mb, base)
        if ra is None or rb is None:
            continue
        until = _period_end(rb[0], rb[1])
        if until <= ra[0]:
            continue
        start = r.start("lead") if r.group("lead") else r.start("a")
        out.append(
            TimeExpr(start, r.end(), text[start : r.end()], "range", ra[0], ra[1], until, ra[2] or rb[2])
        )
        taken.append((start, r.end()))

    for m in _ATOM_RE.finditer(text):
        if not free(m.start(), m.end()) or not _anchored(m, text):
            continue
        res = _resolve_atom(m, base)
        if res is None:
            continue
        when, period, relative = res
        start, kind, until = m.start(), "at", None
        p = _PREFIX_RE.search(text, max(0, start - 24), start)
        if p is not None:
            word = p.group(1).lower()
            start = p.start(1)
            if word.startswith(("until", "till", "til", "through", "up")):
                kind, until = "until", _period_end(when, period)
            else:
                kind = "since"
        out.append(TimeExpr(start, m.end(), text[start : m.end()], kind, when, period, until, relative))
        taken.append((start, m.end()))
    out.sort(key=lambda e: e.start)
    return out


def named_periods(text: str, base: datetime) -> list[tuple[datetime, datetime]]:
    """[start, end) of each period ``text`` names outright ("in October 2023", "on 16 March 2022",
    "from 2015 to 2018", "last week"), relative forms resolved against ``base``. Open bounds
    ("since May", "until 2020", "as of June") name no period: they say where a span starts or ends,
    not when the thing asked about happened."""
    periods = []
    for expr in find_time_expressions(text, base):
        if expr.kind == "at":
            periods.append((expr.when, _period_end(expr.when, expr.period)))
        elif expr.kind == "range" and expr.until is not None:
            periods.append((expr.when, expr.until))
    return periods


def resolve_span(text: str, occurred_at: datetime) -> TimeSpan:
    """valid_from / valid_to for one clause: since X -> from X; from A to B -> [A, end of B);
    until B -> to the end of B; a plain time ("yesterday", "in 2019") -> from it; else occurred_at."""
    exprs = find_time_expressions(text, occurred_at)
    valid_from, valid_to = occurred_at, None
    chosen = next((e for e in exprs if e.kind == "range"), None)
    if chosen is not None:
        valid_from, valid_to = chosen.when, chosen.until
    else:
        since = next((e for e in exprs if e.kind == "since"), None)
        until = next((e for e in exprs if e.kind == "until"), None)
        at = next((e for e in exprs if e.kind == "at"), None)
        if since is not None:
            valid_from = since.when
        elif at is not None:
            valid_from = at.when
        if until is not None:
            valid_to = until.until
            if since is None and at is None and valid_to is not None and valid_to <= valid_from:
                # "I lived there until 2020", said later: true at least during the bounding period
                valid_from = until.when
    if valid_to is not None and valid_to <= valid_from:
        valid_to = None
    return TimeSpan(valid_from, valid_to, tuple(exprs))


def render(expr: TimeExpr) -> str:
    """An absolute rendering of a relative expression, for self-contained statements."""
    w = expr.when
    if expr.period == "year":
        txt = f"in {w.year}"
    elif expr.period == "month":
        txt = f"in {calendar.month_name[w.month]} {w.year}"
    elif expr.period == "week":
        txt = f"in the week of {w.day} {calendar.month_name[w.month]} {w.year}"
    else:
        txt = f"on {w.day} {calendar.month_name[w.month]} {w.year}"
    if expr.kind == "since":
        return "since " + txt.split(" ", 1)[1] if not txt.startswith("in the week") else "since " + txt[3:]
    if expr.kind == "until" and expr.until is not None:
        return "until " + txt.split(" ", 1)[1] if not txt.startswith("in the week") else "until " + txt[3:]
    return txt
