"""A bubblewrap (``bwrap``) sandbox for model-written Python, and the probe that says whether one works
here. What the code inside sees: the Python installation (and its virtual environment, for numpy, pandas
and matplotlib) and the system's ``/usr``, read-only; its inputs at ``/input/data.json``, read-only; a
private ``/scratch`` (a size-limited tmpfs, gone when it ends); four device nodes; its own ``/proc``;
``/etc/fonts``. Nothing else of the host: no other ``/etc``, no home folders, no workspace, no database.
It has no network (its own network namespace, loopback only), its own PID, IPC and UTS namespaces, and
the root of its file system is remounted read-only. A launcher inside (``_launcher.py``) sets CPU-time,
memory, process, file-size and open-file limits, forbids gaining privileges, and gives up root when the
host ran it as root (there the process limit would not apply to uid 0); the host kills it at its
wall-time limit and caps what it prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

LAUNCHER = Path(__file__).with_name("_launcher.py")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
INSTALL_HINT = "install Debian's bubblewrap package (apt-get install bubblewrap)"


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use. ``output_bytes`` of stdout are kept; past 16 times that, the run is stopped."""

    cpu_s: int = 10
    wall_s: float = 20.0
    memory_mb: int = 1024
    processes: int = 32
    output_bytes: int = 64 * 1024
    scratch_mb: int = 64
    max_files: int = 10
    result_chars: int = 20_000

    @property
    def output_hard_bytes(self) -> int:
        return self.output_bytes * 16


@dataclass
class SandboxRun:
    """What one run did: its output, its result value or error, the files it left in scratch."""

    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    result: Any = None
    error: dict[str, str] | None = None  # kind: code_error, cpu_limit, memory_limit, process_limit,
    # time_limit, output_limit, crashed
    files: dict[str, bytes] = field(default_factory=dict)
    skipped_files: list[str] = field(default_factory=list)
    exit_code: int | None = None
    ms: float = 0.0


class _Capped:
    """Drains a pipe on a thread, keeping the first ``keep`` bytes; calls ``over`` past ``hard`` bytes."""

    def __init__(self, stream: IO[bytes], keep: int, hard: int, over: Any) -> None:
        self.data = bytearray()
        self.total = 0
        self._stream, self._keep, self._hard, self._over = stream, keep, hard, over
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while chunk := self._stream.read(65536):
            self.total += len(chunk)
            room = self._keep - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            if self.total > self._hard:
                self._over()
                break
        self._stream.close()


def _python_paths(python: str) -> tuple[str, list[str]]:
    """The interpreter to run and the folders its installation lives in (prefix, base prefix)."""
    if python == sys.executable:
        roots = {sys.prefix, sys.base_prefix}
    else:
        out = subprocess.run([python, "-c", "import sys, json; print(json.dumps([sys.prefix, sys.base_prefix]))"],
                             capture_output=True, text=True, timeout=10, check=True)
        roots = set(json.loads(out.stdout))
    return python, sorted(r for r in roots if r and not r.startswith("/usr/"))


class Sandbox:
    """Runs Python code under bubblewrap with ``limits``; ``unavailable()`` says why it cannot, or None."""

    def __init__(self, limits: SandboxLimits | None = None, *, python: str | None = None,
                 bwrap: str | None = None) -> None:
        self.limits = limits or SandboxLimits()
        self.python = python or sys.executable
        self.bwrap = (shutil.which("bwrap") or "") if bwrap is None else bwrap  # "": none, on purpose
        self._probed: str | bool | None = False

    # -- availability ---------------------------------------------------------------------------

    def unavailable(self) -> str | None:
        """Why the sandbox cannot run here (no bwrap, no user namespaces, no Python inside), or None.
        Probed once per Sandbox: the real sandbox runs ``python -c pass``."""
        if self._probed is not False:
            return self._probed  # type: ignore[return-value]
        self._probed = self._probe()
        return self._probed

    def _probe(self) -> str | None:
        if not self.bwrap:
            return f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
        with tempfile.TemporaryDirectory(prefix="toolcrib-probe-") as tmp:
            job = Path(tmp)
            try:
                argv = self._argv(job, None, ["-c", "pass"], launcher=False)
            except (OSError, subprocess.SubprocessError, ValueError) as exc:
                return f"the sandbox's Python {self.python} cannot be inspected: {exc}"
            try:
                done = subprocess.run(argv, capture_output=True, timeout=15, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"bwrap could not be started: {exc}"
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no reason given"]
            return (f"bwrap cannot create the sandbox here ({why[0][:200]}); user namespaces may be off "
                    "(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)")
        return None

    # -- running --------------------------------------------------------------------------------

    def _argv(self, job: Path, inputs: Path | None, args: list[str], *, launcher: bool = True) -> list[str]:
        python, roots = _python_paths(self.python)
        root_mode = os.geteuid() == 0
        argv = [self.bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent", "--new-session",
                "--clearenv"]
        if root_mode:  # no user namespace: the launcher keeps only the right to become nobody, then does
            argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            argv += ["--unshare-user"]
        argv += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                argv += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                argv += ["--ro-bind", top, top]
        made: set[str] = set()
        for root in roots:  # the interpreter's installation, read-only, where it expects to be
            parts = Path(root).parts
            for depth in range(2, len(parts)):
                parent = str(Path(*parts[:depth]))
                if parent not in made:
                    made.add(parent)
                    argv += ["--perms", "0755", "--dir", parent]
            argv += ["--ro-bind", root, root]
        if os.path.isdir("/etc/fonts"):  # public font configuration, for matplotlib's text
            argv += ["--perms", "0755", "--dir", "/etc", "--ro-bind", "/etc/fonts", "/etc/fonts"]
        for dev in _DEVICES:
            if os.path.exists(dev):
                argv += ["--dev-bind", dev, dev]
        argv += ["--proc", "/proc",
                 "--perms", "01777", "--size", str(self.limits.scratch_mb * 1024 * 1024), "--tmpfs", "/scratch",
                 "--ro-bind", str(job), "/job"]
        if inputs is not None:
            argv += ["--ro-bind", str(inputs), "/input"]
        for name, value in (("PATH", "/usr/local/bin:/usr/bin:/bin"), ("HOME", "/scratch"), ("TMPDIR", "/scratch"),
                            ("MPLBACKEND", "Agg"), ("MPLCONFIGDIR", "/scratch/.matplotlib"),
                            ("OPENBLAS_NUM_THREADS", "1"), ("OMP_NUM_THREADS", "1"), ("MKL_NUM_THREADS", "1"),
                            ("PYTHONDONTWRITEBYTECODE", "1"), ("PYTHONIOENCODING", "utf-8"), ("LANG", "C.UTF-8")):
            argv += ["--setenv", name, value]
        argv += ["--remount-ro", "/", "--chdir", "/scratch", "--", python, "-I"]
        return argv + (["/job/launcher.py", *args] if launcher else args)

    def run(self, code: str, inputs: Any = None) -> SandboxRun:
        """Run ``code`` with ``inputs`` (any JSON value, or None) visible read-only as ``inputs`` and
        ``/input/data.json``. Never raises for what the code does; raises OSError if bwrap cannot start."""
        lim = self.limits
        with tempfile.TemporaryDirectory(prefix="toolcrib-sandbox-") as tmp:
            job, given = Path(tmp) / "job", Path(tmp) / "input"
            job.mkdir()
            given.mkdir()
            os.chmod(tmp, 0o755)
            for folder in (job, given):
                os.chmod(folder, 0o755)
            shutil.copyfile(LAUNCHER, job / "launcher.py")
            (job / "code.py").write_text(code, encoding="utf-8")
            if inputs is not None:
                (given / "data.json").write_text(json.dumps(inputs), encoding="utf-8")
            for path in (job / "launcher.py", job / "code.py", given / "data.json"):
                if path.exists():
                    os.chmod(path, 0o644)
            settings = {"cpu_s": lim.cpu_s, "memory_bytes": lim.memory_mb * 1024 * 1024,
                        "processes": lim.processes, "file_bytes": lim.scratch_mb * 1024 * 1024,
                        "max_files": lim.max_files, "result_chars": lim.result_chars}
            read_end, write_end = os.pipe()  # the launcher's report channel, passed through bwrap by number
            settings["report_fd"] = write_end
            try:
                argv = self._argv(job, given, [json.dumps(settings)])
                return self._execute(argv, read_end, write_end)
            finally:
                os.close(read_end)

    def _execute(self, argv: list[str], read_end: int, write_end: int) -> SandboxRun:
        lim = self.limits
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    pass_fds=(write_end,), start_new_session=True)
        finally:
            os.close(write_end)  # only the sandbox holds the write end now: its exit ends the report
        stopped: list[str] = []

        def stop(reason: str) -> None:
            if not stopped:
                stopped.append(reason)
            _kill(proc)

        assert proc.stdout is not None and proc.stderr is not None
        out = _Capped(proc.stdout, lim.output_bytes, lim.output_hard_bytes, lambda: stop("output_limit"))
        err = _Capped(proc.stderr, 16 * 1024, lim.output_hard_bytes, lambda: stop("output_limit"))
        report = _Capped(os.fdopen(os.dup(read_end), "rb"), (lim.scratch_mb + 1) * 1024 * 1024 * 2,
                         (lim.scratch_mb + 1) * 1024 * 1024 * 2, lambda: stop("output_limit"))
        try:
            proc.wait(timeout=lim.wall_s)
        except subprocess.TimeoutExpired:
            stop("time_limit")
            proc.wait()
        for reader in (out, err, report):
            reader.thread.join(timeout=5)
        run = SandboxRun(stdout=out.data.decode("utf-8", errors="replace"),
                         stderr=err.data.decode("utf-8", errors="replace"),
                         stdout_truncated=out.total > len(out.data), exit_code=proc.returncode,
                         ms=round((time.perf_counter() - started) * 1000, 1))
        try:
            reported: dict[str, Any] = json.loads(bytes(report.data)) if report.data else {}
        except ValueError:
            reported = {}
        if not isinstance(reported, dict):
            reported = {}
        run.result = reported.get("result")
        error = reported.get("error")
        run.error = {str(k): str(v) for k, v in error.items()} if isinstance(error, dict) else None
        for item in reported.get("files") or []:
            run.files.update(_decoded(item))
        run.skipped_files = [str(n) for n in reported.get("skipped_files") or []]
        if stopped:
            run.error = {"kind": stopped[0], "type": stopped[0], "message": _STOPPED[stopped[0]].format(lim=lim)}
        elif not reported:
            run.error = _crash(proc.returncode, lim)
        return run


_STOPPED = {"time_limit": "the code ran past its wall-time limit of {lim.wall_s:g}s and was stopped",
            "output_limit": "the code printed more than {lim.output_hard_bytes} bytes and was stopped"}


def _crash(code: int | None, lim: SandboxLimits) -> dict[str, str]:
    """The code ended without its report: killed by a limit, or it exited the interpreter itself."""
    if code in (-signal.SIGKILL, 128 + signal.SIGKILL, -signal.SIGXCPU, 128 + signal.SIGXCPU):
        return {"kind": "cpu_limit", "type": "killed",
                "message": f"the code was killed at its CPU-time limit of {lim.cpu_s}s (or its memory limit)"}
    return {"kind": "crashed", "type": "exit", "message": f"the code ended the interpreter (exit status {code})"}


def _decoded(item: Any) -> dict[str, bytes]:
    import base64
    import binascii

    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("data"), str):
        return {}
    name = os.path.basename(item["name"])
    if not name or name.startswith("."):
        return {}
    try:
        return {name: base64.b64decode(item["data"], validate=True)}
    except (binascii.Error, ValueError):
        return {}


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL bwrap's whole session: its sandboxed child dies with it (--die-with-parent), and with the
    PID namespace's first process gone the kernel kills every process left inside."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
