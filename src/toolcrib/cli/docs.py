"""``toolcrib docs``: this project's documentation site, served (or built) locally, offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from toolcrib.cli._support import controlled
from toolcrib.errors import ConfigError, MissingDependency


def find_mkdocs_yml(start: Path | None = None) -> Path:
    """The ``mkdocs.yml`` of the clone toolcrib runs from (an editable install), else of the current folder."""
    here = Path(__file__).resolve()
    for folder in (here.parents[3], *(start or Path.cwd()).resolve().parents, (start or Path.cwd()).resolve()):
        candidate = folder / "mkdocs.yml"
        if candidate.is_file() and (folder / "docs").is_dir():
            return candidate
    raise ConfigError("the documentation is built from a clone of toolcrib: run this inside one "
                      "(its mkdocs.yml and docs/ folder), after ./scripts/setup.sh")


@click.command("docs")
@click.option("--port", default=8001, show_default=True, help="Port to serve the site on (127.0.0.1).")
@click.option("--build", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Build the site into this folder instead of serving it (strict: a broken link fails).")
@controlled
def docs_cmd(port: int, out: Path | None) -> None:
    """Serve this documentation site at http://127.0.0.1:PORT (or build it), offline."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        raise MissingDependency("the documentation site", "docs") from None
    config = find_mkdocs_yml()
    if out is not None:
        command = ["build", "--strict", "-f", str(config), "-d", str(out.resolve())]
    else:
        command = ["serve", "-f", str(config), "-a", f"127.0.0.1:{port}"]
    sys.exit(subprocess.call([sys.executable, "-m", "mkdocs", *command], cwd=config.parent))
