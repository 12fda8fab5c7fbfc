"""OpenAI's files and vector-store endpoints on loopback for tests, answering with the ``openai`` SDK's
own types (``VectorStore``, ``FileObject``, ``VectorStoreFile``, the deleted objects, cursor pages).

Stateful, like the real service: stores and files live in the server. A file named in ``fail`` ends
processing ``failed`` with a ``last_error``; one named in ``stuck`` never leaves ``in_progress``; any
other one is ``in_progress`` for its first ``polls`` retrievals, then ``completed``.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

from openai.types import FileDeleted, FileObject, VectorStore
from openai.types.vector_stores import VectorStoreFile, VectorStoreFileDeleted
from pydantic import BaseModel


@dataclass
class _Attached:
    file: VectorStoreFile
    polls: int = 0


@dataclass
class FakeFilesServer:
    """``/v1/vector_stores``, ``/v1/vector_stores/{id}/files[/{file_id}]`` and ``/v1/files[/{id}]``."""

    fail: set[str] = field(default_factory=set)
    stuck: set[str] = field(default_factory=set)
    polls: int = 1
    stores: dict[str, VectorStore] = field(default_factory=dict)
    files: dict[str, FileObject] = field(default_factory=dict)
    contents: dict[str, bytes] = field(default_factory=dict)
    attached: dict[str, dict[str, _Attached]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)
    authorization: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.requests.append((method, self.path))
                    server.authorization.append(self.headers.get("Authorization"))
                    status, reply = server.route(method, urlsplit(self.path).path, raw,
                                                 self.headers.get("Content-Type") or "")
                payload = (reply.model_dump_json() if isinstance(reply, BaseModel) else json.dumps(reply)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- the API --------------------------------------------------------------------------------

    def route(self, method: str, path: str, raw: bytes, content_type: str) -> tuple[int, Any]:
        parts = path.removeprefix("/v1/").split("/")
        if parts == ["vector_stores"] and method == "GET":
            return 200, _page(list(self.stores.values()))
        if parts == ["vector_stores"] and method == "POST":
            body = json.loads(raw)
            if not isinstance(body.get("name"), str):
                return _error(400, "'name' must be a string")
            store = VectorStore(id=f"vs_{uuid.uuid4().hex[:12]}", created_at=int(time.time()), name=body["name"],
                                object="vector_store", status="completed", usage_bytes=0,
                                file_counts={"cancelled": 0, "completed": 0, "failed": 0, "in_progress": 0,  # type: ignore[arg-type]
                                             "total": 0}, metadata=body.get("metadata"))
            self.stores[store.id] = store
            self.attached[store.id] = {}
            return 200, store
        if parts == ["files"] and method == "POST":
            return self._upload(raw, content_type)
        if len(parts) == 2 and parts[0] == "files" and method == "DELETE":
            self.contents.pop(parts[1], None)
            if self.files.pop(parts[1], None) is None:
                return _error(404, f"No such File object: {parts[1]}")
            return 200, FileDeleted(id=parts[1], deleted=True, object="file")
        if len(parts) >= 3 and parts[0] == "vector_stores" and parts[2] == "files":
            store = self.attached.get(parts[1])
            if store is None:
                return _error(404, f"No vector store found with id '{parts[1]}'.")
            return self._store_files(method, parts[1], store, parts[3] if len(parts) > 3 else None, raw)
        return _error(404, f"no route {method} {path}")

    def _upload(self, raw: bytes, content_type: str) -> tuple[int, Any]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields = {str(p.get_param("name", header="content-disposition")): p for p in message.iter_parts()}
        if "file" not in fields or fields.get("purpose") is None:
            return _error(400, "'file' and 'purpose' are required")
        part = fields["file"]
        purpose = str(fields["purpose"].get_content()).strip()
        if purpose != "assistants":
            return _error(400, f"purpose {purpose!r} is not valid for file_search")
        content = part.get_payload(decode=True)
        assert isinstance(content, bytes)
        upload = FileObject(id=f"file-{uuid.uuid4().hex[:12]}", bytes=len(content), created_at=int(time.time()),
                            filename=str(part.get_filename()), object="file", purpose="assistants",
                            status="processed")
        self.files[upload.id] = upload
        self.contents[upload.id] = content
        return 200, upload

    def _store_files(self, method: str, store_id: str, store: dict[str, _Attached], file_id: str | None,
                     raw: bytes) -> tuple[int, Any]:
        if file_id is None and method == "GET":
            return 200, _page([a.file for a in store.values()])
        if file_id is None and method == "POST":
            body = json.loads(raw)
            if body.get("file_id") not in self.files:
                return _error(404, f"No file found with id '{body.get('file_id')}'.")
            attributes = body.get("attributes") or {}
            if any(len(k) > 64 or (isinstance(v, str) and len(v) > 512) for k, v in attributes.items()):
                return _error(400, "attribute keys are at most 64 characters, string values at most 512")
            attached = VectorStoreFile(id=body["file_id"], created_at=int(time.time()), object="vector_store.file",
                                       status="in_progress", usage_bytes=0, vector_store_id=store_id,
                                       attributes=attributes)
            store[attached.id] = _Attached(attached)
            return 200, attached
        held = store.get(file_id or "")
        if held is None:
            return _error(404, f"No file found with id '{file_id}' in vector store '{store_id}'.")
        if method == "DELETE":
            del store[held.file.id]
            return 200, VectorStoreFileDeleted(id=held.file.id, deleted=True, object="vector_store.file.deleted")
        held.polls += 1
        name = self.files[held.file.id].filename if held.file.id in self.files else ""
        if held.file.status == "in_progress" and name not in self.stuck and held.polls > self.polls:
            if name in self.fail:
                error = {"code": "unsupported_file", "message": f"The file {name} could not be parsed."}
                held.file = VectorStoreFile.model_validate({**held.file.model_dump(), "status": "failed",
                                                            "last_error": error})
            else:
                held.file = held.file.model_copy(update={"status": "completed", "usage_bytes": 100})
        return 200, held.file


def _page(items: list[Any]) -> dict[str, Any]:
    data = [json.loads(i.model_dump_json()) for i in items]
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": False}


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
