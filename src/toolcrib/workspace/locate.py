"""Where a workspace is: an explicit folder, $TOOLCRIB_WORKSPACE, or a shipped template copied to a
writable place ($TOOLCRIB_HOME) on first use."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from toolcrib.errors import ConfigError

CONFIG_NAME = "toolcrib.toml"
WORKSPACE_ENV = "TOOLCRIB_WORKSPACE"
HOME_ENV = "TOOLCRIB_HOME"
DEMO_SOURCE = Path(__file__).parent.parent / "demo" / "workspace"
# The shipped workspaces, by template name: the Kestrel Instruments demo and the veterinary clinic.
TEMPLATES: dict[str, Path] = {"demo": DEMO_SOURCE, "clinic": Path(__file__).parent.parent / "demo" / "clinic"}


def data_home() -> Path:
    """Where toolcrib keeps writable data: $TOOLCRIB_HOME, else $XDG_DATA_HOME/toolcrib."""
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "toolcrib"


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def template_source(name: str) -> Path:
    """The folder of a shipped workspace template; a clear error names the ones there are."""
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ConfigError(f"no workspace template '{name}'; choose one of: {', '.join(TEMPLATES)}",
                          key="template") from None


def shipped_workspace(name: str = "demo") -> Path:
    """A shipped workspace, copied to a writable place on first use (and again when the package changes it)."""
    source = template_source(name)
    target = data_home() / name
    marker = target / ".toolcrib-demo-version"
    version = _tree_digest(source)
    if marker.exists() and marker.read_text().strip() == version:
        return target
    staging = target.with_name(f"{name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns("__pycache__", ".toolcrib"))
    old_state = target / ".toolcrib"
    if old_state.exists():  # keep audit records and approvals across upgrades
        shutil.move(str(old_state), staging / ".toolcrib")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    marker.write_text(version)
    return target


def default_root() -> Path:
    """The folder a command opens when given no ``--workspace``: $TOOLCRIB_WORKSPACE, else the demo's copy
    (not copied here: nothing is written)."""
    chosen = os.environ.get(WORKSPACE_ENV)
    if chosen:
        root = Path(chosen).expanduser().resolve()
        return root.parent if root.is_file() else root
    return data_home() / "demo"


def resolve_workspace(path: str | Path | None, *, template: str = "") -> Path:
    """Explicit path, else the shipped ``template`` when one is named, else $TOOLCRIB_WORKSPACE, else the demo."""
    chosen = path or (None if template else os.environ.get(WORKSPACE_ENV))
    if chosen:
        root = Path(chosen).expanduser().resolve()
        if root.is_file():
            root = root.parent
        if not (root / CONFIG_NAME).exists():
            raise ConfigError(f"no {CONFIG_NAME} in {root}; pass --workspace PATH or set {WORKSPACE_ENV}",
                              file=str(root / CONFIG_NAME))
        return root
    return shipped_workspace(template or "demo")
