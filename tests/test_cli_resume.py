"""The tutorial's run from the command line: a scripted model proposes ``order_stock``, the run is held, the
approver approves it, and ``toolcrib ask --resume`` (a new model, as in a new process) runs the call once and
ends with the script's answer: the script goes on where the conversation stopped, not from its first reply."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_docs_examples import DOCS, write_files
from toolcrib.cli import main


def toolcrib(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_resumed_scripted_run_proposes_the_write_once_and_answers_with_what_ran(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for page in ("first-tool.md", "first-approval.md"):
        write_files(DOCS / "get-started" / page, tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLCRIB_HOME", str(tmp_path / ".home"))
    monkeypatch.delenv("TOOLCRIB_WORKSPACE", raising=False)
    model = ["--workspace", "my-shop", "--model", "scripted:my-shop/replies.yaml"]

    held = toolcrib("ask", "Order 20 more MUG-01", *model)
    proposal = re.search(r"as proposal (prop_\w+)", held)
    run = re.search(r"this run (\w+) resumes", held)
    assert proposal and run, held
    toolcrib("approve", proposal.group(1), "--workspace", "my-shop", "--user", "sam")
    resumed = toolcrib("ask", "--resume", run.group(1), *model)

    assert resumed.startswith("I ran order_stock (sku MUG-01, quantity 20): sam approved it. Result: ordered yes.\n"
                              ), resumed
    assert (tmp_path / "my-shop" / "orders.txt").read_text() == "MUG-01 20\n"
    traces = [re.search(r"trace (\S+);", out) for out in (held, resumed)]
    steps = [toolcrib("trace", t.group(1), "--workspace", "my-shop") for t in traces if t]
    assert len(steps) == 2
    assert [s.count("call_proposed") for s in steps] == [1, 0], steps[1]
    assert steps[1].count("call_executed") == 1
