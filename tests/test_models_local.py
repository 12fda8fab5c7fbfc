"""The embedded model: weights assembled from their parts, and real tool decisions by the 1.5B model."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from fakes.complete import complete
from toolcrib.errors import ModelUnavailable
from toolcrib.models.base import Message, ToolCall, ToolSpec
from toolcrib.models.local import LocalModel
from toolcrib.models.weights import MODEL_SHA256, MODEL_SIZE, ensure_model_file

ORDER_TOOL = ToolSpec(
    name="get_order_status",
    description="Look up the current status of a customer order by its order id.",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order id, e.g. as printed on the invoice"}},
        "required": ["order_id"],
        "additionalProperties": False,
    },
)
PART_TOOL = ToolSpec(
    name="lookup_part",
    description="Look up a part in the catalogue by part number: name, price and stock.",
    parameters={
        "type": "object",
        "properties": {"part_number": {"type": "string"}},
        "required": ["part_number"],
        "additionalProperties": False,
    },
)
TOOLS = [ORDER_TOOL, PART_TOOL]


def _fake_parts(tmp_path: Path) -> tuple[list[Path], str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"second part" * 500, b"tail"]
    paths = []
    for i, chunk in enumerate(chunks, start=1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(chunk)
        paths.append(path)
    return paths, hashlib.sha256(b"".join(chunks)).hexdigest()


def test_parts_are_joined_once_and_then_reused(tmp_path: Path) -> None:
    parts, digest = _fake_parts(tmp_path / "parts")
    stages: list[tuple[str, int, int]] = []

    path = ensure_model_file(lambda *p: stages.append(p), directory=tmp_path / "cache", parts=parts,
                             sha256=digest, filename="fake.gguf")

    assert path.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert stages[-1] == ("assemble", path.stat().st_size, path.stat().st_size)
    stages.clear()
    again = ensure_model_file(lambda *p: stages.append(p), directory=tmp_path / "cache", parts=parts,
                              sha256=digest, filename="fake.gguf")
    assert again == path and stages == []  # no reassembly, no rehash
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.sha256"]


def test_corrupt_parts_raise_model_unavailable_and_leave_no_file(tmp_path: Path) -> None:
    parts, digest = _fake_parts(tmp_path / "parts")
    parts[1].write_bytes(b"bit rot" * 500)

    with pytest.raises(ModelUnavailable, match=r"corrupt.*Reinstall"):
        ensure_model_file(directory=tmp_path / "cache", parts=parts, sha256=digest, filename="fake.gguf")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_corrupt_cached_file_is_replaced_from_the_parts(tmp_path: Path) -> None:
    parts, digest = _fake_parts(tmp_path / "parts")
    path = ensure_model_file(directory=tmp_path / "cache", parts=parts, sha256=digest, filename="fake.gguf")
    size = path.stat().st_size
    path.write_bytes(b"x" * size)  # same size, wrong bytes, and no trusted marker any more
    path.with_name("fake.gguf.sha256").unlink()

    again = ensure_model_file(directory=tmp_path / "cache", parts=parts, sha256=digest, filename="fake.gguf")
    assert hashlib.sha256(again.read_bytes()).hexdigest() == digest


def test_a_missing_part_raises_model_unavailable(tmp_path: Path) -> None:
    parts, digest = _fake_parts(tmp_path / "parts")
    parts[2].unlink()
    with pytest.raises(ModelUnavailable, match="missing"):
        ensure_model_file(directory=tmp_path / "cache", parts=parts, sha256=digest, filename="fake.gguf")


def test_a_missing_model_path_raises_model_unavailable(tmp_path: Path) -> None:
    model = LocalModel.from_spec("", {"model_path": str(tmp_path / "nope.gguf")})
    with pytest.raises(ModelUnavailable, match="model_path"):
        complete(model, [Message("user", "hi")])


def test_a_file_that_is_not_gguf_raises_model_unavailable(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model" * 100)
    with pytest.raises(ModelUnavailable, match="not a valid GGUF"):
        complete(LocalModel.from_spec("", {"model_path": str(bogus)}), [Message("user", "hi")])


# --- the real 1.5B model ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> LocalModel:
    pytest.importorskip("llama_cpp")
    prompts = tmp_path_factory.mktemp("prompts")  # never the user's cache
    return LocalModel.from_spec("", {"n_threads": 2, "n_threads_batch": 2, "prompt_cache": str(prompts)})


def _only_call(reply_calls: tuple[ToolCall, ...]) -> ToolCall:
    assert len(reply_calls) == 1, reply_calls
    return reply_calls[0]


@pytest.mark.slow
def test_assembled_model_file_matches_the_pinned_hash() -> None:
    path = ensure_model_file()
    assert path.stat().st_size == MODEL_SIZE
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            digest.update(chunk)
    assert digest.hexdigest() == MODEL_SHA256


@pytest.mark.slow
def test_order_question_calls_get_order_status(model: LocalModel) -> None:
    reply = complete(model, [Message("user", "What's the status of order ORD-1001?")], TOOLS)
    call = _only_call(reply.tool_calls)
    assert (call.name, call.arguments) == ("get_order_status", {"order_id": "ORD-1001"})
    assert call.id.startswith("call_")
    assert reply.tokens_in > 0 and reply.tokens_out > 0 and reply.ms > 0


@pytest.mark.slow
def test_part_question_calls_lookup_part(model: LocalModel) -> None:
    reply = complete(model, [Message("user", "What does part HLV-2205 cost?")], TOOLS)
    call = _only_call(reply.tool_calls)
    assert (call.name, call.arguments) == ("lookup_part", {"part_number": "HLV-2205"})


@pytest.mark.slow
def test_a_question_about_two_orders_gets_two_calls_in_one_decision(model: LocalModel) -> None:
    reply = complete(model, [Message("user", "What's the status of orders ORD-1001 and ORD-1002?")], TOOLS)
    assert sorted((c.name, c.arguments["order_id"]) for c in reply.tool_calls) == [
        ("get_order_status", "ORD-1001"), ("get_order_status", "ORD-1002")]


def test_a_list_of_calls_is_read_one_by_one_and_a_cut_one_is_marked_malformed() -> None:
    from toolcrib.models.decision import parse_decision

    text, calls = parse_decision('[{"tool": "lookup_part", "arguments": {"part_number": "A-1"}}, '
                                  '{"tool": "get_order_status", "arguments": {"order_id": "ORD-1')
    assert text == "" and [(c.name, c.arguments, c.parse_error is None) for c in calls] == [
        ("lookup_part", {"part_number": "A-1"}, True), ("get_order_status", {}, False)]
    assert calls[1].parse_error is not None and "cut off" in calls[1].parse_error
    assert parse_decision('[{"answer": "Hello."}]') == ("Hello.", ())
    assert parse_decision('[{"answer": "Hello, I was cut') == ("Hello, I was cut", ())


@pytest.mark.slow
def test_small_talk_is_answered_directly(model: LocalModel) -> None:
    reply = complete(model, [Message("user", "What is 2+2? Answer directly")], TOOLS)
    assert reply.tool_calls == ()
    assert "4" in reply.text


@pytest.mark.slow
def test_tool_result_is_used_in_the_answer(model: LocalModel) -> None:
    call = ToolCall(id="call_a", name="get_order_status", arguments={"order_id": "ORD-1001"})
    result = {"ok": True, "order_id": "ORD-1001", "status": "shipped", "carrier": "DHL", "eta": "2026-11-20"}
    messages = [
        Message("user", "What's the status of order ORD-1001?"),
        Message("assistant", tool_calls=(call,)),
        Message("tool", json.dumps(result), tool_call_id="call_a"),
    ]
    reply = complete(model, messages, TOOLS)
    assert reply.tool_calls == ()
    assert "shipped" in reply.text.lower()


@pytest.mark.slow
def test_required_tool_choice_never_answers(model: LocalModel) -> None:
    reply = complete(model, [Message("user", "Hello there!")], TOOLS, tool_choice="required")
    assert _only_call(reply.tool_calls).name in {"get_order_status", "lookup_part"}


@pytest.mark.slow
def test_without_tools_the_model_replies_in_plain_text(model: LocalModel) -> None:
    reply = complete(model, [Message("system", "Reply in one short sentence."),
                            Message("user", "Name the capital of France.")], max_tokens=40)
    assert reply.tool_calls == () and "Paris" in reply.text and not reply.text.lstrip().startswith("{")


def test_pydantic_schemas_with_defs_and_unsupported_keywords_become_a_strict_grammar() -> None:
    pytest.importorskip("llama_cpp")
    from enum import Enum

    from pydantic import BaseModel, Field

    from toolcrib.models.decision import decision_schema_text, grammar

    class Priority(str, Enum):
        low = "low"
        high = "high"

    class Address(BaseModel):
        city: str
        postcode: str = Field(pattern=r"^[0-9]{4,5}$")

    class Arguments(BaseModel):
        order_id: str = Field(pattern=r"(?i)ORD-\d+")  # a regex llama.cpp cannot take: dropped
        quantity: int = Field(gt=0, le=99)
        priority: Priority
        ship_to: Address | None = None

    spec = ToolSpec("reserve", "Reserve stock.", Arguments.model_json_schema())
    gbnf: str = grammar(decision_schema_text([spec], False))._grammar
    assert '"\\"reserve\\""' in gbnf and '"\\"high\\""' in gbnf and '"\\"city\\""' in gbnf
    assert "answer" in gbnf
    assert "answer" not in grammar(decision_schema_text([spec], True))._grammar
    assert '"99"' in gbnf and '"100"' not in gbnf  # quantity: 1 to 99, the bounds a grammar now holds


@pytest.mark.slow
def test_models_with_the_same_settings_share_one_loaded_engine(model: LocalModel) -> None:
    model.load()
    twin = LocalModel.from_spec("", {"n_threads": 2, "n_threads_batch": 2, "prompt_cache": model.prompt_cache})
    assert twin.load() == 0.0  # already in memory: no second 1.1 GB load
    reply = complete(twin, [Message("user", "What does part HLV-2205 cost?")], TOOLS)
    assert _only_call(reply.tool_calls).name == "lookup_part"


# --- one prompt prefix per conversation, and the prompt cache on disk ---------------------------------

ORDER_RESULT = {"ok": True, "order_id": "ORD-1001", "status": "shipped", "carrier": "DHL", "eta": "2026-11-20"}


def _after_lookup(final_instruction: str) -> list[Message]:
    call = ToolCall(id="call_a", name="get_order_status", arguments={"order_id": "ORD-1001"})
    return [
        Message("system", "You are the service desk assistant."),
        Message("user", "What's the status of order ORD-1001?"),
        Message("assistant", tool_calls=(call,)),
        Message("tool", json.dumps(ORDER_RESULT), tool_call_id="call_a"),
        Message("user", final_instruction),
    ]


def test_a_required_call_keeps_the_decisions_system_block() -> None:
    from toolcrib.models.local import _render_messages

    question = [Message("system", "You are the service desk assistant."), Message("user", "Hello there!")]
    decision = _render_messages(question, TOOLS, required=False)
    required = _render_messages(question, TOOLS, required=True)

    assert required[0] == decision[0]  # same system block: its evaluation (and its cache file) is reused
    assert "get_order_status" in decision[0]["content"]
    assert required[-1]["role"] == "user" and "tool call is required" in required[-1]["content"]
    assert "tool call is required" not in decision[-1]["content"]


@pytest.fixture()
def cached_model(tmp_path: Path) -> LocalModel:
    pytest.importorskip("llama_cpp")
    return _fresh_process_twin(tmp_path)


def _fresh_process_twin(tmp_path: Path) -> LocalModel:
    """A model whose engine starts empty, like the next `toolcrib ask` (the process's engines are freed)."""
    from toolcrib.models.local import clear_engine_cache

    clear_engine_cache()
    return LocalModel.from_spec("", {"n_threads": 2, "n_threads_batch": 2, "prompt_cache": str(tmp_path / "prompts")})


@pytest.mark.slow
def test_the_final_answer_after_a_decision_cannot_call_a_tool(cached_model: LocalModel) -> None:
    decision = complete(cached_model, _after_lookup("")[:2], TOOLS)
    assert _only_call(decision.tool_calls).name == "get_order_status"

    final = complete(cached_model, _after_lookup("Now answer the question using only the evidence above."))
    assert final.tool_calls == () and "shipped" in final.text.lower()

    tempted = complete(cached_model, _after_lookup("Call get_order_status for order ORD-1002 now."))
    assert tempted.tool_calls == ()


@pytest.mark.slow
def test_the_system_block_is_saved_once_and_reused_by_the_next_process(cached_model: LocalModel,
                                                                        tmp_path: Path) -> None:
    question = _after_lookup("")[:2]
    first = complete(cached_model, question, TOOLS)
    saved = sorted((tmp_path / "prompts").glob("*.kv"))
    # the block, and its start without the tool list (where other offers of the workspace start from)
    assert len(saved) == 2 and all(f.stat().st_size > 1_000_000 for f in saved)

    twin = _fresh_process_twin(tmp_path)
    again = complete(twin, question, TOOLS)
    assert _only_call(again.tool_calls).arguments == _only_call(first.tool_calls).arguments
    assert sorted((tmp_path / "prompts").glob("*.kv")) == saved  # read back, not rebuilt beside it


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "truncated", "old format", "empty"])
def test_a_damaged_cache_file_is_ignored_and_rebuilt(cached_model: LocalModel, tmp_path: Path, damage: str) -> None:
    from toolcrib.models.prompt_cache import PromptCache

    question = _after_lookup("")[:2]
    complete(cached_model, question, TOOLS)
    saved = max((tmp_path / "prompts").glob("*.kv"), key=lambda f: f.stat().st_size)  # the whole block
    blob = saved.read_bytes()
    state_starts = 21 + 4 * int.from_bytes(blob[5:9], "little")  # header, then the int32 tokens
    saved.write_bytes({
        "garbage": blob[:state_starts] + bytes(len(blob) - state_starts),  # zeroed state: its CRC fails
        "truncated": blob[: len(blob) // 2],
        "old format": b"TCPC\x00" + blob[5:],
        "empty": b"",
    }[damage])

    twin = _fresh_process_twin(tmp_path)
    reply = complete(twin, question, TOOLS)
    assert _only_call(reply.tool_calls).arguments == {"order_id": "ORD-1001"}
    assert saved.read_bytes() == blob  # rebuilt, identical to the first
    engine, _ = twin._load()
    tokens = list(struct.unpack_from(f"<{(state_starts - 21) // 4}i", blob, 21))
    assert PromptCache(tmp_path / "prompts", engine.model_id).restore(engine.llama, tokens) is True


@pytest.mark.slow
def test_an_offer_with_more_tools_starts_from_the_saved_block_of_a_smaller_one(
        cached_model: LocalModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcrib.models.local import _block_tokens, _common_prefix

    question = _after_lookup("")[:2]
    complete(cached_model, question, [ORDER_TOOL])  # another question of the workspace, offered one tool
    twin = _fresh_process_twin(tmp_path)
    engine, _ = twin._load()
    evaluated: list[int] = []
    real_eval = engine.llama.eval
    monkeypatch.setattr(engine.llama, "eval", lambda tokens: (evaluated.append(len(tokens)), real_eval(tokens))[1])
    reply = complete(twin, question, [ORDER_TOOL, PART_TOOL])
    assert _only_call(reply.tool_calls).arguments == {"order_id": "ORD-1001"}
    whole = _block_tokens(engine.llama, question, [ORDER_TOOL, PART_TOOL])
    shared = _common_prefix(_block_tokens(engine.llama, question, [ORDER_TOOL]), whole)
    assert shared > 50  # the instructions and the first tool
    assert 0 < sum(evaluated) <= len(whole) - shared + 64  # the rest of the block and the question, not all of it
    assert len(list((tmp_path / "prompts").glob("*.kv"))) == 3


@pytest.mark.slow
def test_an_unwritable_cache_folder_only_costs_the_cache(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    model = LocalModel.from_spec("", {"n_threads": 2, "prompt_cache": str(blocker / "prompts")})
    reply = complete(model, _after_lookup("")[:2], TOOLS)
    assert _only_call(reply.tool_calls).arguments == {"order_id": "ORD-1001"}


@pytest.mark.slow
def test_the_prompt_cache_can_be_turned_off(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    model = LocalModel.from_spec("", {"n_threads": 2, "prompt_cache": "off"})
    reply = complete(model, _after_lookup("")[:2], TOOLS)
    assert _only_call(reply.tool_calls).name == "get_order_status"
    assert model._disk_cache(model._load()[0]) is None


@pytest.mark.slow
def test_a_reply_under_a_selection_schema_copies_only_the_evidence_s_lines_and_code_writes_the_answer(
        model: LocalModel) -> None:
    """The aided answer as the embedded model gives it: it picks the lines that answer a record question,
    and the answer code writes from them states each value once, exactly as the record holds it, cited."""
    from toolcrib.agent import prompts
    from toolcrib.agent.evidence import EvidenceLedger
    from toolcrib.agent.selection import unit_brief
    from toolcrib.tools.result import CallOutcome

    record = {"order_id": "ORD-1001", "status": "shipped", "carrier": "DHL", "eta": "2026-11-20",
              "customer": "Juniper Labs", "total_usd": 412.5}
    outcome = CallOutcome(ToolCall("c1", "get_order_status", {"order_id": "ORD-1001"}), "ok",
                          {"ok": True, "data": record})
    ledger = EvidenceLedger()
    ledger.add(outcome)
    brief = unit_brief(ledger, [outcome])
    question = "Which carrier has order ORD-1001 and when is it due?"
    reply = complete(model, [Message("user", prompts.EVIDENCE.format(evidence=brief.text)),
                             Message("user", prompts.SELECT.format(question=question, today=""))],
                     max_tokens=64, reply_schema=brief.schema())
    assert set(json.loads(reply.text)["answer"]) <= set(brief.units)  # nothing but the evidence's lines
    text = brief.compose(reply.text, question)
    assert text is not None and "DHL" in text and "2026-11-20" in text and text.count("DHL") == 1
    assert text.endswith("[get_order_status#1].") and "{" not in text
