"""The CLI's boundary: the lake root checked before a command runs, and a library's error turned
into one line.

Before a command runs, its lake root is checked (:func:`check_command_lake`): an empty root or
one with control characters is refused; a local root that is a file, or not writable for a
command that writes, fails in one line before any table is opened or Spark started; for a
command that writes to an object store, the store is reached once through delta-rs first, so
missing credentials fail before Spark starts.

An error that reaches the boundary from delta-rs, the file system, pyarrow or Spark becomes one
line naming the lake and the first line of the cause (:func:`boundary_error`, a damaged Delta
log entry named by :func:`damaged_log_entry`; ``ASPEN_DEBUG=1`` re-raises it, with its
traceback): they live in :mod:`aspen.pipeline.boundary`, which the library's own processes
(the jobs, the supervised follower) use too. Any other exception is a bug and keeps its
traceback.

>>> import argparse
>>> writes_lake(argparse.Namespace(command="check", write=False))
False
>>> boundary_error(PermissionError(13, "Permission denied"), "file:///l")
'lake file:///l: [Errno 13] Permission denied'
"""

from __future__ import annotations

import argparse
from urllib.parse import urlparse

from aspen.pipeline.boundary import (
    DEBUG_ENV,
    boundary_error,
    damaged_log_entry,
    debugging,
    named_lake,
)
from aspen.settings import (
    OBJECT_STORE_SCHEMES,
    Settings,
    check_lake_root,
    check_lake_text,
)

__all__ = [
    "DEBUG_ENV",
    "NO_LAKE_COMMANDS",
    "boundary_error",
    "check_command_lake",
    "damaged_log_entry",
    "debugging",
    "lake_label",
    "writes_lake",
]

#: Commands that never open the lake (only the syntax of an explicit ``--lake`` is checked).
NO_LAKE_COMMANDS = frozenset({"generate", "bench", "optimize"})
#: Commands that write to the lake whatever their options (the others below depend on them).
_ALWAYS_WRITE = frozenset({"ingest", "maintain", "expire", "demo", "stream"})
#: ``aspen query`` actions that write (the query registry or a result table).
_QUERY_WRITES = frozenset({"register", "plan", "run", "drop"})


def writes_lake(args: argparse.Namespace) -> bool:
    """Whether the command of ``args`` writes to the lake (``check`` unless ``--no-write``,
    ``query`` for actions that store something).

    >>> writes_lake(argparse.Namespace(command="maintain")), writes_lake(argparse.Namespace(
    ...     command="show"))
    (True, False)
    """
    command = getattr(args, "command", "")
    if command in _ALWAYS_WRITE:
        return True
    if command == "check":
        return bool(getattr(args, "write", True))
    if command == "query":
        return getattr(args, "action", None) in _QUERY_WRITES
    return False


def check_command_lake(args: argparse.Namespace, settings: Settings) -> None:
    """Check the lake root of ``settings`` for the command of ``args`` (see the module
    docstring); raises :class:`~aspen.errors.AspenError`."""
    check_lake_text(settings.lake)
    if getattr(args, "command", "") in NO_LAKE_COMMANDS:
        return
    write = writes_lake(args)
    check_lake_root(settings, write=write)
    if write and urlparse(settings.lake_uri).scheme in OBJECT_STORE_SCHEMES:
        from aspen.lake.deltars import table_exists

        # one look at the store before a writer starts Spark: no credentials, no bucket → one
        # line (the boundary's) instead of the JVM's start-up and stack traces
        table_exists(settings, "ingest_files")


def lake_label(args: argparse.Namespace) -> str | None:
    """The lake as an error line of the command of ``args`` names it: ``--lake`` (else
    ``ASPEN_LAKE``, else the default) as a URI, or as given when it is not a valid root; ``None``
    for a command that does not use the lake.

    >>> lake_label(argparse.Namespace(command="show", lake="s3://bucket/lake/"))
    's3://bucket/lake'
    >>> lake_label(argparse.Namespace(command="generate", lake=None)) is None
    True
    """
    if getattr(args, "command", "") in NO_LAKE_COMMANDS:
        return None
    return named_lake(getattr(args, "lake", None))
