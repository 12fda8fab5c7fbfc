"""``toolcrib ask`` refuses a question no run should start on, in the service's words, before any model loads."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from test_service import demo_copy
from toolcrib.cli import main


def test_a_blank_or_overlong_question_is_a_usage_error_with_the_services_message(tmp_path: Path) -> None:
    workspace = ["--workspace", str(demo_copy(tmp_path)), "--model", "scripted:nothing.yaml"]  # never loaded
    blank = CliRunner().invoke(main, ["ask", "   ", *workspace])
    assert blank.exit_code == 2 and "the question is empty: write what you want to know or have done" in blank.output
    long = CliRunner().invoke(main, ["ask", "x" * 4001, *workspace])
    assert long.exit_code == 2 and "the question is over 4000 characters" in long.output
