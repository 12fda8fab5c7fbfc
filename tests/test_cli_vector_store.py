"""``toolcrib ingest --to openai-vector-store NAME`` against a loopback server speaking OpenAI's files
and vector-store endpoints (answers built from the openai SDK's own types)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed")

from click.testing import CliRunner

from fakes.openai_files_server import FakeFilesServer
from toolcrib.cli import main
from toolcrib.models import network

KEY = "sk-proj-SECRETvectorstore0123456789"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    docs = root / "docs"
    (docs / "policies").mkdir(parents=True)
    (root / "toolcrib.toml").write_text('[workspace]\nname = "store test"\n\n[data]\ndocuments = "docs"\n')
    (docs / "returns.md").write_text("# Returns\n\nUnused parts may be returned within 30 days.\n")
    (docs / "policies" / "warranty.markdown").write_text("# Warranty\n\nValves carry a two-year warranty.\n")
    (docs / "notes.docx").write_bytes(b"PK\x03\x04 not a supported type")
    (docs / ".hidden.md").write_text("never uploaded")
    return root


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeFilesServer]:
    with FakeFilesServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield server


def _ingest(ws: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["ingest", "--to", "openai-vector-store", "parts-docs", "--workspace", str(ws),
                                       *args])
    return result.exit_code, result.stdout, result.stderr


def test_creates_the_store_uploads_the_documents_and_prints_the_id(ws: Path, env: FakeFilesServer) -> None:
    code, out, err = _ingest(ws)
    assert code == 0, err
    (store,) = env.stores.values()
    assert out.strip() == store.id and store.name == "parts-docs"  # stdout: the id, for scripts
    assert f'vector_store_ids = ["{store.id}"]' in err and "2 uploaded" in err
    assert "skipped notes.docx: unsupported file type" in err
    names = sorted(f.filename for f in env.files.values())
    assert names == ["returns.md", "warranty.md"]  # .markdown sent as .md, which file_search reads
    attached = {a.file.attributes["toolcrib_path"]: a.file for a in env.attached[store.id].values()}  # type: ignore[index]
    assert sorted(attached) == ["policies/warranty.markdown", "returns.md"]
    assert all(f.status == "completed" for f in attached.values())  # polled until processed
    assert KEY not in out + err and env.authorization[0] == f"Bearer {KEY}"


def test_a_second_run_finds_the_store_by_name_and_uploads_only_what_changed(ws: Path, env: FakeFilesServer) -> None:
    assert _ingest(ws)[0] == 0
    (ws / "docs" / "returns.md").write_text("# Returns\n\nUnused parts may be returned within 14 days.\n")
    (ws / "docs" / "policies" / "warranty.markdown").unlink()
    (ws / "docs" / "shipping.txt").write_text("Orders ship within two working days.\n")
    code, out, err = _ingest(ws, "--json")
    assert code == 0, err
    report = json.loads(out)
    (store,) = env.stores.values()  # found by name, not created again
    assert report["vector_store_id"] == store.id and report["created"] is False
    assert report["uploaded"] == ["returns.md", "shipping.txt"] and report["removed"] == ["policies/warranty.markdown"]
    held = sorted(a.file.attributes["toolcrib_path"] for a in env.attached[store.id].values())  # type: ignore[index]
    assert held == ["returns.md", "shipping.txt"]
    assert sorted(f.filename for f in env.files.values()) == ["returns.md", "shipping.txt"]  # old uploads deleted
    assert b"14 days" in next(c for c in env.contents.values() if b"Returns" in c)

    code, out, _ = _ingest(ws, "--json")  # nothing changed: nothing sent
    assert json.loads(out)["uploaded"] == [] and len(json.loads(out)["unchanged"]) == 2


def test_each_file_carries_its_access_groups_and_a_change_of_access_uploads_it_again(
        ws: Path, env: FakeFilesServer) -> None:
    (ws / "docs" / "salaries.md").write_text("---\naccess: [hr, finance]\n---\n# Salaries\n\nBand B: 52,000.\n")
    assert _ingest(ws)[0] == 0
    (store,) = env.stores.values()
    attributes = {a.file.attributes["toolcrib_path"]: a.file.attributes  # type: ignore[index]
                  for a in env.attached[store.id].values()}
    # what the hosted file_search filters on: an hr-only file is not marked public
    assert {k: v for k, v in attributes["salaries.md"].items() if k.startswith("toolcrib_") and v is True} == {
        "toolcrib_access_hr": True, "toolcrib_access_finance": True}
    assert attributes["returns.md"]["toolcrib_public"] is True
    assert "toolcrib_access_hr" not in attributes["returns.md"]

    # the workspace's default access changes; the files did not, their access did
    config = ws / "toolcrib.toml"
    config.write_text(config.read_text() + '\n[retrieval]\ndefault_access = ["staff"]\n')
    code, out, err = _ingest(ws, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["uploaded"] == ["policies/warranty.markdown", "returns.md"] and report["unchanged"] == ["salaries.md"]
    now = {a.file.attributes["toolcrib_path"]: a.file.attributes  # type: ignore[index]
           for a in env.attached[store.id].values()}
    assert now["returns.md"].get("toolcrib_access_staff") is True and "toolcrib_public" not in now["returns.md"]


def test_a_document_with_more_access_groups_than_a_file_can_carry_is_skipped_with_why(
        ws: Path, env: FakeFilesServer) -> None:
    groups = ", ".join(f"g{n}" for n in range(15))
    (ws / "docs" / "wide.md").write_text(f"---\naccess: [{groups}]\n---\n# Wide\n\nText.\n")
    code, _, err = _ingest(ws)
    assert code == 0, err
    assert "skipped wide.md: its access list names 15 groups" in err


def test_a_file_the_store_cannot_process_is_reported_and_fails_the_command(ws: Path, env: FakeFilesServer) -> None:
    env.fail = {"warranty.md"}
    code, out, err = _ingest(ws)
    assert code == 1
    (store,) = env.stores.values()
    assert out.strip() == store.id  # the id is still printed: the other files are usable
    assert "failed policies/warranty.markdown: unsupported_file: The file warranty.md could not be parsed." in err


def test_processing_that_outlasts_the_wait_is_reported_not_waited_for_forever(ws: Path, env: FakeFilesServer) -> None:
    env.stuck = {"returns.md"}
    code, out, _ = _ingest(ws, "--wait", "0.5", "--json")
    assert code == 1
    report = json.loads(out)
    assert report["pending"] == ["returns.md"] and report["ready"] is False and report["failed"] == []
    env.stuck = set()
    code, out, _ = _ingest(ws, "--json")  # a later run waits for what was still processing
    assert code == 0 and json.loads(out)["unchanged"] == ["policies/warranty.markdown", "returns.md"]


def test_errors_name_what_failed_without_the_key_and_the_network_guard_holds(
        ws: Path, env: FakeFilesServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", env.url.replace("/v1", "/nowhere"))
    code, _, err = _ingest(ws)
    assert code == 2 and "listing vector stores failed: HTTP 404" in err and KEY not in err

    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    monkeypatch.setattr(network, "ALLOW_NETWORK", False)
    code, _, err = _ingest(ws)
    assert code == 2 and "ALLOW_NETWORK" in err

    monkeypatch.delenv("OPENAI_API_KEY")
    code, _, err = _ingest(ws)
    assert code == 2 and "OPENAI_API_KEY" in err
