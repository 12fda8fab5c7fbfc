"""The public surface: ``__all__`` is exactly the live public namespace (as httpx checks its own)."""

from __future__ import annotations

import inspect
from types import ModuleType

import toolcrib


def test_all_is_exactly_the_public_namespace() -> None:
    lazy = set(toolcrib._LAZY)
    live = {name for name, value in vars(toolcrib).items()
            if not name.startswith("_") and not isinstance(value, ModuleType)} - lazy
    assert set(toolcrib.__all__) - lazy - {"__version__"} == live
    for name in toolcrib.__all__:
        assert getattr(toolcrib, name) is not None, name


def test_the_seams_a_user_implements_are_exported_as_abstract_types() -> None:
    for seam in ("Index", "Embedder", "ApprovalStore", "AuditStore", "Policy", "Model", "TraceExporter"):
        assert inspect.isabstract(getattr(toolcrib, seam)), seam
    assert getattr(toolcrib.Scanner, "_is_protocol", False)  # third parties implement it structurally
