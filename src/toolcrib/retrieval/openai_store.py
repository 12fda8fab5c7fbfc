"""The workspace's documents in an OpenAI vector store, for the Responses API's hosted ``file_search``
(``toolcrib ingest --to openai-vector-store NAME``).

The store is found by name or created; each document (the files ``toolcrib ingest`` reads) is uploaded
(``files.create``, purpose ``assistants``) and attached (``vector_stores.files.create``) with its
workspace path, a hash of its content and access list, and one boolean attribute per group of its
``access`` list (``models.responses.access_attribute``: what the hosted file_search filters on, so a
principal finds only what they may read) as attributes, so running it again uploads only what changed,
replaces a changed file (or one whose access changed) and removes one no longer in the workspace; files
the store holds without those attributes (attached by someone else) are left alone. A file's
attributes are at most 16, so a document may name at most 14 access groups. Processing is polled (every 0.25 s at first,
then up to every ``poll_s``), bounded by ``wait_s``; a later run waits again for what was still processing.

Built on the ``openai`` SDK with the network guard every model backend has (tests reach only loopback);
the key comes from the setting or the environment and never appears in a message.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from toolcrib.errors import ModelUnavailable, OperatorError
from toolcrib.models._remote import _SECRETISH, _error_detail
from toolcrib.models.responses import access_attribute
from toolcrib.retrieval.documents import EVERYONE
from toolcrib.retrieval.loaders import SUPPORTED_SUFFIXES, UnreadableDocument, discover, load_document

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["StoreReport", "VectorStoreSync"]

_T = TypeVar("_T")
# OpenAI's file_search knows .md, .txt and .html; toolcrib also reads these spellings of them
_UPLOAD_SUFFIX = {".markdown": ".md", ".text": ".txt", ".htm": ".html"}
PATH_ATTRIBUTE, HASH_ATTRIBUTE = "toolcrib_path", "toolcrib_sha256"
MAX_ACCESS_GROUPS = 14  # of the 16 attributes a vector-store file may have, after path and hash


@dataclass
class StoreReport:
    """What one sync did, by workspace path; ``pending``: still processing when the wait ended."""

    store_id: str
    name: str
    created: bool = False
    uploaded: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.failed and not self.pending

    def to_dict(self) -> dict[str, Any]:
        return {"vector_store_id": self.store_id, "name": self.name, "created": self.created,
                "uploaded": self.uploaded, "unchanged": self.unchanged, "removed": self.removed,
                "failed": [{"path": p, "reason": r} for p, r in self.failed], "pending": self.pending,
                "skipped": [{"path": p, "reason": r} for p, r in self.skipped], "ready": self.ready}


@dataclass(frozen=True)
class _Local:
    path: str  # relative to the folder it was found in, as toolcrib ingest names it
    file: Path
    sha256: str  # of the content and the access list
    access: tuple[str, ...]


class VectorStoreSync:
    """Brings one named vector store up to date with a set of document folders or files."""

    def __init__(self, *, base_url: str, api_key: str | None, api_version: str | None = None,
                 timeout_s: float = 120.0, wait_s: float = 600.0, poll_s: float = 2.0,
                 progress: Callable[[str, int, int], None] | None = None) -> None:
        from toolcrib.models.openai import openai_client

        self.base_url = base_url
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.progress = progress or (lambda stage, done, total: None)
        self._api_key = api_key
        self._client: OpenAI
        self._client, self._errors, self._headers = openai_client(
            base_url=base_url, api_key=api_key, timeout_s=timeout_s, api_version=api_version)

    def close(self) -> None:
        self._client.close()

    def sync(self, name: str, paths: Iterable[Path], *, default_access: Sequence[str] = (EVERYONE,)) -> StoreReport:
        """Find or create the store ``name``, upload what changed, remove what is gone, wait for processing.
        ``default_access``: the access list of a document whose metadata names none (the workspace's)."""
        local, skipped = _documents(paths, default_access)
        store, created = self._store(name)
        report = StoreReport(store.id, name, created=created, skipped=skipped)
        held = {} if created else self._held(store.id)  # workspace path -> (file id, sha256, status)
        todo: list[_Local] = []
        attached: dict[str, str] = {}  # file id -> workspace path, to wait for
        for doc in local:
            old = held.pop(doc.path, None)
            if old and old[1] == doc.sha256 and old[2] in ("completed", "in_progress"):
                report.unchanged.append(doc.path)
                if old[2] == "in_progress":  # an earlier run stopped waiting for it
                    attached[old[0]] = doc.path
                continue
            if old:
                self._remove(store.id, old[0])
            todo.append(doc)
        for path, (file_id, _, _) in sorted(held.items()):
            self._remove(store.id, file_id)
            report.removed.append(path)
        for n, doc in enumerate(todo, 1):
            attached[self._upload(store.id, doc)] = doc.path
            report.uploaded.append(doc.path)
            self.progress("upload", n, len(todo))
        self._wait(store.id, attached, report)
        return report

    # --- steps ---------------------------------------------------------------------------------

    def _store(self, name: str) -> tuple[Any, bool]:
        stores = self._call("listing vector stores", lambda: list(self._client.vector_stores.list(
            limit=100, extra_headers=self._headers)))
        found = [s for s in stores if s.name == name]
        if found:
            return max(found, key=lambda s: s.created_at), False  # the newest of that name
        return self._call(f"creating the vector store '{name}'", lambda: self._client.vector_stores.create(
            name=name, metadata={"created_by": "toolcrib ingest"}, extra_headers=self._headers)), True

    def _held(self, store_id: str) -> dict[str, tuple[str, str, str]]:
        files = self._call("listing the vector store's files", lambda: list(self._client.vector_stores.files.list(
            store_id, limit=100, extra_headers=self._headers)))
        held: dict[str, tuple[str, str, str]] = {}
        for f in files:
            attributes = f.attributes or {}
            path = attributes.get(PATH_ATTRIBUTE)
            if isinstance(path, str):
                held[path] = (f.id, str(attributes.get(HASH_ATTRIBUTE) or ""), f.status)
        return held

    def _upload(self, store_id: str, doc: _Local) -> str:
        upload_name = doc.file.with_suffix(_UPLOAD_SUFFIX.get(doc.file.suffix.lower(), doc.file.suffix)).name
        content = doc.file.read_bytes()
        uploaded = self._call(f"uploading {doc.path}", lambda: self._client.files.create(
            file=(upload_name, content), purpose="assistants", extra_headers=self._headers))
        self._call(f"attaching {doc.path}", lambda: self._client.vector_stores.files.create(
            store_id, file_id=uploaded.id, attributes=_attributes(doc), extra_headers=self._headers))
        return str(uploaded.id)

    def _remove(self, store_id: str, file_id: str) -> None:
        """Detach a file from the store and delete the uploaded file (nothing else uses it)."""
        self._call("removing an old file from the vector store", lambda: self._client.vector_stores.files.delete(
            file_id, vector_store_id=store_id, extra_headers=self._headers))
        self._call("deleting an old uploaded file", lambda: self._client.files.delete(
            file_id, extra_headers=self._headers))

    def _wait(self, store_id: str, attached: dict[str, str], report: StoreReport) -> None:
        """Poll each attached file until it is processed or failed, or until ``wait_s`` has passed."""
        pending = dict(attached)
        deadline = time.monotonic() + self.wait_s
        total = len(attached)
        interval = min(0.25, self.poll_s)  # small files are often done at once: poll soon, then less often
        while pending:
            for file_id, path in list(pending.items()):
                got = self._retrieve(store_id, file_id, path)
                if got.status == "completed":
                    del pending[file_id]
                elif got.status in ("failed", "cancelled"):
                    error = got.last_error
                    reason = f"{error.code}: {self._scrub(error.message)}" if error else got.status
                    report.failed.append((path, reason))
                    del pending[file_id]
            self.progress("process", total - len(pending), total)
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(max(0.0, min(interval, deadline - time.monotonic())))
            interval = min(interval * 2, self.poll_s)
        report.pending = sorted(pending.values())

    def _retrieve(self, store_id: str, file_id: str, path: str) -> Any:
        return self._call(f"checking {path}", lambda: self._client.vector_stores.files.retrieve(
            file_id, vector_store_id=store_id, extra_headers=self._headers))

    # --- errors --------------------------------------------------------------------------------

    def _call(self, what: str, send: Callable[[], _T]) -> _T:
        """One SDK request; a failure becomes one line that says what failed, without the key."""
        from toolcrib.models.network import ensure_network_allowed

        ensure_network_allowed(self.base_url)
        try:
            return send()
        except ModelUnavailable:
            raise
        except self._errors.connection as exc:
            if isinstance(exc.__cause__, ModelUnavailable):
                raise exc.__cause__ from None
            problem = f"cannot reach {self.base_url} ({type(exc.__cause__ or exc).__name__}); check 'base_url' / " \
                      "OPENAI_BASE_URL"
        except self._errors.status as exc:
            status = int(getattr(exc, "status_code", 0) or 0)
            detail, _ = _error_detail(getattr(exc, "body", None))
            hint = " (check the setting 'api_key' or OPENAI_API_KEY)" if status in (401, 403) else ""
            problem = f"HTTP {status}{hint}" + (f": {self._scrub(detail)}" if detail else "")
        except self._errors.base as exc:
            problem = type(exc).__name__
        raise OperatorError(f"{what} failed: {problem}")

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return _SECRETISH.sub("***", text)[:300]


def _attributes(doc: _Local) -> dict[str, str | float | bool]:
    return {PATH_ATTRIBUTE: doc.path[:512], HASH_ATTRIBUTE: doc.sha256,
            **{access_attribute(group): True for group in doc.access}}


def _documents(paths: Iterable[Path], default_access: Sequence[str]) -> tuple[list[_Local], list[tuple[str, str]]]:
    """The files ``toolcrib ingest`` would read under ``paths`` (by relative path) with their access lists,
    and those skipped (with why)."""
    found: list[_Local] = []
    skipped: list[tuple[str, str]] = []
    for file, root in discover(paths):
        rel = file.relative_to(root).as_posix()
        if file.suffix.lower() not in SUPPORTED_SUFFIXES:
            skipped.append((rel, f"unsupported file type '{file.suffix or file.name}'"))
            continue
        try:
            meta = load_document(file, root=root, default_access=default_access).meta
        except UnreadableDocument as exc:
            skipped.append((rel, str(exc)))
            continue
        if len(meta.access) > MAX_ACCESS_GROUPS:
            skipped.append((rel, f"its access list names {len(meta.access)} groups; a vector-store file can carry "
                                 f"at most {MAX_ACCESS_GROUPS}"))
            continue
        # the loader's hash of the file and its sidecar, and the access list: either changing uploads again
        digest = hashlib.sha256(f"{meta.content_hash}\0access:{','.join(meta.access)}".encode()).hexdigest()
        found.append(_Local(rel, file, digest, meta.access))
    return found, skipped
