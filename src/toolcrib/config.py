"""Typed workspace settings, read from ``toolcrib.toml``. A broken value names file, key and expectation."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from toolcrib.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkspaceSection(_Section):
    name: str = "toolcrib workspace"
    require_evidence: bool = True
    small_talk: bool = True  # a greeting, thanks or goodbye is answered by code, with no model call
    # single mode: a what/who/where/when/how-much question about records looked up by their ids is
    # answered by code from the records' fields, with no final model call (agent/records.py)
    record_answers: bool = True
    # single mode: a fact question that trusted document passages answer, one sentence, row or list
    # item per thing it asks, is answered by code quoting them, with no final model call (agent/quotes.py)
    quote_answers: bool = True
    # code steps of the answer path turned off by id (agent.stepids.StepId: "small_talk", "planned_lookups",
    # "record_answer", "quoted_answer", "unmentioned_name", "capabilities_note", ...)
    steps_off: list[str] = Field(default_factory=list)
    system_prompt: str = ""
    default_user: str | None = None
    mode: Literal["single", "loop"] = "single"

    @model_validator(mode="after")
    def _known_steps(self) -> WorkspaceSection:
        from toolcrib.agent.stepids import StepId

        if unknown := [s for s in self.steps_off if s not in set(StepId)]:
            raise ValueError(f"unknown step id(s) {', '.join(unknown)}; known: {', '.join(sorted(StepId))}")
        return self


class ModelProfileSection(_Section):
    """``[model.profile]``: what the workspace says about its model, over what its backend and name give
    (``toolcrib.models.profile.ModelProfile``); a field left out keeps the resolved value."""

    # The answer path: "aided" (code plans lookups, states records, quotes passages; the answer is asked
    # from an evidence brief under caps), "native" (the model's own conversation and answer). Unset: from
    # the model's name (the embedded Qwen2.5-Coder-1.5B is aided wherever it is served), else native.
    answer: Literal["aided", "native"] | None = None
    tools: bool | None = None  # the model may be offered tools
    parallel_calls: bool | None = None  # the model may propose several calls in one reply
    strict_schemas: bool | None = None  # its provider holds call arguments to the tool's JSON Schema
    # How tool calls come back: "api" (the provider's fields), "text_calls" (also written in the text, for an
    # open model behind a server without a tool parser), "json_list" (the embedded model's grammar list)
    prompt_format: Literal["api", "text_calls", "json_list"] | None = None
    answer_tokens_per_ask: int | None = Field(None, gt=0)  # the aided answer's cap per thing asked (default 120)
    answer_max_tokens: int | None = Field(None, gt=0)  # the aided answer's cap in all (default 200)

    def overrides(self) -> dict[str, Any]:
        """The fields the table sets."""
        return {name: value for name, value in self.model_dump().items() if value is not None}


class ModelSection(_Section):
    spec: str = "local"
    settings: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int = Field(400, gt=0)
    profile: ModelProfileSection = Field(default_factory=ModelProfileSection)


class ToolsSection(_Section):
    modules: list[str] = Field(default_factory=list)
    builtin: list[Literal["vector_search", "sql_query", "web_search", "code_interpreter"]] = Field(
        default_factory=list)
    max_result_chars: int = Field(4000, gt=100)
    # Offer a tool only once the request or a tool result names what its required identifier looks
    # like; otherwise a model could only call it with an invented id (which the gate would refuse).
    offer_only_groundable: bool = True
    # Single mode: code adds the obvious lookups the model's one call left out (a lookup the request
    # names by what it reads, with the identifier the request or a trusted result holds).
    plan_lookups: bool = True
    # Provenance. Tools whose results are content others wrote (e-mails, web pages, supplier portals).
    untrusted: list[str] = Field(default_factory=list)
    # Tools whose results, free text included, are the organisation's own. A tool in neither list is
    # trusted for its record (ids, names, amounts, dates) but not for the free text in its results
    # (strings of four words or more: a message body, a review, a note), which anyone may have written.
    trusted: list[str] = Field(default_factory=list)
    # Per tool, the arguments that must come from the user or a trusted source.
    sensitive: dict[str, list[str]] = Field(default_factory=dict)
    # What a sensitive argument found only in untrusted content (or nowhere) gets: refused, or held with a warning.
    untrusted_sensitive: Literal["refuse", "warn"] = "refuse"
    # Per READ tool that contacts an address, the arguments naming where; and where it may go unasked.
    egress: dict[str, list[str]] = Field(default_factory=dict)
    egress_allowlist: list[str] = Field(default_factory=list)
    # Per WRITE/ACTUATE tool, the words of a request that ask for it (default: its name's first word).
    intent: dict[str, list[str]] = Field(default_factory=dict)
    # Per tool, the fields of its results that hold content others wrote (a message's body, a
    # transaction's subject); the rest of its results is then the system's own record.
    untrusted_fields: dict[str, list[str]] = Field(default_factory=dict)
    # A WRITE/ACTUATE the request did not ask for (no clause of it asks for a change that fits this write
    # best, or, with intent words, none of them is in it), proposed after untrusted content was read:
    # "off", held with a warning ("warn"), or refused ("refuse").
    unrequested_writes: Literal["off", "warn", "refuse"] = "warn"
    # A date in a call's arguments that neither the request states nor a result holds: re-grounded to the
    # request's date it stands for, or refused with the dates that would be accepted; a lookup's optional
    # text filter that no text of the run holds ("None" where nobody named one): left out. false: all pass.
    ground_values: bool = True


class DataSection(_Section):
    database: str | None = None
    documents: str | None = None


class SQLSection(_Section):
    allowed_tables: list[str] = Field(default_factory=list)
    row_cap: int = Field(200, gt=0)
    timeout_s: float = Field(2.0, gt=0)
    dsn: str | None = None
    # A model that decodes under a grammar (the embedded one) writes sql_query's query in the SELECTs of
    # the allowed tables' real columns only (joins along foreign keys, filters, aggregates, arithmetic).
    # Off by default: on the held-out check sets it cost a question (19/64 against 20/64 off), and a
    # small model can repeat a condition under it until its decision runs out of tokens.
    grammar: bool = False


class LookupSection(_Section):
    """One generated read-only lookup tool, ``lookup_<table>``: a row by its key, or by a name-like text
    column; the columns' types come from the database schema when the workspace opens."""

    table: str  # the table, one of [sql] allowed_tables; the tool is lookup_<table>
    key: list[str] = Field(min_length=1)  # the primary key's columns ("rowid" for a SQLite table without one)
    names: list[str] = Field(default_factory=list)  # text columns a row may be named by (the tool's `name`)
    description: str = ""  # the tool's description (default: says the table, the key and the names)


class RetrievalSection(_Section):
    chunker: Literal["structure", "fixed", "parent_child"] = "structure"
    top_k: int = Field(5, gt=0, le=50)
    min_score: float | None = None  # relevance below which evidence counts as insufficient
    default_access: list[str] = Field(default_factory=lambda: ["*"])
    # a document without an ``access`` of its own may be read by the group named like the first folder
    # of its path under the documents folder (docs/vets/x.md: "vets"); files at the top: default_access
    access_from_folders: bool = False
    index: Literal["lance", "pgvector"] = "lance"
    # When no tool call of a run found anything, code searches the documents once with the question.
    search_when_nothing_found: bool = True
    # single mode: code searches the documents once when the request asks about two or more words that
    # no result of the run (nor the tools that returned them) holds ("what does G7 cost and how often
    # should it be replaced?" after a price lookup)
    search_when_unanswered: bool = True
    # Characters of passage text a search shows the model, in all: the sentences, rows and items that
    # share the query's words, each passage's best first (citations still name whole passages). 0: all.
    excerpt_chars: int = Field(1200, ge=0)
    dsn: str | None = None


class WebSearchSection(_Section):
    """``[web_search]``: the search provider behind the ``web_search`` builtin. No provider: not offered."""

    provider: Literal["brave", "tavily", "searxng"] | None = None
    endpoint: str | None = None  # default: the provider's public API; required for searxng (the instance's URL)
    # The environment variable holding the API key (never the key itself). Default: BRAVE_SEARCH_API_KEY
    # for brave, TAVILY_API_KEY for tavily; none for searxng (set one if the instance wants a bearer token).
    key_env: str | None = None
    timeout_s: float = Field(8.0, gt=0, le=60)  # one search; past it the call is a "timeout" observation
    max_results: int = Field(5, gt=0, le=10)

    @model_validator(mode="after")
    def _endpoint_for_searxng(self) -> WebSearchSection:
        if self.provider == "searxng" and not self.endpoint:
            raise ValueError("searxng needs endpoint, the instance's URL (e.g. http://localhost:8888)")
        if self.endpoint and not self.endpoint.startswith(("http://", "https://")):
            raise ValueError("endpoint must be an http:// or https:// URL")
        return self


class CodeInterpreterSection(_Section):
    """``[code_interpreter]``: limits of the bubblewrap sandbox behind the ``code_interpreter`` builtin."""

    python: str | None = None  # the interpreter inside the sandbox (default: the one running toolcrib)
    cpu_s: int = Field(10, gt=0, le=600)
    wall_s: float = Field(20.0, gt=0, le=900)
    memory_mb: int = Field(1024, ge=128)
    processes: int = Field(32, ge=4)
    output_kb: int = Field(64, gt=0)  # stdout kept; past 16 times this the run is stopped
    scratch_mb: int = Field(64, gt=0)  # the private scratch space (a tmpfs), and the largest file
    max_files: int = Field(10, ge=0)  # produced files kept as artifacts


class LimitsSection(_Section):
    rounds: int = Field(5, gt=0)
    tool_calls: int = Field(8, gt=0)
    wall_s: float = Field(180.0, gt=0)
    tokens: int = Field(32000, gt=0)


class PathsSection(_Section):
    state: str = ".toolcrib"


class PolicySection(_Section):
    rules: list[str] = Field(default_factory=list)
    # PostgreSQL DSN for approvals and the audit record, shared by several `toolcrib serve` processes;
    # unset: SQLite files under the state folder. Also read from TOOLCRIB_POLICY_DSN.
    dsn: str | None = None
    separation_of_duties: bool = True
    approval_ttl_s: float = Field(900.0, gt=0)
    # an undecided proposal expires after this long; [policy.proposal_ttl] sets it per tool (seconds)
    proposal_ttl_s: float = Field(86_400.0, gt=0)
    proposal_ttl: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    version: str = "1"


class JWTSection(_Section):
    """Bearer JWTs an identity provider signs, accepted beside API keys; ``claim`` names the user."""

    # Verification keys: a JWKS file (relative to the workspace), a JWKS URL, or a shared HS256
    # secret read from the environment variable named here (never the secret itself).
    jwks_file: str | None = None
    jwks_url: str | None = None
    secret_env: str | None = None
    algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256"])
    issuer: str | None = None
    audience: str | None = None
    claim: str = "sub"  # the claim whose value is the workspace user's name
    leeway_s: float = Field(30.0, ge=0)


class ServiceSection(_Section):
    """``toolcrib serve``: bounds on what one process accepts and runs."""

    queue: int = Field(16, ge=0)  # questions waiting for a model slot; a full queue answers 503
    expiry_sweep_s: float = Field(5.0, gt=0)  # how often undecided proposals past their time-to-live are expired
    model_slots: int | None = Field(None, gt=0)  # runs at once per process (default: 1 for the embedded model, else 8)
    queue_wait_s: float = Field(120.0, gt=0)  # longest a question waits for a slot before 503
    runs_per_minute: int = Field(60, gt=0)  # asks and resumes per user, shared by every process on [policy] dsn
    runs_per_user: int = Field(2, gt=0)  # one user's runs at once, per process
    max_body_bytes: int = Field(65536, gt=0)
    max_question_chars: int = Field(4000, gt=0)
    index_on_start: bool = True  # build a missing document index before /readyz says ready
    warm_on_start: bool = True  # after ready, every user's usual offers into the embedded model's prompt cache
    journal_file_mb: float = Field(64.0, gt=0)  # a run or trace journal past this is closed; a new one is started
    journal_keep_mb: float | None = Field(1024.0, gt=0)  # closed journals removed, oldest first, past this per folder
    journal_keep_days: float | None = Field(None, gt=0)  # closed journals older than this removed (None: kept by size)
    jwt: JWTSection | None = None


class MCPServerSection(_Section):
    """One MCP server whose tools the workspace uses: a stdio command, or a streamable-HTTP URL."""

    command: str | None = None  # started in the workspace folder, over stdio
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # added to a minimal environment (PATH, HOME, ...)
    url: str | None = None
    token_env: str | None = None  # the environment variable holding the bearer token for `url`
    timeout_s: float = Field(30.0, gt=0)  # one call; a WRITE past it has an unknown outcome
    # Effect class per tool ("read", "write", "actuate"); unlisted tools are "write": a foreign tool's
    # effects are unknown. The server's annotations may only make a tool stricter.
    effects: dict[str, Literal["read", "write", "actuate"]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSection:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of command (stdio) or url (streamable HTTP)")
        if self.token_env and self.url is None:
            raise ValueError("token_env goes with url")
        return self


class MCPSection(_Section):
    """``[mcp]``: MCP servers whose tools are registered as ``NAME.tool``, through the same gate."""

    list_timeout_s: float = Field(10.0, gt=0)  # listing one server's tools when the workspace opens
    servers: dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")], MCPServerSection] = Field(
        default_factory=dict)


class GroupSection(_Section):
    tools: list[str] = Field(default_factory=list)
    approve: list[str] = Field(default_factory=list)


WebhookEvent = Literal["created", "decided", "expired"]
_WEBHOOK_EVENTS: tuple[WebhookEvent, ...] = ("created", "decided", "expired")


class WebhookSection(_Section):
    """One ``[[webhooks]]`` receiver of proposal events: JSON bodies signed with HMAC-SHA256 under a secret
    read from the environment variable ``secret_env`` (never from this file), retried with backoff."""

    url: Annotated[str, StringConstraints(pattern=r"^https?://")]
    secret_env: str | None = None  # unset: bodies are sent unsigned
    events: list[WebhookEvent] = Field(default_factory=lambda: list(_WEBHOOK_EVENTS))
    timeout_s: float = Field(5.0, gt=0)
    retries: int = Field(3, ge=0, le=10)  # attempts after the first, on a refused or failed delivery
    backoff_s: float = Field(1.0, ge=0)  # wait before retry n: backoff_s * 2 ** (n - 1)


class UserSection(_Section):
    name: str = ""
    role: str = ""
    tenant: str = "default"
    groups: list[str] = Field(default_factory=list)


class WorkspaceConfig(_Section):
    workspace: WorkspaceSection = Field(default_factory=WorkspaceSection)
    model: ModelSection = Field(default_factory=ModelSection)
    tools: ToolsSection = Field(default_factory=ToolsSection)
    data: DataSection = Field(default_factory=DataSection)
    sql: SQLSection = Field(default_factory=SQLSection)
    retrieval: RetrievalSection = Field(default_factory=RetrievalSection)
    limits: LimitsSection = Field(default_factory=LimitsSection)
    web_search: WebSearchSection = Field(default_factory=WebSearchSection)
    code_interpreter: CodeInterpreterSection = Field(default_factory=CodeInterpreterSection)
    paths: PathsSection = Field(default_factory=PathsSection)
    policy: PolicySection = Field(default_factory=PolicySection)
    groups: dict[str, GroupSection] = Field(default_factory=dict)
    users: dict[str, UserSection] = Field(default_factory=dict)
    service: ServiceSection = Field(default_factory=ServiceSection)
    envelopes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    mcp: MCPSection = Field(default_factory=MCPSection)
    webhooks: list[WebhookSection] = Field(default_factory=list)
    lookups: list[LookupSection] = Field(default_factory=list)


def load_config(path: Path) -> WorkspaceConfig:
    """Parse and validate ``toolcrib.toml``; errors name the file, the key and what is expected."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("no toolcrib.toml here; create one with `toolcrib init PATH`", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(path)) from None
    try:
        return WorkspaceConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        expected = "an unknown key (check the spelling)" if err["type"] == "extra_forbidden" else err["msg"]
        got = "" if err["type"] in ("extra_forbidden", "missing") else f"; got {err.get('input')!r}"
        raise ConfigError(f"{expected}{got}", file=str(path), key=key) from None


def missing_settings(config: WorkspaceConfig) -> list[str]:
    """What a ``toolcrib.toml`` leaves out that a workspace almost always sets (an empty file leaves out
    all of it), each a stable line naming the section and what happens without it; empty when nothing is."""
    missing: list[str] = []
    if "model" not in config.model_fields_set:
        missing.append(f'no [model]: runs use spec = "{config.model.spec}"; set [model] spec (or pass --model)')
    if not (config.tools.modules or config.tools.builtin or config.mcp.servers):
        missing.append("no tools: set [tools] modules or builtin (or [mcp.servers]); the model can call nothing")
    if not config.users:
        missing.append("no [users]: every run acts as 'local' with every tool; add [users.NAME] with groups")
    return missing
