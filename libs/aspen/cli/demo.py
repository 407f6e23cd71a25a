"""``aspen demo``: run the pipeline end to end on the embedded default."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the pipeline end to end on the embedded default")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'demo' is not built yet (see the open issues)")
