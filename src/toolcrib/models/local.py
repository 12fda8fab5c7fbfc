"""The embedded default model: Qwen2.5-Coder-1.5B-Instruct (GGUF) on llama.cpp, schema-constrained.

A small model is unreliable at free-form tool-call syntax, so every decision is generated under a
JSON-Schema grammar (``decision.py``): a list of one or more calls, each ``oneOf`` one branch per offered
tool (``{"tool": <const name>, "arguments": <its parameters>}``), or of one ``{"answer": <string>}``. The
output is therefore always parseable calls of the tools offered, or an answer; the gate still
validates the arguments against the real schema, and the runner decides how many of the calls run.

Prompt evaluation dominates the cost on a CPU. The system block (prompt + tool list) is the same
for every decision of a workspace and user, whatever the tool choice, so llama.cpp reuses its
key/value cache: within a process through the longest common token prefix, across processes (each
``toolcrib ask`` is one) through a ``PromptCache`` file read back in milliseconds.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from toolcrib.errors import ConfigError, LimitExceeded, ModelUnavailable
from toolcrib.models.base import Completion, Message, ModelProfile, ModelSettings, SyncModel, ToolSpec
from toolcrib.models.decision import decision_schema_text, grammar, inline_refs, parse_decision, reply_grammar
from toolcrib.models.prompt_cache import PromptCache
from toolcrib.models.weights import MODEL_FILENAME, MODEL_SHA256, ProgressCallback, cache_dir, ensure_model_file

if TYPE_CHECKING:
    from llama_cpp import Llama

DEFAULT_NAME = "local:" + MODEL_FILENAME.removesuffix(".gguf")
DEFAULT_N_CTX = 8192  # a loop with two document searches outgrows 4096 tokens
DEFAULT_MAX_TOKENS = 512
_INSTALL_HINT = "pip install 'llama-cpp-python==0.3.36' (set CMAKE_ARGS=\"-DLLAVA_BUILD=OFF\" for a faster build)"

# The examples use placeholders, never realistic IDs: a 1.5B model copies example values. (Moving the
# tool list after the rules and examples, so offers share more of the cached prefix, was measured and
# dropped: the model then sent count questions to the document search.)
_TOOL_INSTRUCTIONS = """\
You decide the next step. Reply with exactly one JSON list:
- [{{"answer": "<your reply>"}}] to reply to the user yourself, or
- [{{"tool": "<tool name>", "arguments": {{...}}}}] to call a tool. For several things the user asks for, one \
call each in the same list (the same tool with other arguments, or another tool); a text argument holds one \
value, never two joined by "and" or a comma.

Tools:
{tools}

Rules:
- If the question needs the user's business data (a record, a status, a price, a count, a document or \
policy), call the tool whose description matches. Never make such data up.
- Copy identifiers exactly as the user wrote them; never pass an identifier the user did not write. Questions \
about documents, manuals or policies go to a search tool with a short query.
- Reply with "answer" for greetings, thanks, general knowledge, writing or arithmetic, and once a tool result \
holds what the user asked for: then use that result's data in your answer.

Examples (the <...> are placeholders, not real values):
User: Who wrote Hamlet?
[{{"answer": "William Shakespeare."}}]
User: What is the status of <ID>?
[{{"tool": "<tool that gives that status>", "arguments": {{"<its id parameter>": "<ID>"}}}}]
User: What is the status of <ID1> and of <ID2>?
[{{"tool": "<tool that gives that status>", "arguments": {{"<its id parameter>": "<ID1>"}}}}, \
{{"tool": "<tool that gives that status>", "arguments": {{"<its id parameter>": "<ID2>"}}}}]
User: How many <THING> are left in <PLACE>?
[{{"tool": "<tool that counts stock>", "arguments": {{"<item parameter>": "<THING>", "<place parameter>": "<PLACE>"}}}}]
User: What do our rules say about <TOPIC>?
[{{"tool": "<tool that searches documents>", "arguments": {{"<query parameter>": "<TOPIC> rules"}}}}]
User: Hello, who are you?
[{{"answer": "Hello! I am an assistant; ask me about your data."}}]
Tool result for <tool name>: {{"ok": true, "<field>": "<VALUE>"}}
[{{"answer": "The <field> is <VALUE>."}}]"""

# Added to the last turn, not the system block, so a required call keeps the cached prefix.
_TOOL_ONLY_RULE = "(A tool call is required now: reply with a tool call, not an answer.)"
_CHATML_SYSTEM = "<|im_start|>system\n{content}<|im_end|>"
_DESCRIPTION_CHARS = 1200  # per tool, in the prompt


@dataclass
class _Engine:
    """One loaded llama.cpp model and the lock that serializes its use (a Llama is not thread-safe)."""

    llama: Llama
    lock: threading.Lock
    load_ms: float
    model_id: str  # names the weights for the prompt cache
    chatml: bool  # the chat template starts with a ChatML system block, so its tokens can be predicted


_ENGINES: dict[tuple[str, int | None, int | None, int], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def clear_engine_cache() -> None:
    """Free every loaded llama.cpp model of this process (tests and benchmarks use this)."""
    with _ENGINES_LOCK:
        for engine in _ENGINES.values():
            with engine.lock:
                engine.llama.close()
        _ENGINES.clear()


# freed before interpreter shutdown takes llama_cpp's module globals away (else Llama.__del__ fails noisily)
atexit.register(clear_engine_cache)


class LocalModel(SyncModel):
    """Qwen2.5-Coder-1.5B-Instruct Q4_K_M in-process via llama.cpp; weights load on first use.

    A reply holds the thread for seconds of CPU: ``complete`` runs it in a worker thread (``SyncModel``).
    Any GGUF it runs gets the aided answer path (``local:PATH.gguf`` is a small model on a CPU too)."""

    # it honours ``reply_schema``, but the selection answer stays opt-in (``[model.profile] structured_reply``):
    # on the held-out check sets it answered where the written answer abstains (docs/concepts/evidence.md)
    profile = ModelProfile(answer="aided", parallel_calls=True, strict_schemas=True, prompt_format="json_list")
    blocking = True
    name = DEFAULT_NAME

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        seed: int = 0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        cache_dir: str | Path | None = None,
        prompt_cache: bool | str | Path = True,
        progress: ProgressCallback | None = None,
    ) -> None:
        """``prompt_cache``: True keeps evaluated system blocks under the toolcrib cache folder
        (``<cache>/prompts``), a path keeps them there, False keeps none on disk."""
        self.model_path = Path(model_path).expanduser() if model_path is not None else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.n_threads_batch = n_threads_batch
        self.seed = seed
        self.settings = ModelSettings(max_tokens=max_tokens, temperature=0.0)
        self.cache_dir = cache_dir
        self.progress = progress
        self.name = DEFAULT_NAME if self.model_path is None else f"local:{self.model_path.stem}"
        self.prompt_cache = prompt_cache
        self._path: Path | None = None
        self._prompt_cache: PromptCache | None = None

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> LocalModel:
        """Build from ``local`` or ``local:PATH.gguf`` and settings (n_ctx, n_threads, model_path, ...)."""
        model_path = settings.get("model_path") or (rest or None)
        return cls(
            model_path=model_path,
            n_ctx=_int_setting(settings, "n_ctx", DEFAULT_N_CTX),
            n_threads=_optional_int_setting(settings, "n_threads"),
            n_threads_batch=_optional_int_setting(settings, "n_threads_batch"),
            seed=_int_setting(settings, "seed", 0),
            max_tokens=_int_setting(settings, "max_tokens", DEFAULT_MAX_TOKENS),
            cache_dir=settings.get("cache_dir"),
            prompt_cache=_prompt_cache_setting(settings.get("prompt_cache", True)),
        )

    def load(self) -> float:
        """Load the weights now (assembling them on first use); return the load time in ms (0 if loaded before)."""
        return self._load()[1]

    def complete_sync(self, messages: list[Message], tools: list[ToolSpec] | None,
                      settings: ModelSettings) -> Completion:
        """The reply under a grammar when tools are offered. ``decision_only``: calls, or an empty answer,
        written under a grammar whose answer branch holds no text (the choice between them is made at the
        same token as with text; only the writing is saved)."""
        engine, _ = self._load()
        offered = list(tools or []) if settings.offered(tools) else []
        required = settings.choice == "required"
        chat = _render_messages(messages, offered, required=required)
        # a decision alone writes no answer text to bound: its calls get the model's own cap
        cap = self.settings.max_tokens if settings.decision_only and offered else settings.max_tokens
        kwargs: dict[str, Any] = {
            "messages": chat,
            "temperature": 0.0 if settings.temperature is None else settings.temperature,
            "max_tokens": cap or DEFAULT_MAX_TOKENS,
            "seed": self.seed,
        }
        if offered:
            kwargs["grammar"] = grammar(decision_schema_text(offered, required, not settings.decision_only))
        elif settings.reply_schema:
            kwargs["grammar"] = reply_grammar(settings.reply_schema)
        started = time.perf_counter()
        try:
            with engine.lock:
                if offered:  # the long, stable system block is the one with the tool list
                    self._prepare_prefix(engine, messages, offered)
                response = engine.llama.create_chat_completion(**kwargs)
        except ValueError as exc:
            if "context window" in str(exc):
                raise LimitExceeded(
                    f"the conversation is longer than the local model's context ({self.n_ctx} tokens); "
                    "raise the 'n_ctx' model setting or shorten the conversation"
                ) from exc
            raise ModelUnavailable(f"the local model failed to generate: {exc}") from exc
        ms = (time.perf_counter() - started) * 1000
        result = cast(dict[str, Any], response)  # not streaming: one plain dict
        content = result["choices"][0]["message"].get("content") or ""
        usage = result.get("usage") or {}
        text, calls = parse_decision(content) if offered else (content.strip(), ())
        return Completion(
            text=text,
            tool_calls=calls,
            tokens_in=int(usage.get("prompt_tokens", 0)),
            tokens_out=int(usage.get("completion_tokens", 0)),
            ms=ms,
            model=self.name,
        )

    def prefill(self, messages: list[Message], tools: list[ToolSpec]) -> float:
        """Evaluate the system block that ``complete`` would start with for ``tools`` into the prompt cache
        now (``Prefillable``); the ms it took, about 0 when the block was saved before."""
        if not tools:
            return 0.0
        engine, _ = self._load()
        started = time.perf_counter()
        with engine.lock:
            self._prepare_prefix(engine, messages, list(tools))
        return (time.perf_counter() - started) * 1000

    def _prepare_prefix(self, engine: _Engine, messages: list[Message], tools: list[ToolSpec]) -> None:
        """Make sure the context holds the system block, from the disk cache when possible: the block
        itself, or else the saved block sharing the longest start with it (the same prompt with fewer
        tools at the end of its list: another offer of the workspace), extended by the rest. The first
        block ever built also saves the one with an empty tool list, where every offer's block starts.

        Called with the engine locked. The completion that follows reuses the longest common token
        prefix, so a wrong guess here only costs time, never correctness.
        """
        cache = self._disk_cache(engine)
        if cache is None:
            return
        llama = engine.llama
        tokens = _block_tokens(llama, messages, tools)
        n = len(tokens)
        if n >= llama.n_ctx() - 1:
            return
        held = _common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
        if held == n or cache.restore(llama, tokens):
            return  # already evaluated in this process, or saved
        shorter = [_block_tokens(llama, messages, tools[:k], listed=k > 0) for k in range(len(tools) - 1, -1, -1)]
        restored = any(_common_prefix(c, tokens) > held and cache.restore(llama, c) for c in shorter)
        if self.progress is not None:  # tens of seconds on a CPU the first time: say what is happening
            self.progress("prompt", 0, 1)
        try:
            if not restored and held == 0 and shorter:  # nothing to start from: save the start first
                llama.reset()  # type: ignore[no-untyped-call]
                llama.eval(shorter[-1])
                cache.store(llama, shorter[-1])
            llama.n_tokens = _common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
            llama.eval(tokens[llama.n_tokens:])
        except Exception:  # the completion evaluates the whole prompt itself and reports real errors
            llama.reset()  # type: ignore[no-untyped-call]
            return
        finally:
            if self.progress is not None:
                self.progress("prompt", 1, 1)
        cache.store(llama, tokens)

    def _disk_cache(self, engine: _Engine) -> PromptCache | None:
        if self.prompt_cache is False or not engine.chatml:
            return None
        if self._prompt_cache is None or self._prompt_cache.model_id != engine.model_id:
            directory = (cache_dir(self.cache_dir) / "prompts" if self.prompt_cache is True
                         else Path(self.prompt_cache).expanduser())
            self._prompt_cache = PromptCache(directory, engine.model_id)
        return self._prompt_cache

    def _load(self) -> tuple[_Engine, float]:
        """The process-wide engine for this path and these settings, and the ms spent loading it now."""
        if self._path is None:
            self._path = self._resolve_path()
        key = (str(self._path), self.n_threads, self.n_threads_batch, self.n_ctx)
        with _ENGINES_LOCK:
            engine = _ENGINES.get(key)
            if engine is not None:
                return engine, 0.0
            engine = _ENGINES[key] = _load_engine(self._path, self.n_ctx, self.n_threads, self.n_threads_batch)
            return engine, engine.load_ms

    def _resolve_path(self) -> Path:
        if self.model_path is None:
            return ensure_model_file(self.progress, directory=self.cache_dir)
        if not self.model_path.is_file():
            raise ModelUnavailable(
                f"the local model file {self.model_path} does not exist; fix the 'model_path' setting "
                "or remove it to use the bundled Qwen2.5-Coder-1.5B"
            )
        return self.model_path


def _load_engine(path: Path, n_ctx: int, n_threads: int | None, n_threads_batch: int | None) -> _Engine:
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ModelUnavailable(
            f"the local model needs llama-cpp-python, which is not importable: {_INSTALL_HINT}") from exc
    started = time.perf_counter()
    try:
        llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads_batch,
            flash_attn=True,  # prompt evaluation, most of a question's time on a CPU: 43 -> 51 tokens/s on 2 cores
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelUnavailable(
            f"llama.cpp could not load {path.name}: the file is not a valid GGUF model; delete it so it is "
            "assembled again, or fix the 'model_path' setting"
        ) from exc
    template = str(llama.metadata.get("tokenizer.chat_template", ""))
    chatml = llama.chat_handler is None and "<|im_start|>" in template
    return _Engine(llama, threading.Lock(), (time.perf_counter() - started) * 1000, _model_id(path), chatml)


def _model_id(path: Path) -> str:
    """Names the weights and the engine for the prompt cache (a saved state fits only these)."""
    from llama_cpp import __version__ as engine_version

    if path.name == MODEL_FILENAME and path.with_name(path.name + ".sha256").is_file():
        weights = MODEL_SHA256  # the assembled default model, verified when it was joined
    else:
        stat = path.stat()
        weights = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return f"{weights}|llama-cpp-python {engine_version}|flash-attn"  # the cache layout differs without it


def _prompt_cache_setting(value: Any) -> bool | str:
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.lower() in ("", "on", "true", "yes", "1"):
        return True
    if text.lower() in ("off", "false", "no", "0"):
        return False
    return text


def _int_setting(settings: Mapping[str, Any], key: str, default: int) -> int:
    value = _optional_int_setting(settings, key)
    return default if value is None else value


def _optional_int_setting(settings: Mapping[str, Any], key: str) -> int | None:
    value = settings.get(key)
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"expected an integer, got {value!r}", key=f"model.{key}") from exc
    if number < 0:
        raise ConfigError(f"expected a non-negative integer, got {number}", key=f"model.{key}")
    return number


# --- prompt ---------------------------------------------------------------------------------------


def _block_tokens(llama: Llama, messages: list[Message], tools: list[ToolSpec], *, listed: bool = True) -> list[int]:
    """The tokens of the system block the chat template renders for ``messages`` and ``tools``
    (``listed`` False: the instructions with an empty tool list, where every offer's block starts)."""
    text = _CHATML_SYSTEM.format(content=_system_content(messages, tools, listed=listed))
    return list(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _system_content(messages: list[Message], tools: list[ToolSpec], *, listed: bool = True) -> str:
    parts = [m.content for m in messages if m.role == "system" and m.content]
    if tools or not listed:
        parts.append(_TOOL_INSTRUCTIONS.format(tools="\n".join(_describe_tool(t) for t in tools)))
    return "\n\n".join(parts)


def _render_messages(messages: list[Message], tools: list[ToolSpec], *, required: bool) -> list[dict[str, str]]:
    """Chat messages Qwen's template accepts: one system message, calls as JSON, tool results as user turns."""
    system = _system_content(messages, tools)
    chat: list[dict[str, str]] = []
    if system:
        chat.append({"role": "system", "content": system})
    call_names: dict[str, str] = {}
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            name = message.name or call_names.get(message.tool_call_id or "", "tool")
            chat.append({"role": "user", "content": f"Tool result for {name}: {message.content}"})
        elif message.role == "assistant" and message.tool_calls:
            # a decision's calls as the model writes them (a list) where it decides again; one per line
            # where it writes the answer in text (shown a list there, it answered with a list of calls)
            for call in message.tool_calls:
                call_names[call.id] = call.name
            rendered = [{"tool": c.name, "arguments": c.arguments} for c in message.tool_calls]
            content = json.dumps(rendered) if tools else "\n".join(json.dumps(c) for c in rendered)
            chat.append({"role": "assistant", "content": content})
        elif message.role == "assistant":
            content = json.dumps([{"answer": message.content}]) if tools else message.content
            chat.append({"role": "assistant", "content": content})
        else:
            chat.append({"role": "user", "content": message.content})
    if required:
        if chat and chat[-1]["role"] == "user":
            chat[-1] = {"role": "user", "content": f"{chat[-1]['content']}\n\n{_TOOL_ONLY_RULE}"}
        else:
            chat.append({"role": "user", "content": _TOOL_ONLY_RULE})
    return chat


def _describe_tool(tool: ToolSpec) -> str:
    parameters = inline_refs(tool.parameters)
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    params = ", ".join(
        f"{name}: {_type_label(schema)}{'' if name in required else ' (optional)'}"
        for name, schema in properties.items()
    )
    return f"- {tool.name}({params}): {_description(tool.description)}"


def _description(text: str, limit: int = _DESCRIPTION_CHARS) -> str:
    """The description's lines (indented under the signature) up to ``limit`` characters, cut at a line.

    Further lines are kept because they carry what the model needs, such as ``sql_query``'s tables and
    columns (without them the model invents column names); the prefix cache makes them nearly free.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    kept = lines[:1]
    size = len(kept[0]) if kept else 0
    for line in lines[1:]:
        size += len(line) + 3
        if size > limit:
            break
        kept.append(line)
    return "\n  ".join(kept)


def _type_label(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema or "oneOf" in schema:
        return " | ".join(_type_label(s) for s in schema.get("anyOf") or schema["oneOf"])
    kind = schema.get("type", "any")
    return " | ".join(kind) if isinstance(kind, list) else str(kind)
