"""Today's date for the final ask: the model has no clock, and "can they return it today?" needs one.

Code also does the date arithmetic a small model gets wrong: how many days lie between each date the
question gives and today.
"""

from __future__ import annotations

import re
from datetime import date

_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def today_line(question: str, today: date) -> str:
    """``Today is 2026-12-04.``, then for each ISO date in ``question`` how far it is from today."""
    parts = [f"Today is {today.isoformat()}."]
    for text in dict.fromkeys(_ISO_DATE.findall(question)):
        try:
            then = date.fromisoformat(text)
        except ValueError:  # 2026-13-40: not a date
            continue
        days = (today - then).days
        when = "is today" if days == 0 else f"was {days} days ago" if days > 0 else f"is in {-days} days"
        parts.append(f"{then.isoformat()} {when}.")
    return " ".join(parts)
