"""Dates as people write them, resolved by code against today.

"Tuesday 8 December", "8 Dec", "December 9th", "14/12", "2026-12-08", "tomorrow", "next Monday", "last
month", "in 3 days": each is resolved to a day, or to a span of days, with the year inferred (the one that
puts the day nearest today; where a weekday is written too, the nearest year whose day falls on it). A small
model writes the year it learned in ("2023-12-08"); the gate holds the dates a model writes to these.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_FULL_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH = r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_WEEKDAY = r"(?P<weekday>mon|tue(?:s)?|wed(?:nes)?|thu(?:r(?:s)?)?|fri|sat(?:ur)?|sun)(?:day)?\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>(?:19|20)\d\d))?"

@dataclass(frozen=True)
class Stated:
    """A date a text states: one day (``first == last``) or a span of days ("last month"), as written."""

    text: str
    first: date
    last: date
    weekday: str = ""  # the weekday written with the day ("Mon" of "Mon 8 December"), to check it against

    @property
    def day(self) -> date | None:
        """The one day it names, or None for a span."""
        return self.first if self.first == self.last else None

    def holds(self, day: date) -> bool:
        return self.first <= day <= self.last

    def describe(self) -> str:
        """``"Tuesday 8 December" = 2026-12-08`` or ``"last month" = 2026-11-01 to 2026-11-30``."""
        what = self.first.isoformat() if self.day else f"{self.first.isoformat()} to {self.last.isoformat()}"
        if self.weekday and self.first.weekday() != _WEEKDAYS.index(self.weekday.lower()[:3]):
            written = _FULL_WEEKDAYS[_WEEKDAYS.index(self.weekday.lower()[:3])]
            what += f" (a {_FULL_WEEKDAYS[self.first.weekday()]}, not a {written})"
        return f'"{self.text}" = {what}'


def _nearest_year(month: int, day: int, today: date) -> date | None:
    """The day ``day``/``month`` in the year that puts it nearest today."""
    candidates = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            candidates.append(date(year, month, day))
        except ValueError:  # 29 February, 31 April
            continue
    return min(candidates, key=lambda c: abs((c - today).days)) if candidates else None


def _month_span(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    after = date(year + month // 12, month % 12 + 1, 1)
    return first, after - timedelta(days=1)


Span = tuple[date, date]


def _iso(g: dict[str, str], today: date) -> Span | None:
    day = date.fromisoformat(g["iso"])
    return day, day


def _numeric(g: dict[str, str], today: date) -> Span | None:
    """14/12, 14/12/2026, 12/14 (month first only where the day could not be a month); never 1/2 or 3/4,
    which are fractions."""
    d, mo, y = int(g["d"]), int(g["m"]), g["y"]
    if not y and len(g["d"]) == len(g["m"]) == 1:
        return None
    if mo > 12 and d <= 12:
        d, mo = mo, d
    day = date(int(y) + (2000 if len(y) == 2 else 0), mo, d) if y else _nearest_year(mo, d, today)
    return (day, day) if day else None


def _written(g: dict[str, str], today: date) -> Span | None:
    """Tuesday 8 December, 8th of Dec 2026, December 9th."""
    month = _MONTHS.index(g["month"].lower()[:3]) + 1
    day = (date(int(g["year"]), month, int(g["day"])) if g["year"]
           else _nearest_year(month, int(g["day"]), today))
    return (day, day) if day else None


def _month(g: dict[str, str], today: date) -> Span | None:
    """in December: the nearest December, or the one of the year given."""
    month = _MONTHS.index(g["month"].lower()[:3]) + 1
    year = int(g["year"]) if g["year"] else min((today.year - 1, today.year, today.year + 1),
                                                key=lambda y: abs((date(y, month, 15) - today).days))
    return _month_span(year, month)


def _relative(g: dict[str, str], today: date) -> Span | None:
    """today, tomorrow, yesterday."""
    day = today + timedelta(days={"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}[g["rel"].lower()])
    return day, day


def _counted(g: dict[str, str], today: date) -> Span | None:
    """in 3 days, 2 weeks ago."""
    n, unit = int(g["n"] or g["n2"]), (g["unit"] or g["unit2"]).lower()
    delta = timedelta(days=n * (7 if unit == "week" else 1))
    day = today + delta if g["n"] else today - delta
    return day, day


def _weekday(g: dict[str, str], today: date) -> Span | None:
    """next Monday (never today), this/on/coming Monday (today or the next), last Monday."""
    weekday = _WEEKDAYS.index(g["weekday"].lower()[:3])
    which = g["which"].lower()
    if which == "last":
        day = today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    else:
        day = today + timedelta(days=(weekday - today.weekday()) % 7 or (7 if which == "next" else 0))
    return day, day


def _span(g: dict[str, str], today: date) -> Span | None:
    """this week (Monday to Sunday), last month, next year."""
    shift = {"this": 0, "next": 1, "last": -1}[g["span_which"].lower()]
    unit = g["span"].lower()
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
        return monday, monday + timedelta(days=6)
    if unit == "month":
        index = today.year * 12 + today.month - 1 + shift
        return _month_span(index // 12, index % 12 + 1)
    return date(today.year + shift, 1, 1), date(today.year + shift, 12, 31)


# each way of writing a date with the code that resolves it, tried in order; a later one never reads text an
# earlier one matched
_READINGS: tuple[tuple[re.Pattern[str], Callable[[dict[str, str], date], Span | None]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), resolve) for pattern, resolve in (
        (r"(?<![\d-])(?P<iso>(?:19|20)\d\d-[01]\d-[0-3]\d)(?!\d)", _iso),
        (rf"\b(?:{_WEEKDAY},?\s+(?:the\s+)?)?{_DAY}\s+(?:of\s+)?{_MONTH}{_YEAR}\b", _written),
        (rf"\b(?:{_WEEKDAY},?\s+)?{_MONTH}\s+(?:the\s+)?{_DAY}\b(?!:){_YEAR}\b", _written),
        (r"(?<![\w/.,-])(?P<d>[0-3]?\d)/(?P<m>[01]?\d)(?:/(?P<y>(?:19|20)?\d\d))?(?![\w/]|[.,]\d)", _numeric),
        (r"\b(?P<rel>today|tonight|tomorrow|yesterday)\b", _relative),
        (r"\b(?:in\s+(?P<n>\d{1,3})\s+(?P<unit>day|week)s?|(?P<n2>\d{1,3})\s+(?P<unit2>day|week)s?\s+ago)\b",
         _counted),
        (rf"\b(?P<which>next|last|this|coming|on)\s+{_WEEKDAY}\b", _weekday),
        (r"\b(?P<span_which>this|next|last)\s+(?P<span>week|month|year)\b", _span),
        (rf"\b(?:in|during|for|since|of)\s+{_MONTH}(?:\s+(?P<year>(?:19|20)\d\d))?\b", _month),
    ))


@functools.lru_cache(maxsize=512)
def stated_dates(text: str, today: date) -> tuple[Stated, ...]:
    """The dates ``text`` states, resolved against ``today``, in the order written, each once."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, Stated]] = []
    for pattern, resolve in _READINGS:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            try:
                span = resolve(m.groupdict(default=""), today)
            except ValueError:  # a day the calendar does not have: 31 February, 14/14
                continue
            if span is None:
                continue
            taken.append(m.span())
            found.append((m.start(), Stated(m.group(0).strip(), *span,
                                            weekday=(m.group("weekday") or "") if resolve is _written else "")))
    seen: set[tuple[date, date]] = set()
    ordered = []
    for _, stated in sorted(found, key=lambda f: f[0]):
        if (stated.first, stated.last) not in seen:
            seen.add((stated.first, stated.last))
            ordered.append(stated)
    return tuple(ordered)


def described(stated: Sequence[Stated]) -> str:
    """``"8 Dec" = 2026-12-08, "last month" = 2026-11-01 to 2026-11-30``: what a text states, as a reader sees it."""
    return ", ".join(s.describe() for s in stated)


ISO_DATE = re.compile(r"(?<![\d-])((?:19|20)\d\d)-([01]\d)-([0-3]\d)(?!\d)")
"""A date in ISO form, as a model writes one in an argument ("2026-12-08", "2026-12-08T10:00")."""


def iso_dates(value: str) -> list[tuple[date, re.Match[str]]]:
    """The ISO dates ``value`` holds, each with where it stands (calendar days only)."""
    found = []
    for m in ISO_DATE.finditer(value):
        try:
            found.append((date(int(m.group(1)), int(m.group(2)), int(m.group(3))), m))
        except ValueError:
            continue
    return found
