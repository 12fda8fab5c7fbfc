"""``--quick`` for every benchmark: the same checks at tiny sizes, in seconds, so that CI runs each
script (``tests/test_benchmarks.py``) and a benchmark that stops measuring fails CI instead of rotting."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None, **sizes: Any) -> argparse.Namespace:
    """Add ``--quick`` to ``parser`` and parse; with it, each of ``sizes`` (an argument's dest) is set."""
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    parser.add_argument("--quick", action="store_true", help=f"seconds, tiny sizes, the same checks ({shown})")
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in sizes.items():
            setattr(args, name, value)
    return args
