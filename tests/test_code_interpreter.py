"""code_interpreter: model-written Python in bubblewrap. It computes with numpy, pandas and matplotlib and
returns a chart; every escape (files outside, writes outside scratch, network, fork bomb, a full disk,
the time limit, 100 MB of output, memory) ends as a controlled tool error and leaves the host alone."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import socket
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.errors import ToolFailed
from toolcrib.sandbox import Sandbox, SandboxLimits, make_code_interpreter_tool
from toolcrib.workspace.locate import DEMO_SOURCE

LIMITS = SandboxLimits(cpu_s=2, wall_s=4.0, memory_mb=768, processes=16, output_bytes=8192, scratch_mb=8, max_files=5)
_PROBE = Sandbox(LIMITS)
needs_bwrap = pytest.mark.skipif(_PROBE.unavailable() is not None,
                                 reason=f"no working bubblewrap sandbox here: {_PROBE.unavailable()}")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(LIMITS)


def _sandboxed_processes() -> list[int]:
    """Host processes still running the sandbox's launcher (there should be none after a run)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"/job/launcher.py" in cmdline:
            found.append(int(pid))
    return found


def _run(sandbox: Sandbox, code: str, inputs: Any = None, artifacts: Path | None = None) -> dict[str, Any]:
    tool = make_code_interpreter_tool(sandbox, artifacts or Path("/nonexistent-artifacts"))
    result: dict[str, Any] = asyncio.run(tool.fn(code=code, inputs=inputs))
    return result


def _fails(sandbox: Sandbox, code: str, kind: str) -> ToolFailed:
    with pytest.raises(ToolFailed) as failed:
        _run(sandbox, code)
    assert failed.value.code == kind, failed.value.message
    assert not _sandboxed_processes()
    return failed.value


@needs_bwrap
def test_it_computes_with_pandas_and_returns_stdout_result_and_a_chart(sandbox: Sandbox, tmp_path: Path) -> None:
    rows = {"columns": ["part_number", "price_usd"], "rows": [["HLV-2205", 52.0], ["HLV-2210", 61.5]]}
    code = ("import numpy as np, pandas as pd, matplotlib.pyplot as plt\n"
            "df = pd.DataFrame(inputs['rows'], columns=inputs['columns'])\n"
            "print(df.to_string(index=False))\n"
            "df.plot(x='part_number', y='price_usd', kind='bar'); plt.savefig('prices.png')\n"
            "assert open('/input/data.json').read()\n"
            "float(np.mean(df.price_usd))")
    # importing pandas and matplotlib takes seconds of CPU on a loaded 2-core machine: room for it here
    heavy = Sandbox(dataclasses.replace(LIMITS, cpu_s=10, wall_s=20.0))
    out = _run(heavy, code, rows, tmp_path / "artifacts")
    assert out["result"] == 56.75 and "HLV-2210" in out["stdout"]
    [chart] = out["files"]
    assert chart["name"] == "prices.png" and chart["media_type"] == "image/png"
    assert (tmp_path / "artifacts" / chart["id"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert chart["id"] == f"code_interpreter/{out['run_id']}/prices.png"
    assert _run(sandbox, "result = {'n': 3}")["result"] == {"n": 3}


@needs_bwrap
def test_files_outside_the_sandbox_cannot_be_read(sandbox: Sandbox, tmp_path: Path) -> None:
    database = tmp_path / "workspace" / "data" / "demo.sqlite"
    database.parent.mkdir(parents=True)
    sqlite3.connect(database).close()
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's secret")
    home_files = [str(p) for p in sorted(Path.home().iterdir())[:8] if p.is_file()]
    targets = [str(database), str(secret), "/etc/shadow", "/etc/passwd", "/etc/hostname", *home_files]
    code = ("out = {}\n"
            f"for path in {targets!r}:\n"
            "    try:\n"
            "        out[path] = open(path, 'rb').read(64).decode('latin-1')\n"
            "    except OSError as exc:\n"
            "        out[path] = type(exc).__name__\n"
            "out")
    seen = _run(sandbox, code)["result"]
    assert set(seen) == set(targets)
    assert all(v in ("FileNotFoundError", "PermissionError") for v in seen.values()), seen


@needs_bwrap
def test_nothing_outside_scratch_can_be_written(sandbox: Sandbox, tmp_path: Path) -> None:
    code = ("import sys\nout = {}\n"
            "for path in ['/usr/evil', '/evil', '/input/data.json', '/job/code.py', sys.prefix + '/evil', "
            f"'{tmp_path}/evil', '/proc/sys/kernel/hostname']:\n"
            "    try:\n"
            "        open(path, 'w').write('x')\n"
            "        out[path] = 'written'\n"
            "    except OSError as exc:\n"
            "        out[path] = type(exc).__name__\n"
            "open('/scratch/ok.txt', 'w').write('fine')\n"
            "out")
    seen = _run(sandbox, code, {"a": 1}, tmp_path / "artifacts")["result"]
    assert "written" not in seen.values(), seen
    assert not (tmp_path / "evil").exists()


@needs_bwrap
def test_there_is_no_network_not_even_the_hosts_loopback(sandbox: Sandbox) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    code = ("import socket\nout = {}\n"
            f"for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 53), ('example.com', 80)]:\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=2).close()\n"
            "        out[host] = 'connected'\n"
            "    except OSError as exc:\n"
            "        out[host] = type(exc).__name__\n"
            "out")
    seen = _run(sandbox, code)["result"]
    assert "connected" not in seen.values(), seen
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing reached the host's listener
    listener.close()


@needs_bwrap
def test_a_fork_bomb_hits_the_process_limit(sandbox: Sandbox) -> None:
    failed = _fails(sandbox, "import os\nwhile True:\n    os.fork()", "process_limit")
    assert "BlockingIOError" in failed.message
    assert _run(sandbox, "1 + 1")["result"] == 2  # the host and the next run are fine


@needs_bwrap
def test_filling_the_disk_stops_at_the_scratch_limit(sandbox: Sandbox) -> None:
    one = _fails(sandbox, "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * 1048576)", "code_error")
    assert "File too large" in one.message or "No space left" in one.message
    many = _fails(sandbox, "i = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'x' * 1048576); i += 1", "code_error")
    assert "No space left" in many.message
    assert not list(Path(tempfile.gettempdir()).glob("toolcrib-sandbox-*"))  # nothing left on the host's disk


@needs_bwrap
def test_running_past_the_cpu_or_wall_time_limit_is_stopped(sandbox: Sandbox) -> None:
    busy = Sandbox(dataclasses.replace(LIMITS, cpu_s=1, wall_s=15.0))  # a loaded machine still reaches 1s of CPU
    _fails(busy, "while True:\n    pass", "cpu_limit")
    started = time.monotonic()
    failed = _fails(sandbox, "import time\ntime.sleep(60)", "time_limit")
    assert "wall-time limit of 4s" in failed.message
    assert time.monotonic() - started < LIMITS.wall_s + 5


@needs_bwrap
def test_printing_100_mb_is_cut_and_stopped(sandbox: Sandbox) -> None:
    started = time.monotonic()
    failed = _fails(sandbox, "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 1048576)", "output_limit")
    assert time.monotonic() - started < LIMITS.wall_s
    assert len(failed.message) < 4000
    out = _run(sandbox, "print('y' * 20000)\n1")  # over the kept size, under the stop: cut and marked
    assert len(out["stdout"]) == LIMITS.output_bytes and "stdout_truncated" in out


@needs_bwrap
def test_memory_beyond_the_limit_is_a_controlled_error(sandbox: Sandbox) -> None:
    _fails(sandbox, "x = bytearray(2 * 1024 ** 3)", "memory_limit")


def test_without_bwrap_the_tool_is_not_offered_and_toolcrib_tools_says_why(tmp_path: Path, monkeypatch: Any) -> None:
    assert "bubblewrap" in (Sandbox(bwrap="").unavailable() or "")
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ws = _demo(tmp_path)
    result = CliRunner().invoke(main, ["tools", "--workspace", str(ws)])
    assert result.exit_code == 0, result.output
    offered, _, missing = result.output.partition("Not offered here:")
    assert "code_interpreter" not in offered and "apt-get install bubblewrap" in missing


# -- the demo: "What is the average price of our HLV parts?" -------------------------------------------


def _demo(tmp_path: Path) -> Path:
    ws = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, ws, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = ws / "toolcrib.toml"
    text = config.read_text(encoding="utf-8")
    text = text.replace('builtin = ["vector_search", "sql_query"]',
                        'builtin = ["vector_search", "sql_query", "code_interpreter"]')
    text = text.replace('"vector_search", "sql_query"]\napprove = []',
                        '"vector_search", "sql_query", "code_interpreter"]\napprove = []')
    config.write_text(text + "\n[code_interpreter]\ncpu_s = 5\nwall_s = 15\n", encoding="utf-8")
    return ws


@pytest.fixture()
def demo(tmp_path: Path) -> Path:
    return _demo(tmp_path)


@needs_bwrap
def test_the_demo_average_price_goes_through_sql_and_the_sandbox(demo: Path) -> None:
    model = f"function:{Path(__file__).parent / 'fakes' / 'analyst_model.py'}:analyst"
    result = CliRunner().invoke(main, ["ask", "What is the average price of our HLV parts?", "--model", model,
                                       "--mode", "loop", "--workspace", str(demo), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["outcome"] == "answered" and "$56.75" in answer["text"], answer
    assert [(c["name"], c["status"]) for c in answer["executed"]] == [("sql_query", "ok"), ("code_interpreter", "ok")]
    assert {c["source"] for c in answer["citations"]} >= {"code_interpreter"}
    assert not list((demo / ".toolcrib" / "artifacts").glob("**/*.png"))  # no chart asked for, none kept


@needs_bwrap
def test_a_chart_is_an_artifact_in_the_trace_and_only_its_runs_owner_can_download_it(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from test_service import Service

    root = _demo(tmp_path)
    (root / "toolcrib.toml").write_text((root / "toolcrib.toml").read_text() + "\n[service]\nindex_on_start = false\n")
    svc = Service(root, model=f"function:{Path(__file__).parent / 'fakes' / 'analyst_model.py'}:analyst")
    with svc.client:
        answer = svc.ask("alice", "Chart the prices of our HLV parts and give their average", mode="loop").json()
        assert answer["outcome"] == "answered" and "$56.75" in answer["text"], answer
        run = svc.client.get(f"/v1/runs/{answer['run_id']}", headers=svc.as_("alice")).json()
        [executed] = [e for e in run["events"] if e["kind"] == "call_executed" and e["tool"] == "code_interpreter"]
        [chart] = executed["detail"]["artifacts"]
        assert chart["name"] == "prices.png" and chart["media_type"] == "image/png" and "path" not in chart

        url = f"/v1/runs/{answer['run_id']}/artifacts/{chart['id']}"
        got = svc.client.get(url, headers=svc.as_("alice"))
        assert got.status_code == 200 and got.content[:8] == b"\x89PNG\r\n\x1a\n" and len(got.content) == chart["bytes"]
        assert got.headers["content-disposition"].startswith("attachment") and "prices.png" in got.headers[
            "content-disposition"]
        assert got.headers["x-content-type-options"] == "nosniff"
        assert got.headers["content-security-policy"] == "sandbox"

        assert svc.client.get(url, headers=svc.as_("omar")).status_code == 404  # not their run
        assert svc.client.get(url).status_code == 401
        # only what the run's trace lists, whatever else is on disk or reachable by a path
        other = root / ".toolcrib" / "artifacts" / "code_interpreter" / "other" / "x.png"
        other.parent.mkdir(parents=True)
        other.write_bytes(b"someone else's")
        base = f"/v1/runs/{answer['run_id']}/artifacts/"
        for forged in ("code_interpreter/other/x.png", f"{chart['id']}/../../other/x.png", "../../toolcrib.toml",
                       "..%2F..%2Ftoolcrib.toml"):
            refused = svc.client.get(base + forged, headers=svc.as_("alice"))
            assert refused.status_code == 404 and b"someone" not in refused.content, forged
