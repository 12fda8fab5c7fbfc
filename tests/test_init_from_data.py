"""``toolcrib init --database --documents``: a working workspace from a user's own data, its generated
lookups answering through the real Gate; and ``toolcrib doctor`` on a good and on a broken workspace."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.models.base import ToolCall
from toolcrib.tools.context import CallContext
from toolcrib.tools.grounding import Grounding
from toolcrib.trace.tracer import Tracer
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import TEMPLATES

CLINIC = TEMPLATES["clinic"]
SPIDER = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "spider" / "tables.json"
MODEL = "dry:gpt-4o-mini"  # resolves without weights or a network; the gate is what these tests drive


def init(*args: str) -> Any:
    return CliRunner().invoke(main, ["init", *args, "--model", MODEL])


def ask_gate(ws: Workspace, tool: str, arguments: dict[str, Any], request: str) -> dict[str, Any]:
    """One call through the workspace's real Gate, as its generated user, grounded in ``request``."""
    cctx = CallContext(ws.principal(), Tracer(), Grounding(request), resources=ws.resources)
    outcome = asyncio.run(ws.gate().run(ToolCall("c1", tool, arguments), cctx))
    assert outcome.status == "ok", (tool, arguments, outcome.payload)
    data: dict[str, Any] = outcome.payload["data"]
    return data


# -- (b) the clinic's own seed database and documents, without its tools.py ---------------------------

@pytest.fixture(scope="module")
def clinic(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    base = tmp_path_factory.mktemp("own")
    db = base / "clinic.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript((CLINIC / "data" / "seed.sql").read_text(encoding="utf-8"))
    result = init(str(base / "ws"), "--database", str(db), "--documents", str(CLINIC / "docs"),
                  "--leave-out", "staff_pay", "--no-ingest")
    assert result.exit_code == 0, result.output
    assert "8 tables, 8 lookup tools" in result.output
    return Workspace.open(base / "ws")


def test_clinic_data_gets_a_typed_grounded_lookup_per_table(clinic: Workspace) -> None:
    tools = {t.name: t for t in clinic.registry}
    assert {"lookup_pets", "lookup_medicines", "lookup_appointments", "lookup_services", "lookup_owners",
            "lookup_slots", "lookup_reorders", "lookup_vaccinations", "sql_query", "vector_search"} == set(tools)
    assert all(t.effect.value == "read" for t in tools.values())
    pets = tools["lookup_pets"]
    assert pets.parameters["properties"]["pet_id"]["type"] == "string"
    assert set(pets.identifiers) == {"pet_id", "name"}  # grounded like clinic's hand-written lookup_pet
    assert tools["lookup_vaccinations"].parameters["properties"]["rowid"]["type"] == "integer"  # no primary key
    assert tools["lookup_slots"].parameters["required"] == ["vet", "starts_at"]  # a two-column key
    assert "staff_pay" not in clinic.config.sql.allowed_tables


def test_clinic_lookups_answer_by_key_and_by_name(clinic: Workspace) -> None:
    by_key = ask_gate(clinic, "lookup_pets", {"pet_id": "PET-202"}, "What breed is PET-202?")
    assert by_key["found"] and by_key["name"] == "Mango"
    by_name = ask_gate(clinic, "lookup_pets", {"name": "mango"}, "How much does mango weigh?")
    assert by_name["pet_id"] == "PET-202" and by_name["weight_kg"] == 4.2
    medicine = ask_gate(clinic, "lookup_medicines", {"code": "RX-104"}, "Is RX-104 in stock?")
    assert medicine["found"] and medicine["code"] == "RX-104"
    missing = ask_gate(clinic, "lookup_pets", {"pet_id": "PET-999"}, "What about PET-999?")
    assert missing["found"] is False


def test_a_made_up_key_is_refused_by_the_gate(clinic: Workspace) -> None:
    cctx = CallContext(clinic.principal(), Tracer(), Grounding("What breed is PET-202?"), resources=clinic.resources)
    outcome = asyncio.run(clinic.gate().run(ToolCall("c1", "lookup_pets", {"pet_id": "PET-201"}), cctx))
    assert outcome.status == "refused" and outcome.payload["error"]["code"] == "ungrounded_argument"


# -- init's errors: one line each, no traceback --------------------------------------------------------

def test_init_errors_are_one_clear_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just text long enough to have a header of sorts\n" * 4)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x.txt").write_text("x")
    cases = [
        (["--database", str(tmp_path / "nope.sqlite")], f"database file {tmp_path / 'nope.sqlite'} does not exist"),
        (["--database", str(empty)], f"the database {empty} has no tables to ask about"),
        (["--database", str(text)], f"{text} is not a readable SQLite database"),
        (["--documents", str(tmp_path / "nodocs")], f"documents folder {tmp_path / 'nodocs'} does not exist"),
        (["--database", "postgresql://nobody@127.0.0.1:1/none"], "cannot reach the PostgreSQL database"),
    ]
    for args, message in cases:
        result = init(str(tmp_path / "ws"), *args)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("toolcrib: ") and message in result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
        assert not (tmp_path / "ws").exists()
    result = init(str(tmp_path / "taken"), "--documents", str(tmp_path))
    assert result.exit_code == 2 and "exists and is not empty" in result.output


def test_documents_folders_become_access_groups(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for folder, text in (("vets", "Controlled drugs are kept in the locked cabinet."),
                         ("reception", "The front desk opens at eight."),
                         ("staff", "A folder named like init's own group adds no second one.")):
        (docs / folder).mkdir(parents=True)
        (docs / folder / "note.md").write_text(f"# Note\n\n{text}\n")
    (docs / "public.md").write_text("# Public\n\nEveryone may read this.\n")
    result = init(str(tmp_path / "ws"), "--documents", str(docs), "--groups-from-folders", "--no-ingest")
    assert result.exit_code == 0, result.output
    ws = Workspace.open(tmp_path / "ws")
    assert ws.config.retrieval.access_from_folders
    assert set(ws.config.groups) == {"staff", "vets", "reception"}
    assert ws.principal().groups == frozenset({"staff", "vets", "reception"})
    from toolcrib.retrieval.loaders import load_document

    root = docs.resolve()
    assert load_document(root / "vets" / "note.md", root=root, access_from_folders=True).meta.access == ("vets",)
    assert load_document(root / "public.md", root=root, access_from_folders=True).meta.access == ("*",)


# -- (a) twenty Spider schemas ------------------------------------------------------------------------

_SQL_TYPES = {"number": "NUMERIC", "boolean": "INTEGER"}


def _build_spider(schema: dict[str, Any], db: Path, rows: int = 3) -> dict[str, tuple[list[str], list[Any]]]:
    """An SQLite file with ``schema``'s tables, each with ``rows`` rows; per table, its key and the first
    row's key values."""
    tables = schema["table_names_original"]
    columns: dict[int, list[tuple[str, str]]] = {i: [] for i in range(len(tables))}
    for (table, name), kind in zip(schema["column_names_original"], schema["column_types"], strict=True):
        if table >= 0:
            columns[table].append((name, kind))
    keys: dict[int, list[str]] = {}
    for index in schema["primary_keys"]:
        for i in (index if isinstance(index, list) else [index]):
            table, name = schema["column_names_original"][i]
            keys.setdefault(table, []).append(name)
    first: dict[str, tuple[list[str], list[Any]]] = {}
    with sqlite3.connect(db) as conn:
        for t, table in enumerate(tables):
            if table.lower().startswith("sqlite_"):
                continue
            cols = ", ".join(f'"{c}" {_SQL_TYPES.get(k, "TEXT")}' for c, k in columns[t])
            pk = f', PRIMARY KEY ({", ".join(chr(34) + c + chr(34) for c in keys[t])})' if t in keys else ""
            conn.execute(f'CREATE TABLE "{table}" ({cols}{pk})')
            for r in range(1, rows + 1):
                values = [r if k in _SQL_TYPES else f"{table}{c}{r}".replace(" ", "") for c, k in columns[t]]
                conn.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(values))})', values)
                if r == 1:
                    key = keys.get(t, ["rowid"])
                    first[table] = (key, [1 if c == "rowid" else values[[n for n, _ in columns[t]].index(c)]
                                          for c in key])
    return first


@pytest.mark.skipif(not SPIDER.exists(), reason="the Spider data (../shared/data/spider) is not here")
def test_twenty_spider_schemas_each_table_answers_by_its_key(tmp_path: Path) -> None:
    schemas = {s["db_id"]: s for s in json.loads(SPIDER.read_text(encoding="utf-8"))}
    dev = SPIDER.with_name("dev.json")
    ids = sorted({q["db_id"] for q in json.loads(dev.read_text(encoding="utf-8"))})[:20] if dev.exists() \
        else sorted(schemas)[:20]
    assert len(ids) == 20
    answered = by_name = 0
    for db_id in ids:
        db = tmp_path / f"{db_id}.sqlite"
        first = _build_spider(schemas[db_id], db)
        result = init(str(tmp_path / db_id), "--database", str(db))
        assert result.exit_code == 0, (db_id, result.output)
        ws = Workspace.open(tmp_path / db_id)
        tools = {t.name: t for t in ws.registry}
        for table, (key, values) in first.items():
            from toolcrib.sql.lookup import lookup_name

            name = lookup_name(table)
            assert name in tools, (db_id, table)
            arguments = dict(zip(key, values, strict=True))
            request = f"Show me the {table} with " + " and ".join(f"{k} {v}" for k, v in arguments.items())
            row = ask_gate(ws, name, arguments, request)
            assert row["found"] and all(row[k] == v for k, v in arguments.items()), (db_id, table, row)
            answered += 1
            if "name" in tools[name].parameters["properties"]:  # and by the first name-like column's value
                column = next(lk.names[0] for lk in ws.config.lookups if lk.table == table)
                named = ask_gate(ws, name, {"name": row[column]}, f"Tell me about {row[column]}")
                assert named["found"] and named[column] == row[column], (db_id, table, named)
                by_name += 1
    assert answered >= 60 and by_name >= 20, (answered, by_name)


# -- (c) doctor ---------------------------------------------------------------------------------------

@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A generated workspace over a two-table database and two short documents, indexed."""
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE parts (part_no TEXT PRIMARY KEY, name TEXT, price NUMERIC);"
                           "INSERT INTO parts VALUES ('P-1', 'Bolt', 0.2), ('P-2', 'Nut', 0.1);"
                           "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello');")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "returns.md").write_text("# Returns\n\nParts may be returned within 30 days.\n")
    (docs / "hours.md").write_text("# Hours\n\nThe shop opens at nine.\n")
    result = init(str(tmp_path / "ws"), "--database", str(db), "--documents", str(docs))
    assert result.exit_code == 0, result.output
    assert "Indexed" in result.output
    return tmp_path / "ws"


def doctor(ws: Path) -> Any:
    return CliRunner().invoke(main, ["doctor", "--workspace", str(ws)])


def test_doctor_on_a_good_workspace_says_ok_to_every_check(small: Path) -> None:
    result = doctor(small)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"ok  config: {small / 'toolcrib.toml'} parses",
        f"ok  model: {MODEL} resolves (DryModel)",
        "ok  database: opens; 2 allowed tables exist",
        "ok  tools: 4 tools load",
        "ok  index: 2 documents indexed, all current",
        "ok  users: 1 user",
    ]


def test_doctor_on_a_broken_workspace_says_what_to_fix(small: Path, tmp_path: Path) -> None:
    (tmp_path / "docs" / "hours.md").write_text("# Hours\n\nThe shop opens at ten.\n")
    (tmp_path / "shop.sqlite").unlink()
    result = doctor(small)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"ok  config: {small / 'toolcrib.toml'} parses",
        f"ok  model: {MODEL} resolves (DryModel)",
        f"FIX database: database file {tmp_path / 'shop.sqlite'} does not exist: fix [data] database",
        f"FIX index: the documents changed since indexing: 1 new or changed (hours): "
        f"run `toolcrib ingest -w {small}`",
        "ok  users: 1 user",
    ]
    config = small / "toolcrib.toml"
    config.write_text(config.read_text().replace("[workspace]", "[workspace\n"))
    result = doctor(small)
    assert result.exit_code == 1
    assert len(result.output.splitlines()) == 1
    assert result.output.startswith(f"FIX config: {config}: not valid TOML: ")


def test_a_question_is_answered_from_a_generated_lookup_end_to_end(clinic: Workspace, tmp_path: Path) -> None:
    import yaml

    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"profile": {"answer": "native"}, "replies": [
        {"tool_calls": [{"name": "lookup_pets", "arguments": {"pet_id": "PET-205"}}]},
        "PET-205 is a Dachshund [lookup_pets#1]."]}), encoding="utf-8")
    result = CliRunner().invoke(main, ["ask", "What breed is PET-205?", "--model", f"scripted:{script}",
                                       "--workspace", str(clinic.root), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert [c["name"] for c in answer["executed"]] == ["lookup_pets"]
    assert "Dachshund" in answer["text"] and answer["citations"][0]["id"] == "lookup_pets#1"
    assert answer["abstained"] is False


@pytest.mark.postgres
def test_a_postgresql_database_gets_lookups_and_a_commented_table_without_a_key(tmp_path: Path) -> None:
    import uuid

    psycopg = pytest.importorskip("psycopg")
    server = "postgresql://postgres@127.0.0.1:5432"
    try:
        admin = psycopg.connect(f"{server}/test", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    name = f"toolcrib_init_{uuid.uuid4().hex[:10]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(f"{server}/{name}", autocommit=True) as conn:
            conn.execute("CREATE TABLE customers (id int PRIMARY KEY, full_name text NOT NULL);"
                         "INSERT INTO customers VALUES (1, 'Ann Lee'), (2, 'Bob Hale');"
                         "CREATE TABLE events (happened date, what text)")
        # a password in the DSN (this server trusts loopback, so any will do) is never written to the file
        with_password = f"postgresql://postgres:pw-{uuid.uuid4().hex[:8]}@127.0.0.1:5432/{name}"
        result = init(str(tmp_path / "ws"), "--database", with_password)
        assert result.exit_code == 0, result.output
        text = (tmp_path / "ws" / "toolcrib.toml").read_text()
        assert "pw-" not in text and f'dsn = "{server}/{name}"' in text
        assert "# events: no primary key, so no lookup; the SQL tool (sql_query) reads it." in text
        ws = Workspace.open(tmp_path / "ws")
        assert {t.name for t in ws.registry} == {"sql_query", "lookup_customers"}
        assert ask_gate(ws, "lookup_customers", {"id": 2}, "Who is customer 2?")["full_name"] == "Bob Hale"
        assert ask_gate(ws, "lookup_customers", {"name": "ann"}, "What is ann's id?")["id"] == 1
        assert "ok  postgresql: opens; 2 allowed tables exist" in doctor(tmp_path / "ws").output
        ws.resources["sql"].close()
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_doctor_checks_the_services_jwt_and_webhook_secrets(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOP_HOOK_SECRET", raising=False)
    monkeypatch.delenv("SHOP_JWT_SECRET", raising=False)
    config = small / "toolcrib.toml"
    config.write_text(config.read_text() + '\n[service.jwt]\nsecret_env = "SHOP_JWT_SECRET"\nalgorithms = ["HS256"]\n'
                      '\n[[webhooks]]\nurl = "https://chat.example.com/hooks"\nsecret_env = "SHOP_HOOK_SECRET"\n')
    result = doctor(small)
    assert result.exit_code == 1
    assert result.output.splitlines()[-2:] == [
        "FIX jwt: the environment variable SHOP_JWT_SECRET ([service.jwt] secret_env) is not set",
        "FIX webhooks: the environment variable SHOP_HOOK_SECRET (webhook https://chat.example.com/hooks) is not set",
    ]
    monkeypatch.setenv("SHOP_HOOK_SECRET", "s" * 32)
    monkeypatch.setenv("SHOP_JWT_SECRET", "j" * 32)
    result = doctor(small)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-2:] == ["ok  jwt: tokens checked against SHOP_JWT_SECRET",
                                               "ok  webhooks: 1 webhook, each with its secret set"]
