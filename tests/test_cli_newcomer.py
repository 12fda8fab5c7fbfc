"""What a newcomer pastes and reads on the command line: the trace hint after an answer names the
workspace when it is not the default one (so it works when pasted), and a ``toolcrib.toml`` that leaves out
the model, the tools or the users is accepted with a warning saying so."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.test_cli_demo import call, script

from toolcrib.cli import main
from toolcrib.workspace.locate import DEMO_SOURCE

PRICE = "What does part HLV-2205 cost?"


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the demo, in a folder with a space; no $TOOLCRIB_WORKSPACE, a private data home."""
    monkeypatch.delenv("TOOLCRIB_WORKSPACE", raising=False)
    monkeypatch.setenv("TOOLCRIB_HOME", str(tmp_path / "home"))
    target = tmp_path / "my demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    return target


def hint(output: str) -> str:
    """The command in the ``[... `toolcrib trace ...` shows every step]`` line after an answer."""
    [line] = [x for x in output.splitlines() if "shows every step" in x]
    return line.split("`")[1]


def test_the_trace_hint_names_a_workspace_that_is_not_the_default_and_works_pasted(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [call("lookup_part", part_number="HLV-2205"), "It costs $52.00."])
    asked = CliRunner().invoke(main, ["ask", PRICE, "--model", model, "--workspace", str(ws)])
    assert asked.exit_code == 0, asked.output
    command = hint(asked.stdout)
    assert command.startswith("toolcrib trace ") and f"--workspace {shlex.quote(str(ws))}" in command
    shown = CliRunner().invoke(main, shlex.split(command)[1:])  # as pasted into a shell
    assert shown.exit_code == 0, shown.output
    assert "lookup_part" in shown.stdout


def test_the_trace_hint_is_bare_for_the_default_workspace(ws: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCRIB_WORKSPACE", str(ws))  # the workspace every command opens by default
    model = script(tmp_path, [call("lookup_part", part_number="HLV-2205"), "It costs $52.00."])
    asked = CliRunner().invoke(main, ["ask", PRICE, "--model", model])
    assert asked.exit_code == 0, asked.output
    assert "--workspace" not in hint(asked.stdout)


def test_an_empty_config_is_accepted_with_a_warning_for_each_missing_part(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "toolcrib.toml").write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["tools", "--workspace", str(empty)])
    assert result.exit_code == 0, result.output
    config = empty / "toolcrib.toml"
    assert result.stderr.splitlines() == [
        f'toolcrib: warning: {config}: no [model]: runs use spec = "local"; set [model] spec (or pass --model)',
        f"toolcrib: warning: {config}: no tools: set [tools] modules or builtin (or [mcp.servers]); "
        "the model can call nothing",
        f"toolcrib: warning: {config}: no [users]: every run acts as 'local' with every tool; "
        "add [users.NAME] with groups"]
    assert "warning" not in result.stdout


def test_a_config_that_sets_them_gets_no_warning(ws: Path) -> None:
    result = CliRunner().invoke(main, ["tools", "--workspace", str(ws)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr


def test_a_long_tool_description_is_cut_at_a_word_with_an_ellipsis(tmp_path: Path) -> None:
    long = ("Search the catalogue of replacement parts by their supplier reference and return availability "
            "per warehouse")
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "tools.py").write_text(f'''from toolcrib import tool


@tool(description="{long}")
def find_part(reference: str) -> dict:
    return {{}}
''', encoding="utf-8")
    (shop / "toolcrib.toml").write_text('[model]\nspec = "local"\n[tools]\nmodules = ["tools.py"]\n'
                                        '[groups.staff]\ntools = ["*"]\n[users.me]\ngroups = ["staff"]\n',
                                        encoding="utf-8")
    result = CliRunner().invoke(main, ["tools", "--workspace", str(shop), "--user", "me"])
    assert result.exit_code == 0, result.output
    [line] = [x for x in result.stdout.splitlines() if "find_part" in x]
    shown = line.split("READ", 1)[1].strip()
    assert shown.endswith("…") and len(shown) <= 70, shown
    assert long.startswith(shown[:-1]) and long[len(shown) - 1] == " ", "cut inside a word"
