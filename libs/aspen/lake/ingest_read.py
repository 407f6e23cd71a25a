"""Reading one update file for ingest: only a regular file, read once, streamed to disk.

:func:`open_update_file` opens a path without following a symbolic link and without blocking
(``O_NOFOLLOW | O_NONBLOCK``) and accepts only a regular file: a symbolic link, a fifo, a
device or a directory is refused in one line before a byte is read, and so is a file that
vanished before it was opened. :func:`read_update` then reads it once, by lines of at most
:data:`~aspen.lake.validation.MAX_LINE_BYTES`, computing its sha256 as it goes and validating
each line (:func:`~aspen.lake.validation.validate_stream`); the rows it will append (valid
records, readings, quarantined lines) go to a temporary spill folder as Arrow IPC files in
record batches of bounded size. Memory therefore does not grow with the file: ingest appends
the spilled batches later, under the log writer lease, one record batch at a time. The hash and
the rows come from the same bytes; a file whose size, modification time or inode changed while
it was read (someone still writing it) is refused in one line, before anything is written.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> (folder / "link.jsonl").symlink_to("/etc/hostname")
>>> open_update_file(folder / "link.jsonl")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
aspen.errors.ConfigError: .../link.jsonl is a symbolic link; ingest reads only regular files ...
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from aspen.errors import ConfigError
from aspen.lake import tables
from aspen.lake.validation import ReadingRecord, Rejection, validate_stream

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "SET_AT_APPEND", "SPILL_KINDS", "Spilled", "kind_of", "open_update_file", "read_update",
    "read_data", "spill_schema", "text_for_arrow",
]

#: The tables a file's rows go to, in the order ingest appends them.
SPILL_KINDS: tuple[str, ...] = (tables.UPDATES, tables.READINGS, tables.QUARANTINE)
#: Per table, the columns ingest sets when it appends (a spill holds the others).
SET_AT_APPEND: dict[str, tuple[str, ...]] = {
    tables.UPDATES: ("batch_id", "seq", "source", "ingested_at"),
    tables.READINGS: ("id", "batch_id", "source", "ingested_at"),
    tables.QUARANTINE: ("batch_id", "source", "ingested_at"),
}
#: A spill's record batch is written at this many rows, or earlier at :data:`_BATCH_BYTES`.
_BATCH_ROWS = 8192
_BATCH_BYTES = 8 << 20
#: How much one read asks for (the line reader asks for one line at most).
_BUFFER = 1 << 20


def kind_of(path: str | Path) -> str:
    """What ``path`` is, in words (for a refusal), from ``lstat``; ``""`` for a regular file.

    >>> kind_of("/dev/null"), kind_of("/")
    ('a device', 'a directory')
    """
    mode = os.lstat(path).st_mode
    return _kind(mode)


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refused(path: str | Path, kind: str) -> ConfigError:
    return ConfigError(f"{path} is {kind}; ingest reads only regular files (nothing was read)")


def open_update_file(path: str | Path) -> int:
    """A file descriptor of ``path`` opened for reading, never following a symbolic link and
    never blocking; a :class:`~aspen.errors.ConfigError` (one line) when it is not a regular
    file or cannot be opened. The caller closes it.

    >>> open_update_file("/nonexistent/day1.jsonl")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: /nonexistent/day1.jsonl vanished before it was read (no such file)
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError(f"{path} vanished before it was read (no such file)") from None
    except PermissionError:
        raise ConfigError(f"{path} cannot be read: permission denied") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _refused(path, "a symbolic link") from None
        raise ConfigError(f"{path} cannot be opened: {err.strerror}") from None
    kind = _kind(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise _refused(path, kind)
    return fd


def text_for_arrow(value: str) -> str:
    """``value`` as text Arrow can hold: a character UTF-8 cannot encode (an unpaired
    surrogate, as a file name that is not UTF-8 decodes to) becomes ``?``.

    >>> text_for_arrow("day1.jsonl"), text_for_arrow("bad\\udcff.jsonl")
    ('day1.jsonl', 'bad?.jsonl')
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", errors="replace").decode("utf-8")
    return value


class _Hashing:
    """A binary stream's ``readline`` that feeds every byte read to a sha256."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.digest = hashlib.sha256()
        self.size = 0

    def readline(self, size: int = -1, /) -> bytes:
        data = self.stream.readline(size)
        self.digest.update(data)
        self.size += len(data)
        return data


def spill_schema(name: str) -> pa.Schema:
    """The columns a spill of table ``name`` holds (the others ingest sets when it appends).

    >>> spill_schema("quarantine").names
    ['line', 'raw', 'reason', 'code']
    """
    import pyarrow as pa

    full = tables.arrow_schema_of(name)
    return pa.schema([f for f in full if f.name not in SET_AT_APPEND[name]])


class _SpillWriter:
    """Rows of one table, buffered up to a bounded size, then written as a record batch."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        self.schema = spill_schema(name)
        self.rows: list[tuple[Any, ...]] = []
        self.bytes = 0
        self.writer: Any = None

    def add(self, row: tuple[Any, ...], size: int) -> None:
        self.rows.append(row)
        self.bytes += size
        if len(self.rows) >= _BATCH_ROWS or self.bytes >= _BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        if not self.rows:
            return
        columns = list(zip(*self.rows, strict=True))
        batch = pa.RecordBatch.from_arrays(
            [pa.array(values, type=f.type) for values, f in zip(columns, self.schema,
                                                                strict=True)],
            schema=self.schema)
        if self.writer is None:
            options = pa.ipc.IpcWriteOptions(
                compression="lz4" if pa.Codec.is_available("lz4") else None)
            self.writer = pa.ipc.new_file(str(self.path), self.schema, options=options)
        self.writer.write_batch(batch)
        self.rows, self.bytes = [], 0

    def close(self) -> Path | None:
        self.flush()
        if self.writer is None:
            return None
        self.writer.close()
        return self.path


@dataclass
class Spilled:
    """One file read: its sha256 and counts, and its rows per table in spill files."""

    sha256: str
    valid: int = 0
    quarantined: int = 0
    readings: int = 0
    blank: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)

    def batches(self, name: str) -> Iterator[pa.RecordBatch]:
        """The spilled record batches of table ``name``, one at a time (none when it has no
        row)."""
        import pyarrow as pa

        path = self.files.get(name)
        if path is None:
            return
        with pa.OSFile(str(path)) as source:  # read, not mapped: no page stays resident
            reader = pa.ipc.open_file(source)
            for index in range(reader.num_record_batches):
                yield reader.get_batch(index)


def read_update(path: str | Path, fmt: str, spill: Path) -> Spilled:
    """Read the update file ``path`` once (opened by :func:`open_update_file`), validate it line
    by line and spill its rows to files named ``<spill>-<table>.arrow``; raises
    :class:`~aspen.errors.ConfigError` (one line) when it is not a regular file, vanished, or
    changed while it was read.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.jsonl").write_bytes(b'{"op": "insert", "relation": "triggered", '
    ...                                      b'"id": "s1"}\\n\\n{"op": 1}\\n')
    >>> out = read_update(folder / "a.jsonl", "jsonl", folder / "0")
    >>> out.valid, out.quarantined, out.blank, sorted(out.files)
    (1, 1, 1, ['quarantine', 'updates'])
    """
    fd = open_update_file(path)
    try:
        before = os.fstat(fd)
        with os.fdopen(fd, "rb", buffering=_BUFFER, closefd=False) as stream:
            source = _Hashing(stream)
            spilled = _spill(source, fmt, spill)
            after = os.fstat(fd)
    except OSError as err:  # reading the file, or writing the spill (a full disk)
        raise ConfigError(f"{path}: ingest could not read it or spill its rows under "
                         f"{spill.parent} ({err.strerror or err}); free space there or set "
                         "TMPDIR to a folder with room") from None
    finally:
        os.close(fd)
    changed = (before.st_size, before.st_mtime_ns, before.st_ino) != (
        after.st_size, after.st_mtime_ns, after.st_ino) or source.size != after.st_size
    if changed:
        for spill_file in spilled.files.values():
            spill_file.unlink(missing_ok=True)
        raise ConfigError(f"{path} changed while it was read (is it still being written?); "
                          "nothing was ingested: ingest it again once it is complete")
    spilled.sha256 = source.digest.hexdigest()
    return spilled


def read_data(data: bytes, fmt: str, spill: Path) -> Spilled:
    """:func:`read_update` for a file's bytes already in memory (what a job writes into the
    log itself).

    >>> import tempfile, pathlib
    >>> out = read_data(b"op,relation,id\\ninsert,triggered,s1\\n", "csv",
    ...                 pathlib.Path(tempfile.mkdtemp()) / "0")
    >>> out.valid, out.sha256[:8]
    (1, '8b142449')
    """
    import io

    source = _Hashing(io.BytesIO(data))  # type: ignore[arg-type]
    spilled = _spill(source, fmt, spill)
    spilled.sha256 = source.digest.hexdigest()
    return spilled


def _spill(source: _Hashing, fmt: str, spill: Path) -> Spilled:
    """Validate the lines of ``source`` into spill files ``<spill>-<table>.arrow``; with the
    counts."""
    writers = {name: _SpillWriter(spill.with_name(f"{spill.name}-{name}.arrow"), name)
               for name in SPILL_KINDS}
    out = Spilled(sha256="")
    try:
        for number, outcome in validate_stream(source, fmt):
            if outcome is None:
                out.blank += 1
            elif isinstance(outcome, Rejection):
                out.quarantined += 1
                out.reasons[outcome.code] = out.reasons.get(outcome.code, 0) + 1
                raw, reason = text_for_arrow(outcome.raw), text_for_arrow(outcome.reason)
                writers[tables.QUARANTINE].add((number, raw, reason, outcome.code),
                                               len(raw) + len(reason))
            elif isinstance(outcome, ReadingRecord):
                out.readings += 1
                writers[tables.READINGS].add(
                    (number, outcome.sensor, outcome.ts, outcome.value), len(outcome.sensor))
            else:
                out.valid += 1
                record = outcome
                writers[tables.UPDATES].add((
                    number, record.op, record.relation, record.src, record.dst, record.cost,
                    record.id, record.x, record.y, record.region, record.ttl_s,
                    record.event_time), 128)
    finally:
        for name, writer in writers.items():
            written = writer.close()
            if written is not None:
                out.files[name] = written
    return out
