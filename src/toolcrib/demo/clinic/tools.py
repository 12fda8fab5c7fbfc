"""Ashgrove Veterinary Clinic's tools: appointments, pets, the dispensary and the diary.

Every tool reads the workspace database from ``ctx.resources["db"]``. Lookups are READ; booking,
cancelling and reordering change rows, so they are WRITE and wait for a person's approval. Clients
(the ``client`` group) see only their own pets and appointments: the account comes from the signed-in
principal's tenant, never from the model's arguments.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from toolcrib import Effect, Identifier, ToolContext, tool
from toolcrib.errors import InvalidArguments, NotPermitted
from toolcrib.tools.database import connect, fetch_one

Result = dict[str, Any]

STAFF_GROUPS = ("reception", "vets", "manager")
_TITLES = frozenset({"dr", "doctor", "vet", "mr", "mrs", "ms"})  # words of a vet's name that pick no vet
APPOINTMENT = Identifier(shape=r"(?i:APT-\d+)")
PET = Identifier(shape=r"(?i:PET-\d+)")
MEDICINE = Identifier(shape=r"(?i:RX-\d+)")


def _norm(value: str) -> str:
    return value.strip().upper()


def _is_staff(ctx: ToolContext) -> bool:
    return ctx.principal.in_group(*STAFF_GROUPS)


def _visible_pet(conn: sqlite3.Connection, pet_id: str, ctx: ToolContext) -> sqlite3.Row | None:
    """The pet's row when the signed-in user may see it: staff see every pet, clients their own."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT pet_id, name, species, breed, born_on, weight_kg, owner_account FROM pets WHERE pet_id = ?",
        (pet_id,)).fetchone()
    if row is None or (not _is_staff(ctx) and row["owner_account"] != ctx.principal.tenant):
        return None
    return row


def _parse_start(value: str) -> str:
    try:
        return datetime.fromisoformat(value.strip()).isoformat(timespec="minutes")
    except ValueError:
        raise InvalidArguments(f"'start' must be a date and time like 2030-01-31T09:15, not {value!r}") from None


@tool
def lookup_appointment(appointment_id: Annotated[str, APPOINTMENT], ctx: ToolContext) -> Result:
    """Look up one appointment: which pet, which vet, when, what for, and its status.

    Clients see only their own pets' appointments; any other id is reported as not found.

    Args:
        appointment_id: the appointment id, for example "APT-0000".
    """
    aid = _norm(appointment_id)
    row = fetch_one(
        ctx,
        "SELECT a.appointment_id, a.pet_id, p.name AS pet_name, p.owner_account, a.vet, a.starts_at, "
        "s.name AS service, a.status FROM appointments a JOIN pets p ON p.pet_id = a.pet_id "
        "JOIN services s ON s.code = a.service_code WHERE a.appointment_id = ?", (aid,))
    if row is None or (not _is_staff(ctx) and row["owner_account"] != ctx.principal.tenant):
        return {"found": False, "appointment_id": aid, "message": f"No appointment {aid} on your account."}
    result = dict(row)
    del result["owner_account"]
    return {"found": True, **result}


@tool
def lookup_pet(pet_id: Annotated[str, PET], ctx: ToolContext) -> Result:
    """Look up one registered pet: name, species, breed, date of birth, weight and vaccinations due.

    Clients see only their own pets.

    Args:
        pet_id: the pet's id, for example "PET-000".
    """
    pid = _norm(pet_id)
    with connect(ctx) as conn:
        row = _visible_pet(conn, pid, ctx)
        if row is None:
            return {"found": False, "pet_id": pid, "message": f"No pet {pid} on your account."}
        vaccines = conn.execute("SELECT vaccine, given_on, due_on FROM vaccinations WHERE pet_id = ? "
                                "ORDER BY due_on", (pid,)).fetchall()
    pet = dict(row)
    del pet["owner_account"]
    return {"found": True, **pet, "vaccinations": [dict(v) for v in vaccines]}


@tool
def lookup_medicine(code: Annotated[str, MEDICINE], ctx: ToolContext) -> Result:
    """Look up one medicine in the dispensary: its name, pack, price per pack, stock and shelf.

    Says whether it is prescription-only and whether it is a controlled drug. Read-only; ordering
    more is reorder_medicine.

    Args:
        code: the dispensary code, for example "RX-000".
    """
    code = _norm(code)
    row = fetch_one(ctx, "SELECT code, name, pack, price_gbp, prescription_only, controlled, stock_packs, shelf "
                         "FROM medicines WHERE code = ?", (code,))
    if row is None:
        return {"found": False, "code": code, "message": f"No medicine {code} in the dispensary list."}
    med = dict(row)
    med["prescription_only"] = bool(med["prescription_only"])
    med["controlled"] = bool(med["controlled"])
    return {"found": True, **med, "price": f"£{row['price_gbp']:.2f}"}


@tool
def find_free_slots(date: str, ctx: ToolContext, vet: str = "") -> Result:
    """List the free appointment slots on one day, optionally for one vet.

    Read-only: it books nothing (booking is book_appointment).

    Args:
        date: the day, for example 2030-01-31.
        vet: the vet's name or surname, for example "Patel"; empty for every vet.
    """
    try:
        day = datetime.fromisoformat(date.strip()[:10]).date().isoformat()
    except ValueError:
        raise InvalidArguments(f"'date' must be a day like 2030-01-31, not {date!r}") from None
    words = [w for w in re.findall(r"[^\W\d_]+", vet) if w.casefold() not in _TITLES]  # "Dr. Murphy": Murphy
    with connect(ctx) as conn:
        rows = conn.execute("SELECT vet, starts_at FROM slots WHERE free = 1 AND starts_at LIKE ? "
                            "ORDER BY starts_at, vet", (f"{day}T%",)).fetchall()
    rows = [r for r in rows if all(w.casefold() in r["vet"].casefold() for w in words)]
    return {"date": day, "vet": vet.strip() or "any", "count": len(rows), "free_slots": [dict(r) for r in rows]}


def _slot_version(values: dict[str, Any], ctx: ToolContext) -> str:
    row = fetch_one(ctx, "SELECT free FROM slots WHERE vet = ? AND starts_at = ?",
                         (str(values["vet"]).strip(), _parse_start(str(values["start"]))))
    return "missing" if row is None else str(row["free"])


def _appointment_version(values: dict[str, Any], ctx: ToolContext) -> str:
    row = fetch_one(ctx, "SELECT status, version FROM appointments WHERE appointment_id = ?",
                         (_norm(str(values["appointment_id"])),))
    return "missing" if row is None else f"{row['status']}|{row['version']}"


def _medicine_version(values: dict[str, Any], ctx: ToolContext) -> str:
    row = fetch_one(ctx, "SELECT stock_packs FROM medicines WHERE code = ?",
                         (_norm(str(values["code"])),))
    return "missing" if row is None else str(row["stock_packs"])


@tool(effect=Effect.WRITE, resource_version=_slot_version)
def book_appointment(pet_id: Annotated[str, PET], vet: str, start: str, ctx: ToolContext,
                     service_code: str = "CONS-STD") -> Result:
    """Book a pet into a free slot in a vet's diary (changes the diary).

    Only when the user asks to book; finding a free time is find_free_slots.

    Args:
        pet_id: the pet's id, for example "PET-000".
        vet: the vet's full name as find_free_slots shows it, for example "Dr Jane Doe".
        start: the slot's start, for example 2030-01-31T09:15.
        service_code: what the visit is for, a code from the services table (default a consultation).
    """
    pid, when, vet = _norm(pet_id), _parse_start(start), vet.strip()
    with connect(ctx, write=True) as conn:
        if _visible_pet(conn, pid, ctx) is None:
            return {"booked": False, "found": False, "pet_id": pid, "message": f"No pet {pid} on your account."}
        slot = conn.execute("SELECT free FROM slots WHERE vet = ? AND starts_at = ?", (vet, when)).fetchone()
        if slot is None or not slot["free"]:
            return {"booked": False, "vet": vet, "start": when, "message": "That slot is not free; nothing was booked."}
        number = conn.execute("SELECT COUNT(*) FROM appointments").fetchone()[0] + 3001
        aid = f"APT-{number}"
        conn.execute("INSERT INTO appointments (appointment_id, pet_id, vet, starts_at, service_code, status) "
                     "VALUES (?, ?, ?, ?, ?, 'booked')", (aid, pid, vet, when, _norm(service_code)))
        conn.execute("UPDATE slots SET free = 0 WHERE vet = ? AND starts_at = ?", (vet, when))
    return {"booked": True, "appointment_id": aid, "pet_id": pid, "vet": vet, "start": when}


@tool(effect=Effect.WRITE, resource_version=_appointment_version)
def cancel_appointment(appointment_id: Annotated[str, APPOINTMENT], ctx: ToolContext) -> Result:
    """Cancel a booked appointment (changes the diary). Clients may cancel only their own.

    Args:
        appointment_id: the appointment id, for example "APT-0000".
    """
    aid = _norm(appointment_id)
    with connect(ctx, write=True) as conn:
        row = conn.execute("SELECT a.status, a.vet, a.starts_at, p.owner_account FROM appointments a "
                           "JOIN pets p ON p.pet_id = a.pet_id WHERE a.appointment_id = ?", (aid,)).fetchone()
        if row is None or (not _is_staff(ctx) and row["owner_account"] != ctx.principal.tenant):
            return {"cancelled": False, "found": False, "appointment_id": aid,
                    "message": f"No appointment {aid} on your account."}
        if row["status"] != "booked":
            return {"cancelled": False, "found": True, "appointment_id": aid, "status": row["status"],
                    "message": f"Appointment {aid} is {row['status']}, not booked; nothing was changed."}
        conn.execute("UPDATE appointments SET status = 'cancelled', version = version + 1 WHERE appointment_id = ?",
                     (aid,))
        conn.execute("UPDATE slots SET free = 1 WHERE vet = ? AND starts_at = ?", (row["vet"], row["starts_at"]))
    return {"cancelled": True, "appointment_id": aid, "vet": row["vet"], "starts_at": row["starts_at"]}


def _check_orderer(values: dict[str, Any], ctx: ToolContext) -> None:
    """Run by the gate before approval: only vets and the practice manager order medicines."""
    if not ctx.principal.in_group("vets", "manager"):
        raise NotPermitted("Only vets and the practice manager may reorder medicines.")


@tool(effect=Effect.WRITE, check=_check_orderer, resource_version=_medicine_version)
def reorder_medicine(code: Annotated[str, MEDICINE], packs: Annotated[int, Field(gt=0, le=100)],
                     ctx: ToolContext) -> Result:
    """Order more packs of a medicine from the wholesaler (creates a purchase order).

    Only when the user asks to order or restock; checking stock is lookup_medicine.

    Args:
        code: the dispensary code, for example "RX-000".
        packs: how many packs to order, 1 to 100.
    """
    _check_orderer({}, ctx)
    code = _norm(code)
    with connect(ctx, write=True) as conn:
        if conn.execute("SELECT 1 FROM medicines WHERE code = ?", (code,)).fetchone() is None:
            return {"ordered": False, "found": False, "code": code, "message": f"No medicine {code}; nothing ordered."}
        cur = conn.execute("INSERT INTO reorders (code, packs, ordered_by, created_at) VALUES (?, ?, ?, ?)",
                           (code, packs, ctx.principal.user_id, datetime.now(UTC).isoformat(timespec="seconds")))
    return {"ordered": True, "reorder_id": cur.lastrowid, "code": code, "packs": packs}
