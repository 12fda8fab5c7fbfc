"""Evaluation question sets: what to ask, as whom, and what a correct run looks like.

A set is a YAML file with a ``version`` and a list of ``questions``. Each question records its
kind, the user asking, the tools it needs, the calls expected (with expected arguments), the facts
the answer must (and must not) contain, the citations it must carry, and whether it must abstain or
be refused, and which tools must not run. See ``sets/demo.yaml`` for the format in use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from toolcrib.errors import ConfigError

Kind = Literal["lookup", "multi_hop", "numeric", "unanswerable", "conflicting", "adversarial"]
KINDS: tuple[str, ...] = ("lookup", "multi_hop", "numeric", "unanswerable", "conflicting", "adversarial")
ATTACKS: tuple[str, ...] = ("injection", "forbidden_tool", "malformed_args", "out_of_range", "disguised_write")
SETS_DIR = Path(__file__).parent / "sets"
DEMO_SET = SETS_DIR / "demo.yaml"


@dataclass(frozen=True)
class ExpectedCall:
    """One call a correct run makes: a tool (or acceptable alternatives) and expected arguments.

    An expected argument value is matched after normalisation (case, spacing, number formatting);
    a value written ``{re: PATTERN}`` is matched as a case-insensitive regular expression.
    """

    names: tuple[str, ...]
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "|".join(self.names)


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    user: str | None
    question: str
    needs: tuple[str, ...] = ()
    expect: tuple[ExpectedCall, ...] = ()
    facts: tuple[str, ...] = ()
    forbid_facts: tuple[str, ...] = ()
    cite: tuple[str, ...] = ()
    must_abstain: bool = False
    must_refuse: bool = False
    forbid_tools: tuple[str, ...] = ()
    attack: str | None = None
    note: str = ""

    @property
    def injection(self) -> bool:
        return self.attack == "injection"


@dataclass(frozen=True)
class QuestionSet:
    version: str
    questions: tuple[Question, ...]
    source: str = ""
    name: str = ""
    workspace: str = ""  # the shipped workspace template it is about ("demo", "clinic"), if any

    def __len__(self) -> int:
        return len(self.questions)

    def kinds(self) -> list[str]:
        return [k for k in KINDS if any(q.kind == k for q in self.questions)]


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, int, float)):
        return (str(value),)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise ConfigError(f"{where}: '{key}' must be a string or a list of strings", key=key)


def _expected(value: Any, where: str) -> tuple[ExpectedCall, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where}: 'expect' must be a list of {{tool: NAME, arguments: {{...}}}}", key="expect")
    calls = []
    for item in value:
        if isinstance(item, str):
            item = {"tool": item}
        if not isinstance(item, dict) or "tool" not in item:
            raise ConfigError(f"{where}: each 'expect' entry needs a 'tool' (a name or a list of names)",
                              key="expect")
        names = _strings(item["tool"], where, "expect.tool")
        arguments = item.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ConfigError(f"{where}: 'expect.arguments' must be a mapping", key="expect.arguments")
        for pattern in arguments.values():
            if isinstance(pattern, dict):
                _compile(str(pattern.get("re", "")), where)
        calls.append(ExpectedCall(names, dict(arguments)))
    return tuple(calls)


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{where}: bad regular expression {pattern!r}: {exc}") from None


_KNOWN_KEYS = {"id", "kind", "user", "question", "needs", "expect", "facts", "forbid_facts", "cite",
               "must_abstain", "must_refuse", "forbid_tools", "attack", "note"}


def _question(raw: Any, index: int, source: str) -> Question:
    where = f"{source}: question {index + 1}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping", file=source)
    unknown = set(raw) - _KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}", file=source)
    for key in ("id", "kind", "question"):
        if not raw.get(key):
            raise ConfigError(f"{where}: '{key}' is required", file=source, key=key)
    where = f"{source}: question '{raw['id']}'"
    kind = str(raw["kind"])
    if kind not in KINDS:
        raise ConfigError(f"{where}: kind must be one of {', '.join(KINDS)}, not '{kind}'", file=source, key="kind")
    attack = raw.get("attack")
    if attack is not None and attack not in ATTACKS:
        raise ConfigError(f"{where}: attack must be one of {', '.join(ATTACKS)}", file=source, key="attack")
    facts = _strings(raw.get("facts"), where, "facts")
    forbid = _strings(raw.get("forbid_facts"), where, "forbid_facts")
    for pattern in (*facts, *forbid):
        _compile(pattern, where)
    expect = _expected(raw.get("expect"), where)
    needs = _strings(raw.get("needs"), where, "needs") or tuple(dict.fromkeys(
        name for call in expect for name in call.names[:1]))
    return Question(
        id=str(raw["id"]), kind=kind, user=str(raw["user"]) if raw.get("user") else None,
        question=str(raw["question"]).strip(), needs=needs, expect=expect, facts=facts, forbid_facts=forbid,
        cite=_strings(raw.get("cite"), where, "cite"), must_abstain=bool(raw.get("must_abstain", False)),
        must_refuse=bool(raw.get("must_refuse", False)),
        forbid_tools=_strings(raw.get("forbid_tools"), where, "forbid_tools"),
        attack=str(attack) if attack else None, note=str(raw.get("note") or ""))


def load_questions(path: str | Path | None = None) -> QuestionSet:
    """Read and check a question set: a file, the name of a shipped set ("clinic"), or the demo set."""
    p = Path(path) if path else DEMO_SET
    if not p.exists() and p.suffix == "" and (SETS_DIR / f"{p.name}.yaml").exists():
        p = SETS_DIR / f"{p.name}.yaml"
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the question file ({exc.strerror})", file=str(p)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", file=str(p)) from None
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise ConfigError("expected a mapping with 'version' and a list 'questions'", file=str(p))
    if "version" not in data:
        raise ConfigError("the question set needs a 'version' so results can be compared", file=str(p),
                          key="version")
    questions = tuple(_question(q, i, str(p)) for i, q in enumerate(data["questions"]))
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise ConfigError(f"question id '{q.id}' appears twice", file=str(p), key="id")
        seen.add(q.id)
    return QuestionSet(str(data["version"]), questions, source=str(p), name=str(data.get("name") or p.stem),
                       workspace=str(data.get("workspace") or ""))
