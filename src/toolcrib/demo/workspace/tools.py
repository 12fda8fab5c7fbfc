"""Kestrel Instruments' tools: parts, stock, orders, the staff library, the KB-400 bench, calendars.

Every tool reads the workspace database from ``ctx.resources["db"]``. Lookups are READ; anything
that changes a row is WRITE and anything that talks to the bench instrument is ACTUATE, so the
runtime holds those until a person approves the exact call. A lookup that finds nothing says so
(``"found": False``): a part that does not exist never gets a price.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from toolcrib import Effect, Identifier, ToolContext, tool
from toolcrib.errors import InvalidArguments, NotPermitted
from toolcrib.tools.database import connect, fetch_one

Result = dict[str, Any]

# Hard limits from the KB-400 Lab Bench Manual, section 4 (kept in code as well as in the manual:
# the tool refuses an out-of-range set point even if every other check was skipped).
SUPPLY_LIMITS_V = {"CH1": 30.0, "CH2": 30.0, "CH3": 5.5}
RAMP_RATE_V_PER_S = {"CH1": 2.0, "CH2": 2.0, "CH3": 0.5}
TEMPERATURE_CHANNELS = ("A", "B", "C", "D")
LIVE_DRIFT_C = 0.3  # the simulated instrument reads this much above the last archived value
STAFF_GROUPS = ("admin", "library")  # may place holds for another patron

# What each identifier looks like, so a tool is offered only when the request names one: a
# question about the returns policy then never tempts the model into lookup_part("RETURNS").
_OTHER_IDS = r"(?i:(?!(?:ORD|EVT|BK|KC)-))"  # order, event, book and contract ids are not part numbers
PART = Identifier(shape=_OTHER_IDS + r"(?i:[a-z]+\d+|[a-z]+-[a-z0-9]*\d[a-z0-9]*)")  # F2, HLV-2205, TC-PT100
ORDER = Identifier(shape=r"(?i:ORD-\d+|\d{3,})")  # ORD-1001, or "order 1001" as users write it
CHANNEL = Identifier(shape=r"[A-Z]|(?i:CH\d+)")  # temperature channels A-D, supply channels CH1-CH3
EVENT = Identifier(shape=r"(?i:EVT-\d+)")
BOOK = Identifier(shape=r"(?i:BK-\d+)")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _norm(value: str) -> str:
    return value.strip().upper()


@tool
def lookup_part(part_number: Annotated[str, PART], ctx: ToolContext) -> Result:
    """Look up one part in the parts catalogue: its name, unit price in US dollars and supplier.

    Use for "how much does part X cost" or "who supplies part X" when the exact part number is
    known. Returns found=false when no part has that number: then there is no price to quote.

    Args:
        part_number: the exact part number from the parts list, for example "XYZ-1234".
    """
    pn = _norm(part_number)
    row = fetch_one(ctx, "SELECT part_number, name, price_usd, supplier FROM parts WHERE part_number = ?",
                         (pn,))
    if row is None:
        return {"found": False, "part_number": pn, "message": f"No part numbered {pn} in the parts catalogue."}
    return {"found": True, "part_number": row["part_number"], "name": row["name"],
            "price_usd": row["price_usd"], "price": f"${row['price_usd']:,.2f}", "supplier": row["supplier"]}


@tool
def lookup_stock(part_number: Annotated[str, PART], ctx: ToolContext) -> Result:
    """Check how many units of a part are available in the warehouse and where they are stored.

    Read-only: it never reserves anything. To set units aside use reserve_stock, which needs approval.

    Args:
        part_number: the exact part number, for example "XYZ-1234".
    """
    pn = _norm(part_number)
    row = fetch_one(ctx, "SELECT part_number, name, location, available FROM stock WHERE part_number = ?",
                         (pn,))
    if row is None:
        return {"found": False, "part_number": pn, "message": f"No stock record for part {pn}."}
    return {"found": True, **dict(row)}


def _row_version(ctx: ToolContext, sql: str, key: str) -> str:
    """The current state of the row a write would change, for binding approvals to it."""
    row = fetch_one(ctx, sql, (_norm(key),))
    return "missing" if row is None else "|".join(str(v) for v in tuple(row))


def _stock_version(values: dict[str, Any], ctx: ToolContext) -> str:
    return _row_version(ctx, "SELECT available FROM stock WHERE part_number = ?", values["part_number"])


def _catalog_version(values: dict[str, Any], ctx: ToolContext) -> str:
    return _row_version(ctx, "SELECT copies_available FROM catalog WHERE book_id = ?", values["book_id"])


def _event_version(values: dict[str, Any], ctx: ToolContext) -> str:
    return _row_version(ctx, "SELECT version FROM calendar_events WHERE event_id = ?", values["event_id"])


def _supply_version(values: dict[str, Any], ctx: ToolContext) -> str:
    return _row_version(ctx, "SELECT volts, output FROM supply_setpoints WHERE channel = ?", values["channel"])


@tool(effect=Effect.WRITE, resource_version=_stock_version)
def reserve_stock(part_number: Annotated[str, PART],
                  quantity: Annotated[int, Field(gt=0, le=1000)], ctx: ToolContext) -> Result:
    """Reserve units of a part from warehouse stock for the signed-in user (changes inventory).

    Only when the user explicitly asks to reserve or set aside parts; checking availability is
    lookup_stock. Refuses, changing nothing, when fewer units are available than requested.

    Args:
        part_number: the exact part number, for example "XYZ-1234".
        quantity: how many units to reserve, 1 to 1000.
    """
    pn = _norm(part_number)
    with connect(ctx, write=True) as conn:
        row = conn.execute("SELECT available FROM stock WHERE part_number = ?", (pn,)).fetchone()
        if row is None:
            return {"reserved": False, "found": False, "part_number": pn,
                    "message": f"No stock record for part {pn}; nothing was reserved."}
        if row["available"] < quantity:
            return {"reserved": False, "found": True, "part_number": pn, "requested": quantity,
                    "available": row["available"],
                    "message": f"Only {row['available']} available; nothing was reserved."}
        conn.execute("UPDATE stock SET available = available - ? WHERE part_number = ?", (quantity, pn))
        cur = conn.execute("INSERT INTO reservations (part_number, quantity, reserved_by, created_at) "
                           "VALUES (?, ?, ?, ?)", (pn, quantity, ctx.principal.user_id, _now()))
    return {"reserved": True, "reservation_id": cur.lastrowid, "part_number": pn, "quantity": quantity,
            "remaining": row["available"] - quantity}


@tool
def get_order_status(order_id: Annotated[str, ORDER], ctx: ToolContext) -> Result:
    """Get the status, carrier, tracking number and expected delivery date of a customer order.

    Only orders belonging to the signed-in user's account are visible; any other order id is
    reported as not found.

    Args:
        order_id: the order id, for example "ORD-0000".
    """
    oid = _norm(order_id)
    if oid.isdigit():  # "order 1001", as users write it (the ORDER shape takes it)
        oid = f"ORD-{oid}"
    # the tenant comes from the authenticated principal, never from the model's arguments
    row = fetch_one(ctx, "SELECT order_id, customer, created, status, carrier, tracking, eta, items "
                         "FROM orders WHERE order_id = ? AND tenant = ?", (oid, ctx.principal.tenant))
    if row is None:
        return {"found": False, "order_id": oid, "message": f"No order {oid} on your account."}
    return {"found": True, **dict(row)}


def _like(text: str) -> str:
    escaped = text.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@tool
def search_catalog(ctx: ToolContext, title: str = "", author: str = "") -> Result:
    """Search the staff technical library's catalogue of BOOKS by title and/or author words.

    Shows how many copies of a book are available now. Read-only: borrowing or reserving a copy is
    place_hold, a separate action. NOT for company documents, contracts, policies or manuals.

    Args:
        title: words from the book's title (may be empty if author is given).
        author: words from an author's name (may be empty if title is given).
    """
    if not title.strip() and not author.strip():
        raise InvalidArguments("search_catalog: give a title, an author, or both")
    with connect(ctx) as conn:
        rows = conn.execute(
            "SELECT book_id, title, author, copies_available, copies_total FROM catalog "
            "WHERE title LIKE ? ESCAPE '\\' AND author LIKE ? ESCAPE '\\' ORDER BY book_id LIMIT 10",
            (_like(title), _like(author))).fetchall()
    return {"found": bool(rows), "count": len(rows), "books": [dict(r) for r in rows]}


def _check_patron(values: dict[str, Any], ctx: ToolContext) -> None:
    """Run by the gate before approval: staff may place holds for anyone, others only for themselves."""
    principal = ctx.principal
    if str(values["patron"]).strip() != principal.user_id and not principal.in_group(*STAFF_GROUPS):
        raise NotPermitted("You can only place holds for yourself.")


@tool(effect=Effect.WRITE, check=_check_patron, resource_version=_catalog_version)
def place_hold(book_id: Annotated[str, BOOK], patron: str, ctx: ToolContext) -> Result:
    """Place a hold on a library book for a patron (changes the library's records).

    A copy that is on the shelf is set aside at once ("ready"); otherwise the patron joins the
    queue ("queued"). Only when the user asks for a hold, not for a catalogue search.

    Args:
        book_id: the catalogue id from search_catalog, for example "BK-000".
        patron: the user id of the person the book is for; staff may only name themselves.
    """
    _check_patron({"patron": patron}, ctx)  # also when called without the gate
    bid = _norm(book_id)
    patron = patron.strip()
    with connect(ctx, write=True) as conn:
        book = conn.execute("SELECT title, copies_available FROM catalog WHERE book_id = ?", (bid,)).fetchone()
        if book is None:
            return {"placed": False, "found": False, "book_id": bid, "message": f"No book {bid} in the catalogue."}
        held = conn.execute("SELECT hold_id FROM holds WHERE book_id = ? AND patron = ? "
                            "AND status IN ('ready', 'queued')", (bid, patron)).fetchone()
        if held is not None:
            return {"placed": False, "found": True, "book_id": bid, "hold_id": held["hold_id"],
                    "message": f"{patron} already has a hold on this book."}
        status = "ready" if book["copies_available"] > 0 else "queued"
        if status == "ready":
            conn.execute("UPDATE catalog SET copies_available = copies_available - 1 WHERE book_id = ?", (bid,))
        cur = conn.execute("INSERT INTO holds (book_id, patron, placed_at, status) VALUES (?, ?, ?, ?)",
                           (bid, patron, _now(), status))
    return {"placed": True, "hold_id": cur.lastrowid, "book_id": bid, "title": book["title"],
            "patron": patron, "status": status}


@tool
def query_archived_reading(channel: Annotated[str, CHANNEL], ctx: ToolContext) -> Result:
    """Latest archived temperature reading of a KB-400 bench channel, with its timestamp.

    Comes from the measurement archive, not the instrument: it is as old as recorded_at says
    ("live": false). Channels: A ambient, B chamber, C device-under-test board, D heatsink.

    Args:
        channel: the temperature channel letter, one of A, B, C, D.
    """
    ch = _norm(channel)
    row = fetch_one(ctx, "SELECT channel, reading_c, recorded_at FROM instrument_readings WHERE channel = ? "
                         "ORDER BY recorded_at DESC LIMIT 1", (ch,))
    if row is None:
        return {"found": False, "channel": ch, "message": f"No archived readings for channel {ch}.",
                "channels": list(TEMPERATURE_CHANNELS)}
    return {"found": True, "channel": row["channel"], "value": row["reading_c"], "unit": "°C",
            "recorded_at": row["recorded_at"], "live": False, "source": "archive"}


@tool(effect=Effect.ACTUATE, timeout_s=5.0)
def live_read_temperature(channel: Annotated[str, CHANNEL], ctx: ToolContext) -> Result:
    """Read a temperature channel live from the KB-400 bench instrument (simulated here).

    Queries the instrument itself, so it needs lab permission and approval; for the last stored
    value use query_archived_reading instead.

    Args:
        channel: the temperature channel letter, one of A, B, C, D.
    """
    ch = _norm(channel)
    if ch not in TEMPERATURE_CHANNELS:
        return {"found": False, "channel": ch, "message": f"The bench has no temperature channel {ch}.",
                "channels": list(TEMPERATURE_CHANNELS)}
    row = fetch_one(ctx, "SELECT reading_c FROM instrument_readings WHERE channel = ? "
                         "ORDER BY recorded_at DESC LIMIT 1", (ch,))
    value = round((row["reading_c"] if row else 21.0) + LIVE_DRIFT_C, 1)
    return {"found": True, "channel": ch, "value": value, "unit": "°C", "recorded_at": _now(),
            "live": True, "source": "instrument (simulated)"}


def _check_supply(values: dict[str, Any], ctx: ToolContext) -> None:
    """Domain check run by the gate before approval: known channel, set point inside its limit."""
    ch = _norm(str(values["channel"]))
    if ch not in SUPPLY_LIMITS_V:
        raise InvalidArguments(f"set_supply_voltage: no supply channel {ch}; use one of "
                               + ", ".join(SUPPLY_LIMITS_V))
    if not 0.0 <= values["volts"] <= SUPPLY_LIMITS_V[ch]:
        raise InvalidArguments(f"set_supply_voltage: {ch} accepts 0 to {SUPPLY_LIMITS_V[ch]} V, "
                               f"not {values['volts']} V (KB-400 manual, section 4)")


@tool(effect=Effect.ACTUATE, timeout_s=5.0, check=_check_supply, resource_version=_supply_version)
def set_supply_voltage(channel: Annotated[str, CHANNEL],
                       volts: Annotated[float, Field(ge=0, le=30)], ctx: ToolContext) -> Result:
    """Set a KB-400 bench supply channel to a voltage and switch its output on (energizes the rig).

    The instrument ramps to the new value at the channel's maximum ramp rate. Limits: CH1 and CH2
    0-30 V, CH3 (logic rail) 0-5.5 V.

    Args:
        channel: the supply channel, one of CH1, CH2, CH3.
        volts: the new set point in volts.
    """
    _check_supply({"channel": channel, "volts": volts}, ctx)  # also when called without the gate
    ch = _norm(channel)
    with connect(ctx, write=True) as conn:
        row = conn.execute("SELECT volts FROM supply_setpoints WHERE channel = ?", (ch,)).fetchone()
        previous = float(row["volts"]) if row else 0.0
        conn.execute("INSERT INTO supply_setpoints (channel, volts, output, updated_at, updated_by) "
                     "VALUES (?, ?, 'on', ?, ?) ON CONFLICT (channel) DO UPDATE SET volts = excluded.volts, "
                     "output = 'on', updated_at = excluded.updated_at, updated_by = excluded.updated_by",
                     (ch, volts, _now(), ctx.principal.user_id))
    rate = RAMP_RATE_V_PER_S[ch]
    return {"channel": ch, "previous_volts": previous, "volts": volts, "output": "on",
            "ramp_rate_v_per_s": rate, "ramp_seconds": round(abs(volts - previous) / rate, 1)}


def _parse_time(name: str, value: str) -> datetime:
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidArguments(f"'{name}' must be a date and time like 2030-01-31T14:00, not {value!r}") from None


def _check_times(values: dict[str, Any], ctx: ToolContext) -> None:
    """Domain check: both times parse and the event ends after it starts."""
    if _parse_time("new_end", values["new_end"]) <= _parse_time("new_start", values["new_start"]):
        raise InvalidArguments("'new_end' must be later than 'new_start'")


def _fmt(value: str) -> str:
    return _parse_time("time", value).isoformat(timespec="minutes")


@tool(check=_check_times)
def draft_calendar_change(event_id: Annotated[str, EVENT], new_start: str, new_end: str,
                          ctx: ToolContext) -> Result:
    """Draft a new time for a calendar event and show the change, without changing anything.

    Returns the current and proposed times and the event's current version; applying it is
    apply_calendar_change with that version as expected_version.

    Args:
        event_id: the event id, for example "EVT-000".
        new_start: proposed start, local time, for example 2030-01-31T14:00.
        new_end: proposed end, local time, later than new_start.
    """
    _check_times({"new_start": new_start, "new_end": new_end}, ctx)
    eid = _norm(event_id)
    row = fetch_one(ctx, "SELECT event_id, title, starts_at, ends_at, owner, version FROM calendar_events "
                         "WHERE event_id = ?", (eid,))
    if row is None:
        return {"found": False, "event_id": eid, "message": f"No calendar event {eid}."}
    proposed = {"starts_at": _fmt(new_start), "ends_at": _fmt(new_end)}
    changes = [f"{key}: {row[key]} -> {proposed[key]}" for key in ("starts_at", "ends_at") if row[key] != proposed[key]]
    return {"found": True, "event_id": eid, "title": row["title"], "owner": row["owner"],
            "current": {"starts_at": row["starts_at"], "ends_at": row["ends_at"]}, "proposed": proposed,
            "changes": changes, "version": row["version"], "applied": False}


@tool(effect=Effect.WRITE, check=_check_times, resource_version=_event_version)
def apply_calendar_change(event_id: Annotated[str, EVENT], new_start: str, new_end: str,
                          expected_version: int, ctx: ToolContext) -> Result:
    """Move a calendar event to new times (changes the calendar), after draft_calendar_change.

    Refuses if the event changed since the draft (its version is no longer expected_version).
    Only the event's owner (or an admin) may move it.

    Args:
        event_id: the event id, for example "EVT-000".
        new_start: new start, local time, for example 2030-01-31T14:00.
        new_end: new end, local time, later than new_start.
        expected_version: the version returned by draft_calendar_change.
    """
    _check_times({"new_start": new_start, "new_end": new_end}, ctx)
    eid = _norm(event_id)
    start, end = _fmt(new_start), _fmt(new_end)
    with connect(ctx, write=True) as conn:
        row = conn.execute("SELECT owner, version FROM calendar_events WHERE event_id = ?", (eid,)).fetchone()
        if row is None:
            return {"applied": False, "found": False, "event_id": eid, "message": f"No calendar event {eid}."}
        if row["owner"] != ctx.principal.user_id and not ctx.principal.in_group("admin"):
            raise NotPermitted(f"Only the event's owner may move {eid}.")
        if row["version"] != expected_version:
            return {"applied": False, "found": True, "event_id": eid, "reason": "version_conflict",
                    "expected_version": expected_version, "current_version": row["version"],
                    "message": "The event changed since the draft; draft the change again."}
        conn.execute("UPDATE calendar_events SET starts_at = ?, ends_at = ?, version = version + 1 "
                     "WHERE event_id = ?", (start, end, eid))
    return {"applied": True, "event_id": eid, "starts_at": start, "ends_at": end, "version": expected_version + 1}
