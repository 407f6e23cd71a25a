"""A lake's pickled engine state runs no code: every place that reads one refuses a pickle that
names a callable (and loses nothing: the caller rebuilds), and Aspen's own states still load."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from aspen import state_pickle
from aspen.engine.batch import BaseFact, Batch
from aspen.errors import EngineError, StateError
from aspen.lake.deltars import write_table
from aspen.pipeline.order_table import VARIABLE_ORDER_TABLE, read_placement
from aspen.provenance.placement import VariablePlacement
from aspen.runtime.local import LocalRuntime, read_state_payload
from aspen.runtime.node import NodeRuntime, decode_messages
from aspen.runtime.rounds import decode_journal, encode_journal
from aspen.settings import Settings


class _Touch:
    """A pickle that, when loaded by a plain ``pickle.loads``, creates ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):  # noqa: ANN204 - the attack's shape
        return (os.mkdir, (str(self.path),))


class _AspenFunction:
    """A pickle naming a function of Aspen's own packages (not a class): refused too."""

    def __reduce__(self):  # noqa: ANN204
        return (read_state_payload, (b"", 1, "x"))


def _crafted(tmp_path: Path) -> tuple[bytes, Path]:
    marker = tmp_path / "ran"
    return pickle.dumps({"version": 2, "x": _Touch(marker)}), marker


def test_a_plain_unpickler_would_run_it(tmp_path: Path) -> None:
    data, marker = _crafted(tmp_path)
    pickle.loads(data)  # the attack is real: this is what the allow-list stops
    assert marker.exists()


@pytest.mark.parametrize("reader", [
    lambda data: state_pickle.loads(data, "state"),
    lambda data: read_state_payload(data, 2, "state"),
    lambda data: LocalRuntime.load_state(data),
    lambda data: NodeRuntime.load(data, "python"),
    lambda data: decode_journal(data),
    lambda data: decode_messages(data, None),
], ids=["loads", "payload", "local-runtime", "node", "journal", "messages"])
def test_every_state_reader_refuses_a_callable_and_runs_nothing(tmp_path: Path, reader) -> None:
    data, marker = _crafted(tmp_path)
    with pytest.raises(StateError, match="names posix.mkdir"):
        reader(data)
    assert not marker.exists()


def test_a_function_of_aspen_itself_is_refused() -> None:
    with pytest.raises(StateError, match="read_state_payload"):
        state_pickle.loads(pickle.dumps(_AspenFunction()), "state")


def test_a_refused_state_is_an_engine_error_the_maintainer_rebuilds_from() -> None:
    # maintain_local treats an EngineError on load as "no usable state": rebuild, lose nothing
    assert issubclass(StateError, EngineError)


def test_a_crafted_variable_order_table_is_refused(tmp_path: Path) -> None:
    settings = Settings(lake=str(tmp_path / "lake"))
    marker = tmp_path / "ran"
    write_table(settings, VARIABLE_ORDER_TABLE, pa.table({
        "batch_id": pa.array([1], pa.int64()),
        "placement": pa.array([pickle.dumps(_Touch(marker))], pa.binary())}))
    with pytest.raises(StateError):
        read_placement(settings)
    assert not marker.exists()


def test_aspens_own_states_still_load(tmp_path: Path) -> None:
    runtime = LocalRuntime(("reachable",), partitions=2, backend="python")
    runtime.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
                                 BaseFact("link", ("b", "c", 1.0), "v2"))))
    again = LocalRuntime.load_state(runtime.dump_state())
    assert set(again.view("reachable")) == {("a", "b"), ("b", "c"), ("a", "c")}
    placement = VariablePlacement.build([("v1", "link", ("a", "b", 1.0))])
    settings = Settings(lake=str(tmp_path / "lake"))
    write_table(settings, VARIABLE_ORDER_TABLE, pa.table({
        "batch_id": pa.array([1], pa.int64()),
        "placement": pa.array([pickle.dumps(placement)], pa.binary())}))
    assert isinstance(read_placement(settings), VariablePlacement)
    assert decode_journal(encode_journal([])) == ()
