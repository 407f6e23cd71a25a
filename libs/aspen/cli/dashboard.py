"""``aspen dashboard``: start the Streamlit dashboard."""

from __future__ import annotations

import argparse

from aspen.errors import NotBuiltYetError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dashboard", help="start the Streamlit dashboard")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    raise NotBuiltYetError("'dashboard' is not built yet (see the open issues)")
