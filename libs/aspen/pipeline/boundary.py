"""A library's error as the one line a process prints: what the ``aspen`` command and the
library's own processes (:mod:`aspen.pipeline.entry`: the jobs, the supervised follower) say
for an error that reaches them from delta-rs, the file system, pyarrow or Spark.

Such an error (``DeltaError``, a Rust panic, ``OSError``, ``Py4JJavaError``, a captured Spark
exception) becomes one line naming the lake and the first line of the cause
(:func:`boundary_error`); ``ASPEN_DEBUG=1`` asks for the traceback instead (:func:`debugging`).
Any other exception is a bug and keeps its traceback. A Rust backtrace in a delta-rs error
(``RUST_BACKTRACE=1``) is left out of the line. When the error is one of a damaged Delta log
entry (a commit file torn mid-line, as an interrupted write leaves it), the line names the
table and the entry (:func:`damaged_log_entry`), so the operator knows which file to restore.

>>> boundary_error(PermissionError(13, "Permission denied"), "file:///l")
'lake file:///l: [Errno 13] Permission denied'
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlparse

from aspen.errors import AspenError
from aspen.settings import DEFAULT_LAKE, lake_root_uri

__all__ = ["DEBUG_ENV", "boundary_error", "damaged_log_entry", "debugging", "named_lake",
           "printable"]

#: Set to 1 to get the traceback of an error a process would print as one line.
DEBUG_ENV = "ASPEN_DEBUG"
#: Exception class names (from libraries not imported here) that are one line at the boundary.
_LIBRARY_ERRORS = frozenset({
    "DeltaError", "CommitFailedError", "DeltaProtocolError", "SchemaMismatchError",
    "TableNotFoundError", "PanicException", "ArrowException", "ArrowInvalid", "ArrowIOError",
    "Py4JJavaError", "Py4JNetworkError", "Py4JError", "PySparkException", "CapturedException",
    "AnalysisException",
})
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: Where a Rust backtrace (``RUST_BACKTRACE=1``) starts in a delta-rs error's text: its frame 0.
_BACKTRACE_START = re.compile(r"^(0: |stack backtrace:)")
#: A Delta log entry named in an error's text (Spark names the file): the table's folder, the file.
_LOG_ENTRY = re.compile(r"([^/\s]+)/_delta_log/(\d{20}\.json)")
#: How many of each table's newest log entries :func:`damaged_log_entry` looks at (a torn write
#: is the newest entry; older ones were complete when the next one was committed).
_ENTRIES_LOOKED_AT = 3


#: How :func:`printable` writes the common control characters.
_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    if ch in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1), bidirectional override and line or
    paragraph separator written as an escape (``\\n``, ``\\x1b``, ``\\u202e``): one line that
    shows as it reads.

    >>> printable("a\\nb\\x1b[2Jc\\u202e")
    'a\\\\nb\\\\x1b[2Jc\\\\u202e'
    >>> printable("s1 → s2")
    's1 → s2'
    """
    if text.isprintable():  # the common case: nothing to escape
        return text
    return "".join(
        _escaped(ch) if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch
        for ch in text
    )


def debugging() -> bool:
    """Whether ``ASPEN_DEBUG`` asks for tracebacks."""
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def named_lake(lake: str | None) -> str:
    """The lake as an error line names it: ``lake`` (else ``ASPEN_LAKE``, else the default) as
    a URI, or as given when it is not a valid root.

    >>> named_lake("s3://bucket/lake/")
    's3://bucket/lake'
    """
    text = lake if lake is not None else os.environ.get("ASPEN_LAKE", DEFAULT_LAKE)
    try:
        return lake_root_uri(text)
    except AspenError:
        return text


def _is_library_error(err: BaseException) -> bool:
    if isinstance(err, OSError):
        return True
    return any(cls.__name__ in _LIBRARY_ERRORS for cls in type(err).__mro__)


def _cause_lines(err: BaseException) -> list[str]:
    """The lines of ``err``'s message, colour codes and delta-rs's ``↳`` marks removed."""
    text = str(err)
    java = getattr(err, "java_exception", None)
    if java is not None:  # Py4JJavaError: its str is a Java stack trace; ask for the message
        try:
            text = str(java.toString())
        except Exception:  # the JVM may be gone; fall back to the stack trace's own lines
            text = "\n".join(
                line.removeprefix(": ") for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith("at ")
                and not line.startswith("An error occurred while calling"))
    lines = [_ANSI.sub("", line).strip().lstrip("↳").strip() for line in text.splitlines()]
    for number, line in enumerate(lines):  # a Rust backtrace is no cause: frames and places
        if _BACKTRACE_START.match(line):
            lines = lines[:number]
            break
    return [line for line in lines if line]


def _local_root(lake: str) -> Path | None:
    """The folder of a ``file://`` lake root URI (None for another scheme)."""
    parsed = urlparse(lake)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def _first_torn_line(entry: Path) -> int | None:
    """The number of the first line of a Delta log entry that is not a JSON object (None when
    every line is one, or the file cannot be read)."""
    try:
        lines = entry.read_bytes().splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, 1):
        try:
            if not isinstance(json.loads(line), dict):
                return number
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            return number
    return None


def _torn_entries(root: Path) -> list[tuple[str, str, int]]:
    """``(table, entry, line)`` of every table under ``root`` whose newest log entries hold a
    line that is not JSON."""
    found = []
    try:
        folders = sorted(p for p in root.iterdir() if (p / "_delta_log").is_dir())
    except OSError:
        return found
    for folder in folders:
        entries = sorted((folder / "_delta_log").glob("[0-9]" * 20 + ".json"))
        for entry in entries[-_ENTRIES_LOOKED_AT:]:
            line = _first_torn_line(entry)
            if line is not None:
                found.append((folder.name, entry.name, line))
    return found


def damaged_log_entry(cause: str, lake: str | None) -> str | None:
    """``table 'T': …`` naming the table and the Delta log entry that an error's text ``cause``
    says could not be read, or ``None`` when ``cause`` is no error of a Delta log entry.

    Spark names the entry's file in its error; delta-rs does not (``Json error: Truncated
    record…``), so for a local lake the newest entries of its tables are looked at for a line
    that is not JSON.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "reachable" / "_delta_log").mkdir(parents=True)
    >>> _ = (root / "reachable" / "_delta_log" / f"{1:020}.json").write_text('{"add": {"pa')
    >>> damaged_log_entry("Kernel error: Json error: Truncated record", root.as_uri())
    "table 'reachable': its Delta log entry 00000000000000000001.json is not valid JSON at line \
1 (a torn or truncated write); restore that file, then run the command again"
    >>> damaged_log_entry("Kernel error: no credentials", root.as_uri()) is None
    True
    """
    if lake is None or not any(word in cause.lower() for word in ("json", "_delta_log")):
        return None
    root = _local_root(lake)
    named = _LOG_ENTRY.search(cause)
    if named is not None:
        table, entry = named.groups()
        line = None if root is None else _first_torn_line(root / table / "_delta_log" / entry)
        others: list[str] = []
    else:
        torn = [] if root is None else _torn_entries(root)
        if not torn:
            return None
        (table, entry, line), others = torn[0], [name for name, _, _ in torn[1:]]
    if line is None:
        return f"table '{table}': its Delta log entry {entry} could not be read"
    also = "".join(f"; table '{name}' has a damaged entry too" for name in others)
    return (f"table '{table}': its Delta log entry {entry} is not valid JSON at line {line} "
            f"(a torn or truncated write){also}; restore that file, then run the command again")


def boundary_error(err: BaseException, lake: str | None) -> str | None:
    """The one line the CLI prints for a library's error ``err`` on ``lake``, or ``None`` when
    ``err`` is not one (a bug: it keeps its traceback).

    The line is the lake (unless ``None``: a command without one) and the cause's first line,
    with its innermost line (delta-rs puts the root cause last) in brackets when there are more.

    >>> boundary_error(OSError("Kernel error\\n  ↳ no credentials\\n  ↳ IMDS is disabled"), "s3://b")
    'lake s3://b: Kernel error (IMDS is disabled)'
    >>> boundary_error(KeyError("x"), "s3://b") is None
    True
    """
    if not _is_library_error(err):
        return None
    lines = _cause_lines(err) or [type(err).__name__]
    cause = lines[0] if len(lines) == 1 else f"{lines[0]} ({lines[-1]})"
    damaged = damaged_log_entry("\n".join(lines), lake)
    if damaged is not None:
        cause = f"{damaged} [{lines[0]}]"
    return cause if lake is None else f"lake {lake}: {cause}"
