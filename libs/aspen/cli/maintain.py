"""``aspen maintain``: apply logged updates to the base tables and maintain the views."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("maintain", help="apply logged updates to the base tables and maintain the views")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'maintain' is not built yet (see the open issues)")
