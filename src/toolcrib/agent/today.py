"""Today's date for the final ask: the model has no clock, and "can they return it today?" needs one.

Code also does the date arithmetic a small model gets wrong: how many days lie between each date the
request gives and today.
"""

from __future__ import annotations

from datetime import date

from toolcrib.agent.request import Request


def today_line(request: Request, today: date) -> str:
    """``Today is 2026-12-04.``, then for each ISO date the request gives how far it is from today."""
    parts = [f"Today is {today.isoformat()}."]
    for stated in request.dated:
        then = stated.day
        if then is None or (then == today and not any(c.isdigit() for c in stated.text)):
            continue  # a span, or "today": the first sentence says it
        days = (today - then).days
        count = f"{abs(days)} day{'s' if abs(days) != 1 else ''}"
        when = "is today" if days == 0 else f"was {count} ago" if days > 0 else f"is in {count}"
        parts.append(f"{then.isoformat()} {when}.")
    return " ".join(parts)
