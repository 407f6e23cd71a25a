"""``aspen what-if``: which view tuples would disappear if base tuples were deleted."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("what-if", help="which view tuples would disappear if base tuples were deleted")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'what-if' is not built yet (see the open issues)")
