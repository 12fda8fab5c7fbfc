"""A workspace: a folder with ``toolcrib.toml``, its tools, documents, data, users and state.

``Workspace.open(path)`` reads and checks the config; ``workspace.runner(...)`` assembles the model,
the Gate (registry, policy, approvals, audit, envelopes, scanner) and the Runner from it. Where a
workspace is comes from ``locate``, its tools from ``tools``, its data from ``data``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from toolcrib.agent.runner import Limits, Mode, Runner, RunnerSettings
from toolcrib.agent.runs import FileRunStore, RunStore
from toolcrib.config import WorkspaceConfig, load_config
from toolcrib.errors import ConfigError
from toolcrib.models.base import Model
from toolcrib.models.registry import get_model
from toolcrib.policy.policy import GroupPolicy, Rule
from toolcrib.policy.principal import Principal
from toolcrib.tools.context import GateSettings
from toolcrib.tools.gate import Gate
from toolcrib.tools.registry import Registry
from toolcrib.tools.tool import Tool
from toolcrib.trace.journal import Retention
from toolcrib.trace.tracer import JsonlExporter, Tracer
from toolcrib.workspace.data import Lazy, build_database, building
from toolcrib.workspace.locate import CONFIG_NAME, resolve_workspace, template_of
from toolcrib.workspace.tools import (
    check_names,
    load_module,
    module_tools,
    read_only_sql,
    sandbox_for,
    web_search_tool,
    web_search_unavailable,
    with_provenance,
)

if TYPE_CHECKING:  # imported where used, so opening a workspace loads no retrieval or store backend
    from toolcrib.mcp.client import MCPTools
    from toolcrib.policy.approvals import ApprovalStore
    from toolcrib.policy.audit import AuditStore
    from toolcrib.retrieval import Chunker, Embedder, HybridRetriever, Index, IngestReport
    from toolcrib.sandbox import Sandbox
    from toolcrib.webhooks import DeliveryLog

G = TypeVar("G", bound=Gate)


@dataclass
class Workspace:
    root: Path
    config: WorkspaceConfig
    _tools: list[Tool] = field(default_factory=list)
    journal_traces: bool = False  # traces in one journal per process, not a file per trace (``toolcrib serve``)

    def __post_init__(self) -> None:
        shipped = template_of(self.root)
        if shipped:  # its database, index and state would be written into the installed package
            raise ConfigError(f"the '{shipped}' template inside the package is read-only; open it "
                              f"with Workspace.open (a writable copy) or `toolcrib init --template {shipped} PATH`",
                              file=self.config_file)

    @classmethod
    def open(cls, path: str | Path | None = None, *, template: str = "") -> Workspace:
        root = resolve_workspace(path, template=template)
        return cls(root, load_config(root / CONFIG_NAME))

    @property
    def config_file(self) -> str:
        return str(self.root / CONFIG_NAME)

    # -- places -----------------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return self.root / self.config.paths.state

    @property
    def traces_dir(self) -> Path:
        return self.state_dir / "traces"

    @property
    def index_dir(self) -> Path:
        return self.state_dir / "index"

    @property
    def documents_dir(self) -> Path | None:
        docs = self.config.data.documents
        return self.root / docs if docs else None

    @cached_property
    def database(self) -> Path | None:
        """The workspace's SQLite file, built from ``seed.sql`` beside it when missing."""
        if not self.config.data.database:
            return None
        db = self.root / self.config.data.database
        build_database(db)
        if not db.exists():
            raise ConfigError(f"database file {db.name} does not exist", file=self.config_file, key="data.database")
        return db

    # -- users and policy -------------------------------------------------------------------------

    def principal(self, user: str | None = None) -> Principal:
        """The Principal for a configured user name (the session's identity, never the model's)."""
        users = self.config.users
        name = user or self.config.workspace.default_user or next(iter(users), None)
        if name is None:
            return Principal("local", groups=frozenset({"*"}))
        if name not in users:
            raise ConfigError(f"unknown user '{name}'; configured users: {', '.join(users)}", file=self.config_file,
                              key="users")
        u = users[name]
        return Principal(name, tenant=u.tenant, groups=frozenset(u.groups), display_name=u.name or name)

    def _rules(self) -> list[Rule]:
        rules: list[Rule] = []
        for ref in self.config.policy.rules:
            file, _, func = ref.partition(":")
            fn = getattr(load_module(self.root / file), func, None)
            if not callable(fn):
                raise ConfigError(f"'{ref}' is not a callable 'FILE:FUNCTION'", file=self.config_file,
                                  key="policy.rules")
            rules.append(fn)
        return rules

    @cached_property
    def policy(self) -> GroupPolicy:
        cfg = self.config
        if not cfg.groups:  # no groups configured: everyone gets every tool
            return GroupPolicy({"*": ["*"]}, {}, self._rules(), version=cfg.policy.version)
        return GroupPolicy({g: s.tools for g, s in cfg.groups.items()}, {g: s.approve for g, s in cfg.groups.items()},
                           self._rules(), version=cfg.policy.version,
                           separation_of_duties=cfg.policy.separation_of_duties)

    # -- tools and resources ----------------------------------------------------------------------

    @cached_property
    def registry(self) -> Registry:
        registry = Registry()
        for name in self.config.tools.builtin:  # first: small models favour the tools listed first
            if name not in self.unavailable:  # a builtin that cannot work here is not offered (see why)
                registry.add(self._builtin_tool(name))
        for t in module_tools(self.root, self.config, self.config_file):
            registry.add(t)
        for t in self._lookup_tools():
            registry.add(t)
        mcp = self.mcp_tools
        for t in mcp.tools if mcp is not None else ():
            registry.add(t)
        check_names(self.config, [*registry.names(), *self.unavailable], self.config_file)
        tools = (with_provenance(t, self.config, self.config_file) for t in registry)
        if mcp is None:
            return Registry(tools)
        from toolcrib.mcp.client import PinnedRegistry

        return PinnedRegistry(tools, mcp.disabled)

    def _lookup_tools(self) -> list[Tool]:
        """The ``[[lookups]]`` tools, generated from the database's schema (``toolcrib.sql.lookup``)."""
        if not self.config.lookups:
            return []
        from toolcrib.sql.lookup import lookup_tools

        try:
            return lookup_tools(self.resources["sql"], [(lk.table, lk.key, lk.names, lk.description)
                                                        for lk in self.config.lookups])
        except ConfigError as exc:
            raise ConfigError(exc.message, file=self.config_file, key="lookups") from None

    @cached_property
    def mcp_tools(self) -> MCPTools | None:
        """The tools of the MCP servers in ``[mcp.servers]`` (listed once, pinned; a server that is down
        contributes none, with a warning on stderr). None when none is configured."""
        if not self.config.mcp.servers:
            return None
        from toolcrib.mcp.client import load_mcp_tools, warn

        tools = load_mcp_tools(self.config.mcp, self.root, self.state_dir)
        warn(tools.warnings)
        return tools

    @cached_property
    def unavailable(self) -> dict[str, str]:
        """The builtins the configuration asks for that cannot be offered here, each with why (shown by
        ``toolcrib tools``): no search provider or its key, no working sandbox."""
        why: dict[str, str] = {}
        builtin = self.config.tools.builtin
        if "web_search" in builtin:
            reason = web_search_unavailable(self.config.web_search)
            if reason:
                why["web_search"] = reason
        if "code_interpreter" in builtin:
            reason = self.sandbox.unavailable()
            if reason:
                why["code_interpreter"] = reason
        return why

    @cached_property
    def sandbox(self) -> Sandbox:
        """The bubblewrap sandbox of ``code_interpreter``, with the ``[code_interpreter]`` limits."""
        return sandbox_for(self.config.code_interpreter)

    @property
    def artifacts_dir(self) -> Path:
        """Where tools keep the files they produce (``code_interpreter/<run id>/`` for the code interpreter);
        an artifact's id is its path under this folder."""
        return self.state_dir / "artifacts"

    def _builtin_tool(self, name: str) -> Tool:
        if name == "web_search":
            return web_search_tool(self.config.web_search)
        if name == "code_interpreter":
            from toolcrib.sandbox import make_code_interpreter_tool

            return make_code_interpreter_tool(self.sandbox, self.artifacts_dir, relative_to=self.root)
        if name == "sql_query":
            from toolcrib.sql.grammar import closed_columns, select_pattern
            from toolcrib.sql.tool import make_sql_query_tool

            sql = self.resources.get("sql")
            if sql is None:
                return make_sql_query_tool()
            pattern = select_pattern(sql.schema(), closed_columns(sql)) if self.config.sql.grammar else None
            return make_sql_query_tool(sql.describe_schema(), pattern=pattern)
        from toolcrib.retrieval.tool import make_vector_search_tool

        return make_vector_search_tool()

    @cached_property
    def resources(self) -> dict[str, Any]:
        """What tools can reach through ``ctx.resources``: the database, the SQL guard, the retriever."""
        res: dict[str, Any] = {"workspace": self.root}
        if self.config.data.database:
            res["db"] = self.database
        if "sql_query" in self.config.tools.builtin or self.config.lookups:
            res["sql"] = read_only_sql(self.config, self.database, self.config_file)
        if "vector_search" in self.config.tools.builtin:
            res["retriever"] = Lazy(self.retriever)
        return res

    # -- documents ----------------------------------------------------------------------------------

    def chunker(self) -> Chunker:
        from toolcrib.retrieval import FixedChunker, ParentChildChunker, StructureChunker

        kinds: dict[str, type[Chunker]] = {"structure": StructureChunker, "fixed": FixedChunker,
                                           "parent_child": ParentChildChunker}
        return kinds[self.config.retrieval.chunker]()

    @cached_property
    def embedder(self) -> Embedder:
        from toolcrib.retrieval import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()

    def index(self) -> Index:
        cfg = self.config.retrieval
        if cfg.index == "pgvector":
            from toolcrib.retrieval import PgVectorIndex

            if not cfg.dsn:
                raise ConfigError("the pgvector index needs a PostgreSQL DSN", file=self.config_file,
                                  key="retrieval.dsn")
            return PgVectorIndex(cfg.dsn)
        from toolcrib.retrieval import LanceIndex

        return LanceIndex(self.index_dir)

    def ingest(self, paths: list[Path] | None = None, *, reindex: bool = False,
               progress: Callable[[str, int, int], None] | None = None, index: Index | None = None) -> IngestReport:
        """Bring ``index`` (default: the workspace's) up to date with ``paths`` (default: its documents)."""
        from toolcrib.retrieval import ingest

        targets = paths or ([self.documents_dir] if self.documents_dir else [])
        if not targets:
            raise ConfigError("nothing to ingest: give PATHs or set data.documents", file=self.config_file,
                              key="data.documents")
        return ingest(targets, index or self.index(), self.embedder, self.chunker(), progress,
                      default_access=self.config.retrieval.default_access,
                      access_from_folders=self.config.retrieval.access_from_folders, reindex=reindex)

    def retriever(self) -> HybridRetriever:
        """The hybrid retriever over the workspace index; the first use builds the index from the documents
        (and rebuilds one an earlier toolcrib laid out differently)."""
        from toolcrib.retrieval import DEFAULT_THRESHOLD, HybridRetriever

        index = self.ensure_index()
        cfg = self.config.retrieval
        return HybridRetriever(index, self.embedder, excerpt_chars=cfg.excerpt_chars, top_k=cfg.top_k,
                               threshold=cfg.min_score if cfg.min_score is not None else DEFAULT_THRESHOLD)

    def ensure_index(self) -> Index:
        """The workspace index, built from the documents first when it is missing, laid out by an earlier
        toolcrib or built with another embedder (whose vectors its queries could not be compared with).
        Front ends call it before a run, so a first search does not spend its tool's time limit building
        the index."""
        from toolcrib.retrieval import IndexSettings

        index = self.index()

        def outdated() -> bool:
            settings = index.settings()
            current = (settings is not None and settings.layout == IndexSettings.layout
                       and settings.embedder == self.embedder.id)
            return not current and self.documents_dir is not None and self.documents_dir.exists()

        if outdated():
            with building(self.state_dir / ".index.lock"):  # one builder, across threads and processes
                if outdated():
                    first = index.settings() is None
                    print("Indexing the workspace documents (first use only)…" if first else
                          "Rebuilding the workspace index (built by an earlier toolcrib)…", file=sys.stderr)
                    self.ingest(index=index, reindex=not first)  # the same index object sees the new commit
        return index

    # -- assembling a run -------------------------------------------------------------------------

    @overload
    def gate(self, *, approvals: ApprovalStore | None = None, audit: AuditStore | None = None) -> Gate: ...

    @overload
    def gate(self, *, approvals: ApprovalStore | None = None, audit: AuditStore | None = None,
             cls: type[G]) -> G: ...

    def gate(self, *, approvals: ApprovalStore | None = None, audit: AuditStore | None = None,
             cls: type[Gate] = Gate) -> Gate:
        """The workspace's Gate (or ``cls``, a Gate subclass); ``approvals``/``audit`` replace its stores
        (an eval run keeps its own)."""
        from toolcrib.policy.envelope import SafetyEnvelope
        from toolcrib.policy.scanner import PatternScanner

        envelope = (SafetyEnvelope.from_config(self.config.envelopes, file=self.config_file)
                    if self.config.envelopes else None)
        return cls(self.registry, self.policy,
                   settings=GateSettings(max_result_chars=self.config.tools.max_result_chars,
                                         approval_ttl_s=self.config.policy.approval_ttl_s,
                                         untrusted_sensitive=self.config.tools.untrusted_sensitive,
                                         egress_allowlist=tuple(self.config.tools.egress_allowlist),
                                         unrequested_writes=self.config.tools.unrequested_writes,
                                         ground_values=self.config.tools.ground_values,
                                         proposal_ttl_s=dict(self.config.policy.proposal_ttl)),
                   approvals=approvals or self.approvals(), audit=audit or self.audit(),
                   envelope=envelope, scanner=PatternScanner())

    @property
    def policy_dsn(self) -> str | None:
        """PostgreSQL for approvals and audit when several servers share them; else SQLite files."""
        return self.config.policy.dsn or os.environ.get("TOOLCRIB_POLICY_DSN") or None

    def approvals(self) -> ApprovalStore:
        """The approval store ([policy] dsn, else SQLite), telling the ``[[webhooks]]`` what happens to proposals."""
        from toolcrib.policy.approvals import PostgresApprovalStore, SQLiteApprovalStore

        ttl = self.config.policy.proposal_ttl_s
        store: ApprovalStore
        if self.policy_dsn:
            store = PostgresApprovalStore(self.policy_dsn, pending_ttl_s=ttl)
        else:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            store = SQLiteApprovalStore(self.state_dir / "approvals.sqlite", pending_ttl_s=ttl)
        if not self.config.webhooks:
            return store
        from toolcrib.webhooks import Notifier, NotifyingApprovalStore

        notifier = Notifier(self.config.webhooks, self.config.workspace.name, self.webhook_log,
                            redact=lambda name: tool.redact if (tool := self.registry.get(name)) else ())
        return NotifyingApprovalStore(store, notifier)

    @property
    def webhook_log(self) -> DeliveryLog:
        """Where every webhook delivery attempt is recorded."""
        from toolcrib.webhooks import DeliveryLog

        return DeliveryLog(self.state_dir / "webhooks.jsonl")

    def audit(self) -> AuditStore:
        from toolcrib.policy.audit import PostgresAuditStore, SQLiteAuditStore

        if self.policy_dsn:
            return PostgresAuditStore(self.policy_dsn)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return SQLiteAuditStore(self.state_dir / "audit.sqlite")

    @cached_property
    def run_store(self) -> RunStore:
        """Runs and paused runs: in PostgreSQL beside approvals when ``[policy] dsn`` is set, else files."""
        if self.policy_dsn:
            from toolcrib.agent.runs import PostgresRunStore

            return PostgresRunStore(self.policy_dsn)
        return FileRunStore(self.state_dir / "runs", self.journal_retention)

    @property
    def journal_retention(self) -> Retention:
        """When a run or trace journal is full and how much of them a folder keeps (``[service] journal_*``)."""
        cfg = self.config.service
        days = cfg.journal_keep_days
        return Retention(file_bytes=int(cfg.journal_file_mb * (1 << 20)),
                         keep_bytes=int(cfg.journal_keep_mb * (1 << 20)) if cfg.journal_keep_mb is not None else None,
                         keep_s=days * 86_400 if days is not None else None)

    def model(self, spec: str | None = None) -> Model:
        cfg = self.config.model
        return get_model(spec or cfg.spec, cfg.settings, cfg.profile.overrides())

    @cached_property
    def trace_exporter(self) -> JsonlExporter:
        """The workspace's JSONL trace files: one exporter (one writer thread) for every run of this
        workspace object, however many runners it builds (the service builds one per request); with
        ``journal_traces``, this process's trace journal (``toolcrib.trace.journal``)."""
        if self.journal_traces:
            from toolcrib.trace.journal import JournalExporter

            return JournalExporter(self.traces_dir, self.journal_retention)
        return JsonlExporter(self.traces_dir)

    def tracer_factory(self) -> Callable[[], Tracer]:
        exporter = self.trace_exporter
        return lambda: Tracer([exporter])

    def runner(self, model: Model | None = None, *, mode: Mode | None = None, gate: Gate | None = None) -> Runner:
        cfg = self.config
        lim = cfg.limits
        settings = RunnerSettings(
            mode=mode or cfg.workspace.mode,
            limits=Limits(rounds=lim.rounds, tool_calls=lim.tool_calls, wall_s=lim.wall_s, tokens=lim.tokens),
            require_evidence=cfg.workspace.require_evidence, name=cfg.workspace.name,
            small_talk=cfg.workspace.small_talk, record_answers=cfg.workspace.record_answers,
            quote_answers=cfg.workspace.quote_answers, steps_off=frozenset(cfg.workspace.steps_off),
            system_prompt=cfg.workspace.system_prompt, max_tokens=cfg.model.max_tokens,
            offer_only_groundable=cfg.tools.offer_only_groundable, plan_lookups=cfg.tools.plan_lookups,
            search_when_nothing_found=cfg.retrieval.search_when_nothing_found,
            search_when_unanswered=cfg.retrieval.search_when_unanswered)
        return Runner(model or self.model(), gate or self.gate(), settings, resources=self.resources,
                      tracer_factory=self.tracer_factory(), runs=self.run_store)
