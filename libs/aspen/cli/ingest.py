"""``aspen ingest``: validate update files and append them to the Delta updates log."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="validate update files and append them to the Delta updates log")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'ingest' is not built yet (see the open issues)")
