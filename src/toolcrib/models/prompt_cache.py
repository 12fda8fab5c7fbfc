"""llama.cpp's state after the stable start of a prompt, kept on disk between processes.

Every ``toolcrib ask`` is a new process, and every question starts with the same long system block
(the workspace's prompt and the tool list, ~1,300 tokens on the demo). Evaluating it is most of a
question's cost on a CPU; reading its key/value cache back from a file takes milliseconds. A file
holds one prefix: its tokens and the sequence state llama.cpp exported after evaluating exactly
those tokens. It is keyed by the tokens, the model file and the context size, written atomically,
checked (magic, sizes, tokens, CRC) when read, and anything that does not check out is deleted and
rebuilt, never trusted. The folder is kept under a byte budget by removing the least recently used.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import struct
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp import Llama

# a saved system block of the embedded model is ~28 KB a token, 35-40 MB: the demo's single-mode offers
# alone are 14 of them (~530 MB), and loop mode's as many again; under 512 MB one eval evicted what the
# next question needed
DEFAULT_MAX_BYTES = 1536 * 1024 * 1024
_MAGIC = b"TCPC\x01"
_SUFFIX = ".kv"
_HEADER = struct.Struct("<5sIQI")  # magic, token count, state bytes, CRC32 of tokens + state
_SEQ = 0  # llama-cpp-python's Llama uses sequence 0 only


class PromptCache:
    """A size-bounded folder of saved prompt prefixes for one model file and context size."""

    def __init__(self, directory: str | os.PathLike[str], model_id: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = Path(directory)
        self.model_id = model_id
        self.max_bytes = max_bytes

    def path_for(self, tokens: Sequence[int], n_ctx: int) -> Path:
        """The file that holds (or would hold) the state after ``tokens``."""
        digest = hashlib.sha256(json.dumps([self.model_id, n_ctx, list(tokens)]).encode()).hexdigest()
        return self.directory / f"{digest[:32]}{_SUFFIX}"

    def restore(self, llama: Llama, tokens: Sequence[int]) -> bool:
        """Put the saved state after ``tokens`` into ``llama``; False (and nothing changed) on a miss.

        A file that is unreadable, truncated, from another format or whose contents do not match is
        deleted, so the next call rebuilds it.
        """
        path = self.path_for(tokens, llama.n_ctx())
        try:
            blob = path.read_bytes()
        except OSError:
            return False
        state = _decode(blob, tokens)
        if state is None or not _load_sequence(llama, tokens, state):
            path.unlink(missing_ok=True)
            return False
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: the last to be evicted
        return True

    def store(self, llama: Llama, tokens: Sequence[int]) -> Path | None:
        """Save the state of ``llama``, which must hold exactly ``tokens``; None if it could not be written."""
        if llama.n_tokens != len(tokens) or list(llama.input_ids[: len(tokens)]) != list(tokens):
            return None
        state = _save_sequence(llama)
        if state is None:
            return None
        token_bytes = struct.pack(f"<{len(tokens)}i", *tokens)
        crc = zlib.crc32(state, zlib.crc32(token_bytes))
        path = self.path_for(tokens, llama.n_ctx())
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_HEADER.pack(_MAGIC, len(tokens), len(state), crc))
                    handle.write(token_bytes)
                    handle.write(state)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return None  # a read-only or full disk makes the cache useless, never the model
        self._evict(keep=path)
        return path

    def _evict(self, keep: Path) -> None:
        """Remove the least recently used files until the folder fits its budget (``keep`` stays)."""
        entries: list[tuple[float, int, Path]] = []
        for path in self.directory.glob(f"*{_SUFFIX}"):
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path != keep:
                path.unlink(missing_ok=True)
                total -= size


def _decode(blob: bytes, tokens: Sequence[int]) -> bytes | None:
    """The state bytes in ``blob`` if it is a sound file for exactly ``tokens``, else None."""
    if len(blob) < _HEADER.size:
        return None
    magic, n_tokens, n_state, crc = _HEADER.unpack_from(blob)
    start = _HEADER.size + 4 * n_tokens
    if magic != _MAGIC or n_tokens != len(tokens) or len(blob) != start + n_state or n_state == 0:
        return None
    token_bytes = blob[_HEADER.size:start]
    if list(struct.unpack(f"<{n_tokens}i", token_bytes)) != list(tokens):
        return None
    state = blob[start:]
    if zlib.crc32(state, zlib.crc32(token_bytes)) != crc:
        return None
    return state


def _save_sequence(llama: Llama) -> bytes | None:
    import llama_cpp

    ctx = llama._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, _SEQ)
    if size <= 0:
        return None
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, _SEQ)
    if written <= 0 or written > size:
        return None
    return bytes(buffer)[:written]


def _load_sequence(llama: Llama, tokens: Sequence[int], state: bytes) -> bool:
    """Replace ``llama``'s context by the saved sequence; on failure leave it empty and consistent."""
    import llama_cpp

    llama.reset()  # type: ignore[no-untyped-call]
    ctx = llama._ctx.ctx
    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    if llama_cpp.llama_state_seq_set_data(ctx, buffer, len(state), _SEQ) != len(state):
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        llama.reset()  # type: ignore[no-untyped-call]
        return False
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    llama._requires_eval = True  # no logits yet: the next call evaluates at least one token
    return True
