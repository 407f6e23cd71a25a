"""A piece of the library run as a process (a job of ``jobs/``, ``python -m …``): its error as
one line and an exit code, as the CLI prints them (a library's error worded by
:mod:`aspen.pipeline.boundary`).

>>> from aspen.errors import ConfigError
>>> def refused() -> int:
...     raise ConfigError("--now must be an ISO-8601 time")
>>> import contextlib, io
>>> with contextlib.redirect_stderr(io.StringIO()) as err:
...     code = run_entry("aspen expire", refused)
>>> code, err.getvalue()
(2, 'aspen expire: --now must be an ISO-8601 time\\n')
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from aspen.errors import AspenError
from aspen.pipeline.boundary import boundary_error, debugging, named_lake, printable
from aspen.settings import Settings

__all__ = ["lake_settings", "run_entry", "run_reporting"]


def lake_settings(lake: str | None) -> Settings:
    """The settings of a ``--lake`` argument (``None``: ``ASPEN_LAKE`` or the default).

    >>> lake_settings("/tmp/l").lake_uri
    'file:///tmp/l'
    """
    return Settings(lake=lake) if lake is not None else Settings()


def run_entry(prog: str, work: Callable[[], int], lake: str | None = None) -> int:
    """``work()``'s exit code; an :class:`~aspen.errors.AspenError` is one line ``prog: …`` on
    stderr and exit code 2, and so is an error of delta-rs, Spark or the file system, naming
    the ``lake`` (the ``--lake`` argument; :func:`aspen.pipeline.boundary.boundary_error`); an
    interrupt is exit code 130. Any other exception (a bug) keeps its traceback."""
    return run_reporting(prog, work, named_lake(lake))


def run_reporting(prog: str, work: Callable[[], int], lake_named: str | None) -> int:
    """:func:`run_entry` with the lake already named as an error line names it (``None``: a
    command that uses no lake); what the ``aspen`` command runs every command through. Every
    line is :func:`~aspen.pipeline.boundary.printable`: text from the lake cannot forge one."""
    os.environ.setdefault("RUST_LOG", "error")  # delta-rs's warnings are not our output
    try:
        return work()
    except AspenError as err:
        print(f"{prog}: {printable(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BaseException as err:  # delta-rs, Spark, the file system: one line
        line = None if debugging() else boundary_error(err, lake_named)
        if line is None:  # a bug, or ASPEN_DEBUG=1: the traceback
            raise
        print(f"{prog}: {printable(line)}", file=sys.stderr)
        return 2
