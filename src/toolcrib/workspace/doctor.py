"""``toolcrib doctor``: what a workspace needs before it can answer, checked one thing at a time without
loading a model's weights or building anything: each check is ok, or says what to fix."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from toolcrib.config import load_config
from toolcrib.errors import ToolcribError
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import CONFIG_NAME


@dataclass(frozen=True)
class Check:
    """One line of the report: the check's name, whether it passed, and what was found or what to do."""

    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok ' if self.ok else 'FIX'} {self.name}: {self.detail}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def diagnose(root: Path) -> Iterator[Check]:
    """The checks of the workspace at ``root``, in the order a user would fix them; a config that does
    not parse stops the rest."""
    config_file = root / CONFIG_NAME
    try:
        config = load_config(config_file)
    except ToolcribError as exc:
        yield Check("config", False, _first_line(exc))
        return
    yield Check("config", True, f"{config_file} parses")
    ws = Workspace(root, config)
    yield _guarded("model", lambda: _model(ws))
    database_ok = True
    for check in _database(ws):
        database_ok = database_ok and check.ok
        yield check
    if database_ok:
        yield _guarded("tools", lambda: _tools(ws))
    if config.data.documents or "vector_search" in config.tools.builtin:
        yield _guarded("index", lambda: _index(ws))
    yield _guarded("users", lambda: _users(ws))
    if ws.policy_dsn:
        yield _guarded("policy store", lambda: _postgres(ws.policy_dsn or "", "[policy] dsn"))
    if config.service.jwt is not None:
        yield _guarded("jwt", lambda: _jwt(ws))
    if config.webhooks:
        yield _guarded("webhooks", lambda: _webhooks(ws))


def _guarded(name: str, check: Callable[[], str]) -> Check:
    """``check`` returns what it found; a ToolcribError (or any failure) becomes what to fix."""
    try:
        return Check(name, True, check())
    except ToolcribError as exc:
        return Check(name, False, _first_line(exc))
    except Exception as exc:  # a backend's own error: its first line, never a traceback
        return Check(name, False, f"{type(exc).__name__}: {_first_line(exc)}")


class _Fix(ToolcribError):
    """What a check found wrong, already phrased as what to do."""


def _model(ws: Workspace) -> str:
    cfg = ws.config.model
    if cfg.spec.partition(":")[0] == "local":  # resolve the weights' files; never load them
        path = cfg.settings.get("model_path")
        if path:
            if not Path(str(path)).expanduser().is_file():
                raise _Fix(f"the model file {path} does not exist: fix [model.settings] model_path")
            return f"local model file {path}"
        from toolcrib.models.weights import model_part_paths

        missing = [p for p in model_part_paths() if not p.exists()]
        if missing:
            raise _Fix(f"the embedded model's weights are incomplete ({missing[0].name} is missing): "
                       "reinstall toolcrib")
        return "local: the bundled Qwen2.5-Coder-1.5B weights are installed"
    model = ws.model()  # a remote backend checks its key and address here, without a request
    return f"{cfg.spec} resolves ({type(model).__name__})"


def _database(ws: Workspace) -> Iterator[Check]:
    from toolcrib.sql.introspect import read_tables
    cfg = ws.config
    target: str | Path | None = cfg.sql.dsn or (ws.root / cfg.data.database if cfg.data.database else None)
    if target is None:
        return
    name = "postgresql" if cfg.sql.dsn else "database"
    if isinstance(target, Path) and not target.exists() and target.with_name("seed.sql").exists():
        yield Check(name, True, f"{target.name} is built from seed.sql on first use")
        return
    try:
        tables = {t.name.lower() for t in read_tables(target)}
    except ToolcribError as exc:
        what = "fix [data] database" if name == "database" else "fix [sql] dsn or start the server"
        yield Check(name, False, f"{_first_line(exc)}: {what}")
        return
    missing = [t for t in cfg.sql.allowed_tables if t.lower() not in tables]
    if missing:
        yield Check(name, False, f"[sql] allowed_tables names tables the database lacks: {', '.join(missing)}")
        return
    yield Check(name, True, f"opens; {len(cfg.sql.allowed_tables)} allowed tables exist")


def _tools(ws: Workspace) -> str:
    names = ws.registry.names()
    why = "".join(f"; {n} not offered: {reason}" for n, reason in ws.unavailable.items())
    return f"{len(names)} tools load{why}"


def _index(ws: Workspace) -> str:
    from toolcrib.retrieval.loaders import UnreadableDocument, discover, load_document
    docs = ws.documents_dir
    fix = f"run `toolcrib ingest -w {ws.root}`"
    if docs is None:
        raise _Fix("vector_search needs documents: set [data] documents")
    if not docs.is_dir():
        raise _Fix(f"the documents folder {docs} does not exist: fix [data] documents")
    index = ws.index()
    settings = index.settings()
    if settings is None:
        raise _Fix(f"no index yet: {fix}")
    if settings.embedder != ws.embedder.id:
        raise _Fix(f"the index was built with another embedder ({settings.embedder}): "
                   f"run `toolcrib ingest --reindex -w {ws.root}`")
    indexed = index.documents()
    cfg = ws.config.retrieval
    changed: list[str] = []
    seen: set[str] = set()
    for file, root in discover([docs]):
        try:
            doc = load_document(file, root=root, default_access=cfg.default_access,
                                access_from_folders=cfg.access_from_folders)
        except UnreadableDocument:
            continue
        seen.add(doc.meta.doc_id)
        old = indexed.get(doc.meta.doc_id)
        if old is None or old.content_hash != doc.meta.content_hash:
            changed.append(doc.meta.doc_id)
    gone = sorted(set(indexed) - seen)
    if changed or gone:
        what = [f"{len(changed)} new or changed ({', '.join(changed[:3])})" if changed else "",
                f"{len(gone)} removed ({', '.join(gone[:3])})" if gone else ""]
        raise _Fix(f"the documents changed since indexing: {'; '.join(w for w in what if w)}: {fix}")
    return f"{len(indexed)} documents indexed, all current"


def _users(ws: Workspace) -> str:
    cfg = ws.config
    if not cfg.users:
        return "no users: everyone is one local user with every tool"
    default = cfg.workspace.default_user
    if default and default not in cfg.users:
        raise _Fix(f"[workspace] default_user '{default}' is not among [users]")
    for name, user in cfg.users.items():
        unknown = [g for g in user.groups if g not in cfg.groups]
        if unknown and cfg.groups:
            raise _Fix(f"user '{name}' is in groups no [groups] section defines: {', '.join(unknown)}")
    return f"{len(cfg.users)} user{'' if len(cfg.users) == 1 else 's'}"


def _postgres(dsn: str, setting: str) -> str:
    from toolcrib.sql.introspect import read_tables

    try:
        read_tables(dsn)
    except ToolcribError as exc:
        raise _Fix(f"{_first_line(exc)}: fix {setting} or start the server") from None
    return "PostgreSQL reachable"


def _jwt(ws: Workspace) -> str:
    jwt = ws.config.service.jwt
    assert jwt is not None
    sources = [s for s in (jwt.jwks_file, jwt.jwks_url, jwt.secret_env) if s]
    if len(sources) != 1:
        raise _Fix("set exactly one of [service.jwt] jwks_file, jwks_url or secret_env")
    if jwt.jwks_file and not (ws.root / jwt.jwks_file).is_file():
        raise _Fix(f"[service.jwt] jwks_file {jwt.jwks_file} does not exist")
    if jwt.secret_env:
        if not os.environ.get(jwt.secret_env):
            raise _Fix(f"the environment variable {jwt.secret_env} ([service.jwt] secret_env) is not set")
        if any(a.startswith(("RS", "ES", "PS")) for a in jwt.algorithms) and not any(
                a.startswith("HS") for a in jwt.algorithms):
            raise _Fix("a shared secret signs HS256 tokens: set [service.jwt] algorithms = [\"HS256\"]")
    return f"tokens checked against {sources[0]}"


def _webhooks(ws: Workspace) -> str:
    for hook in ws.config.webhooks:
        if not hook.secret_env:
            raise _Fix(f"webhook {hook.url} sends unsigned bodies: set secret_env")
        if not os.environ.get(hook.secret_env):
            raise _Fix(f"the environment variable {hook.secret_env} (webhook {hook.url}) is not set")
    n = len(ws.config.webhooks)
    return f"{n} webhook{'' if n == 1 else 's'}, each with its secret set"
