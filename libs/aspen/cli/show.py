"""``aspen show VIEW``: print a maintained view (control characters in its values escaped,
:func:`~aspen.cli._output.printable`); on a damaged lake, one line naming the damage and the
remedy (:func:`~aspen.pipeline.integrity.explained`)."""

from __future__ import annotations

import argparse

from aspen.cli._output import FORMATS, print_rows
from aspen.errors import ConfigError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from aspen.catalog import VIEWS

    p = sub.add_parser("show", help="print a maintained view")
    p.add_argument("view", metavar="VIEW", help=f"one of: {', '.join(VIEWS)}")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--limit", type=int, default=None, help="print at most this many rows")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.catalog import VIEW_COLUMNS, check_view
    from aspen.lake.committed import read_committed
    from aspen.pipeline.integrity import explained
    from aspen.pipeline.view_tables import row_to_tuple

    if args.limit is not None and args.limit < 0:
        raise ConfigError(f"--limit must not be negative, got {args.limit}")
    view = check_view(args.view)
    with explained(settings):  # a damaged lake: one line naming the damage and the remedy
        frame = read_committed(settings, view)
    rows = sorted(row_to_tuple(view, r) for r in frame.to_dict("records"))
    if args.limit is not None:
        rows = rows[: args.limit]
    print_rows(VIEW_COLUMNS[view], rows, args.format)
    return 0
