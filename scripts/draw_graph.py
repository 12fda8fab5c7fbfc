"""Redraw the run's graph in docs/concepts/modes.md from the table in agent/pipeline.py.

Each ``<!-- graph:MODE -->`` ... ``<!-- /graph -->`` block becomes ``pipeline.mermaid(MODE)``; the tests fail
while a block differs from the table (tests/test_agent_graph.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from toolcrib.agent.pipeline import GRAPH, mermaid

PAGE = Path(__file__).resolve().parents[1] / "docs" / "concepts" / "modes.md"


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for mode in GRAPH:
        block = f"<!-- graph:{mode} -->\n```mermaid\n{mermaid(mode)}\n```\n<!-- /graph -->"
        text = re.sub(rf"<!-- graph:{mode} -->\n.*?<!-- /graph -->", lambda _: block, text, flags=re.S)  # noqa: B023
    PAGE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
