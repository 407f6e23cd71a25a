"""``aspen verify``: compare maintained views with from-scratch evaluation."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="compare maintained views with from-scratch evaluation")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'verify' is not built yet (see the open issues)")
