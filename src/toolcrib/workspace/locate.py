"""Where a workspace is: an explicit folder, $TOOLCRIB_WORKSPACE, or a shipped template copied to a
writable place ($TOOLCRIB_HOME) on first use. The templates inside the package are read-only to code: a
path to one opens its copy, so no database, index or state is ever written into the package."""

from __future__ import annotations

import fnmatch
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
# What a copy of a template never takes from it: state, bytecode, and any database (a copy builds its
# own from seed.sql; a stray file in the package must not reach every copy)
NOT_COPIED = ("__pycache__", ".toolcrib", "*.sqlite", "*.sqlite-*", "*.building", ".*.tmp")


def data_home() -> Path:
    """Where toolcrib keeps writable data: $TOOLCRIB_HOME, else $XDG_DATA_HOME/toolcrib."""
    explicit = os.environ.get(HOME_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "toolcrib"


def _copied(relative: Path) -> bool:
    return not any(fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in NOT_COPIED)


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and _copied(p.relative_to(root))):
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
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns(*NOT_COPIED))
    old_state = target / ".toolcrib"
    if old_state.exists():  # keep audit records and approvals across upgrades
        shutil.move(str(old_state), staging / ".toolcrib")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    marker.write_text(version)
    return target


def template_of(root: Path) -> str | None:
    """The name of the shipped template ``root`` is or lies in (inside the package), else None."""
    resolved = root.resolve()
    for name, source in TEMPLATES.items():
        folder = source.resolve()
        if resolved == folder or folder in resolved.parents:
            return name
    return None


def default_root() -> Path:
    """The folder a command opens when given no ``--workspace``: $TOOLCRIB_WORKSPACE, else the demo's copy
    (not copied here: nothing is written)."""
    chosen = os.environ.get(WORKSPACE_ENV)
    if chosen:
        root = Path(chosen).expanduser().resolve()
        root = root.parent if root.is_file() else root
        shipped = template_of(root)
        return data_home() / shipped if shipped else root
    return data_home() / "demo"


def resolve_workspace(path: str | Path | None, *, template: str = "") -> Path:
    """Explicit path, else the shipped ``template`` when one is named, else $TOOLCRIB_WORKSPACE, else the demo;
    a path into a shipped template is its writable copy."""
    chosen = path or (None if template else os.environ.get(WORKSPACE_ENV))
    if chosen:
        root = Path(chosen).expanduser().resolve()
        if root.is_file():
            root = root.parent
        if not (root / CONFIG_NAME).exists():
            raise ConfigError(f"no {CONFIG_NAME} in {root}; pass --workspace PATH or set {WORKSPACE_ENV}",
                              file=str(root / CONFIG_NAME))
        shipped = template_of(root)
        return shipped_workspace(shipped) if shipped else root  # never the package's own folder
    return shipped_workspace(template or "demo")
