"""``aspen generate``: generate topologies, sensor grids and update workloads."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("generate", help="generate topologies, sensor grids and update workloads")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'generate' is not built yet (see the open issues)")
