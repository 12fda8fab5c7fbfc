"""Every code example on the documentation site (``docs/``, the README) and in the public docstrings runs.

Python blocks run with pytest-examples: a ``print`` must be followed by its output as ``#>`` lines, so an
example whose result changes fails. Shell blocks run in a fresh folder, page by page, after the files
the page asks the reader to save (a block with ``title="path"``) are written there. A block marked
``test="skip"`` is not run: it needs a server, a key, a network or minutes of set-up, and is covered
elsewhere (the Quick start by CI; the service commands by ``tests/test_docs_get_started.py``).

A ``console`` block shows commands (``$ toolcrib ...``) with what each prints: each runs in turn, in the
page's folder, and its output (stdout and stderr, as a terminal shows them) must be the one shown, once run
ids, proposal ids, trace ids, timings and the folders above the workspace are set aside. An id a command
printed stands, in the commands after it, for the one the page shows in its place.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SOURCES = [ROOT / "README.md", DOCS, ROOT / "src" / "toolcrib"]
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)
# The README's Quick start is the set-up itself: CI and the checker run it as the README says.
QUICK_START = './scripts/setup.sh && .venv/bin/toolcrib ask "What\'s the status of order ORD-1001?"\n'
# Pages whose shell blocks are covered elsewhere, and why.
NOT_RUN = {"operations/faults.md": "a 10-minute soak on PostgreSQL; tests/test_benchmarks.py runs chaos.py --quick"}
SLOW_PAGES = {"get-started/first-question.md", "get-started/first-tool.md",  # they run the embedded model
              "concepts/modes.md"}  # it indexes the demo's documents first

PYTHON_EXAMPLES = [e for e in find_examples(*SOURCES) if e.prefix_settings().get("test") != "skip"]


def test_the_site_and_the_docstrings_have_examples_to_run() -> None:
    in_docstrings = [e for e in PYTHON_EXAMPLES if e.path.suffix == ".py"]
    assert len(PYTHON_EXAMPLES) >= 10
    assert len(in_docstrings) >= 4, "the public docstrings' examples were not found"


@pytest.mark.parametrize("example", PYTHON_EXAMPLES, ids=str)
def test_python_example(example: CodeExample, eval_example: EvalExample, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes files writes them here
    eval_example.set_config(line_length=120, target_version="py311")
    if eval_example.update_examples:
        eval_example.run_print_update(example)
    else:
        eval_example.run_print_check(example)


@dataclass
class Block:
    info: str
    body: str

    @property
    def language(self) -> str:
        return self.info.split(" ", 1)[0].strip("{.")

    @property
    def title(self) -> str | None:
        found = re.search(r'title="([^"]+)"', self.info)
        return found.group(1) if found else None

    @property
    def skipped(self) -> bool:
        return 'test="skip"' in self.info


def blocks_in(text: str) -> list[Block]:
    return [Block(m["info"], m["body"]) for m in FENCE.finditer(text)]


def blocks(page: Path) -> list[Block]:
    return blocks_in(page.read_text(encoding="utf-8"))


def pages_with_shell() -> Iterator[object]:
    for page in sorted([ROOT / "README.md", *DOCS.rglob("*.md")]):
        found = [b for b in blocks(page) if runnable(b)]
        name = page.relative_to(DOCS).as_posix() if page.is_relative_to(DOCS) else page.name
        if found and name not in NOT_RUN:
            marks = [pytest.mark.slow, pytest.mark.timeout(600)] if name in SLOW_PAGES else []
            yield pytest.param(page, id=name, marks=marks)


def runnable(block: Block) -> bool:
    return block.language in ("bash", "sh") and not block.skipped and not block.body.startswith(QUICK_START)


def write_files(page: Path, folder: Path) -> None:
    """The files a page asks its reader to save, as the page shows them."""
    for block in blocks(page):
        if block.title and not block.skipped:
            target = folder / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")


@pytest.mark.parametrize("page", list(pages_with_shell()))
def test_shell_examples(page: Path, tmp_path: Path) -> None:
    """A page's shell blocks, in order, in an empty folder with ``toolcrib`` on the PATH, each exiting 0."""
    write_files(page, tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               TOOLCRIB_HOME=str(tmp_path / ".home"))
    env.pop("TOOLCRIB_WORKSPACE", None)
    found = blocks(page)
    for block, following in zip(found, [*found[1:], None], strict=True):
        if not runnable(block):
            continue
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.body], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{page.name}: {block.body}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        if following is not None and following.language == "text":  # the output the page shows: its first line
            shown = following.body.splitlines()[0].strip()
            assert shown in done.stdout, f"{page.name}: {block.body}: the page shows {shown!r}; got\n{done.stdout}"


# A tutorial's pages build on each other: a page starts with the files the pages before it asked to save.
SERIES = ("get-started/first-tool.md", "get-started/first-approval.md")
# What differs between runs: trace ids, proposal ids, run ids, timings; the folders above a workspace.
IDS = re.compile(r"\b(?:\d{8}T\d{6}-[0-9a-f]{8}|prop_[0-9a-f]{16}|[0-9a-f]{12})\b")
TIMINGS = re.compile(r"\b\d+(?:\.\d+)?(?:ms|s)\b")
FOLDERS = re.compile(r"(?<![\w.~])/(?:[^\s/`'\"]+/)+(?=[^\s/`'\"]+)")


@dataclass
class Command:
    line: str
    shown: str


def console_commands(block: Block) -> list[Command]:
    """The ``$ ...`` lines of a console block, each with the output shown under it."""
    commands: list[Command] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            commands.append(Command(line[2:], ""))
        else:
            assert commands, f"output before any command: {line!r}"
            commands[-1].shown += line + "\n"
    return commands


def normalised(output: str) -> str:
    text = FOLDERS.sub("…/", TIMINGS.sub("T", IDS.sub("ID", output)))
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def pages_with_console() -> Iterator[object]:
    for page in sorted(DOCS.rglob("*.md")):
        if any(b.language == "console" for b in blocks(page)):
            yield pytest.param(page, id=page.relative_to(DOCS).as_posix())


@pytest.mark.parametrize("page", list(pages_with_console()))
def test_console_examples(page: Path, tmp_path: Path) -> None:
    """A page's console blocks, command by command, print what the page shows under each command."""
    name = page.relative_to(DOCS).as_posix()
    for earlier in SERIES[:SERIES.index(name)] if name in SERIES else ():
        write_files(DOCS / earlier, tmp_path)
    write_files(page, tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               TOOLCRIB_HOME=str(tmp_path / ".home"))
    env.pop("TOOLCRIB_WORKSPACE", None)
    printed: dict[str, str] = {}  # an id the page shows -> the one this run printed in its place
    for block in blocks(page):
        if block.language != "console":
            continue
        for command in console_commands(block):
            line = command.line
            for shown_id, real_id in printed.items():
                line = line.replace(shown_id, real_id)
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=tmp_path, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            assert done.returncode == 0, f"{name}: $ {line}\n{done.stdout}"
            assert normalised(done.stdout) == normalised(command.shown), (
                f"{name}: $ {command.line}\nthe page shows:\n{command.shown}\nit prints:\n{done.stdout}")
            shown_ids, real_ids = IDS.findall(command.shown), IDS.findall(done.stdout)
            printed.update(zip(shown_ids, real_ids, strict=True))


def test_a_console_output_is_compared_without_what_differs_between_runs() -> None:
    shown = "[paused; trace 20261206T201254-6df09980; 0.0s; `toolcrib trace 20261206T201254-6df09980 --workspace " \
            "/home/you/my-shop` shows every step]\nrun ae09cb60df6e, proposal prop_a9ed5bc3f103177a, 12ms\n"
    printed = shown.replace("/home/you", "/tmp/pytest-7/test_x0").replace("ae09cb60df6e", "0123456789ab") \
        .replace("0.0s", "1.4s").replace("12ms", "3ms").replace("a9ed5bc3f103177a", "00000000ffffffff")
    assert normalised(printed) == normalised(shown)
    assert normalised(printed.replace("paused", "answered")) != normalised(shown)
    assert normalised(shown.replace("my-shop", "other")) != normalised(shown)


def test_every_fence_is_one_the_site_renders() -> None:
    """A fence option the renderer does not know drops the block's highlighting silently: only ``title`` and
    ``test`` are used (the site's hook strips ``test``)."""
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for block in blocks(page):
            options = set(re.findall(r'(\w+)=', block.info))
            assert options <= {"title", "test"}, f"{page}: {block.info}"
