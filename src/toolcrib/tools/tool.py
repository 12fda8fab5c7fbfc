"""Declaring tools: the ``@tool`` decorator builds a strict JSON Schema from type hints and docstring."""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, TypedDict, Unpack, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import SchemaValidator

from toolcrib.errors import ConfigError, InvalidArguments
from toolcrib.policy.principal import Principal
from toolcrib.text import stems
from toolcrib.tools.actions import GENERIC, action_of, asks_for, description_verb, split_name, synonyms
from toolcrib.tools.arguments import described, dumped, pure_schema, scalar_key, validates_as_python
from toolcrib.tools.grounding import Grounding, Source
from toolcrib.tools.prose import TEXT, holds_prose, split_fields, split_prose
from toolcrib.tools.signature import parse_docstring, strict_schema


class Effect(str, Enum):
    """What a tool can change. Decides approval, parallelism, caching and retries."""

    READ = "read"
    WRITE = "write"
    ACTUATE = "actuate"


@dataclass(frozen=True)
class Identifier:
    """``Annotated`` marker: this argument names a real thing (a record's id, a code, a channel).

    The gate only accepts it when the value appears in the user's messages or an earlier tool
    result, which catches the "confident call, wrong argument" failure. ``shape`` (a regular
    expression for the whole token, e.g. ``r"PO-\\d+"``) says what one looks like; the runner
    offers the tool only while the request or a tool result holds such a token. Without it, any
    token with a digit or in capitals counts.
    """

    shape: str | None = None

    def __post_init__(self) -> None:
        if self.shape is not None:
            try:
                re.compile(self.shape)
            except re.error as exc:
                raise ValueError(f"Identifier shape {self.shape!r} is not a regular expression: {exc}") from None


@dataclass
class ToolContext:
    """What a tool may know about the run it serves. Declared as a ``ctx: ToolContext`` parameter."""

    principal: Principal
    resources: Mapping[str, Any] = field(default_factory=dict)
    trace_id: str = ""
    # whether a value appears in what the run has seen (the request, earlier results); None outside a run
    grounded: Callable[[Any], bool] | None = None
    # the values the request names, each where the workspace's data stores it: (table, column, stored value)
    stated: tuple[tuple[str, str, str], ...] = ()


DomainCheck = Callable[[dict[str, Any], ToolContext], None]
# Reads the current version (ETag, row version, hash) of what a WRITE would change, for approvals.
ResourceVersion = Callable[[dict[str, Any], ToolContext], str]

# Splits a READ's result into the texts it holds, each with its source (a search result: one per
# passage, labelled by its document). Without it, the whole result is one text from the tool.
ResultSources = Callable[[Any], list[tuple[Source, str]]]
# the files one result of a tool produced, each {"id", "name", "bytes", "media_type"}; ``id`` is the file's
# path under the workspace's artifacts folder, where the tool kept it (recorded in the trace, and what
# the service's download of a run's artifacts serves)
ResultArtifacts = Callable[[Any], list[dict[str, Any]]]

def name_words(name: str) -> list[str]:
    """A tool name's words in lower case, in any convention (``getMostRecent``, ``get_most_recent``)."""
    return list(split_name(name))


# Words of a description's first sentence that say how a tool works, not what it returns.
_VAGUE = frozenset({"look", "find", "search", "return", "get", "give", "show", "read", "fetch", "check", "what",
                    "which", "when", "where", "their", "there", "this", "that", "these", "those", "with", "from",
                    "about", "into", "each", "every", "exact", "number", "given", "known", "record", "one", "only",
                    "many", "much", "unit"})

# Built once: json.dumps with options builds a new encoder on every call.
_ARGUMENTS = json.JSONEncoder(allow_nan=False)

# The MCP tool-name rule (OpenAI's function names are stricter: 1-64 of A-Za-z0-9_-).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class ToolOptions(TypedDict, total=False):
    """What every tool constructor (``@tool``, ``make_tool``, ``json_schema_tool``) accepts; see ``Tool``.

    ``idempotent`` defaults to True for READ tools only; ``cache_ttl_s`` to 30 s for READ tools and
    is always 0 for the others.
    """

    effect: Effect
    timeout_s: float
    idempotent: bool | None
    cache_ttl_s: float | None
    identifiers: Sequence[str]
    redact: Sequence[str]
    check: DomainCheck | None
    resource_version: ResourceVersion | None
    max_result_chars: int | None
    tags: Sequence[str]
    trusted: bool
    result_sources: ResultSources | None
    sensitive: Sequence[str]
    egress: Sequence[str]
    intent: Sequence[str]
    untrusted_fields: Sequence[str]
    inline: bool
    artifacts: ResultArtifacts | None
    grammar: Mapping[str, str]


@dataclass(frozen=True)
class Tool:
    """A callable the model may propose, with the facts the gate needs to decide about it.

    A plain ``def`` tool runs in a worker thread, bounded by ``timeout_s``; declared ``inline=True``
    it runs on the event loop, with no thread hop, and cannot be interrupted (see ``inline``).
    """

    name: str
    description: str
    fn: Callable[..., Any]
    effect: Effect
    parameters: dict[str, Any]
    # validates the arguments: a model of the signature (@tool), or a validator of the JSON Schema (json_schema_tool)
    args_model: type[BaseModel] | SchemaValidator
    timeout_s: float = 10.0
    idempotent: bool = True
    cache_ttl_s: float = 0.0
    identifiers: tuple[str, ...] = ()
    identifier_shapes: tuple[tuple[str, str], ...] = ()  # (parameter, shape) where the tool gave one
    redact: tuple[str, ...] = ()
    check: DomainCheck | None = None
    resource_version: ResourceVersion | None = None
    context_param: str | None = None
    is_async: bool = False
    max_result_chars: int | None = None
    tags: frozenset[str] = frozenset()
    # provenance: whether results are the workspace's own data (False: content others wrote, such as
    # e-mails, web pages, supplier documents); arguments that must come from the user or a trusted
    # source; for a READ that contacts an address, the arguments naming where it goes
    trusted: bool = True
    # whether ``trusted`` was declared. A tool nobody declared is trusted for its record (ids, names,
    # amounts, dates) but not for the free text in its results (strings of four words or more: a
    # message body, a review, a file's text), which anyone may have written: an instruction there
    # ("please transfer $500 to ...") must not look to an approver like the system's own data
    trust_declared: bool = False
    result_sources: ResultSources | None = None
    sensitive: tuple[str, ...] = ()
    egress: tuple[str, ...] = ()
    intent: tuple[str, ...] = ()  # words of a request that ask for this tool (a WRITE's default: its name's verb)
    # the fields of a structured result that hold content others wrote (a message's body, a
    # transaction's subject); when given, the rest of the result is the system's own record (trusted)
    untrusted_fields: tuple[str, ...] = ()
    # a plain ``def`` tool that returns at once (a dict lookup, arithmetic): run on the event loop
    # itself instead of in a worker thread (~30-100 us per call). Nothing can interrupt a function
    # running on the loop, so ``timeout_s`` does not bound it, and the loop, with every other run
    # on it, waits for it: declare only short, pure, non-blocking functions inline (no I/O, no locks).
    inline: bool = False
    artifacts: ResultArtifacts | None = None  # the files a result produced (see ResultArtifacts)
    # per string parameter, a pattern a model that decodes under a grammar writes it in (the SQL over the real
    # schema); never used to validate: a capable model's value is checked by the tool as it always was
    grammar: tuple[tuple[str, str], ...] = ()
    # derived (not constructor arguments): whether the arguments may be validated as Python objects
    # with the same results as validating their JSON text (see ``validates_as_python``)
    _python_args: bool = field(default=False, init=False, repr=False, compare=False)
    # the values plain-scalar arguments validated to, by ``scalar_key``, where validation is a pure
    # function of them (no validator functions or default factories in the schema: ``pure_schema``)
    _validated: dict[tuple[Any, ...], dict[str, Any]] | None = field(default=None, init=False, repr=False,
                                                                      compare=False)
    _source: Source = field(default=Source("tool"), init=False, repr=False, compare=False)  # of a whole result
    # facts of the declaration the gate reads on every call, worked out once (see ``__post_init__``)
    _effect: str = field(default="read", init=False, repr=False, compare=False)  # ``effect.value``
    _named: bool = field(default=True, init=False, repr=False, compare=False)
    _vouchable: bool = field(default=False, init=False, repr=False, compare=False)
    # the shape of each required identifier (None: the tool gave none), for ``reachable``
    _required_shapes: tuple[str | None, ...] = field(default=(), init=False, repr=False, compare=False)
    # a READ's optional plain-text parameters: filters the gate leaves out when no text gives their value
    filters: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)

    def requested_by(self, request: str) -> bool:
        """Whether ``request`` asks for this tool: it holds one of its intent words, in any form. Without
        declared words, the verb of its name or a synonym of it (``tools.actions``: "pay" or "wire" for
        send_money, "let in" for an unlock, in any naming convention: ``VenmoSendMoney``), or the verb its
        description starts with. (Which of several writes a request asks for is ``tools.asking``'s.)"""
        if self.intent:
            return bool(stems(" ".join(self.intent)) & stems(request))
        return asks_for(request, self.verbs | {action_of(self.name).verb})

    def mentioned_in(self, text: str) -> bool:
        """Whether ``text`` speaks of doing what this tool does: one of its intent words, or, without
        declared words, its verb or a synonym, or a word of its name saying what it acts on ("order" for
        cancel_order, "lock" for AugustSmartLockUnlockDoor), in any form."""
        if self.intent:
            return bool(stems(" ".join(self.intent)) & stems(text))
        nouns = action_of(self.name).nouns
        return asks_for(text, self.verbs) or bool(nouns and stems(" ".join(nouns)) & stems(text))

    @property
    def verbs(self) -> frozenset[str]:
        """The verbs that ask for this tool: its name's verb and the one its description starts with, with
        their synonyms."""
        verb = description_verb(self.description)
        return action_of(self.name).verbs | (synonyms(verb) if verb else frozenset())

    @property
    def summary(self) -> str:
        """The first sentence of the description: what the tool does or returns."""
        return re.split(r"(?<=[.!?])\s", self.description.strip(), maxsplit=1)[0]

    def named_by(self, request: str) -> bool:
        """Whether ``request`` names what this tool reads: a word of its name after the verb ("channel"
        for get_channels, "inbox" for read_inbox), in any form."""
        words = [w for w in name_words(self.name)[1:] if len(w) > 3 and w not in GENERIC]
        return bool(stems(" ".join(words)) & stems(request))

    def returns_asked(self, request: str, held: set[str]) -> bool:
        """Whether ``request`` asks for something the first sentence of this tool's description says it
        returns ("its name, unit price in US dollars and supplier": "who is their supplier?"), or asks
        with one of the tool's ``intent`` words ("what does it cost?"), and no result so far holds it
        (``held``: the word stems of those results)."""
        summary = self.summary
        keyed_by = stems(" ".join([*name_words(self.name), *self.parameters.get("properties", {})]).replace("_", " "))
        wanted = {w for w in stems(summary) if len(w) > 3} - _VAGUE - keyed_by  # "part": what it is keyed by
        asked = stems(request)
        if self.intent and stems(" ".join(self.intent)) & asked:  # the request asks with the tool's own words
            return bool(wanted - held)
        return bool((wanted & asked) - held)

    def sources(self, data: Any, *, encoded: str | None = None) -> list[tuple[Source, str]]:
        """The texts of one result of this tool, each with where it came from. ``encoded``: ``data``
        as JSON (``ensure_ascii=False``), when the caller has it already."""
        if self.result_sources is not None:
            return self.result_sources(data)
        if self.untrusted_fields and isinstance(data, (dict, list)):
            record, others = split_fields(data, frozenset(self.untrusted_fields))
            return [(Source("tool", self.name, trusted), "\n".join(texts))
                    for trusted, texts in ((True, record), (False, others)) if texts]
        if self.trusted and not self.trust_declared and holds_prose(data):
            if isinstance(data, str):
                return [(Source("tool", self.name, trusted=False), data)]
            record, prose = split_prose(data)
            return [(Source("tool", self.name, trusted), "\n".join(texts))
                    for trusted, texts in ((True, record), (False, prose)) if texts]
        text = data if isinstance(data, str) else encoded if encoded is not None else TEXT.encode(data)
        return [(self._source, text)]

    def __post_init__(self) -> None:
        if not _TOOL_NAME.fullmatch(self.name):
            raise ConfigError(f"tool name {self.name!r} is not valid: use 1 to 128 characters, each a letter, "
                              "a digit, '_', '.' or '-'", key="tools")
        declared = self.parameters.get("properties", {})
        for option in ("identifiers", "sensitive", "egress", "grammar"):  # however the tool was built or changed
            undeclared = [name for name, *_ in map(_named_option, getattr(self, option)) if name not in declared]
            if undeclared:
                raise ConfigError(f"tool '{self.name}': {option} {undeclared} are not among its parameters",
                                  key="tools")
        if self.inline and self.is_async:
            raise ConfigError(f"tool '{self.name}': inline is for a plain def tool; an async def tool already "
                              "runs on the event loop", key="tools")
        object.__setattr__(self, "_source", Source("tool", self.name, self.trusted))
        object.__setattr__(self, "_effect", self.effect.value)
        # whether what the tool returns is declared: only untrusted content needs vouching for, so the
        # gate asks whether the user pointed at a result only where it holds some (``Gate._ok``)
        named = not self.trusted or self.trust_declared or bool(self.untrusted_fields)
        object.__setattr__(self, "_named", named)
        object.__setattr__(self, "_vouchable", self.result_sources is None and (not self.trusted or not named))
        required, shapes = set(self.parameters.get("required", ())), dict(self.identifier_shapes)
        properties: dict[str, Any] = self.parameters.get("properties", {})
        object.__setattr__(self, "filters", tuple(
            name for name, schema in properties.items() if self.effect is Effect.READ and name not in required
            and name not in self.identifiers and schema.get("type") == "string"
            and not schema.keys() & {"enum", "const", "pattern", "format"}) if properties else ())
        object.__setattr__(self, "_required_shapes",
                           tuple(shapes.get(name) for name in self.identifiers if name in required))
        python_args = not isinstance(self.args_model, SchemaValidator) and validates_as_python(self.parameters)
        object.__setattr__(self, "_python_args", python_args)
        if python_args and pure_schema(getattr(self.args_model, "__pydantic_core_schema__", None)):
            object.__setattr__(self, "_validated", {})

    def validate(self, arguments: Mapping[str, Any], ctx: ToolContext | None = None) -> dict[str, Any]:
        """Strict validation of the arguments as JSON (an Enum parameter takes its value, "rw"), then the
        tool's domain check. Raises InvalidArguments."""
        model = self.args_model
        try:
            key = scalar_key(arguments) if self._python_args else None
            if key is not None:
                # the JSON text would parse back to these very values, and every parameter is a plain
                # scalar, which validates alike from Python and from JSON: skip the round trip
                memo = self._validated
                if memo is not None and (hit := memo.get(key)) is not None:
                    values: dict[str, Any] = dict(hit)  # the same arguments validate to the same values
                else:
                    assert not isinstance(model, SchemaValidator)
                    values = dumped(model, model.__pydantic_validator__.validate_python(arguments))
                    if memo is not None:
                        if len(memo) >= 256:
                            memo.clear()
                        memo[key] = dict(values)
            else:
                try:
                    text = _ARGUMENTS.encode(dict(arguments))
                except (TypeError, ValueError):
                    raise InvalidArguments(
                        f"{self.name}: the arguments must be JSON values with finite numbers") from None
                values = (model.validate_json(text) if isinstance(model, SchemaValidator)
                          else dumped(model, model.__pydantic_validator__.validate_json(text)))
        except ValidationError as exc:
            raise InvalidArguments(f"{self.name}: {described(exc)}") from None
        if self.check is not None and ctx is not None:
            self.check(values, ctx)
        return values

    def reachable(self, grounding: Grounding) -> bool:
        """Whether a call could ground every required identifier in ``grounding``; if not, the only
        calls the model could make would carry invented identifiers."""
        return all(grounding.names_identifier(shape) for shape in self._required_shapes)

    def lookup_key(self) -> tuple[str, str] | None:
        """``(parameter, shape)`` when this is a lookup by one identifier: a READ tool whose only required
        argument is an identifier with a declared shape (lookup_item(part_number)); else None."""
        required = list(self.parameters.get("required", ()))
        shapes = dict(self.identifier_shapes)
        if self.effect is not Effect.READ or len(required) != 1 or required[0] not in shapes:
            return None
        return required[0], shapes[required[0]]

    def bind(self, values: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Keyword arguments for ``fn``: the validated values plus the context, if declared."""
        if self.context_param is None:
            return values
        return {**values, self.context_param: ctx}


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> Tool:
    """Build a ``Tool`` from a plain (sync or async) function's signature, hints and docstring."""
    hints = get_type_hints(fn, include_extras=True)
    doc_description, arg_docs = parse_docstring(fn.__doc__ or "")
    fields: dict[str, Any] = {}
    found_identifiers = list(options.get("identifiers", ()))
    shapes: list[tuple[str, str]] = []
    context_param = None
    for pname, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(pname, Any)
        if _is_context(annotation):
            context_param = pname
            continue
        markers = get_args(annotation)[1:] if get_origin(annotation) is Annotated else ()
        for marker in markers:
            if isinstance(marker, Identifier) or marker is Identifier:
                found_identifiers.append(pname)
                if isinstance(marker, Identifier) and marker.shape is not None:
                    shapes.append((pname, marker.shape))
        default = ... if param.default is inspect.Parameter.empty else param.default
        # set only from a docstring line, so Annotated[..., Field(description=...)] keeps its own
        info = Field(default, description=arg_docs[pname]) if pname in arg_docs else Field(default)
        fields[pname] = (annotation, info)
    tool_name = name or fn.__name__
    args_model = create_model(
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields
    )
    options["identifiers"] = found_identifiers
    return assemble_tool(tool_name, description or doc_description or tool_name, fn, strict_schema(args_model),
                         args_model, context_param=context_param, identifier_shapes=tuple(shapes), **options)


def _named_option(entry: str | tuple[str, str]) -> tuple[str, ...]:
    """A per-parameter option's entry as (parameter, ...): a name, or a (name, value) pair."""
    return (entry,) if isinstance(entry, str) else entry


def assemble_tool(
    name: str,
    description: str,
    fn: Callable[..., Any],
    parameters: dict[str, Any],
    args_model: type[BaseModel] | SchemaValidator,
    *,
    context_param: str | None = None,
    identifier_shapes: tuple[tuple[str, str], ...] = (),
    **options: Unpack[ToolOptions],
) -> Tool:
    """The ``Tool`` every constructor returns: ``options`` checked against ``parameters``, defaults by effect."""
    effect = options.get("effect", Effect.READ)
    read = effect is Effect.READ
    identifiers = tuple(dict.fromkeys(options.get("identifiers", ())))
    idempotent = options.get("idempotent")
    cache_ttl_s = options.get("cache_ttl_s")
    return Tool(
        name=name,
        description=description,
        fn=fn,
        effect=effect,
        parameters=parameters,
        args_model=args_model,
        timeout_s=options.get("timeout_s", 10.0),
        idempotent=read if idempotent is None else idempotent,
        cache_ttl_s=(30.0 if cache_ttl_s is None else cache_ttl_s) if read else 0.0,
        identifiers=identifiers,
        identifier_shapes=identifier_shapes,
        redact=tuple(options.get("redact", ())),
        check=options.get("check"),
        resource_version=options.get("resource_version"),
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(fn),
        max_result_chars=options.get("max_result_chars"),
        tags=frozenset(options.get("tags", ())),
        trusted=options.get("trusted", True),
        trust_declared="trusted" in options,
        result_sources=options.get("result_sources"),
        sensitive=tuple(options.get("sensitive", ())),
        egress=tuple(options.get("egress", ())),
        intent=tuple(options.get("intent", ())),
        untrusted_fields=tuple(options.get("untrusted_fields", ())),
        inline=options.get("inline", False),
        artifacts=options.get("artifacts"),
        grammar=tuple(options.get("grammar", {}).items()),
    )


@typing.overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@typing.overload
def tool(*, name: str | None = ..., description: str | None = ...,
         **options: Unpack[ToolOptions]) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a tool: ``@tool`` or ``@tool(effect=Effect.WRITE, timeout_s=5)``.

    The schema comes from type hints (``Annotated[int, Field(gt=0)]`` constraints included), the
    description from the docstring's first paragraph, argument descriptions from its ``Args:`` or
    from ``Annotated[str, Field(description=...)]``.

    ```py
    from typing import Annotated

    from pydantic import Field

    from toolcrib import Effect, tool


    @tool(effect=Effect.WRITE, description="Reserve units of a part.")
    def reserve_stock(part_number: str, quantity: Annotated[int, Field(gt=0)]) -> dict:
        return {"reserved": quantity}


    print(reserve_stock.name, reserve_stock.effect.value, reserve_stock.parameters["required"])
    #> reserve_stock write ['part_number', 'quantity']
    print(reserve_stock.parameters["properties"]["quantity"])
    #> {'exclusiveMinimum': 0, 'type': 'integer'}
    ```
    """
    if fn is not None:
        return make_tool(fn)
    return lambda f: make_tool(f, **options)
