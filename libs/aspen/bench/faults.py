"""The fault campaign: the lake's writers killed anywhere, rerun, and the lake checked.

A campaign builds a small lake (a few links, sensors and regions), then runs **trials**. A
trial picks a phase — ``ingest``, ``apply``, ``maintain-local``, ``maintain-spark`` or
``expire`` — and a fault:

- ``kill``: the command runs as a process of its own (``python -m aspen.bench.faults --lake
  LAKE COMMAND…``: the library, as the jobs run it) and gets ``SIGKILL`` a random delay after
  it took its lease (apply takes it once its Spark session is up, the sweep at once — a small
  one starts no JVM —, ingest once it has validated its file — it starts no JVM —, so the kill
  lands in their work; maintain takes it before it starts its session);
- ``crash``: the command runs with ``ASPEN_CRASH_AT=<point>`` and ``ASPEN_CRASH_MODE=exit`` at a
  named crash point of that phase (:data:`CRASH_POINTS`), and dies there (``os._exit``); in
  process (the test's reduced campaign) the point raises
  :class:`~aspen.errors.InjectedCrash` instead.

Then the same command is run again to completion and the lake is checked
(:func:`check_lake`):

(a) the maintained views equal from-scratch evaluation (:func:`~aspen.pipeline.verify.verify_lake`);
(b) every record of every ingested file is in the ``updates`` log exactly once (by source and
    line, with its values), every rejected one in ``quarantine`` exactly once with a reason
    code; the log's sequence numbers have no gap and no repeat; every insert of an applied
    batch has exactly one variable ``v<seq>`` in the registry, and the base tables hold
    exactly the registry's live instances;
(c) the ledger is consistent: batches 1…K, each once, covering ingest batches in order; every
    table a batch wrote at the version the last ledger row recorded (nothing uncommitted left
    behind); no lease left held by a process that is gone.

The crash points of ``maintain`` are lines of :mod:`aspen.pipeline.maintain_local` and
:mod:`aspen.pipeline.maintain_spark`. Those of ``ingest``, ``apply`` and ``expire`` are not lines
of :mod:`aspen.lake` (which could name them: :mod:`aspen.crashpoints` sits below it);
:func:`lake_crash_points` installs them around the lake module's steps (after each table it
writes; on both the Spark and the in-process path of apply and the sweep), in the process that
runs the command (``python -m aspen.bench.faults --lake LAKE ARGV…``).

Corrupted inputs (:meth:`Campaign.corrupted_inputs`): update files truncated mid-record and
inside a UTF-8 character, a file of binary garbage and one with garbage between valid records
are ingested (the bad lines to quarantine with a reason code, the valid records to the log); a
Delta log entry torn mid-line on a base table and on a view makes the command fail in one
line naming the table (:mod:`aspen.pipeline.boundary`, the words of the CLI and the jobs),
and once the entry is restored the rerun completes with nothing lost.

>>> sorted(CRASH_POINTS)
['apply', 'expire', 'ingest', 'maintain-local', 'maintain-spark']
>>> command_argv("expire", "t.jsonl")
['expire', '--now', '2026-01-01T00:10:00Z']
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, redirect_stderr, redirect_stdout
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aspen.settings import Settings

__all__ = [
    "CRASH_POINTS",
    "PHASES",
    "TORN_TABLES",
    "Campaign",
    "CommandResult",
    "CorruptionCase",
    "FaultOutcome",
    "FileExpectation",
    "LakeCheck",
    "PlannedTrial",
    "TrialResult",
    "check_lake",
    "command_argv",
    "expectation_of",
    "initial_records",
    "lake_crash_points",
    "markdown_report",
    "plan_trials",
    "run_faulted",
    "run_in_process",
    "subprocess_env",
    "trial_lines",
    "write_csv",
    "write_lines",
]

#: The phases a trial can fault.
PHASES: tuple[str, ...] = ("ingest", "apply", "maintain-local", "maintain-spark", "expire")

#: The named crash points of each phase (``ASPEN_CRASH_AT``).
CRASH_POINTS: dict[str, tuple[str, ...]] = {
    "ingest": ("ingest:after-drop", "ingest:after-updates", "ingest:after-quarantine",
               "ingest:after-ingest_files"),
    "apply": ("apply:after-fold", "apply:after-merge-variables", "apply:after-merge-link",
              "apply:after-merge-triggered", "apply:after-apply_state"),
    "maintain-local": ("maintain:after-apply", "maintain:after-view-changes",
                       "maintain:after-view-reachable", "maintain:after-view-largest_regions",
                       "maintain:after-state", "maintain:after-metrics", "maintain:before-ledger",
                       "maintain:after-ledger"),
    "maintain-spark": ("maintain:after-apply", "maintain:after-round-1",
                       "maintain:after-view-changes", "maintain:after-state",
                       "maintain:before-ledger", "maintain:after-ledger"),
    "expire": ("expire:after-ingest_files", "expire:after-kill", "expire:after-apply_state"),
}

#: How often each phase is drawn (``maintain-spark`` only when the Spark runtime is asked for).
PHASE_WEIGHTS: dict[str, float] = {"ingest": 0.22, "apply": 0.2, "maintain-local": 0.26,
                                   "maintain-spark": 0.12, "expire": 0.2}

#: Query nodes of every maintained batch.
PARTITIONS = 2
#: The event time of the records with a TTL, and the time the sweep runs at: they are due.
TTL_EVENT_TIME = "2026-01-01T00:00:00Z"
SWEEP_AT = "2026-01-01T00:10:00Z"
#: Seconds after its lease that a killed command is killed at most, at first (per phase; a kill
#: that came after the command ended shortens it to what the command took).
KILL_WINDOW: dict[str, float] = {"ingest": 1.0, "apply": 20.0, "maintain-local": 25.0,
                                 "maintain-spark": 60.0, "expire": 25.0}
#: The shortest a kill window gets (ingest, without a JVM, holds its lease for well under a
#: second).
_SHORTEST_WINDOW = 0.2
#: The tables whose newest Delta log entry the corrupted-input cases tear, in order: the update
#: log (``aspen ingest``), a view (``aspen verify``), the registry (``aspen maintain``).
TORN_TABLES: tuple[str, ...] = ("updates", "reachable", "variables")
#: Exit code of a process that died at a crash point (``os._exit`` in aspen.crashpoints).
CRASH_EXIT = 75
#: Longest a faulted or rerun command may take, in seconds.
COMMAND_TIMEOUT = 900.0

NODES = tuple(f"n{i}" for i in range(8))
SENSORS = tuple(f"s{i}" for i in range(6))


def command_argv(phase: str, update_file: str | Path) -> list[str]:
    """The ``aspen`` arguments (after ``--lake``) of ``phase``; ``apply`` is the apply job.

    >>> command_argv("maintain-local", "t.jsonl")
    ['maintain', '--runtime', 'local', '--partitions', '2']
    """
    if phase == "ingest":
        return ["ingest", str(update_file)]
    if phase == "apply":
        return ["apply"]
    if phase in ("maintain-local", "maintain-spark"):
        return ["maintain", "--runtime", phase.split("-")[1], "--partitions", str(PARTITIONS)]
    if phase == "expire":
        return ["expire", "--now", SWEEP_AT]
    raise ValueError(f"unknown phase {phase!r}; phases are {', '.join(PHASES)}")


# -- crash points of the lake layer ------------------------------------------------------------


def _after(function: Callable[..., Any], point: Callable[..., str]) -> Callable[..., Any]:
    """``function``, then the crash point that ``point(*args)`` names."""
    from aspen.crashpoints import crash_point

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        crash_point(point(*args, **kwargs))
        return result

    wrapped.__wrapped__ = function  # type: ignore[attr-defined]
    return wrapped


@contextmanager
def lake_crash_points() -> Iterator[None]:
    """Install the crash points of ingest, apply and the TTL sweep for the ``with`` block: each
    fires (``ASPEN_CRASH_AT``) after the step it names, so ``ingest:after-updates`` dies with the
    log rows written and no commit marker.

    >>> with lake_crash_points():
    ...     from aspen.lake import ingest
    ...     hasattr(ingest._append, "__wrapped__")
    True
    """
    from aspen.lake import apply, apply_local, expire, expire_local, ingest

    table_of = {"updates": "updates", "quarantine": "quarantine", "ingest_files": "ingest_files",
                "apply_state": "apply_state"}
    patches: list[tuple[Any, str, Callable[..., str]]] = [
        (ingest, "_drop_uncommitted", lambda *a: "ingest:after-drop"),
        (ingest, "_append", lambda settings, name, rows: f"ingest:after-{table_of[name]}"),
        (apply, "checkpointed", lambda *a, **k: "apply:after-fold"),
        (apply, "_merge_registry", lambda *a: "apply:after-merge-variables"),
        (apply, "_merge_base", lambda spark, settings, relation, rows:
         f"apply:after-merge-{relation}"),
        (apply, "_merge_notes", lambda *a: "apply:after-merge-apply_notes"),
        (apply, "_apply_pending", lambda *a: "apply:after-apply_state"),
        (expire, "_append", lambda spark, settings, name, rows: f"expire:after-{table_of[name]}"),
        (expire, "_kill", lambda *a: "expire:after-kill"),
        # the same points on the in-process path (small backlogs and sweeps)
        (apply_local, "_fold", lambda *a: "apply:after-fold"),
        (apply_local, "_merge_registry", lambda *a: "apply:after-merge-variables"),
        (apply_local, "_merge_base", lambda settings, relation, rows:
         f"apply:after-merge-{relation}"),
        (apply_local, "_merge_notes", lambda *a: "apply:after-merge-apply_notes"),
        (apply_local, "_apply_pending", lambda *a: "apply:after-apply_state"),
        (expire_local, "_append", lambda settings, name, rows: f"expire:after-{table_of[name]}"),
        (expire_local, "_kill", lambda *a: "expire:after-kill"),
    ]
    saved = []
    for module, name, point in patches:
        original = getattr(module, name, None)
        if original is None:  # the lake module changed: say so rather than test nothing
            raise RuntimeError(f"{module.__name__}.{name} is gone: update the crash points of "
                               f"aspen.bench.faults")
        saved.append((module, name, original))
        setattr(module, name, _after(original, point))
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


# -- running a command --------------------------------------------------------------------------


@dataclass
class CommandResult:
    """How one command ended: exit code (negative: the signal that ended it), its output."""

    code: int
    stdout: str
    stderr: str
    seconds: float

    def aspen_lines(self) -> list[str]:
        """The lines of stderr that Aspen printed (``aspen CMD: …`` or ``apply: …``), not the
        JVM's log.

        >>> CommandResult(2, "", "WARN Utils: …\\naspen show: lake …\\n", 1.0).aspen_lines()
        ['aspen show: lake …']
        """
        return [line for line in self.stderr.splitlines()
                if line.startswith(("aspen ", "apply: "))]


def _dispatch(lake: str, argv: Sequence[str]) -> int:
    """Run the command ``ARGV`` (``ingest FILE…``, ``maintain …``, ``expire --now ISO``,
    ``verify``; ``apply``: the apply job) on ``lake`` in this process, through the library as
    its processes run it: its lines on stdout, an error as one line ``aspen CMD: …`` (the
    apply job's ``apply: …``) on stderr with exit code 2."""
    from aspen.pipeline.entry import lake_settings, run_entry

    command, rest = (argv[0], list(argv[1:])) if argv else ("", [])
    if command == "apply":
        from aspen.lake.apply import apply_pending
        from aspen.spark.job import run_lake_job

        return run_lake_job("apply", argparse.Namespace(lake=lake),
                            lambda spark, settings: apply_pending(spark, settings).lines())
    if command == "maintain":
        from aspen.pipeline.maintainer_main import main

        return main(["--lake", lake, *rest])

    def work() -> int:
        settings = lake_settings(lake)
        if command == "ingest":
            from aspen.lake.ingest import check_inputs, ingest_files

            check_inputs(rest)  # a missing file fails in one line, before the lake is read
            lines = ingest_files(settings, rest).lines()
        elif command == "expire" and rest[:1] == ["--now"] and len(rest) == 2:
            from aspen.pipeline.sweep import sweep

            lines = sweep(settings, rest[1]).lines()
        elif command == "verify" and not rest:
            from aspen.pipeline.integrity import explained
            from aspen.pipeline.verify import verify_lake

            with explained(settings):  # a damaged lake: one line naming it and the remedy
                result = verify_lake(settings)
            for line in result.lines(10):
                print(line)
            return 0 if result.ok else 1
        else:
            raise ValueError(f"not a command of the campaign: {' '.join(argv)!r}")
        for line in lines:
            print(line)
        return 0

    return run_entry(f"aspen {command}", work, lake)


@contextmanager
def _session_conf_kept(spark: Any) -> Iterator[None]:
    """Put back the SQL conf that a command's ``get_spark`` sets on the shared session."""
    if spark is None:
        yield
        return
    from aspen.spark.session import SMALL_MACHINE_CONF

    keys = [k for k in SMALL_MACHINE_CONF if spark.conf.isModifiable(k)]
    before = {k: spark.conf.get(k, None) for k in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def run_in_process(lake: str, argv: Sequence[str], spark: Any = None,
                   crash_at: str | None = None) -> CommandResult:
    """Run a command in this process (its Spark session: the running one), output captured;
    ``crash_at`` names a crash point that raises there (with the lake's crash points installed).
    An exception the command lets through (a bug) is exit code 1 with its traceback on stderr.

    >>> run_in_process("/tmp/lake", ["maintain", "--hosts", "2"]).stderr.strip()
    'aspen maintain: --hosts applies to --runtime spark only'
    """
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    saved = {name: os.environ.pop(name, None) for name in ("ASPEN_CRASH_AT", "ASPEN_CRASH_MODE")}
    if crash_at is not None:
        os.environ["ASPEN_CRASH_AT"] = crash_at
    try:
        with (lake_crash_points() if crash_at else nullcontext()), _session_conf_kept(spark), \
                redirect_stdout(out), redirect_stderr(err):
            try:
                code = _dispatch(lake, argv)
            except SystemExit as exit_info:
                code = exit_info.code if isinstance(exit_info.code, int) else 2
            except Exception:  # noqa: BLE001 - a bug: recorded with its traceback
                traceback.print_exc()
                code = 1
    finally:
        os.environ.pop("ASPEN_CRASH_AT", None)
        for name, value in saved.items():
            if value is not None:
                os.environ[name] = value
    return CommandResult(code, out.getvalue(), err.getvalue(), time.perf_counter() - started)


def subprocess_env(spark_conf_dir: str | None = None) -> dict[str, str]:
    """The environment of a command run as a process: this one's, without a Spark gateway of
    this process or a crash point, with this interpreter as Spark's Python.

    >>> "ASPEN_CRASH_AT" in subprocess_env()
    False
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_GATEWAY", "ASPEN_CRASH_"))}
    venv_bin = str(Path(sys.executable).parent)
    env.update(PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}", PYSPARK_PYTHON=sys.executable,
               PYARROW_IGNORE_TIMEZONE="1")
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    if spark_conf_dir is not None:
        env["SPARK_CONF_DIR"] = spark_conf_dir
    return env


def _process_argv(lake: str, argv: Sequence[str]) -> list[str]:
    """The command line of a command as a process: this module, which runs it through the
    library (:func:`_dispatch`) with the lake's crash points installed (they fire only where
    ``ASPEN_CRASH_AT`` names one)."""
    return [sys.executable, "-m", "aspen.bench.faults", "--lake", lake, *argv]


def _lease_pid(settings: Settings, phase: str) -> int | None:
    """The pid of the holder of the lease the phase's command takes first (None: not held)."""
    from aspen.lake.lease import current_holder, log_writer

    try:
        row = log_writer(settings) if phase == "ingest" else current_holder(settings)
    except Exception:  # noqa: BLE001 - a lease table being written: look again
        return None
    return None if row is None or row.released else row.pid


def _end_group(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """Wait for the process group of ``process`` (its JVM, its Spark workers) to end once the
    process is gone, then kill what is left of it (the group this campaign started)."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass
class FaultOutcome:
    """What a faulted command run did."""

    fired: bool          # the fault happened before the command ended by itself
    code: int | None     # its exit code (negative: the signal)
    where: str           # the crash point, or the kill's delay after the lease
    seconds: float
    note: str = ""
    #: Seconds from the lease to the end of a command that ended before its kill.
    work_seconds: float | None = None


def run_faulted(settings: Settings, phase: str, argv: Sequence[str], fault: str, *,
                point: str | None = None, kill_after: float = 0.0, env: dict[str, str],
                log_stem: Path) -> FaultOutcome:
    """Run the command of ``phase`` as a process with ``fault``: ``crash`` at ``point``
    (``ASPEN_CRASH_MODE=exit``), or ``kill``: ``SIGKILL`` ``kill_after`` seconds after it holds
    its lease. Its output goes to ``log_stem``.out/.err. Returns once the process and its JVM
    are gone.

    Example, on a lake::

        run_faulted(settings, "ingest", ["ingest", "t.jsonl"], "kill", kill_after=2.0,
                    env=subprocess_env(), log_stem=Path("logs/t01"))
        # FaultOutcome(fired=True, code=-9, where='2.00 s after lease', ...)
    """
    env = dict(env)
    if fault == "crash":
        assert point is not None
        env.update(ASPEN_CRASH_AT=point, ASPEN_CRASH_MODE="exit")
    command = _process_argv(settings.lake, argv)
    log_stem.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(f"{log_stem}.out", "wb") as out, open(f"{log_stem}.err", "wb") as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            if fault == "crash":
                code = process.wait(timeout=COMMAND_TIMEOUT)
                outcome = FaultOutcome(code == CRASH_EXIT, code, str(point),
                                       time.monotonic() - started)
            else:
                outcome = _kill_after_lease(settings, phase, process, kill_after, started)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()  # reaped: a zombie would still count as alive to the lease
            _end_group(process)
    if not outcome.fired and outcome.code not in (0, None):
        outcome.note = f"exited {outcome.code} by itself: " + _tail(Path(f"{log_stem}.err"))
    elif fault == "crash" and not outcome.fired:
        outcome.note = "crash point not reached"
    elif fault == "kill" and not outcome.fired:
        outcome.note = "ended before the kill"
    return outcome


def _kill_after_lease(settings: Settings, phase: str, process: subprocess.Popen[bytes],
                      delay: float, started: float) -> FaultOutcome:
    """Kill ``process`` ``delay`` seconds after it holds its lease (apply takes it once its
    Spark session is up, the sweep at once, ingest after validating; maintain just before it
    starts its session)."""
    where = f"{delay:.2f} s after lease"
    deadline = started + COMMAND_TIMEOUT
    while _lease_pid(settings, phase) != process.pid:
        if process.poll() is not None:
            return FaultOutcome(False, process.returncode, where, time.monotonic() - started,
                                "ended before it held the lease")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {phase} process never took its lease")
        time.sleep(0.1)
    leased = time.monotonic()
    while time.monotonic() < leased + delay:
        if process.poll() is not None:
            return FaultOutcome(False, process.returncode, where, time.monotonic() - started,
                                work_seconds=time.monotonic() - leased)
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    code = process.wait()
    return FaultOutcome(True, code, where, time.monotonic() - started)


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])[:300]


# -- update files --------------------------------------------------------------------------------


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def initial_records(rng: random.Random) -> list[dict[str, Any]]:
    """The first file: links among :data:`NODES`, sensors 10 m apart, triggers, two regions.

    >>> len(initial_records(random.Random(1))) > 20
    True
    """
    pairs = sorted({tuple(rng.sample(NODES, 2)) for _ in range(14)})
    records: list[dict[str, Any]] = [
        {"op": "insert", "relation": "link", "src": a, "dst": b, "cost": float(rng.randint(1, 4))}
        for a, b in pairs]
    records += [{"op": "insert", "relation": "sensor", "id": s, "x": 10.0 * i, "y": 0.0}
                for i, s in enumerate(SENSORS)]
    records += [{"op": "insert", "relation": "triggered", "id": s} for s in SENSORS[:5]]
    records += [{"op": "insert", "relation": "region_seed", "region": "r1", "id": "s0"},
                {"op": "insert", "relation": "region_seed", "region": "r2", "id": "s4"}]
    return records


def trial_lines(rng: random.Random, trial: int, with_ttl: bool) -> list[str]:
    """One trial's update file: link deletions and insertions (with a TTL that the sweep at
    :data:`SWEEP_AT` finds due when ``with_ttl``), a trigger toggled, and one invalid record.

    >>> lines = trial_lines(random.Random(3), 7, with_ttl=True)
    >>> any('"ttl_s"' in line for line in lines), sum('"cost":-1' in line for line in lines)
    (True, 1)
    """
    records: list[dict[str, Any]] = []
    for _ in range(2):
        a, b = rng.sample(NODES, 2)
        records.append({"op": "delete", "relation": "link", "src": a, "dst": b})
    for number in range(3):
        a, b = rng.sample(NODES, 2)
        record: dict[str, Any] = {"op": "insert", "relation": "link", "src": a, "dst": b,
                                  "cost": float(rng.randint(1, 4))}
        if with_ttl and number == 0 or rng.random() < 0.2:
            record.update(ttl_s=60.0, event_time=TTL_EVENT_TIME)
        records.append(record)
    sensor = rng.choice(SENSORS[1:])
    records.append({"op": rng.choice(["insert", "delete"]), "relation": "triggered", "id": sensor})
    lines = [_line(r) for r in records]
    bad = _line({"op": "insert", "relation": "link", "src": f"bad{trial}", "dst": "n0",
                 "cost": -1})
    lines.insert(rng.randrange(len(lines) + 1), bad)
    return lines


def write_lines(path: Path, lines: Sequence[str]) -> Path:
    """Write ``lines`` as a text file, one per line; returns ``path``.

    >>> import tempfile
    >>> write_lines(Path(tempfile.mkdtemp()) / "a.jsonl", ["x", "y"]).read_text()
    'x\\ny\\n'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


# -- what the lake must hold ---------------------------------------------------------------------


@dataclass
class FileExpectation:
    """An ingested file: its valid records by line (the log's values) and its rejections."""

    source: str
    sha256: str
    records: dict[int, tuple[Any, ...]]
    rejections: dict[int, str]


def expectation_of(path: Path) -> FileExpectation:
    """What ingesting ``path`` must leave in the lake, from the validator's reading of it.

    >>> import tempfile
    >>> p = write_lines(Path(tempfile.mkdtemp()) / "a.jsonl",
    ...                 ['{"op":"delete","relation":"triggered","id":"s1"}', '{"op":1}'])
    >>> e = expectation_of(p)
    >>> e.records, e.rejections
    ({1: ('delete', 'triggered', None, None, None, 's1', None, None, None)}, {2: 'missing_field'})
    """
    from aspen.lake.ingest import guess_format
    from aspen.lake.validation import validate_file

    data = path.read_bytes()
    checked = validate_file(data, guess_format(path))
    records = {line: _record_values(record.__dict__) for line, record in checked.records}
    rejections = {rejection.line: rejection.code for rejection in checked.rejections}
    return FileExpectation(path.name, hashlib.sha256(data).hexdigest(), records, rejections)


_VALUE_FIELDS = ("op", "relation", "src", "dst", "cost", "id", "x", "y", "region")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _record_values(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(None if _missing(row.get(name)) else row.get(name) for name in _VALUE_FIELDS)


@dataclass
class LakeCheck:
    """The checks of one lake state; ``lost`` and ``doubled`` count records, variables and
    instances; ``mismatches`` view tuples; ``problems`` the ledger's and the rest."""

    lost: int = 0
    doubled: int = 0
    mismatches: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.doubled or self.mismatches or self.problems)

    def lose(self, count: int, what: str) -> None:
        if count:
            self.lost += count
            self.notes.append(f"lost {count} {what}")

    def double(self, count: int, what: str) -> None:
        if count:
            self.doubled += count
            self.notes.append(f"doubled {count} {what}")


def _frame(settings: Settings, name: str) -> Any:
    import pandas as pd

    from aspen.lake.deltars import read_table, table_exists

    return read_table(settings, name) if table_exists(settings, name) else pd.DataFrame()


def _check_log(settings: Settings, files: Sequence[FileExpectation], check: LakeCheck) -> int:
    """(b) for the update log and the quarantine; returns the last applied ingest batch."""
    files_table = _frame(settings, "ingest_files")
    updates = _frame(settings, "updates")
    quarantine = _frame(settings, "quarantine")
    committed = set(files_table["batch_id"]) if len(files_table) else set()
    if len(updates):
        leftovers = int((~updates["batch_id"].isin(committed)).sum())
        if leftovers:  # invisible to apply; the next ingest deletes them
            check.notes.append(f"{leftovers} uncommitted log row(s) left")
        updates = updates[updates["batch_id"].isin(committed)]
    if len(quarantine):
        quarantine = quarantine[quarantine["batch_id"].isin(committed)]

    seen = Counter(zip(files_table.get("source", []), files_table.get("sha256", []), strict=True))
    for expected in files:
        count = seen.get((expected.source, expected.sha256), 0)
        check.lose(int(count == 0), f"ingest_files row of {expected.source}")
        check.double(max(0, count - 1), f"ingest_files rows of {expected.source}")

    known = {f.source: f for f in files}
    logged: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
    for row in updates.to_dict("records") if len(updates) else []:
        logged.setdefault((row["source"], int(row["line"])), []).append(_record_values(row))
    for expected in files:
        for line, values in expected.records.items():
            rows = logged.pop((expected.source, line), [])
            check.lose(int(not rows), f"record {expected.source}:{line}")
            check.double(max(0, len(rows) - 1), f"copies of {expected.source}:{line}")
            if rows and rows[0] != values:
                check.problems.append(f"{expected.source}:{line} logged as {rows[0]}, not "
                                      f"{values}")
    strays = sum(len(rows) for (source, _), rows in logged.items() if source in known)
    check.double(strays, "log rows of no valid record")
    unknown = sum(len(rows) for (source, _), rows in logged.items() if source not in known)
    check.double(unknown, "log rows of files never ingested")

    rejected = Counter(zip(quarantine.get("source", []), quarantine.get("line", []),
                           strict=True)) if len(quarantine) else Counter()
    codes = {(r["source"], int(r["line"])): r["code"] for r in quarantine.to_dict("records")} \
        if len(quarantine) else {}
    from aspen.lake.validation import REASON_CODES

    for expected in files:
        for line, code in expected.rejections.items():
            count = rejected.get((expected.source, line), 0)
            check.lose(int(count == 0), f"quarantined record {expected.source}:{line}")
            check.double(max(0, count - 1), f"quarantine copies of {expected.source}:{line}")
            got = codes.get((expected.source, line))
            if count and (got != code or got not in REASON_CODES):
                check.problems.append(f"{expected.source}:{line} quarantined as {got!r}, not "
                                      f"{code!r}")

    seqs = Counter(int(s) for s in updates["seq"]) if len(updates) else Counter()
    check.double(sum(n - 1 for n in seqs.values() if n > 1), "repeated seq numbers")
    ranges = set()
    for row in files_table.to_dict("records") if len(files_table) else []:
        ranges.update(range(int(row["seq_start"]), int(row["seq_end"]) + 1))
    check.lose(len(ranges - set(seqs)), "seq numbers of committed files")
    if seqs and set(seqs) != set(range(1, max(seqs) + 1)):
        check.problems.append("the log's seq numbers have gaps")

    state = _frame(settings, "apply_state")
    applied = [int(b) for b in state["batch_id"]] if len(state) else []
    if len(applied) != len(set(applied)):
        check.problems.append("an ingest batch was applied twice (apply_state)")
    return max(applied, default=0)


def _check_registry(settings: Settings, applied: int, check: LakeCheck) -> None:
    """(b) for the variable registry and the base tables."""
    from aspen.lake.tables import BASE_TABLES

    variables = _frame(settings, "variables")
    updates = _frame(settings, "updates")
    if not len(variables):
        return
    files_table = _frame(settings, "ingest_files")
    committed = set(files_table["batch_id"])
    inserts = updates[(updates["op"] == "insert") & (updates["batch_id"] <= applied)
                      & updates["batch_id"].isin(committed)]
    counts = Counter(variables["var"])
    check.double(sum(n - 1 for n in counts.values() if n > 1), "variable ids handed out twice")
    expected_vars = {f"v{int(s)}": r for s, r in zip(inserts["seq"], inserts["relation"],
                                                     strict=True)}
    check.lose(len(set(expected_vars) - set(counts)), "variables of applied inserts")
    check.double(len(set(counts) - set(expected_vars)), "variables of no applied insert")
    relations = dict(zip(variables["var"], variables["relation"], strict=True))
    wrong = [v for v, r in expected_vars.items() if v in relations and relations[v] != r]
    if wrong:
        check.problems.append(f"{len(wrong)} variable(s) of another relation than their insert")
    alive = variables[variables["deleted_batch"].isna()]
    for relation in BASE_TABLES:
        base = _frame(settings, relation)
        held = Counter(base["var"]) if len(base) else Counter()
        check.double(sum(n - 1 for n in held.values() if n > 1), f"{relation} instances")
        live = set(alive[alive["relation"] == relation]["var"])
        check.lose(len(live - set(held)), f"live {relation} instances missing from {relation}")
        check.double(len(set(held) - live), f"dead {relation} instances left in {relation}")


def _check_ledger(settings: Settings, applied: int, check: LakeCheck) -> None:
    """(c): the ledger, the tables it governs, the leases."""
    from datetime import UTC, datetime

    from aspen.lake.committed import committed_versions
    from aspen.lake.deltars import table_version_or_none
    from aspen.lake.lease import current_holder, log_writer

    frame = _frame(settings, "ledger")
    if len(frame):
        batches = sorted(int(b) for b in frame["batch_id"])
        if batches != list(range(1, len(batches) + 1)):
            check.problems.append(f"ledger batches {batches} are not 1…{len(batches)} once each")
        through = [int(t) for t in frame.sort_values("batch_id")["through_ingest_batch"]]
        if through != sorted(through):
            check.problems.append("the ledger's ingest batches go backwards")
        if through and through[-1] > applied:
            check.problems.append(f"the ledger covers ingest batch {through[-1]}, applied "
                                  f"{applied}")
        for name, version in sorted(committed_versions(settings).items()):
            latest = table_version_or_none(settings, name)
            if latest != version:
                check.problems.append(f"table {name} at version {latest}, committed {version}")
        last = frame.sort_values("batch_id").iloc[-1]
        if last["runtime"] == "local":
            states = _frame(settings, "engine_state")
            if not len(states) or min(states["batch_id"]) > int(last["batch_id"]):
                check.problems.append(f"no engine state at or before committed batch "
                                      f"{last['batch_id']}")
    now = datetime.now(UTC)
    for kind, row in (("maintainer", current_holder(settings)), ("log writer",
                                                                 log_writer(settings))):
        if row is not None and row.is_live(now):
            check.problems.append(f"the {kind} lease is still held by {row.describe()}")


def check_lake(settings: Settings, files: Sequence[FileExpectation],
               verify: bool = True) -> LakeCheck:
    """Checks (a), (b) and (c) of the module docstring over the lake at ``settings``, for the
    ingested ``files``; no Spark (delta-rs reads).

    Example, on a lake::

        check_lake(settings, [expectation_of(Path("t01.jsonl"))]).ok
        # True
    """
    check = LakeCheck()
    applied = _check_log(settings, files, check)
    _check_registry(settings, applied, check)
    _check_ledger(settings, applied, check)
    if verify and len(_frame(settings, "ledger")):  # (a) once a batch is maintained
        from aspen.pipeline.verify import verify_lake

        result = verify_lake(settings)
        check.mismatches = sum(len(v) for v in result.missing.values()) + sum(
            len(v) for v in result.extra.values())
        if check.mismatches:
            check.notes.append("views differ: " + "; ".join(
                line.strip() for line in result.lines(show=2) if "MISMATCH" in line))
    return check


# -- the campaign --------------------------------------------------------------------------------


@dataclass
class TrialResult:
    """One row of the campaign's table."""

    trial: int
    phase: str
    fault: str
    where: str
    fired: bool
    exit_code: int | None
    rerun_ok: bool
    lost: int
    doubled: int
    mismatches: int
    ledger_ok: bool
    seconds: float
    notes: str = ""
    #: Seconds of the faulted run, of the rerun and of the checks (the rest: the trial's file).
    fault_seconds: float = 0.0
    rerun_seconds: float = 0.0
    check_seconds: float = 0.0


@dataclass
class CorruptionCase:
    """One corrupted-input case: what was done, what happened, whether that was right."""

    case: str
    outcome: str
    ok: bool


@dataclass
class PlannedTrial:
    """A trial drawn in advance: phase, fault, and the crash point or the kill's fraction of
    its window."""

    phase: str
    fault: str
    point: str | None = None
    fraction: float = 0.0


def plan_trials(trials: int, seed: int, runtimes: Sequence[str]) -> list[PlannedTrial]:
    """Draw ``trials`` trials (phases by :data:`PHASE_WEIGHTS`, ``maintain-spark`` only with the
    ``spark`` runtime; kill or crash alike).

    >>> [t.phase for t in plan_trials(3, 1, ["local"])]
    ['ingest', 'maintain-local', 'ingest']
    """
    rng = random.Random(seed)
    phases = [p for p in PHASES if p != "maintain-spark" or "spark" in runtimes]
    if "local" not in runtimes:
        phases = [p for p in phases if p != "maintain-local"]
    weights = [PHASE_WEIGHTS[p] for p in phases]
    planned = []
    for _ in range(trials):
        phase = rng.choices(phases, weights)[0]
        fault = rng.choice(["kill", "crash"])
        planned.append(PlannedTrial(phase, fault, rng.choice(CRASH_POINTS[phase]),
                                    rng.random()))
        if fault == "kill":
            planned[-1].point = None
    return planned


class Campaign:
    """A lake under ``root`` and the trials run on it (see the module docstring).

    ``spark`` is this process's session: setting-up steps and, unless ``subprocess_reruns``,
    the reruns run in it (the faulted runs are processes of their own, except with
    :meth:`trial` ``in_process``).

    Example, on a lake::

        campaign = Campaign(Path("results/faults"), spark, seed=1)
        campaign.setup()
        campaign.trial(1, PlannedTrial("ingest", "crash", "ingest:after-updates")).lost
        # 0
    """

    def __init__(self, root: Path, spark: Any, seed: int = 0,
                 env: dict[str, str] | None = None, subprocess_reruns: bool = False,
                 emit: Callable[[str], None] = lambda line: None) -> None:
        self.root = root
        self.spark = spark
        self.rng = random.Random(seed)
        self.settings = Settings(lake=str(root / "lake"))
        self.inputs = root / "inputs"
        self.logs = root / "logs"
        self.env = env if env is not None else subprocess_env()
        self.subprocess_reruns = subprocess_reruns
        self.emit = emit
        self.files: list[FileExpectation] = []
        self.window = dict(KILL_WINDOW)
        self.results: list[TrialResult] = []
        self.corruption: list[CorruptionCase] = []

    # the lake's steps, clean
    def _ingest(self, path: Path) -> None:
        from aspen.lake.ingest import ingest_files

        ingest_files(self.settings, [path])
        self.files.append(expectation_of(path))

    def setup(self, maintain: bool = True) -> None:
        """The first file, ingested and (``maintain``) maintained on the local runtime."""
        from aspen.pipeline.maintain_local import maintain_local

        path = write_lines(self.inputs / "t00-initial.jsonl",
                           [_line(r) for r in initial_records(self.rng)])
        self._ingest(path)
        if maintain:
            maintain_local(self.settings, spark=self.spark, partitions=PARTITIONS)

    def _rerun(self, argv: Sequence[str], log_stem: Path) -> CommandResult:
        if not self.subprocess_reruns:
            return run_in_process(self.settings.lake, argv, spark=self.spark)
        started = time.perf_counter()
        result = subprocess.run(_process_argv(self.settings.lake, argv),
                                env=self.env, capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL)
        Path(f"{log_stem}.rerun.err").write_text(result.stderr)
        return CommandResult(result.returncode, result.stdout, result.stderr,
                             time.perf_counter() - started)

    def trial(self, number: int, planned: PlannedTrial, in_process: bool = False) -> TrialResult:
        """Run one trial: its update file (ingested first, unless the phase is ingest), the
        faulted command, the rerun, the checks; the row is kept in :attr:`results`.
        ``in_process``: the fault is a crash point that raises, in this process."""
        started = time.perf_counter()
        phase = planned.phase
        path = write_lines(self.inputs / f"t{number:02d}-{phase}.jsonl",
                           trial_lines(self.rng, number, with_ttl=phase == "expire"))
        if phase != "ingest":
            self._ingest(path)
        argv = command_argv(phase, path)
        stem = self.logs / f"t{number:02d}-{phase}"
        if in_process:
            assert planned.point is not None, "an in-process fault is a crash point"
            result = run_in_process(self.settings.lake, argv, spark=self.spark,
                                    crash_at=planned.point)
            fired = "crash injected at" in result.stderr
            outcome = FaultOutcome(fired, result.code, planned.point, result.seconds,
                                   "" if fired or result.code == 0 else result.stderr[-300:])
            if not fired and result.code == 0:
                outcome.note = "crash point not reached"
        else:
            outcome = run_faulted(self.settings, phase, argv, planned.fault,
                                  point=planned.point,
                                  kill_after=planned.fraction * self.window[phase],
                                  env=self.env, log_stem=stem)
            if outcome.work_seconds is not None:  # the work took this long: kill sooner
                self.window[phase] = max(_SHORTEST_WINDOW, outcome.work_seconds)
        rerun = self._rerun(argv, stem)
        rerun_ok = rerun.code == 0
        if phase == "ingest" and rerun_ok:
            self.files.append(expectation_of(path))
        checked_at = time.perf_counter()
        check = check_lake(self.settings, self.files)
        check_seconds = time.perf_counter() - checked_at
        notes = [outcome.note] if outcome.note else []
        if not rerun_ok:
            notes.append(f"rerun exited {rerun.code}: {(rerun.stderr.strip() or '?')[-300:]}")
        notes += check.notes + check.problems
        row = TrialResult(number, phase, "crash" if in_process else planned.fault, outcome.where,
                          outcome.fired, outcome.code, rerun_ok, check.lost, check.doubled,
                          check.mismatches, not check.problems, time.perf_counter() - started,
                          "; ".join(notes), outcome.seconds, rerun.seconds, check_seconds)
        self.results.append(row)
        self.emit(_row_line(row))
        return row

    def finish(self) -> TrialResult:
        """A last clean ``maintain`` (local) and the checks: the lake after every trial."""
        started = time.perf_counter()
        result = run_in_process(self.settings.lake, command_argv("maintain-local", ""),
                                spark=self.spark)
        check = check_lake(self.settings, self.files)
        row = TrialResult(0, "final maintain", "none", "", False, None, result.code == 0,
                          check.lost, check.doubled, check.mismatches, not check.problems,
                          time.perf_counter() - started, "; ".join(check.notes + check.problems))
        self.emit(_row_line(row))
        return row

    # corrupted inputs
    def corrupted_inputs(self, as_processes: bool = True,
                         torn: Sequence[str] = TORN_TABLES) -> list[CorruptionCase]:
        """The corrupted-input cases (module docstring), with a torn log entry on each of the
        tables ``torn`` (of :data:`TORN_TABLES`). The commands that must fail run as ``aspen``
        processes (``as_processes``) or in this process; the others in this process. Returns
        (and keeps in :attr:`corruption`) one case each."""
        self._bad_files()
        self._torn_logs(as_processes, torn)
        return self.corruption

    def _command(self, argv: Sequence[str], as_process: bool, name: str) -> CommandResult:
        if not as_process:
            return run_in_process(self.settings.lake, argv, spark=self.spark)
        started = time.perf_counter()
        result = subprocess.run(_process_argv(self.settings.lake, argv),
                                env=self.env, capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL)
        self.logs.mkdir(parents=True, exist_ok=True)
        (self.logs / f"{name}.err").write_text(result.stderr)
        return CommandResult(result.returncode, result.stdout, result.stderr,
                             time.perf_counter() - started)

    def _case(self, case: str, outcome: str, ok: bool) -> None:
        self.corruption.append(CorruptionCase(case, outcome, ok))
        self.emit(f"{'ok  ' if ok else 'FAIL'} {case}: {outcome}")

    def _bad_files(self) -> None:
        chain = [_line({"op": "insert", "relation": "link", "src": f"c{i}", "dst": f"c{i + 1}",
                        "cost": 1.0}) for i in range(5)]
        text = "".join(f"{line}\n" for line in chain)
        cut = text.index(chain[4]) + len(chain[4]) // 2  # inside the fifth record
        truncated = self.inputs / "truncated.jsonl"
        truncated.write_bytes(text[:cut].encode())
        accent = [_line({"op": "insert", "relation": "sensor", "id": f"capteur-{i}", "x": 5.0,
                         "y": 9.0}) for i in range(2)] + [
            _line({"op": "insert", "relation": "sensor", "id": "capteur-é", "x": 5.0, "y": 9.0})]
        data = "".join(f"{line}\n" for line in accent).encode()
        in_char = data.index("é".encode()) + 1  # between the two bytes of é
        torn_char = self.inputs / "truncated-utf8.jsonl"
        torn_char.write_bytes(data[:in_char])
        noise = random.Random(self.rng.random())
        garbage = self.inputs / "garbage.jsonl"
        garbage.write_bytes(bytes(noise.randrange(256) for _ in range(4096)))
        junk = bytes(b for b in (noise.randrange(256) for _ in range(512)) if b not in b"\r\n")
        first = _line({"op": "insert", "relation": "triggered", "id": "s9"})
        last = _line({"op": "delete", "relation": "triggered", "id": "s9"})
        mixed = self.inputs / "garbage-between.jsonl"
        mixed.write_bytes(first.encode() + b"\n" + junk + b"\n" + last.encode() + b"\n")
        paths = [truncated, torn_char, garbage, mixed]
        result = self._command(["ingest", *map(str, paths)], False, "bad-files")
        if result.code != 0:
            self._case("truncated and garbage update files", f"ingest exited {result.code}: "
                       f"{result.stderr.strip()[-300:]}", False)
            return
        expected = {p.name: expectation_of(p) for p in paths}
        self.files += expected.values()
        check = check_lake(self.settings, self.files, verify=False)
        quarantine = _frame(self.settings, "quarantine")
        codes = {(r["source"], int(r["line"])): r["code"] for r in quarantine.to_dict("records")}
        garbage_lines = _non_blank_lines(garbage.read_bytes())
        cases = [
            ("update file truncated mid-record",
             len(expected[truncated.name].records) == 4
             and codes.get((truncated.name, 5)) == "malformed_json",
             f"4 valid records ingested, line 5 quarantined as "
             f"{codes.get((truncated.name, 5))}"),
            ("update file truncated inside a UTF-8 character",
             len(expected[torn_char.name].records) == 2
             and codes.get((torn_char.name, 3)) == "bad_encoding",
             f"2 valid records ingested, line 3 quarantined as "
             f"{codes.get((torn_char.name, 3))}"),
            ("file of binary garbage",
             not expected[garbage.name].records
             and sorted(expected[garbage.name].rejections) == garbage_lines
             and all((garbage.name, line) in codes for line in garbage_lines),
             f"{len(expected[garbage.name].rejections)} line(s) quarantined ("
             + ", ".join(f"{c} {n}" for c, n in sorted(Counter(
                 expected[garbage.name].rejections.values()).items())) + "), 0 valid"),
            ("garbage between two valid records",
             sorted(expected[mixed.name].records) == [1, 3] and (mixed.name, 2) in codes,
             f"lines 1 and 3 ingested, line 2 quarantined as {codes.get((mixed.name, 2))}"),
        ]
        for case, ok, outcome in cases:
            self._case(case, f"{outcome}; lost {check.lost}, doubled {check.doubled}",
                       ok and check.lost == 0 and check.doubled == 0)

    def _torn_logs(self, as_process: bool, torn: Sequence[str]) -> None:
        """A torn entry on the update log (``ingest``), on a view (``verify``) and on the
        registry (``maintain``, with the bad files' batch to apply): each command fails in one
        line naming the table; the entry restored, its rerun completes and the lake is checked
        (nothing lost, views equal, ledger consistent)."""
        late = write_lines(self.inputs / "torn-updates.jsonl", trial_lines(self.rng, 90, False))
        steps = [("updates", "update log", ["ingest", str(late)], late),
                 ("reachable", "view", ["verify"], None),
                 ("variables", "base table", command_argv("maintain-local", ""), None)]
        for table, kind, argv, ingested in steps:
            if table not in torn:
                continue
            entry, original = _tear(self.settings, table)
            failed = self._command(argv, as_process, f"torn-{table}")
            lines = failed.aspen_lines()
            one_line = (failed.code == 2 and len(lines) == 1 and "Traceback" not in failed.stderr
                        and f"table '{table}'" in lines[0])
            entry.write_bytes(original)
            rerun = self._command(argv, False, f"torn-{table}-rerun")
            if ingested is not None and rerun.code == 0:
                self.files.append(expectation_of(ingested))
            check = check_lake(self.settings, self.files)
            shown = lines[0] if lines else failed.stderr.strip()[-200:]
            ledger = "ok" if not check.problems else "; ".join(check.problems)
            self._case(f"Delta log entry of `{table}` ({kind}) torn mid-line, `aspen {argv[0]}`",
                       f"exit {failed.code}, {len(lines)} line: {shown}; restored, rerun exit "
                       f"{rerun.code}; lost {check.lost}, doubled {check.doubled}, "
                       f"{check.mismatches} mismatches, ledger {ledger}",
                       one_line and rerun.code == 0 and check.ok)


def _non_blank_lines(data: bytes) -> list[int]:
    """The numbers of the lines of ``data`` that are not blank (a line that is not UTF-8 is
    not blank), counted without the validator.

    >>> _non_blank_lines(b"a\\n \\n\\xff\\n")
    [1, 3]
    """
    chunks = data.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    out = []
    for number, chunk in enumerate(chunks, 1):
        try:
            blank = not chunk.decode("utf-8").strip()
        except UnicodeDecodeError:
            blank = False
        if not blank:
            out.append(number)
    return out


def _local_path(uri: str) -> Path:
    """The folder of a ``file://`` table URI (the campaign's lake is local).

    >>> _local_path("file:///tmp/my%20lake/updates")
    PosixPath('/tmp/my lake/updates')
    """
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path))


def _tear(settings: Settings, table: str) -> tuple[Path, bytes]:
    """Cut the newest Delta log entry of ``table`` in the middle of its second line, as a write
    interrupted there leaves it; returns the entry and its bytes (to restore)."""
    folder = _local_path(settings.table_uri(table)) / "_delta_log"
    entry = sorted(folder.glob("[0-9]" * 20 + ".json"))[-1]
    original = entry.read_bytes()
    lines = original.splitlines(keepends=True)
    keep = len(lines[0]) + len(lines[1]) // 2 if len(lines) > 1 else len(original) // 2
    entry.write_bytes(original[:keep])
    return entry, original


# -- the report ---------------------------------------------------------------------------------


_COLUMNS = ("trial", "phase", "fault", "where", "fired", "exit_code", "rerun_ok", "lost",
            "doubled", "mismatches", "ledger_ok", "seconds", "notes", "fault_seconds",
            "rerun_seconds", "check_seconds")


def _row_line(row: TrialResult) -> str:
    return (f"{row.trial:>3} {row.phase:<15} {row.fault:<5} {row.where:<36} "
            f"{'fired' if row.fired else 'missed':<6} exit {str(row.exit_code):>4}  rerun "
            f"{'ok' if row.rerun_ok else 'FAILED':<6} lost {row.lost} doubled {row.doubled} "
            f"mismatches {row.mismatches} ledger {'ok' if row.ledger_ok else 'BAD'} "
            f"{row.seconds:6.1f} s (fault {row.fault_seconds:.0f}, rerun {row.rerun_seconds:.0f}, "
            f"checks {row.check_seconds:.0f})" + (f"  ({row.notes})" if row.notes else ""))


def write_csv(rows: Sequence[TrialResult], path: Path) -> None:
    """The trials as CSV (one row each, the columns of :class:`TrialResult`).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "trials.csv"
    >>> write_csv([TrialResult(1, "apply", "crash", "apply:after-fold", True, 75, True, 0, 0, 0,
    ...                        True, 40.0)], path)
    >>> path.read_text().splitlines()[1][:40]
    '1,apply,crash,apply:after-fold,True,75,T'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.1f}" if k.endswith("seconds") else v)
                             for k, v in asdict(row).items()})


def markdown_report(rows: Sequence[TrialResult], final: TrialResult | None,
                    corruption: Sequence[CorruptionCase], header: str = "") -> str:
    """The trials, the totals per phase and fault, and the corrupted-input cases, as Markdown.

    >>> row = TrialResult(1, "ingest", "kill", "1.00 s after lease", True, -9, True, 0, 0, 0,
    ...                   True, 20.0)
    >>> print(markdown_report([row], None, []).splitlines()[-1])
    | **all** | 1 | 1 | 0 | 0 | 0 | 0 | 0 |
    """
    out = [header] if header else []
    out += ["| # | phase | fault | point / delay | fired | exit | rerun | lost | doubled | "
            "mismatches | ledger | s (fault/rerun/checks) |", "|" + "---|" * 12]
    for r in rows:
        out.append(f"| {r.trial} | {r.phase} | {r.fault} | {r.where} | "
                   f"{'yes' if r.fired else 'no'} | {r.exit_code} | "
                   f"{'ok' if r.rerun_ok else 'failed'} | {r.lost} | {r.doubled} | "
                   f"{r.mismatches} | {'ok' if r.ledger_ok else 'bad'} | {r.seconds:.0f} "
                   f"({r.fault_seconds:.0f}/{r.rerun_seconds:.0f}/{r.check_seconds:.0f}) |")
    if final is not None:
        out.append(f"| – | {final.phase} | – | – | – | – | {'ok' if final.rerun_ok else 'failed'} "
                   f"| {final.lost} | {final.doubled} | {final.mismatches} | "
                   f"{'ok' if final.ledger_ok else 'bad'} | {final.seconds:.0f} |")
    notes = [f"- trial {r.trial}: {r.notes}" for r in rows if r.notes]
    if notes:
        out += ["", *notes]
    out += ["", "| phase / fault | trials | faults fired | lost | doubled | mismatches | "
            "reruns failed | ledger bad |", "|" + "---|" * 8]
    groups: dict[str, list[TrialResult]] = {}
    for r in rows:
        groups.setdefault(f"{r.phase} / {r.fault}", []).append(r)
    for name, group in [*sorted(groups.items()), ("**all**", list(rows))]:
        out.append(f"| {name} | {len(group)} | {sum(r.fired for r in group)} | "
                   f"{sum(r.lost for r in group)} | {sum(r.doubled for r in group)} | "
                   f"{sum(r.mismatches for r in group)} | {sum(not r.rerun_ok for r in group)} | "
                   f"{sum(not r.ledger_ok for r in group)} |")
    if corruption:
        out += ["", "| corrupted input | outcome | as expected |", "|---|---|---|"]
        out += [f"| {c.case} | {c.outcome.replace('|', '/')} | {'yes' if c.ok else 'NO'} |"
                for c in corruption]
    return "\n".join(out)


# -- a faulted command's process ------------------------------------------------------------------


def _main(argv: Sequence[str]) -> int:
    """``python -m aspen.bench.faults --lake LAKE ARGV…``: the command with the lake's crash
    points installed (``apply``: the apply job)."""
    if len(argv) < 3 or argv[0] != "--lake":
        print("usage: python -m aspen.bench.faults --lake LAKE COMMAND [ARG…]", file=sys.stderr)
        return 2
    with lake_crash_points():
        return _dispatch(argv[1], argv[2:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
