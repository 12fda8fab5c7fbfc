"""What every command shares: the workspace and user options, opening the workspace, and the
wrapper that turns any failure into one clear line and an exit status."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import click

from toolcrib.errors import ModelFacingError, ToolcribError

if TYPE_CHECKING:
    from toolcrib.workspace import Workspace

P = ParamSpec("P")
R = TypeVar("R")

workspace_option = click.option("--workspace", "-w", "workspace", type=click.Path(path_type=Path), default=None,
                                help="Workspace folder (default: $TOOLCRIB_WORKSPACE, else the shipped demo).")
user_option = click.option("--user", "-u", default=None, help="User to act as (from the workspace's [users]).")


def err(message: str) -> None:
    """One red line on stderr, prefixed with the program name."""
    click.secho(f"toolcrib: {message}", fg="red", err=True)


def controlled(fn: Callable[P, R]) -> Callable[P, R]:
    """Every failure ends as one clear line and a non-zero status, never a stack trace."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ModelFacingError as exc:
            err(f"{exc.code}: {exc.message}")
            sys.exit(3)
        except ToolcribError as exc:
            err(str(exc))
            sys.exit(2)
        except KeyboardInterrupt:
            err("interrupted")
            sys.exit(130)
        except click.ClickException:  # a usage error: click prints it with the usage line, status 2
            raise
        except Exception as exc:  # the last line of defence: short message, details only on request
            if os.environ.get("TOOLCRIB_DEBUG"):
                traceback.print_exc()
            err(f"unexpected error ({type(exc).__name__}: {exc}); set TOOLCRIB_DEBUG=1 for details")
            sys.exit(1)

    return wrapper


def open_workspace(workspace: Path | None, *, template: str = "") -> Workspace:
    """The workspace at ``workspace`` (else $TOOLCRIB_WORKSPACE, else the shipped ``template`` or the demo)."""
    from toolcrib.config import missing_settings
    from toolcrib.workspace import Workspace

    ws = Workspace.open(workspace, template=template)
    for line in missing_settings(ws.config):  # accepted, but a newcomer should hear what it leaves out
        click.secho(f"toolcrib: warning: {ws.config_file}: {line}", fg="yellow", err=True)
    return ws
