"""``aspen bench``: run the benchmark suite."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run the benchmark suite")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'bench' is not built yet (see the open issues)")
