"""The shipped demo workspace: Kestrel Instruments Ltd, a fictional instrument maker in Cork.

``WORKSPACE`` is the folder holding ``toolcrib.toml``, ``docs/``, ``data/`` and ``tools.py``;
``build_database`` makes its SQLite file from ``data/seed.sql``.
"""

from __future__ import annotations

from pathlib import Path

from toolcrib.demo.workspace.data.build_db import build_database

WORKSPACE = Path(__file__).parent / "workspace"

__all__ = ["WORKSPACE", "build_database"]
