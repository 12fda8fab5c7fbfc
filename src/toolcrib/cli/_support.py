"""What every command shares: the workspace and user options, opening the workspace, and the
wrapper that turns any failure into one clear line and an exit status."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from toolcrib.errors import ModelFacingError, ToolcribError

F = TypeVar("F", bound=Callable[..., Any])

workspace_option = click.option("--workspace", "-w", "workspace", type=click.Path(path_type=Path), default=None,
                                help="Workspace folder (default: $TOOLCRIB_WORKSPACE, else the shipped demo).")
user_option = click.option("--user", "-u", default=None, help="User to act as (from the workspace's [users]).")


def err(message: str) -> None:
    click.secho(f"toolcrib: {message}", fg="red", err=True)


def controlled(fn: F) -> F:
    """Every failure ends as one clear line and a non-zero status, never a stack trace."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
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
        except Exception as exc:  # the last line of defence: short message, details only on request
            if os.environ.get("TOOLCRIB_DEBUG"):
                traceback.print_exc()
            err(f"unexpected error ({type(exc).__name__}: {exc}); set TOOLCRIB_DEBUG=1 for details")
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def open_workspace(workspace: Path | None) -> Any:
    from toolcrib.workspace import Workspace

    return Workspace.open(workspace)
