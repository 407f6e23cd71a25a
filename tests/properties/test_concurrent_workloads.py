"""Random workloads (prop_workloads) maintained on several lakes at once, from one working
directory: after every batch every view of every lake equals from-scratch evaluation.

Each lake is named relative to the shared working directory and maintained the way ``aspen
maintain --runtime local`` does it (:func:`~aspen.pipeline.maintain_local.maintain_local`: the
committed engine state loaded from ``engine_state``, the registry's births and deaths since,
the view tables, the state, the ledger row), two lakes in threads of this process — each batch
started at the same moment — and one in another process with another ``PYTHONHASHSEED``. The
apply before it is stood in for by writing the ``variables`` registry the batch leaves (delta-rs,
no JVM): Spark's apply is covered by the lake tests and its fold by
test_accepted_records_maintain.py. Run as a script, this file maintains one lake and prints
what differed, as JSON: the other process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prop_workloads import interpret, mixed_programs

from aspen.baselines import scratch
from aspen.catalog import VIEWS
from aspen.engine.batch import BaseFact
from aspen.lake.committed import committed_versions, read_committed
from aspen.lake.deltars import write_table
from aspen.lake.tables import BASE_KEY_COLUMNS
from aspen.pipeline.maintain_local import maintain_local
from aspen.pipeline.verify import verify_lake
from aspen.pipeline.view_tables import row_to_tuple
from aspen.settings import Settings

K = 20.0


def _no_apply(spark: Any, settings: Settings) -> None:
    """``apply_pending`` stood in for: the registry is already written."""


def _registry(born: dict[str, tuple[BaseFact, int]], died: dict[str, int]) -> Any:
    """The ``variables`` table apply leaves: every instance, its birth and death batch."""
    import pyarrow as pa

    rows = []
    for var, (fact, batch) in born.items():
        keys = BASE_KEY_COLUMNS[fact.relation]
        death = died.get(var)
        rows.append({
            "var": var, "relation": fact.relation,
            "key": json.dumps(list(fact.values[:len(keys)]), separators=(",", ":")),
            "values": json.dumps(list(fact.values), separators=(",", ":")),
            "inserted_batch": batch, "inserted_seq": int(var[1:]),
            "deleted_batch": death, "deleted_seq": None if death is None else int(var[1:]),
            "death": None if death is None else "deleted",
        })
    schema = pa.schema([("var", pa.string()), ("relation", pa.string()), ("key", pa.string()),
                        ("values", pa.string()), ("inserted_batch", pa.int64()),
                        ("inserted_seq", pa.int64()), ("deleted_batch", pa.int64()),
                        ("deleted_seq", pa.int64()), ("death", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def _differences(lake: Settings, live: dict[str, BaseFact], batch: int) -> list[str]:
    """What the lake's committed views hold that from-scratch evaluation does not, and back."""
    expected = scratch.evaluate_all(list(live.values()), k=K)
    versions = committed_versions(lake)
    out = []
    for view in VIEWS:
        got = {row_to_tuple(view, row) for row in
               read_committed(lake, view, versions=versions).to_dict("records")}
        if got != expected[view]:
            out.append(f"{lake.lake} batch {batch} {view}: missing "
                       f"{sorted(expected[view] - got, key=repr)[:5]}, extra "
                       f"{sorted(got - expected[view], key=repr)[:5]}")
    return out


def maintain_program(name: str, program: Sequence[Sequence[Sequence[Any]]], partitions: int,
                     mode: str, barrier: threading.Barrier | None = None,
                     together: int = 0) -> list[str]:
    """Every batch of ``program`` into the lake ``name`` (relative to the working directory),
    each maintained and then compared with from-scratch evaluation; the differences found.
    With ``barrier``, each of the first ``together`` batches starts being maintained when the
    other lakes' does."""
    lake = Settings(lake=name, partitions=partitions, mode=mode)
    born: dict[str, tuple[BaseFact, int]] = {}
    died: dict[str, int] = {}
    problems: list[str] = []
    for number, step in enumerate(interpret(program), start=1):
        born.update((fact.var, (fact, number)) for fact in step.batch.inserts)
        died.update((var, number) for var in step.batch.deletes)
        write_table(lake, "variables", _registry(born, died))
        if barrier is not None and number <= together:
            barrier.wait(timeout=120)
        maintain_local(lake, partitions=partitions, mode=mode)
        problems += _differences(lake, step.live, number)
    if not verify_lake(lake).ok:  # the command's own check agrees
        problems.append(f"{name}: aspen verify reports a difference")
    return problems


def _in_threads(runs: list[tuple[str, Any, int, str]]) -> list[str]:
    barrier = threading.Barrier(len(runs))
    together = min(len(program) for _, program, _, _ in runs)
    found: dict[str, list[str]] = {}

    def run(name: str, program: Any, partitions: int, mode: str) -> None:
        try:
            found[name] = maintain_program(name, program, partitions, mode, barrier, together)
        except BaseException as err:  # noqa: BLE001 - reported below
            barrier.abort()
            found[name] = [f"{name}: {type(err).__name__}: {err}"]

    threads = [threading.Thread(target=run, args=item) for item in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return [problem for name, *_ in runs for problem in found.get(name, [f"{name}: hung"])]


@settings(max_examples=2, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(programs=st.lists(mixed_programs(max_batches=5), min_size=3, max_size=3),
       partitions=st.lists(st.sampled_from([1, 2, 4]), min_size=3, max_size=3),
       modes=st.lists(st.sampled_from(["lazy", "eager"]), min_size=3, max_size=3),
       hash_seed=st.integers(1, 2 ** 32 - 1))
def test_lakes_maintained_at_once_from_one_directory_match_scratch(
        monkeypatch: pytest.MonkeyPatch, programs: list, partitions: list[int],
        modes: list[str], hash_seed: int) -> None:
    import aspen.lake.apply

    monkeypatch.setattr(aspen.lake.apply, "apply_pending", _no_apply)
    with tempfile.TemporaryDirectory() as folder, monkeypatch.context() as here:
        here.chdir(folder)  # every lake is named relative to it (back before it goes)
        other = subprocess.Popen(
            [sys.executable, __file__, "lake3", json.dumps(programs[2]), str(partitions[2]),
             modes[2]],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)})
        problems = _in_threads([(name, programs[i], partitions[i], modes[i])
                                for i, name in enumerate(["lake1", "lake2"])])
        out, err = other.communicate(timeout=300)
        assert other.returncode == 0, err[-3000:]
        problems += json.loads(out.strip().splitlines()[-1])
        # nothing but the lakes was written into the shared directory
        assert sorted(p.name for p in Path(folder).iterdir()) == ["lake1", "lake2", "lake3"]
    assert problems == []


if __name__ == "__main__":  # another process maintaining one lake: prints the differences
    import aspen.lake.apply

    aspen.lake.apply.apply_pending = _no_apply  # type: ignore[assignment]
    name, program, parts, how = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(json.dumps(maintain_program(name, program, parts, how)), flush=True)
    # the answer is out: skip the interpreter's teardown, where Arrow's thread pools now and
    # then abort a finished process ("terminate called without an active exception",
    # apache/arrow#34314), which would fail the run for nothing it computed
    os._exit(0)
