"""Ingest update files into the Delta ``updates`` log, with bad records in ``quarantine``.

One call of :func:`ingest_files` is one **ingest batch**: every new file's valid records are
appended to ``updates`` with the new ``batch_id`` and consecutive global ``seq`` numbers, its
sensor readings to ``readings`` with consecutive reading ``id`` numbers (their own sequence, in
file and line order), every invalid record to ``quarantine`` with its raw text, source, line and
reason; nothing is dropped.
Files are read once each, as a stream (:mod:`aspen.lake.ingest_read`): only a regular file is
opened (never through a symbolic link; a fifo, a device, a directory, a file that vanished or
changed while read is refused in one line), its sha256 is computed and its lines are validated
(:mod:`aspen.lake.validation`) as they are read, and its rows are spilled to a temporary folder
in bounded record batches, which the appends stream back: memory does not depend on a file's
size. The tables are read and written through delta-rs with pyarrow (:mod:`aspen.lake.deltars`):
an ingest starts no JVM and no SparkSession. A table it creates on a fresh lake has the schema
of :data:`~aspen.lake.tables.TABLE_DDL` and the properties of a table Spark creates (Delta
reader version 1, writer version 2), so apply reads it with Spark; a table Spark created
accepts its appends (the same columns, types and nullability).

Exactly once, across reruns and crashes
---------------------------------------
A file is identified by (source name, sha256); the ``ingest_files`` row of a batch is written
**last** and is the batch's commit marker. Before writing batch ``N`` (one more than the last
committed batch), rows with ``batch_id >= N`` left in ``updates``/``quarantine`` by a run that
crashed before its marker are deleted, then the batch is appended again. So a crash before the
marker leaves no committed trace, the rerun replaces the leftovers, and readers that must not
see uncommitted rows (``apply``) only read batches listed in ``ingest_files``.

The same name and content as a committed file is either a **rerun** (a call repeated after a
crash or a success: nothing to append) or a **new send** (the same updates sent again, which
must be applied again: a delete, an insert, then the same delete again leaves the link dead).
A caller names its **delivery** (``delivery``: the follower's claim token, the pipeline run's
id), and ``ingest_files`` records it in the marker row (``ingest_files.delivery``):

- with a delivery, a file committed under the **same** delivery is a rerun: a no-op, reported
  "already ingested in batch N (rerun of this delivery)"; under another delivery (or none) it
  is a new send: appended in the new batch, with a warning line "repeats batch N";
- without a delivery (``aspen ingest FILE``), a file committed in the **latest** batch that
  holds a file is a rerun of that call (a no-op, reported as already ingested); committed in an
  earlier batch, with files ingested since, it is **refused**: one line naming the batch and
  the remedy, a :class:`~aspen.errors.ConfigError` before anything is written (exit 2). Is it
  a late rerun, or a send that must be applied after the later updates? Only the caller knows;
  ``again=True`` (``aspen ingest --again``) applies it as a new send;
- :func:`ingest_data` (the readings stream's decisions, under names used once) keeps the
  plain rule: a committed name and content is always a rerun;
- a file of another name with the same content as a committed (or an earlier) file is a new
  file and is ingested again; its report says so in a warning line, "same content as
  already-ingested NAME (batch N)", so an accidental copy is seen;
- the same file twice in one call is ingested once.

No call ever reports success having silently dropped a file: it is appended, reported as a
rerun of what is committed, or refused with an error.

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
quarantine row (:func:`~aspen.lake.validation.validate_stream`).

>>> guess_format("updates/day1.JSONL")
'jsonl'
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError, TableMissingError
from aspen.lake import deltars, tables
from aspen.lake.ingest_read import Spilled, kind_of, read_data, read_update, text_for_arrow
from aspen.lake.lease import LOG_WAIT_SECONDS, Lease, LogWriterLease
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "FORMATS", "FileReport", "IngestReport", "check_inputs", "guess_format", "ingest_data",
    "ingest_files",
]

_text = text_for_arrow  # file names and reasons as text Arrow can hold

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
    """Fail with one line on a missing file, one that is not a regular file (a symbolic link,
    a fifo, a device, a directory) or an unsupported suffix — before the lake or the file is
    read (:mod:`aspen.lake.ingest_read` checks again when it opens the file).

    >>> check_inputs(["/nonexistent/day1.jsonl"])
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: no such update file: /nonexistent/day1.jsonl
    """
    if not paths:
        raise ConfigError("no update files given")
    for path in paths:
        guess_format(path)
        try:
            kind = kind_of(path)
        except FileNotFoundError:
            raise ConfigError(f"no such update file: {path}") from None
        except OSError as err:
            raise ConfigError(f"{path} cannot be read: {err.strerror}") from None
        if kind:
            raise ConfigError(f"{path} is {kind}; ingest reads only regular files "
                              "(nothing was read)")


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
    #: Whether that was a rerun of the same delivery (its token named by the caller).
    rerun_of_delivery: bool = False
    #: ``(source, batch)`` of an ingested file of another name with the same content.
    same_content_as: tuple[str, int] | None = None
    #: The last batch that ingested this name and content, when it is sent again.
    repeats: int | None = None
    #: The caller's delivery token (None: none given).
    delivery: str | None = None

    def warning(self) -> str | None:
        """The warning line of a file sent again (same name and content, a new send) or
        ingested again under another name, else ``None``.

        >>> FileReport("b.jsonl", "b.jsonl", "0", same_content_as=("a.jsonl", 1)).warning()
        'warning: b.jsonl: same content as already-ingested a.jsonl (batch 1); ingested again'
        >>> FileReport("a.jsonl", "a.jsonl", "0", repeats=1).warning()
        'warning: a.jsonl: repeats batch 1 (same name and content); applied again as a new send'
        """
        if self.already_ingested_in is not None:
            return None
        if self.repeats is not None:
            return (f"warning: {self.source}: repeats batch {self.repeats} (same name and "
                    "content); applied again as a new send")
        if self.same_content_as is None:
            return None
        source, batch = self.same_content_as
        return (f"warning: {self.source}: same content as already-ingested {source} "
                f"(batch {batch}); ingested again")

    def line(self) -> str:
        """One human-readable line."""
        if self.already_ingested_in is not None and self.rerun_of_delivery:
            return (f"{self.source}: already ingested in batch {self.already_ingested_in} "
                    "(rerun of this delivery); nothing to do")
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
    spilled: Spilled


@dataclass(frozen=True)
class _Policy:
    """How a call treats a file whose name and content were committed before (module
    docstring): ``delivery`` the caller's token, ``again`` a forced new send, ``data`` the
    internal :func:`ingest_data` rule (a committed name and content is always a rerun)."""

    delivery: str | None = None
    again: bool = False
    data: bool = False


def _read_inputs(paths: list[str | Path], spill: Path) -> list[_Input]:
    check_inputs(paths)
    inputs = []
    for index, raw_path in enumerate(paths):
        path = Path(raw_path)
        fmt = guess_format(path)
        spilled = read_update(path, fmt, spill / f"{index:06d}")
        report = FileReport(_text(path.name), _text(str(raw_path)), spilled.sha256)
        inputs.append(_Input(report, fmt, spilled))
    return inputs


@dataclass
class _Committed:
    """The committed state of the log: per (source, sha256) its sends as (batch, delivery);
    the last batch of all (the TTL sweep's included), the last batch that holds a file, the
    last seq."""

    sends: dict[tuple[str, str], list[tuple[int, str | None]]] = field(default_factory=dict)
    last_batch: int = 0
    last_file_batch: int = 0
    last_seq: int = 0


def _committed(settings: Settings) -> _Committed:
    """The committed state of the update log, from ``ingest_files`` (delta-rs); an older table
    without the ``delivery`` column reads as no delivery."""
    try:
        columns = ["source", "sha256", "batch_id", "seq_end"]
        if "delivery" in deltars.table_columns(settings, tables.INGEST_FILES):
            columns.append("delivery")
        frame = deltars.read_table(settings, tables.INGEST_FILES, columns)
    except TableMissingError:
        return _Committed()
    state = _Committed()
    for row in frame.to_dict("records"):
        batch = int(row["batch_id"])
        state.last_batch = max(state.last_batch, batch)
        state.last_seq = max(state.last_seq, int(row["seq_end"]))
        if not row["sha256"]:  # a TTL sweep's row: a batch without a file
            continue
        state.last_file_batch = max(state.last_file_batch, batch)
        delivery = row.get("delivery")
        delivery = None if delivery is None or delivery != delivery else str(delivery)  # NaN
        state.sends.setdefault((row["source"], row["sha256"]), []).append((batch, delivery))
    return state


def _fresh_inputs(inputs: list[_Input], committed: _Committed, batch_id: int,
                  policy: _Policy = _Policy()) -> list[_Input]:
    """The inputs to ingest as batch ``batch_id`` under ``policy`` (module docstring). Marks
    the others already ingested (a rerun) and the new sends of a committed file with the batch
    they repeat, the renamed copies with the file they copy (committed or earlier in
    ``inputs``); raises :class:`~aspen.errors.ConfigError` (one line, nothing written) for a
    committed file sent again without a delivery after later batches, unless ``again``."""
    by_content: dict[str, tuple[str, int]] = {}
    first_send = {key: min(batch for batch, _ in sends) for key, sends in committed.sends.items()}
    for (source, sha256), batch in sorted(first_send.items(), key=lambda kv: (kv[1], kv[0])):
        by_content.setdefault(sha256, (source, batch))
    fresh: list[_Input] = []
    seen: set[tuple[str, str]] = set()
    refused: list[tuple[str, int]] = []
    for item in inputs:
        report = item.report
        key = (report.source, report.sha256)
        sends = committed.sends.get(key, [])
        last = max((batch for batch, _ in sends), default=None)
        if key in seen:  # the same file twice in one call
            report.already_ingested_in = batch_id
            continue
        if last is not None and not policy.again:
            mine = [batch for batch, token in sends if token == policy.delivery]
            if policy.data or (policy.delivery is None and last == committed.last_file_batch):
                report.already_ingested_in = last
                continue
            if policy.delivery is not None and mine:
                report.already_ingested_in = max(mine)
                report.rerun_of_delivery = True
                continue
            if policy.delivery is None:
                refused.append((report.source, last))
                continue
        seen.add(key)
        report.repeats = last
        if last is None:
            report.same_content_as = by_content.get(report.sha256)
        by_content.setdefault(report.sha256, (report.source, batch_id))
        fresh.append(item)
    if refused:
        raise ConfigError(_refusal(refused, committed.last_file_batch))
    return fresh


def _refusal(refused: list[tuple[str, int]], latest: int) -> str:
    """The one line of a refused send.

    >>> _refusal([("cut.jsonl", 1)], 2)  # doctest: +NORMALIZE_WHITESPACE
    'cut.jsonl was already ingested in batch 1 and batch 2 was ingested since: sending it \
again would apply its updates again; nothing was written (to apply it again as a new send: \
aspen ingest --again)'
    """
    shown = ", ".join(f"{source}" if len(refused) == 1 else f"{source} (batch {batch})"
                      for source, batch in refused[:3])
    if len(refused) > 3:
        shown += f" and {len(refused) - 3} more"
    where = f"in batch {refused[0][1]}" if len(refused) == 1 else "in earlier batches"
    it = "it" if len(refused) == 1 else "them"
    verb = "was" if len(refused) == 1 else "were"
    return (f"{shown} {verb} already ingested {where} and batch {latest} was ingested since: "
            f"sending {it} again would apply {'its' if len(refused) == 1 else 'their'} updates "
            f"again; nothing was written (to apply {it} again as a new send: aspen ingest "
            "--again)")


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


def _arrow_rows(name: str, rows: Sequence[tuple[Any, ...]], added: bool = False) -> pa.Table:
    """``rows`` (tuples in the column order of :data:`~aspen.lake.tables.TABLE_DDL`, with
    :data:`~aspen.lake.tables.ADDED_COLUMNS` when ``added``) as an Arrow table of table
    ``name``'s schema.

    >>> _arrow_rows("apply_notes", [(1, 2, "link", '["a","b"]', "not live")]).column("seq")[0]
    <pyarrow.Int64Scalar: 2>
    """
    import pyarrow as pa

    schema = tables.arrow_schema_of(name, added=added)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.Table.from_arrays(
        [pa.array(values, type=column.type) for values, column in zip(columns, schema,
                                                                       strict=True)],
        schema=schema)


def _appended(name: str, fresh: list[_Input], batch_id: int, first: int,
              ingested_at: datetime) -> Iterator[pa.RecordBatch]:
    """The record batches of table ``name`` (``updates``, ``readings`` or ``quarantine``) for
    batch ``batch_id``: the spilled rows of ``fresh`` in file and line order, numbered from
    ``first`` (``seq`` or the reading ``id``), one spilled batch at a time."""
    import pyarrow as pa

    schema = tables.arrow_schema_of(name)
    number = first
    for item in fresh:
        for spilled in item.spilled.batches(name):
            rows = spilled.num_rows
            fixed = {
                "batch_id": pa.repeat(pa.scalar(batch_id, pa.int64()), rows),
                "source": pa.repeat(pa.scalar(item.report.source, pa.string()), rows),
                "ingested_at": pa.repeat(pa.scalar(ingested_at, schema.field(
                    "ingested_at").type), rows),
            }
            if name == tables.UPDATES:
                fixed["seq"] = pa.array(range(number, number + rows), pa.int64())
            elif name == tables.READINGS:
                fixed["id"] = pa.array(range(number, number + rows), pa.int64())
            number += rows
            yield pa.RecordBatch.from_arrays(
                [fixed[f.name] if f.name in fixed else spilled.column(f.name) for f in schema],
                schema=schema)


def _append(settings: Settings, name: str, batches: Iterable[pa.RecordBatch]) -> None:
    """Append ``batches`` to table ``name`` in one delta-rs commit (creating the table; no
    batch only creates it). The commit marker's table gains a column it lacks
    (:data:`~aspen.lake.tables.ADDED_COLUMNS`)."""
    schema = tables.arrow_schema_of(name, added=name == tables.INGEST_FILES)
    deltars.append_batches(settings, name, schema, batches,
                           add_columns=name == tables.INGEST_FILES)


def _command(inputs: list[_Input]) -> str:
    """How the lease names this ingest: ``aspen ingest`` and its first file."""
    more = f" (+{len(inputs) - 1} more)" if len(inputs) > 1 else ""
    return f"aspen ingest {inputs[0].report.source}{more}"


def ingest_files(
    settings: Settings, paths: list[str | Path], wait: float = LOG_WAIT_SECONDS,
    delivery: str | None = None, again: bool = False,
) -> IngestReport:
    """Validate ``paths`` and append them as one new ingest batch; see the module docstring.
    ``delivery`` names the caller's delivery of these files (a claim token, a run id): the same
    file again under it is a rerun; ``again`` sends every file again, even a rerun.

    Raises :class:`~aspen.errors.ConfigError` (one line) for a missing file, one that is not a
    regular file, vanished or changed while read, an unknown suffix, or a committed file sent
    again without a delivery after later batches; :class:`~aspen.errors.LakeError` when
    another writer held the update log for ``wait`` seconds — all before anything is written.
    Starts no JVM.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "day1.jsonl").write_text(
    ...     '{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1}\\n')
    >>> lake = Settings(lake=str(folder / "lake"))
    >>> ingest_files(lake, [folder / "day1.jsonl"]).lines()
    ['day1.jsonl: 1 valid, 0 quarantined; seq 1–1 → batch 1', 'batch 1: 1 record(s) appended \
to updates, 0 to quarantine']
    >>> ingest_files(lake, [folder / "day1.jsonl"]).batch_id is None  # a rerun
    True
    """
    if delivery is not None and not delivery.strip():
        raise ConfigError("a delivery token must not be empty")
    with tempfile.TemporaryDirectory(prefix="aspen-ingest-") as spill:
        inputs = _read_inputs(paths, Path(spill))
        policy = _Policy(delivery=delivery, again=again)
        return _ingest_inputs(settings, inputs, wait, policy)


def ingest_data(settings: Settings, named: list[tuple[str, bytes]],
                wait: float = LOG_WAIT_SECONDS) -> IngestReport:
    """Ingest update files given as (name, bytes) — what a job writes into the log itself (the
    readings stream's decisions, under names used once) — as :func:`ingest_files` ingests
    files, except that the same name and bytes again are always already ingested.

    >>> import tempfile
    >>> lake = Settings(lake=tempfile.mkdtemp() + "/lake")
    >>> line = b'{"op": "insert", "relation": "triggered", "id": "s1"}\\n'
    >>> ingest_data(lake, [("stream-1.jsonl", line)]).batch_id
    1
    >>> ingest_data(lake, [("stream-1.jsonl", line)]).batch_id is None
    True
    """
    if not named:
        raise ConfigError("no update files given")
    with tempfile.TemporaryDirectory(prefix="aspen-ingest-") as spill:
        inputs = []
        for index, (name, data) in enumerate(named):
            fmt = guess_format(name)
            spilled = read_data(data, fmt, Path(spill) / f"{index:06d}")
            inputs.append(_Input(FileReport(_text(name), _text(name), spilled.sha256), fmt,
                                 spilled))
        return _ingest_inputs(settings, inputs, wait, _Policy(data=True))


def _ingest_inputs(settings: Settings, inputs: list[_Input], wait: float,
                   policy: _Policy) -> IngestReport:
    for item in inputs:  # read and validated before the lease: it is held for writing only
        item.report.delivery = policy.delivery
    with LogWriterLease.reentrant(settings, _command(inputs), wait=wait) as lease:
        return _ingest(settings, inputs, policy, lease)


def _ingest(settings: Settings, inputs: list[_Input], policy: _Policy,
            lease: Lease) -> IngestReport:
    """The part of :func:`ingest_files` that holds the log writer lease."""
    committed = _committed(settings)
    batch_id = committed.last_batch + 1
    fresh = _fresh_inputs(inputs, committed, batch_id, policy)
    if not fresh:
        return IngestReport(None, [item.report for item in inputs])

    ingested_at = datetime.now(UTC)
    lease.check()
    _drop_uncommitted(settings, batch_id)
    seq, reading_id = committed.last_seq, _last_reading_id(settings)
    first_seq, first_reading = seq + 1, reading_id + 1
    file_rows: list[tuple[Any, ...]] = []
    for item in fresh:
        report, spilled = item.report, item.spilled
        report.batch_id = batch_id
        report.seq_start = seq + 1
        seq += spilled.valid
        report.seq_end = seq
        if spilled.readings:
            report.reading_start = reading_id + 1
            reading_id += spilled.readings
            report.reading_end = reading_id
        report.readings = spilled.readings
        report.valid = spilled.valid
        report.quarantined = spilled.quarantined
        report.blank = spilled.blank
        report.reasons = dict(spilled.reasons)
        file_rows.append((
            report.source, report.sha256, report.path, batch_id, report.seq_start, report.seq_end,
            report.valid, report.quarantined, report.blank, ingested_at, policy.delivery,
        ))

    appends: list[tuple[str, Iterable[pa.RecordBatch]]] = [
        (tables.UPDATES, _appended(tables.UPDATES, fresh, batch_id, first_seq, ingested_at)),
        (tables.QUARANTINE, _appended(tables.QUARANTINE, fresh, batch_id, 0, ingested_at)),
        (tables.INGEST_FILES, _arrow_rows(tables.INGEST_FILES, file_rows,
                                          added=True).to_batches()),  # the commit marker: last
    ]
    if reading_id >= first_reading:
        appends.insert(1, (tables.READINGS, _appended(tables.READINGS, fresh, batch_id,
                                                      first_reading, ingested_at)))
    for name, batches in appends:
        lease.check()  # a writer that lost the lease stops before its marker
        _append(settings, name, batches)
    return IngestReport(batch_id, [item.report for item in inputs])
