"""The date line of the final ask: today, and how far each date the question gives lies from it."""

from __future__ import annotations

from datetime import date

from toolcrib.agent.request import Request
from toolcrib.agent.today import today_line

TODAY = date(2026, 12, 4)


def test_today_and_the_days_since_a_date_in_the_question_are_stated_by_code() -> None:
    request = Request.parse("A customer opened a product delivered on 2026-11-06. Can they return it today?", TODAY)
    line = today_line(request, TODAY)
    assert line == "Today is 2026-12-04. 2026-11-06 was 28 days ago."


def test_a_future_date_today_and_a_non_date_are_told_apart() -> None:
    line = today_line(Request.parse("Is 2026-12-10 free, and 2026-12-04, and 2026-13-40?", TODAY), TODAY)
    assert line == "Today is 2026-12-04. 2026-12-10 is in 6 days. 2026-12-04 is today."
    assert today_line(Request.parse("What is the status of ORD-1001?"), TODAY) == "Today is 2026-12-04."
