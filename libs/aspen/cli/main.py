"""Entry point of the ``aspen`` console script.

Each command lives in its own module under :mod:`aspen.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
``func(args, settings) -> int``. Errors a user can cause are :class:`~aspen.errors.AspenError`
and are printed as one line; argument errors too, and errors of delta-rs, Spark and the file
system (:mod:`aspen.cli._guard`, which also checks the lake root before a command runs).

>>> build_parser().parse_args(["--lake", "/tmp/l", "show", "reachable"]).command
'show'
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from aspen.cli._guard import check_command_lake, lake_label
from aspen.pipeline.entry import run_reporting
from aspen.settings import DEFAULT_LAKE, Settings

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

#: Command modules in the order ``aspen --help`` lists them (README.md, "The CLI").
COMMAND_MODULES: tuple[str, ...] = (
    "generate",
    "ingest",
    "maintain",
    "stream",
    "expire",
    "show",
    "explain",
    "what_if",
    "optimize",
    "query",
    "sql",
    "verify",
    "check",
    "bench",
    "demo",
    "dashboard",
)


class OneLineArgumentParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, never a usage dump or a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The full ``aspen`` parser with every command registered."""
    parser = OneLineArgumentParser(
        prog="aspen",
        description="Recursive views over network and sensor update streams, "
        "kept current and explainable with absorption provenance.",
    )
    parser.add_argument(
        "--lake",
        default=None,
        help=f"lake root: a path or URI (default: $ASPEN_LAKE or {DEFAULT_LAKE})",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=OneLineArgumentParser)
    sub.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"aspen.cli.{name}")
        module.register(sub)
    for command_parser in sub.choices.values():  # `aspen CMD --lake X` works as well
        command_parser.add_argument("--lake", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code (errors as one line: the library's
    :func:`~aspen.pipeline.entry.run_reporting`, as the jobs print them)."""
    parser = build_parser()
    args = parser.parse_args(argv)

    def command() -> int:
        kwargs = {"lake": args.lake} if args.lake is not None else {}  # '' is an error
        for key in ("partitions", "mode"):
            if getattr(args, key, None) is not None:
                kwargs[key] = getattr(args, key)
        settings = Settings(**kwargs)
        check_command_lake(args, settings)
        try:
            return int(args.func(args, settings) or 0)
        except BrokenPipeError:  # `aspen show … | head`: the reader left; not an error of ours
            sys.stderr.close()
            return 0

    return run_reporting(f"aspen {args.command}", command, lake_label(args))


def entry() -> None:  # pragma: no cover -- the `aspen` command
    """The ``aspen`` console script: :func:`main`, then the process ends without the
    interpreter's teardown (:func:`aspen.spark.job.exit_process`)."""
    from aspen.spark.job import exit_process

    exit_process(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
