"""Runs INSIDE the sandbox, with the sandbox's Python: set the limits, give up root, run the code, report.

Standard library only, and nothing from toolcrib: this file is bind-mounted read-only at /job/launcher.py
and is the first thing the sandboxed interpreter runs. argv[1] is a JSON object of limits. The code is
/job/code.py, the inputs /input/data.json (read-only), the writable scratch space /scratch. The report
(result value, error, produced files) goes to file descriptor 3 as one JSON object; stdout and stderr
are the code's own.
"""

from __future__ import annotations

import ast
import base64
import ctypes
import json
import os
import resource
import signal
import sys
import traceback
from typing import Any

SCRATCH = "/scratch"
NOBODY = 65534
PR_SET_NO_NEW_PRIVS = 38


class CPULimit(Exception):
    """The code used up its CPU time (SIGXCPU at the soft limit)."""


def _on_xcpu(signum: int, frame: Any) -> None:
    raise CPULimit("the code used up its CPU time limit")


def _limit(which: int, value: int) -> None:
    resource.setrlimit(which, (value, value))


def _confine(limits: dict[str, int]) -> None:
    cpu = limits["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # soft: SIGXCPU (an exception); hard: SIGKILL
    _limit(resource.RLIMIT_AS, limits["memory_bytes"])
    _limit(resource.RLIMIT_NPROC, limits["processes"])
    _limit(resource.RLIMIT_FSIZE, limits["file_bytes"])
    _limit(resource.RLIMIT_NOFILE, 256)
    _limit(resource.RLIMIT_CORE, 0)
    signal.signal(signal.SIGXCPU, _on_xcpu)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # no setuid binary regains root
    if os.getuid() == 0:  # host root ran the sandbox without a user namespace: become nobody for good
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def _plain(value: Any) -> Any:
    """A JSON-friendly stand-in for numpy and pandas values."""
    for method in ("item", "tolist"):
        if hasattr(value, method) and callable(getattr(value, method)):
            try:
                return getattr(value, method)()
            except Exception:
                break
    if hasattr(value, "to_dict"):
        try:
            return value.to_dict()
        except Exception:
            pass
    return repr(value)


def _encode(value: Any, max_chars: int) -> Any:
    try:
        text = json.dumps(value, default=_plain, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(repr(value))
    if len(text) > max_chars:
        return {"truncated_repr": repr(value)[:max_chars]}
    return json.loads(text)


def _save_open_figures() -> None:
    """A chart drawn but not saved is saved, so the caller sees it."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or any(name.endswith(".png") for name in os.listdir(SCRATCH)):
        return
    for number in plt.get_fignums():
        plt.figure(number).savefig(os.path.join(SCRATCH, f"figure_{number}.png"))


def _files(max_files: int, max_bytes: int) -> tuple[list[dict[str, str]], list[str]]:
    files: list[dict[str, str]] = []
    skipped: list[str] = []
    total = 0
    for name in sorted(os.listdir(SCRATCH)):
        path = os.path.join(SCRATCH, name)
        if name.startswith(".") or not os.path.isfile(path) or os.path.islink(path):
            continue
        size = os.path.getsize(path)
        if len(files) >= max_files or total + size > max_bytes:
            skipped.append(name)
            continue
        with open(path, "rb") as fh:
            files.append({"name": name, "data": base64.b64encode(fh.read()).decode("ascii")})
        total += size
    return files, skipped


def _print_traceback(exc: BaseException) -> None:
    """The traceback from the code's own first frame on: the launcher's frames are not the code's business."""
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if f.filename == "<code>"), len(frames))
    text = "".join(traceback.format_list(frames[first:])) + "".join(traceback.format_exception_only(type(exc), exc))
    sys.stderr.write("Traceback (most recent call last):\n" + text)


def main() -> None:
    limits = json.loads(sys.argv[1])
    report = os.fdopen(limits["report_fd"], "w", encoding="utf-8")
    os.set_inheritable(limits["report_fd"], False)  # a child process of the code does not get the channel
    _confine(limits)
    launcher = os.getpid()
    out: dict[str, Any] = {"result": None, "error": None}
    try:
        inputs = None
        if os.path.exists("/input/data.json"):
            with open("/input/data.json", encoding="utf-8") as fh:
                inputs = json.load(fh)
        with open("/job/code.py", encoding="utf-8") as fh:
            source = fh.read()
        tree = ast.parse(source, "<code>")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        namespace: dict[str, Any] = {"__name__": "__main__", "inputs": inputs}
        exec(compile(tree, "<code>", "exec"), namespace)
        if last is not None:  # like a notebook cell: the value of a final expression is the result
            value = eval(compile(ast.Expression(last.value), "<code>", "eval"), namespace)
        else:
            value = namespace.get("result")
        out["result"] = _encode(value, limits["result_chars"])
        _save_open_figures()
    except BaseException as exc:
        if os.getpid() != launcher:  # a process the code forked: only the launcher reports
            os._exit(1)
        kind = "cpu_limit" if isinstance(exc, CPULimit) else "memory_limit" if isinstance(exc, MemoryError) else (
            "process_limit" if isinstance(exc, BlockingIOError) else "exit" if isinstance(exc, SystemExit)
            else "code_error")
        if kind != "exit" or exc.code not in (0, None):  # type: ignore[attr-defined]
            _print_traceback(exc)
            out["error"] = {"kind": kind, "type": type(exc).__name__, "message": str(exc)[:500]}
    if os.getpid() != launcher:
        os._exit(0)
    try:
        out["files"], out["skipped_files"] = _files(limits["max_files"], limits["file_bytes"])
    except OSError:
        out["files"], out["skipped_files"] = [], []
    sys.stdout.flush()
    report.write(json.dumps(out))
    report.flush()


if __name__ == "__main__":
    main()
