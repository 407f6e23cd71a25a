"""``aspen explain``: explain a view tuple: witness sets and critical base tuples."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="explain a view tuple: witness sets and critical base tuples")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'explain' is not built yet (see the open issues)")
