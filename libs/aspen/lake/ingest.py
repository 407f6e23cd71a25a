"""Ingest update files into the Delta ``updates`` log, with bad records in ``quarantine``.

One call of :func:`ingest_files` is one **ingest batch**: every new file's valid records are
appended to ``updates`` with the new ``batch_id`` and consecutive global ``seq`` numbers, its
sensor readings to ``readings`` with consecutive reading ``id`` numbers (their own sequence, in
file and line order), every invalid record to ``quarantine`` with its raw text, source, line and
reason; nothing is dropped.
Validation runs in this process (:mod:`aspen.lake.validation`): update files are small inputs.
The tables are read and written through delta-rs with pyarrow (:mod:`aspen.lake.deltars`): an
ingest starts no JVM and no SparkSession. A table it creates on a fresh lake has the schema of
:data:`~aspen.lake.tables.TABLE_DDL` and the properties of a table Spark creates (Delta reader
version 1, writer version 2), so apply reads it with Spark; a table Spark created accepts its
appends (the same columns, types and nullability).

Exactly once, across reruns and crashes
---------------------------------------
A file's content is identified by (source name, sha256); the ``ingest_files`` row of a batch is
written **last** and is the batch's commit marker. Before writing batch ``N`` (one more than the
last committed batch), rows with ``batch_id >= N`` left in ``updates``/``quarantine`` by a run that
crashed before its marker are deleted, then the batch is appended again. So:

- re-ingesting a committed file content is a no-op (reported as already ingested);
- a file of another name with the same content as a committed (or an earlier) file is a new
  file and is ingested again, its records appended once more (the same updates sent twice are
  two sends: an insert after a delete is valid again); its report says so in a warning line,
  "same content as already-ingested NAME (batch N)", so an accidental copy is seen;
- a crash before the marker leaves no committed trace; the rerun replaces the leftovers;
- readers that must not see uncommitted rows (``apply``) only read batches listed in
  ``ingest_files``.

One log writer at a time
------------------------
Batch ids and seq numbers come from the committed state, so two ingests reading it at once
would hand out the same ones. An ingest therefore validates its files first, then takes the
lake's **log writer lease** (:class:`~aspen.lake.lease.LogWriterLease`, which the TTL sweep
takes too) and only then reads the committed state, writes and commits. A second ingest waits
for the lease (``wait`` seconds, 120 by default, then one line: "waited 120 s: the lake's
update log is being written by …"). The maintainer lease is not involved: a follower
maintaining the lake never blocks an ingest. Before each append the ingest checks it still
holds the lease, so one whose lease was taken (it stalled past the lease's lifetime) stops
before its commit marker, and the next ingest replaces what it wrote.

One bad record never fails the call: validation turns whatever goes wrong in a record into a
quarantine row (:func:`~aspen.lake.validation.validate_file`).

>>> guess_format("updates/day1.JSONL")
'jsonl'
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError, TableMissingError
from aspen.lake import deltars, tables
from aspen.lake.lease import LOG_WAIT_SECONDS, Lease, LogWriterLease
from aspen.lake.validation import FileValidation, validate_file
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "FORMATS", "FileReport", "IngestReport", "check_inputs", "guess_format", "ingest_data",
    "ingest_files",
]

#: File suffix → format.
FORMATS: dict[str, str] = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def guess_format(path: str | Path) -> str:
    """The format of an update file from its suffix (``jsonl`` or ``csv``).

    >>> guess_format("a.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: a.txt: unsupported file type '.txt'; update files are .jsonl, ...
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(
            f"{path}: unsupported file type '{suffix}'; update files are "
            f"{', '.join(list(FORMATS)[:-1])} or {list(FORMATS)[-1]}"
        )
    return FORMATS[suffix]


def check_inputs(paths: list[str | Path]) -> None:
    """Fail with one line on a missing file or an unsupported suffix (before the lake is read).

    >>> check_inputs(["/nonexistent/day1.jsonl"])
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: no such update file: /nonexistent/day1.jsonl
    """
    if not paths:
        raise ConfigError("no update files given")
    for path in paths:
        guess_format(path)
        if not Path(path).is_file():
            raise ConfigError(f"no such update file: {path}")


@dataclass
class FileReport:
    """What happened to one file."""

    source: str
    path: str
    sha256: str
    batch_id: int | None = None
    valid: int = 0
    quarantined: int = 0
    blank: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    seq_start: int | None = None
    seq_end: int | None = None
    readings: int = 0
    reading_start: int | None = None
    reading_end: int | None = None
    already_ingested_in: int | None = None
    #: ``(source, batch)`` of an ingested file of another name with the same content.
    same_content_as: tuple[str, int] | None = None

    def warning(self) -> str | None:
        """The warning line of a file ingested again under another name, else ``None``.

        >>> FileReport("b.jsonl", "b.jsonl", "0", same_content_as=("a.jsonl", 1)).warning()
        'warning: b.jsonl: same content as already-ingested a.jsonl (batch 1); ingested again'
        """
        if self.same_content_as is None or self.already_ingested_in is not None:
            return None
        source, batch = self.same_content_as
        return (f"warning: {self.source}: same content as already-ingested {source} "
                f"(batch {batch}); ingested again")

    def line(self) -> str:
        """One human-readable line."""
        if self.already_ingested_in is not None:
            return (
                f"{self.source}: already ingested (same content) in batch "
                f"{self.already_ingested_in}; nothing to do"
            )
        reasons = ", ".join(f"{code} {n}" for code, n in sorted(self.reasons.items()))
        text = f"{self.source}: {self.valid} valid, {self.quarantined} quarantined"
        if reasons:
            text += f" ({reasons})"
        if self.readings:
            text += f", {self.readings} reading{'s' if self.readings != 1 else ''}"
        if self.blank:
            text += f", {self.blank} blank line{'s' if self.blank != 1 else ''} skipped"
        if self.valid:
            text += f"; seq {self.seq_start}–{self.seq_end}"
        if self.readings:
            text += f"; reading ids {self.reading_start}–{self.reading_end}"
        return text + f" → batch {self.batch_id}"


@dataclass
class IngestReport:
    """What one ingest run did: the new batch id (None when nothing was new) and per-file counts."""

    batch_id: int | None
    files: list[FileReport]

    @property
    def valid(self) -> int:
        return sum(f.valid for f in self.files if f.already_ingested_in is None)

    @property
    def quarantined(self) -> int:
        return sum(f.quarantined for f in self.files if f.already_ingested_in is None)

    @property
    def readings(self) -> int:
        return sum(f.readings for f in self.files if f.already_ingested_in is None)

    def lines(self) -> list[str]:
        """Human-readable summary lines (one per file, and its warning if any, then a total)."""
        out = []
        for report in self.files:
            out.append(report.line())
            if (warning := report.warning()) is not None:
                out.append(warning)
        if self.batch_id is None:
            out.append("nothing new to ingest")
        else:
            readings = f", {self.readings} to readings" if self.readings else ""
            out.append(
                f"batch {self.batch_id}: {self.valid} record(s) appended to updates{readings}, "
                f"{self.quarantined} to quarantine"
            )
        return out


@dataclass
class _Input:
    report: FileReport
    fmt: str
    data: bytes


def _read_inputs(paths: list[str | Path]) -> list[_Input]:
    check_inputs(paths)
    inputs = []
    for raw_path in paths:
        path = Path(raw_path)
        fmt = guess_format(path)
        data = path.read_bytes()
        report = FileReport(_text(path.name), _text(str(raw_path)),
                            hashlib.sha256(data).hexdigest())
        inputs.append(_Input(report, fmt, data))
    return inputs


def _text(value: str) -> str:
    """``value`` as text Arrow can hold: a character UTF-8 cannot encode (an unpaired
    surrogate, as a file name that is not UTF-8 decodes to) becomes ``?``.

    >>> _text("day1.jsonl"), _text("bad\\udcff.jsonl")
    ('day1.jsonl', 'bad?.jsonl')
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", errors="replace").decode("utf-8")
    return value


def _committed(settings: Settings) -> tuple[dict[tuple[str, str], int], int, int]:
    """(source, sha256) → batch of committed files; last batch id; last seq (delta-rs)."""
    try:
        frame = deltars.read_table(settings, tables.INGEST_FILES,
                                   ["source", "sha256", "batch_id", "seq_end"])
    except TableMissingError:
        return {}, 0, 0
    rows = frame.to_dict("records")
    done = {(r["source"], r["sha256"]): int(r["batch_id"]) for r in rows}
    last_batch = max((int(r["batch_id"]) for r in rows), default=0)
    last_seq = max((int(r["seq_end"]) for r in rows), default=0)
    return done, last_batch, last_seq


def _fresh_inputs(inputs: list[_Input], done: dict[tuple[str, str], int],
                  batch_id: int) -> list[_Input]:
    """The inputs to ingest as batch ``batch_id``, given the committed ``(source, sha256) →
    batch``; marks the others already ingested and the renamed copies (same content, another
    name) with the file they copy, committed or earlier in ``inputs``."""
    by_content: dict[str, tuple[str, int]] = {}
    for (source, sha256), batch in sorted(done.items(), key=lambda kv: (kv[1], kv[0])):
        by_content.setdefault(sha256, (source, batch))
    fresh: list[_Input] = []
    seen: set[tuple[str, str]] = set()
    for item in inputs:
        report = item.report
        content_key = (report.source, report.sha256)
        if content_key in done:
            report.already_ingested_in = done[content_key]
        elif content_key in seen:
            report.already_ingested_in = batch_id
        else:
            seen.add(content_key)
            report.same_content_as = by_content.get(report.sha256)
            by_content.setdefault(report.sha256, (report.source, batch_id))
            fresh.append(item)
    return fresh


def _drop_uncommitted(settings: Settings, batch_id: int) -> None:
    """Delete rows a crashed run left for batches ≥ ``batch_id`` (none have a commit marker);
    a table without such rows gets no commit."""
    for name in (tables.UPDATES, tables.READINGS, tables.QUARANTINE):
        if name == tables.READINGS and not deltars.table_exists(settings, name):
            continue  # a lake that never had a reading
        deltars.delete_where(settings, name, f"batch_id >= {int(batch_id)}")


def _last_reading_id(settings: Settings) -> int:
    """The largest committed reading id (0 when none), once leftovers are dropped."""
    if not deltars.table_exists(settings, tables.READINGS):
        return 0
    return deltars.column_max(settings, tables.READINGS, "id") or 0


def _arrow_rows(name: str, rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    """``rows`` (tuples in the column order of :data:`~aspen.lake.tables.TABLE_DDL`) as an
    Arrow table of table ``name``'s schema.

    >>> _arrow_rows("apply_notes", [(1, 2, "link", '["a","b"]', "not live")]).column("seq")[0]
    <pyarrow.Int64Scalar: 2>
    """
    import pyarrow as pa

    schema = tables.arrow_schema_of(name)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.Table.from_arrays(
        [pa.array(values, type=column.type) for values, column in zip(columns, schema,
                                                                       strict=True)],
        schema=schema)


def _append(settings: Settings, name: str, rows: list[tuple[Any, ...]]) -> None:
    """Append ``rows`` to table ``name`` in one delta-rs commit (creating the table; an empty
    list only creates it)."""
    deltars.append_table(settings, name, _arrow_rows(name, rows))


def _command(inputs: list[_Input]) -> str:
    """How the lease names this ingest: ``aspen ingest`` and its first file."""
    more = f" (+{len(inputs) - 1} more)" if len(inputs) > 1 else ""
    return f"aspen ingest {inputs[0].report.source}{more}"


def ingest_files(
    settings: Settings, paths: list[str | Path], wait: float = LOG_WAIT_SECONDS,
) -> IngestReport:
    """Validate ``paths`` and append them as one new ingest batch; see the module docstring.

    Raises :class:`~aspen.errors.ConfigError` (one line) for a missing file or an unknown suffix,
    and :class:`~aspen.errors.LakeError` when another writer held the update log for ``wait``
    seconds, before anything is written. Starts no JVM.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "day1.jsonl").write_text(
    ...     '{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1}\\n')
    >>> lake = Settings(lake=str(folder / "lake"))
    >>> ingest_files(lake, [folder / "day1.jsonl"]).lines()
    ['day1.jsonl: 1 valid, 0 quarantined; seq 1–1 → batch 1', 'batch 1: 1 record(s) appended \
to updates, 0 to quarantine']
    >>> ingest_files(lake, [folder / "day1.jsonl"]).batch_id is None  # the same content again
    True
    """
    return _ingest_inputs(settings, _read_inputs(paths), wait)


def ingest_data(settings: Settings, named: list[tuple[str, bytes]],
                wait: float = LOG_WAIT_SECONDS) -> IngestReport:
    """Ingest update files given as (name, bytes) — what a job writes into the log itself (the
    readings stream's decisions) — exactly as :func:`ingest_files` ingests files: the name and
    content identify it, so the same name and bytes again are already ingested.

    >>> import tempfile
    >>> lake = Settings(lake=tempfile.mkdtemp() + "/lake")
    >>> line = b'{"op": "insert", "relation": "triggered", "id": "s1"}\\n'
    >>> ingest_data(lake, [("stream-1.jsonl", line)]).batch_id
    1
    >>> ingest_data(lake, [("stream-1.jsonl", line)]).batch_id is None
    True
    """
    inputs = [_Input(FileReport(_text(name), _text(name), hashlib.sha256(data).hexdigest()),
                     guess_format(name), data) for name, data in named]
    if not inputs:
        raise ConfigError("no update files given")
    return _ingest_inputs(settings, inputs, wait)


def _ingest_inputs(settings: Settings, inputs: list[_Input], wait: float) -> IngestReport:
    checked: dict[tuple[str, str], FileValidation] = {}
    for item in inputs:  # before the lease: the lease is held for writing only
        content_key = (item.report.source, item.report.sha256)
        if content_key not in checked:
            checked[content_key] = validate_file(item.data, item.fmt)
    with LogWriterLease.reentrant(settings, _command(inputs), wait=wait) as lease:
        return _ingest(settings, inputs, checked, lease)


def _ingest(settings: Settings, inputs: list[_Input],
            checked: dict[tuple[str, str], FileValidation], lease: Lease) -> IngestReport:
    """The part of :func:`ingest_files` that holds the log writer lease."""
    done, last_batch, last_seq = _committed(settings)
    batch_id = last_batch + 1
    fresh = _fresh_inputs(inputs, done, batch_id)
    if not fresh:
        return IngestReport(None, [item.report for item in inputs])

    ingested_at = datetime.now(UTC)
    update_rows: list[tuple[Any, ...]] = []
    reading_rows: list[tuple[Any, ...]] = []
    quarantine_rows: list[tuple[Any, ...]] = []
    file_rows: list[tuple[Any, ...]] = []
    seq = last_seq
    lease.check()
    _drop_uncommitted(settings, batch_id)
    reading_id = _last_reading_id(settings)
    for item in fresh:
        report = item.report
        validation = checked[(report.source, report.sha256)]
        report.batch_id = batch_id
        report.seq_start = seq + 1
        for line, record in validation.records:
            seq += 1
            update_rows.append((
                batch_id, seq, report.source, line, record.op, record.relation, record.src,
                record.dst, record.cost, record.id, record.x, record.y, record.region,
                record.ttl_s, record.event_time, ingested_at,
            ))
        for rejection in validation.rejections:
            quarantine_rows.append((
                batch_id, report.source, rejection.line, _text(rejection.raw),
                _text(rejection.reason), rejection.code, ingested_at,
            ))
        report.seq_end = seq
        if validation.readings:
            report.reading_start = reading_id + 1
        for line, reading in validation.readings:
            reading_id += 1
            reading_rows.append((reading_id, batch_id, report.source, line, reading.sensor,
                                 reading.ts, reading.value, ingested_at))
        report.reading_end = reading_id if validation.readings else None
        report.readings = len(validation.readings)
        report.valid = len(validation.records)
        report.quarantined = len(validation.rejections)
        report.blank = validation.blank
        report.reasons = validation.reason_counts()
        file_rows.append((
            report.source, report.sha256, report.path, batch_id, report.seq_start, report.seq_end,
            report.valid, report.quarantined, report.blank, ingested_at,
        ))

    appends = [(tables.UPDATES, update_rows), (tables.QUARANTINE, quarantine_rows),
               (tables.INGEST_FILES, file_rows)]  # the commit marker: last
    if reading_rows:
        appends.insert(1, (tables.READINGS, reading_rows))
    for name, rows in appends:
        lease.check()  # a writer that lost the lease stops before its marker
        _append(settings, name, rows)
    return IngestReport(batch_id, [item.report for item in inputs])
